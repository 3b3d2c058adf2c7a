"""The admin requests (mqadmin / DefaultMQAdminExt) driven in-process, one handler at a time, with bad input.

Broker: refimpl/broker/admin_topics.py, admin_consumers.py, admin_runtime.py. Name server: refimpl/namesrv_admin.py.
What the real 4.9.8 broker answers was checked with the same raw requests (tests/test_realclient_java_admin.py and
tests/test_mqadmin.py compare the client-visible results).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_refimpl_broker import Env, FakeChannel

from rocketspec.refimpl.broker.admin_consumers import raw_member
from rocketspec.refimpl.broker.admin_runtime import parse_properties
from rocketspec.refimpl.events import EventLog
from rocketspec.refimpl.namesrv import NameServer
from rocketspec.refimpl.remoting import (
    JAVA_NPE_NULL_BODY_STRING,
    JAVA_NPE_NULL_KEY_GET,
    JAVA_NPE_NULL_KEY_REMOVE,
    Network,
    RemotingCommand,
    RemotingTimeoutError,
)
from rocketspec.refimpl.runtime import SimulatedRuntime
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    SCHEDULE_TOPIC,
    LanguageCode,
    RequestCode,
    ResponseCode,
)


@pytest.fixture
def env() -> Env:
    return Env()


def ask(env: Env, code: int, fields: dict[str, Any] | None = None, body: bytes | None = None,
        channel: FakeChannel | None = None, **kw: Any) -> RemotingCommand:
    response = env.handle(RemotingCommand.request(code, fields or {}, body, **kw), channel)
    assert response is not None
    return response


def create(env: Env, topic: str, queues: int = 2, **extra: Any) -> RemotingCommand:
    fields = {"topic": topic, "defaultTopic": AUTO_CREATE_TOPIC_KEY, "readQueueNums": queues,
              "writeQueueNums": queues, "perm": 6, "topicFilterType": "SINGLE_TAG", **extra}
    channel = env.channel()
    response = env.handle(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, fields), channel)
    if response is None:  # held until the name server registered the topic
        env.runtime.advance(50)
        response = channel.responses[-1]
    return response


# ---------------------------------------------------------------------------------------------------------- topics
def test_create_topic_bad_input(env: Env) -> None:
    assert create(env, "T").code == ResponseCode.SUCCESS
    assert create(env, "bad topic!").remark == \
        "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    assert create(env, SCHEDULE_TOPIC).remark == f"The topic[{SCHEDULE_TOPIC}] is conflict with system topic."
    # 4.9.8: the header's checkFields (TopicFilterType.valueOf) fails first, then a missing or unparsable number is
    # null and the processor's unboxing throws (the remark names the getter and AdminBrokerProcessor's line).
    bad_filter = create(env, "T", topicFilterType="NOPE")
    assert (bad_filter.code, bad_filter.remark) == (ResponseCode.SYSTEM_ERROR, (
        "org.apache.rocketmq.remoting.exception.RemotingCommandException: topicFilterType = [NOPE] value invalid, "
        "org.apache.rocketmq.common.protocol.header.CreateTopicRequestHeader.checkFields(CreateTopicRequestHeader.java:50)"))
    assert "topicFilterType = [null] value invalid" in (ask(env, RequestCode.UPDATE_AND_CREATE_TOPIC).remark or "")
    for fields, getter, line in (({"perm": 6, "writeQueueNums": 1}, "getReadQueueNums", 277),
                                 ({"perm": 6, "readQueueNums": "x", "writeQueueNums": 1}, "getReadQueueNums", 277),
                                 ({"perm": 6, "readQueueNums": 1}, "getWriteQueueNums", 278),
                                 ({"perm": "6x", "readQueueNums": 1, "writeQueueNums": 1}, "getPerm", 280)):
        missing = ask(env, RequestCode.UPDATE_AND_CREATE_TOPIC,
                      {"topic": "T2", "topicFilterType": "SINGLE_TAG", **fields})
        remark = missing.remark or ""
        assert missing.code == ResponseCode.SYSTEM_ERROR
        assert f'CreateTopicRequestHeader.{getter}()" is null' in remark
        assert remark.endswith(f"AdminBrokerProcessor.updateAndCreateTopic(AdminBrokerProcessor.java:{line})")
    assert env.broker.topics.get("T2") is None
    blank = ask(env, RequestCode.UPDATE_AND_CREATE_TOPIC, {"readQueueNums": 1, "topicFilterType": "SINGLE_TAG"})
    assert blank.remark == "The specified topic is blank."


def test_create_topic_answers_after_the_name_server_registered_it() -> None:
    """registerIncrementBrokerData: SUCCESS only once the route exists."""
    env = Env()
    namesrv = NameServer(env.runtime, env.network, env.events, addr="127.0.0.1:9876")
    namesrv.start()
    env.broker.shutdown()
    env.broker = env.new_broker(namesrv="127.0.0.1:9876")
    env.runtime.advance(100)
    channel = env.channel()
    held = env.handle(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
        "topic": "Routed", "readQueueNums": 3, "writeQueueNums": 3, "perm": 6, "topicFilterType": "SINGLE_TAG"}),
        channel)
    assert held is None and not channel.responses and namesrv.pickup_topic_route("Routed") is None
    env.runtime.advance(10)
    assert [r.code for r in channel.responses] == [ResponseCode.SUCCESS]
    route = namesrv.pickup_topic_route("Routed")
    assert route is not None and route.queue_datas[0].write_queue_nums == 3


def test_topic_stats_delete_and_queries(env: Env) -> None:
    create(env, "T", 2)
    env.send("T", queue_id=1)
    env.send("T", queue_id=1)
    stats = loads_lenient_mq(ask(env, RequestCode.GET_TOPIC_STATS_INFO, {"topic": "T"}).body)
    assert stats == {("broker-a", 0, "T"): (0, 0, False), ("broker-a", 1, "T"): (0, 2, True)}
    unknown = ask(env, RequestCode.GET_TOPIC_STATS_INFO, {"topic": "Nope"})
    assert (unknown.code, unknown.remark) == (ResponseCode.TOPIC_NOT_EXIST, "topic[Nope] not exist")
    assert ask(env, RequestCode.GET_TOPIC_STATS_INFO, {}).code == ResponseCode.SYSTEM_ERROR
    earliest = ask(env, RequestCode.GET_EARLIEST_MSG_STORETIME, {"topic": "T", "queueId": 1})
    assert int(earliest.ext_fields["timestamp"]) > 0
    empty = ask(env, RequestCode.GET_EARLIEST_MSG_STORETIME, {"topic": "T", "queueId": 0})
    assert empty.ext_fields["timestamp"] == "-1"
    configs = json.loads(ask(env, RequestCode.GET_ALL_TOPIC_CONFIG).body or b"")
    assert configs["topicConfigTable"]["T"]["writeQueueNums"] == 2 and "counter" in configs["dataVersion"]
    system = json.loads(ask(env, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER).body or b"")
    assert SCHEDULE_TOPIC in system["topicList"] and "broker-a" in system["topicList"]

    deleted = ask(env, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "T"})
    assert deleted.code == ResponseCode.SUCCESS and env.broker.topics.get("T") is None
    assert env.broker.store.max_offset("T", 1) == 0  # cleanUnusedTopic: the consume queues went too
    assert ask(env, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": SCHEDULE_TOPIC}).code == ResponseCode.SYSTEM_ERROR
    assert ask(env, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "NeverWas"}).code == ResponseCode.SUCCESS


def loads_lenient_mq(body: bytes | None) -> dict[tuple[str, int, str], tuple[int, int, bool]]:
    """TopicStatsTable with MessageQueue object keys, parsed back (fastjson's object-key form)."""
    text = (body or b"").decode()
    inner = text[len('{"offsetTable":{'):-2]
    out = {}
    for part in inner.split("},{")[0:]:
        part = part.strip("{}")
        key_text, _, value_text = part.partition("}:{")
        key = json.loads("{" + key_text + "}")
        value = json.loads("{" + value_text + "}")
        out[(key["brokerName"], key["queueId"], key["topic"])] = (value["minOffset"], value["maxOffset"],
                                                                    value["lastUpdateTimestamp"] > 0)
    return out


# ------------------------------------------------------------------------------------------------------- consumers
def _online(env: Env, group: str = "CG", topic: str = "T") -> FakeChannel:
    channel = env.channel("10.0.0.9:4000")
    env.heartbeat(channel, "10.0.0.9@c1", group=group, topics=(topic,))
    return channel


def test_consume_stats_report_the_groups_pull_rate(env: Env) -> None:
    """getConsumeStats / fetchAllConsumeStatsInBroker: consumeTps is tpsGroupGetNums, messages pulled per second
    over the last minute of samples (what mqadmin consumerProgress prints as "Consume TPS")."""
    create(env, "T", 1)
    for _ in range(3):
        env.send("T", queue_id=0)
    ask(env, RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "CG", "topic": "T", "queueId": 0, "commitOffset": 0})
    found = env.pull("T", max_msgs=2)
    assert found is not None and found.code == ResponseCode.SUCCESS
    env.runtime.advance(10_000)  # the next 10 s sample: 2 messages over 20 s
    stats = (ask(env, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "CG"}).body or b"").decode()
    assert stats.startswith('{"consumeTps":0.1,"offsetTable":')
    every = (ask(env, RequestCode.GET_BROKER_CONSUME_STATS, {}).body or b"").decode()
    assert '{"CG":[{"consumeTps":0.1,' in every


def test_consume_stats_and_connections(env: Env) -> None:
    create(env, "T", 2)
    env.send("T", queue_id=0)
    env.send("T", queue_id=0)
    ask(env, RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "CG", "topic": "T", "queueId": 0, "commitOffset": 1})
    body = (ask(env, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "CG"}).body or b"").decode()
    assert body.startswith('{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:')
    assert '"brokerOffset":2,"consumerOffset":1' in body and body.count("brokerOffset") == 2
    empty = (ask(env, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "Nobody"}).body or b"").decode()
    assert empty == '{"consumeTps":0.0,"offsetTable":{}}'
    offline = ask(env, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "CG"})
    assert (offline.code, offline.remark) == (ResponseCode.CONSUMER_NOT_ONLINE, "the consumer group[CG] not online")
    _online(env)
    conn = json.loads(ask(env, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "CG"}).body or b"")
    assert conn["connectionSet"] == [{"clientAddr": "10.0.0.9:4000", "clientId": "10.0.0.9@c1", "language": "JAVA",
                                      "version": env.broker.consumers.get("CG").channels[
                                          next(iter(env.broker.consumers.get("CG").channels))].version}]
    assert conn["messageModel"] == "CLUSTERING" and conn["subscriptionTable"]["T"]["subString"] == "*"
    who = json.loads(ask(env, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": "T"}).body or b"")
    assert who == {"groupList": ["CG"]}
    missing = ask(env, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "NoPG"})
    assert (missing.code, missing.remark) == (ResponseCode.SYSTEM_ERROR, "the producer group[NoPG] not exist")
    assert ask(env, RequestCode.GET_CONSUMER_CONNECTION_LIST, {}).code == ResponseCode.SYSTEM_ERROR


def test_consumer_running_info_is_forwarded(env: Env) -> None:
    client = _online(env)
    admin_channel = env.channel("10.0.0.1:1")
    held = env.handle(RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {
        "consumerGroup": "CG", "clientId": "10.0.0.9@c1", "jstackEnable": False}), admin_channel)
    assert held is None
    forwarded = [r for r in client.oneways if r.code == RequestCode.GET_CONSUMER_RUNNING_INFO]
    assert len(forwarded) == 1 and forwarded[0].ext_fields["clientId"] == "10.0.0.9@c1"
    unknown = ask(env, RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "CG", "clientId": "x"})
    assert unknown.remark == "The Consumer <CG> <x> not online"


def test_consumer_running_info_answers_and_times_out(env: Env) -> None:
    """The client's answer goes back with the caller's opaque; no answer in 10 s is CONSUME_MSG_TIMEOUT."""
    from rocketspec.refimpl.runtime import Future

    futures: list[Future[RemotingCommand]] = []

    class Client(FakeChannel):
        def invoke(self, request: RemotingCommand, timeout_ms: int) -> Future[RemotingCommand]:
            future: Future[RemotingCommand] = Future()
            futures.append(future)
            return future

    client = Client("10.0.0.9:4000")
    client.broker = env.broker
    env.heartbeat(client, "10.0.0.9@c1")
    caller = env.channel("10.0.0.1:1")
    request = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "CG",
                                                                              "clientId": "10.0.0.9@c1"})
    assert env.handle(request, caller) is None
    futures[0].set_result(RemotingCommand(code=0, body=b'{"mqTable":{}}', opaque=12345))
    assert [(r.code, r.opaque, r.body) for r in caller.responses] == [(0, request.opaque, b'{"mqTable":{}}')]
    assert env.handle(request, caller) is None
    futures[1].set_exception(RemotingTimeoutError("wait response timeout 10000 ms"))
    assert caller.responses[-1].code == ResponseCode.CONSUME_MSG_TIMEOUT


def test_subscription_groups(env: Env) -> None:
    body = json.dumps({"groupName": "SG", "retryMaxTimes": 3, "consumeBroadcastEnable": False}).encode()
    assert ask(env, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body).code == ResponseCode.SUCCESS
    table = json.loads(ask(env, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body or b"")
    assert table["subscriptionGroupTable"]["SG"]["retryMaxTimes"] == 3 and "dataVersion" in table
    no_body = ask(env, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)  # 4.9.8: new String(null)
    assert (no_body.code, no_body.remark) == (ResponseCode.SYSTEM_ERROR, JAVA_NPE_NULL_BODY_STRING)
    no_name = ask(env, RequestCode.DELETE_SUBSCRIPTIONGROUP)  # 4.9.8: the table's remove(null)
    assert (no_name.code, no_name.remark) == (ResponseCode.SYSTEM_ERROR, JAVA_NPE_NULL_KEY_REMOVE)
    bad = ask(env, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=b"{not json")
    assert bad.code == ResponseCode.SYSTEM_ERROR
    ask(env, RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "SG", "topic": "T", "queueId": 0, "commitOffset": 1})
    assert ask(env, RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "SG", "removeOffset": True}).code == 0
    assert env.broker.subscription_groups.find("SG") is None and env.broker.group_offsets("SG", "T") == {}
    assert ask(env, RequestCode.DELETE_SUBSCRIPTIONGROUP, {}).code == ResponseCode.SYSTEM_ERROR


def test_reset_offset(env: Env) -> None:
    create(env, "T", 2)
    for _ in range(3):
        env.send("T", queue_id=0)
    reset = {"topic": "T", "group": "CG", "timestamp": 0, "isForce": True}
    no_topic = ask(env, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {**reset, "topic": "Nope"})
    assert no_topic.remark == "[reset-offset] reset offset failed, no topic in this broker. topic=Nope"
    assert ask(env, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset).remark == "THe consumer group <CG> not exist"
    for queue_id, offset in ((0, 3), (1, 0)):
        ask(env, RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "CG", "topic": "T", "queueId": queue_id,
                                                      "commitOffset": offset})
    offline = ask(env, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset)
    assert offline.code == ResponseCode.CONSUMER_NOT_ONLINE
    assert offline.remark == "Consumer not online, so can not reset offset, Group: CG Topic: T Timestamp: 0"
    client = _online(env)
    done = ask(env, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset)
    assert done.code == ResponseCode.SUCCESS
    assert (done.body or b"").decode() == ('{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:0,'
                                           '{"brokerName":"broker-a","queueId":1,"topic":"T"}:0}}')
    told = [r for r in client.oneways if r.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET]
    assert len(told) == 1 and told[0].body == done.body and told[0].ext_fields["group"] == "CG"
    latest = ask(env, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {**reset, "timestamp": -1, "isForce": False})
    assert '"topic":"T"}:3' in (latest.body or b"").decode()  # the max offset is not behind the committed one
    cpp = ask(env, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset, language=LanguageCode.CPP)
    assert cpp.code == ResponseCode.SUCCESS
    assert json.loads(client.oneways[-1].body or b"")["offsetTable"][0]["offset"] == 0  # ResetOffsetBodyForC


def test_clone_group_offset(env: Env) -> None:
    create(env, "T", 2)
    ask(env, RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "A", "topic": "T", "queueId": 1, "commitOffset": 5})
    assert ask(env, RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "A", "destGroup": "B", "topic": "T"}).code == 0
    assert env.broker.group_offsets("B", "T") == {1: 5}
    ask(env, RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "A", "destGroup": "C"})  # Java clones under topic "null"
    assert env.broker.group_offsets("C", "T") == {}


# -------------------------------------------------------------------------------------------------- runtime/config
def test_runtime_info_and_config(env: Env) -> None:
    env.broker.create_topic("T", 1, 1)
    env.send("T")
    table = json.loads(ask(env, RequestCode.GET_BROKER_RUNTIME_INFO).body or b"")["table"]
    assert table["brokerVersionDesc"] == "V4_9_8" and table["msgPutTotalTodayNow"] == "1"
    assert int(table["earliestMessageTimeStamp"]) > 0 and "putTps" in table and "commitLogDirCapacity" in table
    config = ask(env, RequestCode.GET_BROKER_CONFIG)
    props = parse_properties((config.body or b"").decode())
    assert props["brokerName"] == "broker-a" and props["maxMessageSize"] == "4194304" and len(props) >= 170
    assert json.loads(config.ext_fields["version"])["counter"] == 0

    update = b"maxMessageSize=1024\nnoSuchKey=1\ndefaultTopicQueueNums=notanumber\nflushIntervalCommitLog=700\n"
    assert ask(env, RequestCode.UPDATE_BROKER_CONFIG, body=update).code == ResponseCode.SUCCESS
    assert env.broker.config.max_message_size == 1024  # live
    props = parse_properties((ask(env, RequestCode.GET_BROKER_CONFIG).body or b"").decode())
    assert props["flushIntervalCommitLog"] == "700" and "noSuchKey" not in props
    assert props["defaultTopicQueueNums"] == str(env.broker.config.default_topic_queue_nums)
    black = ask(env, RequestCode.UPDATE_BROKER_CONFIG, body=b"rocketmqHome=/x\n")
    assert (black.code, black.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
    assert ask(env, RequestCode.UPDATE_BROKER_CONFIG).code == ResponseCode.SUCCESS  # no body
    assert ask(env, RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerPermission=4\n").code == ResponseCode.SUCCESS
    assert env.broker.config.broker_permission == 4


# ----------------------------------------------------------------------------------------------------- name server
@pytest.fixture
def namesrv() -> NameServer:
    runtime = SimulatedRuntime(seed=1)
    events = EventLog(runtime.now_ms)
    server = NameServer(runtime, Network(runtime, events), events)
    server.start()
    return server


def ns_ask(server: NameServer, code: int, fields: dict[str, Any] | None = None) -> RemotingCommand:
    response = server.handle(RemotingCommand.request(code, fields or {}), FakeChannel())
    assert response is not None
    return response


def test_kv_config(namesrv: NameServer) -> None:
    ns = NAMESPACE_ORDER_TOPIC_CONFIG
    absent = ns_ask(namesrv, RequestCode.GET_KV_CONFIG, {"namespace": ns, "key": "T"})
    assert (absent.code, absent.remark) == (ResponseCode.QUERY_NOT_FOUND,
                                            f"No config item, Namespace: {ns} Key: T")
    assert ns_ask(namesrv, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": ns}).remark == \
        f"No config item, Namespace: {ns}"
    assert ns_ask(namesrv, RequestCode.PUT_KV_CONFIG, {"namespace": ns, "key": "T", "value": "broker-a:4"}).code == 0
    assert ns_ask(namesrv, RequestCode.GET_KV_CONFIG, {"namespace": ns, "key": "T"}).ext_fields["value"] == "broker-a:4"
    listed = ns_ask(namesrv, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": ns})
    assert json.loads(listed.body or b"") == {"table": {"T": "broker-a:4"}}
    # 4.9.8 leaves missing fields null: a null value is stored (reads back as no item), a null key refused.
    assert ns_ask(namesrv, RequestCode.PUT_KV_CONFIG, {"namespace": ns, "key": "T"}).code == ResponseCode.SUCCESS
    assert ns_ask(namesrv, RequestCode.GET_KV_CONFIG, {"namespace": ns, "key": "T"}).code == \
        ResponseCode.QUERY_NOT_FOUND
    no_key = ns_ask(namesrv, RequestCode.PUT_KV_CONFIG, {"namespace": ns, "value": "v"})
    assert (no_key.code, no_key.remark) == (ResponseCode.SYSTEM_ERROR, "namespace or key is null")
    assert ns_ask(namesrv, RequestCode.GET_KV_CONFIG, {"key": "T"}).remark == "No config item, Namespace: null Key: T"
    assert ns_ask(namesrv, RequestCode.GET_KVLIST_BY_NAMESPACE).remark == "No config item, Namespace: null"
    assert ns_ask(namesrv, RequestCode.DELETE_KV_CONFIG).code == ResponseCode.SUCCESS
    assert ns_ask(namesrv, RequestCode.DELETE_KV_CONFIG, {"namespace": ns, "key": "T"}).code == 0
    assert json.loads(ns_ask(namesrv, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": ns}).body or b"") == \
        {"table": {}}


def test_order_config_reaches_the_broker_on_registration() -> None:
    """updateTopic -o: PUT_KV_CONFIG of ORDER_TOPIC_CONFIG; the register answer carries it; the topic turns order."""
    env = Env()
    server = NameServer(env.runtime, env.network, env.events, addr="127.0.0.1:9876")
    server.start()
    env.broker.shutdown()
    env.broker = env.new_broker(namesrv="127.0.0.1:9876")
    create(env, "Ordered")
    env.runtime.advance(100)
    ns_ask(server, RequestCode.PUT_KV_CONFIG, {"namespace": NAMESPACE_ORDER_TOPIC_CONFIG, "key": "Ordered",
                                               "value": "broker-a:2"})
    env.broker.register_to_namesrv()
    env.runtime.advance(100)
    topic = env.broker.topics.get("Ordered")
    assert topic is not None and topic.order


def test_topic_lists_and_delete(namesrv: NameServer) -> None:
    env = Env()
    server = NameServer(env.runtime, env.network, env.events, addr="127.0.0.1:9876")
    server.start()
    env.broker.shutdown()
    env.broker = env.new_broker(namesrv="127.0.0.1:9876")
    create(env, "Listed")
    env.runtime.advance(100)
    topics = json.loads(ns_ask(server, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body or b"")["topicList"]
    assert "Listed" in topics and "TBW102" in topics
    by_cluster = json.loads(ns_ask(server, RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"}).body
                            or b"")
    assert "Listed" in by_cluster["topicList"]
    assert json.loads(ns_ask(server, RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "Nope"}).body or b"") == \
        {"topicList": []}
    system = json.loads(ns_ask(server, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS).body or b"")
    assert system == {"brokerAddr": env.broker.addr, "topicList": ["DefaultCluster", "broker-a"]}
    assert ns_ask(server, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "Listed", "clusterName": "Other"}).code == 0
    assert server.pickup_topic_route("Listed") is not None  # another cluster's brokers: nothing removed
    assert ns_ask(server, RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "Listed"}).code == 0
    assert server.pickup_topic_route("Listed") is None
    assert ns_ask(server, RequestCode.DELETE_TOPIC_IN_NAMESRV, {}).code == ResponseCode.SUCCESS  # 4.9.8: remove(null)
    no_cluster = ns_ask(server, RequestCode.GET_TOPICS_BY_CLUSTER, {})
    assert (no_cluster.code, json.loads(no_cluster.body or b"")) == (ResponseCode.SUCCESS, {"topicList": []})
    no_broker = ns_ask(server, RequestCode.WIPE_WRITE_PERM_OF_BROKER, {})
    assert (no_broker.code, no_broker.ext_fields) == (ResponseCode.SUCCESS, {"wipeTopicCount": "0"})


def test_a_broken_handler_is_caught(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stats test can fail: a handler answering the wrong max offset is noticed."""
    create(env, "T", 1)
    env.send("T")
    monkeypatch.setattr(env.broker.store, "max_offset", lambda topic, queue_id: 7)
    stats = loads_lenient_mq(ask(env, RequestCode.GET_TOPIC_STATS_INFO, {"topic": "T"}).body)
    assert stats != {("broker-a", 0, "T"): (0, 1, True)}  # what test_topic_stats_delete_and_queries expects


# ------------------------------------------------------------------------------------------- more broker statistics
def test_broker_consume_stats_offsets_and_time_span(env: Env) -> None:
    create(env, "T", 2)
    env.send("T", queue_id=0)
    env.send("T", queue_id=0)
    ask(env, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=json.dumps({"groupName": "CG"}).encode())
    ask(env, RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "CG", "topic": "T", "queueId": 0, "commitOffset": 1})
    stats = (ask(env, RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": False}).body or b"").decode()
    assert stats.endswith(',"totalDiff":1}') and '{"CG":[{"consumeTps":0.0,"offsetTable":{' in stats
    assert (ask(env, RequestCode.GET_ALL_CONSUMER_OFFSET).body or b"") == b'{"offsetTable":{"T@CG":{0:1}}}'
    assert (ask(env, RequestCode.GET_ALL_DELAY_OFFSET).body or b"") == b'{"offsetTable":{}}'
    env.runtime.advance(1_500)
    span = json.loads(ask(env, RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "T", "group": "CG"}).body or b"")
    first, second = span["consumeTimeSpanSet"]
    assert first["messageQueue"] == {"brokerName": "broker-a", "queueId": 0, "topic": "T"}
    assert first["minTimeStamp"] > 0 and first["consumeTimeStamp"] == first["minTimeStamp"]
    # The delay is how long the first unconsumed message (offset 1, the queue's last) has waited.
    assert first["delayTime"] == env.runtime.now_ms() - first["maxTimeStamp"] >= 1_500
    assert second["maxTimeStamp"] == -1 and second["maxTimeStampStr"] == "1969-12-31#23:59:59:999"
    assert ask(env, RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "No", "group": "CG"}).code == \
        ResponseCode.TOPIC_NOT_EXIST


def test_query_consume_queue_and_clean_unused_topic(env: Env) -> None:
    create(env, "T", 1)
    env.send("T")
    ok = json.loads(ask(env, RequestCode.QUERY_CONSUME_QUEUE, {"topic": "T", "queueId": 0, "index": 0, "count": 5,
                                                                "consumerGroup": "CG"}).body or b"")
    assert ok["maxQueueIndex"] == 1 and ok["filterData"] == "CG@T is not online!" and len(ok["queueData"]) == 1
    past = ask(env, RequestCode.QUERY_CONSUME_QUEUE, {"topic": "T", "queueId": 0, "index": 3, "count": 1})
    assert (past.code, past.remark, past.body) == (ResponseCode.SUCCESS, "Index 3 of 0@T is not exist!", None)
    assert ask(env, RequestCode.QUERY_CONSUME_QUEUE, {"topic": "No", "queueId": 0, "index": 0, "count": 1}).remark \
        == "0@No is not exist!"
    env.broker.topics.delete("T")
    assert env.broker.store.max_offset("T", 0) == 1
    assert ask(env, RequestCode.CLEAN_UNUSED_TOPIC).code == ResponseCode.SUCCESS
    assert env.broker.store.max_offset("T", 0) == 0


def test_get_consumer_status_asks_every_client(env: Env) -> None:
    client = _online(env)
    # 4.9.8: getConsumerGroupInfo(group).getChannelInfoTable() of an unknown group, of a missing one the lookup.
    assert ask(env, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": "T", "group": "Nobody"}).remark == (
        'java.lang.NullPointerException: Cannot invoke "org.apache.rocketmq.broker.client.ConsumerGroupInfo.'
        'getChannelInfoTable()" because the return value of "org.apache.rocketmq.broker.client.ConsumerManager.'
        'getConsumerGroupInfo(String)" is null, '
        "org.apache.rocketmq.broker.client.net.Broker2Client.getConsumeStatus(Broker2Client.java:243)")
    assert ask(env, RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": "T"}).remark == JAVA_NPE_NULL_KEY_GET
    caller = env.channel("10.0.0.1:1")
    assert env.handle(RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                                              {"topic": "T", "group": "CG"}), caller) is None
    asked = [r for r in client.oneways if r.code == RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT]
    assert len(asked) == 1 and asked[0].ext_fields == {"topic": "T", "group": "CG"}


# ----------------------------------------------------------------------------------------- more name server admin
def test_write_perm_unit_lists_and_namesrv_config() -> None:
    env = Env()
    server = NameServer(env.runtime, env.network, env.events, addr="127.0.0.1:9876")
    server.start()
    env.broker.shutdown()
    env.broker = env.new_broker(namesrv="127.0.0.1:9876")
    create(env, "Plain")
    create(env, "Unit", topicSysFlag=1)
    wiped = ns_ask(server, RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert int(wiped.ext_fields["wipeTopicCount"]) >= 2
    route = server.pickup_topic_route("Plain")
    assert route is not None and route.queue_datas[0].perm == 4
    added = ns_ask(server, RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert added.ext_fields["addTopicCount"] == wiped.ext_fields["wipeTopicCount"]
    assert server.pickup_topic_route("Plain").queue_datas[0].perm == 6  # type: ignore[union-attr]
    units = json.loads(ns_ask(server, RequestCode.GET_UNIT_TOPIC_LIST).body or b"")
    assert units == {"topicList": ["Unit"]}
    config = parse_properties((ns_ask(server, RequestCode.GET_NAMESRV_CONFIG).body or b"").decode())
    assert config["listenPort"] == "9876" and config["orderMessageEnable"] == "false"
    denied = server.handle(RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, {}, b"kvConfigPath=/x\n"),
                           FakeChannel())
    assert denied is not None and denied.code == ResponseCode.NO_PERMISSION
    ns_ask(server, RequestCode.PUT_KV_CONFIG, {"namespace": NAMESPACE_ORDER_TOPIC_CONFIG, "key": "Plain",
                                               "value": "broker-a:2"})
    server.handle(RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, {}, b"orderMessageEnable=true\n"),
                  FakeChannel())
    route = server.pickup_topic_route("Plain")
    answer = ns_ask(server, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Plain"})
    assert json.loads(answer.body or b"")["orderTopicConf"] == "broker-a:2" and route is not None


def test_consume_message_directly_forwards_the_stored_message(env: Env) -> None:
    create(env, "T", 1)
    sent = env.send("T")
    msg_id = sent.ext_fields["msgId"]
    client = _online(env)
    caller = env.channel("10.0.0.1:1")
    request = RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, {
        "consumerGroup": "CG", "clientId": "10.0.0.9@c1", "msgId": msg_id})
    assert env.handle(request, caller) is None
    forwarded = next(r for r in client.oneways if r.code == RequestCode.CONSUME_MESSAGE_DIRECTLY)
    assert forwarded.ext_fields["brokerName"] == "broker-a" and forwarded.body
    assert forwarded.body == env.broker.store.look_message_bytes(0)
    bad = ask(env, RequestCode.CONSUME_MESSAGE_DIRECTLY, {"consumerGroup": "CG", "clientId": "10.0.0.9@c1",
                                                          "msgId": "nope"})
    assert bad.code == ResponseCode.SYSTEM_ERROR



def test_missing_header_fields_go_on_as_null(env: Env) -> None:
    """4.9.8's decoder leaves a missing (or unparsable) field null and the processor goes on: its answers, as the
    real broker gives them (compared on the wire in test_realclient_wire_nulls.py)."""
    create(env, "T")
    empty_stats = ask(env, RequestCode.GET_CONSUME_STATS, {"topic": "Nope"})
    assert (empty_stats.code, json.loads(empty_stats.body or b"")) == (ResponseCode.SUCCESS,
                                                                       {"consumeTps": 0.0, "offsetTable": {}})
    assert ask(env, RequestCode.GET_CONSUME_STATS, {"topic": "T"}).remark == JAVA_NPE_NULL_KEY_GET
    assert ask(env, RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "G"}).code == ResponseCode.SUCCESS
    assert ask(env, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO).body == b'{"groupList":[]}'
    assert ask(env, RequestCode.GET_TOPIC_STATS_INFO).remark == "java.lang.NullPointerException"
    assert ask(env, RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "G"}).remark == \
        "The Consumer <G> <null> not online"
    # Primitive numbers stay 0.
    assert ask(env, RequestCode.QUERY_CONSUME_QUEUE, {"topic": "Nope", "queueId": "x"}).remark == "0@Nope is not exist!"
    earliest = ask(env, RequestCode.GET_EARLIEST_MSG_STORETIME, {"topic": "T", "queueId": "1x"})
    assert 'GetEarliestMsgStoretimeRequestHeader.getQueueId()" is null' in (earliest.remark or "")
    # MessageDecoder.decodeMessageId's own failures, by how many bytes the text gives.
    for msg_id, remark in (("", 'because "array" is null'), ("A" * 30, "HeapByteBuffer.get(HeapByteBuffer.java:183)"),
                           ("A" * 34, "Buffer.nextGetIndex(Buffer.java:707)"), ("G" * 32, "port out of range:-1"),
                           ("7F00000100002A9F7FFFFFFFFFFFFFFF", "SelectMappedBufferResult.getSize()")):
        fields = {"consumerGroup": "G", "clientId": "c", "msgId": msg_id}
        answer = ask(env, RequestCode.CONSUME_MESSAGE_DIRECTLY, fields)
        assert answer.code == ResponseCode.SYSTEM_ERROR and remark in (answer.remark or ""), (msg_id, answer.remark)
    no_name = ask(env, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=b'{"retryMaxTimes":3}')
    assert no_name.remark == "java.lang.NullPointerException, " \
        "java.base/java.util.concurrent.ConcurrentHashMap.putVal(ConcurrentHashMap.java:1011)"
    assert ask(env, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=b"[]").code == ResponseCode.SUCCESS
    # Once the offset table holds a topic@group key, scanning it for null throws (empty above: nothing found).
    ask(env, RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "G", "topic": "T", "queueId": 0, "commitOffset": 0})
    assert "ConsumerOffsetManager.whichGroupByTopic(ConsumerOffsetManager.java:112)" in \
        (ask(env, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO).remark or "")
    for code in (RequestCode.GET_CONSUME_STATS, RequestCode.CLONE_GROUP_OFFSET):
        assert "ConsumerOffsetManager.whichTopicByConsumer(ConsumerOffsetManager.java:94)" in \
            (ask(env, code).remark or "")


def test_raw_member_reads_a_fastjson_member_as_written() -> None:
    """An object or array member's text is cut out as written: brackets inside strings (quotes escaped in them) do
    not end it; a member that is not there is None."""
    body = b'{"a":"x\\"}[{","b":{"c":[1,{"d":"]\\"}"}]},"e":2}'
    assert raw_member(body, "b") == '{"c":[1,{"d":"]\\"}"}]}'
    assert raw_member(body, "z") is None
