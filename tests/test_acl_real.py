"""Plain ACL against the reference: a real 4.9.8 cluster with ``aclEnable=true`` beside `serve --acl`, same file.

A dedicated real cluster (one broker; ``conf/plain_acl.yml`` under its ``rmqhome``, as ``PlainPermissionManager``
reads it) and a ``ServedCluster`` with ``acl=`` load acl_support.ACL_YML. Raw requests must get the same code and
remark from both (and the pinned REAL_ANSWERS); the official Java client with ``AclClientRPCHook`` must observe the
same: an admin creates topics, the user sends and consumes, a denied topic, missing or wrong credentials and an
admin request from the user are refused alike. Needs the real installation (tests/realcluster.py).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from acl_support import (
    ACL_YML,
    ADMIN_AK,
    ADMIN_SK,
    ALLOWED_TOPIC,
    DENIED_TOPIC,
    REAL_ANSWERS,
    USER_AK,
    USER_SK,
    probe_requests,
)
from javacompare import assert_same
from realcluster import BROKER_EXTRA_CONF, JavaDriver, RealCluster, require_home

from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.served import ServedCluster

pytestmark = pytest.mark.xdist_group("rocketmq-real")


@pytest.fixture(scope="module")
def real_acl() -> Iterator[RealCluster]:
    home = require_home()
    with tempfile.TemporaryDirectory(prefix="rocketspec-acl-") as base:
        directory = Path(base) / "rmq-acl"
        conf = directory / "rmqhome" / "conf"
        conf.mkdir(parents=True)
        (conf / "plain_acl.yml").write_text(ACL_YML)
        # mqadmin (cluster.sh admin) signs with the credentials of tools.yml.
        (conf / "tools.yml").write_text(f"accessKey: {ADMIN_AK}\nsecretKey: {ADMIN_SK}\n")
        with RealCluster(home, directory, brokers=1, extra_conf=BROKER_EXTRA_CONF + "aclEnable=true\n") as cluster:
            yield cluster


@pytest.fixture(scope="module")
def served_acl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    path = tmp_path_factory.mktemp("acl") / "plain_acl.yml"
    path.write_text(ACL_YML)
    with ServedCluster(1, acl=path) as served:
        yield served


def _answers(addr: str) -> dict[str, tuple[int, str | None]]:
    out = {}
    with WireClient(addr, timeout=15) as client:
        for name, request in probe_requests().items():
            response = client.request(request)
            out[name] = (response.code, response.remark)
    return out


def test_raw_requests_get_the_same_answers(real_acl: RealCluster, served_acl: ServedCluster) -> None:
    real = _answers(real_acl.broker_addrs["broker-a"])
    served = _answers(served_acl.broker_addrs["broker-a"])
    assert real == REAL_ANSWERS
    assert served == real


def test_java_client_with_acl_client_rpc_hook(java_driver: JavaDriver, real_acl: RealCluster,
                                              served_acl: ServedCluster) -> None:
    args = {"ak": USER_AK, "sk": USER_SK, "adminAk": ADMIN_AK, "adminSk": ADMIN_SK, "topic": ALLOWED_TOPIC,
            "denied": DENIED_TOPIC, "group": "AclJavaGroup", "count": 4}
    with ThreadPoolExecutor(2) as pool:
        real_run = pool.submit(java_driver.run, real_acl.namesrv_addr, "acl.roundTrip", **args)
        served_run = pool.submit(java_driver.run, served_acl.namesrv_addr, "acl.roundTrip", **args)
        real, served = real_run.result(), served_run.result()
    assert real["sends"] == ["SEND_OK"] * 4 and real["received"] == [f"acl-{i}" for i in range(4)]
    assert real["deniedTopic"]["code"] == 1 and "No default permission for topic:AclTopicDenied" in \
        real["deniedTopic"]["remark"]
    assert "Need admin permission for request code=17" in real["userCreateTopic"]["message"]
    assert_same(real, served)
