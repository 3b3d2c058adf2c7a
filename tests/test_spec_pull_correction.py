"""Pull offset correction (PULL): the oracles, the worked examples, the state machine and its sensitivity."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutation import crosshair_mutant, mutant

from rocketspec.spec import pull_correction as pc
from rocketspec.spec.explorer import explore
from rocketspec.spec.protocol import (
    BROKER_SUSPEND_MAX_TIME_MS,
    CONSUME_QUEUE_FILE_ENTRIES,
    LONG_POLLING_CHECK_INTERVAL_MS,
    MASTER_ID,
    MAX_TRANSFER_BYTES_ON_MESSAGE_IN_DISK,
    MAX_TRANSFER_BYTES_ON_MESSAGE_IN_MEMORY,
    MAX_TRANSFER_COUNT_ON_MESSAGE_IN_DISK,
    MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY,
    OFFSET_ILLEGAL_REMOVE_DELAY_MS,
    PULL_BATCH_SIZE,
    PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL,
    PULL_TIME_DELAY_MS_WHEN_EXCEPTION,
    SHORT_POLLING_TIME_MS,
    WHICH_BROKER_WHEN_CONSUME_SLOWLY,
    GetMessageStatus,
    PullStatus,
    ResponseCode,
)
from rocketspec.spec.versions import V4_9_3, V4_9_8, VersionProfile

G = GetMessageStatus
RC = ResponseCode
V4_9_0 = VersionProfile.of("4.9.0")
V4_9_4 = VersionProfile.of("4.9.4")
V4_9_5 = VersionProfile.of("4.9.5")
PROFILES = (V4_9_0, V4_9_3, V4_9_4, V4_9_5, V4_9_8)

profiles = st.sampled_from(PROFILES)
offsets = st.integers(0, 10**6)
roles = st.sampled_from(((False, False), (True, False), (True, True)))  # (is_slave, offset_check_in_slave)
gone = st.sampled_from((pc.CqEntry.GONE_MATCH, pc.CqEntry.GONE_NO_MATCH))
present = st.sampled_from((pc.CqEntry.MATCH, pc.CqEntry.NO_MATCH))


@st.composite
def scans(draw: st.DrawFn) -> tuple[pc.CqEntry, ...]:
    """Consume-queue entries as a scan meets them: gone entries first (deletion runs from the head)."""
    head = draw(st.lists(gone, max_size=8))
    tail = draw(st.lists(present, max_size=40))
    entries = tuple(head + tail)
    return entries if entries else (draw(present),)


def _plain_slave(role: tuple[bool, bool]) -> bool:
    return role[0] and not role[1]


# ----------------------------------------------------------------------------------------------- store decision


@given(st.integers(0, 10**6), st.integers(0, 10**6), roles)
def test_next_offset_correction(old: int, new: int, role: tuple[bool, bool]) -> None:
    got = pc.next_offset_correction(old, new, is_slave=role[0], offset_check_in_slave=role[1])
    assert got == (old if _plain_slave(role) else new)


@given(scans(), st.integers(1, 64), st.integers(1, 300_000), st.booleans())
def test_scan_queue_properties(
    entries: tuple[pc.CqEntry, ...], max_msg_nums: int, message_bytes: int, in_memory: bool
) -> None:
    out = pc.scan_queue(entries, max_msg_nums=max_msg_nums, message_bytes=message_bytes, in_memory=in_memory)
    scanned = entries[: out.entries_scanned]
    assert 1 <= out.entries_scanned <= len(entries)
    assert out.messages == scanned.count(pc.CqEntry.MATCH)
    assert (out.status is G.FOUND) == (out.messages > 0)
    count_limit = MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY if in_memory else MAX_TRANSFER_COUNT_ON_MESSAGE_IN_DISK
    byte_limit = MAX_TRANSFER_BYTES_ON_MESSAGE_IN_MEMORY if in_memory else MAX_TRANSFER_BYTES_ON_MESSAGE_IN_DISK
    assert out.messages <= max(1, min(max_msg_nums, count_limit))
    assert out.messages <= 1 or out.messages * message_bytes <= byte_limit
    if out.entries_scanned < len(entries):
        # Stopped early: the next entry was not examined because the batch was full.
        nxt = out.messages + 1
        assert out.messages >= max_msg_nums or nxt > count_limit or nxt * message_bytes > byte_limit
    if out.messages == 0:
        examined = [e for e in scanned]
        first_gone_read = next((i for i, e in enumerate(examined) if e is pc.CqEntry.GONE_MATCH), None)
        if first_gone_read is None:
            assert out.status is G.NO_MATCHED_MESSAGE
        else:
            # After the gone entry was read the rest of that removed file is skipped: only a later present
            # entry (filtered out) can name the scan again.
            later_present = any(e is pc.CqEntry.NO_MATCH for e in examined[first_gone_read + 1 :])
            assert out.status is (G.NO_MATCHED_MESSAGE if later_present else G.MESSAGE_WAS_REMOVING)


@given(st.integers(0, 10**6), st.integers(1, 200), st.integers(1, 64), st.integers(1, 50))
def test_full_batch_is_a_scan_of_matching_entries(offset: int, span: int, max_msg_nums: int, file_entries: int) -> None:
    max_offset = offset + span
    out = pc.full_batch(offset, max_offset, max_msg_nums=max_msg_nums, cq_file_entries=file_entries)
    in_buffer = min(max_offset, pc.roll_next_file(offset, file_entries)) - offset
    assert out == pc.scan_queue((pc.CqEntry.MATCH,) * in_buffer, max_msg_nums=max_msg_nums)


@given(offsets, offsets, offsets, st.booleans(), st.booleans(), roles, profiles, st.integers(1, 1000))
def test_bounds_decision_table(
    offset: int, a: int, b: int, has_queue: bool, readable: bool, role: tuple[bool, bool],
    profile: VersionProfile, file_entries: int,
) -> None:
    lo, hi = min(a, b), max(a, b)
    if not readable and lo <= offset < hi and offset // file_entries >= (hi - 1) // file_entries:
        readable = True  # only a consume-queue file that is not the last can be missing
    got = pc.bounds_decision(
        offset, lo, hi, has_queue=has_queue, entry_readable=readable, is_slave=role[0],
        offset_check_in_slave=role[1], cq_file_entries=file_entries, profile=profile,
    )

    def fix(new: int) -> int:
        return offset if _plain_slave(role) else new

    if not has_queue:
        expected = pc.StoreDecision(G.NO_MATCHED_LOGIC_QUEUE, fix(0))
    elif hi == 0:
        expected = pc.StoreDecision(G.NO_MESSAGE_IN_QUEUE, fix(0))
    elif offset < lo:
        expected = pc.StoreDecision(G.OFFSET_TOO_SMALL, fix(lo))
    elif offset == hi:
        expected = pc.StoreDecision(G.OFFSET_OVERFLOW_ONE, offset)
    elif offset > hi:
        old_rule = profile.release < (4, 9, 4) and lo == 0
        expected = pc.StoreDecision(G.OFFSET_OVERFLOW_BADLY, fix(0 if old_rule else hi))
    elif not readable:
        expected = pc.StoreDecision(G.OFFSET_FOUND_NULL, fix((offset // file_entries + 1) * file_entries))
    else:
        expected = None
    assert got == expected
    if got is not None and has_queue and not _plain_slave(role):
        assert lo <= got.next_begin_offset <= hi  # PULL-25


@given(st.integers(0, 500), st.integers(0, 500), st.integers(1, 500), scans(), roles, profiles)
def test_store_status_scans_forward(
    lo: int, offset_in: int, span: int, entries: tuple[pc.CqEntry, ...], role: tuple[bool, bool],
    profile: VersionProfile,
) -> None:
    hi = lo + span
    offset = lo + offset_in % span
    entries = entries[: hi - offset]
    scan = pc.scan_queue(entries)
    got = pc.store_status(offset, lo, hi, scan=scan, is_slave=role[0], offset_check_in_slave=role[1], profile=profile)
    # Scan progress is never corrected, on a slave either (PULL-8).
    assert got == pc.StoreDecision(scan.status, offset + scan.entries_scanned, scan.messages)
    assert lo < got.next_begin_offset <= hi


@given(offsets, offsets, offsets, roles, profiles)
def test_store_status_defaults_to_a_full_batch(
    offset: int, a: int, b: int, role: tuple[bool, bool], profile: VersionProfile
) -> None:
    lo, hi = min(a, b), max(a, b)
    got = pc.store_status(offset, lo, hi, is_slave=role[0], offset_check_in_slave=role[1], profile=profile)
    bounds = pc.bounds_decision(offset, lo, hi, is_slave=role[0], offset_check_in_slave=role[1], profile=profile)
    if bounds is not None:
        assert got == bounds
    else:
        assert got.status is G.FOUND
        assert got.messages == got.next_begin_offset - offset == min(hi - offset, PULL_BATCH_SIZE)


# ----------------------------------------------------------------------------------------------- broker answer


STATUS_CODE = {
    G.FOUND: RC.SUCCESS,
    G.MESSAGE_WAS_REMOVING: RC.PULL_RETRY_IMMEDIATELY,
    G.NO_MATCHED_MESSAGE: RC.PULL_RETRY_IMMEDIATELY,
    G.OFFSET_FOUND_NULL: RC.PULL_NOT_FOUND,
    G.OFFSET_OVERFLOW_ONE: RC.PULL_NOT_FOUND,
    G.OFFSET_OVERFLOW_BADLY: RC.PULL_OFFSET_MOVED,
    G.OFFSET_TOO_SMALL: RC.PULL_OFFSET_MOVED,
}


@given(
    st.sampled_from(list(G)), st.integers(0, 100), roles, st.booleans(), st.booleans(), st.booleans(),
    st.booleans(), st.booleans(),
)
def test_response_code(
    status: GetMessageStatus, requested: int, role: tuple[bool, bool], slave_read_enable: bool, suspend: bool,
    allow_suspend: bool, long_polling: bool, slow: bool,
) -> None:
    got = pc.response_code(
        status, requested_offset=requested, is_slave=role[0], offset_check_in_slave=role[1],
        slave_read_enable=slave_read_enable, suspend=suspend, broker_allow_suspend=allow_suspend,
        long_polling_enable=long_polling, suggest_pulling_from_slave=slow,
    )
    code = STATUS_CODE.get(status, RC.PULL_OFFSET_MOVED if requested != 0 else RC.PULL_NOT_FOUND)
    if code is RC.PULL_NOT_FOUND and suspend and allow_suspend:
        assert got.held and got.code is None
        assert got.hold_ms == (BROKER_SUSPEND_MAX_TIME_MS if long_polling else SHORT_POLLING_TIME_MS)
        return
    assert not got.held
    if code is RC.PULL_OFFSET_MOVED and _plain_slave(role):
        assert got == pc.BrokerAnswer(RC.PULL_RETRY_IMMEDIATELY, MASTER_ID)  # the group's brokerId, 0 by default
        return
    assert got.code is code
    assert got.offset_moved_event == (code is RC.PULL_OFFSET_MOVED)
    if slave_read_enable:
        assert got.suggest_broker_id == (WHICH_BROKER_WHEN_CONSUME_SLOWLY if slow else MASTER_ID)
    else:
        assert got.suggest_broker_id == MASTER_ID


def test_slave_read_enable_does_not_change_the_code() -> None:
    # The role switch sets PULL_RETRY_IMMEDIATELY on a slave without slaveReadEnable, then the status switch
    # overwrites it: only the suggested broker differs.
    for status in G:
        off = pc.response_code(status, requested_offset=3, is_slave=True, slave_read_enable=False, suspend=False)
        on = pc.response_code(status, requested_offset=3, is_slave=True, slave_read_enable=True, suspend=False)
        assert off.code is on.code
        assert off.code is not RC.PULL_RETRY_IMMEDIATELY or status in (
            G.NO_MATCHED_MESSAGE, G.MESSAGE_WAS_REMOVING, G.OFFSET_TOO_SMALL, G.OFFSET_OVERFLOW_BADLY,
            G.NO_MESSAGE_IN_QUEUE, G.NO_MATCHED_LOGIC_QUEUE,
        )
    found = pc.response_code(G.FOUND, requested_offset=3, is_slave=True, slave_read_enable=False)
    assert found == pc.BrokerAnswer(RC.SUCCESS, MASTER_ID)


def test_suggested_broker_on_a_slave_downgrade() -> None:
    got = pc.response_code(
        G.OFFSET_TOO_SMALL, requested_offset=1, is_slave=True, slave_read_enable=True, group_broker_id=3,
        suggest_pulling_from_slave=True,
    )
    assert got == pc.BrokerAnswer(RC.PULL_RETRY_IMMEDIATELY, 3)


CHECKS = (
    ("broker_readable", RC.NO_PERMISSION),
    ("group_exists", RC.SUBSCRIPTION_GROUP_NOT_EXIST),
    ("group_consume_enable", RC.NO_PERMISSION),
    ("topic_exists", RC.TOPIC_NOT_EXIST),
    ("topic_readable", RC.NO_PERMISSION),
)


@given(
    st.fixed_dictionaries({name: st.booleans() for name, _ in CHECKS}),
    st.integers(-2, 6), st.integers(0, 5), st.booleans(), st.booleans(), st.booleans(), st.booleans(),
    st.booleans(), st.booleans(), st.integers(0, 3), st.integers(0, 3), st.booleans(), st.booleans(),
    st.integers(0, 3), st.booleans(), st.booleans(),
)
def test_pull_precheck_first_failure_wins(
    flags: dict[str, bool], queue_id: int, read_queue_nums: int, sub_flag: bool, parses: bool,
    group_info: bool, broadcasting: bool, broadcast_ok: bool, sub_exists: bool, broker_ver: int, req_ver: int,
    tag: bool, filter_exists: bool, filter_ver: int, property_filter: bool, store_ok: bool,
) -> None:
    got = pc.pull_precheck(
        **flags, queue_id=queue_id, read_queue_nums=read_queue_nums, has_subscription_flag=sub_flag,
        subscription_parses=parses, group_info_exists=group_info, broadcasting=broadcasting,
        consume_broadcast_enable=broadcast_ok, subscription_exists=sub_exists, broker_sub_version=broker_ver,
        request_sub_version=req_ver, tag_expression=tag, filter_data_exists=filter_exists,
        filter_data_version=filter_ver, property_filter_enable=property_filter, store_available=store_ok,
    )
    failures = [code for name, code in CHECKS if not flags[name]]
    if not 0 <= queue_id < read_queue_nums:
        failures.append(RC.SYSTEM_ERROR)
    if sub_flag:
        if not parses:
            failures.append(RC.SUBSCRIPTION_PARSE_FAILED)
    else:
        failures += [RC.SUBSCRIPTION_NOT_EXIST] * (not group_info)
        failures += [RC.NO_PERMISSION] * (broadcasting and not broadcast_ok)
        failures += [RC.SUBSCRIPTION_NOT_EXIST] * (not sub_exists)
        failures += [RC.SUBSCRIPTION_NOT_LATEST] * (broker_ver < req_ver)
        if not tag:
            failures += [RC.FILTER_DATA_NOT_EXIST] * (not filter_exists)
            failures += [RC.FILTER_DATA_NOT_LATEST] * (filter_ver < req_ver)
    failures += [RC.SYSTEM_ERROR] * (not tag and not property_filter)
    failures += [RC.SYSTEM_ERROR] * (not store_ok)
    assert got == (failures[0] if failures else None)


@given(st.integers(0, 100), st.integers(0, 100), st.booleans(), st.booleans())
def test_held_request_outcome(max_offset: int, offset: int, matched: bool, timed_out: bool) -> None:
    got = pc.held_request_outcome(max_offset, offset, matched=matched, timed_out=timed_out)
    if max_offset > offset and matched:
        assert got is pc.HoldOutcome.WAKE
    else:
        assert got is (pc.HoldOutcome.TIMEOUT if timed_out else pc.HoldOutcome.KEEP)


@given(st.booleans(), st.booleans(), st.integers(0, 10_000))
def test_hold_wakeups(is_slave: bool, long_polling: bool, short_ms: int) -> None:
    assert pc.arrival_wakes_held(is_slave=is_slave, long_polling_enable=long_polling) == (
        long_polling and not is_slave
    )
    expected = LONG_POLLING_CHECK_INTERVAL_MS if long_polling else short_ms
    assert pc.hold_check_interval_ms(long_polling_enable=long_polling, short_polling_ms=short_ms) == expected


@given(st.booleans(), st.integers(-1, 100), st.booleans(), st.booleans())
def test_commit(clustering: bool, memory: int, allow_suspend: bool, is_slave: bool) -> None:
    flag = pc.commit_flag(clustering=clustering, memory_offset=memory)
    assert flag == (clustering and memory > 0)
    got = pc.broker_commits(broker_allow_suspend=allow_suspend, has_commit_flag=flag, is_slave=is_slave)
    assert got == (allow_suspend and flag and not is_slave)


# ----------------------------------------------------------------------------------------------- client


@given(st.sampled_from(list(RC)))
def test_pull_status(code: ResponseCode) -> None:
    expected = {
        RC.SUCCESS: PullStatus.FOUND,
        RC.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
        RC.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
        RC.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
    }.get(code)
    assert pc.pull_status(code) is expected


@given(
    st.sampled_from([*PullStatus, None]), offsets, st.booleans(), offsets, st.integers(0, 32),
    st.integers(0, 1000), st.booleans(), profiles,
)
def test_client_reaction(
    status: PullStatus | None, next_begin: int, empty: bool, request: int, found: int, interval: int,
    flow_control: bool, profile: VersionProfile,
) -> None:
    got = pc.client_reaction(
        status, next_begin, empty, request_offset=request, found_messages=found, pull_interval_ms=interval,
        flow_control=flow_control, profile=profile,
    )
    if status is PullStatus.FOUND:
        assert got == pc.Reaction(next_begin, enqueue=found > 0, repull_delay_ms=interval if found else 0)
    elif status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
        update = pc.OffsetUpdate(next_begin, increase_only=True) if empty else None
        assert got == pc.Reaction(next_begin, update=update, repull_delay_ms=0)
    elif status is PullStatus.OFFSET_ILLEGAL:
        assert got == pc.Reaction(
            next_begin, drop=True, fix=pc.OffsetUpdate(next_begin, increase_only=False), repull_delay_ms=None
        )
    else:
        fast = flow_control and profile.release >= (4, 9, 5)
        delay = PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL if fast else PULL_TIME_DELAY_MS_WHEN_EXCEPTION
        assert got == pc.Reaction(request, repull_delay_ms=delay)


@given(st.one_of(st.none(), st.integers(0, 100)), st.integers(0, 100), st.booleans())
def test_apply_offset_update(current: int | None, offset: int, increase_only: bool) -> None:
    got = pc.apply_offset_update(current, pc.OffsetUpdate(offset, increase_only))
    assert got == (offset if current is None or not increase_only else max(current, offset))


# ----------------------------------------------------------------------------------------------- worked examples


@pytest.mark.parametrize(
    ("offset", "lo", "hi", "status", "master_next"),
    [
        # REFERENCE.md §C, store getMessage table (4.9.8), and seed 001 §4.3.2 第四步.
        (5, 0, 0, G.NO_MESSAGE_IN_QUEUE, 0),
        (0, 0, 0, G.NO_MESSAGE_IN_QUEUE, 0),
        (3, 10, 20, G.OFFSET_TOO_SMALL, 10),
        (20, 10, 20, G.OFFSET_OVERFLOW_ONE, 20),
        (25, 10, 20, G.OFFSET_OVERFLOW_BADLY, 20),
        (25, 0, 20, G.OFFSET_OVERFLOW_BADLY, 20),
    ],
)
def test_reference_table(offset: int, lo: int, hi: int, status: GetMessageStatus, master_next: int) -> None:
    assert pc.store_status(offset, lo, hi) == pc.StoreDecision(status, master_next)
    # A slave without offsetCheckInSlave keeps the requested offset; with it, it corrects like a master.
    assert pc.store_status(offset, lo, hi, is_slave=True) == pc.StoreDecision(status, offset)
    with_check = pc.store_status(offset, lo, hi, is_slave=True, offset_check_in_slave=True)
    assert with_check == pc.StoreDecision(status, master_next)


def test_overflow_badly_changed_in_4_9_4() -> None:
    # Seed 001 §4.3.2 第四步 (4.9.0-4.9.3): min when the queue's min offset is 0, else max. ISSUE #4215 (4.9.4):
    # always max, so a consumer whose offset ran past a reset queue no longer re-consumes it from 0.
    for old in (V4_9_0, V4_9_3):
        assert pc.store_status(25, 0, 20, profile=old) == pc.StoreDecision(G.OFFSET_OVERFLOW_BADLY, 0)
        assert pc.store_status(25, 10, 20, profile=old) == pc.StoreDecision(G.OFFSET_OVERFLOW_BADLY, 20)
    for new in (V4_9_4, V4_9_8):
        assert pc.store_status(25, 0, 20, profile=new) == pc.StoreDecision(G.OFFSET_OVERFLOW_BADLY, 20)


def test_offset_found_null_rolls_to_the_next_file() -> None:
    got = pc.store_status(7, 0, 2 * CONSUME_QUEUE_FILE_ENTRIES, entry_readable=False)
    assert got == pc.StoreDecision(G.OFFSET_FOUND_NULL, CONSUME_QUEUE_FILE_ENTRIES)
    assert pc.response_code(got.status, requested_offset=7, suspend=False).code is RC.PULL_NOT_FOUND


def test_scan_examples() -> None:
    m, n, gm, gn = pc.CqEntry.MATCH, pc.CqEntry.NO_MATCH, pc.CqEntry.GONE_MATCH, pc.CqEntry.GONE_NO_MATCH
    # Seed 001 §4.3.2 第五步: up to 32 messages from the offset.
    assert pc.scan_queue((m,) * 40) == pc.ScanOutcome(G.FOUND, 32, 32)
    assert pc.scan_queue((m,) * 40, in_memory=False) == pc.ScanOutcome(G.FOUND, 8, 8)
    # The batch-full check comes before the filter: a filtered entry after a full batch is not counted.
    assert pc.scan_queue((n, n, m, n), max_msg_nums=1) == pc.ScanOutcome(G.FOUND, 3, 1)
    assert pc.scan_queue((n, m, m), max_msg_nums=1) == pc.ScanOutcome(G.FOUND, 2, 1)
    assert pc.scan_queue((n, n)) == pc.ScanOutcome(G.NO_MATCHED_MESSAGE, 2, 0)
    assert pc.scan_queue((gm, gm, gn)) == pc.ScanOutcome(G.MESSAGE_WAS_REMOVING, 3, 0)
    assert pc.scan_queue((gn, gm, n)) == pc.ScanOutcome(G.NO_MATCHED_MESSAGE, 3, 0)
    assert pc.scan_queue((gm, gm, m)) == pc.ScanOutcome(G.FOUND, 3, 1)
    # Byte limit: a 200 KiB message fills a batch by itself in memory (256 KiB).
    assert pc.scan_queue((m, m), message_bytes=200 * 1024) == pc.ScanOutcome(G.FOUND, 1, 1)
    # At least max(800, maxMsgNums) entries are looked at.
    assert pc.scan_queue((n,) * 900) == pc.ScanOutcome(G.NO_MATCHED_MESSAGE, 800, 0)


def test_seed_001_response_table() -> None:
    # Seed 001 §4.3.2 第八步 lists NO_MESSAGE_IN_QUEUE under both PULL_NOT_FOUND and PULL_OFFSET_MOVED: the
    # requested offset decides (0 → not found, else moved).
    assert pc.response_code(G.NO_MESSAGE_IN_QUEUE, requested_offset=0, suspend=False).code is RC.PULL_NOT_FOUND
    assert pc.response_code(G.NO_MESSAGE_IN_QUEUE, requested_offset=4).code is RC.PULL_OFFSET_MOVED
    assert pc.response_code(G.NO_MATCHED_LOGIC_QUEUE, requested_offset=4).code is RC.PULL_OFFSET_MOVED


def test_long_polling_example() -> None:
    # Seed 001 §4.3.4: a push consumer's PULL_NOT_FOUND is held 15 s (long polling) or 1 s (short polling);
    # the hold service checks every 5 s; a woken request is processed with brokerAllowSuspend = false.
    held = pc.response_code(G.OFFSET_OVERFLOW_ONE, requested_offset=9)
    assert held.held and held.hold_ms == BROKER_SUSPEND_MAX_TIME_MS
    short = pc.response_code(G.OFFSET_OVERFLOW_ONE, requested_offset=9, long_polling_enable=False)
    assert short.held and short.hold_ms == SHORT_POLLING_TIME_MS
    rerun = pc.response_code(G.OFFSET_OVERFLOW_ONE, requested_offset=9, broker_allow_suspend=False)
    assert rerun.code is RC.PULL_NOT_FOUND
    assert pc.hold_check_interval_ms(long_polling_enable=True) == LONG_POLLING_CHECK_INTERVAL_MS
    assert not pc.broker_commits(broker_allow_suspend=False, has_commit_flag=True, is_slave=False)


def test_offset_illegal_example() -> None:
    # Seed 001 §4.3.3: OFFSET_ILLEGAL drops the process queue, stores the broker's offset, persists and removes
    # the queue for the next rebalance. The seed says the store keeps the larger offset; the code (all 4.9.x)
    # passes increaseOnly = false, so a correction downwards (OFFSET_OVERFLOW_BADLY) is stored as is.
    moved = pc.response_code(G.OFFSET_OVERFLOW_BADLY, requested_offset=25)
    status = pc.pull_status(moved.code)  # type: ignore[arg-type]
    reaction = pc.client_reaction(status, 20, True, request_offset=25)
    assert reaction.drop and reaction.repull_delay_ms is None
    assert reaction.fix == pc.OffsetUpdate(20, increase_only=False)
    assert pc.apply_offset_update(25, reaction.fix) == 20
    assert OFFSET_ILLEGAL_REMOVE_DELAY_MS == 10_000


def test_consumer_walkthrough_after_queue_reset() -> None:
    """A consumer stored at 3 on a queue now holding [0, 1): OVERFLOW_BADLY → drop, fix to 1, rebalance at 1."""
    state = pc.PullState(pc.Config(max_messages=3), pc.Store(matches=(True,)), broker_offset=3)
    for action in (pc.Rebalance(),):
        assert pc.enabled(state, action)
        state = pc.step(state, action)
    assert state.pull_offset == 3 and state.memory_offset == 3
    answer = pc.decide(state, 3, True)
    assert (answer.status, answer.code, answer.next_offset) == (G.OFFSET_OVERFLOW_BADLY, RC.PULL_OFFSET_MOVED, 1)
    state = pc.step(state, pc.Pull(answer))
    assert state.broker_offset == 3  # the pull committed the memory offset 3 before the answer
    assert state.pq is not None and state.pq.dropped and state.fix == pc.OffsetUpdate(1, False)
    assert not pc.enabled(state, pc.Rebalance())
    state = pc.step(state, pc.DelayedFix())
    assert (state.broker_offset, state.pq, state.memory_offset) == (1, None, None)
    state = pc.step(state, pc.Rebalance())
    assert state.pull_offset == 1
    held = pc.decide(state, 1, True)
    assert held.code is None and held.status is G.OFFSET_OVERFLOW_ONE
    state = pc.step(state, pc.Pull(held))
    assert state.held == 1
    state = pc.step(state, pc.Append(True))
    rerun = pc.decide(state, 1, False)
    assert pc.enabled(state, pc.Wake(rerun))
    state = pc.step(state, pc.Wake(rerun))
    assert state.held is None and state.pq is not None and state.pq.cached == frozenset({1})
    assert state.pull_offset == 2
    # On 4.9.3 the same queue would have sent the consumer back to 0 (min == 0).
    old = attrs.evolve(state, config=pc.Config(profile=V4_9_3), pull_offset=3)
    assert pc.decide(old, 3, True).next_offset == 0


def test_enabled_rejects_an_answer_the_broker_would_not_give() -> None:
    state = pc.step(pc.PullState(pc.Config(), pc.Store(matches=(True, True)), broker_offset=0), pc.Rebalance())
    right = pc.decide(state, 0, True)
    assert pc.enabled(state, pc.Pull(right))
    assert not pc.enabled(state, pc.Pull(attrs.evolve(right, next_offset=right.next_offset + 1)))
    assert not pc.enabled(state, pc.Wake(right)) and not pc.enabled(state, pc.HoldTimeout(right))


# ----------------------------------------------------------------------------------------------- state machine


@pytest.mark.parametrize(
    "bounds",
    [
        {},
        {"profile": V4_9_3},
        {"is_slave": True},
        {"is_slave": True, "offset_check_in_slave": True},
        {"is_slave": True, "profile": V4_9_3},
        {"batch": 1, "cq_file_entries": 3},
    ],
)
def test_explore(bounds: dict[str, object]) -> None:
    result = explore(pc.model(**bounds))  # type: ignore[arg-type]
    assert result.complete and not result.violations, [v.describe() for v in result.violations]
    assert result.ok and result.states > 1000


def _violated(mod: object, **bounds: object) -> set[str]:
    result = explore(mod.model(**bounds))  # type: ignore[attr-defined]
    return {v.invariant for v in result.violations}


def test_mutant_too_small_corrected_to_zero() -> None:
    mod = mutant(pc, "GetMessageStatus.OFFSET_TOO_SMALL, corrected(min_offset))",
                 "GetMessageStatus.OFFSET_TOO_SMALL, corrected(0))")
    result = explore(mod.model())
    assert "OFFSET_TOO_SMALL corrects to min" in {v.invariant for v in result.violations}
    assert "PULL-3" in result.failed_clauses()


def test_mutant_too_small_corrected_to_max() -> None:
    mod = mutant(pc, "GetMessageStatus.OFFSET_TOO_SMALL, corrected(min_offset))",
                 "GetMessageStatus.OFFSET_TOO_SMALL, corrected(max_offset))")
    result = explore(mod.model())
    assert {"OFFSET_TOO_SMALL corrects to min", "no readable matching message is skipped"} <= {
        v.invariant for v in result.violations
    }
    assert {"PULL-3", "PULL-27"} <= result.failed_clauses()


def test_mutant_overflow_one_moved() -> None:
    mod = mutant(pc, "if status in (GetMessageStatus.OFFSET_FOUND_NULL, GetMessageStatus.OFFSET_OVERFLOW_ONE):",
                 "if status in (GetMessageStatus.OFFSET_FOUND_NULL,):")
    result = explore(mod.model())
    assert "PULL_OFFSET_MOVED only outside [min, max]" in {v.invariant for v in result.violations}
    assert "PULL-26" in result.failed_clauses()


def test_mutant_new_overflow_badly_rule_on_4_9_3() -> None:
    mod = mutant(pc, "if min_offset == 0 and profile < V4_9_4:",
                 'if min_offset == 0 and profile < VersionProfile.of("4.9.0"):')
    result = explore(mod.model(profile=V4_9_3))
    assert "OFFSET_OVERFLOW_BADLY correction per version" in {v.invariant for v in result.violations}
    assert "PULL-5" in result.failed_clauses()
    assert not explore(mod.model(profile=V4_9_8)).violations  # 4.9.8 unaffected


def test_mutant_old_overflow_badly_rule_on_4_9_8() -> None:
    mod = mutant(pc, "if min_offset == 0 and profile < V4_9_4:", "if min_offset == 0:")
    result = explore(mod.model(profile=V4_9_8))
    assert "PULL-5" in result.failed_clauses()


def test_mutant_offset_illegal_stored_increase_only() -> None:
    mod = mutant(pc, "drop=True, fix=OffsetUpdate(next_begin_offset, False)",
                 "drop=True, fix=OffsetUpdate(next_begin_offset, True)")
    result = explore(mod.model())
    assert "the fix stores the correction as is" in {v.invariant for v in result.violations}
    assert "PULL-22" in result.failed_clauses()


def test_mutant_held_request_answered_twice() -> None:
    mod = mutant(pc, "        case Wake(answer=a) | HoldTimeout(answer=a):\n            return _react(state, a)",
                 "        case Wake(answer=a) | HoldTimeout(answer=a):\n"
                 "            return attrs.evolve(_react(state, a), held=a.requested)")
    result = explore(mod.model())
    assert "PULL-14" in result.failed_clauses()


def test_mutant_scan_skips_an_entry() -> None:
    mod = mutant(pc, "return StoreDecision(outcome.status, offset + outcome.entries_scanned, outcome.messages)",
                 "return StoreDecision(outcome.status, offset + outcome.entries_scanned + 1, outcome.messages)")
    result = explore(mod.model())
    assert "no readable matching message is skipped" in {v.invariant for v in result.violations}
    assert "PULL-27" in result.failed_clauses()


def test_mutant_woken_request_commits() -> None:
    mod = mutant(pc, "        case Wake(answer=a) | HoldTimeout(answer=a):\n            return _react(state, a)",
                 "        case Wake(answer=a) | HoldTimeout(answer=a):\n"
                 "            return _react(attrs.evolve(state, broker_offset=state.memory_offset or 0), a)")
    result = explore(mod.model())
    assert "only a first processing on a master commits" in {v.invariant for v in result.violations}
    assert "PULL-18" in result.failed_clauses()


def test_mutant_slave_commits() -> None:
    mod = mutant(pc, "if broker_commits(broker_allow_suspend=True, has_commit_flag=flag, is_slave=cfg.is_slave):",
                 "if broker_commits(broker_allow_suspend=True, has_commit_flag=flag, is_slave=False):")
    assert not explore(mod.model()).violations
    assert "PULL-18" in explore(mod.model(is_slave=True)).failed_clauses()


def test_mutant_rebalance_ignores_stored_offset() -> None:
    mod = mutant(pc, "            offset = state.broker_offset\n", "            offset = 0\n")
    assert "PULL-24" in explore(mod.model()).failed_clauses()


def test_crosshair_mutant_slave_keeps_offset_moved() -> None:
    mod = mutant(pc, "        if is_slave and not offset_check_in_slave:\n            return BrokerAnswer(",
                 "        if False:\n            return BrokerAnswer(")
    run = crosshair_mutant(mod, "response_code", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr


def test_crosshair_mutant_increase_only_fix() -> None:
    mod = mutant(pc, "drop=True, fix=OffsetUpdate(next_begin_offset, False)",
                 "drop=True, fix=OffsetUpdate(next_begin_offset, True)")
    run = crosshair_mutant(mod, "client_reaction", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr


def test_crosshair_mutant_master_does_not_correct() -> None:
    mod = mutant(pc, "    if not is_slave or offset_check_in_slave:\n        return new_offset\n    return old_offset",
                 "    if is_slave and offset_check_in_slave:\n        return new_offset\n    return old_offset")
    run = crosshair_mutant(mod, "next_offset_correction", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr
