"""PULL_MESSAGE and long polling (``PullMessageProcessor``, ``PullRequestHoldService``, ``ManyPullRequest``,
``NotifyMessageArrivingListener`` of 4.9.8).

Checks, in order: broker readable (NO_PERMISSION), group known or auto-created (SUBSCRIPTION_GROUP_NOT_EXIST), group
may consume (NO_PERMISSION), topic exists (TOPIC_NOT_EXIST) and is readable (NO_PERMISSION), queue id within the read
queues (SYSTEM_ERROR); then the subscription: from the request when it has the subscription bit (parse error →
SUBSCRIPTION_PARSE_FAILED), else from the group's registered consumers (none → SUBSCRIPTION_NOT_EXIST, broadcasting
not allowed → NO_PERMISSION, topic not subscribed → SUBSCRIPTION_NOT_EXIST, older than the request's subVersion →
SUBSCRIPTION_NOT_LATEST; a non-tag one without the group's filter data → FILTER_DATA_NOT_EXIST, older than the
request → FILTER_DATA_NOT_LATEST); non-tag expressions need enablePropertyFilter (else SYSTEM_ERROR) and are matched
against each stored message's properties (``refimpl.broker.filter``). The store's status becomes the
response code (REFERENCE §C). PULL_NOT_FOUND with the suspend bit is held: every 5 s (1 s with short polling) and
whenever a matching message arrives the held request is run again without suspension and answered, or when its time
is up. A pull with the commit bit also commits the consumer's offset on a master.
"""

from __future__ import annotations

import json

import attrs

from rocketspec.refimpl.broker.clients import SubscriptionData, is_tag_type
from rocketspec.refimpl.broker.filter import FilterData, commit_log_filter, unsupported_remark
from rocketspec.refimpl.broker.services import BrokerServices
from rocketspec.refimpl.events import PullResponseEvent
from rocketspec.refimpl.remoting import Channel, RemotingCommand
from rocketspec.refimpl.runtime import Timer
from rocketspec.refimpl.store import MessageToStore
from rocketspec.spec.protocol import (
    LONG_POLLING_CHECK_INTERVAL_MS,
    MASTER_ID,
    OFFSET_MOVED_EVENT_TOPIC,
    PERM_READ,
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    GetMessageStatus,
    MessageModel,
    Property,
    ResponseCode,
    suggest_todo,
)


@attrs.frozen
class PullMessageHeader:
    """``PullMessageRequestHeader``."""

    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    sys_flag: int
    commit_offset: int
    suspend_timeout_millis: int
    sub_version: int
    subscription: str | None = None
    expression_type: str | None = None

    @classmethod
    def parse(cls, request: RemotingCommand) -> PullMessageHeader:
        return cls(
            consumer_group=request.require("consumerGroup"),
            topic=request.require("topic"),
            queue_id=request.require_int("queueId"),
            queue_offset=request.require_int("queueOffset"),
            max_msg_nums=request.require_int("maxMsgNums"),
            sys_flag=request.require_int("sysFlag"),
            commit_offset=request.require_int("commitOffset"),
            suspend_timeout_millis=request.require_int("suspendTimeoutMillis"),
            sub_version=request.require_int("subVersion"),
            subscription=request.field("subscription"),
            expression_type=request.field("expressionType"),
        )


# GetMessageStatus → response code (PullMessageProcessor's switch); the two "no queue data" statuses depend on the
# requested offset and are decided in code.
_STATUS_CODES: dict[GetMessageStatus, ResponseCode] = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}


@attrs.define(eq=False)
class HeldPull:
    """``PullRequest``: a suspended pull waiting for messages."""

    request: RemotingCommand
    channel: Channel
    topic: str
    queue_id: int
    timeout_ms: int
    suspend_ts: int
    offset: int
    subscription: SubscriptionData


class PullMessageProcessor:
    """Answers PULL_MESSAGE; ``hold`` keeps the suspended ones."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        self.hold = PullRequestHoldService(broker, self)

    def _emit(self, header: PullMessageHeader, response: RemotingCommand, status: str, count: int = 0) -> None:
        broker = self.broker
        fields = response.ext_fields

        def number(name: str) -> int | None:
            value = fields.get(name)
            return int(value) if value is not None else None

        broker.events.emit(PullResponseEvent(
            node=broker.name,
            group=header.consumer_group,
            topic=header.topic,
            broker=broker.name,
            queue_id=header.queue_id,
            offset=header.queue_offset,
            code=response.code,
            status=status,
            next_offset=number("nextBeginOffset"),
            min_offset=number("minOffset"),
            max_offset=number("maxOffset"),
            count=count,
        ))

    def _error(self, header: PullMessageHeader, request: RemotingCommand, code: int, remark: str) -> RemotingCommand:
        response = request.response(code, remark=remark)
        self._emit(header, response, ResponseCode(code).name)
        return response

    def process(self, request: RemotingCommand, channel: Channel, allow_suspend: bool = True
                ) -> RemotingCommand | None:
        """``processRequest``: the response, or None when the request is held for long polling."""
        broker = self.broker
        header = PullMessageHeader.parse(request)
        ip = broker.config.host
        if not broker.config.broker_permission & PERM_READ:
            return self._error(header, request, ResponseCode.NO_PERMISSION,
                               f"the broker[{ip}] pulling message is forbidden")
        group_config = broker.subscription_groups.find_or_create(header.consumer_group)
        if group_config is None:
            return self._error(header, request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                               f"subscription group [{header.consumer_group}] does not exist, {suggest_todo()}")
        if not group_config.consume_enable:
            return self._error(header, request, ResponseCode.NO_PERMISSION,
                               f"subscription group no permission, {header.consumer_group}")
        has_suspend = bool(header.sys_flag & PULL_FLAG_SUSPEND)
        has_commit = bool(header.sys_flag & PULL_FLAG_COMMIT_OFFSET)
        has_subscription = bool(header.sys_flag & PULL_FLAG_SUBSCRIPTION)
        suspend_timeout = header.suspend_timeout_millis if has_suspend else 0
        topic_config = broker.topics.get(header.topic)
        if topic_config is None:
            return self._error(header, request, ResponseCode.TOPIC_NOT_EXIST,
                               f"topic[{header.topic}] not exist, apply first please! {suggest_todo()}")
        if not topic_config.perm & PERM_READ:
            return self._error(header, request, ResponseCode.NO_PERMISSION,
                               f"the topic[{header.topic}] pulling message is forbidden")
        if header.queue_id < 0 or header.queue_id >= topic_config.read_queue_nums:
            return self._error(header, request, ResponseCode.SYSTEM_ERROR,
                               f"queueId[{header.queue_id}] is illegal, topic:[{header.topic}] "
                               f"topicConfig.readQueueNums:[{topic_config.read_queue_nums}] "
                               f"consumer:[{channel.remote_addr}]")
        filter_data: FilterData | None = None
        if has_subscription:
            try:
                subscription = SubscriptionData.build(header.topic, header.subscription, header.expression_type,
                                                      header.sub_version)
            except ValueError:
                return self._error(header, request, ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                                   "parse the consumer's subscription failed")
            # Compiled for this pull only; one that does not compile leaves no filter data: nothing is filtered.
            filter_data = FilterData.build(header.topic, header.consumer_group, header.subscription,
                                           header.expression_type, header.sub_version)
        else:
            group_info = broker.consumers.get(header.consumer_group)
            if group_info is None:
                return self._error(header, request, ResponseCode.SUBSCRIPTION_NOT_EXIST,
                                   f"the consumer's group info not exist{suggest_todo()}")
            if (not group_config.consume_broadcast_enable
                    and group_info.message_model == MessageModel.BROADCASTING):
                return self._error(header, request, ResponseCode.NO_PERMISSION,
                                   f"the consumer group[{header.consumer_group}] can not consume by broadcast way")
            found = group_info.find_subscription(header.topic)
            if found is None:
                return self._error(header, request, ResponseCode.SUBSCRIPTION_NOT_EXIST,
                                   f"the consumer's subscription not exist{suggest_todo()}")
            if found.sub_version < header.sub_version:
                return self._error(header, request, ResponseCode.SUBSCRIPTION_NOT_LATEST,
                                   "the consumer's subscription not latest")
            subscription = found
            if not is_tag_type(subscription.expression_type):
                # The group's filter data, registered by its heartbeats (ConsumerFilterManager).
                filter_data = broker.filters.get(header.topic, header.consumer_group)
                if filter_data is None:
                    return self._error(header, request, ResponseCode.FILTER_DATA_NOT_EXIST,
                                       "The broker's consumer filter data is not exist!Your expression may be wrong!")
                if filter_data.client_version < header.sub_version:
                    return self._error(header, request, ResponseCode.FILTER_DATA_NOT_LATEST,
                                       "the consumer's consumer filter data not latest")
        if not is_tag_type(subscription.expression_type) and not broker.config.enable_property_filter:
            return self._error(header, request, ResponseCode.SYSTEM_ERROR,
                               unsupported_remark(subscription.expression_type))

        result = broker.store.get_message(header.topic, header.queue_id, header.queue_offset, header.max_msg_nums,
                                          subscription.matches,
                                          commit_log_filter(subscription, filter_data, broker.name))
        fields: dict[str, int] = {
            "nextBeginOffset": result.next_begin_offset,
            "minOffset": result.min_offset,
            "maxOffset": result.max_offset,
            # Slave reading is off by default, so the master is suggested; with it on, the group's broker.
            "suggestWhichBrokerId": group_config.broker_id if broker.config.slave_read_enable else MASTER_ID,
        }
        status = result.status
        if status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
            code = ResponseCode.PULL_OFFSET_MOVED if header.queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
        else:
            code = _STATUS_CODES[status]
        body = None
        response: RemotingCommand | None
        if code == ResponseCode.SUCCESS:
            body = b"".join(result.messages)
            broker.stats.on_get(header.consumer_group, header.topic, header.queue_id, len(result.messages),
                                len(body))
        elif code == ResponseCode.PULL_NOT_FOUND and allow_suspend and has_suspend:
            polling_ms = suspend_timeout if broker.config.long_polling_enable else broker.config.short_polling_time_ms
            self.hold.suspend(HeldPull(request, channel, header.topic, header.queue_id, polling_ms,
                                       broker.runtime.now_ms(), header.queue_offset, subscription))
        elif code == ResponseCode.PULL_OFFSET_MOVED:
            if broker.is_master() or broker.config.offset_check_in_slave:
                self._offset_moved_event(header, result.next_begin_offset)
            else:
                fields["suggestWhichBrokerId"] = group_config.broker_id
                code = ResponseCode.PULL_RETRY_IMMEDIATELY
        held = code == ResponseCode.PULL_NOT_FOUND and allow_suspend and has_suspend
        if held:
            response = None
        else:
            response = request.response(code, fields, body=body, remark=status.name)
            self._emit(header, response, status.name, len(result.messages) if body is not None else 0)
        if allow_suspend and has_commit and broker.is_master():
            broker.consumer_offsets.commit(channel.remote_addr, header.consumer_group, header.topic,
                                           header.queue_id, header.commit_offset)
        return response

    def _offset_moved_event(self, header: PullMessageHeader, new_offset: int) -> None:
        """``generateOffsetMovedEvent``: record the correction in OFFSET_MOVED_EVENT (tags and keys = the group)."""
        broker = self.broker
        event = {
            "consumerGroup": header.consumer_group,
            "messageQueue": {"brokerName": broker.name, "queueId": header.queue_id, "topic": header.topic},
            "offsetNew": new_offset,
            "offsetRequest": header.queue_offset,
        }
        msg = MessageToStore(
            topic=OFFSET_MOVED_EVENT_TOPIC,
            queue_id=0,
            body=json.dumps(event, separators=(",", ":")).encode("utf-8"),
            properties={Property.TAGS: header.consumer_group, Property.KEYS: header.consumer_group},
            born_timestamp=broker.runtime.now_ms(),
            born_host=broker.addr,
        )
        broker.put_message(msg)

    def wake(self, held: HeldPull) -> None:
        """``executeRequestWhenWakeup``: run the request again without suspension and answer on its channel."""
        if not held.channel.active:
            return
        response = self.process(held.request, held.channel, allow_suspend=False)
        if response is not None:
            held.channel.send_response(response)


class PullRequestHoldService:
    """``PullRequestHoldService``: held pulls per ``topic@queueId``, checked periodically and on message arrival."""

    def __init__(self, broker: BrokerServices, processor: PullMessageProcessor) -> None:
        self.broker = broker
        self.processor = processor
        self.table: dict[tuple[str, int], list[HeldPull]] = {}
        self._timer: Timer | None = None

    def start(self) -> None:
        config = self.broker.config
        period = LONG_POLLING_CHECK_INTERVAL_MS if config.long_polling_enable else config.short_polling_time_ms
        self._timer = self.broker.runtime.call_every(max(1, period), self.check_held)

    def shutdown(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.table.clear()

    def held_count(self) -> int:
        return sum(len(v) for v in self.table.values())

    def suspend(self, held: HeldPull) -> None:
        self.table.setdefault((held.topic, held.queue_id), []).append(held)

    def check_held(self) -> None:
        """``checkHoldRequest``: re-examine every held queue against its current max offset."""
        store = self.broker.store
        for topic, queue_id in list(self.table):
            self.notify_arriving(topic, queue_id, store.max_offset(topic, queue_id))

    def notify_arriving(self, topic: str, queue_id: int, max_offset: int, tags_code: int | None = None) -> None:
        """``notifyMessageArriving``: wake held pulls the new data matches, and those whose time is up."""
        requests = self.table.pop((topic, queue_id), None)
        if not requests:
            return
        store = self.broker.store
        now = self.broker.runtime.now_ms()
        replay: list[HeldPull] = []
        for held in requests:
            newest = max_offset
            if newest <= held.offset:
                newest = store.max_offset(topic, queue_id)
            if newest > held.offset and held.subscription.matches(tags_code) and (
                    tags_code is None or self._arrival_matches(held, topic, queue_id, max_offset - 1)):
                self.processor.wake(held)
                continue
            if now >= held.suspend_ts + held.timeout_ms:
                self.processor.wake(held)
                continue
            replay.append(held)
        if replay:
            self.table.setdefault((topic, queue_id), []).extend(replay)

    def _arrival_matches(self, held: HeldPull, topic: str, queue_id: int, offset: int) -> bool:
        """``isMatchedByCommitLog`` on the arriving message's properties: an SQL92 pull is woken only by a message
        its selector keeps (the periodic check, which has no properties, wakes it regardless)."""
        if is_tag_type(held.subscription.expression_type):
            return True
        header = PullMessageHeader.parse(held.request)
        if header.sys_flag & PULL_FLAG_SUBSCRIPTION:
            data = FilterData.build(topic, header.consumer_group, header.subscription, header.expression_type,
                                    header.sub_version)
        else:
            data = self.broker.filters.get(topic, header.consumer_group)
        test = commit_log_filter(held.subscription, data, self.broker.name)
        if test is None:
            return True
        arrived = self.broker.store.get_message(topic, queue_id, offset, 1)
        return not arrived.messages or test(arrived.messages[0])

    def channel_closed(self, channel: Channel) -> None:
        """Held pulls of a closed connection can never be answered: forget them."""
        for key, requests in list(self.table.items()):
            kept = [h for h in requests if h.channel is not channel]
            if kept:
                self.table[key] = kept
            else:
                del self.table[key]

