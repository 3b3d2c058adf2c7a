"""The maintenance admin requests (refimpl/broker/admin_maintenance.py) and the broker statistics they read
(refimpl/broker/stats.py), driven in-process with bad input.

What a real 4.9.8 broker answers to the same requests (bad input included) is compared in
tests/test_realclient_java_maintenance.py; the answers asserted here are the ones seen there: a missing header
field is read as null (4.9.8's ``decodeCommandCustomHeader`` swallows the ``@CFNotNull`` error), the ACL requests
fail with Java's NullPointerException text, GET_BROKER_CLUSTER_ACL_INFO is never answered.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from test_refimpl_broker import Env, FakeChannel

from rocketspec.refimpl.broker import admin_maintenance
from rocketspec.refimpl.broker.admin_maintenance import ACL_DELETE_REMARK, ACL_UPDATE_REMARK, ACL_WHITE_ADDRS_REMARK
from rocketspec.refimpl.message import decode_stored_message
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.route import loads_lenient
from rocketspec.spec.protocol import (
    SCHEDULE_TOPIC,
    TRANS_HALF_TOPIC,
    TRANSACTION_PREPARED_TYPE,
    Property,
    RequestCode,
    ResponseCode,
)

_LONG_MAX = (1 << 63) - 1
_RESUME_FAILED = "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."


@pytest.fixture
def env() -> Env:
    return Env()


def ask(env: Env, code: int, fields: dict[str, Any] | None = None, channel: FakeChannel | None = None,
        body: bytes | None = None) -> RemotingCommand:
    response = env.handle(RemotingCommand.request(code, fields or {}, body), channel)
    assert response is not None
    return response


def stats(env: Env, name: str | None, key: str | None) -> RemotingCommand:
    fields = {k: v for k, v in (("statsName", name), ("statsKey", key)) if v is not None}
    return ask(env, RequestCode.VIEW_BROKER_STATS_DATA, fields)


def minute(env: Env, name: str, key: str) -> dict[str, Any]:
    response = stats(env, name, key)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return json.loads(response.body or b"")["statsMinute"]


def commit(env: Env, group: str, topic: str, queue_id: int, offset: int) -> None:
    response = ask(env, RequestCode.UPDATE_CONSUMER_OFFSET,
                   {"consumerGroup": group, "topic": topic, "queueId": queue_id, "commitOffset": offset})
    assert response.code == ResponseCode.SUCCESS


# ------------------------------------------------------------------------------------------------------- stats
def test_stats_count_sends_and_pulls_sampled_every_10s(env: Env) -> None:
    for _ in range(3):
        assert env.send("T").code == ResponseCode.SUCCESS
    found = env.pull("T", max_msgs=2)
    assert found is not None and found.code == ResponseCode.SUCCESS
    # Counted, not yet sampled: every snapshot is zero.
    assert stats(env, "TOPIC_PUT_NUMS", "T").body == (
        b'{"statsDay":{"avgpt":0.0,"sum":0,"tps":0.0},"statsHour":{"avgpt":0.0,"sum":0,"tps":0.0},'
        b'"statsMinute":{"avgpt":0.0,"sum":0,"tps":0.0}}')
    # Samples at broker start (t0, when the items already exist: the list starts with (t0 - 10 s, 0, 0)) and
    # t0 + 10 s: 3 messages over 20 s.
    env.runtime.advance(10_000)
    assert minute(env, "TOPIC_PUT_NUMS", "T") == {"avgpt": 1.0, "sum": 3, "tps": 0.15}
    size = env.broker.store.stats()["bytes"]
    assert minute(env, "TOPIC_PUT_SIZE", "T")["sum"] == size
    assert minute(env, "BROKER_PUT_NUMS", "DefaultCluster") == {"avgpt": 0.0, "sum": 3, "tps": 0.15}
    assert minute(env, "GROUP_GET_NUMS", "T@CG") == {"avgpt": 2.0, "sum": 2, "tps": 0.1}
    assert minute(env, "BROKER_GET_NUMS", "DefaultCluster")["sum"] == 2
    assert minute(env, "GROUP_GET_LATENCY", "0@T@CG")["sum"] == 0  # enableDetailStat: queueId@topic@group
    # The minute window is the last 7 samples (60 s): quiet traffic leaves it.
    env.runtime.advance(70_000)
    assert minute(env, "TOPIC_PUT_NUMS", "T") == {"avgpt": 0.0, "sum": 0, "tps": 0.0}
    env.runtime.advance(600_000)
    hour = json.loads(stats(env, "TOPIC_PUT_NUMS", "T").body or b"")["statsHour"]
    assert hour["sum"] == 3 and hour["avgpt"] == 1.0


def test_stats_of_delayed_messages_and_unknown_items(env: Env) -> None:
    assert env.send("T", props={Property.DELAY_TIME_LEVEL: "2"}).code == ResponseCode.SUCCESS
    env.runtime.advance(10_000)
    # The delayed message is counted under the topic it is stored in, and its queue (enableDetailStat).
    assert minute(env, "TOPIC_PUT_NUMS", SCHEDULE_TOPIC)["sum"] == 1
    assert minute(env, "QUEUE_PUT_NUMS", f"{SCHEDULE_TOPIC}@1")["sum"] == 1
    assert stats(env, "TOPIC_PUT_NUMS", "T").remark == "The stats <TOPIC_PUT_NUMS> <T> not exist"
    for name, key, remark in (
        ("NO_SUCH", "T", "The stats <NO_SUCH> <T> not exist"),
        ("COMMERCIAL_SEND_TIMES", "T", "The stats <COMMERCIAL_SEND_TIMES> <T> not exist"),
        ("TOPIC_PUT_NUMS", None, "The stats <TOPIC_PUT_NUMS> <null> not exist"),
        (None, "T", "The stats <null> <T> not exist"),
    ):
        response = stats(env, name, key)
        assert (response.code, response.remark, response.body) == (ResponseCode.SYSTEM_ERROR, remark, None)


# ---------------------------------------------------------------------------------------------- correction offset
def test_query_correction_offset(env: Env) -> None:
    for _ in range(4):
        env.send("T")
    empty = ask(env, RequestCode.QUERY_CORRECTION_OFFSET, {"compareGroup": "G1"})
    assert (empty.code, empty.body) == (ResponseCode.SUCCESS, b'{"correctionOffsets":{}}')  # no offsets at all
    commit(env, "G1", "T", 0, 3)
    commit(env, "G2", "T", 0, 1)
    commit(env, "G2", "Other", 0, 2)
    both = ask(env, RequestCode.QUERY_CORRECTION_OFFSET, {"topic": "T", "compareGroup": "G1"})
    assert (both.code, both.body) == (ResponseCode.SUCCESS, b'{"correctionOffsets":{0:1}}')
    unknown = ask(env, RequestCode.QUERY_CORRECTION_OFFSET, {"topic": "Nope", "compareGroup": "G1"})
    assert unknown.body == b'{"correctionOffsets":{}}'
    # A null topic meets the (non-empty) offset table: topic.equals throws.
    null_topic = ask(env, RequestCode.QUERY_CORRECTION_OFFSET, {"compareGroup": "G1"})
    assert null_topic.code == ResponseCode.SYSTEM_ERROR and "NullPointerException" in (null_topic.remark or "")
    # filterGroups leaves G2 out, and (as in 4.9.8) drops G2's offsets of every topic from the broker.
    filtered = ask(env, RequestCode.QUERY_CORRECTION_OFFSET, {"topic": "T", "compareGroup": "G1", "filterGroups": "G2"})
    assert filtered.body == b'{"correctionOffsets":{0:3}}'
    assert env.broker.consumer_offsets.query("G2", "T", 0) == -1
    assert env.broker.consumer_offsets.query("G2", "Other", 0) == -1
    assert env.broker.consumer_offsets.query("G1", "T", 0) == 3


def test_query_correction_offset_compares_the_swapped_key(env: Env) -> None:
    """``queryOffset(topic, compareGroup)`` reads ``compareGroup@topic``: offsets of topic "G1", group "T"."""
    env.send("T")
    commit(env, "G1", "T", 0, 1)
    commit(env, "T", "G1", 0, 0)  # key G1@T
    swapped = ask(env, RequestCode.QUERY_CORRECTION_OFFSET, {"topic": "T", "compareGroup": "G1"})
    assert loads_lenient(swapped.body or b"") == {"correctionOffsets": {"0": _LONG_MAX}}
    commit(env, "T", "G1", 5, 0)  # a queue the correction lacks: Java unboxes null
    assert ask(env, RequestCode.QUERY_CORRECTION_OFFSET,
               {"topic": "T", "compareGroup": "G1"}).code == ResponseCode.SYSTEM_ERROR


# ---------------------------------------------------------------------------------------------------- producers
def test_get_all_producer_info(env: Env) -> None:
    assert ask(env, RequestCode.GET_ALL_PRODUCER_INFO).body == b'{"data":{}}'
    channel = env.channel("10.0.0.8:50002")
    body = {"clientID": "10.0.0.8@p1", "consumerDataSet": [],
            "producerDataSet": [{"groupName": "PG1"}, {"groupName": "CLIENT_INNER_PRODUCER"}]}
    heartbeat = RemotingCommand.request(RequestCode.HEART_BEAT, {}, json.dumps(body).encode())
    assert env.handle(heartbeat, channel) is not None
    table = json.loads(ask(env, RequestCode.GET_ALL_PRODUCER_INFO).body or b"")["data"]
    assert set(table) == {"PG1", "CLIENT_INNER_PRODUCER"}
    row = table["PG1"][0]
    assert row == {"clientId": "10.0.0.8@p1", "language": "JAVA", "lastUpdateTimestamp": env.runtime.now_ms(),
                   "remoteIP": "/10.0.0.8:50002", "version": heartbeat.version}
    channel.close()
    assert json.loads(ask(env, RequestCode.GET_ALL_PRODUCER_INFO).body or b"")["data"] == {}


# ------------------------------------------------------------------------------------------------ store upkeep
def _fill_segments(env: Env) -> None:
    """"Old" only in the first commit-log segment, "New" in every later one."""
    env.send("Old", b"x" * 200)
    while env.broker.store.stats()["segments"] < 3:
        env.send("New", b"y" * 200)


def test_clean_expired_consume_queue() -> None:
    env = Env(segment_bytes=4096)
    _fill_segments(env)
    store = env.broker.store
    assert ask(env, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE).code == ResponseCode.SUCCESS
    assert store.queue_ids("Old") == [0]  # its message is still in the commit log
    assert store.delete_oldest_segments(1) == 1
    cleaned = ask(env, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, {"ignored": "x"})
    assert (cleaned.code, cleaned.remark) == (ResponseCode.SUCCESS, None)
    assert store.queue_ids("Old") == [] and "Old" not in store.topics()
    assert store.queue_ids("New") == [0]
    assert env.broker.topics.get("Old") is not None  # only the queue went: a new message starts at offset 0 again
    assert env.send("Old").ext_fields["queueOffset"] == "0"


def check_delete_expired_commit_log(env: Env) -> None:
    store = env.broker.store
    _fill_segments(env)
    env.runtime.advance(2_000)  # older than file_reserved_ms, but not the delete hour (04:00): nothing goes
    segments = store.stats()["segments"]
    assert store.commit_log_min_offset() == 0
    response = ask(env, RequestCode.DELETE_EXPIRED_COMMITLOG)
    assert (response.code, response.remark) == (ResponseCode.SUCCESS, None)
    assert store.stats()["segments"] == segments  # only armed
    env.runtime.advance(10_000)  # the next cleaner run deletes whatever the hour
    assert store.commit_log_min_offset() > 0 and store.stats()["segments"] == 1


def test_delete_expired_commit_log_arms_the_cleaner() -> None:
    env = Env(segment_bytes=4096, file_reserved_ms=1_000)
    check_delete_expired_commit_log(env)
    # 20 runs in all, then the delete hour rules again.
    env.runtime.advance(19 * 10_000)
    assert env.broker.maintenance_admin.manual_delete_times == 0


def test_delete_expired_commit_log_check_catches_a_cleaner_never_armed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admin_maintenance.MaintenanceAdmin, "take_manual_delete", lambda self: False)
    with pytest.raises(AssertionError):
        check_delete_expired_commit_log(Env(segment_bytes=4096, file_reserved_ms=1_000))


# ------------------------------------------------------------------------------------------------ transactions
def test_resume_check_half_message(env: Env) -> None:
    sent = env.send("T", b"half", sysFlag=TRANSACTION_PREPARED_TYPE,
                    props={Property.TRANSACTION_PREPARED: "true", Property.PRODUCER_GROUP: "PG"})
    assert sent.code == ResponseCode.SUCCESS
    store = env.broker.store
    assert store.max_offset(TRANS_HALF_TOPIC, 0) == 1
    resumed = ask(env, RequestCode.RESUME_CHECK_HALF_MESSAGE, {"msgId": sent.ext_fields["msgId"]})
    assert (resumed.code, resumed.remark) == (ResponseCode.SUCCESS, None)
    assert store.max_offset(TRANS_HALF_TOPIC, 0) == 2
    _offset, phy, size, _tags = store.queue_entries(TRANS_HALF_TOPIC, 0, 1, 1)[0]
    again, _ = decode_stored_message(store.look_message_bytes(phy) or b"", 0)
    assert again.body == b"half" and again.properties[Property.TRANSACTION_CHECK_TIMES] == "0"
    assert again.properties[Property.REAL_TOPIC] == "T" and again.sys_flag == 0 and size > 0
    # Bad ids: none, not hex, an offset past the log, an offset inside a message.
    past = sent.ext_fields["msgId"][:16] + f"{1 << 40:016X}"
    inside = sent.ext_fields["msgId"][:16] + f"{1:016X}"
    for fields in ({}, {"msgId": "XYZ"}, {"msgId": past}, {"msgId": inside}):
        failed = ask(env, RequestCode.RESUME_CHECK_HALF_MESSAGE, fields)
        assert (failed.code, failed.remark) == (ResponseCode.SYSTEM_ERROR, _RESUME_FAILED)
    assert store.max_offset(TRANS_HALF_TOPIC, 0) == 2


# ----------------------------------------------------------------------------------------------------------- ACL
@pytest.mark.parametrize(("code", "fields", "answer"), [
    (RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {"accessKey": "ak", "secretKey": "12345678"},
     (ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED, ACL_UPDATE_REMARK)),
    (RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {},
     (ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED, ACL_UPDATE_REMARK)),
    (RequestCode.DELETE_ACL_CONFIG, {"accessKey": "ak"}, (ResponseCode.DELETE_ACL_CONFIG_FAILED, ACL_DELETE_REMARK)),
    (RequestCode.DELETE_ACL_CONFIG, {}, (ResponseCode.DELETE_ACL_CONFIG_FAILED, ACL_DELETE_REMARK)),
    (RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": "10.0.0.1"},
     (ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, ACL_WHITE_ADDRS_REMARK)),
    (54, {}, (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 54 not supported")),
])
def test_acl_requests_of_a_broker_without_acl(env: Env, code: int, fields: dict[str, str],
                                             answer: tuple[int, str]) -> None:
    response = ask(env, code, fields)
    assert (response.code, response.remark, response.body) == (*answer, None)


def test_acl_version_is_never_answered(env: Env) -> None:
    channel = env.channel()
    assert env.handle(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {}), channel) is None
    env.runtime.advance(10_000)
    assert channel.responses == []


@pytest.mark.parametrize("code", [
    RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, RequestCode.DELETE_EXPIRED_COMMITLOG, RequestCode.QUERY_CORRECTION_OFFSET,
    RequestCode.GET_ALL_PRODUCER_INFO, RequestCode.VIEW_BROKER_STATS_DATA, RequestCode.RESUME_CHECK_HALF_MESSAGE,
    RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, RequestCode.DELETE_ACL_CONFIG,
    RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, RequestCode.GET_BROKER_CLUSTER_ACL_INFO,
])
def test_every_maintenance_code_is_dispatched(env: Env, code: int) -> None:
    handler: Callable[..., Any] | None = env.broker._handlers.get(code)
    assert handler is not None and getattr(handler, "__self__", None) is env.broker.maintenance_admin


def test_stats_of_the_transaction_check_reads(env: Env) -> None:
    """``TransactionalMessageBridge.getMessage`` counts its reads for CID_RMQ_SYS_TRANS (no latency item)."""
    sent = env.send("T", b"half", sysFlag=TRANSACTION_PREPARED_TYPE,
                    props={Property.TRANSACTION_PREPARED: "true", Property.PRODUCER_GROUP: "PG"})
    assert sent.code == ResponseCode.SUCCESS
    env.runtime.advance(2 * env.broker.config.transaction_check_interval_ms)
    read = minute(env, "GROUP_GET_NUMS", f"{TRANS_HALF_TOPIC}@CID_RMQ_SYS_TRANS")
    assert read["sum"] >= 1
    assert stats(env, "GROUP_GET_LATENCY", f"0@{TRANS_HALF_TOPIC}@CID_RMQ_SYS_TRANS").code == ResponseCode.SYSTEM_ERROR
    assert env.broker.stats.tps_group_get_nums("CID_RMQ_SYS_TRANS", TRANS_HALF_TOPIC) > 0
    assert env.broker.stats.tps_group_get_nums("Nobody", "T") == 0.0
