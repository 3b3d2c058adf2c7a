"""DefaultMQAdminExt (the official 4.9.8 admin client mqadmin is built on): the same program against the real 4.9.8
cluster and `serve`, compared with ``assert_same``.

``admin.topics``: createTopic on every master, examineTopicRouteInfo, examineTopicStats before and after sends,
fetchAllTopicList, fetchTopicsByCLuster, examineBrokerClusterInfo, fetchBrokerRuntimeStats (key sets),
getBrokerConfig (key set and values), updateBrokerConfig (a known key, an unknown one, a black-listed one),
earliestMsgStoreTime, deleteTopicInBroker and deleteTopicInNameServer.
``admin.consumers``: examineConsumeStats after consuming, examineConsumerConnectionInfo,
examineProducerConnectionInfo, getConsumerRunningInfo (forwarded to the client), subscription groups (create,
examine, delete), resetOffsetByTimestamp (the consumer consumes everything again) and the errors of unknown names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from javacompare import Targets, assert_same
from realcluster import JavaDriver, RealCluster

from rocketspec.refimpl.served import ServedCluster

pytestmark = pytest.mark.xdist_group("rocketmq-real")

_ADDR = re.compile(r"\d+\.\d+\.\d+\.\d+:\d+")


def _no_addrs(value: Any) -> Any:
    """Broker addresses inside error messages differ between the two clusters."""
    if isinstance(value, dict):
        return {k: _no_addrs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_addrs(v) for v in value]
    return _ADDR.sub("<addr>", value) if isinstance(value, str) else value


@pytest.fixture(scope="module")
def targets(java_driver: JavaDriver, real_rocketmq: RealCluster, served_for_java: ServedCluster) -> Iterator[Targets]:
    yield Targets(java_driver, real_rocketmq, served_for_java)


def test_topic_admin(targets: Targets) -> None:
    real, served = targets.both("admin.topics")
    assert real["listed"] and not real["listedAfterDelete"]
    assert real["stats"] and real["configKeys"]
    for obs in (real, served):
        # Messages put since boot: other tests share the brokers; a number on both.
        for broker in ("broker-a", "broker-b"):
            assert int(obs["runtime"].pop(f"{broker}.msgPutTotalTodayNow")) >= 6
    assert_same(_no_addrs(real), _no_addrs(served))


def test_consumer_admin(targets: Targets) -> None:
    real, served = targets.both("admin.consumers", timeout=180)
    assert real["reconsumed"] is True
    assert set(real["reset"].values()) == {0}
    assert_same(_no_addrs(real), _no_addrs(served), volatile={"clientId", "clientAddr"})
