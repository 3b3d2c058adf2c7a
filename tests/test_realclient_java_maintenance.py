"""The maintenance admin requests (refimpl/broker/admin_maintenance.py, stats in refimpl/broker/stats.py) against
the real 4.9.8 cluster and `serve`: the same Java program (``MaintenanceScenarios.java``) and the same mqadmin
commands on both, compared.

``maintenance.flow``: sends and a pull on broker-a, then the raw GET_ALL_PRODUCER_INFO answer (4.9.8's own client
cannot decode it), viewBrokerStatsData of that traffic once sampled (TOPIC_PUT_*, GROUP_GET_*, GROUP_GET_LATENCY's
queue-level key, unknown items), queryCorrectionOffset with and without filterGroups (which drops the filtered
group's offsets), resumeCheckHalfMessage of a half message, cleanExpiredCQ / deleteExpiredCommitLog /
cleanUnusedTopic, and the ACL calls of a broker with aclEnable=false.
``maintenance.raw``: the same requests with missing or bad header fields; code, remark and body as sent.
mqadmin: statsAll on the flow's topic, the store upkeep commands and the ACL commands.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from javacompare import Targets, assert_same
from realcluster import JavaDriver, RealCluster
from test_mqadmin import Admin, clean
from test_realclient_java_admin import _no_addrs

from rocketspec.refimpl.served import ServedCluster
from rocketspec.spec.protocol import RequestCode

pytestmark = pytest.mark.xdist_group("rocketmq-real")

_MS = re.compile(r"\d+\(ms\)")
_DECIMAL = re.compile(r"\b\d+\.\d+\b")


def _no_timing(value: Any) -> Any:
    """Addresses and timeout durations out of messages."""
    value = _no_addrs(value)
    if isinstance(value, dict):
        return {k: _no_timing(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_timing(v) for v in value]
    return _MS.sub("<n>(ms)", value) if isinstance(value, str) else value


def _sampled(obs: dict[str, Any], name: str) -> dict[str, Any]:
    """A stats observation with what depends on when the 10 s / 10 min / 1 h samples fell cut out: the minute tps
    (a rate over however many samples the traffic spans) becomes "positive", hour and day go."""
    snapshot = obs[name]
    assert isinstance(snapshot, dict) and "minute" in snapshot, f"{name}: {snapshot}"
    minute = dict(snapshot["minute"])
    minute["tps"] = minute["tps"] > 0
    return {"minute": minute, "hour": sorted(snapshot["hour"]), "day": sorted(snapshot["day"])}


@pytest.fixture(scope="module")
def targets(java_driver: JavaDriver, real_rocketmq: RealCluster, served_for_java: ServedCluster) -> Iterator[Targets]:
    yield Targets(java_driver, real_rocketmq, served_for_java)


@pytest.fixture(scope="module")
def mq(rocketmq_home: Path, real_rocketmq: RealCluster, served_for_java: ServedCluster) -> Iterator[Admin]:
    with tempfile.TemporaryDirectory(prefix="rocketspec-mqadmin-mnt-") as work:
        yield Admin(rocketmq_home, real_rocketmq, served_for_java, Path(work))


def test_maintenance_flow_and_stats_all(targets: Targets, mq: Admin) -> None:
    suffix = targets.suffix()
    real, served = targets.both("maintenance.flow", suffix=suffix, timeout=150)
    # What the flow shows on the real broker (so a served answer equal to it means something).
    assert real["producerInfoCall"]["exception"] == "JSONException" and real["producerInfoCode"] == 0
    assert real["producerInfo"] and real["producerInfo"][0]["remoteIP"] == "/N.N.N.N:N"
    assert real["pulled"] == 5 and real["topicPutNums"]["minute"]["sum"] == 5
    assert real["correction"] == {"0": 1} and real["correctionFiltered"] == {"0": 3}
    assert real["g1AfterFilter"] == 3 and real["g2AfterFilter"] == 0  # G2's offset went with the filter
    assert real["halfFound"] is True and real["resumeHalf"] is True and real["resumeHalfWire"] == "0 null"
    assert real["aclUpdate"]["code"] == 209 and real["aclVersion"]["exception"] == "RemotingTimeoutException"
    for obs in (real, served):
        for name in ("topicPutNums", "topicPutSize", "groupGetNums", "groupGetSize"):
            obs[name] = _sampled(obs, name)
        # Shared by every test on the cluster: only that this flow's messages are in it.
        assert obs.pop("brokerPutNums")["minute"]["sum"] >= 5
    assert_same(_no_timing(real), _no_timing(served))

    # mqadmin statsAll on that topic: its row per consuming group (G1 kept an offset), the rates normalized.
    topic = f"MntTopic{suffix}"
    real_out, served_out = mq.both("statsAll", "-t", topic)
    rows_real = [_DECIMAL.sub("<rate>", line) for line in clean(real_out)]
    rows_served = [_DECIMAL.sub("<rate>", line) for line in clean(served_out)]
    assert rows_real[0].startswith("#Topic #Consumer Group #Accumulation #InTPS #OutTPS")
    assert any(topic in line for line in rows_real[1:]), real_out
    assert rows_real == rows_served, f"statsAll differs:\nreal:\n{real_out}\nserve:\n{served_out}"


_RAW = [
    {"code": RequestCode.UPDATE_CONSUMER_OFFSET,  # the offset table is never empty on either broker
     "fields": {"consumerGroup": "MntRawG", "topic": "MntRawT", "queueId": "0", "commitOffset": "0"}},
    {"code": RequestCode.VIEW_BROKER_STATS_DATA, "fields": {"statsName": "TOPIC_PUT_NUMS"}},
    {"code": RequestCode.VIEW_BROKER_STATS_DATA, "fields": {"statsKey": "x"}},
    {"code": RequestCode.VIEW_BROKER_STATS_DATA, "fields": {"statsName": "NOPE", "statsKey": "x"}},
    {"code": RequestCode.VIEW_BROKER_STATS_DATA, "fields": {"statsName": "COMMERCIAL_SEND_TIMES", "statsKey": "x"}},
    {"code": RequestCode.QUERY_CORRECTION_OFFSET, "fields": {"topic": "MntNoSuchTopic"}},
    {"code": RequestCode.QUERY_CORRECTION_OFFSET, "fields": {"compareGroup": "G"}},
    {"code": RequestCode.QUERY_CORRECTION_OFFSET, "fields": {"compareGroup": "G", "topic": "MntNoSuchTopic"}},
    {"code": RequestCode.QUERY_CORRECTION_OFFSET,
     "fields": {"compareGroup": "G", "topic": "MntNoSuchTopic", "filterGroups": "MntNoGroupA,MntNoGroupB"}},
    {"code": RequestCode.RESUME_CHECK_HALF_MESSAGE, "fields": {}},
    {"code": RequestCode.RESUME_CHECK_HALF_MESSAGE, "fields": {"msgId": "XYZ"}},
    {"code": RequestCode.RESUME_CHECK_HALF_MESSAGE, "fields": {"msgId": "7F00000100002A9F000000FFFFFFFFFF"}},
    {"code": RequestCode.RESUME_CHECK_HALF_MESSAGE, "fields": {"msgId": "7F00000100002A9F0000000000000001"}},
    {"code": RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, "fields": {}},
    {"code": RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
     "fields": {"accessKey": "ak", "secretKey": "12345678", "admin": "notabool", "topicPerms": "a=PUB"}},
    {"code": RequestCode.DELETE_ACL_CONFIG, "fields": {}},
    {"code": RequestCode.DELETE_ACL_CONFIG, "fields": {"accessKey": "ak"}},
    {"code": RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, "fields": {}},
    {"code": RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
     "fields": {"globalWhiteAddrs": "10.0.0.1", "aclFileFullPath": "/tmp/none.yml"}},
    {"code": RequestCode.GET_BROKER_CLUSTER_ACL_INFO, "fields": {}, "timeoutMs": 2000},
    {"code": 54, "fields": {}},  # GET_BROKER_CLUSTER_ACL_CONFIG is not a 4.9.8 code
    {"code": RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, "fields": {}},
    {"code": RequestCode.DELETE_EXPIRED_COMMITLOG, "fields": {}},
    {"code": RequestCode.CLEAN_UNUSED_TOPIC, "fields": {}},
    {"code": RequestCode.GET_ALL_PRODUCER_INFO, "fields": {"whatever": "x"}},
]


def test_raw_requests_with_bad_input(targets: Targets) -> None:
    real, served = targets.both("maintenance.raw", requests=[{**r, "code": int(r["code"])} for r in _RAW])
    for obs in (real, served):
        # The producer table lists whoever is connected to the shared broker: its shape only.
        producers = obs["results"][-1]
        assert producers["code"] == 0 and isinstance(producers.pop("body")["data"], dict)
    results = real["results"]
    assert results[6]["code"] == 1 and "NullPointerException" in results[6]["remark"]  # null topic
    assert results[19] == {"exception": "RemotingTimeoutException"}  # never answered
    assert results[20] == {"code": 3, "remark": " request type 54 not supported"}
    assert_same(real, served)


def test_mqadmin_upkeep_and_acl_commands(mq: Admin) -> None:
    for command in ("cleanExpiredCQ", "deleteExpiredCommitLog", "cleanUnusedTopic"):
        lines, _ = mq.same(command, "-b", "{a}")
        assert lines == ["success"], (command, lines)
    # ACL (aclEnable=false): the client prints the broker's error with its stack trace, the same on both (deleting
    # and the global white list are compared through the Java flow).
    lines, _ = mq.same("updateAclConfig", "-b", "{a}", "-a", "RocketMQ", "-s", "12345678")
    assert any("CODE: 209" in line for line in lines), lines
    real, served = mq.both("clusterAclConfigVersion", "-c", "DefaultCluster")
    assert [_MS.sub("<n>(ms)", line) for line in clean(real)] == [_MS.sub("<n>(ms)", line) for line in clean(served)]
    assert "RemotingTimeoutException" in real
