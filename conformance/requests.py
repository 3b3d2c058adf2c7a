"""Requests the conformance suite sends, built field by field as RocketMQ 4.x clients write them.

One function per request kind returns a :class:`RemotingCommand`; the suite sends it with a :class:`WireClient`
and judges the answer itself. Field names are those of the 4.9.8 request headers (``SendMessageRequestHeaderV2``
uses the one-letter names ``a``..``m``). Bodies are encoded with the project's codecs (properties, batches, fastjson
text); nothing here decides an outcome.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from rocketspec.refimpl.message import BatchEntry, encode_batch, encode_properties, tags_code
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.route import loads_lenient
from rocketspec.spec import fastjson
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    DEFAULT_PERM,
    DEFAULT_TOPIC_QUEUE_NUMS,
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    Property,
    RequestCode,
)

SUITE_CLIENT_ID = "127.0.0.1@rocketspec-conformance"


def now_ms() -> int:
    return int(time.time() * 1000)


def message_properties(tags: str | None = None, keys: str | None = None, *, wait_store: bool = True,
                       extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The properties a producer sends: TAGS, KEYS, WAIT (true unless asked otherwise), then ``extra``."""
    props: dict[str, str] = {}
    if tags is not None:
        props[Property.TAGS] = tags
    if keys is not None:
        props[Property.KEYS] = keys
    props[Property.WAIT_STORE_MSG_OK] = "true" if wait_store else "false"
    props.update(extra or {})
    return props


def send_fields(group: str, topic: str, queue_id: int, properties: Mapping[str, str], *, sys_flag: int = 0,
                flag: int = 0, reconsume_times: int = 0, max_reconsume_times: int | None = None,
                batch: bool = False, born_ms: int | None = None, unit_mode: bool = False) -> dict[str, object]:
    """The fields of a SendMessageRequestHeader (v1 names)."""
    fields: dict[str, object] = {
        "producerGroup": group,
        "topic": topic,
        "defaultTopic": AUTO_CREATE_TOPIC_KEY,
        "defaultTopicQueueNums": DEFAULT_TOPIC_QUEUE_NUMS,
        "queueId": queue_id,
        "sysFlag": sys_flag,
        "bornTimestamp": now_ms() if born_ms is None else born_ms,
        "flag": flag,
        "properties": encode_properties(properties),
        "reconsumeTimes": reconsume_times,
        "unitMode": "true" if unit_mode else "false",
        "batch": "true" if batch else "false",
    }
    if max_reconsume_times is not None:
        fields["maxReconsumeTimes"] = max_reconsume_times
    return fields


_V2_NAMES = {
    "producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d", "queueId": "e",
    "sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i", "reconsumeTimes": "j", "unitMode": "k",
    "maxReconsumeTimes": "l", "batch": "m",
}


def send_v1(group: str, topic: str, body: bytes, queue_id: int = 0, properties: Mapping[str, str] | None = None,
            **options: Any) -> RemotingCommand:
    """SEND_MESSAGE with the long field names."""
    props = message_properties() if properties is None else properties
    return RemotingCommand.request(RequestCode.SEND_MESSAGE, send_fields(group, topic, queue_id, props, **options),
                                   body)


def send_v2(group: str, topic: str, body: bytes, queue_id: int = 0, properties: Mapping[str, str] | None = None,
            **options: Any) -> RemotingCommand:
    """SEND_MESSAGE_V2: the same header with one-letter field names, as the Java client sends by default."""
    props = message_properties() if properties is None else properties
    fields = send_fields(group, topic, queue_id, props, **options)
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {_V2_NAMES[k]: v for k, v in fields.items()}, body)


def send_batch(group: str, topic: str, messages: Sequence[tuple[bytes, Mapping[str, str]]], queue_id: int = 0,
               properties: Mapping[str, str] | None = None) -> RemotingCommand:
    """SEND_BATCH_MESSAGE: the v2 header with batch=true and the messages encoded as one body."""
    body = encode_batch([BatchEntry(body=b, flag=0, properties=dict(p)) for b, p in messages])
    props = message_properties() if properties is None else properties
    fields = send_fields(group, topic, queue_id, props, batch=True)
    return RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, {_V2_NAMES[k]: v for k, v in fields.items()},
                                   body)


def pull(group: str, topic: str, queue_id: int, offset: int, *, max_msgs: int = 32, subscription: str = "*",
         expression_type: str = "TAG", commit_offset: int = 0, commit: bool = False, suspend_ms: int = 0,
         with_subscription: bool = True, sys_flag: int | None = None, sub_version: int = 0) -> RemotingCommand:
    """PULL_MESSAGE; ``suspend_ms`` > 0 sets the suspend flag and suspendTimeoutMillis (a long poll)."""
    if sys_flag is None:
        sys_flag = (PULL_FLAG_COMMIT_OFFSET if commit else 0) | (PULL_FLAG_SUSPEND if suspend_ms > 0 else 0) | (
            PULL_FLAG_SUBSCRIPTION if with_subscription else 0)
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, {
        "consumerGroup": group,
        "topic": topic,
        "queueId": queue_id,
        "queueOffset": offset,
        "maxMsgNums": max_msgs,
        "sysFlag": sys_flag,
        "commitOffset": commit_offset,
        "suspendTimeoutMillis": suspend_ms,
        "subscription": subscription,
        "subVersion": sub_version,
        "expressionType": expression_type,
    })


def queue_fields(topic: str, queue_id: int) -> dict[str, object]:
    return {"topic": topic, "queueId": queue_id}


def get_max_offset(topic: str, queue_id: int) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_MAX_OFFSET, queue_fields(topic, queue_id))


def get_min_offset(topic: str, queue_id: int) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_MIN_OFFSET, queue_fields(topic, queue_id))


def search_offset(topic: str, queue_id: int, timestamp_ms: int) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                                   {**queue_fields(topic, queue_id), "timestamp": timestamp_ms})


def query_consumer_offset(group: str, topic: str, queue_id: int) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET,
                                   {"consumerGroup": group, **queue_fields(topic, queue_id)})


def update_consumer_offset(group: str, topic: str, queue_id: int, offset: int) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET,
                                   {"consumerGroup": group, **queue_fields(topic, queue_id), "commitOffset": offset})


def route(topic: str, *, version: int | None = None, accept_standard_json: bool | None = None) -> RemotingCommand:
    """GET_ROUTEINFO_BY_TOPIC (``version``: the request's version, 4.9.8's by default; ``accept_standard_json``:
    the acceptStandardJsonOnly field, left out unless given)."""
    fields: dict[str, object] = {"topic": topic}
    if accept_standard_json is not None:
        fields["acceptStandardJsonOnly"] = "true" if accept_standard_json else "false"
    if version is None:
        return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, fields)
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, fields, version=version)


def cluster_info() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)


def broker_config() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_BROKER_CONFIG)


def create_topic(topic: str, queues: int = 4, *, perm: int = DEFAULT_PERM, read_queues: int | None = None,
                 order: bool = False, sys_flag: int = 0) -> RemotingCommand:
    """UPDATE_AND_CREATE_TOPIC as mqadmin updateTopic sends it."""
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
        "topic": topic,
        "defaultTopic": AUTO_CREATE_TOPIC_KEY,
        "readQueueNums": queues if read_queues is None else read_queues,
        "writeQueueNums": queues,
        "perm": perm,
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": sys_flag,
        "order": "true" if order else "false",
    })


def delete_topic_in_broker(topic: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": topic})


def delete_topic_in_namesrv(topic: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": topic})


def create_group(group: str, *, retry_queues: int = 1, retry_max_times: int = 16, consume_enable: bool = True,
                 broadcast_enable: bool = True, notify_ids_changed: bool = True) -> RemotingCommand:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP with a SubscriptionGroupConfig body."""
    body = {
        "groupName": group, "consumeEnable": consume_enable, "consumeFromMinEnable": True,
        "consumeBroadcastEnable": broadcast_enable, "retryQueueNums": retry_queues,
        "retryMaxTimes": retry_max_times, "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1,
        "notifyConsumerIdsChangedEnable": notify_ids_changed,
    }
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {},
                                   json.dumps(body).encode("utf-8"))


def delete_group(group: str, *, remove_offset: bool = False) -> RemotingCommand:
    """DELETE_SUBSCRIPTIONGROUP; with ``remove_offset`` the broker drops the group's consumer offsets too."""
    fields: dict[str, object] = {"groupName": group}
    if remove_offset:
        fields["removeOffset"] = "true"
    return RemotingCommand.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, fields)


def subscription_json(topic: str, expression: str = "*", expression_type: str = "TAG",
                      sub_version: int | None = None) -> dict[str, object]:
    """A SubscriptionData as a heartbeat carries it; tags and their hash codes come from the expression."""
    tags = [] if expression.strip() in ("", "*") or expression_type != "TAG" else [
        t.strip() for t in expression.split("||") if t.strip()]
    return {
        "classFilterMode": False, "topic": topic, "subString": expression, "tagsSet": tags,
        "codeSet": [tags_code(t) for t in tags], "subVersion": now_ms() if sub_version is None else sub_version,
        "expressionType": expression_type,
    }


def heartbeat(client_id: str, *, consumer_groups: Mapping[str, Sequence[dict[str, object]]] | None = None,
              producer_groups: Sequence[str] = (), message_model: str = "CLUSTERING",
              consume_type: str = "CONSUME_PASSIVELY", unit_mode: bool = False) -> RemotingCommand:
    """HEART_BEAT with a HeartbeatData body: ``consumer_groups`` maps a group to its subscriptions."""
    body = {
        "clientID": client_id,
        "producerDataSet": [{"groupName": g} for g in producer_groups],
        "consumerDataSet": [
            {"groupName": g, "consumeType": consume_type, "messageModel": message_model,
             "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": list(subs), "unitMode": unit_mode}
            for g, subs in (consumer_groups or {}).items()
        ],
    }
    return RemotingCommand.request(RequestCode.HEART_BEAT, {}, json.dumps(body).encode("utf-8"))


def unregister_client(client_id: str, *, producer_group: str | None = None,
                      consumer_group: str | None = None) -> RemotingCommand:
    fields: dict[str, object] = {"clientID": client_id}
    if producer_group is not None:
        fields["producerGroup"] = producer_group
    if consumer_group is not None:
        fields["consumerGroup"] = consumer_group
    return RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, fields)


def consumer_list(group: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group})


def lock_batch(group: str, client_id: str, queues: Sequence[tuple[str, str, int]],
               code: int = RequestCode.LOCK_BATCH_MQ) -> RemotingCommand:
    """LOCK_BATCH_MQ (or UNLOCK_BATCH_MQ) for ``queues`` given as (topic, brokerName, queueId)."""
    body = {"consumerGroup": group, "clientId": client_id,
            "mqSet": [{"topic": t, "brokerName": b, "queueId": q} for t, b, q in queues]}
    return RemotingCommand.request(code, {}, json.dumps(body).encode("utf-8"))


def send_back(group: str, commit_log_offset: int, *, delay_level: int = 0, origin_msg_id: str | None = None,
              origin_topic: str | None = None, max_reconsume_times: int | None = 16) -> RemotingCommand:
    """CONSUMER_SEND_MSG_BACK as a 4.9.8 consumer sends it (``max_reconsume_times=None`` leaves the field out, as
    clients before 3.4.9 do: the broker then uses the group's retryMaxTimes)."""
    fields: dict[str, object] = {"group": group, "offset": commit_log_offset, "delayLevel": delay_level,
                                 "unitMode": "false"}
    if max_reconsume_times is not None:
        fields["maxReconsumeTimes"] = max_reconsume_times
    if origin_msg_id is not None:
        fields["originMsgId"] = origin_msg_id
    if origin_topic is not None:
        fields["originTopic"] = origin_topic
    return RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, fields)


def end_transaction(group: str, commit_log_offset: int, queue_offset: int, msg_id: str, transaction_id: str,
                    commit_or_rollback: int, *, from_check: bool = False) -> RemotingCommand:
    """END_TRANSACTION (sent oneway by producers)."""
    return RemotingCommand.request(RequestCode.END_TRANSACTION, {
        "producerGroup": group, "tranStateTableOffset": queue_offset, "commitLogOffset": commit_log_offset,
        "commitOrRollback": commit_or_rollback, "fromTransactionCheck": "true" if from_check else "false",
        "msgId": msg_id, "transactionId": transaction_id,
    })


def query_message(topic: str, key: str, *, max_num: int = 32, begin_ms: int = 0,
                  end_ms: int | None = None) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.QUERY_MESSAGE, {
        "topic": topic, "key": key, "maxNum": max_num, "beginTimestamp": begin_ms,
        "endTimestamp": now_ms() + 60_000 if end_ms is None else end_ms})


def view_message(commit_log_offset: int) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": commit_log_offset})


def json_body(command: RemotingCommand) -> Any:
    """The body of an answer read as fastjson writes it (unquoted integer keys allowed); None without a body."""
    if not command.body:
        return None
    return loads_lenient(command.body)


def properties_body(command: RemotingCommand) -> dict[str, str]:
    """A body of ``key=value`` lines (GET_BROKER_CONFIG, GET_NAMESRV_CONFIG)."""
    result: dict[str, str] = {}
    for line in (command.body or b"").decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            result[key.strip()] = value.strip()
    return result


# ---- name server registration, KV config, topic lists; broker admin reads (broker/namesrv, broker/admin) ----
def register_broker(cluster: str, broker_name: str, broker_addr: str, broker_id: int = 0, *,
                    topics: Mapping[str, Mapping[str, object]] | None = None, ha_addr: str | None = None,
                    data_version: int = 0, filter_servers: Sequence[str] = ()) -> RemotingCommand:
    """REGISTER_BROKER as a 4.9.8 broker sends it: a JSON RegisterBrokerBody (``topics`` maps a topic name to its
    TopicConfig fields, e.g. readQueueNums/writeQueueNums/perm; ``filter_servers`` its filterServerList) with its
    CRC32 in the header."""
    table = {name: {"topicName": name, "readQueueNums": 4, "writeQueueNums": 4, "perm": DEFAULT_PERM,
                    "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": False, **dict(config)}
             for name, config in (topics or {}).items()}
    body = json.dumps({"filterServerList": list(filter_servers), "topicConfigSerializeWrapper": {
        "topicConfigTable": table, "dataVersion": {"timestamp": data_version, "counter": data_version}}},
        separators=(",", ":")).encode("utf-8")
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, {
        "brokerName": broker_name, "brokerAddr": broker_addr, "clusterName": cluster,
        "haServerAddr": broker_addr if ha_addr is None else ha_addr, "brokerId": broker_id, "compressed": "false",
        "bodyCrc32": zlib.crc32(body) & 0x7FFFFFFF,
    }, body)


def unregister_broker(cluster: str, broker_name: str, broker_addr: str, broker_id: int = 0) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.UNREGISTER_BROKER, {
        "brokerName": broker_name, "brokerAddr": broker_addr, "clusterName": cluster, "brokerId": broker_id})


def put_kv_config(namespace: str, key: str, value: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.PUT_KV_CONFIG, {"namespace": namespace, "key": key, "value": value})


def get_kv_config(namespace: str, key: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_KV_CONFIG, {"namespace": namespace, "key": key})


def delete_kv_config(namespace: str, key: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.DELETE_KV_CONFIG, {"namespace": namespace, "key": key})


def all_topic_list() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)


def wipe_write_perm(broker_name: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": broker_name})


def add_write_perm(broker_name: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": broker_name})


def all_topic_config() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG)


def broker_runtime_info() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)


def all_subscription_groups() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)


def all_consumer_offsets() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ALL_CONSUMER_OFFSET)


def get_earliest_msg_storetime(topic: str, queue_id: int) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_EARLIEST_MSG_STORETIME, queue_fields(topic, queue_id))


def consumer_connection_list(group: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group})


def producer_connection_list(group: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": group})


def check_client_config(group: str, subscription: Mapping[str, object] | None,
                        client_id: str = SUITE_CLIENT_ID) -> RemotingCommand:
    """CHECK_CLIENT_CONFIG with a CheckClientRequestBody (clientId, group, subscriptionData: see
    :func:`subscription_json`)."""
    body: dict[str, object] = {"clientId": client_id, "group": group}
    if subscription is not None:
        body["subscriptionData"] = dict(subscription)
    return RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, {}, json.dumps(body).encode("utf-8"))


def update_broker_config(settings: Mapping[str, str]) -> RemotingCommand:
    """UPDATE_BROKER_CONFIG with a properties body (``key=value`` lines)."""
    body = "".join(f"{key}={value}\n" for key, value in settings.items()).encode("utf-8")
    return RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, {}, body)


# ---- name server lists, data versions and configuration (broker/namesrv) ----
def query_data_version(cluster: str, broker_name: str, broker_addr: str, broker_id: int,
                       body: bytes | None) -> RemotingCommand:
    """QUERY_DATA_VERSION with a DataVersion body (see :func:`data_version_body`)."""
    return RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, {
        "brokerName": broker_name, "brokerAddr": broker_addr, "clusterName": cluster, "brokerId": broker_id}, body)


def data_version_body(timestamp: int, counter: int) -> bytes:
    return json.dumps({"timestamp": timestamp, "counter": counter}, separators=(",", ":")).encode("utf-8")


def topics_by_cluster(cluster: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": cluster})


def topic_list_request(code: int) -> RemotingCommand:
    """A header-less topic-list request (GET_SYSTEM_TOPIC_LIST_FROM_NS, GET_UNIT_TOPIC_LIST, ...)."""
    return RemotingCommand.request(code)


def namesrv_config() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG)


def update_namesrv_config(settings: Mapping[str, str]) -> RemotingCommand:
    """UPDATE_NAMESRV_CONFIG with a properties body (``key=value`` lines)."""
    body = "".join(f"{key}={value}\n" for key, value in settings.items()).encode("utf-8")
    return RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, {}, body)


# ---- broker statistics and maintenance reads (broker/admin, broker/offsets, broker/clients) ----
def topic_stats(topic: str | None) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_TOPIC_STATS_INFO, {} if topic is None else {"topic": topic})


def query_consume_queue(topic: str, queue_id: int, index: int, count: int,
                        group: str | None = None) -> RemotingCommand:
    fields: dict[str, object] = {"topic": topic, "queueId": queue_id, "index": index, "count": count}
    if group is not None:
        fields["consumerGroup"] = group
    return RemotingCommand.request(RequestCode.QUERY_CONSUME_QUEUE, fields)


def view_broker_stats(stats_name: str, stats_key: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": stats_name,
                                                                        "statsKey": stats_key})


def send_reply(group: str, topic: str, body: bytes, queue_id: int, properties: Mapping[str, str]) -> RemotingCommand:
    """SEND_REPLY_MESSAGE_V2: a send header (one-letter names) as a requester's reply producer writes it."""
    fields = send_fields(group, topic, queue_id, properties)
    return RemotingCommand.request(RequestCode.SEND_REPLY_MESSAGE_V2, {_V2_NAMES[k]: v for k, v in fields.items()},
                                   body)


def all_producer_info() -> RemotingCommand:
    return RemotingCommand.request(RequestCode.GET_ALL_PRODUCER_INFO)


def consume_stats(group: str, topic: str | None = None) -> RemotingCommand:
    fields: dict[str, object] = {"consumerGroup": group}
    if topic is not None:
        fields["topic"] = topic
    return RemotingCommand.request(RequestCode.GET_CONSUME_STATS, fields)


def query_correction_offset(topic: str, compare_group: str, filter_groups: Sequence[str]) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.QUERY_CORRECTION_OFFSET, {
        "topic": topic, "compareGroup": compare_group, "filterGroups": ",".join(filter_groups)})


def fastjson_loads(data: bytes | str) -> Any:
    """A fastjson body whose map keys may be objects (``{{"topic":..,"queueId":0}:{...}}``, as a map keyed by
    MessageQueue is written) or bare numbers (``rocketspec.spec.fastjson`` reads it): an object key is read as its
    JSON text, sorted (``json.dumps(key, sort_keys=True)``), every key as a string."""
    return _string_keys(fastjson.loads(data, object_key=lambda key: json.dumps(key, sort_keys=True)))


def _string_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _string_keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_string_keys(item) for item in value]
    return value


def queue_keyed(table: Mapping[str, Any]) -> dict[tuple[str, str, int], Any]:
    """A map keyed by MessageQueue (read by :func:`fastjson_loads`) as {(topic, brokerName, queueId): value}."""
    found: dict[tuple[str, str, int], Any] = {}
    for key, item in table.items():
        try:
            mq = json.loads(key)
        except ValueError:
            continue
        if isinstance(mq, dict):
            found[(str(mq.get("topic")), str(mq.get("brokerName")), int(mq.get("queueId", -1)))] = item
    return found
