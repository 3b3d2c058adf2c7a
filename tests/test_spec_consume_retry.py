"""consume_retry: delay levels, the broker's send-back decision, the client fallback, and the retry chain."""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Iterator

import attrs
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
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
    VERSION_V3_0_11,
    VERSION_V3_4_9,
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


FAIL = cr.ListenerReturns(ConsumeStatus.RECONSUME_LATER)


def fresh(max_times: int = 3, faults: int = 4, **kw: object) -> cr.RetryState:
    base = cr.RetryState(MessageModel.CLUSTERING, 409, max_times, DEFAULT_MAX_RECONSUME_TIMES, 1, 0,
                         faults_left=faults)
    return attrs.evolve(base, **kw)


def test_explore_default_model() -> None:
    started = time.monotonic()
    result = explore(cr.model())
    assert result.ok and result.complete and not result.violations
    assert result.states > 10_000
    assert time.monotonic() - started < 20


def test_broker_chain_until_dead_letter() -> None:
    # No faults, max 3: delivered with reconsumeTimes 0, 1, 2, 3, each after 10 s, 30 s, 1 min; then %DLQ%.
    state = fresh()
    for _ in range(3):
        state = run(state, cr.Pull(), FAIL, cr.BrokerAnswers(), cr.TimePasses(), cr.ScheduleDelivers())
    state = run(state, cr.Pull(), FAIL, cr.BrokerAnswers())
    assert state.phase is cr.Phase.DEAD
    assert [d.reconsume_times for d in state.deliveries] == [0, 1, 2, 3]
    assert [d.at_ms for d in state.deliveries] == [0, 10_000, 40_000, 100_000]
    copies = [(c.dead, c.reconsume_times) for c in state.copies]
    assert copies == [(False, 1), (False, 2), (False, 3), (True, 4)]
    assert not any(cr.enabled(state, a) for a in cr.model().actions(state))


def test_fallback_and_local_reconsume_chain() -> None:
    # The send back fails, the fallback stores a copy (level 3); then both fail: local re-consume after 5 s
    # with the count raised; then the broker's copy reads the stored count, so the next delivery repeats it.
    state = run(fresh(), cr.Pull(), FAIL, cr.SendBackFails(), cr.FallbackStored())
    assert state.copies[-1].path is cr.Path.CLIENT and state.due_ms == 10_000
    state = run(state, cr.TimePasses(), cr.ScheduleDelivers(), cr.Pull(), FAIL, cr.SendBackFails(),
                cr.FallbackFails())
    assert state.phase is cr.Phase.LOCAL_WAIT and state.local_times == 2 and state.stored_times == 1
    state = run(state, cr.TimePasses(), cr.LocalReconsume())
    assert state.deliveries[-1] == cr.Delivery(2, 10_000 + SEND_BACK_LOCAL_RETRY_DELAY_MS, local=True)
    state = run(state, FAIL, cr.BrokerAnswers(), cr.TimePasses(), cr.ScheduleDelivers(), cr.Pull())
    assert [d.reconsume_times for d in state.deliveries] == [0, 1, 2, 2]


def test_retried_fallback_restarts_the_chain() -> None:
    # The client's send needed a retry: the copy starts again at 0 (RETRY-16, RETRY-25) and waits level 3.
    state = run(fresh(), cr.Pull(), FAIL, cr.SendBackFails(), cr.FallbackStored(retried=True))
    copy = state.copies[-1]
    assert (copy.path, copy.retried, copy.reconsume_times, state.scheduled_level) == (cr.Path.CLIENT, True, 0, 3)
    state = run(state, cr.TimePasses(), cr.ScheduleDelivers(), cr.Pull())
    assert [d.reconsume_times for d in state.deliveries] == [0, 0]


def test_retry_queue_nums_zero_drops() -> None:
    state = run(fresh(retry_queue_nums=0), cr.Pull(), FAIL, cr.BrokerAnswers())
    assert state.phase is cr.Phase.DISCARDED and not state.copies


def test_broadcasting_drops() -> None:
    state = run(fresh(message_model=MessageModel.BROADCASTING), cr.Pull(), cr.ListenerReturns(None))
    assert state.phase is cr.Phase.DISCARDED and len(state.deliveries) == 1


def test_the_model_reaches_every_interesting_case() -> None:
    states = list(reachable(cr.model()))
    dead = [s for s in states if s.phase is cr.Phase.DEAD]
    assert {s.copies[-1].path for s in dead} == {cr.Path.BROKER, cr.Path.CLIENT}
    assert any(s.copies[-1].context_level < 0 for s in dead)  # the listener's negative level
    assert any(s.retry_queue_nums == 0 and s.phase is cr.Phase.DISCARDED for s in states)
    assert any(s.message_model is MessageModel.BROADCASTING and s.phase is cr.Phase.DISCARDED for s in states)
    assert any(s.phase is cr.Phase.CONSUMED and len(s.deliveries) > 1 for s in states)
    # Levels past the table's end (start 15: 3 + 16 = 19) are clamped to 18.
    assert any(s.start_times == 15 and s.phase is cr.Phase.SCHEDULED and s.copies[-1].reconsume_times == 17
               and s.scheduled_level == MAX_DELAY_LEVEL for s in states)
    # RETRY-18: a delivery can show a lower count than the one before it.
    assert any(any(b.reconsume_times < a.reconsume_times for a, b in itertools.pairwise(s.deliveries))
               for s in states)
    # The old client's chain is cut by the group's max.
    assert any(s.client_version == VERSION_V3_0_11 and s.phase is cr.Phase.DEAD for s in states)


@pytest.mark.parametrize(("max_times", "faults"), [(1, 0), (2, 1), (4, 2)])
def test_explore_other_bounds(max_times: int, faults: int) -> None:
    result = explore(cr.model(max_times, faults, listener_levels=(0, 2, -1), high_start=14))
    assert result.ok, [v.describe() for v in result.violations]


# ------------------------------------------------------------------------------------------------------------
# Sensitivity: broken rules are caught
# ------------------------------------------------------------------------------------------------------------


def caught(mod: object, *clauses: str) -> set[str]:
    # Some broken rules make the chain endless (the clock keeps moving): the walk is cut short, but breadth
    # first it meets the shortest counterexamples long before.
    result = explore(mod.model(), max_states=20_000)  # type: ignore[attr-defined]
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
    mod = mutant(cr, "effective_delay_level(delay_level), reconsume_times + 1,",
                 "effective_delay_level(delay_level), reconsume_times,")
    caught(mod, "RETRY-9")


def test_mutant_fallback_not_incremented() -> None:
    mod = mutant(cr, "header_times = reconsume_times if orderly else reconsume_times + 1",
                 "header_times = reconsume_times")
    caught(mod, "RETRY-16")


def test_mutant_clamping_missing() -> None:
    mod = mutant(cr, "    if level > max_level:\n        return max_level\n", "")
    result = explore(mod.model(), max_states=20_000)
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
    mod = mutant(cr, "phase=Phase.LOCAL_WAIT, local_times=state.local_times + 1,",
                 "phase=Phase.LOCAL_WAIT, local_times=state.local_times,")
    caught(mod, "RETRY-25")


def test_mutant_schedule_ignores_the_delay() -> None:
    mod = mutant(cr, "    return deliver_at - now_ms <= 0\n", "    return True\n")
    caught(mod, "RETRY-26")


def test_mutant_dead_letter_delivered() -> None:
    mod = mutant(cr, "            return phase is Phase.READY\n",
                 "            return phase in (Phase.READY, Phase.DEAD)\n")
    caught(mod, "RETRY-27")


def test_mutant_local_retry_too_soon() -> None:
    mod = mutant(cr, "due_ms=state.now_ms + SEND_BACK_LOCAL_RETRY_DELAY_MS,", "due_ms=state.now_ms + 1000,")
    caught(mod, "RETRY-26")
