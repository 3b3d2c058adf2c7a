"""Broker conformance cases: the admin requests a test set-up uses (topics, subscription groups, configuration,
runtime information) and the answer to a request code the broker does not serve."""

from __future__ import annotations

from typing import Any

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import UNSERVED_REQUEST_CODE, queue_datas
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.model import CaseList, Level
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.route import loads_lenient
from rocketspec.spec.protocol import DEFAULT_PERM, PERM_READ, SYSTEM_TOPIC_PREFIX, ResponseCode

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
