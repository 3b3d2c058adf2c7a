"""Tests of the send_retry spec: oracles (examples and properties), the state machine, and sensitivity."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutation import crosshair_mutant, mutant

from rocketspec.spec import send_retry as sr
from rocketspec.spec.explorer import explore
from rocketspec.spec.protocol import (
    DEFAULT_PERM,
    DEFAULT_RETRY_RESPONSE_CODES,
    LATENCY_MAX_MS,
    NOT_AVAILABLE_DURATION_MS,
    PERM_READ,
    PERM_WRITE,
    CommunicationMode,
    ResponseCode,
    SendStatus,
)
from rocketspec.spec.queues import MessageQueue
from rocketspec.spec.versions import V4_9_3, V4_9_8, VersionProfile

SYNC, ASYNC, ONEWAY = CommunicationMode.SYNC, CommunicationMode.ASYNC, CommunicationMode.ONEWAY
V4_3_1 = VersionProfile.of("4.3.1")
V4_9_2 = VersionProfile.of("4.9.2")
V4_9_7 = VersionProfile.of("4.9.7")
PROFILES = (V4_3_1, V4_9_2, V4_9_3, V4_9_7, V4_9_8)
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
TOPIC = "TopicTest"
A, B, C = "broker-a", "broker-b", "broker-c"
ROUTE = (sr.QueueData(A, 2), sr.QueueData(B, 2))
QUEUES = sr.publish_queues(TOPIC, ROUTE, frozenset({A, B}))
A0, A1, B0, B1 = QUEUES


def mq(broker: str, queue_id: int) -> MessageQueue:
    return MessageQueue(TOPIC, broker, queue_id)


# ---------------------------------------------------------------------------------------------------------
# Strategies.

brokers = st.sampled_from((A, B, C))
profiles = st.sampled_from(PROFILES)
modes = st.sampled_from(tuple(CommunicationMode))
java_ints = st.one_of(
    st.integers(INT_MIN, INT_MAX), st.integers(INT_MAX - 8, INT_MAX), st.integers(INT_MIN, INT_MIN + 8)
)
small_counters = st.integers(0, 10_000)
latencies = st.one_of(st.integers(0, 20_000), st.sampled_from(LATENCY_MAX_MS), st.integers(0, 10**9))


@st.composite
def routes(draw: st.DrawFn) -> tuple[sr.QueueData, ...]:
    names = draw(st.lists(brokers, min_size=1, max_size=3, unique=True))
    return tuple(
        sr.QueueData(n, draw(st.integers(1, 4)), draw(st.sampled_from((DEFAULT_PERM, PERM_WRITE, PERM_READ))))
        for n in names
    )


@st.composite
def queue_lists(draw: st.DrawFn) -> tuple[MessageQueue, ...]:
    names = draw(st.lists(brokers, min_size=1, max_size=3, unique=True))
    route = tuple(sr.QueueData(n, draw(st.integers(1, 3))) for n in names)
    return sr.publish_queues(TOPIC, route, frozenset(names))


@st.composite
def fault_tables(draw: st.DrawFn, now: int = 10_000) -> sr.FaultTable:
    items = draw(
        st.lists(
            st.builds(
                sr.FaultItem,
                brokers,
                st.sampled_from((0, 50, 550, 1000, 3000, 30_000)),
                st.integers(now - 1000, now + 1000),
            ),
            max_size=3,
        )
    )
    return sr.fault_table(items)


# ---------------------------------------------------------------------------------------------------------
# Attempts, retries, budget (SEND-1 .. SEND-10).


def test_attempt_limits_of_the_seeds() -> None:
    # seed 000: "同步发送,默认是1+2次重试"; seed 003: ONEWAY has no retry.
    assert sr.attempt_limit(SYNC) == 3
    assert sr.attempt_limit(ASYNC) == 3
    assert sr.attempt_limit(ONEWAY) == 1
    assert sr.attempt_limit(SYNC, 0) == 1
    assert sr.attempt_limit(ASYNC, 5, 0) == 1


@given(modes, st.integers(0, 100), st.integers(0, 100))
def test_attempt_limit_property(mode: CommunicationMode, retries: int, async_retries: int) -> None:
    limit = sr.attempt_limit(mode, retries, async_retries)
    expected = {SYNC: 1 + retries, ASYNC: 1 + async_retries, ONEWAY: 1}[mode]
    assert limit == expected


def test_budget_boundary() -> None:
    assert sr.attempt_within_budget(0)
    assert sr.attempt_within_budget(3000)  # timeout < costTime is strict
    assert not sr.attempt_within_budget(3001)


@given(st.integers(-(10**6), 10**7), st.integers(0, 10**7))
def test_budget_property(elapsed: int, timeout: int) -> None:
    assert sr.attempt_within_budget(elapsed, timeout) == (elapsed <= timeout)


def test_response_codes_to_status() -> None:
    assert sr.send_status_of(ResponseCode.SUCCESS) is SendStatus.SEND_OK
    assert sr.send_status_of(ResponseCode.FLUSH_DISK_TIMEOUT) is SendStatus.FLUSH_DISK_TIMEOUT
    assert sr.send_status_of(ResponseCode.FLUSH_SLAVE_TIMEOUT) is SendStatus.FLUSH_SLAVE_TIMEOUT
    assert sr.send_status_of(ResponseCode.SLAVE_NOT_AVAILABLE) is SendStatus.SLAVE_NOT_AVAILABLE
    assert sr.send_status_of(ResponseCode.SYSTEM_BUSY) is None


@given(st.one_of(st.sampled_from(list(ResponseCode)), st.integers(-5, 400)))
def test_send_status_property(code: int) -> None:
    status = sr.send_status_of(code)
    named = {ResponseCode[s.name] for s in SendStatus if s.name in ResponseCode.__members__}
    if code == ResponseCode.SUCCESS:
        assert status is SendStatus.SEND_OK
    elif code in named:
        assert status is not None and status.name == ResponseCode(code).name
    else:
        assert status is None


def test_the_six_retried_codes() -> None:
    # seed 000 §发送核心代码: "以下响应码,进行发送消息重试".
    retried = {c for c in ResponseCode if sr.send_status_of(c) is None and sr.response_code_retried(c)}
    assert retried == {
        ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_ERROR,
        ResponseCode.NO_PERMISSION, ResponseCode.NO_BUYER_ID, ResponseCode.NOT_IN_CURRENT_UNIT,
    }
    assert not sr.response_code_retried(ResponseCode.SYSTEM_BUSY)
    assert not sr.response_code_retried(ResponseCode.MESSAGE_ILLEGAL)
    assert not sr.response_code_retried(ResponseCode.SYSTEM_ERROR, ASYNC)
    # 4.9.2+: addRetryResponseCode extends the set.
    assert sr.response_code_retried(ResponseCode.SYSTEM_BUSY, SYNC, DEFAULT_RETRY_RESPONSE_CODES | {2})


@given(
    st.integers(-5, 300).filter(lambda c: sr.send_status_of(c) is None),
    modes,
    st.frozensets(st.integers(0, 300), max_size=8),
)
def test_response_code_retried_property(code: int, mode: CommunicationMode, codes: frozenset[int]) -> None:
    assert sr.response_code_retried(code, mode, codes) == (mode is SYNC and code in codes)


def test_failures_retried_per_mode() -> None:
    assert sr.failure_retried(sr.Failure.REMOTING, SYNC)
    assert sr.failure_retried(sr.Failure.CLIENT, SYNC)
    assert not sr.failure_retried(sr.Failure.INTERRUPTED, SYNC)
    assert sr.failure_retried(sr.Failure.REMOTING, ASYNC)
    assert not sr.failure_retried(sr.Failure.CLIENT, ASYNC)
    assert sr.failure_retried(sr.Failure.INTERRUPTED, ASYNC, V4_9_3)
    assert not sr.failure_retried(sr.Failure.INTERRUPTED, ASYNC, V4_9_2)
    assert not any(sr.failure_retried(k, ONEWAY) for k in sr.ATTEMPT_FAILURES)


@given(st.sampled_from(sr.ATTEMPT_FAILURES), modes, profiles)
def test_failure_retried_property(kind: sr.Failure, mode: CommunicationMode, profile: VersionProfile) -> None:
    retried = sr.failure_retried(kind, mode, profile)
    if mode is ONEWAY:
        assert not retried
    if kind is sr.Failure.REMOTING and mode is not ONEWAY:
        assert retried
    if kind is sr.Failure.INTERRUPTED:
        assert retried == (mode is ASYNC and profile.at_least("4.9.3"))


@given(st.sampled_from(list(SendStatus)), modes, st.booleans())
def test_status_retried_property(status: SendStatus, mode: CommunicationMode, another: bool) -> None:
    assert sr.status_retried(status, mode, another) == (
        mode is SYNC and another and status is not SendStatus.SEND_OK
    )
    assert not sr.status_retried(status, mode)  # retryAnotherBrokerWhenNotStoreOK defaults to false


# ---------------------------------------------------------------------------------------------------------
# Latency fault tolerance (SEND-14 .. SEND-19).


def test_latency_table_of_seed_000() -> None:
    # seed 000 §latencyMax与notAvailableDuration对应表, and updateFaultItem's isolation = 30000 ms (seed 003).
    rows = [
        (15000, 600_000), (3000, 180_000), (2000, 120_000), (1000, 60_000), (550, 30_000), (100, 0), (50, 0),
    ]
    for latency, duration in rows:
        assert sr.not_available_duration(latency) == duration
    assert sr.not_available_duration(549) == 0
    assert sr.not_available_duration(14_999) == 180_000
    assert sr.not_available_duration(0) == 0
    assert sr.not_available_duration(10, isolation=True) == 600_000
    assert sr.not_available_duration(30_000) == 600_000


@given(latencies, latencies, st.booleans())
def test_not_available_duration_property(x: int, y: int, isolation: bool) -> None:
    dx, dy = sr.not_available_duration(x), sr.not_available_duration(y)
    assert dx in NOT_AVAILABLE_DURATION_MS
    if x <= y:
        assert dx <= dy  # avoidance never shrinks as latency grows
    reached = [d for m, d in zip(LATENCY_MAX_MS, NOT_AVAILABLE_DURATION_MS, strict=True) if x >= m]
    assert dx == (reached[-1] if reached else 0)
    if isolation:
        assert sr.not_available_duration(x, True) == max(NOT_AVAILABLE_DURATION_MS)


def test_availability_of_upstream_tests() -> None:
    # LatencyFaultToleranceImplTest: updateFaultItem(A, 3000, 50), unavailable now, available 70 ms later.
    table = sr.record_fault((), A, 3000, 1_000, isolation=False, enabled=True)
    assert table == (sr.FaultItem(A, 3000, 1_000 + 180_000),)
    faults = (sr.FaultItem(A, 3000, 1_050),)
    assert not sr.broker_available(faults, A, 1_000)
    assert sr.broker_available(faults, B, 1_000)
    assert sr.broker_available(faults, A, 1_050)  # now - start >= 0
    assert sr.broker_available(faults, A, 1_070)


@given(fault_tables(), brokers, st.integers(0, 20_000), st.integers(0, 20_000))
def test_broker_available_property(faults: sr.FaultTable, broker: str, now: int, later: int) -> None:
    if sr.broker_available(faults, broker, now):
        assert sr.broker_available(faults, broker, now + later)
    if all(i.broker_name != broker for i in faults):
        assert sr.broker_available(faults, broker, now)


@given(fault_tables(), brokers, latencies, st.integers(0, 10**6), st.booleans(), st.booleans())
def test_record_fault_property(
    faults: sr.FaultTable, broker: str, latency: int, now: int, isolation: bool, enabled: bool
) -> None:
    after = sr.record_fault(faults, broker, latency, now, isolation, enabled)
    if not enabled:
        assert after == faults
        return
    assert after == sr.fault_table(after)
    mine = [i for i in after if i.broker_name == broker]
    assert mine == [sr.FaultItem(broker, latency, now + sr.not_available_duration(latency, isolation))]
    assert {i for i in after if i.broker_name != broker} == {i for i in faults if i.broker_name != broker}


def test_record_fault_is_off_by_default() -> None:
    assert sr.record_fault((), A, 5000, 0, isolation=True) == ()


def test_counter_versions() -> None:
    # 4.9.4+ masks, 4.9.0-4.9.3 keeps Math.abs(Integer.MIN_VALUE) negative, 4.3.1 clamps at 0.
    assert sr.next_index(5, V4_9_8) == (6, 6)
    assert sr.next_index(INT_MAX, V4_9_8) == (INT_MIN, 0)
    assert sr.next_index(INT_MAX, V4_9_3) == (INT_MIN, INT_MIN)
    assert sr.next_index(INT_MIN, V4_9_3) == (INT_MIN + 1, INT_MAX)
    assert sr.next_index(INT_MAX, V4_3_1) == (0, 0)
    assert sr.next_index(-7, V4_9_8) == (-6, 2**31 - 6)


@given(java_ints, profiles)
def test_next_index_property(counter: int, profile: VersionProfile) -> None:
    stored, value = sr.next_index(counter, profile)
    assert INT_MIN <= stored <= INT_MAX
    if profile.at_least("4.9.0"):
        assert stored == (counter + 1 if counter < INT_MAX else INT_MIN)
    if profile.at_least("4.9.4"):
        assert value == stored % 2**31
    elif profile.at_least("4.9.0"):
        assert value == (abs(stored) if stored != INT_MIN else INT_MIN)
    else:
        assert value == stored >= 0
    if 0 <= counter < INT_MAX:
        assert value == counter + 1


def test_plain_round_robin_avoids_last_broker() -> None:
    # counter 0: the next value is 1, so plain round robin takes position 1.
    assert sr.select_queue_plain(QUEUES, 0) == (A1, 1)
    # Avoiding broker-a: 4.9.x calls the counter per probe (A1, then B0); 4.3.1 calls it once.
    assert sr.select_queue_plain(QUEUES, 0, A, V4_9_8) == (B0, 2)
    assert sr.select_queue_plain(QUEUES, 0, A, V4_3_1) == (B0, 1)
    assert sr.select_queue_plain(QUEUES, 2, B, V4_9_8) == (A0, 4)
    # Every queue on the last broker: N probes, then one more plain round robin.
    only_a = (A0, A1)
    assert sr.select_queue_plain(only_a, 0, A, V4_9_8) == (A1, 3)
    assert sr.select_queue_plain(only_a, 0, A, V4_3_1) == (A0, 2)


@given(queue_lists(), small_counters, st.one_of(st.none(), brokers), profiles)
def test_select_queue_plain_property(
    queues: tuple[MessageQueue, ...], counter: int, last: str | None, profile: VersionProfile
) -> None:
    queue, after = sr.select_queue_plain(queues, counter, last, profile)
    assert queue in queues
    n = len(queues)
    if last is None:
        assert (queue, after) == (queues[(counter + 1) % n], counter + 1)
        return
    probes = [queues[(counter + k) % n] for k in range(1, n + 1)]
    others = [q for q in probes if q.broker_name != last]
    if others:
        assert queue == others[0]
        step = probes.index(others[0]) + 1
        assert after == (counter + step if profile.at_least("4.9.0") else counter + 1)
    else:
        assert after == (counter + n + 1 if profile.at_least("4.9.0") else counter + 2)


def test_pick_one_at_least_of_upstream_tests() -> None:
    # LatencyFaultToleranceImplTest.testPickOneAtLeast: A (1000 ms) then B (1001 ms), both avoided: A.
    one = sr.fault_table([sr.FaultItem(A, 1000, 3000)])
    assert sr.pick_one_at_least(one, 0, 0) == sr.Pick(frozenset({A}), 0)
    two = sr.fault_table([sr.FaultItem(A, 1000, 3000), sr.FaultItem(B, 1001, 3000)])
    assert sr.pick_one_at_least(two, 0, 0) == sr.Pick(frozenset({A}), 1)
    # Available first, whatever the latency.
    assert sr.pick_one_at_least(two, 3000, 7).candidates == {A}
    mixed = sr.fault_table([sr.FaultItem(A, 1000, 9000), sr.FaultItem(B, 5000, 0)])
    assert sr.pick_one_at_least(mixed, 10, 0).candidates == {B}
    # A tie has no set order: either broker.
    tie = sr.fault_table([sr.FaultItem(A, 3000, 600_000), sr.FaultItem(B, 3000, 600_000)])
    assert sr.pick_one_at_least(tie, 0, 0).candidates == {A, B}
    # Four items: position next % 2 among the better half.
    four = sr.fault_table([sr.FaultItem(n, 100 * k, 0) for k, n in enumerate((A, B, C, "broker-d"))])
    assert sr.pick_one_at_least(four, 0, 0).candidates == {B}
    assert sr.pick_one_at_least(four, 0, 1).candidates == {A}
    assert sr.pick_one_at_least((), 0, 0) == sr.Pick(frozenset(), 0)


def test_pick_one_at_least_negative_position_before_4_9_4() -> None:
    four = sr.fault_table([sr.FaultItem(n, 100 * k, 0) for k, n in enumerate((A, B, C, "broker-d"))])
    # At Integer.MIN_VALUE, 4.9.0-4.9.3 return it negative: -2^31 % 3 == -2 in Java, an invalid position
    # (Java throws and the selector falls back to round robin), while -2^31 % 2 == 0 is harmless.
    six = sr.fault_table([sr.FaultItem(f"b{k}", k, 0) for k in range(6)])
    assert sr.pick_one_at_least(six, 0, INT_MAX, V4_9_3) == sr.Pick(frozenset(), INT_MIN)
    assert sr.pick_one_at_least(six, 0, INT_MAX, V4_9_8).candidates == {"b0"}
    assert sr.pick_one_at_least(four, 0, INT_MAX, V4_9_3).candidates == {A}


@given(fault_tables(), st.integers(9_000, 11_000), small_counters, profiles)
def test_pick_one_at_least_property(
    faults: sr.FaultTable, now: int, worst: int, profile: VersionProfile
) -> None:
    pick = sr.pick_one_at_least(faults, now, worst, profile)
    if not faults:
        assert pick == sr.Pick(frozenset(), worst)
        return

    def key(i: sr.FaultItem) -> tuple[bool, int, int]:
        return (not sr.broker_available(faults, i.broker_name, now), i.latency_ms, i.start_ms)

    ordered = sorted(faults, key=key)
    half = len(faults) // 2
    assert pick.worst_counter == (worst if half == 0 else worst + 1)
    position = 0 if half == 0 else (worst + 1) % half
    assert pick.candidates == {i.broker_name for i in faults if key(i) == key(ordered[position])}


def test_queue_count_for_fallback_versions() -> None:
    route = (sr.QueueData(A, 4, PERM_READ), sr.QueueData(A, 2, DEFAULT_PERM), sr.QueueData(B, 8))
    assert sr.queue_count_for_fallback(route, A, V4_9_8) == 2  # writable queue data only
    assert sr.queue_count_for_fallback(route, A, V4_9_7) == 4  # the first of the broker, any permission
    assert sr.queue_count_for_fallback(route, B) == 8
    assert sr.queue_count_for_fallback(route, C) == -1


@given(routes(), brokers, profiles)
def test_queue_count_for_fallback_property(
    route: tuple[sr.QueueData, ...], broker: str, profile: VersionProfile
) -> None:
    count = sr.queue_count_for_fallback(route, broker, profile)
    eligible = [
        d for d in route
        if d.broker_name == broker and (not profile.at_least("4.9.8") or d.perm & PERM_WRITE)
    ]
    assert count == (eligible[0].write_queue_nums if eligible else -1)


def test_latency_selection_examples() -> None:
    avoided_a = sr.fault_table([sr.FaultItem(A, 3000, 180_000)])
    # Probes from index 1: A1 is avoided, B0 is taken; one counter call.
    assert sr.select_queue_latency(QUEUES, ROUTE, avoided_a, 0, 0, 0) == {
        sr.Selection(B0, 1, 0, QUEUES, avoided_a)
    }
    # 4.9.x ignores the last broker; 4.3.1 takes an available queue only on the last broker, so with broker-a
    # avoided a retry after broker-a falls back to the fault table, which picks broker-a itself.
    assert {s.queue for s in sr.select_queue_latency(QUEUES, ROUTE, avoided_a, 0, 0, 0, B)} == {B0}
    old = sr.select_queue_latency(QUEUES, ROUTE, avoided_a, 0, 0, 0, A, V4_3_1)
    assert {s.queue.broker_name for s in old} == {A}


def test_latency_fallback_and_old_queue_list_rewrite() -> None:
    both = sr.fault_table([sr.FaultItem(A, 1000, 3000), sr.FaultItem(B, 2000, 63_000)])
    # Nothing available: pick broker-a (lower latency); plain round robin (next 2: B0), then id next % 2 = 1.
    (new,) = sr.select_queue_latency(QUEUES, ROUTE, both, 0, 0, 0, None, V4_9_8)
    assert new == sr.Selection(mq(A, 1), 3, 1, QUEUES, both)
    (old,) = sr.select_queue_latency(QUEUES, ROUTE, both, 0, 0, 0, None, V4_9_7)
    assert old.queue == mq(A, 1)
    assert old.queues == (A0, A1, mq(A, 1), B1)  # the round-robin queue B0 was rewritten in place
    # Once broker-a's window ends it is taken directly.
    assert {s.queue for s in sr.select_queue_latency(QUEUES, ROUTE, both, 3000, 0, 0)} == {A1}


def test_latency_fallback_tie_and_removal() -> None:
    tie = sr.fault_table([sr.FaultItem(A, 3000, 600_000), sr.FaultItem(B, 3000, 600_000)])
    picks = sr.select_queue_latency(QUEUES, ROUTE, tie, 0, 0, 0)
    assert {s.queue for s in picks} == {mq(A, 1), mq(B, 1)}
    gone = sr.fault_table([*tie, sr.FaultItem("broker-gone", 0, 0)])
    (removed,) = sr.select_queue_latency(QUEUES, ROUTE, gone, 0, 0, 0)
    assert removed.faults == tie and removed.queue == B0 and removed.counter == 2


@given(queue_lists(), fault_tables(), st.integers(9_000, 11_000), small_counters, small_counters,
       st.one_of(st.none(), brokers), profiles)
def test_select_queue_latency_property(
    queues: tuple[MessageQueue, ...],
    faults: sr.FaultTable,
    now: int,
    counter: int,
    worst: int,
    last: str | None,
    profile: VersionProfile,
) -> None:
    route = tuple(sr.QueueData(b, sum(q.broker_name == b for q in queues)) for b in (A, B, C))
    results = sr.select_queue_latency(queues, route, faults, now, counter, worst, last, profile)
    assert results
    n = len(queues)
    probes = [queues[(counter + k) % n] for k in range(1, n + 1)]
    eligible = [
        q for q in probes
        if sr.broker_available(faults, q.broker_name, now)
        and (profile.at_least("4.9.0") or last is None or q.broker_name == last)
    ]
    if eligible:
        assert results == {sr.Selection(eligible[0], counter + 1, worst, queues, faults)}
        return
    pick = sr.pick_one_at_least(faults, now, worst, profile)
    for s in results:
        assert s.worst_counter == pick.worst_counter
        assert s.queue.broker_name in pick.candidates or s.queue in queues
        if profile.at_least("4.9.8"):
            assert s.queues == queues
        else:
            assert len(s.queues) == n and sum(a != b for a, b in zip(s.queues, queues, strict=True)) <= 1
        assert set(s.faults) <= set(faults)


def test_publish_queues() -> None:
    route = (sr.QueueData(B, 2), sr.QueueData(A, 1), sr.QueueData(C, 3, PERM_READ), sr.QueueData("d", 2))
    assert sr.publish_queues(TOPIC, route, frozenset({A, B, C})) == (mq(A, 0), mq(B, 0), mq(B, 1))
    assert sr.publish_queues(TOPIC, route, frozenset(), "broker-z:2;broker-y:1") == (
        mq("broker-z", 0), mq("broker-z", 1), mq("broker-y", 0),
    )


@given(routes(), st.frozensets(brokers))
def test_publish_queues_property(route: tuple[sr.QueueData, ...], masters: frozenset[str]) -> None:
    queues = sr.publish_queues(TOPIC, route, masters)
    expected = sum(d.write_queue_nums for d in route if d.perm & PERM_WRITE and d.broker_name in masters)
    assert len(queues) == expected
    assert list(queues) == sorted(queues)  # MessageQueue order: broker name, then queue id
    assert all(q.broker_name in masters for q in queues)


# ---------------------------------------------------------------------------------------------------------
# The state machine.


def start(mode: CommunicationMode, enabled: bool = False, faults: sr.FaultTable = (), counter: int = 0,
          profile: VersionProfile = V4_9_8, **config: object) -> sr.SendState:
    cfg = sr.Config(mode, enabled, queue_datas=ROUTE, profile=profile, **config)  # type: ignore[arg-type]
    return sr.SendState(cfg, QUEUES, faults, counter, counter)


def run(state: sr.SendState, *actions: sr.Action) -> sr.SendState:
    for action in actions:
        assert sr.enabled(state, action), f"{action} not enabled in {state}"
        state = sr.step(state, action)
    return state


def test_sync_retries_on_the_other_broker_then_gives_up() -> None:
    s = run(start(SYNC), sr.SelectQueue(A1), sr.AttemptFailed(100, sr.Failure.REMOTING))
    assert not s.done and s.last == A1
    assert [a.queue for a in (sr.SelectQueue(q) for q in QUEUES) if sr.enabled(s, a)] == [B0]
    s = run(s, sr.SelectQueue(B0), sr.BrokerErrorResponse(100, ResponseCode.SYSTEM_ERROR))
    s = run(s, sr.SelectQueue(A0), sr.AttemptFailed(100, sr.Failure.CLIENT))
    assert s.outcome == sr.Outcome(sr.OutcomeKind.FAILED, failure=sr.Failure.CLIENT, exhausted=True)
    assert s.attempts == 3
    assert not any(sr.enabled(s, sr.SelectQueue(q)) for q in QUEUES)


def test_sync_non_retried_code_and_interruption_end_at_once() -> None:
    s = run(start(SYNC), sr.SelectQueue(A1), sr.BrokerErrorResponse(5, ResponseCode.SYSTEM_BUSY))
    busy = ResponseCode.SYSTEM_BUSY
    assert s.outcome == sr.Outcome(sr.OutcomeKind.FAILED, failure=sr.Failure.BROKER, code=busy)
    s = run(start(SYNC), sr.SelectQueue(A1), sr.AttemptFailed(5, sr.Failure.INTERRUPTED))
    assert s.outcome == sr.Outcome(sr.OutcomeKind.FAILED, failure=sr.Failure.INTERRUPTED)


def test_sync_budget_and_held_result() -> None:
    s = run(start(SYNC), sr.SelectQueue(A1), sr.AttemptFailed(3000, sr.Failure.REMOTING))
    s = run(s, sr.SelectQueue(B0))  # 3000 ms spent: still within the budget
    assert s.requests == 2
    s = run(s, sr.AttemptFailed(1, sr.Failure.REMOTING), sr.SelectQueue(A0))
    assert s.outcome == sr.Outcome(sr.OutcomeKind.FAILED, failure=sr.Failure.TIMEOUT) and s.requests == 2
    # retryAnotherBrokerWhenNotStoreOK keeps a non-OK result and returns it when the budget runs out.
    flush = SendStatus.FLUSH_DISK_TIMEOUT
    s = run(start(SYNC, retry_another=True), sr.SelectQueue(A1), sr.AttemptAnswered(3001, flush))
    assert not s.done and s.held is SendStatus.FLUSH_DISK_TIMEOUT
    s = run(s, sr.SelectQueue(B0))
    assert s.outcome == sr.Outcome(sr.OutcomeKind.SENT, status=SendStatus.FLUSH_DISK_TIMEOUT)
    # Without it the non-OK result is returned at once.
    s = run(start(SYNC), sr.SelectQueue(A1), sr.AttemptAnswered(1, SendStatus.SLAVE_NOT_AVAILABLE))
    assert s.outcome == sr.Outcome(sr.OutcomeKind.SENT, status=SendStatus.SLAVE_NOT_AVAILABLE)


def test_async_retry_keeps_queue_id_and_over_budget_versions() -> None:
    s = run(start(ASYNC), sr.SelectQueue(A1), sr.AttemptFailed(3001, sr.Failure.REMOTING))
    (retry,) = [q for q in QUEUES if sr.enabled(s, sr.SelectQueue(q))]
    assert retry == B0
    new = run(s, sr.SelectQueue(B0))
    # 4.9.3+: the over-budget retry counts as an attempt without a request, then the last one.
    assert not new.done and new.attempts == 2 and new.requests == 1 and new.last == mq(B, 1)
    new = run(new, sr.SelectQueue(A0))
    assert new.outcome == sr.Outcome(sr.OutcomeKind.FAILED, failure=sr.Failure.TIMEOUT, exhausted=True)
    old = run(start(ASYNC, profile=V4_9_2), sr.SelectQueue(A1), sr.AttemptFailed(3001, sr.Failure.REMOTING))
    old = run(old, sr.SelectQueue(B0))
    assert old.outcome == sr.Outcome(sr.OutcomeKind.FAILED, failure=sr.Failure.TIMEOUT) and old.attempts == 1
    within = run(
        start(ASYNC), sr.SelectQueue(A1), sr.AttemptFailed(10, sr.Failure.REMOTING), sr.SelectQueue(B0)
    )
    assert within.in_flight == mq(B, 1)  # SEND-8: the first request's queue id on the new broker
    answered = run(within, sr.AttemptAnswered(10, SendStatus.FLUSH_SLAVE_TIMEOUT))
    assert answered.outcome == sr.Outcome(sr.OutcomeKind.SENT, status=SendStatus.FLUSH_SLAVE_TIMEOUT)


def test_oneway_and_fault_items() -> None:
    s = run(start(ONEWAY, enabled=True), sr.SelectQueue(A1))
    assert not sr.enabled(s, sr.BrokerErrorResponse(1, ResponseCode.SYSTEM_ERROR))
    failed = run(s, sr.AttemptFailed(20, sr.Failure.REMOTING))
    assert failed.outcome == sr.Outcome(sr.OutcomeKind.FAILED, failure=sr.Failure.REMOTING, exhausted=True)
    assert failed.faults == (sr.FaultItem(A, 20, 20 + 600_000),)
    sent = run(s, sr.AttemptAnswered(600, None))
    assert sent.outcome == sr.Outcome(sr.OutcomeKind.SENT) and sent.faults == (sr.FaultItem(A, 600, 30_600),)
    # The next send avoids broker-a from the start and keeps the counter.
    nxt = run(failed, sr.NewSend())
    assert nxt.last is None and nxt.counter == failed.counter
    assert [q for q in QUEUES if sr.enabled(nxt, sr.SelectQueue(q))] == [B0]
    # Without sendLatencyFaultEnable nothing is recorded.
    plain = run(start(ONEWAY), sr.SelectQueue(A1), sr.AttemptFailed(20, sr.Failure.REMOTING), sr.NewSend())
    assert plain.faults == () and sr.enabled(plain, sr.SelectQueue(B0))


def test_async_dispatch_is_recorded_as_a_quick_call() -> None:
    s = run(start(ASYNC, enabled=True), sr.SelectQueue(A1))
    assert s.faults == (sr.FaultItem(A, 0, 0),)


def test_time_passes_only_between_sends() -> None:
    s = start(SYNC, enabled=True, faults=sr.fault_table([sr.FaultItem(A, 3000, 180_000)]))
    assert not sr.enabled(s, sr.TimePasses(1000))
    s = run(
        s, sr.SelectQueue(B0), sr.AttemptAnswered(1, SendStatus.SEND_OK), sr.TimePasses(180_000), sr.NewSend()
    )
    assert not sr.enabled(s, sr.TimePasses(1))
    assert sr.enabled(s, sr.SelectQueue(B0)) and sr.broker_available(s.faults, A, s.now_ms)
    with pytest.raises(TypeError):
        sr.step(s, object())  # type: ignore[arg-type]


def test_selections_are_the_selector_outcomes() -> None:
    s = start(SYNC, enabled=True, faults=sr.fault_table([sr.FaultItem(A, 3000, 9), sr.FaultItem(B, 3000, 9)]))
    assert {x.queue for x in sr.selections(s)} == {mq(A, 1), mq(B, 1)}
    assert not sr.enabled(attrs.evolve(s, in_flight=A0), sr.SelectQueue(mq(A, 1)))


# ---------------------------------------------------------------------------------------------------------
# Exploration.


@pytest.mark.slow  # the default model: `spec check` explores it (test_cli.test_full_check_passes)
def test_explore_default_model() -> None:
    result = explore(sr.model())
    assert result.ok, "\n".join(v.describe() for v in result.violations)
    assert result.complete and result.states > 10_000
    assert set(result.clauses) >= {"SEND-1", "SEND-2", "SEND-13", "SEND-14", "SEND-17", "SEND-21"}


@pytest.mark.parametrize("profile", [V4_3_1, V4_9_2, V4_9_3, V4_9_7])
def test_explore_older_profiles(profile: VersionProfile) -> None:
    result = explore(sr.model(profile=profile, max_sends=1, counters=(0,)))
    assert result.ok, "\n".join(v.describe() for v in result.violations)


# ---------------------------------------------------------------------------------------------------------
# Sensitivity: broken rules are caught.

SMALL = {"modes": (SYNC,), "max_sends": 1, "counters": (0,)}


def violated(module: object, **bounds: object) -> set[str]:
    """The clauses a mutant's exploration finds broken (a broken rule may make the space unbounded)."""
    result = explore(module.model(**bounds), max_states=20_000)  # type: ignore[attr-defined]
    return result.failed_clauses()


def test_mutant_retry_to_the_same_broker_is_caught() -> None:
    bad = mutant(sr, "return queue.broker_name != broker_name", "return queue.broker_name == broker_name")
    assert "SEND-13" in violated(bad, **SMALL)


def test_mutant_attempts_equal_retry_times_is_caught() -> None:
    bad = mutant(sr, "return 1 + retry_times_when_send_failed", "return retry_times_when_send_failed")
    assert {"SEND-1", "SEND-3"} & violated(bad, **SMALL)
    assert any(r.failed for r in crosshair_mutant(bad, "attempt_limit").results)


def test_mutant_latency_threshold_strict_is_caught() -> None:
    bad = mutant(sr, "if effective >= threshold:", "if effective > threshold:")
    assert any(r.failed for r in crosshair_mutant(bad, "not_available_duration").results)


def test_mutant_isolation_ignored_is_caught() -> None:
    bad = mutant(sr, "FAILED_CALL_LATENCY_MS if isolation else latency_ms", "latency_ms")
    assert any(r.failed for r in crosshair_mutant(bad, "not_available_duration").results)
    assert "SEND-14" in violated(bad, modes=(SYNC,), max_sends=1, counters=(0,))


def test_mutant_non_retried_code_retried_is_caught() -> None:
    bad = mutant(
        sr,
        "return mode is CommunicationMode.SYNC and code in retry_codes",
        "return mode is CommunicationMode.SYNC",
    )
    assert "SEND-4" in violated(bad, **SMALL)


def test_mutant_budget_off_by_one_is_caught() -> None:
    bad = mutant(sr, "return not timeout_ms < elapsed_ms", "return not timeout_ms <= elapsed_ms")
    assert "SEND-2" in violated(bad, **SMALL)


def test_mutant_latency_selection_ignoring_availability_is_caught() -> None:
    bad = mutant(
        sr,
        "if _available(faults, candidate.broker_name, now_ms) and (",
        "if (",
    )
    assert "SEND-17" in violated(bad, **SMALL)


def test_mutant_async_retry_new_queue_id_is_caught() -> None:
    bad = mutant(
        sr,
        "queue = MessageQueue(queue.topic, queue.broker_name, state.first_queue_id)",
        "queue = queue",
    )
    assert "SEND-8" in violated(bad, modes=(ASYNC,), max_sends=1, counters=(0,))


def test_mutant_recording_without_fault_tolerance_is_caught() -> None:
    bad = mutant(sr, "    if not enabled:\n        return faults\n", "")
    assert "SEND-14" in violated(bad, **SMALL)


def test_mutant_finished_send_selecting_again_is_caught() -> None:
    bad = mutant(sr, "return not state.done and state.in_flight is None", "return state.in_flight is None")
    assert "SEND-21" in violated(bad, **SMALL)


# --- SEND-24: the producer's own checks (Validators.checkMessage) ---------------------------------------------------


@pytest.mark.parametrize(
    ("topic", "body_len", "code", "text"),
    [
        (None, 1, -1, "The specified topic is blank"),
        (" \t", 1, -1, "The specified topic is blank"),
        ("a" * 128, 1, -1, "longer than topic max length 127"),
        ("Topic Test", 1, -1, "contains illegal characters"),
        ("Topic\n", 1, -1, "contains illegal characters"),       # a trailing newline is no whitespace to trim
        ("SCHEDULE_TOPIC_XXXX", 1, -1, "is forbidden"),
        (TOPIC, None, ResponseCode.MESSAGE_ILLEGAL, "body is null"),
        (TOPIC, 0, ResponseCode.MESSAGE_ILLEGAL, "length is zero"),
        (TOPIC, 4 * 1024 * 1024 + 1, ResponseCode.MESSAGE_ILLEGAL, "MAX: 4194304"),
    ],
)
def test_message_refusal_names_the_first_check_that_fails(
    topic: str | None, body_len: int | None, code: int, text: str
) -> None:
    """SEND-24: topic checks come before body checks; each names its code and reason."""
    refusal = sr.message_refusal(topic, body_len, 4 * 1024 * 1024)
    assert refusal is not None and refusal[0] == code and text in refusal[1]


def test_message_refusal_passes_a_legal_message_at_the_size_limit() -> None:
    """SEND-24: a body exactly maxMessageSize long and a 127-unit topic of legal characters are sent."""
    assert sr.message_refusal("a" * 127, 100, 100) is None
    assert sr.message_refusal("%RETRY%CG_a-b|c", 1, 100) is None
    assert sr.message_refusal("\u00a0", 1, 100) is not None     # a no-break space is no Java whitespace: illegal char


# ---------------------------------------------------------------------------------------------------------
# The client namespace (SEND-25, SEND-26).


@pytest.mark.parametrize(("namespace", "resource", "wrapped"), [
    ("ns", "T", "ns%T"),
    ("MQ_INST_1", "TopicTest", "MQ_INST_1%TopicTest"),
    ("ns", "%RETRY%CG", "%RETRY%ns%CG"),
    ("ns", "%DLQ%CG", "%DLQ%ns%CG"),
    ("ns", "ns%T", "ns%T"),  # already wrapped
    ("ns", "%RETRY%ns%CG", "%RETRY%ns%CG"),
    ("ns", "other%T", "ns%other%T"),  # another namespace's name is wrapped like any
    ("ns", "SCHEDULE_TOPIC_XXXX", "SCHEDULE_TOPIC_XXXX"),  # system topics and groups stay
    ("ns", "TBW102", "TBW102"),
    ("ns", "rmq_sys_x", "rmq_sys_x"),
    ("ns", "CID_RMQ_SYS_TRANS", "CID_RMQ_SYS_TRANS"),
    ("ns", "", ""),
    ("ns", None, None),
    ("", "T", "T"),
    (None, "T", "T"),
])
def test_wrap_namespace_examples(namespace: str | None, resource: str | None, wrapped: str | None) -> None:
    assert sr.wrap_namespace(namespace, resource) == wrapped


@pytest.mark.parametrize(("resource", "namespace", "plain"), [
    ("ns%T", "ns", "T"),
    ("%RETRY%ns%CG", "ns", "%RETRY%CG"),
    ("%DLQ%ns%CG", "ns", "%DLQ%CG"),
    ("T", "ns", "T"),
    ("other%T", "ns", "other%T"),  # another namespace stays
    ("%RETRY%other%CG", "ns", "%RETRY%other%CG"),
    ("ns%T", None, "ns%T"),
    ("ns%T", "", "ns%T"),
    ("", "ns", ""),
    (None, "ns", None),
    ("rmq_sys_%T", "rmq_sys_", "rmq_sys_%T"),  # reads as a system topic: left wrapped
    ("ns%a%b", "ns", "a%b"),  # up to the first separator only
])
def test_without_namespace_examples(resource: str | None, namespace: str | None, plain: str | None) -> None:
    assert sr.without_namespace(resource, namespace) == plain


@given(st.sampled_from(("ns", "MQ_INST_1", "a")),
       st.text(alphabet="%RETYDLQab_", max_size=12).filter(lambda t: not t.startswith("rmq_sys_")))
def test_namespace_round_trip_and_idempotence(namespace: str, resource: str) -> None:
    wrapped = sr.wrap_namespace(namespace, resource)
    assert sr.wrap_namespace(namespace, wrapped) == wrapped
    assert sr.without_namespace(wrapped, namespace) == resource or wrapped == resource


def test_wire_topic_and_result_topic_follow_the_namespace() -> None:
    plain = sr.Config(SYNC, False)
    inside = attrs.evolve(plain, namespace="ns1")
    assert sr.wire_topic(plain, TOPIC) == TOPIC
    assert sr.wire_topic(inside, TOPIC) == "ns1%" + TOPIC
    assert sr.wire_topic(inside, "SCHEDULE_TOPIC_XXXX") == "SCHEDULE_TOPIC_XXXX"
    queue = MessageQueue("ns1%" + TOPIC, A, 0)
    state = sr.SendState(inside, (queue,), (), 0, 0)
    assert sr.result_topic(state) is None
    sent = sr.step(state, sr.SelectQueue(queue))
    assert sent.in_flight == queue  # the request carries the wrapped topic
    answered = sr.step(sent, sr.AttemptAnswered(1, SendStatus.SEND_OK))
    assert sr.result_topic(answered) == TOPIC
    assert sr.result_topic(attrs.evolve(answered, config=plain)) == "ns1%" + TOPIC


def test_the_checks_see_the_wrapped_topic() -> None:
    """SEND-24 under SEND-26: a blank topic is no longer blank once wrapped, and the wrapped length counts."""
    inside = sr.Config(SYNC, False, namespace="ns1")
    state = sr.SendState(inside, QUEUES, (), 0, 0, message=sr.MessageShape(" ", 1))
    reason = sr.refusal(state)
    assert reason is not None and reason[1].startswith("The specified topic[ns1% ] contains illegal characters")
    assert sr.refusal(attrs.evolve(state, config=attrs.evolve(inside, namespace=None)))[1] == (  # type: ignore[index]
        "The specified topic is blank")
    long_topic = sr.MessageShape("a" * 124, 1)
    assert sr.refusal(attrs.evolve(state, message=long_topic, config=attrs.evolve(inside, namespace=None))) is None
    assert sr.refusal(attrs.evolve(state, message=long_topic)) is not None


# ---------------------------------------------------------------------------------------------------------
# Sends to a chosen queue (SEND-27), the hash selector (SEND-28), batches (SEND-29).


def test_direct_send_refusal_examples() -> None:
    assert sr.direct_send_refusal("T", "T", False, False, None) is None
    assert sr.direct_send_refusal("T", "U", False, False, None) == (-1, sr.TOPIC_NOT_EQUAL)
    assert sr.direct_send_refusal("T", "U", True, False, None) is None  # a selector's queue is not compared
    assert sr.direct_send_refusal("T", None, True, False, None) == (-1, sr.SELECTOR_NULL)
    assert sr.direct_send_refusal("T", None, True, False, "ns") == (-1, sr.SELECTOR_THREW)  # queueWithNamespace(null)
    assert sr.direct_send_refusal("T", None, True, False, "") == (-1, sr.SELECTOR_NULL)
    assert sr.direct_send_refusal("T", "T", True, True, None) == (-1, sr.SELECTOR_THREW)


@given(st.integers(1, 64), java_ints)
def test_hash_selection_property(count: int, hash_code: int) -> None:
    position = sr.hash_selection(count, hash_code)
    assert 0 <= position < count
    assert position == abs(int(hash_code / count) * count - hash_code)


def test_hash_selection_examples() -> None:
    assert sr.hash_selection(4, 7) == 3
    assert sr.hash_selection(4, -7) == 3  # Java: -7 % 4 == -3
    assert sr.hash_selection(3, INT_MIN) == 2


def test_batch_refusal_examples() -> None:
    ok = sr.BatchEntry(TOPIC, 3, 10)
    failed = (-1, sr.BATCH_FAILED)
    assert sr.batch_refusal((ok, ok), 100) is None
    assert sr.batch_refusal((), 100) == failed
    assert sr.batch_refusal((ok, attrs.evolve(ok, delay_level=1)), 100) == failed
    assert sr.batch_refusal((attrs.evolve(ok, topic="%RETRY%G"),), 100) == failed
    assert sr.batch_refusal((ok, attrs.evolve(ok, topic="Other")), 100) == failed
    assert sr.batch_refusal((ok, attrs.evolve(ok, wait_store_msg_ok=False)), 100) == failed
    assert sr.batch_refusal((ok, attrs.evolve(ok, body_len=0)), 100) == failed
    assert sr.batch_refusal((attrs.evolve(ok, topic="a b"),), 100) == failed
    assert sr.batch_body_len((ok, ok)) == 2 * (20 + 3 + 2 + 10)


def test_batch_is_checked_as_one_message_of_its_encoded_body() -> None:
    """SEND-29: a batch the MessageBatch accepts is checked again (SEND-24) by its encoded length."""
    entries = (sr.BatchEntry(TOPIC, 3, 10), sr.BatchEntry(TOPIC, 3, 10))
    state = attrs.evolve(_state(SYNC), message=sr.MessageShape(TOPIC, None, entries))
    assert sr.refusal(state) is None
    small = attrs.evolve(state, config=attrs.evolve(state.config, max_message_size=64))
    assert sr.refusal(small) == (int(ResponseCode.MESSAGE_ILLEGAL), "the message body size over max value, MAX: 64")


def _state(mode: CommunicationMode, target: sr.Target | None = None, fault: bool = True) -> sr.SendState:
    return sr.SendState(sr.Config(mode, fault, queue_datas=ROUTE), QUEUES, (), 0, 0, target=target)


def test_send_to_a_queue_makes_one_attempt_and_records_nothing() -> None:
    """SEND-27: SYNC to a chosen queue: one attempt there, its failure as is, no fault item, counters untouched."""
    state = _state(SYNC, sr.Target(B1))
    assert sr.selections(state) == frozenset({sr.Selection(B1, 0, 0, QUEUES, ())})
    state = sr.step(state, sr.SelectQueue(B1))
    assert state.counter == 0 and state.limit == 1
    failed = sr.step(state, sr.AttemptFailed(10, sr.Failure.REMOTING))
    assert failed.outcome == sr.Outcome(sr.OutcomeKind.FAILED, failure=sr.Failure.REMOTING) and failed.faults == ()
    error = sr.step(state, sr.BrokerErrorResponse(10, int(ResponseCode.SYSTEM_ERROR)))
    assert error.outcome.failure is sr.Failure.BROKER and not error.outcome.exhausted
    not_ok = sr.step(attrs.evolve(state, config=attrs.evolve(state.config, retry_another=True)),
                     sr.AttemptAnswered(10, SendStatus.FLUSH_DISK_TIMEOUT))
    assert not_ok.outcome.status is SendStatus.FLUSH_DISK_TIMEOUT


def test_async_send_to_a_queue_retries_on_its_broker() -> None:
    """SEND-27: ASYNC to a chosen queue: the callback retries on the same queue, no dispatch recorded."""
    state = sr.step(_state(ASYNC, sr.Target(A1)), sr.SelectQueue(A1))
    assert state.faults == ()
    state = sr.step(state, sr.AttemptFailed(10, sr.Failure.REMOTING))
    assert not state.done and sr.selections(state) == frozenset({sr.Selection(A1, 0, 0, QUEUES, state.faults)})
    assert state.faults  # the callback's failure is recorded (sendMessageAsync)


def test_send_to_a_queue_refusals_and_no_route() -> None:
    other = MessageQueue("Other", A, 0)
    shape = sr.MessageShape(TOPIC, 3)
    state = attrs.evolve(_state(SYNC, sr.Target(other)), message=shape)
    assert sr.refusal(state) == (-1, sr.TOPIC_NOT_EQUAL)
    assert sr.enabled(state, sr.MessageRefused())
    # send(msg, mq) looks no route up; a selector's send does.
    no_route = attrs.evolve(_state(SYNC, sr.Target(A0)), queues=())
    assert not sr.enabled(no_route, sr.NoRoute()) and sr.enabled(no_route, sr.SelectQueue(A0))
    selector = attrs.evolve(_state(SYNC, sr.Target(None, by_selector=True)), queues=())
    assert sr.enabled(selector, sr.NoRoute()) and sr.refusal(selector) is None
    null = _state(SYNC, sr.Target(None, by_selector=True))
    assert sr.refusal(null) == (-1, sr.SELECTOR_NULL)
