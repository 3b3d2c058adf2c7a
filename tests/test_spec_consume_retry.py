"""consume_retry: delay levels, the broker's send-back decision, the client fallback, and the retry chain."""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutation import crosshair_mutant, mutant

from rocketspec.spec import V4_9_3, V4_9_8, VersionProfile
from rocketspec.spec import consume_retry as cr
from rocketspec.spec.explorer import STEP_RAISED, Model, explore
from rocketspec.spec.java import is_blank
from rocketspec.spec.protocol import (
    DEFAULT_MAX_RECONSUME_TIMES,
    DELAY_LEVEL_MILLIS,
    DELAY_LEVEL_NAMES,
    MAX_DELAY_LEVEL,
    PERM_READ,
    PERM_WRITE,
    PULL_BATCH_SIZE,
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
    VERSION_V3_0_11,
    VERSION_V3_4_9,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    MessageModel,
    Property,
    ResponseCode,
    dlq_topic,
    retry_topic,
)

V4_9_0 = VersionProfile.of("4.9.0")
V4_9_1 = VersionProfile.of("4.9.1")
V4_9_2 = VersionProfile.of("4.9.2")
PROFILES = st.sampled_from([V4_9_0, V4_9_1, V4_9_2, V4_9_3, V4_9_8])
SECOND = 1000
MINUTE = 60 * SECOND


# ------------------------------------------------------------------------------------------------------------
# Delay levels (RETRY-1, RETRY-2, RETRY-3)
# ------------------------------------------------------------------------------------------------------------


def test_default_delay_level_string_parses_to_the_table() -> None:
    text = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    assert " ".join(DELAY_LEVEL_NAMES) == text
    assert cr.parse_delay_levels(text) == DELAY_LEVEL_MILLIS
    assert len(cr.parse_delay_levels(text)) == MAX_DELAY_LEVEL == 18


def test_delay_level_table_level_by_level() -> None:
    expected = [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]
    assert [cr.delay_millis(level) // SECOND for level in range(1, 19)] == expected
    # Level 1 is 1 s (seed 001 §6.2 says "delayLevel=1 means 5s": off by one against the store's table).
    assert cr.delay_millis(1) == SECOND and cr.delay_millis(2) == 5 * SECOND


def test_retry_n_waits_level_3_plus_n() -> None:
    # The k-th retry (reconsumeTimes k - 1 before it) waits 10s 30s 1m 2m ... 1h 2h: 16 retries by default.
    waits = [cr.delay_millis(3 + n) for n in range(DEFAULT_MAX_RECONSUME_TIMES)]
    assert waits == list(DELAY_LEVEL_MILLIS[2:])
    assert waits[0] == 10 * SECOND and waits[-1] == 2 * 60 * MINUTE
    assert sum(waits) == (4 * 60 + 45) * MINUTE + 40 * SECOND  # 4 h 45 min 40 s in all


def test_levels_above_the_max_are_clamped() -> None:
    assert cr.effective_delay_level(19) == 18 and cr.effective_delay_level(10_000) == 18
    assert cr.delay_millis(19) == cr.delay_millis(99) == 7_200_000
    assert cr.schedule_queue_id(1) == 0 and cr.schedule_queue_id(18) == 17 and cr.schedule_queue_id(40) == 17
    assert cr.effective_delay_level(0) == 0 and cr.effective_delay_level(-1) == 0
    assert cr.effective_delay_level(5, max_level=3) == 3
    assert cr.delay_millis(7, table=(1, 2, 3)) == 3


@pytest.mark.parametrize(
    ("text", "levels"),
    [
        ("1s", (1000,)),
        ("1s 2d", (1000, 2 * 86_400_000)),
        ("1s  ", (1000,)),  # Java's split drops trailing empty items
        (" ", ()),  # only empty items: zero levels, and the store still loads
        ("+5s", (5000,)),
        ("-1s", (-1000,)),
        ("0m", (0,)),
        ("\u0665s", (5000,)),  # Long.parseLong takes any Unicode decimal digit
        ("9223372036854775807d", ((9223372036854775807 * 86_400_000 + 2**63) % 2**64 - 2**63,)),
    ],
)
def test_delay_level_parsing_accepts(text: str, levels: tuple[int, ...]) -> None:
    assert cr.parse_delay_levels(text) == levels


@pytest.mark.parametrize(
    "text", ["", " 1s", "1s  5s", "1x", "s", "1", "1_0s", "1 s", "1.5s", "+s", "9223372036854775808s", "1S"]
)
def test_delay_level_parsing_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        cr.parse_delay_levels(text)


@given(st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from("smhd")), min_size=1, max_size=20))
def test_delay_level_parsing_property(items: list[tuple[int, str]]) -> None:
    unit = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
    text = " ".join(f"{n}{u}" for n, u in items)
    assert cr.parse_delay_levels(text) == tuple(n * unit[u] for n, u in items)


@given(st.integers(-5, 60), st.integers(1, 30))
def test_effective_level_property(level: int, max_level: int) -> None:
    got = cr.effective_delay_level(level, max_level)
    assert got == (0 if level <= 0 else min(level, max_level))


@given(st.integers(1, 60), st.integers(1, 60))
def test_delay_is_monotone_in_the_level(a: int, b: int) -> None:
    if a <= b:
        assert cr.delay_millis(a) <= cr.delay_millis(b)
    assert cr.schedule_queue_id(a) == min(a, MAX_DELAY_LEVEL) - 1


def test_schedule_due_examples() -> None:
    stored = 1_000_000
    assert not cr.schedule_due(stored, 3, stored + 9_999)
    assert cr.schedule_due(stored, 3, stored + 10_000)
    assert cr.schedule_due(stored, 19, stored + 7_200_000)
    assert not cr.schedule_due(stored, 19, stored + 7_199_999)
    # The clock went back: a due time beyond now + delay is corrected to now.
    assert cr.schedule_due(stored, 18, stored - 1)


@given(st.integers(0, 10**10), st.integers(1, 40), st.integers(0, 10**10))
def test_schedule_due_property(stored: int, level: int, now: int) -> None:
    delay = DELAY_LEVEL_MILLIS[min(level, MAX_DELAY_LEVEL) - 1]
    assert cr.schedule_due(stored, level, now) == (now >= stored + delay or now < stored)


# ------------------------------------------------------------------------------------------------------------
# The broker's CONSUMER_SEND_MSG_BACK (RETRY-4..RETRY-10)
# ------------------------------------------------------------------------------------------------------------


def test_first_failure_goes_to_retry_with_level_3() -> None:
    r = cr.consumer_send_back(0, group="G")
    assert r == cr.SendBackResult(ResponseCode.SUCCESS, cr.Target.RETRY, retry_topic("G"), 1, 3, 1)


def test_sixteenth_retry_then_dead_letter() -> None:
    # Default max 16: the copy made after the 16th failure (stored reconsumeTimes 15) is the last retry, at
    # 2 h; the 17th failure (reconsumeTimes 16) goes to %DLQ%.
    last = cr.consumer_send_back(15)
    assert last.target is cr.Target.RETRY and last.delay_level == 18 and last.reconsume_times == 16
    dead = cr.consumer_send_back(16)
    assert dead == cr.SendBackResult(ResponseCode.SUCCESS, cr.Target.DLQ, dlq_topic("G"), 1, 0, 17)
    chain = [cr.consumer_send_back(n) for n in range(DEFAULT_MAX_RECONSUME_TIMES + 1)]
    assert [r.target for r in chain].count(cr.Target.RETRY) == 16
    assert [r.delay_level for r in chain[:16]] == list(range(3, 19))


def test_send_back_checks_in_order() -> None:
    assert cr.consumer_send_back(0, group_known=False, broker_writable=False).code == (
        ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)
    no_perm = cr.consumer_send_back(0, broker_writable=False, retry_queue_nums=0)
    assert no_perm.code == ResponseCode.NO_PERMISSION
    dropped = cr.consumer_send_back(0, retry_queue_nums=0, retry_topic_writable=False, message_found=False)
    assert dropped == cr.SendBackResult(ResponseCode.SUCCESS, cr.Target.DROPPED)
    assert cr.consumer_send_back(0, retry_queue_nums=-1).target is cr.Target.DROPPED
    assert cr.consumer_send_back(0, retry_topic_writable=False, message_found=False).code == (
        ResponseCode.NO_PERMISSION)
    assert cr.consumer_send_back(0, message_found=False) == cr.SendBackResult(ResponseCode.SYSTEM_ERROR,
                                                                               cr.Target.NONE)
    assert cr.consumer_send_back(0, put_ok=False).code == ResponseCode.SYSTEM_ERROR


def test_max_from_header_or_group() -> None:
    # A new client's maxReconsumeTimes rules; an old one (version < V3_4_9) gets the group's retryMaxTimes.
    assert cr.consumer_send_back(2, header_max_reconsume_times=2).target is cr.Target.DLQ
    assert cr.consumer_send_back(2, header_max_reconsume_times=3).target is cr.Target.RETRY
    old = {"request_version": VERSION_V3_0_11, "header_max_reconsume_times": 2}
    assert cr.consumer_send_back(2, group_retry_max_times=5, **old).target is cr.Target.RETRY
    assert cr.consumer_send_back(5, group_retry_max_times=5, **old).target is cr.Target.DLQ
    assert cr.consumer_send_back(2, request_version=VERSION_V3_4_9, header_max_reconsume_times=2,
                                 group_retry_max_times=5).target is cr.Target.DLQ
    # No header value: the group's max from 4.9.1; 4.9.0 fails on it.
    absent = {"header_max_reconsume_times": None}
    assert cr.consumer_send_back(3, group_retry_max_times=3, **absent).target is cr.Target.DLQ
    assert cr.consumer_send_back(3, profile=V4_9_1, **absent).target is cr.Target.RETRY
    assert cr.consumer_send_back(3, profile=V4_9_0, **absent).code == ResponseCode.SYSTEM_ERROR
    old_client = cr.consumer_send_back(3, request_version=VERSION_V3_0_11, profile=V4_9_0, **absent)
    assert old_client.target is cr.Target.RETRY


def test_request_delay_level() -> None:
    assert cr.consumer_send_back(0, delay_level=-1).target is cr.Target.DLQ
    assert cr.consumer_send_back(0, delay_level=1).delay_level == 1
    assert cr.consumer_send_back(4, delay_level=25).delay_level == MAX_DELAY_LEVEL
    assert cr.consumer_send_back(10, delay_level=0).delay_level == 13
    assert cr.consumer_send_back(16, header_max_reconsume_times=20).delay_level == MAX_DELAY_LEVEL


@given(
    st.integers(0, 40), st.integers(-2, 40), st.none() | st.integers(-2, 40), st.sampled_from([37, 121, 409]),
    st.booleans(), st.booleans(), st.integers(-1, 4), st.booleans(), st.booleans(), st.integers(-2, 40),
    st.booleans(), PROFILES,
)
def test_send_back_property(
    n: int, level: int, header_max: int | None, version: int, known: bool, writable: bool, queues: int,
    topic_writable: bool, found: bool, group_max: int, put_ok: bool, profile: VersionProfile,
) -> None:
    r = cr.consumer_send_back(n, level, header_max, version, "grp", known, writable, queues, topic_writable,
                              found, group_max, put_ok, profile)
    if not known:
        assert r.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        return
    if not writable:
        assert r.code == ResponseCode.NO_PERMISSION
        return
    if queues <= 0:
        assert (r.code, r.target) == (ResponseCode.SUCCESS, cr.Target.DROPPED)
        return
    if not topic_writable:
        assert r.code == ResponseCode.NO_PERMISSION
        return
    if not found or not put_ok or (version >= 121 and header_max is None and profile == V4_9_0):
        assert (r.code, r.target) == (ResponseCode.SYSTEM_ERROR, cr.Target.NONE)
        return
    limit = header_max if version >= 121 and header_max is not None else group_max
    assert r.code == ResponseCode.SUCCESS and r.reconsume_times == n + 1
    if n >= limit or level < 0:
        assert (r.target, r.topic, r.queue_nums, r.delay_level) == (cr.Target.DLQ, "%DLQ%grp", 1, 0)
    else:
        assert (r.target, r.topic, r.queue_nums) == (cr.Target.RETRY, "%RETRY%grp", queues)
        assert r.delay_level == min(level if level > 0 else 3 + n, 18)


def test_send_back_properties() -> None:
    assert cr.send_back_properties("T", None, None, "ID") == ("T", "ID")
    assert cr.send_back_properties("%RETRY%G", "T", "FIRST", "ID") == ("T", "FIRST")
    assert cr.send_back_properties("T", None, " \t", "ID") == ("T", "ID")
    assert cr.send_back_properties("T", None, "", "ID") == ("T", "ID")
    # A non-breaking space is not Java whitespace: the id is kept.
    assert cr.send_back_properties("T", None, "\u00a0", "ID") == ("T", "\u00a0")


@given(st.text(max_size=4), st.none() | st.text(max_size=4), st.none() | st.text(max_size=4),
       st.text(max_size=4))
def test_send_back_properties_property(topic: str, retry: str | None, origin: str | None,
                                       msg_id: str) -> None:
    got_topic, got_origin = cr.send_back_properties(topic, retry, origin, msg_id)
    assert got_topic == (topic if retry is None else retry)
    assert got_origin == (msg_id if origin is None or is_blank(origin) else origin)


def test_topics_created_by_send_back() -> None:
    assert cr.send_back_topic_config(cr.Target.RETRY, 1) == (1, PERM_READ | PERM_WRITE)
    assert cr.send_back_topic_config(cr.Target.DLQ, 8) == (1, PERM_READ | PERM_WRITE)
    assert cr.send_back_topic_config(cr.Target.DLQ, 1, V4_9_2) == (1, 6)
    # The seeds' "write-only DLQ" is 4.9.1 and earlier.
    assert cr.send_back_topic_config(cr.Target.DLQ, 1, V4_9_1) == (1, PERM_WRITE) == (1, 2)


@given(st.sampled_from([cr.Target.RETRY, cr.Target.DLQ]), st.integers(1, 16), PROFILES)
def test_topic_config_property(target: cr.Target, queues: int, profile: VersionProfile) -> None:
    nums, perm = cr.send_back_topic_config(target, queues, profile)
    assert perm & PERM_WRITE
    assert nums == (queues if target is cr.Target.RETRY else 1)
    assert bool(perm & PERM_READ) == (target is cr.Target.RETRY or profile.at_least("4.9.2"))


# ------------------------------------------------------------------------------------------------------------
# Plain sends to %RETRY% (RETRY-11, RETRY-12) and the client's own retry messages (RETRY-16, RETRY-23)
# ------------------------------------------------------------------------------------------------------------


def test_fallback_message() -> None:
    props = ((Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "U1"), (Property.TRANSACTION_PREPARED, "true"),
             (Property.TAGS, "a"))
    m = cr.client_retry_message("T", 0, 16, "G", props, message_id="U1")
    got = dict(m.properties)
    assert m.topic == "%RETRY%G" and m.delay_level == 3
    assert (m.header_reconsume_times, m.header_max_reconsume_times) == (1, 16)
    assert got == {
        Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "U1", Property.TAGS: "a", Property.RETRY_TOPIC: "T",
        Property.RECONSUME_TIME: "1", Property.MAX_RECONSUME_TIMES: "16", Property.DELAY_TIME_LEVEL: "3",
    }
    # ORIGIN_MESSAGE_ID survives only if the message already had one (the id set first is overwritten).
    assert Property.ORIGIN_MESSAGE_ID not in got
    again = cr.client_retry_message("T", 4, 16, "G", ((Property.ORIGIN_MESSAGE_ID, "O"),))
    assert dict(again.properties)[Property.ORIGIN_MESSAGE_ID] == "O" and again.delay_level == 7
    assert list(m.properties) == sorted(m.properties)


def test_orderly_dead_letter_message() -> None:
    m = cr.client_retry_message("T", 5, 5, "G", (), message_id="M", orderly=True)
    assert m.header_reconsume_times == 5 and dict(m.properties)[Property.RECONSUME_TIME] == "5"
    assert dict(m.properties)[Property.ORIGIN_MESSAGE_ID] == "M"
    assert m.delay_level == 8
    old = cr.client_retry_message("T", 5, 5, "G", (), message_id="M", orderly=True, profile=V4_9_3)
    assert Property.ORIGIN_MESSAGE_ID not in dict(old.properties)
    kept = cr.client_retry_message("T", 5, 5, "G", ((Property.ORIGIN_MESSAGE_ID, "O"),), "M", orderly=True)
    assert dict(kept.properties)[Property.ORIGIN_MESSAGE_ID] == "O"
    # The broker dead-letters it (reconsumeTimes 5 >= max 5), through the schedule topic (RETRY-12).
    r = cr.retry_topic_send(m.header_reconsume_times, m.delay_level, m.header_max_reconsume_times)
    assert (r.target, r.delay_level, r.reconsume_times) == (cr.Target.DLQ, 8, 5)


PROPS = st.lists(
    st.tuples(st.sampled_from([Property.TAGS, Property.KEYS, Property.ORIGIN_MESSAGE_ID,
                               Property.TRANSACTION_PREPARED, Property.RETRY_TOPIC, Property.DELAY_TIME_LEVEL,
                               "x"]), st.text(max_size=3)),
    max_size=4, unique_by=lambda kv: kv[0],
).map(tuple)


@given(st.text(max_size=4), st.integers(0, 40), st.integers(-1, 40), PROPS, st.text(max_size=3),
       st.booleans(), PROFILES)
def test_client_retry_message_property(topic: str, n: int, max_times: int, props: tuple[tuple[str, str], ...],
                                       msg_id: str, orderly: bool, profile: VersionProfile) -> None:
    m = cr.client_retry_message(topic, n, max_times, "G", props, msg_id, orderly, profile)
    got = dict(m.properties)
    times = n if orderly else n + 1
    assert m.topic == retry_topic("G") and m.header_reconsume_times == times
    assert m.header_max_reconsume_times == max_times and m.delay_level == 3 + n
    assert got[Property.RETRY_TOPIC] == topic and got[Property.RECONSUME_TIME] == str(times)
    assert got[Property.MAX_RECONSUME_TIMES] == str(max_times)
    assert got[Property.DELAY_TIME_LEVEL] == str(3 + n)
    assert Property.TRANSACTION_PREPARED not in got
    for key, value in props:
        if key not in (Property.RETRY_TOPIC, Property.DELAY_TIME_LEVEL, Property.TRANSACTION_PREPARED,
                       Property.ORIGIN_MESSAGE_ID):
            assert got[key] == value
    origin = dict(props).get(Property.ORIGIN_MESSAGE_ID)
    if orderly and profile.at_least("4.9.4"):
        expected = msg_id if origin is None or is_blank(origin) else origin
        assert got[Property.ORIGIN_MESSAGE_ID] == expected
    else:
        assert got.get(Property.ORIGIN_MESSAGE_ID) == origin


def test_fallback_dead_letters_one_retry_earlier() -> None:
    # The broker path dead-letters a message shown at 16 (16 >= 16); the fallback sends header reconsumeTimes
    # n + 1, so it dead-letters one shown at 15, and the copy still waits in the schedule topic first.
    m = cr.client_retry_message("T", 15, 16)
    r = cr.retry_topic_send(m.header_reconsume_times, m.delay_level, m.header_max_reconsume_times)
    assert (r.target, r.topic, r.reconsume_times, r.delay_level) == (cr.Target.DLQ, dlq_topic("G"), 16, 18)
    assert cr.consumer_send_back(15).target is cr.Target.RETRY
    m = cr.client_retry_message("T", 14, 16)
    r = cr.retry_topic_send(m.header_reconsume_times, m.delay_level, m.header_max_reconsume_times)
    assert (r.target, r.reconsume_times, r.delay_level) == (cr.Target.RETRY, 15, 17)


def test_retried_fallback_send_loses_its_count() -> None:
    # sendKernelImpl moves RECONSUME_TIME / MAX_RECONSUME_TIMES into the header and deletes them from the message:
    # a retried attempt sends neither, so the broker stores the copy with 0 against the group's max (RETRY-16).
    first = cr.client_retry_message("T", 2, 3, "G")
    again = cr.client_retry_message("T", 2, 3, "G", retried=True)
    assert (again.header_reconsume_times, again.header_max_reconsume_times, again.delay_level) == (0, None, 5)
    assert Property.RECONSUME_TIME not in dict(again.properties)
    assert Property.MAX_RECONSUME_TIMES not in dict(again.properties)
    assert dict(again.properties)[Property.RETRY_TOPIC] == "T"
    r = cr.retry_topic_send(first.header_reconsume_times, first.delay_level, first.header_max_reconsume_times)
    assert (r.target, r.reconsume_times) == (cr.Target.DLQ, 3)
    r = cr.retry_topic_send(again.header_reconsume_times, again.delay_level, again.header_max_reconsume_times)
    assert (r.target, r.reconsume_times, r.delay_level) == (cr.Target.RETRY, 0, 5)


def test_retry_topic_send_versions() -> None:
    assert cr.retry_topic_send(None, 3).reconsume_times == 0
    assert cr.retry_topic_send(1, 3, group_known=False).code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    assert cr.retry_topic_send(4, 3, None, group_retry_max_times=4).target is cr.Target.DLQ
    assert cr.retry_topic_send(4, 3, None, profile=V4_9_2).code == ResponseCode.SYSTEM_ERROR
    assert cr.retry_topic_send(4, 3, 2, VERSION_V3_0_11, group_retry_max_times=5).target is cr.Target.RETRY
    assert cr.retry_topic_send(2, 0, 2).delay_level == 0


@given(st.none() | st.integers(0, 40), st.integers(-2, 40), st.none() | st.integers(-2, 40),
       st.sampled_from([37, 121, 409]), st.booleans(), st.integers(-2, 40), PROFILES)
def test_retry_topic_send_property(n: int | None, level: int, header_max: int | None, version: int,
                                   known: bool, group_max: int, profile: VersionProfile) -> None:
    r = cr.retry_topic_send(n, level, header_max, version, "G", known, group_max, profile)
    if not known:
        assert r.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
        return
    if version >= 121 and header_max is None and not profile.at_least("4.9.3"):
        assert r.code == ResponseCode.SYSTEM_ERROR
        return
    limit = header_max if version >= 121 and header_max is not None else group_max
    times = n or 0
    assert r.code == ResponseCode.SUCCESS and r.reconsume_times == times
    assert r.target is (cr.Target.DLQ if times >= limit else cr.Target.RETRY)
    assert r.topic == (dlq_topic("G") if times >= limit else retry_topic("G"))
    assert r.delay_level == (0 if level <= 0 else min(level, MAX_DELAY_LEVEL))


# ------------------------------------------------------------------------------------------------------------
# The consumer (RETRY-13..RETRY-24)
# ------------------------------------------------------------------------------------------------------------


def test_after_listener_examples() -> None:
    ok = ConsumeStatus.CONSUME_SUCCESS
    later = ConsumeStatus.RECONSUME_LATER
    assert cr.after_listener(ok, 3) == cr.ConsumeOutcome(3)
    assert cr.after_listener(ok, 3, ack_index=0) == cr.ConsumeOutcome(1, send_back=(1, 2))
    assert cr.after_listener(ok, 3, ack_index=-1) == cr.ConsumeOutcome(0, send_back=(0, 1, 2))
    assert cr.after_listener(later, 3, ack_index=5) == cr.ConsumeOutcome(0, send_back=(0, 1, 2))
    assert cr.after_listener(None, 2) == cr.ConsumeOutcome(0, send_back=(0, 1))
    assert cr.after_listener(later, 2, MessageModel.BROADCASTING) == cr.ConsumeOutcome(0, dropped=(0, 1))
    assert cr.after_listener(ok, 2, MessageModel.BROADCASTING, 0) == cr.ConsumeOutcome(1, dropped=(1,))
    assert cr.after_listener(later, 0) == cr.ConsumeOutcome(0)


@given(st.sampled_from([ConsumeStatus.CONSUME_SUCCESS, ConsumeStatus.RECONSUME_LATER, None]),
       st.integers(0, 64), st.sampled_from(MessageModel), st.integers(-1, 70) | st.just(cr.ACK_INDEX_DEFAULT))
def test_after_listener_property(status: ConsumeStatus | None, size: int, model: MessageModel,
                                 ack: int) -> None:
    out = cr.after_listener(status, size, model, ack)
    ok = min(ack + 1, size) if status is ConsumeStatus.CONSUME_SUCCESS else 0
    failed = tuple(range(ok, size))
    assert out.succeeded == ok
    assert out.send_back == (failed if model is MessageModel.CLUSTERING else ())
    assert out.dropped == (failed if model is MessageModel.BROADCASTING else ())


@given(st.integers(-3, 100), st.booleans())
def test_effective_max_reconsume_times(configured: int, orderly: bool) -> None:
    got = cr.effective_max_reconsume_times(configured, orderly)
    if configured == -1:
        assert got == (2**31 - 1 if orderly else 16)
    else:
        assert got == configured


def test_visible_topic() -> None:
    assert cr.visible_topic("%RETRY%G", "T", "G") == "T"
    assert cr.visible_topic("%RETRY%G", None, "G") == "%RETRY%G"
    assert cr.visible_topic("%RETRY%H", "T", "G") == "%RETRY%H"
    assert cr.visible_topic("T", "X", "G") == "T"


@given(st.text(max_size=8), st.none() | st.text(max_size=4), st.text(max_size=3))
def test_visible_topic_property(topic: str, retry: str | None, group: str) -> None:
    shown = cr.visible_topic(topic, retry, group)
    assert shown == (retry if retry is not None and topic == retry_topic(group) else topic)


def test_consume_expired() -> None:
    assert not cr.consume_expired(0, 15 * MINUTE)
    assert cr.consume_expired(0, 15 * MINUTE + 1)
    assert cr.consume_expired(0, MINUTE + 1, consume_timeout_minutes=1)
    assert cr.EXPIRED_SEND_BACK_DELAY_LEVEL == 3


@given(st.integers(0, 10**12), st.integers(0, 10**12), st.integers(1, 100))
def test_consume_expired_property(start: int, now: int, minutes: int) -> None:
    assert cr.consume_expired(start, now, minutes) == (now - start > minutes * MINUTE)


def test_orderly_suspend_examples() -> None:
    # Under the max: +1 and suspend. At the max: dead-lettered; the batch is committed when nothing suspends.
    assert cr.orderly_suspend((0,), 16, (True,)) == cr.OrderlySuspend(True, (1,), ())
    assert cr.orderly_suspend((16,), 16, (True,)) == cr.OrderlySuspend(False, (16,), (0,))
    assert cr.orderly_suspend((16,), 16, (False,)) == cr.OrderlySuspend(True, (17,), ())
    # A message already dead-lettered is consumed again with the batch when another one suspends it.
    assert cr.orderly_suspend((16, 3), 16, (True, True)) == cr.OrderlySuspend(True, (16, 4), (0,))
    # The orderly default max is Integer.MAX_VALUE: nothing is ever dead-lettered.
    unlimited = cr.effective_max_reconsume_times(-1, orderly=True)
    assert cr.orderly_suspend((10**6,), unlimited, (True,)).suspend


@given(st.lists(st.tuples(st.integers(0, 40), st.booleans()), max_size=8), st.integers(-2, 40))
def test_orderly_suspend_property(batch: list[tuple[int, bool]], max_times: int) -> None:
    times = tuple(t for t, _ in batch)
    oks = tuple(ok for _, ok in batch)
    out = cr.orderly_suspend(times, max_times, oks)
    dead = tuple(i for i, (t, ok) in enumerate(batch) if t >= max_times and ok)
    assert out.dead_lettered == dead
    assert out.reconsume_times == tuple(t if i in dead else t + 1 for i, t in enumerate(times))
    assert out.suspend == (len(dead) < len(batch))


def test_suspend_millis() -> None:
    assert cr.suspend_millis(-1) == 1000
    assert cr.suspend_millis(-1, 5) == 10 and cr.suspend_millis(-1, 40_000) == 30_000
    assert cr.suspend_millis(0) == 10 and cr.suspend_millis(-2) == 10 and cr.suspend_millis(2_000) == 2_000
    assert cr.suspend_millis(10**6) == 30_000


@given(st.integers(-10**6, 10**6), st.integers(-10**6, 10**6))
def test_suspend_millis_property(context: int, consumer: int) -> None:
    chosen = consumer if context == -1 else context
    assert cr.suspend_millis(context, consumer) == max(10, min(chosen, 30_000))


# ------------------------------------------------------------------------------------------------------------
# Batches, committed offsets and the shared property map (RETRY-28, RETRY-29, RETRY-30)
# ------------------------------------------------------------------------------------------------------------


def test_concurrent_commit_offset() -> None:
    assert cr.concurrent_commit_offset((), 5, 2) == 5  # nothing held: one past the last pulled
    assert cr.concurrent_commit_offset((3, 1), 5, 0) == 1  # the smallest still held
    assert cr.concurrent_commit_offset((1,), 5, 3) == 3  # increase only


@given(st.lists(st.integers(0, 9), max_size=4), st.integers(0, 3))
def test_concurrent_commit_offset_property(held: list[int], behind: int) -> None:
    frontier = max(held, default=0) + 1
    committed = max(-1, min(held, default=frontier) - behind)
    got = cr.concurrent_commit_offset(tuple(held), frontier, committed)
    assert committed <= got <= frontier and all(got <= o for o in held)


def test_orderly_batch_size() -> None:
    assert cr.orderly_batch_size(0, 3) == 0
    assert cr.orderly_batch_size(5, 3) == 3
    assert cr.orderly_batch_size(2, 3) == 2  # all it holds (a suspended batch put back first)


@given(st.integers(0, 64), st.integers(1, 64))
def test_orderly_batch_size_property(pending: int, batch_max: int) -> None:
    n = cr.orderly_batch_size(pending, batch_max)
    assert n <= pending and n <= batch_max and (n == pending or n == batch_max)


def test_consume_requests() -> None:
    assert cr.consume_requests(0, 2) == ()
    assert cr.consume_requests(5, 2) == (2, 2, 1)
    assert cr.consume_requests(3, 32) == (3,)


@given(st.integers(0, 64), st.integers(1, 64))
def test_consume_requests_property(pulled: int, batch_max: int) -> None:
    sizes = cr.consume_requests(pulled, batch_max)
    assert sum(sizes) == pulled and all(1 <= n <= batch_max for n in sizes)
    assert all(n == batch_max for n in sizes[:-1])


def test_pull_sizes() -> None:
    assert cr.pull_sizes(0) == ()
    assert cr.pull_sizes(2) == (1, 2)
    assert cr.pull_sizes(40) == tuple(range(1, PULL_BATCH_SIZE + 1))


def test_latest_move_ms() -> None:
    assert cr.latest_move_ms(10_000) == 10_000 + cr.SCHEDULE_SLACK_MS
    assert cr.latest_move_ms(10_000, 9_000) == 10_000 + cr.SCHEDULE_SLACK_MS
    # Due before the schedule's first run after a restart: moved by that run (RETRY-32).
    assert cr.latest_move_ms(10_000, 10_500) == 10_500 + cr.SCHEDULE_SLACK_MS


def test_properties_after_own_send() -> None:
    # Concurrent fallback: ORIGIN_MESSAGE_ID is not added (it went into the new message's own map, then replaced).
    props = ((Property.RECONSUME_TIME, "1"), (Property.TRANSACTION_PREPARED, "true"))
    assert dict(cr.properties_after_own_send(props, "T", 2)) == {
        Property.RETRY_TOPIC: "T", Property.DELAY_TIME_LEVEL: "5"}
    # Orderly dead letter: set after the map is taken, so it stays on the consumed message.
    shown = dict(cr.properties_after_own_send((), "T", 1, message_id="id", orderly=True))
    assert shown == {Property.RETRY_TOPIC: "T", Property.DELAY_TIME_LEVEL: "4", Property.ORIGIN_MESSAGE_ID: "id"}
    assert dict(cr.properties_after_own_send(((Property.ORIGIN_MESSAGE_ID, "o"),), "T", 1, "id", orderly=True))[
        Property.ORIGIN_MESSAGE_ID] == "o"


@given(st.integers(0, 40), st.booleans())
def test_properties_after_own_send_agree_with_the_retried_message(n: int, orderly: bool) -> None:
    """RETRY-30 and RETRY-16: what the consumed message shows is what a retried attempt of the send carries."""
    retried = cr.client_retry_message("T", n, 5, "G", message_id="id", orderly=orderly, retried=True)
    assert cr.properties_after_own_send((), "T", n, "id", orderly) == retried.properties


# ------------------------------------------------------------------------------------------------------------
# The state machine
# ------------------------------------------------------------------------------------------------------------


def reachable(model: Model[cr.RetryState, cr.Action]) -> Iterator[cr.RetryState]:
    seen = set(model.initial)
    queue = deque(model.initial)
    while queue:
        state = queue.popleft()
        yield state
        for action in model.actions(state):
            if model.enabled(state, action):
                after = model.step(state, action)
                if after not in seen:
                    seen.add(after)
                    queue.append(after)


def run(state: cr.RetryState, *actions: cr.Action) -> cr.RetryState:
    for action in actions:
        assert cr.enabled(state, action), (action, state)
        state = cr.step(state, action)
    return state


T0 = (cr.TOPIC, 0, 0)
R = cr.RETRY


def fail(*members: cr.Key, level: int = 0) -> cr.ListenerReturns:
    return cr.ListenerReturns(members or (T0,), ConsumeStatus.RECONSUME_LATER, delay_level=level)


def fresh(max_times: int = 3, faults: int = 4, **kw: object) -> cr.RetryState:
    return cr.RetryState(cr.RetryConfig(max_reconsume_times=max_times, **kw), faults_left=faults)  # type: ignore[arg-type]


def pull(topic: str, offset: int) -> tuple[cr.Pulled, cr.Deliver]:
    """The message at ``offset`` pulled alone and handed to the listener."""
    return cr.Pulled(topic, 0, (offset,)), cr.Deliver(topic, 0, (offset,))


def due(state: cr.RetryState) -> cr.RetryState:
    """Let time pass to the next due moment and the schedule service move what is due."""
    [time_passes] = cr.TRANSITIONS.enabled_actions(state, cr.Bounds(), [cr.TimePasses])
    state = run(state, time_passes)
    for action in cr.TRANSITIONS.enabled_actions(state, cr.Bounds(), [cr.ScheduleDelivers]):
        state = run(state, action)
    return state


@pytest.mark.slow  # the default model: `spec check` explores it (test_cli.test_full_check_passes)
def test_explore_default_model() -> None:
    started = time.monotonic()
    result = explore(cr.model())
    assert result.ok and result.complete and not result.violations
    assert result.states > 10_000
    assert time.monotonic() - started < 20


def test_broker_chain_until_dead_letter() -> None:
    # No faults, max 3: delivered with reconsumeTimes 0, 1, 2, 3, each after 10 s, 30 s, 1 min; then %DLQ%.
    state = run(fresh(), cr.Publish(0), *pull(cr.TOPIC, 0), fail(), cr.BrokerAnswers(T0))
    for n in range(3):
        state = due(state)
        key = (R, 0, n)
        state = run(state, *pull(R, n), fail(key), cr.BrokerAnswers(key))
    chain = state.chains[0]
    assert [d.reconsume_times for d in chain.deliveries] == [0, 1, 2, 3]
    assert [d.at_ms for d in chain.deliveries] == [0, 10_000, 40_000, 100_000]
    assert [(c.dead, c.reconsume_times) for c in chain.copies] == [(False, 1), (False, 2), (False, 3), (True, 4)]
    [dead] = [s for s in state.stored if s.key[0] == cr.DLQ]
    props = dict(dead.properties)
    assert props[Property.RETRY_TOPIC] == cr.TOPIC and props[Property.ORIGIN_MESSAGE_ID] == cr.offset_id(T0)
    assert props[Property.DELAY_TIME_LEVEL] == "0"
    assert dict(state.committed) == {(cr.TOPIC, 0): 1, (R, 0): 3}
    assert not cr.TRANSITIONS.enabled_actions(state, cr.Bounds())


def test_fallback_and_local_reconsume_chain() -> None:
    # The send back fails, the fallback stores a copy (level 3); then both fail: local re-consume after 5 s
    # with the count raised and the shared properties (RETRY-30); then the broker's copy reads the stored count.
    state = run(fresh(), cr.Publish(0), *pull(cr.TOPIC, 0), fail(), cr.SendBackFails(T0),
                cr.FallbackStored(T0))
    assert state.chains[0].copies[-1].path is cr.Path.CLIENT
    [parked] = [s for s in state.stored if s.key[0] == cr.SCHEDULE]
    assert (parked.level, parked.real, dict(parked.properties)[Property.RECONSUME_TIME]) == (3, (R, 0), "1")
    state = due(state)
    key = (R, 0, 0)
    state = run(state, *pull(R, 0), fail(key), cr.SendBackFails(key), cr.FallbackFails(key))
    held = state.holding(key)
    assert held is not None and held.reconsume_times == 2
    assert dict(held.properties)[Property.RETRY_TOPIC] == cr.TOPIC
    assert Property.RECONSUME_TIME not in dict(held.properties)
    assert dict(state.committed)[(R, 0)] == 0  # the waiting message holds the offset back (RETRY-17)
    state = run(state, cr.TimePasses(SEND_BACK_LOCAL_RETRY_DELAY_MS), cr.LocalReconsume((key,)))
    assert state.chains[0].deliveries[-1] == cr.Delivery(2, 10_000 + SEND_BACK_LOCAL_RETRY_DELAY_MS, True, (R, 0))
    state = due(run(state, fail(key), cr.BrokerAnswers(key)))
    state = run(state, *pull(R, 1))
    assert [d.reconsume_times for d in state.chains[0].deliveries] == [0, 1, 2, 2]


def test_retried_fallback_restarts_the_chain() -> None:
    # The client's send needed a retry: the copy starts again at 0 (RETRY-16, RETRY-25) and waits level 3.
    state = run(fresh(), cr.Publish(0), *pull(cr.TOPIC, 0), fail(), cr.SendBackFails(T0),
                cr.FallbackStored(T0, retried=True))
    copy = state.chains[0].copies[-1]
    assert (copy.path, copy.retried, copy.reconsume_times) == (cr.Path.CLIENT, True, 0)
    state = run(due(state), *pull(R, 0))
    assert [d.reconsume_times for d in state.chains[0].deliveries] == [0, 0]


def test_retry_queue_nums_zero_drops() -> None:
    state = run(fresh(retry_queue_nums=0), cr.Publish(0), *pull(cr.TOPIC, 0), fail(),
                cr.BrokerAnswers(T0))
    assert not state.chains[0].copies and not state.held and len(state.stored) == 1


def test_broadcasting_drops() -> None:
    state = run(fresh(message_model=MessageModel.BROADCASTING), cr.Publish(0), *pull(cr.TOPIC, 0),
                cr.ListenerReturns((T0,), None))
    assert not state.batches and not state.held and len(state.chains[0].deliveries) == 1


def test_batch_with_ack_index_and_a_short_delay_table() -> None:
    # Batches of two, ackIndex 0: the second message is sent back; a 2-level table clamps its level 3 to 2.
    state = run(fresh(batch_max=2, delay_table=(1_000, 2_000)), cr.Publish(0), cr.Publish(0),
                cr.Pulled(cr.TOPIC, 0, (0, 1)), cr.Deliver(cr.TOPIC, 0, (0, 1)))
    t1 = (cr.TOPIC, 0, 1)
    state = run(state, cr.ListenerReturns((T0, t1), ConsumeStatus.CONSUME_SUCCESS, ack_index=0),
                cr.BrokerAnswers(t1))
    [parked] = [s for s in state.stored if s.key[0] == cr.SCHEDULE]
    assert (parked.key, parked.level, dict(parked.properties)[Property.DELAY_TIME_LEVEL]) == \
        ((cr.SCHEDULE, 1, 0), 2, "2")
    assert state.committed == (((cr.TOPIC, 0), 2),) and state.chains[0].consumed
    assert not cr.enabled(state, cr.TimePasses(2_000 + cr.SCHEDULE_SLACK_MS + 1))


def test_orderly_suspend_then_dead_letter() -> None:
    # Orderly, max 1, batches of 2: m0 suspended alone (+1, 5 ms -> 10 ms); then with m1 it is dead-lettered while
    # m1 suspends the batch; then both are at the limit, m0's dead letter works again and m1's send fails: the
    # batch is suspended again, m0 shows what its send set (RETRY-30), m1 counts 2.
    t1 = (cr.TOPIC, 0, 1)
    suspend = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
    state = run(fresh(1, batch_max=2, orderly=True), cr.Publish(0), cr.Publish(0), *pull(cr.TOPIC, 0),
                cr.Pulled(cr.TOPIC, 0, (1,)))
    assert not cr.enabled(state, cr.Deliver(cr.TOPIC, 0, (1,)))  # one batch per queue (RETRY-29)
    state = run(state, cr.ListenerReturns((T0,), suspend, context_ms=5))
    assert not cr.enabled(state, cr.TimePasses(11))  # 5 ms is 10 ms (RETRY-24)
    state = run(state, cr.TimePasses(10))
    assert not cr.enabled(state, cr.Deliver(cr.TOPIC, 0, (0,)))  # as many as it may take, from m0 (RETRY-29)
    state = run(state, cr.Deliver(cr.TOPIC, 0, (0, 1)), cr.ListenerReturns((T0, t1), None),
                cr.DeadLetterSent(T0, cr.DeadLetterOutcome.STORED))
    assert [h.reconsume_times for h in state.held] == [1, 1]
    state = run(state, cr.TimePasses(1_000), cr.Deliver(cr.TOPIC, 0, (0, 1)), cr.ListenerReturns((T0, t1), None),
                cr.DeadLetterSent(T0, cr.DeadLetterOutcome.STORED), cr.DeadLetterSent(t1, cr.DeadLetterOutcome.FAILED))
    m0, m1 = state.held
    assert (m0.reconsume_times, m1.reconsume_times) == (1, 2)
    assert dict(m0.properties) == {Property.DELAY_TIME_LEVEL: "4", Property.ORIGIN_MESSAGE_ID: cr.uniq_id(0),
                                   Property.RETRY_TOPIC: cr.TOPIC}
    parked = [s for s in state.stored if s.key[0] == cr.SCHEDULE]
    assert [(p.chain, p.real, p.reconsume_times, dict(p.properties)[Property.RECONSUME_TIME]) for p in parked] == \
        [(0, (cr.DLQ, 0), 1, "1")] * 2
    assert not state.committed


def test_pulled_batches_are_cut_into_requests() -> None:
    # Three messages pulled together, batches of two: the requests are (0, 1) then (2,) (RETRY-28, RETRY-31).
    state = run(fresh(batch_max=2), cr.Publish(0), cr.Publish(0), cr.Publish(0))
    assert not cr.enabled(state, cr.Pulled(cr.TOPIC, 0, (1, 2)))  # a pull starts where the last one ended
    assert not cr.enabled(state, cr.Deliver(cr.TOPIC, 0, (0,)))  # only pulled messages reach the listener
    state = run(state, cr.Pulled(cr.TOPIC, 0, (0, 1, 2)))
    assert state.requests == (((cr.TOPIC, 0), (0, 1)), ((cr.TOPIC, 0), (2,)))
    assert not cr.enabled(state, cr.Deliver(cr.TOPIC, 0, (0,)))
    assert not cr.enabled(state, cr.Deliver(cr.TOPIC, 0, (2,)))  # in order
    state = run(state, cr.Deliver(cr.TOPIC, 0, (0, 1)), cr.Deliver(cr.TOPIC, 0, (2,)))
    t1, t2 = (cr.TOPIC, 0, 1), (cr.TOPIC, 0, 2)
    state = run(state, cr.ListenerReturns((t2,), ConsumeStatus.CONSUME_SUCCESS))
    assert dict(state.committed) == {(cr.TOPIC, 0): 0}  # m0 and m1 still held
    state = run(state, cr.ListenerReturns((T0, t1), ConsumeStatus.CONSUME_SUCCESS))
    assert dict(state.committed) == {(cr.TOPIC, 0): 3}


def test_local_reconsume_in_requests_of_the_batch_size() -> None:
    # Both sends of m0 and m1 fail: after 5 s they are consumed again as one request of two (RETRY-17, RETRY-28).
    t1 = (cr.TOPIC, 0, 1)
    state = run(fresh(batch_max=2), cr.Publish(0), cr.Publish(0), cr.Pulled(cr.TOPIC, 0, (0, 1)),
                cr.Deliver(cr.TOPIC, 0, (0, 1)), fail(T0, t1))
    for key in (T0, t1):
        state = run(state, cr.SendBackFails(key), cr.FallbackFails(key))
    state = run(state, cr.TimePasses(SEND_BACK_LOCAL_RETRY_DELAY_MS))
    assert not cr.enabled(state, cr.LocalReconsume((T0,)))
    state = run(state, cr.LocalReconsume((T0, t1)))
    assert [d.local for d in state.chains[1].deliveries] == [False, True]


def test_broker_restart_holds_a_due_copy_until_the_first_run() -> None:
    # m0's copy is due 1 s after it was parked; the broker restarts 500 ms before that: the schedule's tasks first
    # run 1000 ms after the start, so the copy moves then, not before (RETRY-32).
    state = run(fresh(delay_table=(1_000,)), cr.Publish(0), *pull(cr.TOPIC, 0), fail(), cr.BrokerAnswers(T0),
                cr.TimePasses(500), cr.BrokerRestarts())
    assert state.schedule_from_ms == 1_500
    state = run(state, cr.TimePasses(500))
    assert not cr.enabled(state, cr.ScheduleDelivers(1, 0))
    assert cr.enabled(state, cr.TimePasses(500 + cr.SCHEDULE_SLACK_MS))
    assert not cr.enabled(state, cr.TimePasses(500 + cr.SCHEDULE_SLACK_MS + 1))
    state = run(state, cr.TimePasses(500), cr.ScheduleDelivers(1, 0))
    assert dict(state.schedule) == {1: 1} and state.stored[-1].key == (R, 0, 0)


def test_refused_locks_let_a_suspended_batch_come_back_late() -> None:
    # Orderly, suspended for 1 s: the clock may not pass its end; once the consumer's lock requests fail, it may
    # (the batch waits for the lock), but the batch still does not come back before its end (RETRY-24, RETRY-33).
    assert cr.resumption_deadline(1_000) == 1_000 and cr.resumption_deadline(1_000, lock_held=False) is None
    suspend = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
    state = run(fresh(orderly=True), cr.Publish(0), *pull(cr.TOPIC, 0), cr.ListenerReturns((T0,), suspend))
    assert not cr.enabled(state, cr.TimePasses(1_001))
    state = run(state, cr.LocksRefused())
    assert not cr.enabled(state, cr.Deliver(cr.TOPIC, 0, (0,)))
    state = run(state, cr.TimePasses(5_000), cr.Deliver(cr.TOPIC, 0, (0,)))
    assert not cr.enabled(fresh(), cr.LocksRefused())  # a concurrent consumer holds no locks


@pytest.mark.slow  # long: the slow tier runs it (the README suite stays under 8 minutes)
def test_the_model_reaches_every_interesting_case() -> None:
    states = list(reachable(cr.model()))
    chains = [(s, c) for s in states for c in s.chains]
    dead = [c.copies[-1] for _, c in chains if c.copies and c.copies[-1].dead]
    assert {c.path for c in dead} == {cr.Path.BROKER, cr.Path.CLIENT, cr.Path.ORDERLY}
    assert any(c.context_level < 0 for c in dead)  # the listener's negative level
    assert any(s.config.retry_queue_nums == 0 and s.chains and not s.held and len(s.stored) == 1 for s in states)
    assert any(c.consumed and len(c.deliveries) > 1 for _, c in chains)
    # Levels past the 3-level table's end are clamped to 3.
    assert any(s.config.max_level == 3 and any(p.level == 3 and p.reconsume_times == 3 for p in s.stored)
               for s in states)
    # RETRY-18: a delivery can show a lower count than the one before it.
    assert any(any(b.reconsume_times < a.reconsume_times for a, b in itertools.pairwise(c.deliveries))
               for _, c in chains)
    assert any(s.config.client_version == VERSION_V3_0_11 and any(x.dead for x in c.copies) for s, c in chains)
    assert any(s.config.orderly and s.waiting and len(s.waiting[0].members) == 2 for s in states)
    assert any(s.config.batch_max == 2 and len(s.batches) == 2 for s in states)
    assert any(s.schedule_from_ms and any(x.key[0] == R for x in s.stored) for s in states)  # a restart, then moved
    assert any(s.locks_refused and s.waiting and s.now_ms > s.waiting[0].due_ms for s in states)  # late, waiting


@pytest.mark.parametrize(("max_times", "faults"), [(1, 0), (2, 1), (4, 2)])
def test_explore_other_bounds(max_times: int, faults: int) -> None:
    result = explore(cr.model(max_times, faults, listener_levels=(0, 2, -1), orderly=False, batches=False))
    assert result.ok, [v.describe() for v in result.violations]


# ------------------------------------------------------------------------------------------------------------
# Sensitivity: broken rules are caught
# ------------------------------------------------------------------------------------------------------------


def caught(mod: object, *clauses: str) -> set[str]:
    # Some broken rules make the chain endless (the clock keeps moving): the walk is cut short, but breadth
    # first it meets the shortest counterexamples long before.
    result = explore(mod.model(), max_states=6_000)  # type: ignore[attr-defined]
    assert not result.ok
    failed = result.failed_clauses()
    for clause in clauses:
        assert clause in failed, (clause, [v.describe() for v in result.violations])
    return failed


def test_mutant_dlq_threshold_off_by_one() -> None:
    mod = mutant(cr, "if reconsume_times >= max_times or delay_level < 0:",
                 "if reconsume_times > max_times or delay_level < 0:")
    caught(mod, "RETRY-7")


def test_mutant_delay_two_plus_n() -> None:
    mod = mutant(cr, "        delay_level = RETRY_BASE_DELAY_LEVEL + reconsume_times",
                 "        delay_level = RETRY_BASE_DELAY_LEVEL - 1 + reconsume_times")
    caught(mod, "RETRY-26")


def test_mutant_fallback_delay_two_plus_n() -> None:
    mod = mutant(cr, "    delay_level = RETRY_BASE_DELAY_LEVEL + reconsume_times\n    props[",
                 "    delay_level = RETRY_BASE_DELAY_LEVEL - 1 + reconsume_times\n    props[")
    caught(mod, "RETRY-26")


def test_mutant_reconsume_times_not_incremented() -> None:
    mod = mutant(cr, "effective_delay_level(delay_level, max_level), reconsume_times + 1,",
                 "effective_delay_level(delay_level, max_level), reconsume_times,")
    caught(mod, "RETRY-9")


def test_mutant_fallback_not_incremented() -> None:
    mod = mutant(cr, "header_times = reconsume_times if orderly else reconsume_times + 1",
                 "header_times = reconsume_times")
    caught(mod, "RETRY-16")


def test_mutant_clamping_missing() -> None:
    mod = mutant(cr, "    if level > max_level:\n        return max_level\n", "")
    result = explore(mod.model(), max_states=6_000)
    assert STEP_RAISED in {v.invariant for v in result.violations}
    assert "IndexError" in next(v.error for v in result.violations if v.invariant == STEP_RAISED)
    assert "RETRY-2" in result.failed_clauses()


def test_mutant_clamping_missing_crosshair() -> None:
    mod = mutant(cr, "    if level > max_level:\n        return max_level\n", "")
    # CrossHair checks delay_millis against effective_delay_level's contract, so the broken function itself
    # is where the contract fails.
    run_ = crosshair_mutant(mod, "effective_delay_level", per_condition_timeout=4)
    assert not run_.crashed and any(r.failed for r in run_.results)


@pytest.mark.slow  # a CrossHair subprocess over ten conditions: about 20 s
def test_mutant_dlq_threshold_crosshair() -> None:
    mod = mutant(cr, "if reconsume_times >= max_times or delay_level < 0:",
                 "if reconsume_times > max_times or delay_level < 0:")
    run_ = crosshair_mutant(mod, "consumer_send_back", per_condition_timeout=4)
    assert not run_.crashed and any(r.failed for r in run_.results)


def test_mutant_retry_queue_nums_zero_kept() -> None:
    mod = mutant(cr, "if retry_queue_nums <= 0:", "if retry_queue_nums < 0:")
    caught(mod, "RETRY-5")


def test_mutant_broadcasting_sends_back() -> None:
    mod = mutant(cr, "if message_model is MessageModel.BROADCASTING:", "if False:")
    caught(mod, "RETRY-14")


def test_mutant_local_reconsume_not_incremented() -> None:
    mod = mutant(cr, "reconsume_times=held.reconsume_times + 1, properties=props)",
                 "reconsume_times=held.reconsume_times, properties=props)")
    caught(mod, "RETRY-25")


def test_mutant_schedule_ignores_the_delay() -> None:
    mod = mutant(cr, "    return deliver_at - now_ms <= 0\n", "    return True\n")
    caught(mod, "RETRY-26")


def test_mutant_dead_letter_delivered() -> None:
    mod = mutant(cr, "CONSUMED_TOPICS = (TOPIC, RETRY)", "CONSUMED_TOPICS = (TOPIC, RETRY, DLQ)")
    caught(mod, "RETRY-27")


def test_mutant_local_retry_too_soon() -> None:
    mod = mutant(cr, "due = state.now_ms + SEND_BACK_LOCAL_RETRY_DELAY_MS", "due = state.now_ms + 1000")
    caught(mod, "RETRY-26")


def test_mutant_orderly_suspension_not_counted() -> None:
    mod = mutant(cr, "state = _set_held(state, attrs.evolve(held, reconsume_times=held.reconsume_times + 1))",
                 "state = _set_held(state, attrs.evolve(held, reconsume_times=held.reconsume_times))")
    caught(mod, "RETRY-21")


def test_mutant_orderly_dead_letter_below_the_limit() -> None:
    mod = mutant(cr, "if held.reconsume_times >= cfg.limit:", "if held.reconsume_times >= cfg.limit - 1:")
    caught(mod, "RETRY-23")


def test_mutant_requests_of_one_message_crosshair() -> None:
    # A concurrent consumer that hands pulled messages over one at a time whatever consumeMessageBatchMaxSize says.
    mod = mutant(cr, "return tuple(min(batch_max, pulled - start) for start in range(0, pulled, batch_max))",
                 "return tuple(1 for start in range(0, pulled, batch_max))")
    run_ = crosshair_mutant(mod, "consume_requests", per_condition_timeout=4)
    assert not run_.crashed and any(r.failed for r in run_.results)


def test_mutant_commit_passes_a_held_message() -> None:
    mod = mutant(cr, "return max(committed, min((*unfinished, frontier)))", "return max(committed, frontier)")
    caught(mod, "RETRY-28")
