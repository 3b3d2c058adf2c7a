"""Transactional messages (TXN): the oracles, the worked examples, the state machine and its sensitivity."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutation import crosshair_mutant, mutant

from rocketspec.spec import transaction_check as tc
from rocketspec.spec.explorer import explore
from rocketspec.spec.protocol import (
    FILE_RESERVED_TIME_HOURS,
    SYSFLAG_TRANSACTION_MASK,
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_OP_REMOVE_TAG,
    TRANSACTION_CHECK_MAX,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_MAX_PROCESS_TIME_MS,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_OP_BATCH,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TIMEOUT_MS,
    Property,
    PutMessageStatus,
    ResponseCode,
    SendStatus,
    TransactionState,
)
from rocketspec.spec.transaction_check import machine as tc_machine
from rocketspec.spec.transaction_check import walk as tc_walk
from rocketspec.spec.versions import V4_9_3, V4_9_8, VersionProfile

D = tc.CheckDecision
TS = TransactionState
COMMIT, ROLLBACK, UNKNOW = TS.COMMIT_MESSAGE, TS.ROLLBACK_MESSAGE, TS.UNKNOW
HOUR_MS = 3600 * 1000
JAVA_INT = st.integers(-(2**31), 2**31 - 1)
PROFILES = (VersionProfile.of("4.5.2"), VersionProfile.of("4.6.0"), VersionProfile.of("4.6.1"), V4_9_3, V4_9_8)

# Small models for sensitivity runs: one message, every race on, a few hundred to a few thousand states.
SMALL = {"messages": 1, "duplicates": 1}


def _java_bits_transaction_value(flag: int) -> int:
    return flag & SYSFLAG_TRANSACTION_MASK


# ---------------------------------------------------------------------------------------------------------------
# TXN-1..TXN-3: the half message.


@given(st.one_of(st.none(), st.text(max_size=6), st.sampled_from(["true", "TRUE", "True", "tRUE", "false", "1"])),
       st.booleans())
def test_half_send_path_is_java_parse_boolean(tran_msg: str | None, reject: bool) -> None:
    path = tc.half_send_path(tran_msg, reject)
    transactional = tran_msg is not None and tran_msg.lower() == "true"
    if not transactional:
        assert path is tc.HalfSendPath.NORMAL
    else:
        assert path is (tc.HalfSendPath.REJECTED if reject else tc.HalfSendPath.HALF)


def test_half_send_path_examples() -> None:
    assert tc.half_send_path("true") is tc.HalfSendPath.HALF
    assert tc.half_send_path("TRUE") is tc.HalfSendPath.HALF
    assert tc.half_send_path(" true") is tc.HalfSendPath.NORMAL
    assert tc.half_send_path(None) is tc.HalfSendPath.NORMAL
    assert tc.half_send_path("true", reject_transaction_message=True) is tc.HalfSendPath.REJECTED


@given(st.text(min_size=1, max_size=20), st.integers(0, 1023), st.integers(0, 2**31 - 1))
def test_half_message_rewrite(topic: str, queue_id: int, sys_flag: int) -> None:
    rewrite = tc.half_message_rewrite(topic, queue_id, sys_flag)
    assert (rewrite.topic, rewrite.queue_id) == (TRANS_HALF_TOPIC, 0)
    assert (rewrite.real_topic, rewrite.real_queue_id) == (topic, str(queue_id))
    # Java: resetTransactionValue(flag, NOT_TYPE) = flag & ~0xC.
    assert rewrite.sys_flag == sys_flag & ~SYSFLAG_TRANSACTION_MASK
    assert tc.consumable(rewrite.sys_flag), "the half topic's own consume queue is built"


def test_producer_prepared_half_is_stored_not_type() -> None:
    """Seed 004 §开始事务: the producer marks the half PREPARED; the broker stores it with NOT_TYPE in queue 0."""
    rewrite = tc.half_message_rewrite("TopicTest", 3, TRANSACTION_PREPARED_TYPE)
    assert rewrite == tc.HalfRewrite(TRANS_HALF_TOPIC, 0, TRANSACTION_NOT_TYPE, "TopicTest", "3")
    assert not tc.consumable(TRANSACTION_PREPARED_TYPE)


@given(JAVA_INT, st.sampled_from([TRANSACTION_NOT_TYPE, TRANSACTION_PREPARED_TYPE, TRANSACTION_COMMIT_TYPE,
                                   TRANSACTION_ROLLBACK_TYPE]))
def test_transaction_bits_match_java_bit_operations(flag: int, kind: int) -> None:
    assert tc.transaction_value(flag) == _java_bits_transaction_value(flag)
    assert tc.reset_transaction_value(flag, kind) == (flag & ~SYSFLAG_TRANSACTION_MASK) | kind
    assert tc.consumable(flag) == (_java_bits_transaction_value(flag) in (TRANSACTION_NOT_TYPE,
                                                                          TRANSACTION_COMMIT_TYPE))


def test_consumable_by_transaction_type() -> None:
    """TXN-3: PREPARED and ROLLBACK messages never get a consume-queue entry, whatever the other bits."""
    for other in (0, 0x1, 0x2, 0x10, 0x20, 0x80, 0x300):
        assert tc.consumable(other | TRANSACTION_NOT_TYPE)
        assert tc.consumable(other | TRANSACTION_COMMIT_TYPE)
        assert not tc.consumable(other | TRANSACTION_PREPARED_TYPE)
        assert not tc.consumable(other | TRANSACTION_ROLLBACK_TYPE)


# ---------------------------------------------------------------------------------------------------------------
# TXN-4, TXN-21: the producer.

states_or_null = st.one_of(st.none(), st.sampled_from(list(TransactionState)))


@given(st.sampled_from(list(SendStatus)), states_or_null, st.booleans())
def test_first_end_transaction_type(status: SendStatus, state: TransactionState | None, raised: bool) -> None:
    kind = tc.first_end_transaction_type(status, state, raised)
    if status is not SendStatus.SEND_OK:
        assert kind == TRANSACTION_ROLLBACK_TYPE
    elif raised or state in (None, UNKNOW):
        assert kind == TRANSACTION_NOT_TYPE
    else:
        assert kind == {COMMIT: TRANSACTION_COMMIT_TYPE, ROLLBACK: TRANSACTION_ROLLBACK_TYPE}[state]


@given(states_or_null, st.booleans(), st.booleans())
def test_check_answer(state: TransactionState | None, raised: bool, has_listener: bool) -> None:
    kind = tc.check_answer(state, raised, has_listener)
    if not has_listener:
        assert kind is None
    elif raised:
        assert kind == TRANSACTION_NOT_TYPE
    elif state is None:
        assert kind is None, "a null state fails the check thread before anything is sent"
    else:
        assert kind == tc.first_end_transaction_type(SendStatus.SEND_OK, state)


def test_check_answer_differs_from_first_end_on_null() -> None:
    """executeLocalTransaction returning null counts as UNKNOW; checkLocalTransaction returning null sends nothing."""
    assert tc.first_end_transaction_type(SendStatus.SEND_OK, None) == TRANSACTION_NOT_TYPE
    assert tc.check_answer(None) is None
    assert tc.first_end_transaction_type(SendStatus.FLUSH_DISK_TIMEOUT, COMMIT) == TRANSACTION_ROLLBACK_TYPE


# ---------------------------------------------------------------------------------------------------------------
# TXN-5..TXN-11: END_TRANSACTION.

kinds = st.sampled_from([TRANSACTION_NOT_TYPE, TRANSACTION_PREPARED_TYPE, TRANSACTION_COMMIT_TYPE,
                         TRANSACTION_ROLLBACK_TYPE, 3, 16])
groups = st.sampled_from(["PG", "PG2", ""])
small = st.integers(0, 3)
OK_PUTS = {PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT, PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
           PutMessageStatus.SLAVE_NOT_AVAILABLE}


@given(kinds, groups, small, small, st.booleans(), groups, small, small, st.booleans(), st.booleans(),
       st.sampled_from(list(PutMessageStatus)))
def test_end_transaction(kind: int, group: str, tsto: int, clo: int, found: bool, stored_group: str,
                         stored_qo: int, stored_clo: int, from_check: bool, slave: bool,
                         put: PutMessageStatus) -> None:
    out = tc.end_transaction(kind, group, tsto, clo, found, stored_group, stored_qo, stored_clo, from_check,
                             slave, put)
    again = tc.end_transaction(kind, group, tsto, clo, found, stored_group, stored_qo, stored_clo,
                               not from_check, slave, put)
    assert out == again, "fromTransactionCheck only changes logging (TXN-6)"
    matches = found and (group, tsto, clo) == (stored_group, stored_qo, stored_clo)
    if kind not in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
        # EndTransactionRequestHeader.checkFields refuses the value while decoding (TXN-6).
        assert out == tc.EndTransactionOutcome(ResponseCode.SYSTEM_ERROR, False, False)
    elif slave:
        assert out == tc.EndTransactionOutcome(ResponseCode.SLAVE_NOT_AVAILABLE, False, False)
    elif kind == TRANSACTION_NOT_TYPE:
        assert out == tc.EndTransactionOutcome(None, False, False)
    elif not matches:
        assert out == tc.EndTransactionOutcome(ResponseCode.SYSTEM_ERROR, False, False)
    elif kind == TRANSACTION_ROLLBACK_TYPE:
        assert out == tc.EndTransactionOutcome(ResponseCode.SUCCESS, False, True)
    elif put in OK_PUTS:
        assert out == tc.EndTransactionOutcome(ResponseCode.SUCCESS, True, True)
    else:
        assert out.response in (ResponseCode.SYSTEM_ERROR, ResponseCode.MESSAGE_ILLEGAL,
                                ResponseCode.SERVICE_NOT_AVAILABLE)
        assert not out.stores_real and not out.writes_op


def test_end_transaction_examples() -> None:
    """REFERENCE §Transactions and seed 004 §事务提交/§事务回滚."""
    commit = tc.end_transaction(TRANSACTION_COMMIT_TYPE, "PG", 7, 4096, True, "PG", 7, 4096)
    assert commit == tc.EndTransactionOutcome(ResponseCode.SUCCESS, True, True)
    rollback = tc.end_transaction(TRANSACTION_ROLLBACK_TYPE, "PG", 7, 4096, True, "PG", 7, 4096)
    assert rollback == tc.EndTransactionOutcome(ResponseCode.SUCCESS, False, True)
    unknown = tc.end_transaction(TRANSACTION_NOT_TYPE, "PG", 7, 4096, True, "PG", 7, 4096, from_transaction_check=True)
    assert unknown.response is None and not unknown.writes_op
    for wrong in (("PG2", 7, 4096), ("PG", 8, 4096), ("PG", 7, 4097)):
        out = tc.end_transaction(TRANSACTION_COMMIT_TYPE, *wrong, True, "PG", 7, 4096)
        assert out == tc.EndTransactionOutcome(ResponseCode.SYSTEM_ERROR, False, False)
    missing = tc.end_transaction(TRANSACTION_COMMIT_TYPE, "PG", 7, 4096, False, "", 0, 0)
    assert missing.response is ResponseCode.SYSTEM_ERROR
    slave = tc.end_transaction(TRANSACTION_COMMIT_TYPE, "PG", 7, 4096, True, "PG", 7, 4096, slave=True)
    assert slave.response is ResponseCode.SLAVE_NOT_AVAILABLE
    full = tc.end_transaction(TRANSACTION_COMMIT_TYPE, "PG", 7, 4096, True, "PG", 7, 4096,
                              put_status=PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
    assert full == tc.EndTransactionOutcome(ResponseCode.MESSAGE_ILLEGAL, False, False)
    # TXN-11: nothing remembers the first commit; the same request commits again.
    assert tc.end_transaction(TRANSACTION_COMMIT_TYPE, "PG", 7, 4096, True, "PG", 7, 4096) == commit


prop_names = st.sampled_from([Property.PRODUCER_GROUP, Property.TRANSACTION_PREPARED, Property.KEYS,
                              Property.TRANSACTION_CHECK_TIMES, Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX])


@given(st.text(min_size=1, max_size=10), st.integers(0, 1023), st.integers(0, 2**31 - 1),
       st.dictionaries(prop_names, st.text(max_size=5), max_size=4), st.sampled_from(PROFILES))
def test_restore_real_message(topic: str, queue_id: int, sys_flag: int, extra: dict[str, str],
                              profile: VersionProfile) -> None:
    props = ((Property.REAL_TOPIC, topic), (Property.REAL_QUEUE_ID, str(queue_id)), *sorted(extra.items()))
    restored = tc.restore_real_message(props, sys_flag, profile)
    assert (restored.topic, restored.queue_id) == (topic, queue_id)
    assert restored.sys_flag == (sys_flag & ~SYSFLAG_TRANSACTION_MASK) | TRANSACTION_COMMIT_TYPE
    kept = dict(restored.properties)
    assert Property.REAL_TOPIC not in kept and Property.REAL_QUEUE_ID not in kept
    assert (Property.TRANSACTION_PREPARED in kept) == (
        Property.TRANSACTION_PREPARED in extra and not profile.at_least("4.6.1")
    )
    assert all(p in props for p in restored.properties)
    assert tc.consumable(restored.sys_flag)


@given(st.integers(0, 1023), st.integers(0, 2**62))
def test_op_message(queue_id: int, offset: int) -> None:
    op = tc.op_message(queue_id, offset)
    assert op == tc.OpMessage(TRANS_OP_HALF_TOPIC, queue_id, TRANS_OP_REMOVE_TAG, str(offset))
    assert int(op.body) == offset


# ---------------------------------------------------------------------------------------------------------------
# TXN-12..TXN-20: the check pass.


@given(st.one_of(st.none(), st.integers(-2, 40)), st.integers(-1, 40))
def test_next_check_times(times: int | None, check_max: int) -> None:
    new = tc.next_check_times(times, check_max)
    if times is None:
        assert new == 1
    elif times >= check_max:
        assert new is None
    else:
        assert new == times + 1


@given(st.integers(-1, 30))
def test_a_message_is_re_appended_at_most_max_of_check_max_and_one_times(check_max: int) -> None:
    """TXN-23: from no property, the copies carry 1, 2, ... until the count reaches the maximum."""
    times: int | None = None
    appended = 0
    while (times := tc.next_check_times(times, check_max)) is not None:
        appended += 1
        assert appended <= 1000
    assert appended == max(check_max, 1)


def test_default_check_max_gives_fifteen_checks() -> None:
    """Seed 004 §监控: 15 checks by default (REFERENCE: absent -> 1, >= max -> discard, else +1)."""
    times: int | None = None
    counts = []
    while (times := tc.next_check_times(times)) is not None:
        counts.append(times)
    assert counts == list(range(1, TRANSACTION_CHECK_MAX + 1))


@given(st.one_of(st.none(), st.integers(-5, 10**6)), st.integers(0, 10**7))
def test_check_immunity_ms(seconds: int | None, timeout: int) -> None:
    immunity = tc.check_immunity_ms(seconds, timeout)
    assert immunity == (timeout if seconds in (None, -1) else seconds * 1000)


msg_times = st.integers(0, 200_000)


@given(
    now=st.integers(0, 400_000), start_back=st.integers(0, 70_000), born=st.integers(-10_000, 400_000),
    stored_back=st.integers(-5_000, 100_000), in_remove=st.booleans(),
    times=st.one_of(st.none(), st.integers(-1, 20)), immunity=st.one_of(st.none(), st.integers(-1, 100)),
    prepared=st.one_of(st.none(), st.integers(-1, 50)), prepared_in_remove=st.booleans(), ops_empty=st.booleans(),
    last_op_born=st.integers(0, 400_000), check_max=st.integers(0, 20), timeout=st.integers(0, 20_000),
    reserved=st.sampled_from([0, 1, FILE_RESERVED_TIME_HOURS]), store_ok=st.booleans(),
)
def test_check_decision_properties(now: int, start_back: int, born: int, stored_back: int, in_remove: bool,
                                   times: int | None, immunity: int | None, prepared: int | None,
                                   prepared_in_remove: bool, ops_empty: bool, last_op_born: int, check_max: int,
                                   timeout: int, reserved: int, store_ok: bool) -> None:
    start = max(0, now - start_back)
    stored = max(0, start - stored_back)
    d = tc.check_decision(now, start, born, stored, in_remove, times, immunity, prepared, prepared_in_remove,
                          ops_empty, last_op_born, check_max, timeout, reserved, store_ok)
    age = now - born
    if now - start > TRANSACTION_MAX_PROCESS_TIME_MS:
        assert d is D.STOP_TIME_LIMIT
        return
    if in_remove:
        assert d is D.SKIP_DONE
        return
    too_old = age > reserved * HOUR_MS
    assert (d is D.DISCARD) == (tc.next_check_times(times, check_max) is None or too_old)
    if d is D.DISCARD:
        return
    assert (d is D.STOP_FRESH) == (stored >= start)
    if d is D.STOP_FRESH:
        return
    immunity_ms = tc.check_immunity_ms(immunity, timeout)
    if d in (D.CHECK, D.RETRY):
        assert (ops_empty and age > immunity_ms) or (not ops_empty and last_op_born - start > timeout) or age <= -1
        assert (d is D.RETRY) == (not store_ok)
    if d is D.FETCH_MORE_OPS:
        assert not (ops_empty and age > immunity_ms) and age > -1
    if d is D.STOP_NEW:
        assert immunity is None and 0 <= age < timeout
    if d in (D.IMMUNITY_PUT_BACK, D.IMMUNITY_DONE):
        assert immunity is not None and age < immunity_ms and prepared != -1
        assert (d is D.IMMUNITY_DONE) == (prepared is not None and prepared_in_remove)


def _decide(now: int, born: int, **kw: object) -> tc.CheckDecision:
    """A decision with a pass that began at ``now`` for a message stored when it was born."""
    args = {"now": now, "pass_start": now, "born": born, "stored": born, "in_remove_map": False, "check_times": None}
    args.update(kw)
    return tc.check_decision(**args)  # type: ignore[arg-type]


def test_check_decision_worked_examples() -> None:
    """REFERENCE §Transactions and seed 004 §事务消息是如何处理回查的, with the defaults (timeout 6 s, max 15)."""
    assert _decide(5_000, 0) is D.STOP_NEW, "younger than transactionTimeOut: the walk stops"
    assert _decide(7_000, 0) is D.CHECK, "older, no op: re-append and check"
    assert _decide(7_000, 0, in_remove_map=True) is D.SKIP_DONE
    assert _decide(7_000, 0, check_times=TRANSACTION_CHECK_MAX) is D.DISCARD
    assert _decide(7_000, 0, check_times=TRANSACTION_CHECK_MAX - 1) is D.CHECK
    assert _decide(73 * HOUR_MS, 0, check_times=1) is D.DISCARD, "beyond fileReservedTime (72 h)"
    assert _decide(7_000, 0, stored=7_000) is D.STOP_FRESH, "stored after the pass began"
    # Discard is tested before freshness: a copy appended by this pass with the last count goes at once.
    assert _decide(7_000, 0, stored=7_000, check_times=TRANSACTION_CHECK_MAX) is D.DISCARD
    # The clock of a producer ahead of the broker's: born in the future is checked at once.
    assert _decide(7_000, 9_000, stored=6_000) is D.CHECK
    # Ops read but none for this offset: read more before deciding.
    assert _decide(7_000, 0, ops_empty=False, last_op_born=6_000) is D.FETCH_MORE_OPS
    assert _decide(7_000, 0, ops_empty=False, last_op_born=7_000 + TRANSACTION_TIMEOUT_MS + 1) is D.CHECK
    assert _decide(7_000, 0, store_ok=False) is D.RETRY
    assert _decide(TRANSACTION_MAX_PROCESS_TIME_MS + 1, 0, pass_start=0) is D.STOP_TIME_LIMIT


def test_check_decision_immunity_examples() -> None:
    """TXN-18: CHECK_IMMUNITY_TIME_IN_SECONDS=60 keeps a message from checks for 60 s, re-appending it."""
    assert tc.check_immunity_ms(60) == 60_000
    assert tc.check_immunity_ms(-1) == TRANSACTION_TIMEOUT_MS
    assert tc.check_immunity_ms(None) == TRANSACTION_TIMEOUT_MS
    assert _decide(30_000, 0, immunity_seconds=60) is D.IMMUNITY_PUT_BACK
    assert _decide(30_000, 0, immunity_seconds=60, prepared_offset=4) is D.IMMUNITY_PUT_BACK
    assert _decide(30_000, 0, immunity_seconds=60, prepared_offset=4, prepared_in_remove_map=True) is D.IMMUNITY_DONE
    assert _decide(30_000, 0, immunity_seconds=60, prepared_offset=-1) is D.FETCH_MORE_OPS
    assert _decide(30_000, 0, immunity_seconds=60, store_ok=False) is D.FETCH_MORE_OPS
    assert _decide(61_000, 0, immunity_seconds=60) is D.CHECK
    assert _decide(3_000, 0, immunity_seconds=2) is D.CHECK, "the property can also shorten the timeout"
    # Exactly the immunity age: neither younger nor older, the walk reads ops again (and spins until the clock moves).
    assert _decide(60_000, 0, immunity_seconds=60) is D.FETCH_MORE_OPS


@given(st.integers(-10**6, 10**6), st.integers(0, 10**5), st.integers(0, 10**6))
def test_walk_resumes_at_the_first_moment_the_decision_can_change(born: int, immunity: int, start: int) -> None:
    """TXN-26: at the moment returned (and not one ms before) the message is older than its immunity time or the
    pass is past its time limit: check_decision then says something else than FETCH_MORE_OPS."""
    wake = tc.walk_resumes_at(born, immunity, start)
    assert wake - born > immunity or wake - start > TRANSACTION_MAX_PROCESS_TIME_MS
    assert wake - 1 - born <= immunity and wake - 1 - start <= TRANSACTION_MAX_PROCESS_TIME_MS
    if born < start <= born + immunity:  # a message old enough to wait at, stored before the pass
        timeout = immunity
        before = tc.check_decision(wake - 1, start, born, born, False, None, transaction_timeout=timeout)
        after = tc.check_decision(wake, start, born, born, False, None, transaction_timeout=timeout)
        assert before in (D.FETCH_MORE_OPS, D.STOP_NEW) and after is not D.FETCH_MORE_OPS


def test_walk_resumes_at_examples() -> None:
    assert tc.walk_resumes_at(0, TRANSACTION_TIMEOUT_MS, TRANSACTION_TIMEOUT_MS) == TRANSACTION_TIMEOUT_MS + 1
    assert tc.walk_resumes_at(0, 10**6, 5) == 5 + TRANSACTION_MAX_PROCESS_TIME_MS + 1, "the pass's limit comes first"


@given(st.integers(0, 99999998))
def test_discard_destination(draw: int) -> None:
    assert tc.discard_destination(draw) == (TRANS_CHECK_MAX_TIME_TOPIC, 0)


@given(st.lists(st.integers(0, 6), max_size=8), st.integers(0, 6), st.integers(0, 4))
def test_fill_op_remove_map_is_a_java_hash_map(bodies: list[int], mini: int, first_op: int) -> None:
    ops = tuple((first_op + k, h) for k, h in enumerate(bodies))
    half = len(ops) // 2
    scan = tc.fill_op_remove_map(tc.fill_op_remove_map(tc.OpScan(), ops[:half], mini), ops[half:], mini)
    remove: dict[int, int] = {}
    done: list[int] = []
    for o, h in ops:
        if h < mini:
            done.append(o)
        else:
            remove[h] = o
    assert scan == tc.OpScan(tuple(sorted(remove.items())), tuple(sorted(done)))


@given(st.integers(0, 50), st.sets(st.integers(0, 60), max_size=8))
def test_advance_op_offset_is_the_first_gap(op_offset: int, done: set[int]) -> None:
    above = sorted(d for d in done if d >= op_offset)
    expected = op_offset
    while expected in done:
        expected += 1
    assert tc.advance_op_offset(op_offset, tuple(above)) == expected


def test_advance_op_offset_examples() -> None:
    assert tc.advance_op_offset(3, (3, 4, 6)) == 5
    assert tc.advance_op_offset(3, (4, 5)) == 3, "op 3 is not done: nothing passes it"
    assert tc.advance_op_offset(3, (3, 3, 4)) == 4, "a repeated offset ends the run (Java's loop)"
    assert tc.advance_op_offset(3, ()) == 3


# ---------------------------------------------------------------------------------------------------------------
# The state machine: walks through enabled/step.

EVENT = tc.EVENT_OFFSET_MS


def _run(state: tc.TxnState, *actions: tc.Action) -> tc.TxnState:
    for action in actions:
        assert tc.enabled(state, action), action
        state = tc.step(state, action)
    return state


def _targets(state: tc.TxnState) -> tuple[int | None, ...]:
    """Each check of the walk due now to the first registered producer of its group."""
    return tuple((tc.live_of(state, group) or [None])[0] for _m, _e, group in tc.pending_walk(state).checks)


def _tick(state: tc.TxnState) -> tc.TxnState:
    """Time passes to the next pass, the pass runs, then half an interval passes (where the explorer acts)."""
    state = _run(state, tc.TimePasses(state.next_pass - state.now))
    state = _run(state, tc.CheckPass(_targets(state)))
    return _run(state, tc.TimePasses(EVENT))


def _start(**kw: object) -> tc.TxnState:
    """One message sent half an interval after the broker started."""
    state = tc.initial_state(tc.Config(messages=1, immunity=(None,), **kw))  # type: ignore[arg-type]
    return _run(state, tc.TimePasses(EVENT), tc.SendHalf(0))


def _first_request(state: tc.TxnState) -> tc.EndTxnRequest:
    return state.requests[0]


def test_commit_path() -> None:
    s = _run(_start(), tc.LocalTransactionEnds(0, COMMIT))
    assert s.half[0].sys_flag == TRANSACTION_NOT_TYPE and s.half[0].real_queue_id == "0"
    s = _run(s, tc.EndTransactionDelivered(_first_request(s)))
    assert [(r.topic, r.queue_id, r.sys_flag) for r in s.real] == [(tc.REAL_TOPIC, 0, TRANSACTION_COMMIT_TYPE)]
    assert s.ops == (tc.OpEntry(0, EVENT),)
    stored = dict(s.real[0].stored_properties)
    assert stored[Property.REAL_TOPIC] == tc.REAL_TOPIC and stored[Property.PRODUCER_GROUP] == tc.PRODUCER_GROUP
    s = _run(s, tc.ConsumerReceives(0))
    assert not tc.enabled(s, tc.ConsumerReceives(0)) and not tc.enabled(s, tc.ConsumerReceives(1))
    s = _tick(_tick(s))
    assert (s.half_offset, s.op_offset, s.checks) == (1, 1, ()), "the op is read and both offsets advance"


def test_rollback_path_stores_nothing_consumable() -> None:
    s = _run(_start(), tc.LocalTransactionEnds(0, ROLLBACK))
    s = _tick(_tick(_run(s, tc.EndTransactionDelivered(_first_request(s)))))
    assert s.real == () and [op.half_offset for op in s.ops] == [0] and (s.half_offset, s.op_offset) == (1, 1)
    assert not tc.enabled(s, tc.ConsumerReceives(0))


def test_unknown_is_checked_until_discarded_in_the_same_pass_as_the_last_check() -> None:
    """checkMax 2: checked at the second and third pass; the copy with count 2 is discarded by that pass."""
    s = _run(_start(check_max=2), tc.LocalTransactionEnds(0, UNKNOW))
    assert s.requests == (), "UNKNOW: the broker does nothing, so nothing need be in flight"
    s = _tick(s)
    assert s.half_offset == 0 and s.checks == (), "first pass: younger than the timeout"
    s = _tick(s)
    assert [e.check_times for e in s.half] == [None, 1] and s.checks == (tc.CheckRequest(0, 1, 0),)
    assert s.half_offset == 1, "the walk stopped at the copy it appended (TXN-17)"
    assert not tc.enabled(s, tc.ProducerAnswers(tc.CheckRequest(0, 1, 0), COMMIT)), "the checker says UNKNOW"
    s = _run(s, tc.ProducerAnswers(tc.CheckRequest(0, 1, 0), None))
    assert s.requests == () and s.ops == (), "a null answer sends nothing"
    s = _tick(s)
    assert [e.check_times for e in s.half] == [None, 1, 2] and s.checks_sent == (2,)
    assert s.discarded == (2,) and s.half_offset == 3
    s = _run(s, tc.LocalDecides(0, COMMIT), tc.ProducerAnswers(tc.CheckRequest(0, 2, 0), COMMIT))
    assert s.requests == (tc.EndTxnRequest(tc.PRODUCER_GROUP, TRANSACTION_COMMIT_TYPE, 2, 2, True),)
    s = _run(s, tc.EndTransactionDelivered(s.requests[0]))
    assert len(s.real) == 1 and [op.half_offset for op in s.ops] == [2], "a discarded message can still commit"


def test_a_group_without_producers_spends_its_checks() -> None:
    """TXN-19: with no registered producer of the group a check goes nowhere, and its count is spent all the same;
    a check to a producer that left is lost."""
    s = _run(_start(check_max=1), tc.LocalTransactionEnds(0, UNKNOW), tc.ProducerLeaves(0))
    s = _tick(s)
    s = _run(s, tc.TimePasses(s.next_pass - s.now))
    assert not tc.enabled(s, tc.CheckPass((0,))) and tc.enabled(s, tc.CheckPass((None,)))
    s = _run(s, tc.CheckPass((None,)), tc.ProducerRegisters(0))
    assert s.checks == () and s.checks_sent == (1,) and [e.check_times for e in s.half] == [None, 1]
    s = _tick(s)
    assert s.discarded == (1,), "the maximum is reached without the producer ever being asked"


def test_late_sender_commit_after_a_check_commits_twice() -> None:
    """TXN-11: the sender's END_TRANSACTION names the original entry, the check's answer the copy: two commits."""
    s = _run(_start(), tc.LocalTransactionEnds(0, COMMIT))
    late = _first_request(s)
    s = _tick(_tick(s))
    s = _run(s, tc.ProducerAnswers(tc.CheckRequest(0, 1, 0), COMMIT))
    s = _run(s, tc.EndTransactionDelivered(s.requests[-1] if s.requests[-1].from_check else s.requests[0]))
    assert len(s.real) == 1 and 0 not in s.racy
    s = _run(s, tc.EndTransactionDelivered(late))
    assert len(s.real) == 2 and s.accepted == (2,)
    assert s.racy == frozenset({0}), "the late request named a superseded entry"
    assert all(inv.holds(s) for inv in tc.INVARIANTS)


def test_a_foreign_group_cannot_commit() -> None:
    s = _run(_start(forged=2), tc.LocalTransactionEnds(0, ROLLBACK))
    assert not tc.enabled(s, tc.ForgedEndTransaction(0, group=tc.PRODUCER_GROUP)), "that one would be accepted"
    s = _run(s, tc.ForgedEndTransaction(0), tc.ForgedEndTransaction(0, tc.PRODUCER_GROUP, queue_offset=3))
    assert not tc.enabled(s, tc.ForgedEndTransaction(-1))
    for forged in [r for r in s.requests if r.forged]:
        s = _run(s, tc.EndTransactionDelivered(forged))
    assert s.real == () and s.ops == ()


def test_lost_and_duplicated_requests() -> None:
    s = _run(_start(duplicates=1), tc.LocalTransactionEnds(0, COMMIT))
    request = _first_request(s)
    s = _run(s, tc.EndTransactionDuplicated(request))
    assert s.requests == (request, request) and s.racy == frozenset({0}) and s.duplicates_left == 0
    assert not tc.enabled(s, tc.EndTransactionDuplicated(request))
    s = _run(s, tc.EndTransactionDelivered(request), tc.EndTransactionDelivered(request))
    assert len(s.real) == 2 and [op.half_offset for op in s.ops] == [0, 0]
    assert not tc.enabled(s, tc.EndTransactionDelivered(request))
    # Two ops for one half offset: the remove map keeps the later, so the earlier op is not done in this pass;
    # the op offset stays behind it until the next pass finds both below the half offset.
    s = _tick(s)
    assert (s.half_offset, s.op_offset) == (1, 0)
    s = _tick(s)
    assert (s.half_offset, s.op_offset) == (1, 2)
    lost = _run(_start(), tc.LocalTransactionEnds(0, COMMIT))
    lost = _run(lost, tc.EndTransactionLost(_first_request(lost)))
    assert lost.requests == () and lost.real == ()
    ignored = tc.EndTxnRequest(tc.PRODUCER_GROUP, TRANSACTION_NOT_TYPE, 0, 0, False)
    assert _run(lost, tc.EndTransactionDelivered(ignored), tc.EndTransactionDuplicated(ignored)) == lost


def test_a_walk_waits_at_a_tie_and_goes_on() -> None:
    """TXN-26: a message exactly as old as its immunity time is neither checked nor left: the walk waits for the next
    millisecond (or an op); an END_TRANSACTION landing meanwhile lands during the pass."""
    s = tc.initial_state(tc.Config(messages=1, immunity=(None,)))
    s = _run(s, tc.SendHalf(0), tc.LocalTransactionEnds(0, COMMIT), tc.TimePasses(tc.TICK_MS))
    s = _run(s, tc.CheckPass(()))
    assert s.walk is not None and s.walk.wake == tc.TICK_MS + 1 and s.half_offset == 0
    assert not tc.enabled(s, tc.TimePasses(2))
    s = _run(s, tc.EndTransactionDelivered(_first_request(s)))
    assert tc.walk_due(s) and not tc.enabled(s, tc.TimePasses(1)) and s.racy == frozenset({0})
    s = _run(s, tc.CheckPass(()))
    assert s.walk is None and (s.half_offset, s.op_offset) == (1, 1) and s.checks == ()
    waiting = tc.initial_state(tc.Config(messages=1, immunity=(None,)))
    waiting = _run(waiting, tc.SendHalf(0), tc.LocalTransactionEnds(0, UNKNOW), tc.TimePasses(tc.TICK_MS))
    waiting = _run(waiting, tc.CheckPass(()), tc.TimePasses(1), tc.CheckPass((0,)))
    assert waiting.walk is None and waiting.checks == (tc.CheckRequest(0, 1, 0),)
    assert waiting.next_pass == tc.TICK_MS + 1 + tc.TICK_MS, "the next pass: one interval after this one ended"


# ---------------------------------------------------------------------------------------------------------------
# Exploration.


def test_explore_default_model() -> None:
    result = explore(tc.model())  # its speed is a benchmark's business (docs/benchmarks.md), never a test's
    assert result.ok, "\n".join(v.describe() for v in result.violations)
    assert result.complete and not result.violations
    assert 1_000 <= result.states <= 200_000
    assert set(result.clauses) >= {"TXN-22", "TXN-23", "TXN-24", "TXN-25"}


@pytest.mark.parametrize(
    "bounds",
    [
        {"messages": 1, "forged": 1, "stale_checks": True},
        {"messages": 2, "immunity": (None, 2), "duplicates": 0},
        {"messages": 2, "check_max": 0, "max_time": 3, "duplicates": 0},
        {"messages": 2, "timeout_ms": 2000, "max_time": 5, "duplicates": 0},
        {"messages": 2, "timeout_ms": 2000, "send_window": 2, "max_time": 4, "duplicates": 0},
        {"messages": 2, "op_batch": 1, "duplicates": 0},
        {"messages": 1, "profile": VersionProfile.of("4.5.2")},
        {"messages": 1, "profile": VersionProfile.of("4.6.0")},
        {"messages": 1, "duplicates": 1},
        {"messages": 2, "duplicates": 1, "send_window": 0, "max_time": 3},
        {"messages": 1, "producers": (tc.PRODUCER_GROUP, tc.PRODUCER_GROUP, "PG2"), "churn": True, "lose": True,
         "consume": True, "duplicates": 0},
        {"messages": 2, "producers": (tc.PRODUCER_GROUP, "PG2"), "duplicates": 0, "max_time": 3},
        {"messages": 1, "event_offset_ms": 0, "immunity": (1,), "duplicates": 1, "max_time": 3},
        {"messages": 2, "event_offset_ms": 0, "duplicates": 0, "max_time": 3},
    ],
    ids=["forged+stale", "immunity", "check-max-0", "timeout-2", "late-send", "op-batch-1", "4.5.2", "4.6.0",
         "duplicates", "duplicates-2", "producers-churn", "two-groups", "ties-immunity", "ties"],
)
def test_explore_variants(bounds: dict[str, object]) -> None:
    result = explore(tc.model(**bounds))  # type: ignore[arg-type]
    assert result.ok, "\n".join(v.describe() for v in result.violations)


@pytest.mark.slow
def test_immunity_message_whose_op_is_beyond_the_batch_is_checked_again() -> None:
    """A 4.9.8 gap, not a model race: the op is past the batch read, so the immunity copy is later checked."""
    result = explore(tc.model(messages=2, immunity=(None, 1), op_batch=1, max_time=5, duplicates=0))
    assert result.complete
    assert [v.invariant for v in result.violations] == ["race-free messages are resolved at most once"]
    final = result.violations[0].steps[-1][1]
    assert final.racy == frozenset() and final.accepted[1] == 2
    with_batch = explore(tc.model(messages=2, immunity=(None, 1), op_batch=TRANSACTION_OP_BATCH, max_time=5,
                                  duplicates=0))
    assert with_batch.ok


def test_prepared_queue_offset_lookup_never_hits_for_broker_made_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """TXN-18: the op of the offset an immunity copy names is always below the half offset, so filed as done."""
    seen: set[tc.CheckDecision] = set()
    decide = tc.check_decision

    def spy(*args: object, **kwargs: object) -> tc.CheckDecision:
        decision = decide(*args, **kwargs)  # type: ignore[arg-type]
        seen.add(decision)
        return decision

    monkeypatch.setattr(tc_walk, "check_decision", spy)  # the walk calls the oracle it imported
    tc_machine.pending_walk.cache_clear()
    assert explore(tc.model(messages=2, immunity=(None, 2), duplicates=0)).ok
    assert D.IMMUNITY_PUT_BACK in seen and D.CHECK in seen and D.DISCARD in seen
    assert D.IMMUNITY_DONE not in seen


# ---------------------------------------------------------------------------------------------------------------
# Sensitivity: broken rules are caught.


def _caught(module: object, clause: str, **bounds: object) -> None:
    result = explore(module.model(**{**SMALL, **bounds}))  # type: ignore[attr-defined]
    assert result.violations, "the broken rule went unnoticed"
    assert clause in result.failed_clauses(), result.failed_clauses()


def test_mutant_rollback_also_stores_the_real_message() -> None:
    mod = mutant(tc, "return EndTransactionOutcome(ResponseCode.SUCCESS, False, True)",
                 "return EndTransactionOutcome(ResponseCode.SUCCESS, True, True)")
    _caught(mod, "TXN-22")
    run = crosshair_mutant(mod, "end_transaction")
    assert any(r.failed for r in run.results)


def test_mutant_check_count_compared_with_greater_than() -> None:
    mod = mutant(tc, "if check_times is not None and check_times >= check_max:",
                 "if check_times is not None and check_times > check_max:")
    _caught(mod, "TXN-23")
    counted = mutant(tc, "    if check_times >= check_max:\n        return None",
                     "    if check_times > check_max:\n        return None")
    run = crosshair_mutant(counted, "next_check_times")
    assert any(r.failed for r in run.results)


def test_mutant_commit_without_producer_group_check_resolves_twice() -> None:
    mod = mutant(tc, "        stored_group != producer_group\n        or ", "        ")
    result = explore(mod.model(messages=1, forged=1, duplicates=0))
    failed = result.failed_clauses()
    assert "TXN-25" in failed and "TXN-22" in failed, failed


def test_mutant_rolled_back_message_delivered_through_a_check_answer() -> None:
    mod = mutant(tc, "    if state is TransactionState.ROLLBACK_MESSAGE:\n        return TRANSACTION_ROLLBACK_TYPE",
                 "    if state is TransactionState.ROLLBACK_MESSAGE:\n        return TRANSACTION_COMMIT_TYPE")
    _caught(mod, "TXN-22")
    run = crosshair_mutant(mod, "check_answer")
    assert any(r.failed for r in run.results)


def test_mutant_rolled_back_message_dispatched_to_the_consume_queue() -> None:
    mod = mutant(tc, "return transaction_value(sys_flag) in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE)",
                 "return transaction_value(sys_flag) in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE, "
                 "TRANSACTION_ROLLBACK_TYPE)")
    run = crosshair_mutant(mod, "consumable")
    assert any(r.failed for r in run.results)


def test_mutant_walk_passes_a_new_message() -> None:
    mod = mutant(tc, "        if decision in STOPS:\n            break",
                 "        if decision in STOPS:\n            i += 1\n            break")
    _caught(mod, "TXN-24")


def test_mutant_check_without_re_append() -> None:
    mod = mutant(tc, "            entries.append(attrs.evolve(", "            (attrs.evolve(")
    _caught(mod, "TXN-24", duplicates=0)


def test_mutant_op_offset_jumps_gaps() -> None:
    mod = mutant(tc, "        if d != new_offset:\n            break\n        new_offset += 1",
                 "        new_offset = max(new_offset, d + 1)")
    run = crosshair_mutant(mod, "advance_op_offset")
    assert any(r.failed for r in run.results)
    # A pending op (for a copy behind a message still younger than the timeout) below a done one (stale).
    _caught(mod, "TXN-20", messages=2, duplicates=0, timeout_ms=2000, send_window=2, max_time=4)


def test_mutant_op_at_the_half_offset_counted_done() -> None:
    mod = mutant(tc, "        if half_offset < mini_offset:\n            done.append(op_offset)",
                 "        if half_offset <= mini_offset:\n            done.append(op_offset)")
    run = crosshair_mutant(mod, "fill_op_remove_map")
    assert any(r.failed for r in run.results)
    _caught(mod, "TXN-25", duplicates=0)


def test_mutant_immunity_in_milliseconds() -> None:
    mod = mutant(tc, "    return immunity_seconds * 1000\n", "    return immunity_seconds\n")
    run = crosshair_mutant(mod, "check_immunity_ms")
    assert any(r.failed for r in run.results)


def test_model_state_is_hashable_and_frozen() -> None:
    state = tc.model().initial[0]
    assert hash(state) == hash(attrs.evolve(state))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        state.now = 1  # type: ignore[misc]
