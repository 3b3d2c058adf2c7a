"""The pull-correction spec (PULL-*) as the model of the reference implementation's broker and push consumer (issue 4).

The system under test is a simulated ``Cluster`` with one broker whose store has small commit-log segments (4 KiB)
and consume-queue files (4 entries), topic ``T`` with two queues, a producer, a raw client that sends PULL_MESSAGE
requests at arbitrary offsets, and a push consumer of group ``CG`` with a tag subscription. Rules: messages with tags
are sent, raw pulls go below the minimum, to it, into the range, to the maximum and beyond it (with tag filters,
the suspend and commit flags, and an illegal queue id), the oldest commit-log segments are deleted (the minimum
moves; consume-queue files go), the consumer starts, stops or crashes, pauses and resumes, its committed offset is
reset while it is down, and time passes (long polling, the 10 s OFFSET_ILLEGAL fix, rebalances, persistence).

The implementation decides asynchronously, so the machine checks every decision against the spec's oracles at the
moment it is made, from the store's observable state (min, max, consume-queue entries, which commit-log data is
still readable, which tags each offset carries):

* each store read equals ``store_status`` (with ``scan_queue`` over the offset's consume-queue file): status, next
  begin offset, min, max and the offsets delivered (PULL-1 to PULL-9, PULL-25, PULL-27);
* each broker processing of PULL_MESSAGE: the pre-checks equal ``pull_precheck`` (PULL-16, PULL-17); otherwise the
  answer equals ``response_code`` (code, held or answered, nextBeginOffset, min/max, remark = store status,
  suggested broker, OffsetMovedEvent) (PULL-10 to PULL-14, PULL-26), and the offset commit equals
  ``broker_commits`` / ``commit_flag`` (PULL-18);
* the consumer's status equals ``pull_status`` of the code (PULL-19) and its reaction equals ``client_reaction``:
  next offset, the offset-store update (increaseOnly), the drop, the enqueue, no pull of a dropped queue, the
  OFFSET_ILLEGAL fix 10 s later with increaseOnly = false, and errors re-pulled at the same offset after 3 s
  (PULL-20 to PULL-23); a queue added back resumes from the broker's stored offset (PULL-24).

Two scripted programs pin the OFFSET_ILLEGAL round trips (an offset past the queue corrected back, a consumer
behind deleted data corrected forward), which random ci programs reach only now and then. Mutant tests at the end
break the store (OFFSET_TOO_SMALL corrected to the wrong offset, OFFSET_OVERFLOW_BADLY
corrected to min), the broker (status → code mapping swapped) and the consumer (the OFFSET_ILLEGAL fix stored
increase-only) and show that hypothesis finds a failing program for each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from mutation import refimpl_mutant
from stateful_support import hypothesis_finds_failure, stateful_settings

from rocketspec.refimpl import Cluster, ConsumeStatus, Message, MQClientError
from rocketspec.refimpl.broker import pull as pull_module
from rocketspec.refimpl.broker.broker import Broker
from rocketspec.refimpl.client import push_consumer as push_consumer_module
from rocketspec.refimpl.client.config import ClientConfig
from rocketspec.refimpl.client.consumer_config import ConsumerConfig
from rocketspec.refimpl.client.instance import ClientInstance
from rocketspec.refimpl.client.push_consumer import PushConsumer
from rocketspec.refimpl.events import Event, MessageStored, OffsetCommit, PullRequestEvent, PullResponseEvent
from rocketspec.refimpl.message import decode_stored_messages
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.store import MessageStore
from rocketspec.refimpl.store import reading as store_reading
from rocketspec.spec import pull_correction as pc
from rocketspec.spec.protocol import (
    OFFSET_ILLEGAL_REMOVE_DELAY_MS,
    OFFSET_MOVED_EVENT_TOPIC,
    PERM_READ,
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    ConsumeFromWhere,
    GetMessageStatus,
    RequestCode,
    ResponseCode,
)
from rocketspec.spec.queues import MessageQueue

TOPIC = "T"
GROUP = "CG"
RAW_GROUP = "RAW"
BROKER = "broker-a"
QUEUES = 2
TAGS = ("A", "B", "C")
EXPRESSIONS = ("*", "A", "A || B", "C")
SEGMENT_BYTES = 4096
CQ_FILE_ENTRIES = 4
BODY = b"x" * 300  # about ten messages per commit-log segment
RAW_SUSPEND_MS = 1_000
G = GetMessageStatus


def matches(expression: str, tag: str | None) -> bool:
    """The tag filter a subscription expression means (``*`` everything, else ``||``-separated tags)."""
    if expression.strip() in ("", "*"):
        return True
    return tag is not None and tag in {t.strip() for t in expression.split("||")}


@attrs.frozen
class Expected:
    """The spec's store decision for one read, with the queue bounds it was decided against."""

    decision: pc.StoreDecision
    min_offset: int
    max_offset: int
    delivered: tuple[int, ...]
    # Statuses equally allowed: gone entries in several deleted commit-log files (scan_queue takes them as one file).
    statuses: frozenset[GetMessageStatus]


@attrs.define(eq=False)
class Processing:
    """One processing of a PULL_MESSAGE by the broker: first (``allow_suspend``) or after a wake-up."""

    request: RemotingCommand
    first: bool
    expression: str | None
    precheck: ResponseCode | None = None
    expected: Expected | None = None
    actual: Any = None
    commits: list[OffsetCommit] = attrs.Factory(list)
    moved_events: int = 0


def field(request: RemotingCommand, name: str) -> int:
    return int(request.ext_fields[name])


class PullCorrectionMachine(RuleBasedStateMachine):
    """One broker's store, raw pulls at arbitrary offsets and a push consumer's reactions (PULL-*)."""

    EXPRESSIONS: tuple[str, ...] = ("*", "A || B")

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.violations: list[str] = []
        self.tags: dict[tuple[int, int], str] = {}  # (queue id, queue offset) -> tag of the message sent
        self.stack: list[Processing] = []
        self.consumer: PushConsumer | None = None
        self.consumer_count = 0
        self.expression = "*"
        self.updates: list[tuple[MessageQueue, int, bool]] = []  # the consumer's offset-store updates, in order
        self.expect_pull: dict[MessageQueue, tuple[int, int]] = {}  # next pull: (offset, not before ms)
        self.dropped: dict[MessageQueue, tuple[pc.OffsetUpdate, int]] = {}  # OFFSET_ILLEGAL: (fix, at ms)
        self.checked = {"store reads": 0, "answers": 0, "held": 0, "prechecks": 0, "reactions": 0, "fixes": 0,
                        "resumes": 0}

    # ------------------------------------------------------------------------------------------------ set-up
    @initialize(data=st.data(), seed=st.integers(0, 255), start=st.booleans())
    def setup(self, data: st.DataObject, seed: int, start: bool) -> None:
        expression = data.draw(st.sampled_from(type(self).EXPRESSIONS), label="consumer expression")
        from_where = data.draw(st.sampled_from(("CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_LAST_OFFSET")),
                               label="consume from where")
        self.configure(expression, from_where, seed, start)

    def configure(self, expression: str, from_where: str, seed: int, start: bool) -> None:
        """The cluster, the hooks, the topic, the producer, the raw client and (``start``) the consumer."""
        self.expression = expression
        self.from_where = from_where
        self.cluster = Cluster(brokers=1, clock="simulated", seed=seed, keep_events=True, segment_bytes=SEGMENT_BYTES,
                               wire_codec="json")
        self.broker = self.cluster.broker(BROKER)
        self.broker.store.cq_segment_entries = CQ_FILE_ENTRIES  # before any consume queue exists
        self._watch_broker(self.broker)
        self.cluster.events.subscribe(self._on_event)
        self.cluster.create_topic(TOPIC, queues=QUEUES)
        self.producer = self.cluster.producer("PG")
        self.raw = self.cluster.network.client("raw-puller")
        if start:
            self.start_consumer()

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
        # Hypothesis may keep failing machines while it shrinks: let the cluster and its events go.
        self.cluster = None
        self.consumer = None

    @property
    def store(self) -> MessageStore:
        return self.broker.store

    def _violation(self, text: str) -> None:
        self.violations.append(f"t={self.cluster.now_ms() if self.cluster else 0}: {text}")

    # ------------------------------------------------------------------------------------------------ the spec side
    def expected_read(self, topic: str, queue_id: int, offset: int, max_msgs: int,
                      match: Callable[[int, int, int], bool]) -> Expected:
        """The spec's decision for a read at ``offset``, from the store's observable state (PULL-1 to PULL-9).

        A 4.9 store creates a missing consume queue on demand (``findConsumeQueue``), so a queue the store never
        wrote is an empty queue (PULL-2), not a missing one (PULL-1). ``match(queue_offset, commit_log_offset,
        tags_code)`` is the subscription's filter."""
        store = self.store
        low, high = store.min_offset(topic, queue_id), store.max_offset(topic, queue_id)
        entries_per_file = store.cq_segment_entries
        readable, scan, delivered = True, None, ()
        statuses: set[GetMessageStatus] = set()
        if low <= offset < high:
            file_end = offset + entries_per_file - offset % entries_per_file
            rows = store.queue_entries(topic, queue_id, offset, min(file_end, high) - offset)
            readable = bool(rows) and rows[0][0] == offset
            if readable:
                kinds = []
                gone_files = set()
                for queue_offset, phy, _size, tags_code in rows:
                    hit = match(queue_offset, phy, tags_code)
                    if store.look_message_bytes(phy) is None:
                        gone_files.add(phy // store.segment_bytes)
                        kinds.append(pc.CqEntry.GONE_MATCH if hit else pc.CqEntry.GONE_NO_MATCH)
                    else:
                        kinds.append(pc.CqEntry.MATCH if hit else pc.CqEntry.NO_MATCH)
                scan = pc.scan_queue(tuple(kinds), max_msg_nums=max_msgs)
                delivered = tuple(offset + k for k in range(scan.entries_scanned) if kinds[k] is pc.CqEntry.MATCH)
                if len(gone_files) > 1 and scan.status is not G.FOUND:
                    statuses = {G.NO_MATCHED_MESSAGE, G.MESSAGE_WAS_REMOVING}
        decision = pc.store_status(offset, low, high, entry_readable=readable, scan=scan,
                                   cq_file_entries=entries_per_file)
        statuses.add(decision.status)
        return Expected(decision, low, high, delivered, frozenset(statuses))

    # ------------------------------------------------------------------------------------------------ broker hooks
    def _watch_broker(self, broker: Broker) -> None:
        store = broker.store
        get_message = store.get_message

        def watched_get_message(topic: str, queue_id: int, offset: int, max_msgs: int,
                                tags_filter: Any = None, commit_log_filter: Any = None) -> Any:
            # This machine subscribes by tags only: a SQL92 commit-log filter never takes part.
            assert commit_log_filter is None
            processing = self.stack[-1] if self.stack else None
            expression = processing.expression if processing is not None and topic == TOPIC else None

            def match(queue_offset: int, phy: int, tags_code: int) -> bool:
                if expression is not None:
                    # The tag the producer gave the message (read back while the data is there: a put wakes held
                    # pulls before the send returns).
                    stored = store.look_message(phy)
                    tag = stored.tags if stored is not None else self.tags.get((queue_id, queue_offset))
                    return matches(expression, tag)
                return tags_filter is None or bool(tags_filter(tags_code))

            expected = self.expected_read(topic, queue_id, offset, max_msgs, match)
            result = get_message(topic, queue_id, offset, max_msgs, tags_filter, commit_log_filter)
            self._check_read(topic, queue_id, offset, expected, result)
            if processing is not None:
                processing.expected, processing.actual = expected, result
            return result

        store.get_message = watched_get_message  # type: ignore[method-assign]
        handle = broker.handle
        process = broker.puller.process

        def watched_handle(request: RemotingCommand, channel: Any) -> RemotingCommand | None:
            if request.code != RequestCode.PULL_MESSAGE:
                return handle(request, channel)
            return self._processing(request, True, lambda: handle(request, channel))

        def watched_process(request: RemotingCommand, channel: Any, allow_suspend: bool = True
                            ) -> RemotingCommand | None:
            # Reached only from PullMessageProcessor.wake: the broker's handler table holds the original.
            return self._processing(request, allow_suspend, lambda: process(request, channel, allow_suspend))

        broker.handle = watched_handle  # type: ignore[method-assign]
        broker.puller.process = watched_process  # type: ignore[method-assign]

    def _check_read(self, topic: str, queue_id: int, offset: int, expected: Expected, result: Any) -> None:
        """PULL-1 to PULL-9, PULL-25, PULL-27: the store's answer is the spec's for the store's state."""
        self.checked["store reads"] += 1
        decision = expected.decision
        got = (result.status, result.next_begin_offset, result.min_offset, result.max_offset, result.queue_offsets)
        if (result.status not in expected.statuses or result.next_begin_offset != decision.next_begin_offset
                or (result.min_offset, result.max_offset) != (expected.min_offset, expected.max_offset)
                or tuple(result.queue_offsets) != expected.delivered):
            clause = {G.NO_MATCHED_LOGIC_QUEUE: "PULL-1", G.NO_MESSAGE_IN_QUEUE: "PULL-2", G.OFFSET_TOO_SMALL: "PULL-3",
                      G.OFFSET_OVERFLOW_ONE: "PULL-4", G.OFFSET_OVERFLOW_BADLY: "PULL-5",
                      G.OFFSET_FOUND_NULL: "PULL-6"}.get(decision.status, "PULL-8/PULL-9")
            want = (decision.status, decision.next_begin_offset, expected.min_offset, expected.max_offset,
                    expected.delivered)
            self._violation(f"{clause}: read of {topic}:{queue_id} at {offset} answered (status, next, min, max, "
                            f"offsets) = {got}; the spec decides {want}")

    def _precheck(self, request: RemotingCommand) -> ResponseCode | None:
        """The spec's pre-store checks for this request against the broker's state (PULL-16, PULL-17)."""
        broker = self.broker
        topic = request.ext_fields["topic"]
        sys_flag = field(request, "sysFlag")
        config = broker.topics.get(topic)
        has_subscription = bool(sys_flag & PULL_FLAG_SUBSCRIPTION)
        group_info = broker.consumers.get(request.ext_fields["consumerGroup"])
        found = group_info.find_subscription(topic) if group_info is not None else None
        return pc.pull_precheck(
            broker_readable=bool(broker.config.broker_permission & PERM_READ),
            topic_exists=config is not None,
            topic_readable=config is not None and bool(config.perm & PERM_READ),
            queue_id=field(request, "queueId"),
            read_queue_nums=config.read_queue_nums if config is not None else 0,
            has_subscription_flag=has_subscription,
            group_info_exists=group_info is not None,
            subscription_exists=found is not None,
            broker_sub_version=found.sub_version if found is not None else 0,
            request_sub_version=field(request, "subVersion"),
        )

    def _processing(self, request: RemotingCommand, first: bool, run: Callable[[], RemotingCommand | None]
                    ) -> RemotingCommand | None:
        group = request.ext_fields["consumerGroup"]
        if field(request, "sysFlag") & PULL_FLAG_SUBSCRIPTION:
            expression = request.ext_fields.get("subscription") or "*"
        else:
            expression = self.expression if group == GROUP else None
        processing = Processing(request, first, expression, precheck=self._precheck(request))
        self.stack.append(processing)
        try:
            response = run()
        finally:
            self.stack.pop()
        self._check_answer(processing, response)
        return response

    def _check_answer(self, p: Processing, response: RemotingCommand | None) -> None:
        """PULL-10 to PULL-18, PULL-26: the broker's answer to a store decision, and the commit it makes."""
        request = p.request
        topic, queue_id, offset = request.ext_fields["topic"], field(request, "queueId"), field(request, "queueOffset")
        group = request.ext_fields["consumerGroup"]
        sys_flag = field(request, "sysFlag")
        where = f"pull {group} {topic}:{queue_id} at {offset} ({'first' if p.first else 'again'})"
        if p.precheck is not None:
            self.checked["prechecks"] += 1
            if p.expected is not None or response is None or response.code != p.precheck:
                self._violation(f"PULL-16/PULL-17: {where} answered {None if response is None else response.code}"
                                f" (store read: {p.expected is not None}); the spec fails it with {p.precheck!r}")
            return
        if p.expected is None:
            self._violation(f"PULL-16/PULL-17: {where} was answered {response and response.code} without a store "
                            f"read although every pre-check passes")
            return
        decision = p.expected.decision
        status = p.actual.status if p.actual is not None and p.actual.status in p.expected.statuses else decision.status
        answer = pc.response_code(status, requested_offset=offset, suspend=bool(sys_flag & PULL_FLAG_SUSPEND),
                                  broker_allow_suspend=p.first)
        if answer.held:
            self.checked["held"] += 1
            if response is not None:
                self._violation(f"PULL-10/PULL-13: {where} ({status.name}) was answered {response.code}; the spec "
                                f"holds it")
        elif response is None:
            self._violation(f"PULL-10/PULL-13/PULL-14: {where} ({status.name}) was held; the spec answers "
                                f"{answer.code!r}")
        else:
            self.checked["answers"] += 1
            fields = response.ext_fields
            got = (response.code, int(fields["nextBeginOffset"]), int(fields["minOffset"]), int(fields["maxOffset"]),
                   int(fields["suggestWhichBrokerId"]), response.remark)
            want = (int(answer.code), decision.next_begin_offset, p.expected.min_offset, p.expected.max_offset,
                    answer.suggest_broker_id, status.name)
            if got != want:
                self._violation(f"PULL-10/PULL-11/PULL-12: {where} answered (code, next, min, max, suggest, remark) = "
                                f"{got}; the spec answers {want}")
            if answer.code is ResponseCode.SUCCESS:
                found = tuple(m.queue_offset for m in decode_stored_messages(response.body or b"", BROKER))
                if found != p.expected.delivered:
                    self._violation(f"PULL-8/PULL-27: {where} delivered {found}; the spec delivers "
                                    f"{p.expected.delivered}")
            if p.moved_events != (1 if answer.offset_moved_event else 0):
                self._violation(f"PULL-11: {where} wrote {p.moved_events} OffsetMovedEvent(s); the spec "
                                f"{'writes one' if answer.offset_moved_event else 'writes none'}")
        has_commit = bool(sys_flag & PULL_FLAG_COMMIT_OFFSET)
        commit_offset = field(request, "commitOffset")
        if group == GROUP and has_commit != pc.commit_flag(clustering=True, memory_offset=commit_offset):
            self._violation(f"PULL-18: {where} carries the commit flag {has_commit} with memory offset {commit_offset}")
        commits = [c.offset for c in p.commits if (c.group, c.topic, c.queue_id) == (group, topic, queue_id)]
        wanted = [commit_offset] if pc.broker_commits(broker_allow_suspend=p.first, has_commit_flag=has_commit,
                                                      is_slave=False) else []
        if commits != wanted:
            self._violation(f"PULL-18: {where} committed {commits}; the spec commits {wanted}")

    # ------------------------------------------------------------------------------------------------ events
    def _on_event(self, event: Event) -> None:
        if isinstance(event, (OffsetCommit, MessageStored)) and event.node == BROKER and self.stack:
            if isinstance(event, OffsetCommit):
                self.stack[-1].commits.append(event)
            elif event.topic == OFFSET_MOVED_EVENT_TOPIC:
                self.stack[-1].moved_events += 1
        consumer = self.consumer
        if consumer is None or event.node != consumer.instance.client_id:
            return
        if isinstance(event, PullResponseEvent):
            self._on_client_response(event)
        elif isinstance(event, PullRequestEvent):
            self._on_client_pull(event)

    def _on_client_response(self, event: PullResponseEvent) -> None:
        """PULL-19: the client's status is ``pull_status`` of the code; an error is re-pulled at its offset after
        the exception delay (PULL-23)."""
        mq = MessageQueue(event.topic, event.broker, event.queue_id)
        mapped = pc.pull_status(ResponseCode(event.code)) if event.code is not None else None
        if event.status == "ERROR":
            if mapped is not None:
                self._violation(f"PULL-19: code {event.code} at {event.offset} became an error, not {mapped.name}")
            reaction = pc.client_reaction(None, 0, True, request_offset=event.offset)
            assert reaction.repull_delay_ms is not None
            self.expect_pull[mq] = (reaction.next_offset, self.cluster.now_ms() + reaction.repull_delay_ms)
        elif mapped is None or mapped.name != event.status:
            self._violation(f"PULL-19: code {event.code} became {event.status}; the spec maps it to {mapped}")

    def _on_client_pull(self, event: PullRequestEvent) -> None:
        """PULL-20 to PULL-23: the consumer pulls a queue again where its last reaction said, not before the delay,
        and never a queue it dropped (PULL-22)."""
        mq = MessageQueue(event.topic, event.broker, event.queue_id)
        now = self.cluster.now_ms()
        if mq in self.dropped:
            self._violation(f"PULL-22: {mq} pulled at {event.offset} after OFFSET_ILLEGAL dropped it")
        expected = self.expect_pull.pop(mq, None)
        if expected is not None:
            offset, not_before = expected
            if event.offset != offset or now < not_before:
                self._violation(f"PULL-20/PULL-21/PULL-23: {mq} pulled at {event.offset} at t={now}; the last "
                                f"reaction says {offset} from t={not_before}")

    # ------------------------------------------------------------------------------------------------ consumer hooks
    def _watch_consumer(self, consumer: PushConsumer) -> None:
        on_pull_result = consumer._on_pull_result
        start = consumer._start

        def watched_start() -> None:
            start()
            self._watch_consumer_parts(consumer)

        def watched_on_pull_result(request: Any, result: Any) -> None:
            self._react(consumer, request, result, on_pull_result)

        consumer._start = watched_start  # type: ignore[method-assign]
        consumer._on_pull_result = watched_on_pull_result  # type: ignore[method-assign]

    def _watch_consumer_parts(self, consumer: PushConsumer) -> None:
        offset_store = consumer.offset_store
        update_offset = offset_store.update_offset
        rebalance = consumer.rebalance
        remove_process_queue = rebalance.remove_process_queue
        dispatch = rebalance.dispatch_pull_requests

        def watched_update_offset(mq: MessageQueue, offset: int, increase_only: bool) -> None:
            if consumer is self.consumer:
                self.updates.append((mq, offset, increase_only))
            update_offset(mq, offset, increase_only)

        def watched_remove_process_queue(mq: MessageQueue) -> None:
            if consumer is self.consumer and mq in self.dropped:
                self._check_fix(consumer, mq)
            remove_process_queue(mq)

        def watched_dispatch(requests: list[Any]) -> None:
            if consumer is self.consumer:
                for request in requests:
                    self._check_resume(request)
            dispatch(requests)

        offset_store.update_offset = watched_update_offset  # type: ignore[method-assign]
        rebalance.remove_process_queue = watched_remove_process_queue  # type: ignore[method-assign]
        rebalance.dispatch_pull_requests = watched_dispatch  # type: ignore[method-assign]

    def _react(self, consumer: PushConsumer, request: Any, result: Any, original: Callable[[Any, Any], None]) -> None:
        """PULL-19 to PULL-22: the consumer's reaction to one pull result is ``client_reaction``'s."""
        if consumer is not self.consumer:
            original(request, result)
            return
        self.checked["reactions"] += 1
        mq, pq = request.mq, request.pq
        status = pc.pull_status(ResponseCode(result.code))
        if status is not result.status:
            self._violation(f"PULL-19: code {result.code} handled as {result.status}; the spec maps it to {status}")
        reaction = pc.client_reaction(status, result.next_begin_offset, pq.msg_count == 0,
                                      request_offset=request.next_offset,
                                      found_messages=len(result.msg_found_list))
        before = len(self.updates)
        was_dropped = pq.dropped
        original(request, result)
        updates = [(offset, increase_only) for q, offset, increase_only in self.updates[before:] if q == mq]
        wanted = [] if reaction.update is None else [(reaction.update.offset, reaction.update.increase_only)]
        where = f"{mq.topic}:{mq.queue_id} {status.name if status else None} next {result.next_begin_offset}"
        if request.next_offset != reaction.next_offset:
            self._violation(f"PULL-20/PULL-21/PULL-22: {where}: next offset {request.next_offset}, the spec "
                            f"{reaction.next_offset}")
        if updates != wanted:
            self._violation(f"PULL-21: {where} (cache empty: {reaction.update is not None or status is None}): "
                            f"offset updates {updates}; the spec {wanted}")
        if not was_dropped and pq.dropped != reaction.drop:
            self._violation(f"PULL-22: {where}: dropped {pq.dropped}; the spec {reaction.drop}")
        if reaction.enqueue:
            missing = [m.queue_offset for m in result.msg_found_list if m.queue_offset not in pq.msg_tree]
            if missing:
                self._violation(f"PULL-20: {where}: found messages {missing} not in the process queue")
        now = self.cluster.now_ms()
        if reaction.drop:
            assert reaction.fix is not None
            self.dropped[mq] = (reaction.fix, now)
            self.expect_pull.pop(mq, None)
        elif reaction.repull_delay_ms is not None:
            self.expect_pull[mq] = (reaction.next_offset, now + reaction.repull_delay_ms)

    def _check_fix(self, consumer: PushConsumer, mq: MessageQueue) -> None:
        """PULL-22: 10 s after OFFSET_ILLEGAL the correction is stored with increaseOnly = false, then removed."""
        fix, at = self.dropped.pop(mq)
        self.checked["fixes"] += 1
        now = self.cluster.now_ms()
        if now - at != OFFSET_ILLEGAL_REMOVE_DELAY_MS:
            self._violation(f"PULL-22: the OFFSET_ILLEGAL fix of {mq} ran {now - at} ms after the answer")
        last = [(offset, increase_only) for q, offset, increase_only in self.updates if q == mq][-1:]
        if last != [(fix.offset, fix.increase_only)]:
            self._violation(f"PULL-22: the OFFSET_ILLEGAL fix of {mq} updated the offset store with {last}; the spec "
                            f"stores {(fix.offset, fix.increase_only)}")
        memory = consumer.offset_store.memory_offset(mq)
        if memory != fix.offset:
            self._violation(f"PULL-22: after the OFFSET_ILLEGAL fix of {mq} the offset store has {memory}, the spec "
                            f"{fix.offset}")

    def _check_resume(self, request: Any) -> None:
        """PULL-24 (REB-13): a queue added to the table starts from the broker's stored offset when there is one."""
        mq = request.mq
        stored = self.broker.consumer_offsets.query(GROUP, mq.topic, mq.queue_id)
        self.checked["resumes"] += 1
        if stored >= 0 and request.next_offset != stored:
            self._violation(f"PULL-24: {mq} added back at {request.next_offset}; the broker stores {stored}")
        self.dropped.pop(mq, None)
        self.expect_pull[mq] = (request.next_offset, 0)

    # ------------------------------------------------------------------------------------------------ rules
    def _offset(self, queue_id: int, where: str, delta: int) -> int:
        low, high = self.store.min_offset(TOPIC, queue_id), self.store.max_offset(TOPIC, queue_id)
        if where == "below_min":
            return max(0, low - 1 - delta)
        if where == "min":
            return low
        if where == "in_range":
            return low + delta % (high - low) if high > low else low
        if where == "max":
            return high
        if where == "beyond_max":
            return high + 1 + delta
        return 0

    @rule(queue_id=st.integers(0, QUEUES - 1), tags=st.lists(st.sampled_from(TAGS), min_size=1, max_size=5))
    def send(self, queue_id: int, tags: list[str]) -> None:
        """Messages with tags to one queue."""
        for tag in tags:
            try:
                result = self.producer.send(Message(TOPIC, BODY, tags=tag), queue=MessageQueue(TOPIC, BROKER,
                                                                                             queue_id))
            except MQClientError:
                continue
            self.tags[(queue_id, result.queue_offset)] = tag

    @rule(queue_id=st.integers(0, QUEUES), where=st.sampled_from(("below_min", "min", "in_range", "max",
                                                                   "beyond_max", "zero")),
          delta=st.integers(0, 6), expression=st.sampled_from(EXPRESSIONS), max_msgs=st.sampled_from((1, 2, 32)),
          suspend=st.booleans(), commit=st.booleans())
    def raw_pull(self, queue_id: int, where: str, delta: int, expression: str, max_msgs: int, suspend: bool,
                 commit: bool) -> None:
        """A PULL_MESSAGE at an arbitrary offset (queue id 2 is outside the read queues: PULL-16)."""
        offset = self._offset(queue_id % QUEUES, where, delta)
        sys_flag = PULL_FLAG_SUBSCRIPTION | (PULL_FLAG_SUSPEND if suspend else 0) | (PULL_FLAG_COMMIT_OFFSET if commit
                                                                                       else 0)
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, {
            "consumerGroup": RAW_GROUP, "topic": TOPIC, "queueId": queue_id, "queueOffset": offset,
            "maxMsgNums": max_msgs, "sysFlag": sys_flag, "commitOffset": delta, "suspendTimeoutMillis": RAW_SUSPEND_MS,
            "subscription": expression, "subVersion": 0, "expressionType": "TAG",
        })
        self.raw.invoke(self.broker.addr, request, 30_000, daemon=True)
        self.cluster.advance(5)

    @rule(segments=st.integers(1, 2))
    def delete_old_data(self, segments: int) -> None:
        """The oldest commit-log segments go; consume-queue files and the minimum offset follow."""
        self.cluster.delete_old_data(BROKER, segments)

    @rule(ms=st.sampled_from((10, 1_000, 5_000, OFFSET_ILLEGAL_REMOVE_DELAY_MS, 20_000)))
    def advance(self, ms: int) -> None:
        """Time passes: long polling, the OFFSET_ILLEGAL fix, rebalances, persistence."""
        self.cluster.advance(ms)

    @precondition(lambda self: self.consumer is None)
    @rule()
    def start_consumer(self) -> None:
        """A push consumer of ``CG`` starts (a queue without a stored offset starts as consume-from-where says)."""
        assert self.cluster is not None
        self.consumer_count += 1
        config = ClientConfig(instance_name=f"{GROUP}-{self.consumer_count}")
        instance = ClientInstance(self.cluster.runtime, self.cluster.network, self.cluster.events,
                                  self.cluster.namesrv_addr, f"{config.client_ip}@{config.instance_name}", config)
        consumer = PushConsumer(instance, ConsumerConfig(
            group=GROUP, consume_from_where=ConsumeFromWhere[self.from_where]),
            lambda msgs: ConsumeStatus.CONSUME_SUCCESS)
        consumer.subscribe(TOPIC, self.expression)
        self._watch_consumer(consumer)
        self.consumer = consumer
        self.cluster.runtime.submit(consumer.start)
        self.cluster.advance(10)

    @precondition(lambda self: self.consumer is not None)
    @rule(crash=st.booleans())
    def stop_consumer(self, crash: bool) -> None:
        """The consumer shuts down (offsets persisted) or crashes (nothing persisted)."""
        consumer = self.consumer
        assert consumer is not None and self.cluster is not None
        self._forget_consumer()
        if crash:
            self.cluster.crash_client(consumer)
        else:
            consumer.shutdown()
        self.cluster.advance(10)

    def _forget_consumer(self) -> None:
        self.consumer = None
        self.expect_pull.clear()
        self.dropped.clear()

    @precondition(lambda self: self.consumer is not None)
    @rule(pause=st.booleans())
    def pause_consumer(self, pause: bool) -> None:
        """The consumer stops pulling (it falls behind) or resumes (and rebalances)."""
        assert self.consumer is not None
        if pause:
            self.consumer.suspend()
        else:
            self.expect_pull.clear()  # a resume rebalances: queues idle > 120 s are dropped and added back
            self.consumer.resume()
        self.cluster.advance(10)

    @rule(queue_id=st.integers(0, QUEUES - 1), where=st.sampled_from(("below_min", "in_range", "beyond_max")),
          delta=st.integers(0, 6))
    def reset_offset(self, queue_id: int, where: str, delta: int) -> None:
        """An operator resets the group's committed offset anywhere (like mqadmin resetOffset): a running consumer
        is shut down first and started again after, so it resumes from the new offset (PULL-24) and corrects it
        when it is outside the queue (PULL-3, PULL-5, PULL-22)."""
        running = self.consumer is not None
        if running:
            self.stop_consumer(crash=False)
        offset = self._offset(queue_id, where, delta)
        request = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": GROUP, "topic": TOPIC, "queueId": queue_id, "commitOffset": offset})
        self.raw.invoke(self.broker.addr, request, 3_000)
        self.cluster.advance(5)
        if running:
            self.start_consumer()

    # ------------------------------------------------------------------------------------------------ invariants
    @invariant()
    def no_violation(self) -> None:
        """Every store read, broker answer, commit and consumer reaction so far was the spec's."""
        assert not self.violations, "\n".join(self.violations[:5])


def test_pull_correction_machine() -> None:
    """The pull machine in the active profile (ci: 50 programs of 50 steps)."""
    run_state_machine_as_test(PullCorrectionMachine, settings=stateful_settings(50, 50))


def run_program(machine: PullCorrectionMachine, *steps: tuple[str, dict[str, Any]]) -> PullCorrectionMachine:
    """Run a fixed program on a configured machine, checking the invariant after every step."""
    try:
        machine.no_violation()
        for name, args in steps:
            getattr(machine, name)(**args)
            machine.no_violation()
    finally:
        checked = dict(machine.checked)
        machine.teardown()
    machine.checked = checked
    return machine


def test_scripted_offset_beyond_max_is_corrected_back() -> None:
    """A committed offset past the queue: OFFSET_OVERFLOW_BADLY, the drop, the fix 10 s later that moves the offset
    back (increaseOnly = false), and the resume from the corrected offset (PULL-5, PULL-22, PULL-24)."""
    machine = PullCorrectionMachine()
    machine.configure("*", "CONSUME_FROM_FIRST_OFFSET", seed=1, start=True)
    run_program(machine,
                ("send", {"queue_id": 0, "tags": ["A", "B", "C"]}),
                ("advance", {"ms": 1_000}),
                ("reset_offset", {"queue_id": 0, "where": "beyond_max", "delta": 4}),
                ("advance", {"ms": OFFSET_ILLEGAL_REMOVE_DELAY_MS}),
                ("advance", {"ms": 20_000}),
                ("send", {"queue_id": 0, "tags": ["A"]}),
                ("advance", {"ms": 1_000}))
    assert machine.checked["fixes"] >= 1 and machine.checked["resumes"] >= 3


def test_scripted_consumer_behind_deleted_data_is_corrected_forward() -> None:
    """A paused consumer falls behind data that is deleted: OFFSET_TOO_SMALL on resume, the fix to min, the resume
    (PULL-3, PULL-22, PULL-24); raw pulls meet the removed entries and an illegal queue id (PULL-6, PULL-9, PULL-16)."""
    machine = PullCorrectionMachine()
    machine.configure("A || B", "CONSUME_FROM_FIRST_OFFSET", seed=2, start=True)
    backlog = [("send", {"queue_id": q, "tags": ["A", "C", "B", "A", "C"]}) for q in (0, 1, 0, 1, 0, 1)]
    run_program(machine,
                ("advance", {"ms": 1_000}),
                ("pause_consumer", {"pause": True}),
                *backlog,
                ("delete_old_data", {"segments": 2}),
                ("raw_pull", {"queue_id": 0, "where": "below_min", "delta": 0, "expression": "C", "max_msgs": 2,
                              "suspend": False, "commit": True}),
                ("raw_pull", {"queue_id": 1, "where": "in_range", "delta": 3, "expression": "*", "max_msgs": 32,
                              "suspend": True, "commit": False}),
                ("raw_pull", {"queue_id": 2, "where": "zero", "delta": 0, "expression": "*", "max_msgs": 1,
                              "suspend": False, "commit": False}),
                ("pause_consumer", {"pause": False}),
                ("advance", {"ms": OFFSET_ILLEGAL_REMOVE_DELAY_MS}),
                ("advance", {"ms": 20_000}))
    assert machine.checked["fixes"] >= 1 and machine.checked["prechecks"] >= 1


# ------------------------------------------------------------------------------------------------------------ mutants


def test_mutant_too_small_corrected_wrong_is_caught() -> None:
    """OFFSET_TOO_SMALL corrected to the requested offset instead of min (PULL-3)."""
    with refimpl_mutant(store_reading, "GetMessageResult(GetMessageStatus.OFFSET_TOO_SMALL, min_offset,",
                        "GetMessageResult(GetMessageStatus.OFFSET_TOO_SMALL, offset,"):
        failure = hypothesis_finds_failure(PullCorrectionMachine, 40, 30)
    assert "PULL-3" in str(failure)


def test_mutant_overflow_badly_to_min_is_caught() -> None:
    """OFFSET_OVERFLOW_BADLY corrected to min (the 4.9.3 rule for min == 0, applied always) (PULL-5)."""
    with refimpl_mutant(store_reading, "GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset,",
                        "GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_BADLY, min_offset,"):
        failure = hypothesis_finds_failure(PullCorrectionMachine, 60, 30)
    assert "PULL-5" in str(failure)


def test_mutant_status_code_mapping_swapped_is_caught() -> None:
    """An empty queue answers PULL_NOT_FOUND off offset 0 and PULL_OFFSET_MOVED at 0 (PULL-10)."""
    with refimpl_mutant(pull_module,
                        "ResponseCode.PULL_OFFSET_MOVED if header.queue_offset != 0 else ResponseCode.PULL_NOT_FOUND",
                        "ResponseCode.PULL_NOT_FOUND if header.queue_offset != 0 else ResponseCode.PULL_OFFSET_MOVED"
                        ):
        failure = hypothesis_finds_failure(PullCorrectionMachine, 40, 30)
    assert "PULL-10" in str(failure) or "PULL-13" in str(failure)


def test_mutant_illegal_fix_increase_only_is_caught() -> None:
    """The OFFSET_ILLEGAL fix stored with increaseOnly = true (PULL-22)."""
    with refimpl_mutant(push_consumer_module, "self.offset_store.update_offset(mq, request.next_offset, False)",
                        "self.offset_store.update_offset(mq, request.next_offset, True)"):
        failure = hypothesis_finds_failure(PullCorrectionMachine, 60, 40)
    assert "PULL-22" in str(failure)
