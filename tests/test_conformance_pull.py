"""Sensitivity of the broker cases for pull, long polling and filtering: each area's cases catch a reference broker
with one of its rules broken, and pass on the unbroken one.

Each test changes ONE refimpl rule (``monkeypatch`` of a refimpl function or table) and runs two selected cases on a
served cluster with it (``tests/conformance_support.py``).
"""

from __future__ import annotations

import pytest
from conformance_support import Outcomes, expect_caught, unbroken_fixture

from rocketspec.refimpl.broker import pull as broker_pull
from rocketspec.refimpl.broker.clients import SubscriptionData
from rocketspec.refimpl.broker.pull import PullRequestHoldService
from rocketspec.spec.protocol import GetMessageStatus, ResponseCode

CASES = [
    "broker/pull/offset-overflow-badly", "broker/pull/found", "broker/pull/subscription-parse-failed",
    "broker/pull/commit-offset", "broker/longpoll/held-at-max", "broker/longpoll/woken-by-new-message",
    "broker/longpoll/suspend-with-messages-answers-at-once", "broker/filter/tag-single",
    "broker/filter/tag-star-all", "broker/filter/sql92-match", "broker/filter/check-client-config-tag",
]
unbroken = unbroken_fixture(CASES)


def test_pull_overflow_badly_not_moved_is_caught(unbroken: Outcomes,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken PULL-10: OFFSET_OVERFLOW_BADLY answers PULL_NOT_FOUND instead of PULL_OFFSET_MOVED."""
    monkeypatch.setitem(broker_pull._STATUS_CODES, GetMessageStatus.OFFSET_OVERFLOW_BADLY,
                        ResponseCode.PULL_NOT_FOUND)
    expect_caught(unbroken, "broker/pull/offset-overflow-badly", "broker/pull/found")


@pytest.mark.parametrize(("flag", "caught", "still_passing"), [
    # Broken PULL-18: the commit flag is not honoured (the broker never commits on a pull).
    ("PULL_FLAG_COMMIT_OFFSET", "broker/pull/commit-offset", "broker/pull/found"),
    # Broken PULL-13: the suspend flag is ignored, so PULL_NOT_FOUND is answered at once instead of held.
    ("PULL_FLAG_SUSPEND", "broker/longpoll/held-at-max", "broker/longpoll/suspend-with-messages-answers-at-once"),
])
def test_pull_flag_ignored_is_caught(unbroken: Outcomes, monkeypatch: pytest.MonkeyPatch, flag: str, caught: str,
                                     still_passing: str) -> None:
    """Broken PULL-18 / PULL-13: the broker never sees the request's commit (suspend) flag set."""
    monkeypatch.setattr(broker_pull, flag, 0)
    expect_caught(unbroken, caught, still_passing)


def test_pull_lenient_subscription_parse_is_caught(unbroken: Outcomes,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken PULL-17 / FILTER-1: a tag expression of separators only ('||') parses as 'no tag' instead of failing."""
    original = SubscriptionData.build.__func__  # type: ignore[attr-defined]

    def lenient(cls: type[SubscriptionData], topic: str, sub_string: str | None, expression_type: str | None = None,
                sub_version: int = 0) -> SubscriptionData:
        if sub_string is not None and not sub_string.replace("||", ""):
            sub_string = " "
        return original(cls, topic, sub_string, expression_type, sub_version)  # type: ignore[no-any-return]

    monkeypatch.setattr(SubscriptionData, "build", classmethod(lenient))
    expect_caught(unbroken, "broker/pull/subscription-parse-failed", "broker/pull/found")


def test_longpoll_arrival_not_waking_is_caught(unbroken: Outcomes,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken PULL-15: a message arrival does not wake held pulls (only a slow periodic check would answer them)."""
    original = PullRequestHoldService.notify_arriving

    def periodic_only(self: PullRequestHoldService, topic: str, queue_id: int, max_offset: int,
                      tags_code: int | None = None) -> None:
        if tags_code is None:  # the periodic check passes no tags code; an arrival does
            original(self, topic, queue_id, max_offset, tags_code)

    monkeypatch.setattr(PullRequestHoldService, "notify_arriving", periodic_only)
    monkeypatch.setattr(broker_pull, "LONG_POLLING_CHECK_INTERVAL_MS", 60_000)
    expect_caught(unbroken, "broker/longpoll/woken-by-new-message", "broker/longpoll/held-at-max")


def test_filter_tags_ignored_is_caught(unbroken: Outcomes, monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken FILTER-2: the broker does not filter by tags code (every consume-queue entry matches)."""
    monkeypatch.setattr(SubscriptionData, "matches", lambda self, tags_code: True)
    expect_caught(unbroken, "broker/filter/tag-single", "broker/filter/tag-star-all")


def test_filter_sql92_null_as_match_is_caught(unbroken: Outcomes, monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken FILTER-16: an SQL92 expression is ignored at the store (every message passes)."""
    monkeypatch.setattr(broker_pull, "commit_log_filter", lambda subscription, data, broker_name: None)
    expect_caught(unbroken, "broker/filter/sql92-match", "broker/filter/check-client-config-tag")
