"""Stateful: the transaction_check spec (TXN-*) checks the reference implementation's transactions and check-back.

A simulated cluster (one broker with a small check interval, transaction timeout and check maximum drawn per
program, topic ``T`` with one queue), a transactional producer of group ``PG`` and a push consumer of ``T``. Rules
send half messages whose local transaction answers COMMIT, ROLLBACK, UNKNOW, nothing (``None``) or raises; an
undecided message's checker keeps answering UNKNOW, ``None`` or raising until a rule decides it (commit or
rollback, final as in the spec); faults drop, duplicate or delay END_TRANSACTION and drop CHECK_TRANSACTION_STATE;
time passes (check passes, the producer's heartbeat); the broker restarts cleanly.

The spec's machine works in whole ticks with atomic passes, so the implementation is checked transition by
transition against the ORACLES and the INVARIANTS' statements instead:

- every END_TRANSACTION the broker processes (observed inside ``TransactionService._end``): its outcome and what it
  stored equal ``end_transaction`` given the half message at its commit-log offset (TXN-5..TXN-9, TXN-11); its
  commitOrRollback is ``first_end_transaction_type`` of the local transaction (TXN-4) or ``check_answer`` of the
  checker call it answers (TXN-21); a real message only for a message the application committed (TXN-22);
- every TxnCheck event (check or discard): ``check_decision`` on the walked half entry says so (TXN-14..TXN-19,
  TXN-23: no check before the timeout, none of an entry with an op, none past the maximum); the re-appended copy
  has ``next_check_times`` and the same born time; the checker is asked about that copy (TXN-19, TXN-21);
- a message none of whose END_TRANSACTIONs was duplicated, named a superseded entry or landed during a pass is
  resolved and committed at most once (TXN-25, TXN-11); the consumer only ever gets committed messages (TXN-22,
  TXN-3); the committed half offset never passes an unresolved, undiscarded message (TXN-24) and the op offset
  never passes a pending op (TXN-20); once idle every message is resolved or discarded.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from mutation import refimpl_mutant
from stateful_support import hypothesis_finds_failure, stateful_settings

from rocketspec.refimpl import Cluster, ConsumeStatus, Message, TransactionState
from rocketspec.refimpl.broker import transaction as broker_transaction
from rocketspec.refimpl.client import transaction as client_transaction
from rocketspec.refimpl.events import ConsumeDeliver, Event, MessageStored, TxnCheck
from rocketspec.spec import transaction_check as tc
from rocketspec.spec.protocol import (
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_SYS_GROUP,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    Property,
    ResponseCode,
    SendStatus,
)

TOPIC = "T"
BROKER = "broker-a"
PRODUCER_GROUP = "PG"
CONSUMER_GROUP = "CG"
MAX_MESSAGES = 4
#: The network round-trips every command through the frame codec, as a socket would.
WIRE_CODEC = "json"
_KIND_NAMES = {TRANSACTION_NOT_TYPE: "UNKNOW", TRANSACTION_COMMIT_TYPE: "COMMIT", TRANSACTION_ROLLBACK_TYPE: "ROLLBACK"}


def _response_code(response: Any, result: str) -> int | None:
    """The code the broker answered with; a oneway request's from the outcome text (``COMMITTED``, ``IGNORED``,
    ``SYSTEM_ERROR: remark``, ...)."""
    if response is not None:
        return int(response.code)
    if result in ("COMMITTED", "ROLLED_BACK"):
        return ResponseCode.SUCCESS
    if result == "IGNORED":
        return None
    return ResponseCode[result.split(":")[0]]


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


@attrs.define(repr=False)
class Txn:
    """One transactional message: the application's answers and what the broker did with it."""

    index: int
    executor: Answer
    undecided: Answer  # the checker's answer until ``decision`` is set
    decision: TransactionState | None = None  # COMMIT or ROLLBACK once decided (final)
    msg_id: str = ""
    entries: list[int] = attrs.Factory(list)  # half queue offsets of the message and its copies
    checked: list[int] = attrs.Factory(list)  # copies a TxnCheck "check" named
    answers: dict[int, int | None] = attrs.Factory(dict)  # copy -> commitOrRollback the checker answered
    checks: int = 0
    discarded: bool = False
    accepted: int = 0
    committed: int = 0
    racy: bool = False

    def __repr__(self) -> str:
        decided = self.decision.name if self.decision else f"undecided({self.undecided.name})"
        return (f"<t{self.index} executor {self.executor.name}, {decided}, entries {self.entries}, checks "
                f"{self.checks}, accepted {self.accepted}, committed {self.committed}"
                f"{', discarded' if self.discarded else ''}{', racy' if self.racy else ''}>")


class TransactionCheckMachine(RuleBasedStateMachine):
    """Transactional sends, END_TRANSACTION faults, check passes and restarts, checked against TXN-* oracles."""

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.txns: list[Txn] = []
        self.by_id: dict[str, Txn] = {}
        self.violations: list[str] = []
        self.ops: list[tuple[int, int, int]] = []  # (op queue offset, half offset named, event seq)
        self.seen_requests: set[tuple[Any, ...]] = set()
        self.pass_start = (0, 0)  # (ms, event seq) of the check pass under way or last begun
        self.in_end = False
        self.timeout = self.check_max = self.interval = 0

    # ------------------------------------------------------------------------------------------------ set-up
    @initialize(seed=st.integers(0, 3), interval=st.sampled_from([1_000, 2_000]),
                timeout=st.sampled_from([700, 1_500, 300, 2_500]), check_max=st.sampled_from([2, 1, 3, 0]))
    def start(self, seed: int, interval: int, timeout: int, check_max: int) -> None:
        """One broker checking every ``interval`` ms with transactionTimeOut ``timeout`` and ``check_max``."""
        self.interval, self.timeout, self.check_max = interval, timeout, check_max
        self.cluster = Cluster(brokers=1, clock="simulated", wire_codec=WIRE_CODEC, seed=seed,
                               transaction_check_interval_ms=interval, transaction_timeout_ms=timeout,
                               transaction_check_max=check_max)
        self.cluster.events.subscribe(self._on_event)
        self.cluster.create_topic(TOPIC, queues=1)
        self._hook_broker()
        self.producer = self.cluster.transaction_producer(PRODUCER_GROUP, self._execute, self._check)
        self.cluster.push_consumer(CONSUMER_GROUP, TOPIC, lambda msgs: ConsumeStatus.CONSUME_SUCCESS,
                                   consume_from_where="CONSUME_FROM_FIRST_OFFSET")

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    def _violation(self, text: str) -> None:
        self.violations.append(text)

    def _txn_of(self, msg: Any) -> Txn:
        return self.txns[int(msg.body[1:])]

    def _execute(self, msg: Any, arg: Any) -> TransactionState | None:
        return self._txn_of(msg).executor.produce()

    def _check(self, msg: Any) -> TransactionState | None:
        """The checker: the decision once made, else the message's undecided answer; records what it answers."""
        txn = self._txn_of(msg)
        answer = Answer.COMMIT if txn.decision is TransactionState.COMMIT_MESSAGE else (
            Answer.ROLLBACK if txn.decision is TransactionState.ROLLBACK_MESSAGE else txn.undecided)
        if msg.queue_offset not in txn.checked:
            self._violation(f"TXN-19/TXN-21: the checker was asked about entry {msg.queue_offset}, which no check "
                            f"re-appended: {txn!r}")
        txn.answers[msg.queue_offset] = tc.check_answer(answer.state, raised=answer is Answer.RAISE)
        return answer.produce()

    # ------------------------------------------------------------------------------------------------ hooks
    def _hook_broker(self) -> None:
        """Observe (not change) the broker's END_TRANSACTION processing and the start of each check pass."""
        assert self.cluster is not None
        service = self.cluster.broker(BROKER).transactions
        end, begin = service._end, service._begin_pass

        def observed_end(request: Any, header: Any) -> Any:
            return self._observe_end(service, end, request, header)

        def observed_begin(on_done: Any) -> None:
            assert self.cluster is not None
            self.pass_start = (self.cluster.now_ms(), len(self.cluster.events.events))
            begin(on_done)

        service._end = observed_end  # type: ignore[method-assign]
        service._begin_pass = observed_begin  # type: ignore[method-assign]

    def _observe_end(self, service: Any, end: Any, request: Any, header: Any) -> Any:
        """One END_TRANSACTION at the broker, against ``end_transaction`` and the application's answers."""
        assert self.cluster is not None
        events = self.cluster.events.events
        half = service.broker.store.look_message(header.commit_log_offset)
        racing = service._pass is not None
        first = len(events)
        self.in_end = True
        try:
            response, result = end(request, header)
        finally:
            self.in_end = False
        stored = [e for e in events[first:] if isinstance(e, MessageStored)]
        real = sum(1 for e in stored if e.topic == TOPIC)
        ops = sum(1 for e in stored if e.topic == TRANS_OP_HALF_TOPIC)
        kind = header.commit_or_rollback
        expected = tc.end_transaction(
            kind, header.producer_group, header.tran_state_table_offset, header.commit_log_offset,
            found=half is not None,
            stored_group=(half.properties.get(Property.PRODUCER_GROUP) or "") if half is not None else "",
            stored_queue_offset=half.queue_offset if half is not None else -1,
            stored_commit_log_offset=half.commit_log_offset if half is not None else -1,
            from_transaction_check=header.from_transaction_check,
        )
        code = _response_code(response, result)
        what = f"{_KIND_NAMES.get(kind, kind)} for entry {header.tran_state_table_offset}"
        if (code, real == 1, ops == 1) != (expected.response, expected.stores_real, expected.writes_op) or real > 1:
            self._violation(
                f"TXN-5..TXN-9: {what} -> {result!r}, {real} real and {ops} op message(s); end_transaction says "
                f"{expected}")
        txn = self.by_id.get(header.msg_id)
        if txn is None:
            self._violation(f"TXN-7: END_TRANSACTION for an unknown message {header.msg_id}")
            return response, result
        self._check_request_kind(txn, header, what)
        key = (header.producer_group, header.tran_state_table_offset, header.commit_log_offset, kind,
               header.from_transaction_check)
        if key in self.seen_requests:
            txn.racy = True  # a duplicated END_TRANSACTION (TXN-11)
        self.seen_requests.add(key)
        if expected.response == ResponseCode.SUCCESS and code == ResponseCode.SUCCESS:
            txn.accepted += 1
            if any(q > header.tran_state_table_offset for q in txn.entries) or racing:
                txn.racy = True  # named a superseded entry, or landed while a pass was walking (TXN-25)
        if real:
            txn.committed += real
            if txn.decision is not TransactionState.COMMIT_MESSAGE:
                self._violation(f"TXN-22: {what} stored {txn!r} in {TOPIC}, which the application never committed")
        return response, result

    def _check_request_kind(self, txn: Txn, header: Any, what: str) -> None:
        """The commitOrRollback the producer sent: the local transaction's (TXN-4) or the checker's (TXN-21)."""
        kind = header.commit_or_rollback
        if not header.from_transaction_check:
            executor = txn.executor
            want = tc.first_end_transaction_type(SendStatus.SEND_OK, executor.state, raised=executor is Answer.RAISE)
            if kind != want:
                self._violation(f"TXN-4: the local transaction answered {executor.name}, the producer sent {what}")
            return
        answered = txn.answers.get(header.tran_state_table_offset, "never asked")
        if answered != kind:
            self._violation(f"TXN-21: the checker's answer about entry {header.tran_state_table_offset} maps to "
                            f"{answered}, the producer sent {what}: {txn!r}")

    def _on_event(self, event: Event) -> None:
        """Synchronous bookkeeping of the implementation's events (the decisions are checked as they happen)."""
        if isinstance(event, MessageStored):
            if event.topic == TRANS_HALF_TOPIC:
                txn = self.by_id.get(event.msg_id)
                if txn is None and self.txns and not self.txns[-1].msg_id:
                    txn = self.txns[-1]  # the half message of the send under way
                    txn.msg_id = event.msg_id
                    self.by_id[event.msg_id] = txn
                if txn is not None:
                    txn.entries.append(event.offset)
            elif event.topic == TRANS_OP_HALF_TOPIC:
                op = self._broker_of(event).store.look_message(event.commit_log_offset)
                self.ops.append((event.offset, int(op.body), event.seq))
            elif event.topic == TOPIC and not self.in_end:
                self._violation(f"TXN-22: {event.msg_id} stored in {TOPIC} outside an accepted COMMIT")
        elif isinstance(event, TxnCheck):
            self._on_check(event)
        elif isinstance(event, ConsumeDeliver) and event.group == CONSUMER_GROUP:
            txn = self.by_id.get(event.msg_id)
            if txn is None or txn.committed == 0 or txn.decision is not TransactionState.COMMIT_MESSAGE:
                self._violation(f"TXN-22/TXN-3: the consumer got {event.msg_id}, not committed: {txn!r}")

    def _broker_of(self, event: Event) -> Any:
        assert self.cluster is not None
        return self.cluster.brokers[event.node]

    def _on_check(self, event: TxnCheck) -> None:
        """A check or discard of the walked half entry: ``check_decision`` must agree (TXN-14..TXN-19, TXN-23)."""
        txn = self.by_id.get(event.msg_id)
        if txn is None:
            self._violation(f"TXN-19: a check of an unknown message: {event!r}")
            return
        store = self._broker_of(event).store
        checking = event.action == "check"
        if checking:
            walked_offset, copy_offset = txn.entries[-2], txn.entries[-1]
        else:
            walked_offset, copy_offset = txn.entries[-1], None
        walked = self._half(store, walked_offset)
        times_text = walked.properties.get(Property.TRANSACTION_CHECK_TIMES)
        times = int(times_text) if times_text is not None else None
        pass_ms, pass_seq = self.pass_start
        in_remove_map = any(q == walked_offset and seq < pass_seq for _op, q, seq in self.ops)
        decision = tc.check_decision(
            now=event.ts_ms, pass_start=pass_ms, born=walked.born_timestamp, stored=walked.store_timestamp,
            in_remove_map=in_remove_map, check_times=times, ops_empty=True, check_max=self.check_max,
            transaction_timeout=self.timeout,
        )
        want = tc.CheckDecision.CHECK if checking else tc.CheckDecision.DISCARD
        age = event.ts_ms - walked.born_timestamp
        if decision is not want:
            self._violation(
                f"TXN-14..TXN-19/TXN-23: {event.action} of entry {walked_offset} (age {age} ms, timeout "
                f"{self.timeout}, check times {times}, max {self.check_max}, op before the pass {in_remove_map}); "
                f"check_decision says {decision.name}: {txn!r}")
        if txn.discarded:
            self._violation(f"TXN-23: {event.action} after the message was discarded: {txn!r}")
        if not checking:
            txn.discarded = True
            if event.check_times != (times or 0):
                self._violation(f"TXN-15: discard event with check times {event.check_times}, entry has {times}")
            return
        assert copy_offset is not None
        txn.checks += 1
        txn.checked.append(copy_offset)
        copy = self._half(store, copy_offset)
        next_times = tc.next_check_times(times, self.check_max)
        copy_times = copy.properties.get(Property.TRANSACTION_CHECK_TIMES)
        if (event.check_times, copy_times) != (next_times, str(next_times)):
            self._violation(f"TXN-15: check of entry {walked_offset} with times {times}: event {event.check_times},"
                            f" copy {copy_times}, next_check_times says {next_times}")
        if copy.born_timestamp != walked.born_timestamp or copy.store_timestamp != event.ts_ms:
            self._violation(f"TXN-19: the re-appended copy {copy_offset} changed its born time or is not new")
        if txn.checks > max(self.check_max, 1):
            self._violation(f"TXN-23: checked {txn.checks} times with transactionCheckMax {self.check_max}: {txn!r}")

    @staticmethod
    def _half(store: Any, queue_offset: int) -> Any:
        [(_qo, commit_log_offset, _size, _tags)] = store.queue_entries(TRANS_HALF_TOPIC, 0, queue_offset, 1)
        return store.look_message(commit_log_offset)

    # ------------------------------------------------------------------------------------------------ rules
    @precondition(lambda self: len(self.txns) < MAX_MESSAGES)
    @rule(executor=st.sampled_from(Answer), undecided=st.sampled_from([Answer.UNKNOW, Answer.NONE, Answer.RAISE]))
    def send(self, executor: Answer, undecided: Answer) -> None:
        """A transactional send whose local transaction answers ``executor`` (TXN-1, TXN-2, TXN-4)."""
        txn = Txn(len(self.txns), executor, undecided, executor.state if executor in (Answer.COMMIT,
                                                                                       Answer.ROLLBACK) else None)
        self.txns.append(txn)
        result = self.producer.send_in_transaction(Message(TOPIC, f"t{txn.index}".encode()))
        assert result.status is SendStatus.SEND_OK
        assert txn.msg_id == result.msg_id, f"TXN-2: half message {txn.msg_id} for the send of {result.msg_id}"

    @precondition(lambda self: any(t.decision is None for t in self.txns))
    @rule(data=st.data(), commit=st.booleans())
    def decide(self, data: st.DataObject, commit: bool) -> None:
        """An undecided local transaction commits or rolls back, for good (the spec's LocalDecides)."""
        undecided = [t for t in self.txns if t.decision is None]
        txn = data.draw(st.sampled_from(undecided), label="message")
        txn.decision = TransactionState.COMMIT_MESSAGE if commit else TransactionState.ROLLBACK_MESSAGE

    @rule(kind=st.sampled_from(["drop", "duplicate", "delay"]))
    def end_transaction_fault(self, kind: str) -> None:
        """The next END_TRANSACTION is lost, delivered twice, or delayed by 2.5 s (TXN-11)."""
        assert self.cluster is not None
        if kind == "drop":
            self.cluster.faults.drop(BROKER, "END_TRANSACTION", times=1)
        elif kind == "duplicate":
            self.cluster.faults.duplicate(BROKER, "END_TRANSACTION", times=1)
        else:
            self.cluster.faults.delay(BROKER, "END_TRANSACTION", ms=2_500, times=1)

    @rule()
    def check_lost(self) -> None:
        """The next CHECK_TRANSACTION_STATE to the producer is lost (its count is spent all the same, TXN-19)."""
        assert self.cluster is not None
        self.cluster.faults.drop(self.producer.instance.client_id, "CHECK_TRANSACTION_STATE", times=1)

    @rule(ms=st.sampled_from([200, 1_000, 3_000, 10_000, 31_000]))
    def advance(self, ms: int) -> None:
        """Time passes: check passes (TXN-12), late END_TRANSACTIONs, the producer's heartbeat."""
        assert self.cluster is not None
        self.cluster.advance(ms)

    @rule()
    def restart_broker(self) -> None:
        """The broker shuts down cleanly and starts again from its store; the check resumes from its offsets."""
        assert self.cluster is not None
        self.cluster.restart_broker(BROKER)
        self._hook_broker()

    @rule()
    def settle(self) -> None:
        """Run until idle: every message is then resolved or discarded (TXN-23, TXN-24), and every committed one
        was delivered to the consumer (TXN-8)."""
        assert self.cluster is not None
        self.cluster.faults.clear()
        self.cluster.run_until_idle()
        for txn in self.txns:
            assert txn.accepted or txn.discarded, f"TXN-24: {txn!r} neither resolved nor discarded once idle"

    # ------------------------------------------------------------------------------------------------ invariants
    @invariant()
    def no_violation(self) -> None:
        """Every decision observed so far matched the oracles (see the module docstring)."""
        assert not self.violations, self.violations[0]

    @invariant()
    def race_free_resolved_at_most_once(self) -> None:
        """TXN-25: a message without a duplicated, superseded or mid-pass END_TRANSACTION is resolved and committed
        at most once (TXN-11 explains why the others may be)."""
        for txn in self.txns:
            if not txn.racy:
                assert txn.accepted <= 1 and txn.committed <= 1, f"TXN-25: resolved more than once: {txn!r}"

    @invariant()
    def offsets_safe(self) -> None:
        """TXN-24: the half offset never passes the last entry of a message nobody resolved or discarded; TXN-20:
        the op offset never passes an op naming an offset the half offset has not passed."""
        if self.cluster is None or BROKER not in self.cluster.brokers:
            return
        offsets = self.cluster.broker(BROKER).consumer_offsets
        half_offset = max(offsets.query(TRANS_SYS_GROUP, TRANS_HALF_TOPIC, 0), 0)
        op_offset = max(offsets.query(TRANS_SYS_GROUP, TRANS_OP_HALF_TOPIC, 0), 0)
        resolved = {q for _op, q, _seq in self.ops}
        for txn in self.txns:
            if txn.entries and not txn.discarded and not resolved & set(txn.entries):
                assert txn.entries[-1] >= half_offset, (
                    f"TXN-24: half offset {half_offset} passed the last entry of unresolved {txn!r}")
        for op, q, _seq in self.ops:
            if op < op_offset:
                assert q < half_offset, f"TXN-20: op offset {op_offset} passed op {op} for entry {q} >= {half_offset}"


TransactionCheckMachine.TestCase.settings = stateful_settings(60, 40)
test_transaction_check_machine = TransactionCheckMachine.TestCase


# ---------------------------------------------------------------------------------------------------- mutants
# Each breaks one rule of the implementation; the machine must find a program that shows it.


def test_mutant_rollback_stores_the_message_is_caught() -> None:
    """TXN-9/TXN-22: ROLLBACK also stores the real message."""
    with refimpl_mutant(
        broker_transaction,
        "            self._delete_prepare_message(half)\n            return request.response(ResponseCode.SUCCESS), "
        "\"ROLLED_BACK\"",
        "            self._send_final_message(self._end_message_transaction(half, header))\n"
        "            self._delete_prepare_message(half)\n            return request.response(ResponseCode.SUCCESS), "
        "\"ROLLED_BACK\"",
    ):
        failure = hypothesis_finds_failure(TransactionCheckMachine, 40, 15)
    assert "TXN-22" in str(failure) or "TXN-5..TXN-9" in str(failure)


def test_mutant_check_max_off_by_one_is_caught() -> None:
    """TXN-15/TXN-23: a message is checked transactionCheckMax + 1 times."""
    with refimpl_mutant(broker_transaction, "            if times >= check_max:\n                return True",
                        "            if times > check_max:\n                return True"):
        failure = hypothesis_finds_failure(TransactionCheckMachine, 40, 15)
    assert "TXN-23" in str(failure)


def test_mutant_check_before_the_timeout_is_caught() -> None:
    """TXN-17/TXN-19: the check pass treats half the timeout as the timeout."""
    with refimpl_mutant(broker_transaction, "                immunity = timeout\n",
                        "                immunity = timeout // 2\n"):
        failure = hypothesis_finds_failure(TransactionCheckMachine, 40, 15)
    assert "TXN-14..TXN-19" in str(failure)


def test_mutant_unknow_sent_as_commit_is_caught() -> None:
    """TXN-4/TXN-22: the producer ends an UNKNOW local transaction with COMMIT."""
    with refimpl_mutant(client_transaction,
                        "\"commitOrRollback\": _COMMIT_OR_ROLLBACK[state],\n"
                        "            \"fromTransactionCheck\": False,",
                        "\"commitOrRollback\": _COMMIT_OR_ROLLBACK[state] or TRANSACTION_COMMIT_TYPE,\n"
                        "            \"fromTransactionCheck\": False,"):
        failure = hypothesis_finds_failure(TransactionCheckMachine, 40, 15)
    assert "TXN-4" in str(failure) or "TXN-22" in str(failure)
