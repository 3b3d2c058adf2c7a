"""Queues order, version profiles, clause tables."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketspec.spec import MessageQueue, VersionProfile, sorted_ids, sorted_queues
from rocketspec.spec.clauses import Clause, ClauseTable


def _units(s: str) -> list[int]:
    raw = s.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw), 2)]


def java_compare(a: str, b: str) -> int:
    """Java's String.compareTo, written out over UTF-16 code units."""
    ua, ub = _units(a), _units(b)
    for x, y in zip(ua, ub, strict=False):
        if x != y:
            return x - y
    return len(ua) - len(ub)


def test_queue_order_is_topic_broker_queue_id() -> None:
    qs = [MessageQueue("T", "broker-b", 0), MessageQueue("T", "broker-a", 3), MessageQueue("S", "broker-z", 9),
          MessageQueue("T", "broker-a", 1)]
    assert sorted_queues(qs) == [MessageQueue("S", "broker-z", 9), MessageQueue("T", "broker-a", 1),
                                 MessageQueue("T", "broker-a", 3), MessageQueue("T", "broker-b", 0)]


def test_queue_text_is_rocketmq_to_string() -> None:
    assert str(MessageQueue("T", "b", 2)) == "MessageQueue [topic=T, brokerName=b, queueId=2]"


@given(st.lists(st.text(max_size=4), max_size=6))
def test_ids_sort_like_java(ids: list[str]) -> None:
    out = sorted_ids(ids)
    assert len(out) == len(set(ids))
    for a, b in itertools.pairwise(out):
        assert java_compare(a, b) < 0


def test_supplementary_characters_sort_as_utf16() -> None:
    # U+1F600 is a surrogate pair (D83D DE00): Java puts it before U+FF21.
    assert sorted_ids(["\uff21", "\U0001f600"]) == ["\U0001f600", "\uff21"]


def test_version_profiles() -> None:
    assert VersionProfile.of("4.9.3").at_least("4.9.0")
    assert not VersionProfile.of("4.9.3").at_least("4.9.4")
    assert str(VersionProfile.of("4.9.8")) == "4.9.8"
    with pytest.raises(ValueError):
        VersionProfile.of("5.1.0")
    with pytest.raises(ValueError):
        VersionProfile.of("4.9")


def test_clause_table_rejects_bad_tables() -> None:
    with pytest.raises(ValueError):
        Clause("pull3", "x", "y")
    with pytest.raises(ValueError):
        ClauseTable("a", "PULL", (Clause("SEND-1", "x", "y"),))
    with pytest.raises(ValueError):
        ClauseTable("a", "PULL", (Clause("PULL-1", "x", "y"), Clause("PULL-1", "z", "y")))
    table = ClauseTable("a", "PULL", (Clause("PULL-1", "x", "y"),))
    with pytest.raises(ValueError):
        table.oracle("PULL-2")
