"""The broker's consumer, producer and offset admin requests (``AdminBrokerProcessor`` and ``Broker2Client`` of
4.9.8): what ``mqadmin consumerProgress``, ``consumerConnection``, ``producerConnection``, ``consumerStatus``,
``updateSubGroup``, ``deleteSubGroup``, ``resetOffsetByTime`` and ``cloneGroupOffset`` send to a broker.

- GET_CONSUME_STATS: per queue of each topic the group has offsets on (or the one asked for), the broker's max offset,
  the committed offset and the store time of the last consumed message (``ConsumeStats``).
- GET_CONSUMER_CONNECTION_LIST / GET_PRODUCER_CONNECTION_LIST: who is connected (``ConsumerConnection`` /
  ``ProducerConnection``).
- GET_CONSUMER_RUNNING_INFO (and CONSUME_MESSAGE_DIRECTLY): forwarded to the named client, whose answer is returned
  as it is (``callConsumer``).
- Subscription groups: create/update, list (``SubscriptionGroupWrapper``), delete (optionally with offsets).
- INVOKE_BROKER_TO_RESET_OFFSET: offsets by timestamp, sent to every client of the group with
  RESET_CONSUMER_CLIENT_OFFSET (oneway); the clients reset and commit (``Broker2Client.resetOffset``).
- CLONE_GROUP_OFFSET: copy a group's offsets to another group.
- GET_BROKER_CONSUME_STATS, GET_ALL_CONSUMER_OFFSET, QUERY_CONSUME_TIME_SPAN: the same offsets seen per broker.
"""

from __future__ import annotations

import datetime
import json
from enum import Enum
from typing import Any

import attrs

from rocketspec.refimpl.broker.admin_topics import SLAVE_REMARK, mq_key, null_offset_scan
from rocketspec.refimpl.broker.clients import ClientChannelInfo, subscription_json
from rocketspec.refimpl.broker.groups import SubscriptionGroupConfig
from rocketspec.refimpl.broker.services import BrokerServices
from rocketspec.refimpl.message import MessageIdDecodeError, java_message_id_offset
from rocketspec.refimpl.remoting import (
    JAVA_NPE_NULL_BODY_STRING,
    JAVA_NPE_NULL_KEY_GET,
    JAVA_NPE_NULL_KEY_PUT,
    JAVA_NPE_NULL_KEY_REMOVE,
    Channel,
    HeaderError,
    RemotingCommand,
    RemotingTimeoutError,
    java_npe,
)
from rocketspec.refimpl.route import RawJson, dumps_java
from rocketspec.refimpl.runtime import Future, when_all
from rocketspec.spec.protocol import (
    RPC_RESPONSE_FLAG,
    VERSION_V3_0_7_SNAPSHOT,
    VERSION_V3_1_8_SNAPSHOT,
    LanguageCode,
    RequestCode,
    ResponseCode,
    version_desc,
)

# Broker2Client.callClient: invokeSync(channel, request, 10000).
CALL_CLIENT_TIMEOUT_MS = 10_000


def human_time(ms: int) -> str:
    """``UtilAll.timeMillisToHumanString2``: ``yyyy-MM-dd#HH:mm:ss:SSS`` (UTC here; Java uses its default zone)."""
    stamp = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    return f"{stamp:%Y-%m-%d#%H:%M:%S}:{stamp.microsecond // 1000:03d}"


def raw_member(body: bytes | None, name: str) -> RawJson | None:
    """The text of a top-level object member of fastjson output, kept as is (its value may be a map keyed by
    ``MessageQueue`` objects, which no JSON parser reads)."""
    text = (body or b"").decode("utf-8", errors="replace")
    start = text.find(f'"{name}":')
    if start < 0:
        return None
    pos = start + len(name) + 3
    depth, in_string, escaped = 0, False, False
    for end in range(pos, len(text)):
        ch = text[end]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return RawJson(text[pos:end + 1])
    return None


def _name(value: Enum | str) -> str:
    """A Java enum as fastjson writes it: its name."""
    return value.name if isinstance(value, Enum) else str(value)


def _language(code: int) -> str:
    try:
        return LanguageCode(code).name
    except ValueError:
        return LanguageCode.OTHER.name


def connection_json(info: ClientChannelInfo) -> dict[str, Any]:
    """``Connection``: client id, address (as the broker sees it), language name and version ordinal."""
    return {"clientAddr": info.channel.remote_addr, "clientId": info.client_id,
            "language": _language(info.language), "version": info.version}


class ConsumerAdmin:
    """Consumer/producer/offset admin handlers of one broker; ``handlers()`` goes into its dispatch table."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker

    def handlers(self) -> dict[int, Any]:
        return {
            RequestCode.GET_CONSUME_STATS: self.get_consume_stats,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.get_consumer_connection_list,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.get_producer_connection_list,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.get_consumer_running_info,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self.consume_message_directly,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_and_create_subscription_group,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.get_all_subscription_group,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.delete_subscription_group,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset,
            RequestCode.CLONE_GROUP_OFFSET: self.clone_group_offset,
            RequestCode.GET_BROKER_CONSUME_STATS: self.get_broker_consume_stats,
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.get_all_consumer_offset,
            RequestCode.QUERY_CONSUME_TIME_SPAN: self.query_consume_time_span,
            RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: self.get_consumer_status,
        }

    # ----------------------------------------------------------------------------------------------- progress
    def _skip_unsubscribed(self, group: str, topic: str) -> bool:
        """A group online with subscriptions, none of them to ``topic``: its offsets there are left out."""
        info = self.broker.consumers.get(group)
        return info is not None and bool(info.subscriptions) and topic not in info.subscriptions

    def _offset_rows(self, group: str, topic: str, queues: int) -> dict[RawJson, dict[str, int]]:
        """``OffsetWrapper`` per queue: the max offset, the committed offset (negative as 0) and, when something was
        consumed, the store time of the last consumed message."""
        broker = self.broker
        rows: dict[RawJson, dict[str, int]] = {}
        for queue_id in range(queues):
            broker_offset = max(0, broker.store.max_offset(topic, queue_id))
            consumer_offset = max(0, broker.consumer_offsets.query(group, topic, queue_id))
            last = 0
            if consumer_offset > 0:
                stamp = broker.store.message_store_timestamp(topic, queue_id, consumer_offset - 1)
                last = stamp if stamp > 0 else 0
            rows[mq_key(topic, broker.name, queue_id)] = {
                "brokerOffset": broker_offset, "consumerOffset": consumer_offset, "lastTimestamp": last}
        return rows

    def get_consume_stats(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getConsumeStats``: topics = the one asked for, else every topic the group has offsets on; topics without
        config here, and topics an online group does not subscribe to, are skipped; a row per read queue
        (``_offset_rows``). ``consumeTps`` sums the group's pull rate on each topic (``tpsGroupGetNums``: messages
        pulled per second over the last minute)."""
        broker = self.broker
        group = request.field("consumerGroup")
        topic_asked = request.field("topic")
        if group is None:
            # 4.9.8 goes on with null: without a topic the offset table is scanned for null's topics; a topic with
            # config here asks the consumer table for null (NullPointerException); else nothing to report.
            if topic_asked and topic_asked.strip():
                scan = JAVA_NPE_NULL_KEY_GET if broker.topics.get(topic_asked) is not None else None
            else:
                scan = null_offset_scan(broker, "whichTopicByConsumer", 94)
            if scan is not None:
                return request.response(ResponseCode.SYSTEM_ERROR, remark=scan)
            return request.response(ResponseCode.SUCCESS, body=dumps_java({"consumeTps": 0.0, "offsetTable": {}}))
        topics = ({topic_asked} if topic_asked and topic_asked.strip()
                  else broker.consumer_offsets.topics_of_group(group))
        table: dict[RawJson, dict[str, int]] = {}
        tps = 0.0
        for topic in sorted(topics):
            config = broker.topics.get(topic)
            if config is None or self._skip_unsubscribed(group, topic):
                continue
            table.update(self._offset_rows(group, topic, config.read_queue_nums))
            tps += broker.stats.tps_group_get_nums(group, topic)
        return request.response(ResponseCode.SUCCESS, body=dumps_java({"consumeTps": tps, "offsetTable": table}))

    def get_broker_consume_stats(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``fetchAllConsumeStatsInBroker`` (mqadmin brokerConsumeStats): for every subscription group, a
        ``ConsumeStats`` per topic it has offsets on (rows per *write* queue; with ``isOrder`` order topics only),
        and the total lag (``ConsumeStatsList``)."""
        broker = self.broker
        only_order = request.bool_field("isOrder")
        stats_list: list[dict[str, Any]] = []
        total_diff = 0
        for group in broker.subscription_groups.table:
            per_topic = []
            for topic in sorted(broker.consumer_offsets.topics_of_group(group)):
                config = broker.topics.get(topic)
                if config is None or (only_order and not config.order) or self._skip_unsubscribed(group, topic):
                    continue
                rows = self._offset_rows(group, topic, config.write_queue_nums)
                total_diff += sum(row["brokerOffset"] - row["consumerOffset"] for row in rows.values())
                per_topic.append({"consumeTps": broker.stats.tps_group_get_nums(group, topic), "offsetTable": rows})
            stats_list.append({group: per_topic})
        body = {"brokerAddr": broker.addr, "consumeStatsList": stats_list, "totalDiff": total_diff}
        return request.response(ResponseCode.SUCCESS, body=dumps_java(body))

    def get_all_consumer_offset(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getAllConsumerOffset``: the offset table as ``ConsumerOffsetManager.encode`` writes it (bare queue-id
        keys)."""
        table = {key: dict(queues) for key, queues in self.broker.consumer_offsets.table.items()}
        return request.response(ResponseCode.SUCCESS, body=dumps_java({"offsetTable": table}, standard=False))

    def query_consume_time_span(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``queryConsumeTimeSpan``: per write queue the store times of the first and last message, of the last
        consumed one (the first when nothing was consumed) and how long the next one has waited
        (``QueryConsumeTimeSpanBody``; the ``*Str`` fields are ``timeMillisToHumanString2`` in UTC)."""
        broker = self.broker
        store = broker.store
        topic = request.field("topic")
        if topic is None:  # the topic config table's lookup of null
            return request.response(ResponseCode.SYSTEM_ERROR, remark=JAVA_NPE_NULL_KEY_GET)
        group = request.field("group", "null")  # a null group is "null" in the offset table's "topic@group" key
        config = broker.topics.get(topic)
        if config is None:
            return request.response(ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{topic}] not exist")
        now = broker.runtime.now_ms()
        spans = []
        for queue_id in range(config.write_queue_nums):
            min_time = store.earliest_message_time(topic, queue_id)
            high = store.max_offset(topic, queue_id)
            max_time = store.message_store_timestamp(topic, queue_id, high - 1)
            committed = broker.consumer_offsets.query(group, topic, queue_id)
            consume_time = store.message_store_timestamp(topic, queue_id, committed - 1) if committed > 0 \
                else min_time
            delay = now - store.message_store_timestamp(topic, queue_id, committed) if committed < high else 0
            spans.append({
                "consumeTimeStamp": consume_time, "consumeTimeStampStr": human_time(consume_time),
                "delayTime": delay, "maxTimeStamp": max_time, "maxTimeStampStr": human_time(max_time),
                "messageQueue": {"brokerName": broker.name, "queueId": queue_id, "topic": topic},
                "minTimeStamp": min_time, "minTimeStampStr": human_time(min_time),
            })
        return request.response(ResponseCode.SUCCESS, body=dumps_java({"consumeTimeSpanSet": spans}))

    def get_consumer_connection_list(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getConsumerConnectionList``: the group's connections, subscriptions and consume settings;
        CONSUMER_NOT_ONLINE when no client of the group is connected."""
        group = request.field("consumerGroup")
        if group is None:  # the consumer table's lookup of null
            return request.response(ResponseCode.SYSTEM_ERROR, remark=JAVA_NPE_NULL_KEY_GET)
        info = self.broker.consumers.get(group)
        if info is None:
            return request.response(ResponseCode.CONSUMER_NOT_ONLINE, remark=f"the consumer group[{group}] not online")
        body = {
            "connectionSet": [connection_json(c) for c in info.channels.values()],
            "consumeFromWhere": _name(info.consume_from_where),
            "consumeType": _name(info.consume_type),
            "messageModel": _name(info.message_model),
            "subscriptionTable": {topic: subscription_json(sub) for topic, sub in info.subscriptions.items()},
        }
        return request.response(ResponseCode.SUCCESS, body=dumps_java(body))

    def get_producer_connection_list(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getProducerConnectionList``: the group's connections (an empty set once they all left: the group stays
        known); SYSTEM_ERROR for a group never seen."""
        group = request.field("producerGroup")
        if group is None:  # the producer table's lookup of null
            return request.response(ResponseCode.SYSTEM_ERROR, remark=JAVA_NPE_NULL_KEY_GET)
        channels = self.broker.producers.table.get(group)
        if channels is None:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=f"the producer group[{group}] not exist")
        body = {"connectionSet": [connection_json(c) for c in channels.values()]}
        return request.response(ResponseCode.SUCCESS, body=dumps_java(body))

    # ------------------------------------------------------------------------------------- calls to a consumer
    def get_consumer_running_info(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        """``getConsumerRunningInfo`` → ``callConsumer``: forward to the client (its ``ConsumerRunningInfo``)."""
        return self._call_consumer(RequestCode.GET_CONSUMER_RUNNING_INFO, request, channel,
                                   request.field("consumerGroup"), request.field("clientId"), request.body)

    def consume_message_directly(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        """``consumeMessageDirectly``: the stored message named by ``msgId`` (an offset message id) goes to the client
        as the body, with this broker's name added to the header (``callConsumer``); a bad id or a message that is
        not there is SYSTEM_ERROR (4.9.8's NullPointerException on the missing buffer)."""
        group = request.field("consumerGroup")
        client_id = request.field("clientId")
        msg_id = request.field("msgId")
        try:
            offset = java_message_id_offset(msg_id)
        except MessageIdDecodeError as error:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=str(error))
        body = self.broker.store.look_message_bytes(offset)
        if body is None:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=java_npe(
                'Cannot invoke "org.apache.rocketmq.store.SelectMappedBufferResult.getSize()" because "<local4>" is '
                "null", "org.apache.rocketmq.broker.processor.AdminBrokerProcessor.consumeMessageDirectly("
                "AdminBrokerProcessor.java:1240)"))
        fields = dict(request.ext_fields, brokerName=self.broker.name)
        return self._call_consumer(RequestCode.CONSUME_MESSAGE_DIRECTLY, attrs.evolve(request, ext_fields=fields),
                                   channel, group, client_id, body)

    def _call_consumer(self, code: int, request: RemotingCommand, channel: Channel, group: str | None,
                       client_id: str | None, body: bytes | None) -> RemotingCommand | None:
        """``callConsumer``: the client must be online in the group and at least V3_1_8_SNAPSHOT; its answer (code,
        remark, fields, body) goes back to the caller; a timeout after 10 s is CONSUME_MSG_TIMEOUT. A missing group
        is the consumer table's lookup of null (NullPointerException); a missing client id matches no client."""
        if group is None:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=JAVA_NPE_NULL_KEY_GET)
        info = self.broker.consumers.get(group)
        client = info.find_channel(client_id) if info is not None and client_id is not None else None
        if client is None:
            return request.response(ResponseCode.SYSTEM_ERROR,
                                    remark=f"The Consumer <{group}> <{client_id or 'null'}> not online")
        if client.version < VERSION_V3_1_8_SNAPSHOT:
            return request.response(
                ResponseCode.SYSTEM_ERROR,
                remark=f"The Consumer <{client_id}> Version <{version_desc(client.version)}> too low to finish, "
                       "please upgrade it to V3_1_8_SNAPSHOT")
        forward = RemotingCommand.request(code, dict(request.ext_fields), body)
        future = client.channel.invoke(forward, CALL_CLIENT_TIMEOUT_MS)

        def answered(done: Future[RemotingCommand]) -> None:
            error = done.exception()
            if error is None:
                response = attrs.evolve(done.result(), opaque=request.opaque, flag=RPC_RESPONSE_FLAG)
            elif isinstance(error, RemotingTimeoutError):
                response = request.response(ResponseCode.CONSUME_MSG_TIMEOUT,
                                            remark=f"consumer <{group}> <{client_id}> Timeout: {error}")
            else:
                response = request.response(ResponseCode.SYSTEM_ERROR,
                                            remark=f"invoke consumer <{group}> <{client_id}> Exception: {error}")
            if not request.is_oneway:
                channel.send_response(response)

        future.add_done_callback(answered)
        return None

    def get_consumer_status(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        """``Broker2Client.getConsumeStatus`` (mqadmin getConsumerStatus): GET_CONSUMER_STATUS_FROM_CLIENT to every
        client of the group (or the one named by ``clientAddr``, a client id); the answers' offset tables by client
        id (``GetConsumerStatusBody``). Clients that fail or do not answer in 5 s are left out.
        An unknown group is 4.9.8's NullPointerException (``getConsumerGroupInfo(group).getChannelInfoTable()``), a
        missing one the table's lookup of null; the topic is only passed on."""
        topic = request.field("topic")
        group = request.field("group")
        origin = request.field("clientAddr")
        if group is None:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=JAVA_NPE_NULL_KEY_GET)
        info = self.broker.consumers.get(group)
        if info is None:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=java_npe(
                'Cannot invoke "org.apache.rocketmq.broker.client.ConsumerGroupInfo.getChannelInfoTable()" because '
                'the return value of "org.apache.rocketmq.broker.client.ConsumerManager.getConsumerGroupInfo(String)" '
                "is null",
                "org.apache.rocketmq.broker.client.net.Broker2Client.getConsumeStatus(Broker2Client.java:243)"))
        if not info.channels:
            return request.response(ResponseCode.SYSTEM_ERROR,
                                    remark=f"No Any Consumer online in the consumer group: [{group}]")
        clients = [c for c in info.channels.values() if not origin or not origin.strip() or c.client_id == origin]
        for client in clients:
            if client.version < VERSION_V3_0_7_SNAPSHOT:
                return request.response(
                    ResponseCode.SYSTEM_ERROR,
                    remark=f"the client does not support this feature. version={version_desc(client.version)}")
        table: dict[str, RawJson] = {}
        futures = []
        for client in clients[:1] if origin and origin.strip() else clients:
            future = client.channel.invoke(RemotingCommand.request(
                RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, {"topic": topic, "group": group}), 5_000)

            def answered(done: Future[RemotingCommand], client_id: str = client.client_id) -> None:
                if done.exception() is None and done.result().code == ResponseCode.SUCCESS:
                    offsets = raw_member(done.result().body, "messageQueueTable")
                    if offsets is not None:
                        table[client_id] = offsets

            future.add_done_callback(answered)
            futures.append(future)

        def reply() -> None:
            response = request.response(ResponseCode.SUCCESS,
                                        body=dumps_java({"consumerTable": table, "messageQueueTable": {}}))
            if not request.is_oneway:
                channel.send_response(response)

        when_all(futures, reply)
        return None

    # ------------------------------------------------------------------------------------- subscription groups
    def update_and_create_subscription_group(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``updateAndCreateSubscriptionGroup``: masters only; the body (a ``SubscriptionGroupConfig``) replaces the
        group's settings. As 4.9.8 answers: no (or an empty) body is ``new String(null)``'s NullPointerException;
        JSON ``null`` or an array decodes to no config (SUCCESS, nothing changes); a config without ``groupName`` is
        the table's ``put(null, ...)`` (an explicit NullPointerException, so always this text). A body that is not
        JSON at all answers our own remark (fastjson's parser message is not reproduced)."""
        if not self.broker.is_master():
            return request.response(ResponseCode.SYSTEM_ERROR, remark=SLAVE_REMARK)
        if not request.body:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=JAVA_NPE_NULL_BODY_STRING)
        try:
            data = json.loads(request.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
            raise HeaderError(f"bad SubscriptionGroupConfig body: {error}") from None
        if data is None or isinstance(data, list):
            return request.response(ResponseCode.SUCCESS)
        if not isinstance(data, dict):
            raise HeaderError("bad SubscriptionGroupConfig body: not a JSON object")
        if not isinstance(data.get("groupName"), str):
            return request.response(ResponseCode.SYSTEM_ERROR, remark=JAVA_NPE_NULL_KEY_PUT)
        try:
            config = SubscriptionGroupConfig.from_json(data)
        except (ValueError, TypeError) as error:
            raise HeaderError(f"bad SubscriptionGroupConfig body: {error}") from None
        self.broker.subscription_groups.update(config)
        return request.response(ResponseCode.SUCCESS)

    def get_all_subscription_group(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getAllSubscriptionGroup``: the ``SubscriptionGroupWrapper`` (subscriptionGroupTable, dataVersion)."""
        return request.response(ResponseCode.SUCCESS, body=self.broker.subscription_groups.wrapper_body())

    def delete_subscription_group(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``deleteSubscriptionGroup``: masters only; remove the settings and, with ``removeOffset``, the group's
        offsets. SUCCESS for an unknown group too."""
        if not self.broker.is_master():
            return request.response(ResponseCode.SYSTEM_ERROR, remark=SLAVE_REMARK)
        group = request.field("groupName")
        if group is None:  # the subscription table's remove(null)
            return request.response(ResponseCode.SYSTEM_ERROR, remark=JAVA_NPE_NULL_KEY_REMOVE)
        self.broker.subscription_groups.delete(group)
        if request.bool_field("removeOffset"):
            self.broker.consumer_offsets.remove_group(group)
        return request.response(ResponseCode.SUCCESS)

    # ------------------------------------------------------------------------------------------------ offsets
    def reset_offset(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``Broker2Client.resetOffset``: for each write queue the offset at ``timestamp`` (-1: the max offset);
        without ``isForce`` an offset is only moved back. SYSTEM_ERROR for a topic without config here or a queue
        the group never committed; CONSUMER_NOT_ONLINE when no client of the group is connected. Every client gets
        RESET_CONSUMER_CLIENT_OFFSET (oneway; a C++ caller's clients get the list form of the body)."""
        broker = self.broker
        topic = request.field("topic")
        if topic is None:  # the topic config table's lookup of null
            return request.response(ResponseCode.SYSTEM_ERROR, remark=JAVA_NPE_NULL_KEY_GET)
        group = request.field("group", "null")  # "topic@null" in the offset table: never committed
        # Java leaves a missing (or unparsable) primitive header field at its default (0, false).
        timestamp = request.decoded_int("timestamp", 64) or 0
        force = request.bool_field("isForce")
        config = broker.topics.get(topic)
        if config is None:
            return request.response(
                ResponseCode.SYSTEM_ERROR,
                remark=f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}")
        offsets: dict[int, int] = {}
        for queue_id in range(config.write_queue_nums):
            committed = broker.consumer_offsets.query(group, topic, queue_id)
            if committed == -1:
                return request.response(ResponseCode.SYSTEM_ERROR, remark=f"THe consumer group <{group}> not exist")
            if timestamp == -1:
                target = broker.store.max_offset(topic, queue_id)
            else:
                target = broker.store.offset_by_time(topic, queue_id, timestamp)
            target = max(0, target)
            offsets[queue_id] = target if force or target < committed else committed
        table = {mq_key(topic, broker.name, q): offset for q, offset in offsets.items()}
        if request.language == LanguageCode.CPP:
            entries = [{"brokerName": broker.name, "offset": offset, "queueId": q, "topic": topic}
                       for q, offset in offsets.items()]
            client_body = dumps_java({"offsetTable": entries})
        else:
            client_body = dumps_java({"offsetTable": table})
        info = broker.consumers.get(group)
        if info is None or not info.channels:
            return request.response(
                ResponseCode.CONSUMER_NOT_ONLINE,
                remark=f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic} "
                       f"Timestamp: {timestamp}")
        for client in list(info.channels.values()):
            if client.version < VERSION_V3_0_7_SNAPSHOT:
                return request.response(
                    ResponseCode.SYSTEM_ERROR,
                    remark=f"the client does not support this feature. version={version_desc(client.version)}")
            client.channel.invoke_oneway(RemotingCommand.request(
                RequestCode.RESET_CONSUMER_CLIENT_OFFSET, {"topic": topic, "group": group, "timestamp": timestamp,
                                                           "isForce": False}, client_body, oneway=True))
        return request.response(ResponseCode.SUCCESS, body=dumps_java({"offsetTable": table}))

    def clone_group_offset(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``cloneGroupOffset``: for the topic asked for (else every topic the source group has offsets on) that has
        config here and, unless ``offline``, that the online source group subscribes to: copy the offsets. Java
        copies under the *requested* topic name, so without a topic nothing is copied; kept."""
        broker = self.broker
        src = request.field("srcGroup")
        dest = request.field("destGroup")
        topic_asked = request.field("topic")
        if src is None or dest is None:
            # 4.9.8 goes on with null: without a topic the offset table is scanned for the (null) source's topics;
            # else the offsets of a null group: none to copy.
            scan = null_offset_scan(broker, "whichTopicByConsumer", 94) \
                if src is None and not (topic_asked and topic_asked.strip()) else None
            if scan is not None:
                return request.response(ResponseCode.SYSTEM_ERROR, remark=scan)
            return request.response(ResponseCode.SUCCESS)
        offline = request.bool_field("offline")
        topics = {topic_asked} if topic_asked and topic_asked.strip() else broker.consumer_offsets.topics_of_group(src)
        for topic in sorted(topics):
            if broker.topics.get(topic) is None:
                continue
            if not offline and self._skip_unsubscribed(src, topic):
                continue
            broker.consumer_offsets.clone(src, dest, topic_asked if topic_asked is not None else "null")
        return request.response(ResponseCode.SUCCESS)
