"""What a 4.9.8 Java consumer receives on every path a message takes, on the real broker and on `serve`.

Each scenario of ``PropertiesScenarios`` sends and consumes on one path (plain, delayed, batch, retried, dead-lettered,
transactional) and dumps every delivery with all its fields and properties; both targets must agree after the usual
volatile fields (ids, hosts, timestamps, offsets) are normalized. Also: topics the broker creates itself (auto-created,
retry, dead-letter) are routed by the name server at once on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from javacompare import Targets, assert_same
from realcluster import JavaDriver, RealCluster

from rocketspec.refimpl.served import ServedCluster

pytestmark = pytest.mark.xdist_group("rocketmq-real")


@pytest.fixture(scope="module")
def targets(java_driver: JavaDriver, real_rocketmq: RealCluster, served_for_java: ServedCluster) -> Iterator[Targets]:
    yield Targets(java_driver, real_rocketmq, served_for_java)


def props(obs: dict[str, Any], key: str = "received") -> list[dict[str, str]]:
    return [m["properties"] for m in obs[key]]


def test_plain_message_properties(targets: Targets) -> None:
    real, served = targets.both("properties.plain")
    assert props(real)[0]["CLUSTER"] == "DefaultCluster" and "WAIT" not in props(real)[0]
    assert_same(real, served)


def test_compressed_message_properties(targets: Targets) -> None:
    real, served = targets.both("properties.compressed")
    assert real["received"][0]["body"] == "<6011 chars>" and real["received"][0]["sysFlag"] & 1  # compressed
    assert_same(real, served)


def test_delayed_message_keeps_delay_and_wait(targets: Targets) -> None:
    """4.9.8 writes the delivered message with the properties it was parked with: DELAY, REAL_TOPIC, REAL_QID and
    the producer's WAIT=true stay."""
    real, served = targets.both("properties.delayed")
    delivered = props(real)[0]
    assert (delivered["DELAY"], delivered["WAIT"]) == ("2", "true") and "REAL_TOPIC" in delivered
    assert_same(real, served)


def test_batch_message_properties(targets: Targets) -> None:
    real, served = targets.both("properties.batch")
    assert len(real["received"]) == 2
    assert_same(real, served)


def test_retried_message_properties(targets: Targets) -> None:
    real, served = targets.both("properties.retried")
    retried = props(real)[1]
    assert retried["RETRY_TOPIC"].startswith("JPropRetry") and retried["REAL_TOPIC"].startswith("%RETRY%")
    assert (retried["DELAY"], retried["WAIT"]) == ("3", "false")
    assert_same(real, served)


def test_dead_letter_message_properties(targets: Targets) -> None:
    real, served = targets.both("properties.deadLetter")
    assert real["deadLetter"][0]["topic"].startswith("%DLQ%") and props(real, "deadLetter")[0]["DELAY"] == "0"
    assert_same(real, served)


def test_transactional_message_properties(targets: Targets) -> None:
    real, served = targets.both("properties.transactional")
    assert real["checked"] and {p["TRAN_MSG"] for p in props(real)} == {"true"}
    assert "TRANSACTION_CHECK_TIMES" in props(real)[0]  # the checked one ("txn-checked" sorts first)
    # The check-back shows WAIT=false (renewHalfMessageInner changes the map after writing), the commit WAIT=true.
    assert real["checkBackMessage"]["properties"]["WAIT"] == "false" and props(real)[0]["WAIT"] == "true"
    # The half topic is the cluster's, and the real cluster serves the whole session: its offsets count every
    # transaction of earlier tests, so where the checked half message stands in it is not this test's to compare.
    for obs in (real, served):
        obs["checkBackMessage"].pop("queueOffset")
    assert_same(real, served)


def test_topics_the_broker_creates_are_routed_at_once(targets: Targets) -> None:
    real, served = targets.both("properties.brokerCreatedRoutes")
    assert real == {**real, "autoCreatedRouted": True, "retryRouted": True, "dlqRouted": True}
    assert_same(real, served, volatile={"ms"})
