"""The broker's topic admin requests (``AdminBrokerProcessor`` of 4.9.8): what ``mqadmin updateTopic``,
``deleteTopic``, ``topicStatus``, ``topicList -c`` and ``DefaultMQAdminExt`` send to a broker.

- UPDATE_AND_CREATE_TOPIC replaces the topic's config (masters only, a valid non-system name) and registers it with
  the name servers *before* answering (``registerIncrementBrokerData`` waits for the answers), so the route is
  usable as soon as the admin tool hears SUCCESS.
- DELETE_TOPIC_IN_BROKER removes the config and the topic's consume queues (``cleanUnusedTopic``); the name server
  keeps the route until DELETE_TOPIC_IN_NAMESRV.
- GET_ALL_TOPIC_CONFIG, GET_TOPIC_STATS_INFO, QUERY_TOPIC_CONSUME_BY_WHO, GET_EARLIEST_MSG_STORETIME,
  GET_SYSTEM_TOPIC_LIST_FROM_BROKER and GET_ALL_DELAY_OFFSET read state; CLEAN_UNUSED_TOPIC drops the consume queues
  of topics without config.

Bodies are fastjson's (``route.dumps_java``): a map keyed by ``MessageQueue`` is written with the object as the key.
Missing header fields (or numbers that do not parse) are null, as 4.9.8's ``decodeCommandCustomHeader`` leaves them
(it logs its "custom field is null" check and goes on); the handlers go on with null as ``AdminBrokerProcessor``
does: the NullPointerException answers (SYSTEM_ERROR, ``RemotingHelper.exceptionSimpleDesc``) or SUCCESS it gives.
"""

from __future__ import annotations

from typing import Any

from rocketspec.refimpl.broker.clients import subscription_json
from rocketspec.refimpl.broker.services import BrokerServices
from rocketspec.refimpl.broker.topics import TopicConfig, validate_topic
from rocketspec.refimpl.remoting import (
    JAVA_NPE,
    JAVA_NPE_NULL_KEY_GET,
    Channel,
    RemotingCommand,
    java_npe,
    java_null_unboxed,
)
from rocketspec.refimpl.route import RawJson, dumps_java
from rocketspec.refimpl.runtime import when_all
from rocketspec.spec.protocol import (
    PERM_READ,
    PERM_WRITE,
    TOPIC_FILTER_MULTI_TAG,
    TOPIC_FILTER_SINGLE_TAG,
    RequestCode,
    ResponseCode,
)

SLAVE_REMARK = ("Can't modify topic or subscription group from slave broker, "
                "please execute it from master broker.")
_FILTER_TYPES = (TOPIC_FILTER_SINGLE_TAG, TOPIC_FILTER_MULTI_TAG)
_PROCESSOR = "org.apache.rocketmq.broker.processor.AdminBrokerProcessor"
# Where updateAndCreateTopic unboxes each number of its header (AdminBrokerProcessor.java line).
_CREATE_UNBOXING = (("readQueueNums", "getReadQueueNums", 277), ("writeQueueNums", "getWriteQueueNums", 278),
                    ("perm", "getPerm", 280))


def mq_key(topic: str, broker_name: str, queue_id: int) -> RawJson:
    """A ``MessageQueue`` as fastjson writes it when it is a map key."""
    return RawJson(dumps_java({"brokerName": broker_name, "queueId": queue_id, "topic": topic}).decode("utf-8"))


def refuse_on_slave(broker: BrokerServices, request: RemotingCommand) -> RemotingCommand | None:
    """``validateSlave``: a slave refuses topic and subscription-group changes (SYSTEM_ERROR)."""
    if broker.is_master():
        return None
    return request.response(ResponseCode.SYSTEM_ERROR, remark=SLAVE_REMARK)


def check_topic_name(broker: BrokerServices, request: RemotingCommand, topic: str | None) -> RemotingCommand | None:
    """``TopicValidator.validateTopic`` then ``isSystemTopic``: the SYSTEM_ERROR answer, or None when allowed."""
    remark = validate_topic(topic)
    if remark is not None:
        return request.response(ResponseCode.SYSTEM_ERROR, remark=remark)
    assert topic is not None
    if broker.topics.is_system_topic(topic):
        return request.response(ResponseCode.SYSTEM_ERROR, remark=f"The topic[{topic}] is conflict with system topic.")
    return None


def null_offset_scan(broker: BrokerServices, method: str, line: int) -> str | None:
    """``ConsumerOffsetManager.whichTopicByConsumer(null)`` / ``whichGroupByTopic(null)``: the remark of the
    NullPointerException the scan throws (``group.equals``/``topic.equals`` on null) once a key of the offset table
    splits into a topic and a group; None when none does (the scan finds nothing)."""
    for key in broker.consumer_offsets.table:
        parts = key.split("@")
        while parts and not parts[-1]:  # String.split drops trailing empty strings
            parts.pop()
        if len(parts) == 2:
            return java_npe('Cannot invoke "String.equals(Object)" because "<parameter1>" is null',
                            f"org.apache.rocketmq.broker.offset.ConsumerOffsetManager.{method}("
                            f"ConsumerOffsetManager.java:{line})")
    return None


def master_and_topic(broker: BrokerServices, request: RemotingCommand) -> tuple[str, RemotingCommand | None]:
    """What updateAndCreateTopic and deleteTopic check first, in 4.9.8's order: a slave refuses (SYSTEM_ERROR), then
    the topic name must be valid and not a system topic. The topic, and the refusal if any."""
    refused = refuse_on_slave(broker, request)
    if refused is not None:
        return "", refused
    topic = request.field("topic")
    refused = check_topic_name(broker, request, topic)
    return topic or "", refused


class TopicAdmin:
    """Topic admin handlers of one broker; ``handlers()`` goes into its dispatch table."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker

    def handlers(self) -> dict[int, Any]:
        return {
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.update_and_create_topic,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.delete_topic,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.get_all_topic_config,
            RequestCode.GET_TOPIC_STATS_INFO: self.get_topic_stats_info,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.query_topic_consume_by_who,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.get_earliest_msg_storetime,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: self.get_system_topic_list,
            RequestCode.CLEAN_UNUSED_TOPIC: self.clean_unused_topic,
            RequestCode.GET_ALL_DELAY_OFFSET: self.get_all_delay_offset,
            RequestCode.QUERY_CONSUME_QUEUE: self.query_consume_queue,
        }

    # ------------------------------------------------------------------------------------------------- changes
    def update_and_create_topic(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        """``updateAndCreateTopic``: a new ``TopicConfig`` replaces the old one (its order flag false, as Java's
        constructor leaves it), then ``registerIncrementBrokerData``: REGISTER_BROKER with this topic only, and the
        SUCCESS answer once every name server answered (or the registration timed out)."""
        broker = self.broker
        filter_type = request.field("topicFilterType")
        if filter_type not in _FILTER_TYPES:
            # CreateTopicRequestHeader.checkFields (TopicFilterType.valueOf), thrown out of the decoder.
            return request.response(
                ResponseCode.SYSTEM_ERROR,
                remark="org.apache.rocketmq.remoting.exception.RemotingCommandException: topicFilterType = "
                       f"[{'null' if filter_type is None else filter_type}] value invalid, "
                       "org.apache.rocketmq.common.protocol.header.CreateTopicRequestHeader.checkFields("
                       "CreateTopicRequestHeader.java:50)")
        topic, refused = master_and_topic(broker, request)
        if refused is not None:
            return refused
        numbers: dict[str, int] = {}
        for name, getter, line in _CREATE_UNBOXING:
            number = request.decoded_int(name)
            if number is None:
                return request.response(ResponseCode.SYSTEM_ERROR, remark=java_null_unboxed(
                    "CreateTopicRequestHeader", getter, "Integer.intValue",
                    f"{_PROCESSOR}.updateAndCreateTopic(AdminBrokerProcessor.java:{line})"))
            numbers[name] = number
        read_queue_nums, write_queue_nums, perm = numbers["readQueueNums"], numbers["writeQueueNums"], numbers["perm"]
        config = TopicConfig(topic, read_queue_nums=read_queue_nums, write_queue_nums=write_queue_nums, perm=perm,
                             topic_filter_type=filter_type,
                             topic_sys_flag=request.decoded_int("topicSysFlag") or 0)
        broker.topics.update(config)
        futures = broker.register_to_namesrv(wrapper=self._increment_wrapper(config))
        # Only the code of createResponseCommand's answer is set: its remark stays.
        response = request.response(ResponseCode.SUCCESS, remark="not set any response code")
        if not futures:
            return response
        when_all(futures, lambda: None if request.is_oneway else channel.send_response(response))
        return None

    def _increment_wrapper(self, config: TopicConfig) -> dict[str, Any]:
        """``registerIncrementBrokerData``'s body: this topic only (with the broker's permission when that lacks read
        or write) and the current data version."""
        permission = self.broker.config.broker_permission
        if permission & (PERM_READ | PERM_WRITE) != PERM_READ | PERM_WRITE:
            config = TopicConfig(config.topic_name, config.read_queue_nums, config.write_queue_nums, permission,
                                 config.topic_filter_type, config.topic_sys_flag, config.order)
        return {"topicConfigTable": {config.topic_name: config.to_json()},
                "dataVersion": self.broker.topics.data_version.to_json()}

    def delete_topic(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``deleteTopic``: masters only, a valid non-system name; remove the config, then every consume queue of a
        topic without config (``cleanUnusedTopic``). No registration: the name server keeps the route until it is
        told (DELETE_TOPIC_IN_NAMESRV)."""
        broker = self.broker
        topic, refused = master_and_topic(broker, request)
        if refused is not None:
            return refused
        broker.topics.delete(topic)
        broker.store.clean_unused_topics(set(broker.topics.table))
        return request.response(ResponseCode.SUCCESS)

    # ------------------------------------------------------------------------------------------------- queries
    def get_all_topic_config(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getAllTopicConfig``: the ``TopicConfigSerializeWrapper`` (topicConfigTable and dataVersion)."""
        return request.response(ResponseCode.SUCCESS, body=dumps_java(self.broker.topics.wrapper()))

    def get_topic_stats_info(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getTopicStatsInfo``: per write queue min and max offset (negative as 0) and the store time of the last
        message (0 for an empty queue); TOPIC_NOT_EXIST for a topic without config here."""
        broker = self.broker
        topic = request.field("topic")
        if topic is None:  # the topic config table's lookup of null (a warm JVM's bare NullPointerException)
            return request.response(ResponseCode.SYSTEM_ERROR, remark=JAVA_NPE)
        config = broker.topics.get(topic)
        if config is None:
            return request.response(ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{topic}] not exist")
        table: dict[RawJson, dict[str, int]] = {}
        for queue_id in range(config.write_queue_nums):
            low = max(0, broker.store.min_offset(topic, queue_id))
            high = max(0, broker.store.max_offset(topic, queue_id))
            stamp = broker.store.message_store_timestamp(topic, queue_id, high - 1) if high > 0 else 0
            table[mq_key(topic, broker.name, queue_id)] = {
                "lastUpdateTimestamp": stamp, "maxOffset": high, "minOffset": low}
        return request.response(ResponseCode.SUCCESS, body=dumps_java({"offsetTable": table}))

    def query_topic_consume_by_who(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``queryTopicConsumeByWho``: online groups subscribed to the topic plus groups with offsets on it
        (``GroupList``)."""
        broker = self.broker
        topic = request.field("topic")
        if topic is None:
            # 4.9.8 goes on with null: each online group's subscription table is asked for it (containsKey(null)),
            # then the offset table scanned; with neither, no group.
            if any(True for _ in broker.consumers.groups()):
                return request.response(ResponseCode.SYSTEM_ERROR, remark=JAVA_NPE_NULL_KEY_GET)
            scan = null_offset_scan(broker, "whichGroupByTopic", 112)
            if scan is not None:
                return request.response(ResponseCode.SYSTEM_ERROR, remark=scan)
            return request.response(ResponseCode.SUCCESS, body=dumps_java({"groupList": []}))
        groups = {info.group for info in broker.consumers.groups() if topic in info.subscriptions}
        groups |= broker.consumer_offsets.groups_of_topic(topic)
        return request.response(ResponseCode.SUCCESS, body=dumps_java({"groupList": sorted(groups)}))

    def get_earliest_msg_storetime(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getEarliestMsgStoretime``: the store time of the queue's first message in the ``timestamp`` header field
        (-1 when the queue is empty or unknown)."""
        topic = request.field("topic")
        queue_id = request.decoded_int("queueId")
        if queue_id is None:  # unboxed before the store is asked
            return request.response(ResponseCode.SYSTEM_ERROR, remark=java_null_unboxed(
                "GetEarliestMsgStoretimeRequestHeader", "getQueueId", "Integer.intValue",
                f"{_PROCESSOR}.getEarliestMsgStoretime(AdminBrokerProcessor.java:633)"))
        if topic is None:  # the store's consume-queue table lookup of null
            return request.response(ResponseCode.SYSTEM_ERROR, remark=JAVA_NPE_NULL_KEY_GET)
        return request.response(ResponseCode.SUCCESS,
                                {"timestamp": self.broker.store.earliest_message_time(topic, queue_id)})

    def get_system_topic_list(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getSystemTopicListFromBroker``: ``TopicValidator.getSystemTopicSet()`` (the built-in system topics and
        those this broker added: its cluster, its name, the reply topic) as a ``TopicList``."""
        return request.response(ResponseCode.SUCCESS,
                                body=dumps_java({"topicList": sorted(self.broker.topics.system_topics)}))

    def clean_unused_topic(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``cleanUnusedTopic`` (mqadmin cleanUnusedTopic): drop the consume queues of topics without config."""
        self.broker.store.clean_unused_topics(set(self.broker.topics.table))
        return request.response(ResponseCode.SUCCESS)

    def get_all_delay_offset(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getAllDelayOffset``: the schedule service's delivered offset per delay level (bare level keys, as
        ``ScheduleMessageService.encode`` writes them)."""
        table = dict(sorted(self.broker.schedule.offset_table.items()))
        return request.response(ResponseCode.SUCCESS, body=dumps_java({"offsetTable": table}, standard=False))

    def query_consume_queue(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``queryConsumeQueue`` (mqadmin queryCq): up to ``count`` consume-queue entries from ``index``, the queue's
        min and max index, and with ``consumerGroup`` the group's subscription (or "group@topic is not online!").
        An unknown queue is SYSTEM_ERROR; an index outside the queue is SUCCESS with a remark and no body."""
        broker = self.broker
        topic = request.field("topic")
        if topic is None:  # the store's consume-queue table lookup of null
            return request.response(ResponseCode.SYSTEM_ERROR, remark=JAVA_NPE_NULL_KEY_GET)
        # QueryConsumeQueueRequestHeader's numbers are primitives: missing or unparsable, they stay 0.
        queue_id = request.decoded_int("queueId") or 0
        index = request.decoded_int("index", 64) or 0
        count = request.decoded_int("count") or 0
        group = request.field("consumerGroup")
        if queue_id not in broker.store.queue_ids(topic):
            return request.response(ResponseCode.SYSTEM_ERROR, remark=f"{queue_id}@{topic} is not exist!")
        low, high = broker.store.min_offset(topic, queue_id), broker.store.max_offset(topic, queue_id)
        body: dict[str, Any] = {"maxQueueIndex": high, "minQueueIndex": low}
        if group is not None:
            sub = broker.consumers.find_subscription(group, topic)
            if sub is None:
                body["filterData"] = f"{group}@{topic} is not online!"
            else:
                body["subscriptionData"] = subscription_json(sub)
                body["filterData"] = "null"  # no ConsumerFilterData for tag subscriptions
        if not low <= index < high:
            return request.response(ResponseCode.SUCCESS, remark=f"Index {index} of {queue_id}@{topic} is not exist!")
        body["queueData"] = [{"eval": False, "physicOffset": phy, "physicSize": size, "tagsCode": tags}
                             for _offset, phy, size, tags in broker.store.queue_entries(topic, queue_id, index, count)]
        return request.response(ResponseCode.SUCCESS, body=dumps_java(body))
