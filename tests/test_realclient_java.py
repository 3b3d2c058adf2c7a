"""The official Apache RocketMQ 4.9.8 Java client: the same program against the real 4.9.8 cluster and `serve`.

Each test runs one scenario of the driver (``tests/realclients/java``, compiled with ``javac`` against the real
installation's ``lib/*``) on both targets and compares what the client observed: results, properties, order, counts
and error codes. A difference fails the test unless it is documented in docs/serve.md as deliberate, and then the
test asserts it. Needs the real installation (tests/realcluster.py says how it is found).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from javacompare import Targets, assert_same
from realcluster import JavaDriver, RealCluster

from rocketspec.refimpl.served import ServedCluster

pytestmark = pytest.mark.xdist_group("rocketmq-real")


@pytest.fixture(scope="module")
def targets(java_driver: JavaDriver, real_rocketmq: RealCluster, served_for_java: ServedCluster) -> Iterator[Targets]:
    yield Targets(java_driver, real_rocketmq, served_for_java)


def test_sync_send(targets: Targets) -> None:
    real, served = targets.both("producer.syncSend", count=4)
    for obs in (real, served):
        assert [r["status"] for r in obs["results"]] == ["SEND_OK"] * 4
    assert_same(real, served, volatile={"msgId", "offsetMsgId", "broker", "queueId", "queueOffset"})
