"""The broker_requests lockstep machine's wire side: the requests each spec action is sent as, and the answers and the
broker's state read back into the shapes the spec's ``BrokerState`` holds (tests/test_stateful_broker_requests.py).

Everything here reads the implementation only through what a client or an admin tool sees (the answers) or, for the
projections, through the broker's tables read-only; nothing here decides a rule.
"""

from __future__ import annotations

import json
import re
import zlib
from typing import Any

from rocketspec.refimpl.broker.broker import Broker
from rocketspec.refimpl.message import (
    BatchEntry,
    decode_stored_message,
    encode_batch,
    encode_properties,
    offset_message_id,
)
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.route import loads_lenient
from rocketspec.spec import broker_requests as spec
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    DEFAULT_QUERY_MAX_NUM,
    PROPERTY_MSG_REGION,
    PROPERTY_TRACE_SWITCH,
    SEND_MESSAGE_V2_FIELDS,
    SYSFLAG_COMPRESSED,
    UNIQUE_MSG_QUERY_FLAG,
    Property,
    RequestCode,
    ResponseCode,
)

LETTER = {long: letter for letter, long in SEND_MESSAGE_V2_FIELDS.items()}
#: The GET_BROKER_RUNTIME_INFO keys the spec decides (BRK-26).
RUNTIME_KEYS = tuple(k for k, _ in spec.runtime_values(0, 0, -1))
_MQ_KEY = re.compile(r'\{"brokerName":"[^"]*","queueId":(-?\d+),"topic":"((?:[^"\\]|\\.)*)"\}:')


def send_request(a: spec.Send | spec.SendBatch | spec.SendReply, code: int, born: int) -> RemotingCommand:
    """The SEND_MESSAGE / SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE / SEND_REPLY_MESSAGE(_V2) request of a send action, long
    field names for SEND_MESSAGE and SEND_REPLY_MESSAGE, letters otherwise."""
    if isinstance(a, spec.Send):
        props: dict[str, str] = {}
        for name, value in ((Property.TAGS, a.tags), (Property.KEYS, a.keys),
                            (Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, a.uniq_key),
                            (Property.WAIT_STORE_MSG_OK, "true" if a.wait else None)):
            if value is not None:
                props[name] = value
        body, sys_flag, batch = a.body, a.sys_flag, False
    elif isinstance(a, spec.SendBatch):
        props = {Property.WAIT_STORE_MSG_OK: "true"} if a.wait else {}
        if a.delay:
            props[Property.DELAY_TIME_LEVEL] = str(spec.BATCH_DELAY_LEVEL)
        entries = [BatchEntry(0, a.body + str(i).encode(), {Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: f"{a.uniq}{i}"}
                              if a.uniq is not None else {}) for i in range(a.count)]
        body, sys_flag, batch = encode_batch(entries), 0, True
    else:
        props = {Property.CORRELATION_ID: a.correlation}
        if a.reply_to is not None:
            props[Property.MESSAGE_REPLY_TO_CLIENT] = a.reply_to
        body, sys_flag, batch = a.body, 0, False
    default_topic = getattr(a, "default_topic", AUTO_CREATE_TOPIC_KEY)
    header: dict[str, Any] = {
        "producerGroup": "PG", "topic": (a.topic or spec.reply_topic(spec.CLUSTER)) if isinstance(a, spec.SendReply)
        else a.topic, "defaultTopic": default_topic,
        "defaultTopicQueueNums": getattr(a, "default_queues", spec.MODEL_REQUESTED_QUEUES), "queueId": a.queue_id,
        "sysFlag": sys_flag, "bornTimestamp": born, "flag": 0, "properties": encode_properties(props),
        "reconsumeTimes": 0, "unitMode": getattr(a, "unit_mode", False), "batch": batch,
    }
    if code not in (RequestCode.SEND_MESSAGE, RequestCode.SEND_REPLY_MESSAGE):
        header = {LETTER[k]: v for k, v in header.items()}
    return RemotingCommand.request(code, header, body)


def heartbeat_body(client_id: str, consumer: dict[str, Any] | None, producer: str | None) -> bytes:
    return json.dumps({"clientID": client_id, "consumerDataSet": [consumer] if consumer else [],
                       "producerDataSet": [{"groupName": producer}] if producer else []}).encode("utf-8")


def consumer_data(group: str, topics: frozenset[str], unit_mode: bool) -> dict[str, Any]:
    """A heartbeat's ConsumerData built by hand."""
    return {"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
            "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": unit_mode,
            "subscriptionDataSet": [{"classFilterMode": False, "topic": t, "subString": "*", "tagsSet": [],
                                     "codeSet": [], "subVersion": 0, "expressionType": "TAG"} for t in sorted(topics)]}


def admin_request(a: Any, msg_id_of: Any) -> RemotingCommand:
    """The request of an admin, registry, offset, query or maintenance action (``msg_id_of(offset)``: the id of a
    commit-log offset)."""
    if isinstance(a, spec.CreateTopic):
        return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
            "topic": a.topic, "defaultTopic": AUTO_CREATE_TOPIC_KEY, "readQueueNums": a.queues,
            "writeQueueNums": a.queues if a.write_queues is None else a.write_queues, "perm": a.perm,
            "topicFilterType": ("MULTI_TAG" if a.multi_tag else "SINGLE_TAG") if a.filter_ok else "NOPE",
            "topicSysFlag": a.sys_flag})
    if isinstance(a, spec.DeleteTopic):
        return RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": a.topic})
    simple = {spec.GetTopicConfig: RequestCode.GET_ALL_TOPIC_CONFIG,
              spec.GetSystemTopics: RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER,
              spec.GetGroups: RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
              spec.ProducerInfo: RequestCode.GET_ALL_PRODUCER_INFO,
              spec.GetBrokerConfig: RequestCode.GET_BROKER_CONFIG,
              spec.RuntimeInfo: RequestCode.GET_BROKER_RUNTIME_INFO}
    if type(a) in simple:
        return RemotingCommand.request(simple[type(a)], {})
    if isinstance(a, spec.GetTopicStats):
        return RemotingCommand.request(RequestCode.GET_TOPIC_STATS_INFO, {"topic": a.topic})
    if isinstance(a, spec.OffsetQuery):
        code = {"min": RequestCode.GET_MIN_OFFSET, "max": RequestCode.GET_MAX_OFFSET,
                "earliest": RequestCode.GET_EARLIEST_MSG_STORETIME,
                "search": RequestCode.SEARCH_OFFSET_BY_TIMESTAMP}[a.kind]
        return RemotingCommand.request(code, {"topic": a.topic, "queueId": a.queue_id, "timestamp": a.timestamp})
    if isinstance(a, spec.QueryConsumeQueue):
        return RemotingCommand.request(RequestCode.QUERY_CONSUME_QUEUE, {
            "topic": a.topic, "queueId": a.queue_id, "index": a.index, "count": a.count, "consumerGroup": a.group})
    if isinstance(a, spec.LockBatch | spec.UnlockBatch) and a.malformed:
        code = RequestCode.LOCK_BATCH_MQ if isinstance(a, spec.LockBatch) else RequestCode.UNLOCK_BATCH_MQ
        return RemotingCommand.request(code, {}, b"[1]")
    if isinstance(a, spec.LockBatch | spec.UnlockBatch):
        body = {"consumerGroup": a.group, "clientId": a.client_id,
                "mqSet": [{"topic": a.topic, "brokerName": "broker-a", "queueId": q} for q in a.queues]}
        code = RequestCode.LOCK_BATCH_MQ if isinstance(a, spec.LockBatch) else RequestCode.UNLOCK_BATCH_MQ
        return RemotingCommand.request(code, {}, json.dumps(body).encode("utf-8"))
    if isinstance(a, spec.ConsumedBy):
        return RemotingCommand.request(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": a.topic})
    if isinstance(a, spec.CreateGroup):
        body = {"groupName": a.group, "retryQueueNums": a.retry_queue_nums, "retryMaxTimes": a.retry_max_times,
                "notifyConsumerIdsChangedEnable": a.notify, "consumeEnable": a.consume_enable}
        return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {},
                                       json.dumps(body).encode("utf-8"))
    if isinstance(a, spec.DeleteGroup):
        return RemotingCommand.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": a.group})
    if isinstance(a, spec.ConsumerList):
        return RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": a.group})
    if isinstance(a, spec.ConsumerConnections):
        return RemotingCommand.request(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": a.group})
    if isinstance(a, spec.ProducerConnections):
        return RemotingCommand.request(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": a.group})
    if isinstance(a, spec.ConsumeStats):
        return RemotingCommand.request(RequestCode.GET_CONSUME_STATS, {"consumerGroup": a.group, "topic": a.topic})
    if isinstance(a, spec.CommitOffset):
        return RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": a.group, "topic": a.topic, "queueId": a.queue_id, "commitOffset": a.offset})
    if isinstance(a, spec.QueryOffset):
        return RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, {
            "consumerGroup": a.group, "topic": a.topic, "queueId": a.queue_id})
    if isinstance(a, spec.CorrectionOffset):
        return RemotingCommand.request(RequestCode.QUERY_CORRECTION_OFFSET, {
            "topic": a.topic, "filterGroups": ",".join(a.filter_groups) or None})
    if isinstance(a, spec.UpdateBrokerConfig):
        text = "".join(f"{k}={v}\n" for k, v in a.entries)
        return RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, {}, text.encode("utf-8") if text else None)
    if isinstance(a, spec.ViewStats):
        return RemotingCommand.request(RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": a.name, "statsKey": a.key})
    if isinstance(a, spec.QueryMessage):
        fields: dict[str, Any] = {"topic": a.topic, "key": a.key, "maxNum": a.max_num, "beginTimestamp": a.begin,
                                  "endTimestamp": a.end}
        if a.unique:
            fields[UNIQUE_MSG_QUERY_FLAG] = "true"
        return RemotingCommand.request(RequestCode.QUERY_MESSAGE, fields)
    if isinstance(a, spec.ViewMessage):
        return RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": a.offset})
    if isinstance(a, spec.ResumeHalf):
        msg_id = "not-a-message-id" if a.offset is None else msg_id_of(a.offset)
        return RemotingCommand.request(RequestCode.RESUME_CHECK_HALF_MESSAGE, {"msgId": msg_id})
    if isinstance(a, spec.Maintenance):
        return RemotingCommand.request(a.code, {})
    if isinstance(a, spec.Malformed):
        full = {RequestCode.GET_TOPIC_STATS_INFO: {"topic": a.topic},
                RequestCode.GET_EARLIEST_MSG_STORETIME: {"topic": a.topic, "queueId": 0},
                RequestCode.QUERY_CONSUME_QUEUE: {"topic": a.topic, "queueId": 0, "index": 0, "count": 1},
                RequestCode.UPDATE_AND_CREATE_TOPIC: {"topic": a.topic, "readQueueNums": 2, "writeQueueNums": 2,
                                                      "perm": 6, "topicFilterType": "SINGLE_TAG"},
                RequestCode.QUERY_MESSAGE: {"topic": a.topic, "key": "k1", "maxNum": 32, "beginTimestamp": 0,
                                            "endTimestamp": 1},
                RequestCode.VIEW_MESSAGE_BY_ID: {"offset": 0}}[a.code]
        return RemotingCommand.request(a.code, {k: v for k, v in full.items() if k != a.missing})
    raise TypeError(f"no request for {a!r}")


# ------------------------------------------------------------------------------------------------------ answers
def spec_answer(answer: spec.Answer | None) -> tuple[Any, ...] | None:
    """What the spec says the answer is, in the shape ``system_answer`` reads it."""
    if answer is None:
        return None
    return (answer.code, answer.remark, answer.queue_id, answer.queue_offset, answer.msg_id, answer.body,
            answer.fields)


def _mq_table(body: bytes | None, name: str) -> dict[tuple[str, int], Any]:
    """A fastjson map keyed by MessageQueue objects, by (topic, queue id)."""
    text = _MQ_KEY.sub(lambda m: json.dumps(f"{m.group(2)}@{m.group(1)}") + ":", (body or b"").decode("utf-8"))
    out = {}
    for key, value in json.loads(text)[name].items():
        topic, _, queue_id = key.rpartition("@")
        out[(topic, int(queue_id))] = value
    return out


def _topic_conf(raw: dict[str, Any]) -> spec.TopicConf:
    return spec.TopicConf(raw["readQueueNums"], raw["writeQueueNums"], raw["perm"],
                          raw["topicFilterType"] == "MULTI_TAG", raw["topicSysFlag"], raw["order"])


def _group_conf(raw: dict[str, Any]) -> spec.GroupConf:
    return spec.GroupConf(raw["retryQueueNums"], raw["retryMaxTimes"], raw["notifyConsumerIdsChangedEnable"],
                          raw["consumeEnable"])


def _version(raw: dict[str, Any]) -> tuple[int, int]:
    return raw["counter"], raw["timestamp"]


def read_message(data: bytes, decompress: bool) -> Any:
    message, _size = decode_stored_message(data, 0, broker_name="broker-a", decompress=decompress)
    return message


def system_answer(a: Any, r: RemotingCommand | None, ctx: Any) -> tuple[Any, ...] | None:
    """The answer ``r`` to action ``a`` in the spec's shape: (code, remark, queue id, queue offset, msgId, body,
    ext fields the spec models). ``ctx`` names connections by client address."""
    if r is None:
        return None
    code = ResponseCode(r.code)
    f = r.ext_fields
    body: Any = None
    fields: tuple[tuple[str, str], ...] = ()
    queue_id = queue_offset = -1
    msg_id = None
    if isinstance(a, spec.Send | spec.SendBatch | spec.SendReply):
        queue_id = int(f.get("queueId", -1))
        queue_offset = int(f.get("queueOffset", -1))
        msg_id = f.get("msgId")
        fields = tuple((k, f[k]) for k in (PROPERTY_MSG_REGION, PROPERTY_TRACE_SWITCH) if k in f)
    elif (r.body is not None and code is ResponseCode.SUCCESS) or isinstance(a, spec.QueryMessage | spec.GetBrokerConfig
                                                                              | spec.OffsetQuery | spec.QueryOffset):
        body, fields = _answer_body(a, r, ctx)
    return code, r.remark, queue_id, queue_offset, msg_id, body, fields


def _answer_body(a: Any, r: RemotingCommand, ctx: Any) -> tuple[Any, tuple[tuple[str, str], ...]]:
    f = r.ext_fields
    if isinstance(a, spec.OffsetQuery):
        return (int(f["timestamp"]) if a.kind == "earliest" else int(f["offset"])), ()
    if isinstance(a, spec.QueryOffset):
        return (int(f["offset"]) if "offset" in f else None), ()
    if isinstance(a, spec.GetBrokerConfig):
        lines = dict(line.split("=", 1) for line in (r.body or b"").decode("utf-8").splitlines() if "=" in line)
        body = spec.broker_config_body(tuple((k, lines.get(k)) for k in spec.MODELLED_CONFIG_KEYS))
        return body, (("version", f["version"]),) if "version" in f else ()
    if isinstance(a, spec.QueryMessage):
        fields = tuple((k, f[k]) for k in ("indexLastUpdatePhyoffset", "indexLastUpdateTimestamp") if k in f)
        if r.body is None:
            return None, fields
        found, pos = [], 0
        while pos < len(r.body):
            message, size = decode_stored_message(r.body, pos, broker_name="broker-a", decompress=True)
            found.append((message.commit_log_offset, message.body))
            pos += size
        return tuple(found), fields
    data = r.body or b""
    if isinstance(a, spec.ViewMessage):
        try:
            m = read_message(data, decompress=True)
        except ValueError:
            return spec.UNREADABLE, ()
        return (m.topic, m.queue_id, m.queue_offset, m.body, m.sys_flag, tuple(sorted(m.properties.items()))), ()
    if isinstance(a, spec.GetTopicStats):
        rows = _mq_table(data, "offsetTable")
        return tuple((q, v["minOffset"], v["maxOffset"], v["lastUpdateTimestamp"])
                     for (_t, q), v in sorted(rows.items())), ()
    if isinstance(a, spec.ConsumeStats):
        rows = _mq_table(data, "offsetTable")
        tps = float(json.loads(_MQ_KEY.sub('"k":', data.decode("utf-8")))["consumeTps"])
        return (tps, tuple((t, q, v["brokerOffset"], v["consumerOffset"], v["lastTimestamp"])
                           for (t, q), v in sorted(rows.items()))), ()
    decoded = loads_lenient(data) if data else None
    if isinstance(a, spec.GetTopicConfig):
        table = tuple(sorted((n, _topic_conf(raw)) for n, raw in decoded["topicConfigTable"].items()))
        return (table, _version(decoded["dataVersion"])), ()
    if isinstance(a, spec.GetGroups):
        table = tuple(sorted((n, _group_conf(raw)) for n, raw in decoded["subscriptionGroupTable"].items()))
        return (table, _version(decoded["dataVersion"])), ()
    if isinstance(a, spec.GetSystemTopics):
        return tuple(sorted(decoded["topicList"])), ()
    if isinstance(a, spec.QueryConsumeQueue):
        entries = tuple((e["physicOffset"], e["physicSize"], e["tagsCode"]) for e in decoded.get("queueData", ()))
        subscription: Any = None
        if "subscriptionData" in decoded:
            subscription = (decoded["subscriptionData"]["subString"],)
        elif "filterData" in decoded:
            subscription = decoded["filterData"]
        return (decoded["minQueueIndex"], decoded["maxQueueIndex"], entries, subscription), ()
    if isinstance(a, spec.LockBatch):
        return tuple(sorted(mq["queueId"] for mq in decoded["lockOKMQSet"])), ()
    if isinstance(a, spec.ConsumedBy):
        return tuple(sorted(decoded["groupList"])), ()
    if isinstance(a, spec.ConsumerList):
        return tuple(sorted(decoded["consumerIdList"])), ()
    if isinstance(a, spec.ConsumerConnections):
        ids = tuple(sorted(c["clientId"] for c in decoded["connectionSet"]))
        return (ids, tuple(sorted(decoded["subscriptionTable"]))), ()
    if isinstance(a, spec.ProducerConnections):
        return tuple(sorted(c["clientId"] for c in decoded["connectionSet"])), ()
    if isinstance(a, spec.ProducerInfo):
        groups = decoded["data"].items()
        return tuple(sorted((g, tuple(sorted(i["clientId"] for i in infos))) for g, infos in groups)), ()
    if isinstance(a, spec.CorrectionOffset):
        return tuple(sorted((int(q), o) for q, o in decoded["correctionOffsets"].items())), ()
    if isinstance(a, spec.RuntimeInfo):
        return tuple((k, decoded["table"].get(k)) for k in RUNTIME_KEYS), ()
    if isinstance(a, spec.ViewStats):
        return tuple((s["sum"], s["tps"], s["avgpt"]) for s in (
            decoded["statsMinute"], decoded["statsHour"], decoded["statsDay"])), ()
    if isinstance(a, spec.Maintenance) and a.code == RequestCode.GET_ALL_DELAY_OFFSET:
        return tuple(sorted(decoded["offsetTable"].items())), ()
    return ("unexpected body", data), ()


# -------------------------------------------------------------------------------------------------- projections
def stored_messages(broker: Broker) -> dict[tuple[str, int], list[tuple[Any, ...]]]:
    """Every consume queue's entries with the message each points at: (queue offset, commit-log offset, size, body as
    stored, sysFlag, flag, reconsume times, properties, store time, tags code)."""
    store = broker.store
    out: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
    for topic in store.topics():
        for queue_id in store.queue_ids(topic):
            rows = []
            for offset, phy, size, tags in store.queue_entries(topic, queue_id, 0, 1 << 20):
                data = store.look_message_bytes(phy)
                m = read_message(data, decompress=False) if data is not None else None
                rows.append((offset, phy, size, None if m is None else m.body, None if m is None else m.sys_flag,
                             None if m is None else m.flag, None if m is None else m.reconsume_times,
                             None if m is None else tuple(sorted(m.properties.items())),
                             None if m is None else m.store_timestamp, tags))
            if rows:
                out[(topic, queue_id)] = rows
    return out


def spec_stored_messages(state: spec.BrokerState) -> dict[tuple[str, int], list[tuple[Any, ...]]]:
    return {key: [(m.queue_offset, m.commit_log_offset, m.size, m.body, m.sys_flag, m.flag, m.reconsume_times,
                   m.properties, m.store_time, spec.tags_code(m.tags)) for m in queue]
            for key, queue in state.queues if queue}


def topic_table(broker: Broker) -> tuple[dict[str, spec.TopicConf], tuple[int, int]]:
    table = {name: spec.TopicConf(t.read_queue_nums, t.write_queue_nums, t.perm, t.multi_tag, t.topic_sys_flag,
                                  t.order) for name, t in broker.topics.table.items()}
    version = broker.topics.data_version
    return table, (version.counter, version.timestamp)


def group_table(broker: Broker) -> tuple[dict[str, spec.GroupConf], tuple[int, int]]:
    table = {name: spec.GroupConf(g.retry_queue_nums, g.retry_max_times, g.notify_consumer_ids_changed_enable,
                                  g.consume_enable) for name, g in broker.subscription_groups.table.items()}
    version = broker.subscription_groups.data_version
    return table, (version.counter, version.timestamp)


def clients(broker: Broker, connection_of: Any) -> tuple[Any, ...]:
    """(consumer groups: members and topics, producer groups: members, the client id -> connection table)."""
    consumers = {g: (tuple(sorted((connection_of(c.remote_addr), i.client_id) for c, i in info.channels.items())),
                     tuple(sorted(info.subscriptions))) for g, info in broker.consumers.table.items()}
    producers = {g: tuple(sorted((connection_of(c.remote_addr), i.client_id) for c, i in channels.items()))
                 for g, channels in broker.producers.table.items()}
    channels = {cid: connection_of(c.remote_addr) for cid, c in broker.producers._client_channels.items()}
    return consumers, producers, channels


def spec_clients(state: spec.BrokerState) -> tuple[Any, ...]:
    consumers = {g: (info.members, tuple(sorted(info.topics))) for g, info in state.consumers}
    return consumers, dict(state.producers), dict(state.client_channels)


def offsets(broker: Broker) -> dict[tuple[str, str, int], int]:
    out = {}
    for key, queues in broker.consumer_offsets.table.items():
        topic, _, group = key.partition("@")
        for queue_id, offset in queues.items():
            out[(group, topic, queue_id)] = offset
    return out


def settings(broker: Broker, base: spec.Settings) -> spec.Settings:
    c = broker.config
    shown = broker.runtime_admin.all_configs()
    reported = tuple(sorted((key, shown[key]) for key, _type, _default in spec.REPORTED_SETTINGS))
    return spec.Settings(c.max_message_size, c.auto_create_topic_enable, c.auto_create_subscription_group,
                         c.notify_consumer_ids_changed_enable, c.default_topic_queue_nums,
                         c.store_reply_message_enable, base.compress_over, base.unit_mode, c.broker_permission,
                         base.register_rtt, reported)


def stats_totals(broker: Broker) -> dict[tuple[str, str], tuple[int, int]]:
    return {key: (item.value, item.times) for key, item in broker.stats.items().items()}


def spec_stats_totals(state: spec.BrokerState) -> dict[tuple[str, str], tuple[int, int]]:
    return {key: (sum(c.value for c in counts), sum(c.times for c in counts)) for key, counts in state.stats}


def wire_body(body: bytes, sys_flag: int) -> bytes | None:
    """The body a producer sent inflated when its sysFlag says it is compressed (None: it does not inflate)."""
    if not sys_flag & SYSFLAG_COMPRESSED:
        return body
    try:
        return zlib.decompress(body)
    except zlib.error:
        return None


def msg_id(offset: int) -> str:
    return offset_message_id("127.0.0.1", spec.STORE_PORT, offset)


__all__ = ["DEFAULT_QUERY_MAX_NUM"]
