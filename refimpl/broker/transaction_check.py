"""The transaction check service of a broker (RocketMQ 4.9.8 ``TransactionalMessageCheckService`` and
``TransactionalMessageServiceImpl.check``, with the bridge's reads and writes).

Every ``transaction_check_interval_ms`` after the previous pass ended, one pass over the half queues, with the offsets
of both queues kept under group ``CID_RMQ_SYS_TRANS``. Per queue: op messages are read 32 at a time into a map half
offset → op offset (ops for offsets below the half offset are done at once); the half queue is walked from its
offset: offsets with an op are done; a message gets TRANSACTION_CHECK_TIMES (absent → 1, else + 1) or is discarded
at ``transaction_check_max`` or past the file reserved time (to ``TRANS_CHECK_MAX_TIME_TOPIC``); a message stored
after the pass began stops the walk; the immunity time is CHECK_IMMUNITY_TIME_IN_SECONDS × 1000 (else the transaction
timeout): a younger message with the property is put back once with TRAN_PREPARED_QUEUE_OFFSET (or done, when that
offset has an op), one without it and 0 ≤ age < timeout stops the walk; a check is due when there are no op messages
left and the message is older than the immunity time, or the last op read was born more than the timeout after the
pass began, or the message was born in the future; then the half message is put back (new check count, new offsets)
and CHECK_TRANSACTION_STATE goes oneway to one producer channel of its PGROUP, with the real topic and queue restored
in the body. At the end the half offset and the op offset (over the contiguous run of done ops) are committed.

Where Java's single check thread busy-loops (waiting for more op messages or for time to pass, or retrying a put
back that fails), the pass is suspended on a daemon timer until the moment the outcome can change: the message's age
passing its immunity time, the 60 s per-queue limit, or (as Java's loop re-reads the op queue) a new op message
(:meth:`TransactionCheckService.op_written`). So simulated time behaves as wall-clock time would.

Read-only state for observers: ``segments`` (how many times the walk has run: a pass beginning or a suspended one
going on), ``walking`` (whether it is running now), ``last_check_client`` (the client id the last check went to,
None when its group had no channel) and ``next_pass_ms``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

import attrs

from rocketspec.refimpl.broker.services import BrokerServices
from rocketspec.refimpl.events import TxnCheck
from rocketspec.refimpl.message import MessageExt, decode_stored_message, encode_properties, encode_stored_message
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.runtime import Timer
from rocketspec.refimpl.store import MessageToStore
from rocketspec.spec.java import parse_long
from rocketspec.spec.protocol import (
    PERM_READ,
    PERM_WRITE,
    RANDOM_QUEUE_ID_BOUND,
    TRANS_CHECK_MAX_TIME_QUEUE_NUMS,
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_OP_REMOVE_TAG,
    TRANS_SYS_GROUP,
    TRANSACTION_HALF_PULL_NUMS,
    TRANSACTION_MAX_PROCESS_TIME_MS,
    TRANSACTION_MAX_RETRY_WHEN_HALF_NULL,
    TRANSACTION_OP_BATCH,
    GetMessageStatus,
    Property,
    PullStatus,
    PutMessageStatus,
    RequestCode,
)

# TransactionalMessageBridge.getMessage: store status -> the PullStatus the check works with. A queue the store has
# never seen is NO_NEW_MSG: Java's findConsumeQueue creates it empty (NO_MESSAGE_IN_QUEUE).
_PULL_STATUS = {
    GetMessageStatus.FOUND: PullStatus.FOUND,
    GetMessageStatus.NO_MATCHED_MESSAGE: PullStatus.NO_MATCHED_MSG,
    GetMessageStatus.NO_MESSAGE_IN_QUEUE: PullStatus.NO_NEW_MSG,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: PullStatus.NO_NEW_MSG,
    GetMessageStatus.NO_MATCHED_LOGIC_QUEUE: PullStatus.NO_NEW_MSG,
    GetMessageStatus.MESSAGE_WAS_REMOVING: PullStatus.OFFSET_ILLEGAL,
    GetMessageStatus.OFFSET_FOUND_NULL: PullStatus.OFFSET_ILLEGAL,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: PullStatus.OFFSET_ILLEGAL,
    GetMessageStatus.OFFSET_TOO_SMALL: PullStatus.OFFSET_ILLEGAL,
}


@attrs.define
class CheckedMessage:
    """A half message as the check reads and changes it (Java mutates the decoded ``MessageExt``)."""

    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    offset_msg_id: str
    body: bytes
    flag: int
    properties: dict[str, str]
    sys_flag: int
    born_timestamp: int
    born_host: str
    store_timestamp: int
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int

    @classmethod
    def of(cls, msg: MessageExt) -> CheckedMessage:
        return cls(msg.topic, msg.queue_id, msg.queue_offset, msg.commit_log_offset, msg.offset_msg_id, msg.body,
                   msg.flag, dict(msg.properties), msg.sys_flag, msg.born_timestamp, msg.born_host,
                   msg.store_timestamp, msg.store_host, msg.reconsume_times, msg.prepared_transaction_offset)


@attrs.frozen
class PullResult:
    """What the bridge's ``getMessage`` gives the check: status, next offset, the messages (None unless FOUND)."""

    status: PullStatus
    next_begin_offset: int
    messages: tuple[MessageExt, ...] | None = None


def calculate_op_offset(done_offsets: list[int], old_offset: int) -> int:
    """``calculateOpOffset``: advance over the contiguous run of done op offsets starting at the old offset."""
    offset = old_offset
    for done in sorted(done_offsets):
        if done != offset:
            break
        offset += 1
    return offset


def immunity_time_ms(text: str, transaction_timeout_ms: int) -> int:
    """``getImmunityTime``: CHECK_IMMUNITY_TIME_IN_SECONDS × 1000, the timeout when it is not a number (or -1)."""
    seconds = parse_long(text)
    return transaction_timeout_ms if seconds is None or seconds == -1 else seconds * 1000

class TransactionCheckService:
    """The transaction check service of one broker: passes over the half queues, and the idle probe."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        self.started = False
        self._timer: Timer | None = None
        self._pass: Generator[int, None, None] | None = None
        self._pass_timer: Timer | None = None
        self._pass_done: Callable[[], None] | None = None
        # Idle-probe caches: op queue id -> (next op offset read, half offsets with an op), and the last answer.
        self._ops_seen: dict[int, tuple[int, set[int]]] = {}
        self._pending_key: tuple[tuple[int, int, int, int], ...] | None = None
        self._pending_value = False
        # Read-only for observers (see the module docstring).
        self.segments = 0
        self.walking = False
        self.last_check_client: str | None = None

    @property
    def next_pass_ms(self) -> int | None:
        """When the next pass begins (None: the service is stopped, or a pass is under way)."""
        timer = self._timer
        return None if timer is None or timer.cancelled or timer.ran else timer.due_ms

    def start(self) -> None:
        """Start the check service (masters only): a pass every ``transaction_check_interval_ms``."""
        if self.started or not self.broker.is_master():
            return
        self.started = True
        self._schedule_next_pass()
        self.broker.runtime.add_idle_probe(self.pending)

    def shutdown(self) -> None:
        if not self.started:
            return
        self.started = False
        for timer in (self._timer, self._pass_timer):
            if timer is not None:
                timer.cancel()
        self._timer = self._pass_timer = None
        if self._pass is not None:
            self._pass.close()
            self._pass = None
        self._pass_done = None
        self.broker.runtime.remove_idle_probe(self.pending)

    def check_now(self) -> bool:
        """Run one check pass now; False when a pass is already under way (or this one had to wait)."""
        if self._pass is not None:
            return False
        self._begin_pass(None)
        return self._pass is None

    def _schedule_next_pass(self) -> None:
        # ServiceThread.waitForRunning(checkInterval): the next pass starts one interval after this one ended.
        self._timer = self.broker.runtime.call_later(self.broker.config.transaction_check_interval_ms,
                                                     self._periodic, daemon=True)

    def _periodic(self) -> None:
        self._timer = None
        if not self.started:
            return
        if self._pass is not None:
            self._schedule_next_pass()
            return
        self._begin_pass(self._schedule_next_pass)

    def _begin_pass(self, on_done: Callable[[], None] | None) -> None:
        self._pass = self._check_pass()
        self._pass_done = on_done
        self._advance()

    def _advance(self) -> None:
        """Run the pass until it ends or asks to wait (it yields the time to resume at)."""
        self._pass_timer = None
        current = self._pass
        if current is None:
            return
        self.segments += 1
        self.walking = True
        try:
            wake_at = next(current)
        except StopIteration:
            self.walking = False
            self._pass = None
            done, self._pass_done = self._pass_done, None
            if done is not None and self.started:
                done()
            return
        self.walking = False
        delay = max(0, wake_at - self.broker.runtime.now_ms())
        self._pass_timer = self.broker.runtime.call_later(delay, self._advance, daemon=True)

    def op_written(self) -> None:
        """An op message was written: a walk suspended for want of op messages goes on at once, as Java's loop,
        re-reading the op queue all the while, would read it."""
        timer = self._pass_timer
        if self._pass is None or self.walking or timer is None or timer.due_ms <= self.broker.runtime.now_ms():
            return
        timer.cancel()
        self._pass_timer = self.broker.runtime.call_later(0, self._advance, daemon=True)

    def _check_pass(self) -> Generator[int, None, None]:
        """``TransactionalMessageServiceImpl.check``: every half queue (``fetchMessageQueues`` creates the half topic
        with one read/write queue when it does not exist yet)."""
        config = self.broker.config
        half_topic = self.broker.topics.create_system_topic(TRANS_HALF_TOPIC, 1, PERM_READ | PERM_WRITE)
        if half_topic is None or half_topic.read_queue_nums <= 0:
            return
        for queue_id in range(half_topic.read_queue_nums):
            yield from self._check_queue(queue_id, config.transaction_timeout_ms, config.transaction_check_max)

    def _check_queue(self, queue_id: int, timeout: int, check_max: int) -> Generator[int, None, None]:
        """One half queue of a check pass (see the module docstring)."""
        runtime = self.broker.runtime
        start = runtime.now_ms()
        half_offset = self._fetch_consume_offset(TRANS_HALF_TOPIC, queue_id)
        op_offset = self._fetch_consume_offset(TRANS_OP_HALF_TOPIC, queue_id)
        if half_offset < 0 or op_offset < 0:
            return
        done_op: list[int] = []
        remove_map: dict[int, int] = {}
        pull = self._fill_op_remove_map(remove_map, queue_id, op_offset, half_offset, done_op)
        null_count = 1
        new_offset = half_offset
        i = half_offset
        while True:
            if runtime.now_ms() - start > TRANSACTION_MAX_PROCESS_TIME_MS:
                break
            if i in remove_map:
                done_op.append(remove_map.pop(i))
            else:
                msg, half_pull = self._get_half_message(queue_id, i)
                if msg is None:
                    null_count += 1
                    if null_count - 1 > TRANSACTION_MAX_RETRY_WHEN_HALF_NULL:
                        break
                    if half_pull.status is PullStatus.NO_NEW_MSG:
                        break
                    i = half_pull.next_begin_offset
                    new_offset = i
                    continue
                if self._need_discard(msg, check_max) or self._need_skip(msg):
                    self._resolve_discard(msg)
                    new_offset = i + 1
                    i += 1
                    continue
                if msg.store_timestamp >= start:
                    break  # stored after the pass began: checked next time
                age = runtime.now_ms() - msg.born_timestamp
                immunity = timeout
                immunity_text = msg.properties.get(Property.CHECK_IMMUNITY_TIME_IN_SECONDS)
                if immunity_text is not None:
                    immunity = immunity_time_ms(immunity_text, timeout)
                    if age < immunity and self._check_prepare_queue_offset(remove_map, done_op, msg):
                        new_offset = i + 1
                        i += 1
                        continue
                elif 0 <= age < immunity:
                    break  # too young: checked next time
                ops = pull.messages
                need_check = (
                    (ops is None and age > immunity)
                    or (ops is not None and len(ops) > 0 and ops[-1].born_timestamp - start > timeout)
                    or age <= -1
                )
                if need_check:
                    if not self._put_back_half_message(msg):
                        # Java retries at once until the queue's time limit; a put that fails keeps failing.
                        yield start + TRANSACTION_MAX_PROCESS_TIME_MS + 1
                        continue
                    self._resolve_half_message(msg)
                else:
                    if ops is None:
                        # No op message left to read: Java spins re-reading the op queue; only time (or a new op)
                        # changes the outcome, at the latest when the message outlives its immunity time.
                        yield min(msg.born_timestamp + immunity + 1, start + TRANSACTION_MAX_PROCESS_TIME_MS + 1)
                    pull = self._fill_op_remove_map(remove_map, queue_id, pull.next_begin_offset, half_offset,
                                                    done_op)
                    continue
            new_offset = i + 1
            i += 1
        if new_offset != half_offset:
            self._update_consume_offset(TRANS_HALF_TOPIC, queue_id, new_offset)
        new_op_offset = calculate_op_offset(done_op, op_offset)
        if new_op_offset != op_offset:
            self._update_consume_offset(TRANS_OP_HALF_TOPIC, queue_id, new_op_offset)

    # bridge ---------------------------------------------------------------------------------------------------------
    def _fetch_consume_offset(self, topic: str, queue_id: int) -> int:
        """``fetchConsumeOffset``: the committed offset of CID_RMQ_SYS_TRANS, else the queue's min offset."""
        offset = self.broker.consumer_offsets.query(TRANS_SYS_GROUP, topic, queue_id)
        return self.broker.store.min_offset(topic, queue_id) if offset == -1 else offset

    def _update_consume_offset(self, topic: str, queue_id: int, offset: int) -> None:
        self.broker.consumer_offsets.commit(self.broker.addr, TRANS_SYS_GROUP, topic, queue_id, offset)

    def _pull(self, topic: str, queue_id: int, offset: int, nums: int) -> PullResult:
        """``TransactionalMessageBridge.getMessage``: read and decode (bodies as stored)."""
        got = self.broker.store.get_message(topic, queue_id, offset, nums)
        status = _PULL_STATUS[got.status]
        if status is not PullStatus.FOUND:
            return PullResult(status, got.next_begin_offset)
        self.broker.stats.on_get(TRANS_SYS_GROUP, topic, queue_id, len(got.messages), got.buffer_total_size, rt=False)
        found = []
        for data in got.messages:
            try:
                found.append(decode_stored_message(data, 0, broker_name=self.broker.name, decompress=False)[0])
            except ValueError:
                continue  # MessageDecoder.decode returns null for a message it cannot read
        return PullResult(status, got.next_begin_offset, tuple(found))

    def _get_half_message(self, queue_id: int, offset: int) -> tuple[CheckedMessage | None, PullResult]:
        """``getHalfMsg``: the half message at ``offset`` (one message read), with the read's result."""
        pull = self._pull(TRANS_HALF_TOPIC, queue_id, offset, TRANSACTION_HALF_PULL_NUMS)
        if not pull.messages:
            return None, pull
        return CheckedMessage.of(pull.messages[0]), pull

    def _fill_op_remove_map(self, remove_map: dict[int, int], queue_id: int, offset: int, min_half_offset: int,
                            done_op: list[int]) -> PullResult:
        """``fillOpRemoveMap``: read up to 32 op messages; map half offset → op offset (done below the half
        offset). An illegal op offset is committed as corrected at once."""
        pull = self._pull(TRANS_OP_HALF_TOPIC, queue_id, offset, TRANSACTION_OP_BATCH)
        if pull.status in (PullStatus.OFFSET_ILLEGAL, PullStatus.NO_MATCHED_MSG):
            self._update_consume_offset(TRANS_OP_HALF_TOPIC, queue_id, pull.next_begin_offset)
            return pull
        if pull.status is PullStatus.NO_NEW_MSG or pull.messages is None:
            return pull
        for op in pull.messages:
            half_queue_offset = parse_long(op.body.decode("utf-8", "replace"))
            if half_queue_offset is None:
                half_queue_offset = -1
            if op.tags != TRANS_OP_REMOVE_TAG:
                continue  # "Found a illegal tag in opMessageExt"
            if half_queue_offset < min_half_offset:
                done_op.append(op.queue_offset)
            else:
                remove_map[half_queue_offset] = op.queue_offset
        return pull

    def _need_discard(self, msg: CheckedMessage, check_max: int) -> bool:
        """``needDiscard``: checked ``check_max`` times already; otherwise count this check."""
        text = msg.properties.get(Property.TRANSACTION_CHECK_TIMES)
        times = 1
        if text is not None:
            parsed = parse_long(text, 32)
            times = -1 if parsed is None else parsed
            if times >= check_max:
                return True
            times += 1
        msg.properties[Property.TRANSACTION_CHECK_TIMES] = str(times)
        return False

    def _need_skip(self, msg: CheckedMessage) -> bool:
        """``needSkip``: born longer ago than the store keeps files."""
        return self.broker.runtime.now_ms() - msg.born_timestamp > self.broker.config.file_reserved_ms

    def _check_prepare_queue_offset(self, remove_map: dict[int, int], done_op: list[int],
                                    msg: CheckedMessage) -> bool:
        """``checkPrepareQueueOffset``: True (skip the message) when its original offset has an op or it was put
        back with that offset recorded; False when the recorded offset is unreadable or the put failed."""
        text = msg.properties.get(Property.TRANSACTION_PREPARED_QUEUE_OFFSET)
        if text is None:
            return self._put_immunity_back(msg)
        prepared = parse_long(text)
        if prepared is None or prepared == -1:
            return False
        if prepared in remove_map:
            done_op.append(remove_map.pop(prepared))
            return True
        return self._put_immunity_back(msg)

    @staticmethod
    def _renew_half_message(msg: CheckedMessage) -> MessageToStore:
        """``renewHalfMessageInner``: the same half message appended again (flag and reconsume times are not
        copied, so they are 0 from then on, as in RocketMQ). Its properties are written as they are; then
        ``setWaitStoreMsgOK(false)`` changes the property map it shares with the message read, so the message the
        check sends to the producer shows WAIT=false."""
        written = encode_properties(msg.properties)
        msg.properties[Property.WAIT_STORE_MSG_OK] = "false"
        return MessageToStore(
            topic=msg.topic,
            queue_id=msg.queue_id,
            body=msg.body,
            properties=dict(msg.properties),
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            properties_text=written,
        )

    def _put_immunity_back(self, msg: CheckedMessage) -> bool:
        """``putImmunityMsgBackToHalfQueue``: append again with TRAN_PREPARED_QUEUE_OFFSET (the first offset); this
        one is written from the map (``renewImmunityHalfMessageInner`` re-encodes it), WAIT=false included."""
        inner = self._renew_half_message(msg)
        inner.properties.setdefault(Property.TRANSACTION_PREPARED_QUEUE_OFFSET, str(msg.queue_offset))
        inner.properties_text = None
        return self.broker.put_message(inner).status is PutMessageStatus.PUT_OK

    def _put_back_half_message(self, msg: CheckedMessage) -> bool:
        """``putBackHalfMsgQueue``: append again; the check then refers to the new offsets."""
        result = self.broker.put_message(self._renew_half_message(msg))
        if result.status is not PutMessageStatus.PUT_OK:
            return False
        msg.queue_offset = result.queue_offset
        msg.commit_log_offset = result.commit_log_offset
        msg.offset_msg_id = result.offset_msg_id
        return True

    def _check_times(self, msg: CheckedMessage) -> int:
        return parse_long(msg.properties.get(Property.TRANSACTION_CHECK_TIMES), 32) or 0

    def _resolve_half_message(self, msg: CheckedMessage) -> None:
        """``sendCheckMessage``: CHECK_TRANSACTION_STATE (oneway) to one producer channel of PGROUP, the body being
        the message with its real topic and queue restored."""
        props = msg.properties
        unique_key = props.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        group = props.get(Property.PRODUCER_GROUP)
        body = self._check_body(msg)
        # Java: a body that cannot be built is an exception in the check thread, logged; no channel is looked up.
        channel = self.broker.producers.any_channel(group) if body is not None else None
        self.last_check_client = next(
            (client for known, client in self.broker.producers.channels(group or "") if known is channel), None)
        self.broker.events.emit(TxnCheck(node=self.broker.name, group=group or "", msg_id=unique_key or "",
                                         transaction_id=unique_key or "", check_times=self._check_times(msg),
                                         action="check", check_max=self.broker.config.transaction_check_max))
        if channel is None:
            return  # "Check transaction failed, channel is null"
        channel.invoke_oneway(RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, {
            "tranStateTableOffset": msg.queue_offset,
            "commitLogOffset": msg.commit_log_offset,
            "msgId": unique_key,
            "transactionId": unique_key,
            "offsetMsgId": msg.offset_msg_id,
        }, body, oneway=True))

    @staticmethod
    def _check_body(msg: CheckedMessage) -> bytes | None:
        """The check's body: the message with its real topic and queue restored (None: they cannot be read)."""
        props = msg.properties
        real_topic = props.get(Property.REAL_TOPIC)
        real_queue_id = parse_long(props.get(Property.REAL_QUEUE_ID), 32)
        if real_topic is None or real_queue_id is None:
            return None
        try:
            return encode_stored_message(
                topic=real_topic, queue_id=real_queue_id, body=msg.body, flag=msg.flag, properties=props,
                sys_flag=msg.sys_flag, born_timestamp=msg.born_timestamp, born_host=msg.born_host,
                store_timestamp=msg.store_timestamp, store_host=msg.store_host,
                reconsume_times=msg.reconsume_times, prepared_transaction_offset=msg.prepared_transaction_offset,
                queue_offset=msg.queue_offset, commit_log_offset=msg.commit_log_offset,
            )
        except ValueError:
            return None

    def _resolve_discard(self, msg: CheckedMessage) -> None:
        """``DefaultTransactionalMessageCheckListener.resolveDiscardMsg``: keep it in TRANS_CHECK_MAX_TIME_TOPIC."""
        unique_key = msg.properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        self.broker.events.emit(TxnCheck(node=self.broker.name,
                                         group=msg.properties.get(Property.PRODUCER_GROUP) or "",
                                         msg_id=unique_key or "", transaction_id=unique_key or "",
                                         check_times=self._check_times(msg), action="discard",
                                         check_max=self.broker.config.transaction_check_max))
        self.broker.topics.create_system_topic(TRANS_CHECK_MAX_TIME_TOPIC, TRANS_CHECK_MAX_TIME_QUEUE_NUMS,
                                               PERM_READ | PERM_WRITE)
        queue_id = self.broker.runtime.random.randrange(RANDOM_QUEUE_ID_BOUND) % TRANS_CHECK_MAX_TIME_QUEUE_NUMS
        self.broker.put_message(MessageToStore(
            topic=TRANS_CHECK_MAX_TIME_TOPIC,
            queue_id=queue_id,
            body=msg.body,
            flag=msg.flag,
            properties=dict(msg.properties),
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            reconsume_times=msg.reconsume_times,
        ))

    # idle probe -----------------------------------------------------------------------------------------------------
    def pending(self) -> bool:
        """Idle probe: a half message the check has not passed yet is not done (no op message for its offset), so
        the check service still has work (a check, a put back or a discard)."""
        if not self.started:
            return False
        store = self.broker.store
        # The answer changes only when a half or op message arrives or the check moves a half offset.
        key = tuple(
            (queue_id, self._fetch_consume_offset(TRANS_HALF_TOPIC, queue_id),
             store.max_offset(TRANS_HALF_TOPIC, queue_id), store.max_offset(TRANS_OP_HALF_TOPIC, queue_id))
            for queue_id in store.queue_ids(TRANS_HALF_TOPIC)
        )
        if key != self._pending_key:
            self._pending_key = key
            self._pending_value = any(self._queue_pending(queue_id, offset) for queue_id, offset, _, _ in key)
        return self._pending_value

    def _resolved_offsets(self, queue_id: int) -> set[int]:
        """Half offsets with an op message in the op queue (read incrementally)."""
        store = self.broker.store
        next_offset, resolved = self._ops_seen.get(queue_id, (0, set()))
        high = store.max_offset(TRANS_OP_HALF_TOPIC, queue_id)
        if next_offset < high:
            for _qo, commit_log_offset, _size, _tags in store.queue_entries(TRANS_OP_HALF_TOPIC, queue_id,
                                                                            next_offset, high - next_offset):
                op = store.look_message(commit_log_offset)
                if op is None or op.tags != TRANS_OP_REMOVE_TAG:
                    continue
                offset = parse_long(op.body.decode("utf-8", "replace"))
                if offset is not None:
                    resolved.add(offset)
            self._ops_seen[queue_id] = (high, resolved)
        return resolved

    def _queue_pending(self, queue_id: int, half_offset: int) -> bool:
        store = self.broker.store
        high = store.max_offset(TRANS_HALF_TOPIC, queue_id)
        if half_offset >= high:
            return False
        resolved = self._resolved_offsets(queue_id)
        for queue_offset, commit_log_offset, _size, _tags in store.queue_entries(TRANS_HALF_TOPIC, queue_id,
                                                                                 half_offset, high - half_offset):
            if queue_offset in resolved:
                continue
            half = store.look_message(commit_log_offset)
            if half is None:
                continue
            # An immune copy is done through its first offset only while that offset is still ahead of the walk
            # (checkPrepareQueueOffset finds it in the remove map); an op behind the walk goes to the done list,
            # and the copy will be checked once its immunity time is over.
            prepared = parse_long(half.properties.get(Property.TRANSACTION_PREPARED_QUEUE_OFFSET))
            if prepared is not None and prepared >= half_offset and prepared in resolved:
                continue
            return True
        return False
