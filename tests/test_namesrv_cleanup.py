"""Name-server route cleanup over TCP (``RouteInfoManager.onChannelDestroy``): a connection that registered one
address under two broker names and two clusters, and a second address beside it, leaves nothing behind once it closes;
the served cluster's own broker stays."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from rocketspec.conformance import requests
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.route import loads_lenient
from rocketspec.refimpl.served import ServedCluster
from rocketspec.spec.protocol import ResponseCode

FAKE, OTHER = "127.0.0.1:1", "127.0.0.1:2"


@pytest.fixture(scope="module")
def served() -> Iterator[ServedCluster]:
    with ServedCluster(brokers=1) as cluster:
        yield cluster


def cluster_info(addr: str) -> dict[str, object]:
    with WireClient(addr) as client:
        return loads_lenient(client.request(requests.cluster_info()).body)


def test_closing_the_connection_forgets_every_name_and_cluster_it_registered(served: ServedCluster) -> None:
    before = cluster_info(served.namesrv_addr)
    with WireClient(served.namesrv_addr) as fake:
        for cluster, name, addr in [("c1", "fake-a", FAKE), ("c2", "fake-x", FAKE), ("c3", "fake-x", FAKE),
                                    ("c1", "fake-o", OTHER)]:
            answer = fake.request(requests.register_broker(cluster, name, addr, topics={f"T-{name}": {}}))
            assert answer.code == ResponseCode.SUCCESS
        during = cluster_info(served.namesrv_addr)
        assert {"fake-a", "fake-x", "fake-o"} <= set(during["brokerAddrTable"])
        assert {"c1", "c2", "c3"} <= set(during["clusterAddrTable"])
    deadline = time.monotonic() + 10  # the close reaches the name server's processing asynchronously
    while cluster_info(served.namesrv_addr) != before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cluster_info(served.namesrv_addr) == before
    with WireClient(served.namesrv_addr) as client:
        for name in ("fake-a", "fake-x", "fake-o"):
            assert client.request(requests.route(f"T-{name}")).code == ResponseCode.TOPIC_NOT_EXIST
