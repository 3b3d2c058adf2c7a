"""Broker conformance cases: the admin requests a test set-up uses (topics, subscription groups, configuration,
runtime information) and the answer to a request code the broker does not serve."""

from __future__ import annotations

from typing import Any

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import (
    FAR_COMMIT_LOG_OFFSET,
    UNSERVED_REQUEST_CODE,
    answer_within,
    fill,
    queue_datas,
    stored,
)
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.model import CaseList, Level
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.route import loads_lenient
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    BENCHMARK_TOPIC,
    BENCHMARK_TOPIC_QUEUE_NUMS,
    DEFAULT_PERM,
    OFFSET_MOVED_EVENT_TOPIC,
    PERM_INHERIT,
    PERM_READ,
    REPLY_TOPIC_POSTFIX,
    SCHEDULE_TOPIC,
    SELF_TEST_TOPIC,
    SYSTEM_TOPIC_PREFIX,
    RequestCode,
    ResponseCode,
)

cases = CaseList("broker/admin")
CASES = cases.cases


def topic_configs(ctx: BrokerContext, broker: int = 0) -> dict[str, dict[str, Any]]:
    """GET_ALL_TOPIC_CONFIG's topicConfigTable (it must answer SUCCESS with a TopicConfigSerializeWrapper)."""
    answer = ctx.broker(broker).request(requests.all_topic_config())
    ctx.expect_code(answer, ResponseCode.SUCCESS, "GET_ALL_TOPIC_CONFIG")
    body = requests.json_body(answer) or {}
    ctx.expect(isinstance(body.get("topicConfigTable"), dict) and isinstance(body.get("dataVersion"), dict),
               "a body with topicConfigTable and dataVersion",
               f"keys {sorted(body) if isinstance(body, dict) else body}")
    topics: dict[str, dict[str, Any]] = body["topicConfigTable"]
    return topics


def group_configs(ctx: BrokerContext, broker: int = 0) -> dict[str, dict[str, Any]]:
    answer = ctx.broker(broker).request(requests.all_subscription_groups())
    ctx.expect_code(answer, ResponseCode.SUCCESS, "GET_ALL_SUBSCRIPTIONGROUP_CONFIG")
    body = requests.json_body(answer) or {}
    ctx.expect(isinstance(body.get("subscriptionGroupTable"), dict), "a body with subscriptionGroupTable",
               f"keys {sorted(body) if isinstance(body, dict) else body}")
    groups: dict[str, dict[str, Any]] = body["subscriptionGroupTable"]
    return groups


def routed_queues(ctx: BrokerContext, topic: str, broker_name: str) -> tuple[object, ...] | None:
    """(readQueueNums, writeQueueNums, perm) of ``broker_name`` in the name server's route, None without one."""
    queue = queue_datas(ctx.namesrv().request(requests.route(topic))).get(broker_name)
    if queue is None:
        return None
    return queue.get("readQueueNums"), queue.get("writeQueueNums"), queue.get("perm")


def create(ctx: BrokerContext, topic: str, queues: int, *, read_queues: int | None = None,
           perm: int = DEFAULT_PERM) -> RemotingCommand:
    ctx.target.created_topics.add(topic)
    return ctx.broker(0).request(requests.create_topic(topic, queues, read_queues=read_queues, perm=perm))


@cases.case("create-topic", clauses=("BRK-17", "NS-1", "NS-2"),
            requirement="UPDATE_AND_CREATE_TOPIC stores the topic config and registers it at the name server")
def create_topic(ctx: BrokerContext) -> None:
    """BRK-17: the new config (5 read / 3 write queues, perm RW) is listed by GET_ALL_TOPIC_CONFIG with those values,
    and the broker registers it: the name server routes the topic with that queue data (NS-1, NS-2)."""
    topic = ctx.name("topic")
    ctx.expect_code(create(ctx, topic, 3, read_queues=5), ResponseCode.SUCCESS, f"UPDATE_AND_CREATE_TOPIC {topic}")
    config = topic_configs(ctx).get(topic)
    ctx.expect(config is not None, f"{topic} in GET_ALL_TOPIC_CONFIG", "it is not listed")
    assert config is not None
    got = (config.get("topicName"), config.get("readQueueNums"), config.get("writeQueueNums"), config.get("perm"))
    ctx.expect_equal(got, (topic, 5, 3, DEFAULT_PERM), "(topicName, readQueueNums, writeQueueNums, perm)")
    name = ctx.brokers[0].name
    ctx.wait_until(lambda: routed_queues(ctx, topic, name) == (5, 3, DEFAULT_PERM), 10.0,
                   what=f"the name server to route {topic} with {name}'s (5, 3, {DEFAULT_PERM}) queue data")


@cases.case("update-topic", clauses=("BRK-17", "NS-1"),
            requirement="UPDATE_AND_CREATE_TOPIC of an existing topic replaces its config and its route")
def update_topic(ctx: BrokerContext) -> None:
    """BRK-17: creating an existing topic again with other queue numbers and a read-only perm updates the stored
    config, and the route follows (the broker registers the new data version)."""
    topic = ctx.name("topic")
    ctx.expect_code(create(ctx, topic, 2), ResponseCode.SUCCESS, f"UPDATE_AND_CREATE_TOPIC {topic}")
    ctx.expect_code(create(ctx, topic, 6, perm=PERM_READ), ResponseCode.SUCCESS,
                    f"UPDATE_AND_CREATE_TOPIC {topic} again")
    config = topic_configs(ctx).get(topic) or {}
    got = (config.get("readQueueNums"), config.get("writeQueueNums"), config.get("perm"))
    ctx.expect_equal(got, (6, 6, PERM_READ), "(readQueueNums, writeQueueNums, perm) after the update")
    name = ctx.brokers[0].name
    ctx.wait_until(lambda: routed_queues(ctx, topic, name) == (6, 6, PERM_READ), 10.0,
                   what=f"the route of {topic} to carry the updated queue data (6, 6, {PERM_READ})")


@cases.case("delete-topic-in-broker", clauses=("BRK-17",),
            requirement="DELETE_TOPIC_IN_BROKER removes the topic config from the broker")
def delete_topic_in_broker(ctx: BrokerContext) -> None:
    """BRK-17: after DELETE_TOPIC_IN_BROKER the topic is no longer in GET_ALL_TOPIC_CONFIG; deleting a topic the
    broker does not have is SUCCESS too."""
    topic = ctx.name("topic")
    ctx.expect_code(create(ctx, topic, 1), ResponseCode.SUCCESS, f"UPDATE_AND_CREATE_TOPIC {topic}")
    broker = ctx.broker(0)
    ctx.expect_code(broker.request(requests.delete_topic_in_broker(topic)), ResponseCode.SUCCESS,
                    f"DELETE_TOPIC_IN_BROKER {topic}")
    ctx.expect(topic not in topic_configs(ctx), f"{topic} gone from GET_ALL_TOPIC_CONFIG", "it is still listed")
    absent = ctx.name("absent")
    ctx.expect_code(broker.request(requests.delete_topic_in_broker(absent)), ResponseCode.SUCCESS,
                    f"DELETE_TOPIC_IN_BROKER {absent} (never created)")


@cases.case("system-topic-refused", clauses=("BRK-17",),
            requirement="creating or deleting a system topic (rmq_sys_ prefix) is refused with SYSTEM_ERROR")
def system_topic_refused(ctx: BrokerContext) -> None:
    """BRK-17: TopicValidator.isSystemTopic: UPDATE_AND_CREATE_TOPIC and DELETE_TOPIC_IN_BROKER of a topic named
    with the system prefix answer SYSTEM_ERROR "The topic[<t>] is conflict with system topic."; nothing is created.
    (A fresh rmq_sys_ name is used so that a target that wrongly accepts is not harmed.)"""
    topic = SYSTEM_TOPIC_PREFIX + ctx.name("topic")
    remark = f"The topic[{topic}] is conflict with system topic."
    answer = create(ctx, topic, 1)
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, f"UPDATE_AND_CREATE_TOPIC {topic}")
    ctx.expect_equal(answer.remark, remark, "remark")
    ctx.expect(topic not in topic_configs(ctx), f"{topic} not in GET_ALL_TOPIC_CONFIG", "it was created")
    answer = ctx.broker(0).request(requests.delete_topic_in_broker(topic))
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, f"DELETE_TOPIC_IN_BROKER {topic}")
    ctx.expect_equal(answer.remark, remark, "remark")


@cases.case("invalid-topic-name-refused", clauses=("BRK-17", "BRK-1"),
            requirement="UPDATE_AND_CREATE_TOPIC of a name outside [%|a-zA-Z0-9_-] is refused with SYSTEM_ERROR")
def invalid_topic_name_refused(ctx: BrokerContext) -> None:
    """BRK-17 with BRK-1's validator: a topic name with a space and '!' answers SYSTEM_ERROR with the validator's
    remark, and is not created."""
    topic = ctx.name("topic") + " bad!"
    answer = create(ctx, topic, 1)
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, f"UPDATE_AND_CREATE_TOPIC {topic!r}")
    ctx.expect("illegal characters" in (answer.remark or ""), "a remark about illegal characters",
               repr(answer.remark))
    ctx.expect(topic not in topic_configs(ctx), f"{topic!r} not in GET_ALL_TOPIC_CONFIG", "it was created")


@cases.case("broker-config", clauses=("BRK-18",),
            requirement="GET_BROKER_CONFIG answers key=value lines naming the broker, and its data version")
def broker_config(ctx: BrokerContext) -> None:
    """BRK-18: the configuration as properties text: brokerName and brokerClusterName are those the name server
    knows, listenPort is the broker's port; the version field is a DataVersion JSON (timestamp, counter)."""
    broker = ctx.brokers[0]
    answer = ctx.broker(0).request(requests.broker_config())
    ctx.expect_code(answer, ResponseCode.SUCCESS, "GET_BROKER_CONFIG")
    config = requests.properties_body(answer)
    got = (config.get("brokerName"), config.get("brokerClusterName"), config.get("listenPort"))
    ctx.expect_equal(got, (broker.name, broker.cluster, broker.addr.rpartition(":")[2]),
                     "(brokerName, brokerClusterName, listenPort)")
    version = answer.field("version")
    try:
        parsed = loads_lenient(version or "")
    except ValueError:
        parsed = None
    ctx.expect(isinstance(parsed, dict) and "timestamp" in parsed and "counter" in parsed,
               "a version field holding a DataVersion JSON", repr(version))


@cases.case("broker-runtime-info", clauses=("BRK-18",),
            requirement="GET_BROKER_RUNTIME_INFO answers a KVTable whose commitLogMaxOffset follows the writes")
def broker_runtime_info(ctx: BrokerContext) -> None:
    """BRK-18: the runtime table (a KVTable body) has brokerVersion and commitLogMaxOffset; after a send the
    commit-log max offset is past the message's commit-log offset."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    sent = ctx.send(client, topic, b"runtime-info")
    answer = client.request(requests.broker_runtime_info())
    ctx.expect_code(answer, ResponseCode.SUCCESS, "GET_BROKER_RUNTIME_INFO")
    table = (requests.json_body(answer) or {}).get("table") or {}
    ctx.expect("brokerVersion" in table and "commitLogMaxOffset" in table,
               "a table with brokerVersion and commitLogMaxOffset", f"keys {sorted(table)[:20]}")
    ctx.expect(int(table["commitLogMaxOffset"]) > sent.commit_log_offset,
               f"commitLogMaxOffset > {sent.commit_log_offset} (the message just sent)",
               f"commitLogMaxOffset = {table['commitLogMaxOffset']}")


@cases.case("subscription-group-create-delete", clauses=("BRK-20",),
            requirement="UPDATE_AND_CREATE_SUBSCRIPTIONGROUP stores a group config, DELETE_SUBSCRIPTIONGROUP drops it")
def subscription_group_create_delete(ctx: BrokerContext) -> None:
    """BRK-20: the created group is listed by GET_ALL_SUBSCRIPTIONGROUP_CONFIG with the sent retryMaxTimes and
    retryQueueNums; after the delete it is not listed."""
    group = ctx.name("group")
    ctx.target.created_groups.add(group)
    broker = ctx.broker(0)
    answer = broker.request(requests.create_group(group, retry_max_times=5, retry_queues=2))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"UPDATE_AND_CREATE_SUBSCRIPTIONGROUP {group}")
    config = group_configs(ctx).get(group)
    ctx.expect(config is not None, f"{group} in GET_ALL_SUBSCRIPTIONGROUP_CONFIG", "it is not listed")
    assert config is not None
    ctx.expect_equal((config.get("groupName"), config.get("retryMaxTimes"), config.get("retryQueueNums")),
                     (group, 5, 2), "(groupName, retryMaxTimes, retryQueueNums)")
    ctx.expect_code(broker.request(requests.delete_group(group)), ResponseCode.SUCCESS,
                    f"DELETE_SUBSCRIPTIONGROUP {group}")
    ctx.expect(group not in group_configs(ctx), f"{group} gone from GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
               "it is still listed")


@cases.case("unknown-group-pull", clauses=("BRK-20",),
            requirement="a pull for an unknown group creates it when autoCreateSubscriptionGroup, else is refused")
def unknown_group_pull(ctx: BrokerContext) -> None:
    """BRK-20: with autoCreateSubscriptionGroup (the 4.9.8 default) the broker creates the group's config on the
    pull; without it the pull answers SUBSCRIPTION_GROUP_NOT_EXIST and nothing is created."""
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    group = ctx.name("group")
    ctx.target.created_groups.add(group)
    answer = ctx.broker(0).request(requests.pull(group, topic, 0, 0))
    if ctx.setting_bool("autoCreateSubscriptionGroup"):
        ctx.expect(answer.code != ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                   "the pull served (autoCreateSubscriptionGroup=true)", f"code {answer.code} {answer.remark!r}")
        ctx.expect(group in group_configs(ctx), f"{group} created by the pull", "it is not listed")
    else:
        ctx.expect_code(answer, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"PULL_MESSAGE for {group}")
        ctx.expect(group not in group_configs(ctx), f"{group} not created", "it is listed")


@cases.case("unknown-request-code", clauses=("BRK-19",),
            requirement="a request code the broker does not serve answers REQUEST_CODE_NOT_SUPPORTED")
def unknown_request_code(ctx: BrokerContext) -> None:
    """BRK-19: an unknown request code is answered (never left unanswered, never a closed connection) with
    REQUEST_CODE_NOT_SUPPORTED, and the connection goes on serving."""
    broker = ctx.broker(0)
    answer = broker.request(RemotingCommand.request(UNSERVED_REQUEST_CODE))
    ctx.expect_code(answer, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f"request code {UNSERVED_REQUEST_CODE}")
    ctx.expect_code(broker.request(requests.broker_config()), ResponseCode.SUCCESS,
                    "GET_BROKER_CONFIG on the same connection afterwards")


@cases.case("unknown-request-code-remark", clauses=("BRK-19",), level=Level.SHOULD,
            requirement="REQUEST_CODE_NOT_SUPPORTED's remark is 4.9.8's \" request type <code> not supported\"")
def unknown_request_code_remark(ctx: BrokerContext) -> None:
    """BRK-19 (4.9.8 text): the remark of the answer to an unknown request code."""
    answer = ctx.broker(0).request(RemotingCommand.request(UNSERVED_REQUEST_CODE))
    ctx.expect_equal(answer.remark, f" request type {UNSERVED_REQUEST_CODE} not supported", "remark")


# --------------------------------------------------------------------------- built-in tables, data versions (BRK-21)
BUILTIN_GROUPS = ("TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL",
                  "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER")


def table_version(ctx: BrokerContext, request: RemotingCommand, what: str) -> tuple[int, int]:
    """(counter, timestamp) of the DataVersion a GET_ALL_*_CONFIG answer carries."""
    answer = ctx.broker(0).request(request)
    ctx.expect_code(answer, ResponseCode.SUCCESS, what)
    version = (requests.json_body(answer) or {}).get("dataVersion") or {}
    return int(version.get("counter", -1)), int(version.get("timestamp", -1))


@cases.case("builtin-topics-and-groups", clauses=("BRK-21",),
            requirement="a broker has the built-in topics and subscription groups, and lists them as system topics")
def builtin_topics_and_groups(ctx: BrokerContext) -> None:
    """BRK-21: GET_ALL_TOPIC_CONFIG holds SELF_TEST_TOPIC (1 queue), TBW102 (defaultTopicQueueNums, perm 7) exactly
    when autoCreateTopicEnable, BenchmarkTest (1024), the cluster's name (16, perm 7 with clusterTopicEnable), the
    broker's name (1, perm 7 with brokerTopicEnable), OFFSET_MOVED_EVENT (1), SCHEDULE_TOPIC_XXXX (18) and
    <cluster>_REPLY_TOPIC (1), perm 6 where not said; GET_SYSTEM_TOPIC_LIST_FROM_BROKER lists them;
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG holds the built-in groups."""
    broker = ctx.brokers[0]
    rw_inherit = DEFAULT_PERM | PERM_INHERIT
    expected: dict[str, tuple[int, int]] = {
        SELF_TEST_TOPIC: (1, DEFAULT_PERM), BENCHMARK_TOPIC: (BENCHMARK_TOPIC_QUEUE_NUMS, DEFAULT_PERM),
        broker.cluster: (16, rw_inherit if ctx.setting_bool("clusterTopicEnable") else PERM_INHERIT),
        broker.name: (1, rw_inherit if ctx.setting_bool("brokerTopicEnable") else PERM_INHERIT),
        OFFSET_MOVED_EVENT_TOPIC: (1, DEFAULT_PERM), SCHEDULE_TOPIC: (18, DEFAULT_PERM),
        f"{broker.cluster}_{REPLY_TOPIC_POSTFIX}": (1, DEFAULT_PERM)}
    auto_create = ctx.setting_bool("autoCreateTopicEnable")
    if auto_create:
        expected[AUTO_CREATE_TOPIC_KEY] = (ctx.setting_int("defaultTopicQueueNums"), rw_inherit)
    topics = topic_configs(ctx)
    for topic, (queues, perm) in expected.items():
        config = topics.get(topic) or {}
        got = (config.get("readQueueNums"), config.get("writeQueueNums"), config.get("perm"))
        ctx.expect_equal(got, (queues, queues, perm), f"{topic}'s (readQueueNums, writeQueueNums, perm)")
    if not auto_create:
        ctx.expect(AUTO_CREATE_TOPIC_KEY not in topics, f"no {AUTO_CREATE_TOPIC_KEY} (autoCreateTopicEnable=false)",
                   "it is listed")
    answer = ctx.broker(0).request(RemotingCommand.request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER))
    ctx.expect_code(answer, ResponseCode.SUCCESS, "GET_SYSTEM_TOPIC_LIST_FROM_BROKER")
    listed = set((requests.json_body(answer) or {}).get("topicList") or [])
    ctx.expect(set(expected) <= listed, "every built-in topic in the system topic list",
               f"missing {sorted(set(expected) - listed)}")
    groups = group_configs(ctx)
    ctx.expect(set(BUILTIN_GROUPS) <= set(groups), "the built-in subscription groups",
               f"missing {sorted(set(BUILTIN_GROUPS) - set(groups))}")


@cases.case("table-data-versions", clauses=("BRK-21",),
            requirement="every change of the topic or subscription-group table moves that table's DataVersion by one")
def table_data_versions(ctx: BrokerContext) -> None:
    """BRK-21: UPDATE_AND_CREATE_TOPIC moves the topic table's DataVersion counter by one (its timestamp not
    earlier), and UPDATE_AND_CREATE_SUBSCRIPTIONGROUP the subscription-group table's."""
    before = table_version(ctx, requests.all_topic_config(), "GET_ALL_TOPIC_CONFIG")
    topic = ctx.name("topic")
    ctx.expect_code(create(ctx, topic, 1), ResponseCode.SUCCESS, f"UPDATE_AND_CREATE_TOPIC {topic}")
    after = table_version(ctx, requests.all_topic_config(), "GET_ALL_TOPIC_CONFIG")
    ctx.expect_equal(after[0], before[0] + 1, "the topic table's DataVersion counter after one change")
    ctx.expect(after[1] >= before[1], "a timestamp not earlier", f"{after[1]} after {before[1]}")
    before = table_version(ctx, requests.all_subscription_groups(), "GET_ALL_SUBSCRIPTIONGROUP_CONFIG")
    group = ctx.group(create=False)
    ctx.target.created_groups.add(group)
    ctx.expect_code(ctx.broker(0).request(requests.create_group(group)), ResponseCode.SUCCESS,
                    f"UPDATE_AND_CREATE_SUBSCRIPTIONGROUP {group}")
    after = table_version(ctx, requests.all_subscription_groups(), "GET_ALL_SUBSCRIPTIONGROUP_CONFIG")
    ctx.expect_equal(after[0], before[0] + 1, "the subscription-group table's DataVersion counter after one change")


# ------------------------------------------------------------------------------------ UPDATE_BROKER_CONFIG (BRK-24)
def config_and_version(ctx: BrokerContext, client: WireClient) -> tuple[dict[str, str], str | None]:
    answer = client.request(requests.broker_config())
    ctx.expect_code(answer, ResponseCode.SUCCESS, "GET_BROKER_CONFIG")
    return requests.properties_body(answer), answer.field("version")


@cases.case("update-broker-config", clauses=("BRK-24", "BRK-18"),
            requirement="UPDATE_BROKER_CONFIG refuses the black list, parses values as Java does, ignores unknown "
                        "keys and moves the configuration's DataVersion")
def update_broker_config(ctx: BrokerContext) -> None:
    """BRK-24: a body naming brokerConfigPath answers NO_PERMISSION "Can not update config in black list." and
    changes nothing (not its other key, not the version); debugLockEnable=TRUE reads back true, then =yes false
    (Boolean.parseBoolean); an int that does not parse leaves clientManageThreadPoolNums as it was; an unknown key
    is ignored; each accepted update moves GET_BROKER_CONFIG's version. debugLockEnable is restored in a finally
    block, on a fresh connection."""
    broker = ctx.brokers[0]
    client = ctx.broker(0)
    config, version = config_and_version(ctx, client)
    if config.get("debugLockEnable") != "false" or "clientManageThreadPoolNums" not in config:
        ctx.skip("the broker does not report debugLockEnable=false and clientManageThreadPoolNums")
    threads = config["clientManageThreadPoolNums"]
    try:
        refused = client.request(requests.update_broker_config({"debugLockEnable": "true",
                                                                "brokerConfigPath": "/tmp/x"}))
        ctx.expect_code(refused, ResponseCode.NO_PERMISSION, "UPDATE_BROKER_CONFIG naming brokerConfigPath")
        ctx.expect_equal(refused.remark, "Can not update config in black list.", "remark")
        after, moved = config_and_version(ctx, client)
        ctx.expect_equal((after.get("debugLockEnable"), moved), ("false", version),
                         "(debugLockEnable, version) after the refusal")
        answer = client.request(requests.update_broker_config({
            "debugLockEnable": "TRUE", "clientManageThreadPoolNums": "lots", ctx.name("unknown"): "1"}))
        ctx.expect_code(answer, ResponseCode.SUCCESS, "UPDATE_BROKER_CONFIG debugLockEnable=TRUE")
        after, moved = config_and_version(ctx, client)
        ctx.expect_equal((after.get("debugLockEnable"), after.get("clientManageThreadPoolNums")), ("true", threads),
                         "(debugLockEnable, clientManageThreadPoolNums) after the update")
        ctx.expect(moved != version, "the version field moved by the update", f"still {moved}")
        answer = client.request(requests.update_broker_config({"debugLockEnable": "yes"}))
        ctx.expect_code(answer, ResponseCode.SUCCESS, "UPDATE_BROKER_CONFIG debugLockEnable=yes")
        after, _ = config_and_version(ctx, client)
        ctx.expect_equal(after.get("debugLockEnable"), "false", "debugLockEnable after =yes")
    finally:
        with WireClient(broker.addr, ctx.target.timeout_s) as cleanup:
            cleanup.request(requests.update_broker_config({"debugLockEnable": "false"}))


# -------------------------------------------------------------------------------------- runtime values (BRK-26)
def runtime_table(ctx: BrokerContext, client: WireClient) -> dict[str, str]:
    answer = client.request(requests.broker_runtime_info())
    ctx.expect_code(answer, ResponseCode.SUCCESS, "GET_BROKER_RUNTIME_INFO")
    table: dict[str, str] = (requests.json_body(answer) or {}).get("table") or {}
    return table


@cases.case("runtime-store-values", clauses=("BRK-26",),
            requirement="GET_BROKER_RUNTIME_INFO's commit-log offsets, put count and earliest store time follow the "
                        "stored messages")
def runtime_store_values(ctx: BrokerContext) -> None:
    """BRK-26: after three sends msgPutTotalTodayNow grew by at least three, commitLogMaxOffset is at or past the
    end of the last message (its offset plus its stored size), commitLogMinOffset is a message's start at or before
    the first one, and earliestMessageTimeStamp is the store time of the message there (4.9.8 answers -1 until
    2 * maxMessageSize bytes follow that offset: it reads the time through a buffer that long)."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    before = runtime_table(ctx, client)
    sent = [ctx.send(client, topic, f"runtime-{i}".encode()) for i in range(3)]
    last = client.request(requests.view_message(sent[-1].commit_log_offset))
    ctx.expect_code(last, ResponseCode.SUCCESS, "VIEW_MESSAGE_BY_ID of the last message")
    table = runtime_table(ctx, client)
    grew = int(table.get("msgPutTotalTodayNow", -1)) - int(before.get("msgPutTotalTodayNow", 0))
    ctx.expect(grew >= 3, "msgPutTotalTodayNow grown by at least 3", f"grown by {grew}")
    end = sent[-1].commit_log_offset + len(last.body or b"")
    ctx.expect(int(table.get("commitLogMaxOffset", -1)) >= end, f"commitLogMaxOffset >= {end}",
               f"commitLogMaxOffset = {table.get('commitLogMaxOffset')}")
    min_offset = int(table.get("commitLogMinOffset", -1))
    ctx.expect(0 <= min_offset <= sent[0].commit_log_offset, f"0 <= commitLogMinOffset <= {sent[0].commit_log_offset}",
               f"commitLogMinOffset = {min_offset}")
    first = stored(ctx, client, min_offset, "the message at commitLogMinOffset")
    earliest = int(table.get("earliestMessageTimeStamp", -1))
    # 4.9.8 reads the earliest store time through a buffer of 2 * maxMessageSize bytes from the min offset, and
    # answers -1 while the commit log holds fewer bytes past it than that.
    short = int(table.get("commitLogMaxOffset", 0)) - min_offset < 2 * ctx.setting_int("maxMessageSize")
    ctx.expect(earliest == first.store_timestamp or (short and earliest == -1),
               f"earliestMessageTimeStamp = {first.store_timestamp} (the store time of the message at "
               "commitLogMinOffset; -1 allowed while fewer than 2 * maxMessageSize bytes follow it)",
               f"earliestMessageTimeStamp = {earliest}")


@cases.case("runtime-version", clauses=("BRK-26",), level=Level.SHOULD,
            requirement="GET_BROKER_RUNTIME_INFO reports brokerVersion 409 and brokerVersionDesc V4_9_8")
def runtime_version(ctx: BrokerContext) -> None:
    """BRK-26 (4.9.8 values): the version a 4.9.8 broker reports."""
    table = runtime_table(ctx, ctx.broker(0))
    ctx.expect_equal((table.get("brokerVersion"), table.get("brokerVersionDesc")), ("409", "V4_9_8"),
                     "(brokerVersion, brokerVersionDesc)")


# ------------------------------------------------------------------------------------------ broker stats (BRK-27)
STATS_SAMPLE_WAIT_S = 25.0


def stats_minute(client: WireClient, name: str, key: str) -> dict[str, Any] | None:
    answer = client.request(requests.view_broker_stats(name, key))
    if answer.code != ResponseCode.SUCCESS:
        return None
    minute: dict[str, Any] = (requests.json_body(answer) or {}).get("statsMinute") or {}
    return minute


@cases.case("broker-stats", clauses=("BRK-27",), slow=True,
            requirement="VIEW_BROKER_STATS_DATA answers a topic's put counts once sampled, and refuses an item never "
                        "counted")
def broker_stats(ctx: BrokerContext) -> None:
    """BRK-27: TOPIC_PUT_NUMS of a fresh topic is SYSTEM_ERROR "The stats <TOPIC_PUT_NUMS> <topic> not exist"
    before any send; after three sends the minute snapshot's sum reaches 3 once a 10 s sample is taken (avgpt 1,
    tps > 0), and TOPIC_PUT_SIZE's sum is the bytes the three messages take in the commit log."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    answer = client.request(requests.view_broker_stats("TOPIC_PUT_NUMS", topic))
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, f"VIEW_BROKER_STATS_DATA TOPIC_PUT_NUMS {topic} before a send")
    ctx.expect_equal(answer.remark, f"The stats <TOPIC_PUT_NUMS> <{topic}> not exist", "remark")
    sent = [ctx.send(client, topic, f"stats-{i}".encode()) for i in range(3)]
    size = 0
    for one in sent:
        view = client.request(requests.view_message(one.commit_log_offset))
        ctx.expect_code(view, ResponseCode.SUCCESS, "VIEW_MESSAGE_BY_ID of a message sent")
        size += len(view.body or b"")
    nums = ctx.wait_until(lambda: (m := stats_minute(client, "TOPIC_PUT_NUMS", topic)) and m.get("sum") == 3 and m,
                          STATS_SAMPLE_WAIT_S, what=f"TOPIC_PUT_NUMS {topic}'s minute sum to reach 3", interval=0.5)
    ctx.expect(float(nums.get("avgpt", 0)) == 1.0 and float(nums.get("tps", 0)) > 0,
               "avgpt 1.0 (one message per send) and tps > 0", repr(nums))
    put_size = stats_minute(client, "TOPIC_PUT_SIZE", topic) or {}
    ctx.expect_equal(put_size.get("sum"), size, "TOPIC_PUT_SIZE's minute sum (the bytes written)")


# ------------------------------------------------------------------------------------ maintenance requests (BRK-31)
@cases.case("maintenance-requests", clauses=("BRK-31", "BRK-25"),
            requirement="the clean-up requests answer SUCCESS and keep every message of a configured topic; "
                        "CLEAN_UNUSED_TOPIC drops the queues of topics without config")
def maintenance_requests(ctx: BrokerContext) -> None:
    """BRK-31: CLEAN_EXPIRED_CONSUMEQUEUE, DELETE_EXPIRED_COMMITLOG and CLEAN_UNUSED_TOPIC answer SUCCESS and a
    configured topic keeps its messages (max offset, a message viewed by id); GET_ALL_DELAY_OFFSET answers an
    offsetTable. A consume queue of a topic without config that the broker holds (QUERY_CONSUME_QUEUE answers
    SUCCESS: 4.9.8's GET_MAX_OFFSET creates it) is gone after CLEAN_UNUSED_TOPIC (SYSTEM_ERROR, BRK-25)."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    fill(ctx, client, topic, 2)
    sent = ctx.send(client, topic, b"kept")
    unused = ctx.name("absent")
    client.request(requests.get_max_offset(unused, 0))
    held = client.request(requests.query_consume_queue(unused, 0, 0, 1)).code == ResponseCode.SUCCESS
    for code in (RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, RequestCode.DELETE_EXPIRED_COMMITLOG,
                 RequestCode.CLEAN_UNUSED_TOPIC):
        ctx.expect_code(client.request(RemotingCommand.request(code)), ResponseCode.SUCCESS, RequestCode(code).name)
    ctx.wait_until(lambda: max_offset_of(client, topic) == 3, 5.0, what=f"max offset 3 of {topic}:0 kept")
    stored(ctx, client, sent.commit_log_offset, "the message sent before the clean-up")
    if held:
        gone = client.request(requests.query_consume_queue(unused, 0, 0, 1))
        ctx.expect_code(gone, ResponseCode.SYSTEM_ERROR, f"QUERY_CONSUME_QUEUE {unused}:0 after CLEAN_UNUSED_TOPIC")
    delay = client.request(RemotingCommand.request(RequestCode.GET_ALL_DELAY_OFFSET))
    ctx.expect_code(delay, ResponseCode.SUCCESS, "GET_ALL_DELAY_OFFSET")
    ctx.expect(isinstance((requests.json_body(delay) or {}).get("offsetTable"), dict), "a body with an offsetTable",
               repr((delay.body or b"")[:200]))


def max_offset_of(client: WireClient, topic: str) -> int:
    answer = client.request(requests.get_max_offset(topic, 0))
    return int(answer.field("offset") or -1) if answer.code == ResponseCode.SUCCESS else -1


@cases.case("acl-requests-without-acl", clauses=("BRK-31",),
            requirement="without aclEnable the ACL update requests fail with their own codes and "
                        "GET_BROKER_CLUSTER_ACL_INFO is not answered", level=Level.SHOULD)
def acl_requests_without_acl(ctx: BrokerContext) -> None:
    """BRK-31: a broker without aclEnable answers UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG and
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG with UPDATE_AND_CREATE_ACL_CONFIG_FAILED, DELETE_ACL_CONFIG_FAILED and
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, and leaves GET_BROKER_CLUSTER_ACL_INFO unanswered (4.9.8's handler
    fails and returns no response). SHOULD: a client sees a failure either way."""
    if ctx.setting_bool("aclEnable"):
        ctx.skip("the broker runs with aclEnable=true")
    client = ctx.broker(0)
    key = ctx.name("ak")
    requests_codes = (
        (RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
                                 {"accessKey": key, "secretKey": "rscf-secret-key"}),
         ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED),
        (RemotingCommand.request(RequestCode.DELETE_ACL_CONFIG, {"accessKey": key}),
         ResponseCode.DELETE_ACL_CONFIG_FAILED),
        (RemotingCommand.request(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": "10.255.255.1"}),
         ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED),
    )
    for request, code in requests_codes:
        ctx.expect_code(client.request(request), code, request.code_name())
    request = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
    client.send(request)
    answer = answer_within(client, request.opaque, 1.0)
    ctx.expect(answer is None, "no answer to GET_BROKER_CLUSTER_ACL_INFO within 1 s",
               "" if answer is None else f"code {answer.code} {answer.remark!r}")


@cases.case("resume-half-message-missing", clauses=("BRK-31",),
            requirement="RESUME_CHECK_HALF_MESSAGE of an id whose offset holds no message is SYSTEM_ERROR")
def resume_half_message_missing(ctx: BrokerContext) -> None:
    """BRK-31: an offset message id (the broker's address, a commit-log offset nothing reached) names no message:
    SYSTEM_ERROR "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."."""
    host, _, port = ctx.brokers[0].addr.rpartition(":")
    ip = "".join(f"{int(part):02X}" for part in host.split(".")) if host.count(".") == 3 else "7F000001"
    msg_id = f"{ip}{int(port):08X}{FAR_COMMIT_LOG_OFFSET:016X}"
    answer = ctx.broker(0).request(RemotingCommand.request(RequestCode.RESUME_CHECK_HALF_MESSAGE, {"msgId": msg_id}))
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, f"RESUME_CHECK_HALF_MESSAGE {msg_id}")
    ctx.expect_equal(answer.remark, "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC.",
                     "remark")


# ------------------------------------------------------------------------------------- missing header fields (BRK-32)
@cases.case("missing-header-fields", clauses=("BRK-32",),
            requirement="a request without a header field its handler needs is SYSTEM_ERROR and changes nothing")
def missing_header_fields(ctx: BrokerContext) -> None:
    """BRK-32: GET_TOPIC_STATS_INFO without topic, GET_EARLIEST_MSG_STORETIME without queueId, QUERY_CONSUME_QUEUE
    without topic, QUERY_MESSAGE without maxNum, VIEW_MESSAGE_BY_ID without offset and UPDATE_AND_CREATE_TOPIC of a
    valid topic without perm all answer SYSTEM_ERROR; the topic is not created."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    fresh = ctx.name("topic")
    ctx.target.created_topics.add(fresh)
    create_fields = dict(requests.create_topic(fresh, 1).ext_fields)
    create_fields.pop("perm")
    query_fields = dict(requests.query_message(topic, "k").ext_fields)
    query_fields.pop("maxNum")
    malformed = (
        ("GET_TOPIC_STATS_INFO without topic", RemotingCommand.request(RequestCode.GET_TOPIC_STATS_INFO, {})),
        ("GET_EARLIEST_MSG_STORETIME without queueId",
         RemotingCommand.request(RequestCode.GET_EARLIEST_MSG_STORETIME, {"topic": topic})),
        ("QUERY_CONSUME_QUEUE without topic", RemotingCommand.request(
            RequestCode.QUERY_CONSUME_QUEUE, {"queueId": 0, "index": 0, "count": 1})),
        ("QUERY_MESSAGE without maxNum", RemotingCommand.request(RequestCode.QUERY_MESSAGE, query_fields)),
        ("VIEW_MESSAGE_BY_ID without offset", RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {})),
        ("UPDATE_AND_CREATE_TOPIC without perm",
         RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create_fields)),
    )
    for what, request in malformed:
        ctx.expect_code(client.request(request), ResponseCode.SYSTEM_ERROR, what)
    ctx.expect(fresh not in topic_configs(ctx), f"{fresh} not created by the request without perm", "it was created")
