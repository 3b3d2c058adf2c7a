"""Sensitivity of the broker cases for offsets, queries, clients and locks: each area's cases catch a reference broker
with one of its rules broken, and pass on the unbroken one.

Each test changes ONE refimpl rule (``monkeypatch`` of a refimpl method) and runs two selected cases on a served
cluster with it (``tests/conformance_support.py``).
"""

from __future__ import annotations

import pytest
from conformance_support import Outcomes, expect_caught, outcomes, unbroken_fixture

from rocketspec.conformance.broker import locks as broker_locks_cases
from rocketspec.conformance.model import Outcome
from rocketspec.refimpl.broker.clients import ConsumerManager
from rocketspec.refimpl.broker.locks import LockEntry, RebalanceLockManager
from rocketspec.refimpl.broker.offsets import ConsumerOffsetManager
from rocketspec.refimpl.broker.topics import TopicConfig, TopicConfigManager
from rocketspec.refimpl.index import IndexService, QueryResult
from rocketspec.refimpl.remoting import Channel
from rocketspec.refimpl.store import MessageStore
from rocketspec.spec.protocol import retry_topic
from rocketspec.spec.queues import MessageQueue

CASES = [
    "broker/offsets/lower-commit-overwrites", "broker/offsets/search-after-last", "broker/offsets/search-before-first",
    "broker/query/query-by-key-max-num", "broker/query/query-by-key-found", "broker/clients/notify-on-unregister",
    "broker/clients/notify-on-new-consumer", "broker/clients/heartbeat-creates-retry-topic",
    "broker/clients/consumer-list-one", "broker/locks/lock-held-refused", "broker/locks/lock-free-queues-granted",
    "broker/locks/unlock-frees-for-other-client",
]
unbroken = unbroken_fixture(CASES)



def test_offsets_commit_keeping_the_maximum_is_caught(unbroken: Outcomes,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken OFF-8: the broker keeps the larger of the stored and the committed offset."""
    original = ConsumerOffsetManager.commit

    def commit_increase_only(self: ConsumerOffsetManager, client_host: str, group: str, topic: str, queue_id: int,
                             offset: int) -> None:
        original(self, client_host, group, topic, queue_id, max(offset, self.query(group, topic, queue_id)))

    monkeypatch.setattr(ConsumerOffsetManager, "commit", commit_increase_only)
    expect_caught(unbroken, "broker/offsets/lower-commit-overwrites", "broker/offsets/search-before-first")


def test_offsets_search_answering_the_max_offset_past_the_last_is_caught(unbroken: Outcomes,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken BRK-11: a time after every message answers the max offset instead of the last message's offset."""
    original = MessageStore.offset_by_time

    def past_last_is_max(self: MessageStore, topic: str, queue_id: int, timestamp_ms: int) -> int:
        found = original(self, topic, queue_id, timestamp_ms)
        last = self.max_offset(topic, queue_id) - 1
        if found == last and self.message_store_timestamp(topic, queue_id, last) < timestamp_ms:
            return last + 1
        return found

    monkeypatch.setattr(MessageStore, "offset_by_time", past_last_is_max)
    expect_caught(unbroken, "broker/offsets/search-after-last", "broker/offsets/search-before-first")


def test_query_ignoring_max_num_is_caught(unbroken: Outcomes, monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken BRK-12: QUERY_MESSAGE answers every message carrying the key, whatever maxNum says."""
    original = IndexService.query

    def unlimited(self: IndexService, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryResult:
        return original(self, topic, key, 10_000, begin, end)

    monkeypatch.setattr(IndexService, "query", unlimited)
    expect_caught(unbroken, "broker/query/query-by-key-max-num", "broker/query/query-by-key-found")


def test_clients_no_notification_on_unregister_is_caught(unbroken: Outcomes,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken BRK-14: UNREGISTER_CLIENT removes the consumer but notifies no one."""
    original = ConsumerManager.unregister

    def silent(self: ConsumerManager, group: str, channel: Channel, notify: bool) -> None:
        original(self, group, channel, False)

    monkeypatch.setattr(ConsumerManager, "unregister", silent)
    expect_caught(unbroken, "broker/clients/notify-on-unregister", "broker/clients/notify-on-new-consumer")


def test_locks_granting_held_queues_is_caught(unbroken: Outcomes, monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken REB-17: LOCK_BATCH_MQ takes a queue over from another live holder."""

    def grab(self: RebalanceLockManager, group: str, mqs: list[MessageQueue], client_id: str) -> set[MessageQueue]:
        queues = self.table.setdefault(group, {})
        for mq in mqs:
            queues[mq] = LockEntry(client_id, self._clock())
        return set(mqs)

    monkeypatch.setattr(RebalanceLockManager, "try_lock_batch", grab)
    expect_caught(unbroken, "broker/locks/lock-held-refused", "broker/locks/lock-free-queues-granted")


def test_locks_unlock_freeing_nothing_is_caught(unbroken: Outcomes, monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken BRK-16: UNLOCK_BATCH_MQ answers SUCCESS but keeps the locks."""

    def keep(self: RebalanceLockManager, group: str, mqs: list[MessageQueue], client_id: str) -> None:
        return None

    monkeypatch.setattr(RebalanceLockManager, "unlock_batch", keep)
    expect_caught(unbroken, "broker/locks/unlock-frees-for-other-client", "broker/locks/lock-free-queues-granted")


def test_clients_heartbeat_without_retry_topic_is_caught(unbroken: Outcomes,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken BRK-13: a consumer heartbeat registers the consumer but creates no %RETRY% topic."""

    def no_retry_topic(self: TopicConfigManager, group: str, queue_nums: int, topic_sys_flag: int = 0) -> TopicConfig:
        return TopicConfig(retry_topic(group), queue_nums, queue_nums)

    monkeypatch.setattr(TopicConfigManager, "create_retry_topic", no_retry_topic)
    expect_caught(unbroken, "broker/clients/heartbeat-creates-retry-topic", "broker/clients/consumer-list-one")


@pytest.mark.parametrize(("broker_expiry_ms", "caught"), [(5_000, False), (1_000, True)])
def test_the_lock_expiry_case_measures_the_lifetime(monkeypatch: pytest.MonkeyPatch, broker_expiry_ms: int,
                                                    caught: bool) -> None:
    """REB-18 with the 60 s lifetime shortened to 5 s on the suite's side: a broker whose lock also lives 5 s
    passes; broken, one whose lock lapses after 1 s (another client takes it over early) is caught."""
    monkeypatch.setattr(broker_locks_cases, "BROKER_LOCK_EXPIRY_MS", 5_000)
    monkeypatch.setattr(RebalanceLockManager.__init__, "__defaults__", (broker_expiry_ms,))
    got = outcomes(["broker/locks/lock-expires"])["broker/locks/lock-expires"]
    assert got is (Outcome.FAILED if caught else Outcome.PASSED), got
