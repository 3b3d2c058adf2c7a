"""Lockstep: the transaction_check spec (TXN-*) drives the reference implementation's transactions and check-back.

Each run draws its configuration (``tests/dimensions.py``): the broker's transactionTimeOut, transactionCheckInterval
and transactionCheckMax, and the group of the first transactional producer. A simulated cluster (one broker, topic
``TopicTest`` with two queues) has four producer slots: two of that group and two of a second group ``PG2``; the first
starts with the run, rules start, shut down or crash the others, so a group may have several producers or none. A push
consumer reads the real topic.

Rules send transactional messages (the local transaction answers COMMIT, ROLLBACK, UNKNOW, null or throws; the
checker keeps answering UNKNOW, null or throwing until a rule decides the message, as the spec's ``LocalDecides``;
some messages carry CHECK_IMMUNITY_TIME_IN_SECONDS), arm faults on a producer's next END_TRANSACTION (lost,
duplicated, delayed), forge END_TRANSACTIONs the broker must refuse, let time pass (to the next pass or by a number of
ms), and settle the cluster.

The spec's ``TxnState`` is stepped with everything the implementation does, read from its events, the application's
callbacks and its read-only state (``TransactionCheckService.segments``, ``walking``, ``last_check_client``,
``TransactionService.last_end_header``, the broker's producer table): each half message stored (``SendHalf``), each
local transaction's return (``LocalTransactionEnds``), each END_TRANSACTION delivered, lost or duplicated, each run of
the check pass's walk (``CheckPass``, with the producer each check went to), each check a producer answers, each
producer registering or leaving, each message the consumer receives; time passes between them as the implementation's
clock says. After every rule the projections are compared: the half queue (check counts included), the op queue, the
real topic per queue, TRANS_CHECK_MAX_TIME_TOPIC, the consumer's messages, the checks made per message and the
committed half and op offsets.
"""

from __future__ import annotations

import enum
from collections import Counter
from typing import Any

import attrs
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from lockstep import LockstepMachine, machine_test, variant_caught, variant_needs

from rocketspec.refimpl import Cluster, ConsumeStatus, Message, TransactionState
from rocketspec.refimpl.broker import transaction as broker_transaction
from rocketspec.refimpl.broker import transaction_check as broker_check
from rocketspec.refimpl.client import transaction as client_transaction
from rocketspec.refimpl.client.errors import MQClientError
from rocketspec.refimpl.events import Event, FaultInject, MessageStored, TxnCheck, TxnEnd, TxnHalf
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec import transaction_check as tc
from rocketspec.spec.protocol import (
    SYSFLAG_TRANSACTION_MASK,
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_SYS_GROUP,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    Property,
    RequestCode,
    ResponseCode,
    SendStatus,
)

TOPIC = tc.REAL_TOPIC
BROKER = "broker-a"
CONSUMER_GROUP = "CG"
SECOND_GROUP = "PG2"
FORGER_GROUP = "FORGER"
NOWHERE = 10**9  # a commit-log offset where no message is
SEND_CODES = frozenset({RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE})
NOT_OK = (SendStatus.FLUSH_DISK_TIMEOUT, SendStatus.FLUSH_SLAVE_TIMEOUT, SendStatus.SLAVE_NOT_AVAILABLE)
MAX_MESSAGES = 6
SLOTS = 4  # producer slots: 0 and 1 of the drawn group, 2 and 3 of SECOND_GROUP
WIRE_CODEC = "json"
#: The properties of a stored message the spec knows of.
MODELLED = (Property.TRANSACTION_PREPARED, Property.PRODUCER_GROUP, Property.REAL_TOPIC, Property.REAL_QUEUE_ID,
            Property.TRANSACTION_CHECK_TIMES, Property.CHECK_IMMUNITY_TIME_IN_SECONDS,
            Property.TRANSACTION_PREPARED_QUEUE_OFFSET)
# The parts of the projection, each named with the clauses that decide it.
HALF = "half queue: msg, born, stored, check times, prepared offset, group, REAL_QID, immunity, bits (TXN-2, TXN-15)"
OPS = "op queue: half offset named, born (TXN-9, TXN-10, TXN-11)"
REAL = "real topic per queue: msg, transaction bits, stored properties (TXN-8, TXN-22)"
DISCARDED = "TRANS_CHECK_MAX_TIME_TOPIC: msg, check times (TXN-16, TXN-23)"
CONSUMED = "consumer received (TXN-3, TXN-22)"
CHECKS = "checks made per message (TXN-19, TXN-23)"
OFFSETS = "committed half and op offsets of CID_RMQ_SYS_TRANS (TXN-20, TXN-24)"
SCHEDULE = "when the next pass begins (TXN-12, TXN-26)"


class Answer(enum.Enum):
    """What the local transaction (or, while undecided, the checker) answers."""

    COMMIT = "commit"
    ROLLBACK = "rollback"
    UNKNOW = "unknow"
    NONE = "none"  # returns None
    RAISE = "raise"  # throws

    @property
    def state(self) -> TransactionState | None:
        return {Answer.COMMIT: TransactionState.COMMIT_MESSAGE, Answer.ROLLBACK: TransactionState.ROLLBACK_MESSAGE,
                Answer.UNKNOW: TransactionState.UNKNOW}.get(self)

    def produce(self) -> TransactionState | None:
        if self is Answer.RAISE:
            raise RuntimeError("local transaction failed")
        return self.state


@attrs.define
class Txn:
    """One transactional message as the application sees it."""

    index: int
    slot: int
    executor: Answer
    undecided: Answer  # the checker's answer until ``decision`` is set
    decision: TransactionState | None = None


@attrs.frozen
class Snapshot:
    """The implementation's read-only state when an event or callback happened."""

    segments: int
    walking: bool
    check_client: str | None
    registered: frozenset[int]
    header: Any


@attrs.frozen
class Item:
    """One thing the implementation did: an event, or an application callback (``kind`` executor, check, consume)."""

    kind: str
    snap: Snapshot
    ts: int
    event: Event | None = None
    data: tuple[Any, ...] = ()


class TransactionCheckMachine(LockstepMachine):
    """Transactional sends, END_TRANSACTION faults, forgeries, producers coming and going and check passes, stepped
    with the spec's transaction machine (TXN-1..TXN-26)."""

    TABLE = tc.TRANSITIONS
    DIMENSIONS = ("broker.transactionTimeOut", "broker.transactionCheckInterval", "broker.transactionCheckMax",
                  "producer.group")
    DRIVEN = (tc.LocalDecides, tc.ForgedEndTransaction)
    OBSERVED = (tc.SendHalf, tc.LocalTransactionEnds, tc.TimePasses, tc.CheckPass, tc.ProducerAnswers, tc.CheckLost,
                tc.EndTransactionDelivered, tc.EndTransactionLost, tc.EndTransactionDuplicated,
                tc.ProducerRegisters, tc.ProducerLeaves, tc.ConsumerReceives)

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.items: list[Item] = []
        self.txns: list[Txn] = []
        self.by_key: dict[str, int] = {}  # UNIQ_KEY -> message index
        self.half_clo: dict[int, int] = {}  # half queue offset -> commit-log offset
        self.clo_half: dict[int, int] = {}
        self.producers: dict[int, Any] = {}
        self.running: set[int] = set()
        self.client_slot: dict[str, int] = {}
        self.pending_fault: dict[int, set[str]] = {}
        self.last_sent: dict[int, tc.EndTxnRequest | None] = {}
        self.forged: Counter[tuple[str, int, int, int]] = Counter()
        self.checks_made: Counter[int] = Counter()
        self.received: list[int] = []
        self.other_clo: list[int] = []  # commit-log offsets of op and real messages
        self.statuses: list[SendStatus] = []  # non-OK statuses the broker answers the next half sends with
        self.not_ok: dict[int, SendStatus] = {}
        self.forger: Any = None
        self.sending: tuple[int, int | None] | None = None
        self.spec_segments = 0

    # ------------------------------------------------------------------------------------------------ setup
    def setup(self, config: dict[str, Any], data: st.DataObject) -> None:
        """One broker with the drawn transaction settings, the real topic with two queues, the consumer and the first
        producer (slot 0, of the drawn group)."""
        group = config["producer.group"]
        self.groups = (group, group, SECOND_GROUP, SECOND_GROUP)
        self.cluster = Cluster(brokers=1, clock="simulated", wire_codec=WIRE_CODEC, seed=data.draw(
            st.integers(0, 3), label="seed"), keep_events=False,
            transaction_timeout_ms=config["broker.transactionTimeOut"],
            transaction_check_interval_ms=config["broker.transactionCheckInterval"],
            transaction_check_max=config["broker.transactionCheckMax"])
        start = self.cluster.now_ms()
        self.cluster.events.subscribe(self._on_event)
        broker = self.cluster.broker(BROKER)
        handle = broker.handle

        def answer(request: RemotingCommand, channel: Any) -> RemotingCommand | None:
            """The broker stores a half message but answers the next status of ``statuses`` (SEND-5, TXN-4)."""
            response = handle(request, channel)
            if response is not None and request.code in SEND_CODES and response.code == 0 and self.statuses:
                return attrs.evolve(response, code=int(ResponseCode[self.statuses.pop(0).name]))
            return response

        broker.handle = answer  # type: ignore[method-assign]
        self.cluster.create_topic(TOPIC, queues=2)
        self.cluster.push_consumer(CONSUMER_GROUP, TOPIC, self._consume, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        spec_config = tc.Config(
            messages=MAX_MESSAGES, check_max=config["broker.transactionCheckMax"],
            timeout_ms=config["broker.transactionTimeOut"], interval_ms=config["broker.transactionCheckInterval"],
            immunity=(), producers=self.groups, duplicates=10**6, forged=10**6, stale_checks=True, start_ms=start)
        self.begin(tc.initial_state(spec_config, live=()))
        self._start(0)

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    @property
    def service(self) -> broker_transaction.TransactionService:
        assert self.cluster is not None
        return self.cluster.broker(BROKER).transactions

    def _start(self, slot: int) -> None:
        assert self.cluster is not None
        producer = self.cluster.transaction_producer(
            self.groups[slot], lambda msg, arg: self._execute(slot, msg), lambda msg: self._check(slot, msg))
        self.producers[slot] = producer
        self.running.add(slot)
        self.client_slot[producer.client_id] = slot
        producer.fetch_publish_queues(TOPIC)  # the route known, a send's half message is born when it starts
        self._replay()

    # ------------------------------------------------------------------------------------------------ observation
    def _snapshot(self) -> Snapshot:
        service = self.service
        table = self.cluster.broker(BROKER).producers.table if self.cluster is not None else {}
        registered = frozenset(self.client_slot[info.client_id] for channels in table.values()
                               for info in channels.values() if info.client_id in self.client_slot)
        return Snapshot(service.segments, service.walking, service.last_check_client, registered,
                        service.last_end_header)

    def _record(self, kind: str, event: Event | None = None, *data: Any) -> None:
        assert self.cluster is not None
        self.items.append(Item(kind, self._snapshot(), self.cluster.now_ms(), event, data))

    def _on_event(self, event: Event) -> None:
        if isinstance(event, MessageStored) and event.topic == TRANS_HALF_TOPIC:
            self.half_clo[event.offset] = event.commit_log_offset
            self.clo_half[event.commit_log_offset] = event.offset
        elif isinstance(event, MessageStored) and event.topic in (TRANS_OP_HALF_TOPIC, TOPIC):
            self.other_clo.append(event.commit_log_offset)
        if isinstance(event, (TxnHalf, TxnEnd, TxnCheck, FaultInject)):
            self._record("event", event)

    def _txn_of(self, msg: Any) -> Txn:
        return self.txns[int(msg.body[1:])]

    def _execute(self, slot: int, msg: Any) -> TransactionState | None:
        txn = self._txn_of(msg)
        self._record("executor", None, slot, txn.index, txn.executor)
        return txn.executor.produce()

    def _check(self, slot: int, msg: Any) -> TransactionState | None:
        """The checker: the decision once made, else the message's undecided answer."""
        txn = self._txn_of(msg)
        answer = Answer.COMMIT if txn.decision is TransactionState.COMMIT_MESSAGE else (
            Answer.ROLLBACK if txn.decision is TransactionState.ROLLBACK_MESSAGE else txn.undecided)
        self._record("check", None, slot, txn.index, msg.queue_offset, msg.commit_log_offset, answer)
        return answer.produce()

    def _consume(self, msgs: list[Any]) -> ConsumeStatus:
        for msg in msgs:
            self.received.append(int(msg.body[1:]))
            self._record("consume", None, int(msg.body[1:]), msg.queue_id, msg.queue_offset)
        return ConsumeStatus.CONSUME_SUCCESS

    # ------------------------------------------------------------------------------------------------ replay
    def _replay(self) -> None:
        """Step the spec with everything the implementation did since the last replay, in order."""
        items, self.items = self.items, []
        for n, item in enumerate(items):
            if item.snap.walking:
                if self.spec_segments < item.snap.segments:
                    self._sync_segments(item.snap.segments - 1, item.ts, item.snap)
                    self._walk(item, [i for i in items[n:] if i.snap.walking and i.snap.segments == item.snap.segments])
                continue
            self._sync_segments(item.snap.segments, item.ts, item.snap)
            self._time_to(item.ts)
            self._handle(item)
        assert self.cluster is not None
        now = self.cluster.now_ms()
        snap = self._snapshot()
        self._sync_segments(snap.segments, now, snap)
        self._sync_producers(snap.registered)
        self._time_to(now)

    def _time_to(self, ts: int) -> None:
        state = self.state
        if ts < state.now:
            self.fail(f"TXN-12/TXN-26: the implementation acts at {ts}, the spec's clock is already at {state.now} "
                      f"(a pass the implementation has not run was due at {state.next_pass})")
        if ts > state.now:
            self.observe(tc.TimePasses(ts - state.now), "the implementation's clock")

    def _sync_producers(self, registered: frozenset[int]) -> None:
        live = self.state.live
        for slot in sorted(registered - live):
            self.observe(tc.ProducerRegisters(slot), "heartbeat")
        for slot in sorted(live - registered):
            self.observe(tc.ProducerLeaves(slot), "unregistered or connection closed")

    def _sync_segments(self, segments: int, ts: int, snap: Snapshot) -> None:
        """The walk runs the implementation ran before ``ts`` with nothing to show (no check, no discard)."""
        self._sync_producers(snap.registered)
        while self.spec_segments < segments:
            state = self.state
            due = state.next_pass if state.walk is None else (
                state.now if tc.walk_due(state) else state.walk.wake)
            if due > ts:
                self.fail(f"TXN-12/TXN-26: the implementation ran the check pass's walk by {ts}; the spec's is due "
                          f"at {due}")
            self._time_to(due)
            self._step_walk((), [])

    def _walk(self, first: Item, items: list[Item]) -> None:
        """A run of the walk that checked or discarded: the producers the checks went to are the action's."""
        self._sync_producers(first.snap.registered)
        self._time_to(first.ts)
        checks = [i for i in items if isinstance(i.event, TxnCheck) and i.event.action == "check"]
        targets = tuple(self.client_slot.get(i.snap.check_client or "", None) if i.snap.check_client else None
                        for i in checks)
        self._step_walk(targets, items)

    def _step_walk(self, targets: tuple[int | None, ...], items: list[Item]) -> None:
        before = self.state
        outcome = tc.pending_walk(before)
        want = [(m, "check") for m, _e, _g in outcome.checks]
        self.observe(tc.CheckPass(targets), f"walk {self.spec_segments + 1}")
        self.spec_segments += 1
        after = self.state
        discards = [(after.half[q].msg, "discard") for q in after.discarded[len(before.discarded):]]
        made = []
        for item in items:
            event = item.event
            if isinstance(event, TxnCheck):
                made.append((self.by_key.get(event.msg_id, -1), event.action))
                if event.action == "check":
                    self.checks_made[self.by_key.get(event.msg_id, -1)] += 1
        if sorted(made) != sorted(want + discards):
            self.fail(f"TXN-14/TXN-15/TXN-16/TXN-19/TXN-23: the walk made {made}; the spec's makes {want + discards}")

    def _handle(self, item: Item) -> None:
        event = item.event
        if item.kind == "executor":
            slot, m, answer = item.data
            self.observe(tc.LocalTransactionEnds(m, answer.state, answer is Answer.RAISE), f"executor of t{m}")
            kind = tc.first_end_transaction_type(SendStatus.SEND_OK, answer.state, answer is Answer.RAISE)
            self.last_sent[slot] = tc.EndTxnRequest(self.groups[slot], kind, *self._entry(m), False)
        elif item.kind == "check":
            slot, m, entry, clo, answer = item.data
            if self.half_clo.get(entry) != clo:
                self.fail(f"TXN-19: a check names half offset {entry} with commit-log offset {clo}, which is not its")
            check = tc.CheckRequest(m, entry, slot)
            self.observe(tc.ProducerAnswers(check, answer.state, answer is Answer.RAISE), f"checker of t{m}")
            kind = tc.check_answer(answer.state, answer is Answer.RAISE)
            self.last_sent[slot] = None if kind is None else tc.EndTxnRequest(self.groups[slot], kind, entry, entry,
                                                                              True)
        elif item.kind == "consume":
            m, queue_id, queue_offset = item.data
            in_queue = [n for n, r in enumerate(self.state.real) if r.queue_id == queue_id]
            if queue_offset >= len(in_queue) or self.state.real[in_queue[queue_offset]].msg != m:
                self.fail(f"TXN-22/TXN-3: the consumer got t{m} at {queue_id}:{queue_offset}, which no COMMIT stored")
            self.observe(tc.ConsumerReceives(in_queue[queue_offset]), f"t{m}")
        elif isinstance(event, TxnHalf):
            self._on_half(event)
        elif isinstance(event, FaultInject):
            if event.code == RequestCode.END_TRANSACTION and event.node in self.client_slot:
                self.pending_fault.setdefault(self.client_slot[event.node], set()).add(event.action)
        elif isinstance(event, TxnEnd):
            if event.node == BROKER:
                self._delivered(item.snap.header)
            else:
                slot = self.client_slot[event.node]
                status = None if event.from_check else self.not_ok.pop(slot, None)
                if status is not None:
                    m = self.by_key[event.msg_id]
                    self.observe(tc.LocalTransactionEnds(m, None, status=status), f"t{m} stored {status.name}")
                    self.last_sent[slot] = tc.EndTxnRequest(self.groups[slot], TRANSACTION_ROLLBACK_TYPE,
                                                            *self._entry(m), False)
                self._sent(slot)

    def _entry(self, m: int) -> tuple[int, int]:
        q = tc.entries_of(self.state, m)[0]
        return q, q

    def _on_half(self, event: TxnHalf) -> None:
        """A half message stored: the send under way (its producer's slot and message index)."""
        assert self.cluster is not None and self.sending is not None
        slot, immunity = self.sending
        m = len(self.by_key)
        self.by_key[event.msg_id] = m
        half = self.cluster.broker(BROKER).store.look_message(self.half_clo[event.offset])
        assert half is not None
        transit = half.store_timestamp - half.born_timestamp
        queue_id = int(half.properties[Property.REAL_QUEUE_ID])
        self._time_to(half.store_timestamp)
        self.observe(tc.SendHalf(m, slot, queue_id, transit, immunity), f"t{m} by slot {slot}")

    def _sent(self, slot: int) -> None:
        """A producer sent an END_TRANSACTION (the one its last callback made): a fault may have hit it."""
        request = self.last_sent.pop(slot, None)
        faults = self.pending_fault.pop(slot, set())
        if request is None:
            return
        if "drop" in faults:  # a dropped request is not duplicated (remoting: drop wins)
            self.observe(tc.EndTransactionLost(request), "fault: dropped")
        elif "duplicate" in faults:
            self.observe(tc.EndTransactionDuplicated(request), "fault: duplicated")

    def _delivered(self, header: Any) -> None:
        clo = self.clo_half.get(header.commit_log_offset, -1)
        key = (header.producer_group, header.commit_or_rollback, header.tran_state_table_offset, clo)
        forged = self.forged[key] > 0
        if forged:
            self.forged[key] -= 1
        request = tc.EndTxnRequest(header.producer_group, header.commit_or_rollback, header.tran_state_table_offset,
                                   clo, header.from_transaction_check, forged=forged)
        action = tc.EndTransactionDelivered(request)
        if not self.can(action):
            self.fail(f"TXN-4/TXN-21/TXN-11: the broker got {request}, which no producer sent (or not that often): "
                      f"the local transaction or checker answered otherwise, or a copy too many arrived")
        self.observe(action, "END_TRANSACTION at the broker")

    # ------------------------------------------------------------------------------------------------ rules
    @precondition(lambda self: self.cluster is not None and len(self.txns) < MAX_MESSAGES and self.running)
    @rule(data=st.data(), count=st.integers(1, 3), executor=st.sampled_from(Answer),
          undecided=st.sampled_from([Answer.UNKNOW, Answer.NONE, Answer.RAISE]),
          immunity=st.sampled_from([None, None, None, 1, 4, 30]))
    def send(self, data: st.DataObject, count: int, executor: Answer, undecided: Answer, immunity: int | None) -> None:
        """Transactional sends by a running producer (TXN-1, TXN-2, TXN-4)."""
        slot = data.draw(st.sampled_from(sorted(self.running)), label="slot")
        for _ in range(min(count, MAX_MESSAGES - len(self.txns))):
            self._send(slot, executor, undecided, immunity)

    @precondition(lambda self: self.cluster is not None and len(self.txns) < MAX_MESSAGES and self.running)
    @rule(data=st.data(), how=st.sampled_from([*NOT_OK, "refused", "empty body"]))
    def send_odd(self, data: st.DataObject, how: SendStatus | str) -> None:
        """The broker stores the half message but answers a non-OK status: the producer rolls it back without running
        the local transaction (TXN-4); or no half message is stored: the broker refuses the send, or the message is
        invalid (then nothing happens)."""
        assert self.cluster is not None
        slot = data.draw(st.sampled_from(sorted(self.running)), label="slot")
        if isinstance(how, SendStatus):
            self.statuses.append(how)
            self.not_ok[slot] = how
            self._send(slot, Answer.COMMIT, Answer.UNKNOW, None, how)
            return
        producer = self.producers[slot]
        if how == "refused":
            self.cluster.faults.fail(BROKER, "SEND_MESSAGE", code="SYSTEM_BUSY", times=1, client=producer.client_id)
        with pytest.raises(MQClientError):
            producer.send_in_transaction(Message(TOPIC, b"" if how == "empty body" else b"refused"))
        self._replay()

    def _send(self, slot: int, executor: Answer, undecided: Answer, immunity: int | None,
              status: SendStatus = SendStatus.SEND_OK) -> None:
        decision = executor.state if executor in (Answer.COMMIT, Answer.ROLLBACK) else None
        if status is not SendStatus.SEND_OK:
            decision = None
        txn = Txn(len(self.txns), slot, executor, undecided, decision)
        self.txns.append(txn)
        msg = Message(TOPIC, f"t{txn.index}".encode())
        if immunity is not None:
            msg.put_property(Property.CHECK_IMMUNITY_TIME_IN_SECONDS, str(immunity))
        self.sending = (slot, immunity)
        result = self.producers[slot].send_in_transaction(msg)
        self._replay()
        self.sending = None
        if result.status is not status or self.by_key.get(result.msg_id) != txn.index:
            self.fail(f"TXN-2/TXN-4: the send of t{txn.index} got {result!r}")

    @precondition(lambda self: self.cluster is not None and any(t.decision is None for t in self.txns))
    @rule(data=st.data(), commit=st.booleans())
    def decide(self, data: st.DataObject, commit: bool) -> None:
        """An undecided local transaction commits or rolls back, for good (TXN-21)."""
        txn = data.draw(st.sampled_from([t for t in self.txns if t.decision is None]), label="message")
        state = TransactionState.COMMIT_MESSAGE if commit else TransactionState.ROLLBACK_MESSAGE
        self.drive(tc.LocalDecides(txn.index, state), f"t{txn.index}")
        txn.decision = state

    @precondition(lambda self: self.cluster is not None and self.running)
    @rule(data=st.data(), kind=st.sampled_from(["drop", "duplicate", "delay"]), ms=st.sampled_from([1, 700, 5_000]))
    def end_transaction_fault(self, data: st.DataObject, kind: str, ms: int) -> None:
        """A producer's next END_TRANSACTION is lost, delivered twice, or delayed (TXN-11)."""
        assert self.cluster is not None
        slot = data.draw(st.sampled_from(sorted(self.running)), label="slot")
        client = self.producers[slot].client_id
        if kind == "drop":
            self.cluster.faults.drop(BROKER, "END_TRANSACTION", times=1, client=client)
        elif kind == "duplicate":
            self.cluster.faults.duplicate(BROKER, "END_TRANSACTION", times=1, client=client)
        else:
            self.cluster.faults.delay(BROKER, "END_TRANSACTION", ms=ms, times=1, client=client)

    @precondition(lambda self: self.cluster is not None and self.state.half)
    @rule(data=st.data(), how=st.sampled_from(["group", "queue offset", "nowhere", "not a half message", "bad kind"]),
          kind=st.sampled_from([TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE]))
    def forge(self, data: st.DataObject, how: str, kind: int) -> None:
        """A producer sends an END_TRANSACTION the broker must refuse: another group's, one naming the wrong queue
        offset, one naming no message or a message that is not a half message, one whose commitOrRollback is none of
        0, 8, 12 (TXN-6, TXN-7)."""
        assert self.cluster is not None
        entry = data.draw(st.integers(0, len(self.state.half) - 1), label="entry")
        half = self.state.half[entry]
        clo = self.half_clo[entry]
        if how == "group":
            action = tc.ForgedEndTransaction(entry, FORGER_GROUP, kind)
        elif how == "queue offset":
            action = tc.ForgedEndTransaction(entry, half.group, kind, queue_offset=entry + 1)
        elif how == "bad kind":
            action = tc.ForgedEndTransaction(entry, half.group, TRANSACTION_PREPARED_TYPE)
        else:
            action = tc.ForgedEndTransaction(-1, half.group, kind, queue_offset=entry)
            clo = self.other_clo[-1] if how == "not a half message" and self.other_clo else NOWHERE
        self.drive(action, how)
        request = action.request
        if how != "bad kind":  # refused while its header is read: nothing shows it arrived (the spec keeps it)
            self.forged[(request.group, request.commit_or_rollback, request.tran_state_table_offset,
                         request.commit_log_offset)] += 1
        if self.forger is None:  # a client of its own, which no fault of the rules hits
            self.forger = self.cluster.producer(FORGER_GROUP)
            self._replay()
        command = RemotingCommand.request(RequestCode.END_TRANSACTION, {
            "producerGroup": request.group, "tranStateTableOffset": request.tran_state_table_offset,
            "commitLogOffset": clo, "commitOrRollback": request.commit_or_rollback, "fromTransactionCheck": False,
            "msgId": f"forged-{entry}",
        }, oneway=True)
        self.forger.instance.invoke_oneway(self.cluster.broker(BROKER).config.addr, command)
        self._replay()

    @precondition(lambda self: self.cluster is not None)
    @rule(ms=st.sampled_from([1, 2, 500, 1_000, 3_000, 7_000, 30_000, 61_000, 130_000]))
    def advance(self, ms: int) -> None:
        """Time passes: check passes (TXN-12), late END_TRANSACTIONs, heartbeats."""
        self._advance_to(self.state.now + ms)

    @precondition(lambda self: self.cluster is not None)
    @rule(data=st.data(), then_send=st.booleans(), passes=st.integers(1, 3))
    def advance_to_a_pass(self, data: st.DataObject, then_send: bool, passes: int) -> None:
        """Time passes up to the next pass (or the one after, ...), and a message may be sent right then: it ties with
        the timeout at a later pass when the timeout is a multiple of the interval (TXN-26)."""
        for _ in range(passes):
            state = self.state
            self._advance_to(state.next_pass if state.walk is None else state.walk.wake)
        if then_send and self.running and len(self.txns) < MAX_MESSAGES:
            slot = data.draw(st.sampled_from(sorted(self.running)), label="slot")
            self._send(slot, Answer.UNKNOW, Answer.UNKNOW, data.draw(st.sampled_from([None, 1]), label="immunity"))

    def _advance_to(self, target: int) -> None:
        """Advance the cluster, stopping at each moment the spec says the walk runs (so each run is seen at its
        time)."""
        assert self.cluster is not None
        while self.cluster.now_ms() < target:
            state = self.state
            due = state.next_pass if state.walk is None else state.walk.wake
            stop = min(target, max(due, self.cluster.now_ms() + 1))
            self.cluster.advance(stop - self.cluster.now_ms())
            self._replay()

    @precondition(lambda self: self.cluster is not None)
    @rule(data=st.data(), how=st.sampled_from(["start", "start", "shutdown", "crash"]))
    def producers_change(self, data: st.DataObject, how: str) -> None:
        """Another producer of a group starts (it registers with its heartbeat), or one shuts down (unregistering) or
        crashes (its connection closes): a group may have several producers, or none, whose checks go nowhere
        (TXN-19)."""
        assert self.cluster is not None
        if how == "start":
            free = [s for s in range(SLOTS) if s not in self.producers]
            if free:
                self._start(data.draw(st.sampled_from(free), label="slot"))
            return
        if not self.running:
            return
        slot = data.draw(st.sampled_from(sorted(self.running)), label="slot")
        self.running.discard(slot)
        if how == "crash":
            self.cluster.crash_client(self.producers[slot])
        else:
            self.producers[slot].shutdown()
        self._replay()

    @precondition(lambda self: self.cluster is not None)
    @rule()
    def settle(self) -> None:
        """Run until idle: every message is then resolved or discarded (TXN-23, TXN-24), every check arrived or was
        lost, and the consumer has every committed message (TXN-22)."""
        assert self.cluster is not None
        self.cluster.faults.clear()
        self.cluster.run_until_idle()
        self._replay()
        state = self.state
        for check in state.checks:
            if check.producer in state.live:
                self.fail(f"TXN-19: the check {check} to a registered producer never arrived")
            self.observe(tc.CheckLost(check), "its producer left")
        state = self.state
        discarded = {state.half[q].msg for q in state.discarded}
        for m in range(len(self.txns)):
            if not (tc.resolved(state, m) or m in discarded):
                self.fail(f"TXN-24: t{m} is neither resolved nor discarded once idle")
        if len(state.consumed) != len(state.real):
            self.fail(f"TXN-22: once idle the consumer has {len(state.consumed)} of {len(state.real)} committed")

    # ------------------------------------------------------------------------------------------------ projections
    def project_spec(self) -> dict[str, Any]:
        state = self.state
        real: dict[int, list[Any]] = {}
        for r in state.real:
            real.setdefault(r.queue_id, []).append(
                (r.msg, r.sys_flag & SYSFLAG_TRANSACTION_MASK, dict(r.stored_properties)))
        return {
            HALF: [(e.msg, e.born, e.stored, e.check_times, e.prepared_offset, e.group, e.real_queue_id, e.immunity,
                    e.sys_flag & SYSFLAG_TRANSACTION_MASK) for e in state.half],
            OPS: [(op.half_offset, op.born) for op in state.ops],
            REAL: real,
            DISCARDED: [(state.half[q].msg, state.half[q].check_times) for q in state.discarded],
            CONSUMED: sorted(state.real[i].msg for i in state.consumed),
            CHECKS: {m: n for m, n in enumerate(state.checks_sent) if n},
            OFFSETS: (state.half_offset, state.op_offset),
            SCHEDULE: state.next_pass if state.walk is None else None,
        }

    def _stored(self, topic: str, queue_id: int = 0) -> list[Any]:
        assert self.cluster is not None
        store = self.cluster.broker(BROKER).store
        lo, hi = store.min_offset(topic, queue_id), store.max_offset(topic, queue_id)
        found = []
        for _qo, clo, _size, _tags in store.queue_entries(topic, queue_id, lo, hi - lo):
            msg = store.look_message(clo)
            assert msg is not None
            found.append(msg)
        return found

    def _msg(self, msg: Any) -> int:
        return self.by_key.get(msg.properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, ""), -1)

    @staticmethod
    def _int(text: str | None) -> int | None:
        return None if text is None else int(text)

    def project_system(self) -> dict[str, Any]:
        assert self.cluster is not None
        broker = self.cluster.broker(BROKER)
        half = [(self._msg(h), h.born_timestamp, h.store_timestamp,
                 self._int(h.properties.get(Property.TRANSACTION_CHECK_TIMES)),
                 self._int(h.properties.get(Property.TRANSACTION_PREPARED_QUEUE_OFFSET)),
                 h.properties.get(Property.PRODUCER_GROUP), h.properties.get(Property.REAL_QUEUE_ID),
                 self._int(h.properties.get(Property.CHECK_IMMUNITY_TIME_IN_SECONDS)),
                 h.sys_flag & SYSFLAG_TRANSACTION_MASK) for h in self._stored(TRANS_HALF_TOPIC)]
        real = {}
        for queue_id in range(2):
            stored = [(self._msg(r), r.sys_flag & SYSFLAG_TRANSACTION_MASK,
                       {k: v for k, v in r.properties.items() if k in MODELLED}) for r in self._stored(TOPIC, queue_id)]
            if stored:
                real[queue_id] = stored
        offsets = broker.consumer_offsets

        def committed(topic: str) -> int:
            offset = offsets.query(TRANS_SYS_GROUP, topic, 0)
            return broker.store.min_offset(topic, 0) if offset == -1 else offset

        return {
            HALF: half,
            OPS: [(int(op.body), op.born_timestamp) for op in self._stored(TRANS_OP_HALF_TOPIC)],
            REAL: real,
            DISCARDED: [(self._msg(d), self._int(d.properties.get(Property.TRANSACTION_CHECK_TIMES)))
                        for d in self._stored(TRANS_CHECK_MAX_TIME_TOPIC)],
            CONSUMED: sorted(self.received),
            CHECKS: dict(self.checks_made),
            OFFSETS: (committed(TRANS_HALF_TOPIC), committed(TRANS_OP_HALF_TOPIC)),
            SCHEDULE: self.service.next_pass_ms,
        }


test_transaction_check_machine = machine_test(TransactionCheckMachine, 40, 30)


# ---------------------------------------------------------------------------------------------------- mutants
MUTANT_EXAMPLES, MUTANT_STEPS = 60, 25
# Each breaks one rule of the implementation; the machine must find a failing program (and name the clause).
MUTANTS = {
    "rollback_stores_the_message": (
        broker_transaction,
        "            self._delete_prepare_message(half)\n            return request.response(ResponseCode.SUCCESS), "
        "\"ROLLED_BACK\"",
        "            self._send_final_message(self._end_message_transaction(half, header))\n"
        "            self._delete_prepare_message(half)\n            return request.response(ResponseCode.SUCCESS), "
        "\"ROLLED_BACK\"", ("TXN-8", "TXN-22"),
    ),
    "check_max_off_by_one": (
        broker_check, "            if times >= check_max:\n                return True",
        "            if times > check_max:\n                return True", ("TXN-15", "TXN-23"),
    ),
    "check_before_the_timeout": (
        broker_check, "                immunity = timeout\n", "                immunity = timeout // 2\n",
        ("TXN-12", "TXN-14", "TXN-19"),
    ),
    "unknow_sent_as_commit": (
        client_transaction,
        "\"commitOrRollback\": _COMMIT_OR_ROLLBACK[state],\n            \"fromTransactionCheck\": False,",
        "\"commitOrRollback\": _COMMIT_OR_ROLLBACK[state] or TRANSACTION_COMMIT_TYPE,\n"
        "            \"fromTransactionCheck\": False,", ("TXN-4",),
    ),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name: str) -> None:
    module, old, new, clauses = MUTANTS[name]
    variant_caught(TransactionCheckMachine, module, old, new, clauses, examples=MUTANT_EXAMPLES, steps=MUTANT_STEPS)


# ------------------------------------------------------------------------------------------ configuration variants
# For each dimension the machine draws, a broken copy that only a non-default value of it reveals: the machine catches
# it, and the machine with that dimension pinned to its default does not (slow: two searches each).
VARIANTS: dict[str, tuple[Any, str, str, tuple[str, ...]]] = {
    "broker.transactionTimeOut": (
        broker_check, "yield from self._check_queue(queue_id, config.transaction_timeout_ms,",
        "yield from self._check_queue(queue_id, 6_000,", ("TXN-12", "TXN-19", "TXN-26")),
    "broker.transactionCheckInterval": (
        broker_check, "self._timer = self.broker.runtime.call_later(self.broker.config.transaction_check_interval_ms,",
        "self._timer = self.broker.runtime.call_later(60_000,", ("TXN-12", "TXN-26")),
    "broker.transactionCheckMax": (
        broker_check, "config.transaction_timeout_ms, config.transaction_check_max)",
        "config.transaction_timeout_ms, 15)", ("TXN-15", "TXN-23")),
    "producer.group": (
        client_transaction, "msg.put_property(Property.PRODUCER_GROUP, self.group)",
        "msg.put_property(Property.PRODUCER_GROUP, self.group[:3])", ("TXN-2", "TXN-7")),
}


def test_every_dimension_has_a_variant() -> None:
    assert set(VARIANTS) == set(TransactionCheckMachine.DIMENSIONS)


@pytest.mark.slow
@pytest.mark.parametrize("dimension", sorted(VARIANTS))
def test_variant_needs_a_non_default_configuration(dimension: str) -> None:
    module, old, new, clauses = VARIANTS[dimension]
    variant_needs(TransactionCheckMachine, dimension, module, old, new, clauses, examples=MUTANT_EXAMPLES,
                  steps=MUTANT_STEPS)
