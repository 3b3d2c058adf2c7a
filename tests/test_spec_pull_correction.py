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
    PERM_READ,
    PULL_BATCH_SIZE,
    PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL,
    PULL_TIME_DELAY_MS_WHEN_EXCEPTION,
    SHORT_POLLING_TIME_MS,
    WHICH_BROKER_WHEN_CONSUME_SLOWLY,
    ConsumeFromWhere,
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


# ----------------------------------------------------------------------------------------------- the consumers


@given(st.one_of(st.none(), st.integers(0, 100)), st.integers(0, 100))
def test_stored_offset(committed: int | None, min_offset: int) -> None:
    got = pc.stored_offset(committed, min_offset)
    if committed is not None:
        assert got == committed
    else:
        # ConsumerManageProcessor.queryConsumerOffset: a new group on a queue that never lost data reads 0.
        assert got == (0 if min_offset == 0 else pc.NO_OFFSET)


def _search(times: tuple[int, ...], file_start: int, min_offset: int, data_from: int, ts: int) -> int:
    """getOffsetInQueueByTime, by the rule it ends up at (not its binary search)."""
    low = max(min_offset, file_start)
    if low >= len(times):
        return 0
    readable = [o for o in range(max(low, data_from), len(times))]
    if not readable:
        return max(file_start - 1, 0)
    if all(times[o] > ts for o in readable):
        return readable[0]
    if all(times[o] < ts for o in readable):
        return len(times) - 1
    before = max(o for o in readable if times[o] <= ts)
    after = min(o for o in readable if times[o] >= ts)
    if times[before] == ts or times[after] == ts:
        return -1  # some entry stored at ts: which one the search meets is its own business
    return after if ts - times[before] > times[after] - ts else before


@given(st.lists(st.integers(0, 30), max_size=8), st.integers(0, 8), st.integers(0, 8), st.integers(0, 8),
       st.integers(-5, 35))
def test_offset_by_time(raw: list[int], file_start: int, min_offset: int, data_from: int, ts: int) -> None:
    times = tuple(sorted(raw))
    file_start, min_offset, data_from = (min(v, len(times)) for v in (file_start, min_offset, data_from))
    got = pc.offset_by_time(times, file_start, min_offset, data_from, ts)
    expected = _search(times, file_start, min_offset, data_from, ts)
    if expected == -1:
        assert times[got] == ts and got >= max(min_offset, file_start, data_from)
    else:
        assert got == expected


def test_offset_by_time_examples() -> None:
    times = (10, 20, 30, 40)
    assert pc.offset_by_time(times, 0, 0, 0, 5) == 0          # before the first: the first entry
    assert pc.offset_by_time(times, 0, 0, 0, 99) == 3         # past the last: the last entry, not the max offset
    assert pc.offset_by_time(times, 0, 0, 0, 24) == 1         # nearer the entry before
    assert pc.offset_by_time(times, 0, 0, 0, 26) == 2         # nearer the entry after
    assert pc.offset_by_time(times, 0, 0, 0, 25) == 1         # a tie: the earlier one
    assert pc.offset_by_time(times, 0, 0, 2, 5) == 2          # entries whose data is gone count as earlier
    assert pc.offset_by_time(times, 2, 0, 4, 5) == 1          # every entry's data gone: the file's start - 1
    assert pc.offset_by_time(times, 0, 0, 4, 5) == 0          # ... 0 at least
    assert pc.offset_by_time((), 0, 0, 0, 5) == 0             # an empty queue


@given(st.sampled_from(list(ConsumeFromWhere)), st.integers(-1, 50), st.booleans(), st.integers(0, 50),
       st.integers(0, 50))
def test_start_offset(where: ConsumeFromWhere, last: int, retry: bool, max_offset: int, searched: int) -> None:
    got = pc.start_offset(where, last, retry=retry, max_offset=max_offset, searched=searched)
    if last >= 0:
        assert got == last
    elif where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
        assert got == 0
    elif where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET:
        assert got == (0 if retry else max_offset)
    else:
        assert got == (max_offset if retry else searched)


@given(st.integers(0, 8), st.sampled_from((6, 4, 2, 0)))
def test_consumer_queue_ids(read_queue_nums: int, perm: int) -> None:
    got = pc.consumer_queue_ids(read_queue_nums, perm)
    assert got == (tuple(range(read_queue_nums)) if perm & PERM_READ else ())


@given(st.sampled_from([*PullStatus, None]), offsets, st.booleans(), st.integers(0, 32), st.booleans())
def test_lite_reaction(status: PullStatus | None, next_begin: int, seek: bool, found: int, flow: bool) -> None:
    got = pc.lite_reaction(status, next_begin, seek_pending=seek, found_messages=found, flow_control=flow)
    if status is None:
        delay = PULL_TIME_DELAY_MS_WHEN_BROKER_FLOW_CONTROL if flow else PULL_TIME_DELAY_MS_WHEN_EXCEPTION
        assert got == pc.LiteReaction(None, repull_delay_ms=delay)
    else:
        # OFFSET_ILLEGAL is only logged: the pull offset moves like any other answer's (DefaultLitePullConsumerImpl).
        assert got == pc.LiteReaction(None if seek else next_begin,
                                      enqueue=status is PullStatus.FOUND and found > 0 and not seek)


@given(st.frozensets(st.integers(0, 9), max_size=5), st.integers(0, 9), st.frozensets(st.integers(0, 9)))
def test_consume_progress(cached: frozenset[int], extra: int, removed: frozenset[int]) -> None:
    offset_max = max(cached, default=0) + extra
    got = pc.consume_progress(cached, offset_max, removed)
    rest = cached - removed
    assert got == (-1 if not cached else min(rest) if rest else offset_max + 1)


@given(st.integers(-2, 12), st.integers(0, 5), st.integers(0, 5), st.booleans())
def test_seek_allowed_and_auto_commit(offset: int, a: int, b: int, assigned: bool) -> None:
    lo, hi = min(a, b), max(a, b)
    assert pc.seek_allowed(offset, lo, hi, assigned=assigned) == (assigned and lo <= offset <= hi)
    assert pc.auto_commit_due(offset, auto_commit=assigned) == (assigned and offset <= 0)


# ----------------------------------------------------------------------------------------------- walkthroughs


def _run(state: pc.PullState, *actions: pc.Action) -> pc.PullState:
    for action in actions:
        assert pc.enabled(state, action), (action, state)
        state = pc.step(state, action)
    return state


def _cycle(state: pc.PullState, q: int = 0) -> pc.PullState:
    """Send the queue's next pull, let the broker process it, and (unless it is held) deliver the answer."""
    offset = pc.next_pull_offset(state, q)
    state = _run(state, pc.PullSent(q, offset), pc.Pull(q, offset, pc.consumer_answer(state, q, offset, True)))
    if any(r.phase is pc.Phase.ANSWERED for r in state.queues[q].requests):
        state = _run(state, pc.Answered(q, offset))
    return state


def test_consumer_walkthrough_after_queue_reset() -> None:
    """A consumer stored at 3 on a queue now holding [0, 1): OVERFLOW_BADLY → drop, fix to 1, rebalance at 1."""
    config = pc.Config(max_messages=3, subscription=None)
    state = _run(pc.initial_state(config, (3,)), pc.Append(0, "A", 0), pc.Rebalance(0, 3))
    q0 = state.queues[0]
    assert q0.pull_offset == 3 and q0.memory_offset == 3
    answer = pc.consumer_answer(state, 0, 3, True)
    assert (answer.status, answer.code, answer.next_offset) == (G.OFFSET_OVERFLOW_BADLY, RC.PULL_OFFSET_MOVED, 1)
    state = _run(state, pc.PullSent(0, 3), pc.Pull(0, 3, answer))
    assert state.queues[0].broker_offset == 3  # the pull committed the memory offset 3 before the answer
    state = _run(state, pc.Answered(0, 3))
    q0 = state.queues[0]
    assert q0.pq is not None and q0.pq.dropped and q0.fix == pc.OffsetUpdate(1, False)
    assert not pc.enabled(state, pc.Rebalance(0, 3)) and not pc.enabled(state, pc.DelayedFix(0))
    assert not pc.enabled(state, pc.TimePasses(OFFSET_ILLEGAL_REMOVE_DELAY_MS + 1))  # the fix is due at 10 s
    state = _run(state, pc.TimePasses(OFFSET_ILLEGAL_REMOVE_DELAY_MS), pc.DelayedFix(0), pc.PersistSent(0, 1),
                 pc.QueueRemoved(0), pc.Persist(0, 1))
    q0 = state.queues[0]
    assert (q0.broker_offset, q0.pq, q0.memory_offset) == (1, None, None)
    state = _run(state, pc.Rebalance(0, 1))
    held = pc.consumer_answer(state, 0, 1, True)
    assert held.code is None and held.status is G.OFFSET_OVERFLOW_ONE
    state = _run(state, pc.PullSent(0, 1), pc.Pull(0, 1, held))
    assert state.held == 1
    state = _run(state, pc.Append(0, "A", 1))
    rerun = pc.consumer_answer(state, 0, 1, False)
    assert not pc.enabled(state, pc.TimePasses(1))  # a matching arrival wakes the held pull at once
    state = _run(state, pc.Wake(0, 1, rerun), pc.Answered(0, 1))
    q0 = state.queues[0]
    assert state.held is None and q0.pq is not None and q0.pq.cached == frozenset({1}) and q0.pull_offset == 2
    # On 4.9.3 the same queue would have sent the consumer back to 0 (min == 0).
    old = attrs.evolve(state, config=attrs.evolve(config, profile=V4_9_3))
    assert pc.decide(old, 0, 3).next_offset == 0


def test_a_new_group_starts_where_the_broker_and_consume_from_where_say() -> None:
    base = pc.Config(max_messages=4, cq_file_entries=2, subscription=None)
    filled = _run(pc.initial_state(base, (None,)), *(pc.Append(0, "A", t) for t in (10, 20, 30, 40)))
    # min is 0: QUERY_CONSUMER_OFFSET answers 0, whatever consumeFromWhere says (PULL-29).
    for where in ConsumeFromWhere:
        state = attrs.evolve(filled, config=attrs.evolve(base, from_where=where))
        assert pc.rebalance_start(state, 0) == 0
    gone = _run(filled, pc.DeleteCommitLog(0), pc.DeleteCommitLog(0), pc.DeleteConsumeQueueFile(0),
                pc.CorrectMinOffset(0))
    assert gone.queues[0].store.min_offset == 2
    starts = {}
    for where, ts in ((ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, 0), (ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, 0),
                      (ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, 5), (ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, 99),
                      (ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, 32)):
        state = attrs.evolve(gone, config=attrs.evolve(base, from_where=where, consume_timestamp=ts))
        starts[(where.name, ts)] = pc.rebalance_start(state, 0)
    assert starts == {("CONSUME_FROM_FIRST_OFFSET", 0): 0, ("CONSUME_FROM_LAST_OFFSET", 0): 4,
                      ("CONSUME_FROM_TIMESTAMP", 5): 2, ("CONSUME_FROM_TIMESTAMP", 99): 3,
                      ("CONSUME_FROM_TIMESTAMP", 32): 2}
    # A %RETRY% queue: CONSUME_FROM_LAST_OFFSET starts at 0, CONSUME_FROM_TIMESTAMP at the max.
    retry = pc.Config(retry_queue=True, from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
    assert pc.consumer_queues(pc.initial_state(retry)) == (0, 1)
    assert pc.consumer_queues(pc.initial_state(attrs.evolve(retry, perm=2))) == (1,)


def test_lite_pull_walkthrough() -> None:
    """A lite pull consumer: OFFSET_ILLEGAL only moves its pull offset; poll, commit and seek (PULL-31 to PULL-36)."""
    config = pc.Config(consumer=pc.ConsumerKind.LITE_PULL, assign=(0,), batch=2, max_messages=4, subscription=None,
                       cq_file_entries=4)
    state = _run(pc.initial_state(config, (9,)), *(pc.Append(0, "A", t) for t in range(3)), pc.Assign(0))
    assert pc.next_pull_offset(state, 0) == 9  # the broker's offset, read through memory first
    state = _cycle(state)
    q0 = state.queues[0]
    assert q0.memory_offset == 9 and q0.pull_offset == 3 and q0.pq is not None and not q0.pq.dropped
    assert not any(r.commit for r in q0.requests)
    state = _run(state, pc.Seek(0, 0))
    assert pc.next_pull_offset(state, 0) == 0 and not pc.enabled(state, pc.TimePasses(1))
    state = _cycle(state)
    assert state.cache == ((0, (0, 1)),) and state.queues[0].consume_offset == 0
    state = _run(state, pc.Poll())  # the first poll auto-commits (consume offset 0), then takes (0, 1)
    q0 = state.queues[0]
    assert q0.memory_offset == 0 and q0.consume_offset == 2 and state.cache == ()
    assert not pc.enabled(state, pc.Seek(0, 5)) and pc.enabled(state, pc.Seek(0, 3))
    state = _run(state, pc.Commit(True), pc.PersistSent(0, 2), pc.Persist(0, 2))
    assert state.queues[0].broker_offset == 2


def test_enabled_rejects_an_answer_the_broker_would_not_give() -> None:
    state = _run(pc.initial_state(pc.Config(), (0,)), pc.Append(0, "A", 0), pc.Append(0, "A", 1), pc.Rebalance(0, 0),
                 pc.PullSent(0, 0))
    right = pc.decide(state, 0, 0)
    assert pc.enabled(state, pc.Pull(0, 0, right))
    assert not pc.enabled(state, pc.Pull(0, 0, attrs.evolve(right, next_offset=right.next_offset + 1)))
    assert not pc.enabled(state, pc.Wake(0, 0, right)) and not pc.enabled(state, pc.HoldTimeout(0, 0, right))


def test_a_broker_restart_fails_what_is_on_the_wire() -> None:
    config = pc.Config(subscription=None)
    state = _run(pc.initial_state(config, (0,)), pc.Rebalance(0, 0))
    state = _cycle(state)
    assert state.held == 0
    state = _run(state, pc.BrokerRestart())
    assert not state.registered and state.queues[0].requests[0].answer == pc.failed_answer(0)
    state = _run(state, pc.Answered(0, 0))
    assert state.queues[0].pull_in == PULL_TIME_DELAY_MS_WHEN_EXCEPTION
    state = _run(state, pc.TimePasses(PULL_TIME_DELAY_MS_WHEN_EXCEPTION), pc.PullSent(0, 0))
    failed = pc.decide(state, 0, 0)
    assert failed.code is RC.SUBSCRIPTION_NOT_EXIST  # no heartbeat since the restart (PULL-17)


# ----------------------------------------------------------------------------------------------- state machine


#: A small model (two messages, files of one entry, one message a pull) and a tiny one (one message): each run of
#: them takes a second or a few. The push consumer's part walks the small one; the lite pull consumer's seeks, commits
#: and timers multiply its states, so its part walks the tiny one.
SMALL: dict[str, object] = {"max_messages": 2, "cq_file_entries": 1, "batch": 1}
TINY: dict[str, object] = {"max_messages": 1, "cq_file_entries": 1, "batch": 1}
PUSH, LITE = (pc.ConsumerKind.PUSH,), (pc.ConsumerKind.LITE_PULL,)


@pytest.mark.slow
def test_explore_the_default_model() -> None:
    result = explore(pc.model())
    assert result.complete and not result.violations, [v.describe() for v in result.violations]
    assert result.ok and result.states > 10_000


@pytest.mark.parametrize(
    "bounds",
    [
        {**SMALL, "kinds": PUSH},
        {**SMALL, "kinds": PUSH, "profile": V4_9_3},
        {**SMALL, "kinds": PUSH, "is_slave": True},
        {**SMALL, "kinds": PUSH, "is_slave": True, "offset_check_in_slave": True},
        {**SMALL, "kinds": PUSH, "is_slave": True, "profile": V4_9_3},
        {**TINY, "kinds": PUSH, "bounds": pc.Bounds(lifecycle=True, restarts=True, resets=(0, 3), raw=True)},
        {**TINY, "kinds": LITE},
        {**TINY, "kinds": LITE, "profile": V4_9_3},
        {**TINY, "kinds": LITE, "is_slave": True},
        {**TINY, "kinds": LITE, "bounds": pc.Bounds(lifecycle=True, restarts=True, time=False)},
    ],
)
def test_explore(bounds: dict[str, object]) -> None:
    result = explore(pc.model(**bounds))  # type: ignore[arg-type]
    assert result.complete and not result.violations, [v.describe() for v in result.violations]
    assert result.ok and result.states > 1000


def _failed(mod: object, max_states: int = 20_000, lite: bool = False, **bounds: object) -> set[str]:
    """The clauses the explorer finds violated in a broken copy's small model (the walk stops at ``max_states``);
    ``lite``: the lite pull consumer's part only."""
    if lite:
        bounds["kinds"] = (mod.ConsumerKind.LITE_PULL,)  # type: ignore[attr-defined]
    result = explore(mod.model(**{**SMALL, **bounds}), max_states=max_states)  # type: ignore[attr-defined]
    return result.failed_clauses()


def _violated(mod: object, max_states: int = 20_000, **bounds: object) -> set[str]:
    result = explore(mod.model(**{**SMALL, **bounds}), max_states=max_states)  # type: ignore[attr-defined]
    return {v.invariant for v in result.violations}


@pytest.mark.slow  # (8-10 s each: the README's test command stays under 8 minutes)
def test_mutant_too_small_corrected_to_zero() -> None:
    mod = mutant(pc, "GetMessageStatus.OFFSET_TOO_SMALL, corrected(min_offset))",
                 "GetMessageStatus.OFFSET_TOO_SMALL, corrected(0))")
    assert "OFFSET_TOO_SMALL corrects to min" in _violated(mod)
    assert "PULL-3" in _failed(mod)


@pytest.mark.slow  # (8-10 s each: the README's test command stays under 8 minutes)
def test_mutant_too_small_corrected_to_max() -> None:
    mod = mutant(pc, "GetMessageStatus.OFFSET_TOO_SMALL, corrected(min_offset))",
                 "GetMessageStatus.OFFSET_TOO_SMALL, corrected(max_offset))")
    assert {"OFFSET_TOO_SMALL corrects to min", "no readable matching message is skipped"} <= _violated(mod)
    assert {"PULL-3", "PULL-27"} <= _failed(mod)


def test_mutant_overflow_one_moved() -> None:
    mod = mutant(pc, "if status in (GetMessageStatus.OFFSET_FOUND_NULL, GetMessageStatus.OFFSET_OVERFLOW_ONE):",
                 "if status in (GetMessageStatus.OFFSET_FOUND_NULL,):")
    assert "PULL_OFFSET_MOVED only outside [min, max]" in _violated(mod)
    assert "PULL-26" in _failed(mod)


@pytest.mark.slow  # (8-10 s each: the README's test command stays under 8 minutes)
def test_mutant_new_overflow_badly_rule_on_4_9_3() -> None:
    mod = mutant(pc, "if min_offset == 0 and profile < V4_9_4:",
                 'if min_offset == 0 and profile < VersionProfile.of("4.9.0"):')
    assert "OFFSET_OVERFLOW_BADLY correction per version" in _violated(mod, profile=V4_9_3)
    assert "PULL-5" in _failed(mod, profile=V4_9_3)
    assert not _failed(mod, max_states=10**6, profile=V4_9_8, kinds=PUSH)  # 4.9.8 unaffected


def test_mutant_old_overflow_badly_rule_on_4_9_8() -> None:
    mod = mutant(pc, "if min_offset == 0 and profile < V4_9_4:", "if min_offset == 0:")
    assert "PULL-5" in _failed(mod, profile=V4_9_8)


@pytest.mark.slow  # (8-10 s each: the README's test command stays under 8 minutes)
def test_mutant_offset_illegal_stored_increase_only() -> None:
    mod = mutant(pc, "drop=True, fix=OffsetUpdate(next_begin_offset, False)",
                 "drop=True, fix=OffsetUpdate(next_begin_offset, True)")
    assert "OFFSET_ILLEGAL drops and schedules the fix" in _violated(mod)
    assert "PULL-22" in _failed(mod)


def test_mutant_held_request_answered_twice() -> None:
    mod = mutant(pc, "    return state.with_queue(queue_id, requests=replaced(qs, index, request))",
                 "    return state.with_queue(queue_id, requests=(*replaced(qs, index, request), request))")
    assert "PULL-14" in _failed(mod)


def test_mutant_scan_skips_an_entry() -> None:
    mod = mutant(pc, "return StoreDecision(outcome.status, offset + outcome.entries_scanned, outcome.messages)",
                 "return StoreDecision(outcome.status, offset + outcome.entries_scanned + 1, outcome.messages)")
    assert "no readable matching message is skipped" in _violated(mod)
    assert "PULL-27" in _failed(mod)


def test_mutant_woken_request_commits() -> None:
    mod = mutant(pc, "    return state.with_queue(queue_id, requests=replaced(qs, index, request))",
                 "    return state.with_queue(queue_id, requests=replaced(qs, index, request),\n"
                 "                            broker_offset=qs.memory_offset or 0)")
    assert "only a first processing on a master commits" in _violated(mod)
    assert "PULL-18" in _failed(mod)


def test_mutant_slave_commits() -> None:
    indent = "\n" + " " * 34
    mod = mutant(pc, f"has_commit_flag=request.commit is not None,{indent}is_slave=cfg.is_slave):",
                 f"has_commit_flag=request.commit is not None,{indent}is_slave=False):")
    assert not _failed(mod, max_states=10**6, kinds=PUSH)
    assert "PULL-18" in _failed(mod, is_slave=True)


def test_mutant_rebalance_ignores_stored_offset() -> None:
    mod = mutant(pc, "    return computed_start(state, queue_id, broker_answer(state, queue_id))",
                 "    return computed_start(state, queue_id, -1)")
    assert "PULL-24" in _failed(mod)


def test_mutant_new_group_ignores_the_zero_answer() -> None:
    mod = mutant(pc, "    return 0 if min_offset <= 0 else NO_OFFSET", "    return NO_OFFSET")
    assert "PULL-29" in _failed(mod)


def test_mutant_lite_pull_drops_on_offset_illegal() -> None:
    mod = mutant(pc, "    if state.config.lite:\n        return _lite_react(state, q, request.answer)",
                 "    if state.config.lite and request.answer.code is not ResponseCode.PULL_OFFSET_MOVED:\n"
                 "        return _lite_react(state, q, request.answer)")
    assert "PULL-32" in _failed(mod, lite=True)


def test_mutant_poll_takes_the_newest_request() -> None:
    mod = mutant(pc, "        (q, offsets), cache = cache[0], cache[1:]",
                 "        (q, offsets), cache = cache[-1], cache[:-1]")
    assert "PULL-34" in _failed(mod, lite=True)


@pytest.mark.slow  # (8-10 s each: the README's test command stays under 8 minutes)
def test_mutant_seek_keeps_the_cache() -> None:
    mod = mutant(pc, "    return attrs.evolve(state, cache=tuple(r for r in state.cache if r[0] != q))",
                 "    return state")
    assert "PULL-36" in _failed(mod, lite=True)


@pytest.mark.slow  # CrossHair on a broken copy: seconds each
def test_crosshair_mutant_slave_keeps_offset_moved() -> None:
    mod = mutant(pc, "        if is_slave and not offset_check_in_slave:\n            return BrokerAnswer(",
                 "        if False:\n            return BrokerAnswer(")
    run = crosshair_mutant(mod, "response_code", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr


@pytest.mark.slow  # CrossHair on a broken copy: seconds each
def test_crosshair_mutant_increase_only_fix() -> None:
    mod = mutant(pc, "drop=True, fix=OffsetUpdate(next_begin_offset, False)",
                 "drop=True, fix=OffsetUpdate(next_begin_offset, True)")
    run = crosshair_mutant(mod, "client_reaction", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr


@pytest.mark.slow  # CrossHair on a broken copy: seconds each
def test_crosshair_mutant_master_does_not_correct() -> None:
    mod = mutant(pc, "    if not is_slave or offset_check_in_slave:\n        return new_offset\n    return old_offset",
                 "    if is_slave and offset_check_in_slave:\n        return new_offset\n    return old_offset")
    run = crosshair_mutant(mod, "next_offset_correction", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr


@pytest.mark.slow  # CrossHair on a broken copy: seconds each
def test_crosshair_mutant_search_past_the_last_answers_the_max() -> None:
    mod = mutant(pc, "    if right_time == -1:\n        return left",
                 "    if right_time == -1:\n        return left + 1")
    run = crosshair_mutant(mod, "offset_by_time", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr
