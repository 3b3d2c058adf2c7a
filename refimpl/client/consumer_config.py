"""Consumer options and subscriptions (``DefaultMQPushConsumer``, ``DefaultLitePullConsumer``, ``SubscriptionData``).

``ConsumerConfig`` carries the options of both consumer kinds with RocketMQ's defaults; ``validate`` applies the
range checks of ``DefaultMQPushConsumerImpl.checkConfig`` and ``Validators.checkGroup``. ``SubscriptionData`` is
what ``FilterAPI.buildSubscriptionData`` builds from a tag expression (``"*"`` or ``"A || B"``), or ``FilterAPI.build``
from a ``MessageSelector`` (``by_sql``: an SQL92 expression), and what a heartbeat reports for each subscribed
topic.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import attrs

from rocketspec.refimpl.client.errors import MQClientError
from rocketspec.refimpl.client.validators import check_group
from rocketspec.refimpl.message import java_string_hash
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.runtime import Future
from rocketspec.spec.java import trim
from rocketspec.spec.protocol import (
    BROKER_SUSPEND_MAX_TIME_MS,
    CONSUME_CONCURRENTLY_MAX_SPAN,
    CONSUMER_TIMEOUT_MS_WHEN_SUSPEND,
    DEFAULT_CONSUME_THREADS,
    DEFAULT_CONSUME_TIMEOUT_MINUTES,
    DEFAULT_CONSUMER_GROUP,
    DEFAULT_SUSPEND_CURRENT_QUEUE_MS,
    EXPRESSION_TYPE_SQL92,
    EXPRESSION_TYPE_TAG,
    LITE_PULL_AUTO_COMMIT_INTERVAL_MS,
    LITE_PULL_MIN_AUTO_COMMIT_INTERVAL_MS,
    LITE_PULL_THRESHOLD_FOR_ALL,
    PULL_BATCH_SIZE,
    PULL_THRESHOLD_FOR_QUEUE,
    PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB,
    SUB_ALL,
    ConsumeFromWhere,
    MessageModel,
    RequestCode,
    ResponseCode,
)


def _in_range(name: str, value: int, low: int, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name} out of range [{low}, {high}]: {value!r}")


@attrs.define
class ConsumerConfig:
    """Options of a push or lite pull consumer (RocketMQ defaults; lite pull specifics at the end)."""

    group: str
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    # CONSUME_FROM_TIMESTAMP start; None: 30 minutes before the consumer was created (consumeTimestamp default).
    consume_timestamp_ms: int | None = None
    # A strategy name (AVG, AVG_BY_CIRCLE, CONSISTENT_HASH, CONFIG, MACHINE_ROOM) or an object with allocate().
    allocate_strategy: Any = "AVG"
    # CONFIG: {"queues": [...]}; MACHINE_ROOM: {"consumer_idcs": [...]}; CONSISTENT_HASH: {"virtual_nodes": 10}.
    allocate_config: dict[str, Any] = attrs.field(factory=dict)
    orderly: bool = False
    # -1: 16 for concurrent consumption, unlimited (Integer.MAX_VALUE) for orderly consumption.
    max_reconsume_times: int = -1
    consume_message_batch_max_size: int = 1
    pull_batch_size: int = PULL_BATCH_SIZE
    pull_threshold_for_queue: int = PULL_THRESHOLD_FOR_QUEUE
    pull_threshold_size_for_queue_mib: int = PULL_THRESHOLD_SIZE_FOR_QUEUE_MIB
    consume_concurrently_max_span: int = CONSUME_CONCURRENTLY_MAX_SPAN
    pull_interval_ms: int = 0
    suspend_current_queue_time_ms: int = DEFAULT_SUSPEND_CURRENT_QUEUE_MS
    # Consume tasks running at once (the consume thread pool).
    consume_thread_max: int = DEFAULT_CONSUME_THREADS
    # Simulated processing time of one consume batch, so tests can make consumption take time.
    consume_duration_ms: int = 0
    # Broadcasting offsets (LocalFileOffsetStore): a directory, or None for an in-memory file per client id and
    # group that survives a clean restart of the same client id on the same runtime.
    offset_store_dir: str | None = None
    post_subscription_when_pull: bool = False
    unit_mode: bool = False
    broker_suspend_max_time_ms: int = BROKER_SUSPEND_MAX_TIME_MS
    consumer_timeout_ms_when_suspend: int = CONSUMER_TIMEOUT_MS_WHEN_SUSPEND
    consume_timeout_minutes: int = DEFAULT_CONSUME_TIMEOUT_MINUTES
    # None: 3000 ms for push consumers, 1000 ms for lite pull consumers (pullTimeDelayMillsWhenException).
    pull_time_delay_ms_when_exception: int | None = None
    # Lite pull consumer.
    auto_commit: bool = True
    auto_commit_interval_ms: int = LITE_PULL_AUTO_COMMIT_INTERVAL_MS
    pull_threshold_for_all: int = LITE_PULL_THRESHOLD_FOR_ALL
    poll_timeout_ms: int = 5_000

    def validate(self) -> None:
        """``checkConfig``: the group name and every range RocketMQ enforces at start; options it does not check
        are held to what Java can hold (an int), or to what Java's start-up would throw on (a zero period)."""
        try:
            check_group(self.group)  # Validators.checkGroup: Java's blank, UTF-16 length, the legal characters
        except MQClientError as error:
            raise ValueError(str(error)) from None
        if self.group == DEFAULT_CONSUMER_GROUP:
            raise ValueError(f"consumerGroup can not equal {DEFAULT_CONSUMER_GROUP}, please specify another one.")
        if not isinstance(self.message_model, MessageModel):
            raise ValueError(f"messageModel must be a MessageModel, not {self.message_model!r}")
        if not isinstance(self.consume_from_where, ConsumeFromWhere):
            raise ValueError(f"consumeFromWhere must be a ConsumeFromWhere, not {self.consume_from_where!r}")
        if self.consume_timestamp_ms is not None and (
                not isinstance(self.consume_timestamp_ms, int) or self.consume_timestamp_ms < 0):
            raise ValueError(f"consume_timestamp_ms must be a non-negative integer: {self.consume_timestamp_ms!r}")
        _in_range("consumeThreadMax", self.consume_thread_max, 1, 1000)
        _in_range("consumeConcurrentlyMaxSpan", self.consume_concurrently_max_span, 1, 65535)
        _in_range("pullThresholdForQueue", self.pull_threshold_for_queue, 1, 65535)
        _in_range("pullThresholdSizeForQueue", self.pull_threshold_size_for_queue_mib, 1, 1024)
        _in_range("pullInterval", self.pull_interval_ms, 0, 65535)
        _in_range("consumeMessageBatchMaxSize", self.consume_message_batch_max_size, 1, 1024)
        _in_range("pullBatchSize", self.pull_batch_size, 1, 1024)
        # checkConfig has no range for these two: any Java int is taken (a negative max dead-letters at once, a
        # suspension is clamped to [10, 30000] ms when used).
        _in_range("maxReconsumeTimes", self.max_reconsume_times, -(2**31), 2**31 - 1)
        _in_range("suspendCurrentQueueTimeMillis", self.suspend_current_queue_time_ms, -(2**31), 2**31 - 1)
        _in_range("consumeDurationMs", self.consume_duration_ms, 0, 2**31 - 1)
        _in_range("consumeTimeout", self.consume_timeout_minutes, 1, 2**31 - 1)
        _in_range("brokerSuspendMaxTimeMillis", self.broker_suspend_max_time_ms, 0, 2**31 - 1)
        if self.consumer_timeout_ms_when_suspend < self.broker_suspend_max_time_ms:
            raise ValueError("Long polling mode, the consumer consumerTimeoutMillisWhenSuspend must greater than "
                             "brokerSuspendMaxTimeMillis")
        if self.pull_time_delay_ms_when_exception is not None:
            _in_range("pullTimeDelayMillsWhenException", self.pull_time_delay_ms_when_exception, 0, 2**31 - 1)
        _in_range("autoCommitIntervalMillis", self.auto_commit_interval_ms, LITE_PULL_MIN_AUTO_COMMIT_INTERVAL_MS,
                  2**31 - 1)
        _in_range("pullThresholdForAll", self.pull_threshold_for_all, 1, 2**31 - 1)
        _in_range("pollTimeoutMillis", self.poll_timeout_ms, 0, 2**31 - 1)
        if not isinstance(self.allocate_config, dict):
            raise ValueError("allocate_config must be a dict")

    def push_max_reconsume_times(self) -> int:
        """``DefaultMQPushConsumerImpl.getMaxReconsumeTimes``: -1 means 16."""
        return 16 if self.max_reconsume_times == -1 else self.max_reconsume_times

    def orderly_max_reconsume_times(self) -> int:
        """``ConsumeMessageOrderlyService.getMaxReconsumeTimes``: -1 means Integer.MAX_VALUE."""
        return 2**31 - 1 if self.max_reconsume_times == -1 else self.max_reconsume_times


@attrs.define
class SubscriptionData:
    """One subscribed topic: the expression, its tags and tag hash codes, and a version (``SubscriptionData``)."""

    topic: str
    sub_string: str = SUB_ALL
    tags_set: set[str] = attrs.field(factory=set)
    code_set: set[int] = attrs.field(factory=set)
    sub_version: int = 0
    expression_type: str = EXPRESSION_TYPE_TAG
    class_filter_mode: bool = False

    def to_json(self) -> dict[str, Any]:
        """The heartbeat form (Java field names)."""
        return {
            "classFilterMode": self.class_filter_mode,
            "topic": self.topic,
            "subString": self.sub_string,
            "tagsSet": sorted(self.tags_set),
            "codeSet": sorted(self.code_set),
            "subVersion": self.sub_version,
            "expressionType": self.expression_type,
        }


@attrs.frozen
class MessageSelector:
    """``MessageSelector``: an expression and its type, ``TAG`` (``by_tag``) or ``SQL92`` (``by_sql``)."""

    expression_type: str
    expression: str | None

    @classmethod
    def by_sql(cls, sql: str | None) -> MessageSelector:
        return cls(EXPRESSION_TYPE_SQL92, sql)

    @classmethod
    def by_tag(cls, tag: str | None) -> MessageSelector:
        return cls(EXPRESSION_TYPE_TAG, tag)


def build_selector_subscription(topic: str, selector: MessageSelector | None, version_ms: int) -> SubscriptionData:
    """``FilterAPI.build``: a TAG (or null) type builds the tag subscription (``build_subscription``); another type
    needs a non-empty expression (``IllegalArgumentException("Expression can't be null! <type>")``), kept as it is,
    with no tags."""
    if selector is None:
        return build_subscription(topic, SUB_ALL, version_ms)
    kind = selector.expression_type
    if kind is None or kind == EXPRESSION_TYPE_TAG:
        return build_subscription(topic, selector.expression, version_ms)
    if not isinstance(topic, str) or not topic:
        raise ValueError("Topic can not be null or empty.")
    if not selector.expression:
        raise ValueError(f"Expression can't be null! {kind}")
    return SubscriptionData(topic=topic, sub_string=selector.expression, sub_version=version_ms, expression_type=kind)


def build_subscription(topic: str, expression: str | None, version_ms: int) -> SubscriptionData:
    """``FilterAPI.buildSubscriptionData``: ``"*"``, empty or None subscribe to all; else tags split on ``||``, each
    trimmed as ``String.trim`` does."""
    if not isinstance(topic, str) or not topic:
        raise ValueError("Topic can not be null or empty.")
    data = SubscriptionData(topic=topic, sub_string=SUB_ALL if expression is None else expression,
                            sub_version=version_ms)
    if expression is None or expression == SUB_ALL or expression == "":
        data.sub_string = SUB_ALL
        return data
    if not isinstance(expression, str):
        raise ValueError(f"a subscription expression is a string, not {expression!r}")
    parts = expression.split("||")
    while parts and parts[-1] == "":  # Java's String.split drops trailing empty strings
        parts.pop()
    if not parts:
        raise ValueError("subString split error")
    for tag in parts:
        trimmed = trim(tag)
        if trimmed:
            data.tags_set.add(trimmed)
            data.code_set.add(java_string_hash(trimmed))
    return data


def is_tag_subscription(sub: SubscriptionData) -> bool:
    """``ExpressionType.isTagType`` of the subscription's type: null, empty or TAG."""
    return not sub.expression_type or sub.expression_type == EXPRESSION_TYPE_TAG


def check_client_in_broker(instance: Any, group: str, subscriptions: Iterable[SubscriptionData],
                           timeout_ms: int) -> Future[MQClientError | None]:
    """``MQClientInstance.checkClientInBroker``: CHECK_CLIENT_CONFIG with each non-tag subscription, one after the
    other, to a broker of its topic (none known: skipped); the first answer other than SUCCESS ends it with the
    ``MQClientException`` a Java start throws (a request that fails: "Check client in broker error, ..."), else
    None."""
    done: Future[MQClientError | None] = Future()
    todo = [sub for sub in subscriptions if not is_tag_subscription(sub)]

    def next_one() -> None:
        while todo:
            sub = todo.pop(0)
            addr = instance.find_broker_addr_by_topic(sub.topic)
            if addr is None:
                continue
            body = {"clientId": instance.client_id, "group": group, "subscriptionData": sub.to_json()}
            request = RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, None,
                                              json.dumps(body, separators=(",", ":")).encode("utf-8"))
            instance.invoke(addr, request, timeout_ms).add_done_callback(lambda f, sub=sub: answered(f, sub))
            return
        done.set_result(None)

    def answered(f: Future[RemotingCommand], sub: SubscriptionData) -> None:
        error = f.exception()
        if error is not None:
            done.set_result(MQClientError(
                f"Check client in broker error, maybe because you use {sub.expression_type} to filter message, but "
                "server has not been upgraded to support!This error would not affect the launch of consumer, but may "
                "has impact on message receiving if you have use the new features which are not supported by server, "
                "please check the log!", cause=error))
            return
        response = f.result()
        if response.code != ResponseCode.SUCCESS:
            done.set_result(MQClientError(f"CODE: {response.code}  DESC: {response.remark}", code=response.code))
            return
        next_one()

    next_one()
    return done
