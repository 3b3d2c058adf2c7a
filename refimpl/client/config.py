"""Client options (``ClientConfig``, ``DefaultMQProducer`` fields of 4.9.8) as attrs classes."""

from __future__ import annotations

import attrs

from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    COMPRESS_MSG_BODY_OVER_BYTES,
    DEFAULT_INSTANCE_NAME,
    DEFAULT_RETRY_ANOTHER_BROKER_WHEN_NOT_STORE_OK,
    DEFAULT_RETRY_RESPONSE_CODES,
    DEFAULT_RETRY_TIMES_WHEN_SEND_ASYNC_FAILED,
    DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED,
    DEFAULT_SEND_LATENCY_FAULT_ENABLE,
    DEFAULT_SEND_MSG_TIMEOUT_MS,
    DEFAULT_TOPIC_QUEUE_NUMS,
    DLQ_GROUP_TOPIC_PREFIX,
    HEARTBEAT_BROKER_INTERVAL_MS,
    LATENCY_MAX_MS,
    MAX_MESSAGE_SIZE,
    MQ_CLIENT_API_TIMEOUT_MS,
    NAMESPACE_SEPARATOR,
    NOT_AVAILABLE_DURATION_MS,
    PERSIST_CONSUMER_OFFSET_INTERVAL_MS,
    POLL_NAME_SERVER_INTERVAL_MS,
    REBALANCE_INTERVAL_MS,
    RETRY_GROUP_TOPIC_PREFIX,
    SYS_CONSUMER_GROUP_PREFIX,
    SYSTEM_TOPIC_PREFIX,
    SYSTEM_TOPICS,
    VERSION_V4_9_8,
    LanguageCode,
)


def _non_negative(_instance: object, attribute: attrs.Attribute, value: int) -> None:
    if value < 0:
        raise ValueError(f"{attribute.name} must be >= 0, not {value}")


def _positive(_instance: object, attribute: attrs.Attribute, value: int) -> None:
    if value <= 0:
        raise ValueError(f"{attribute.name} must be > 0, not {value}")


@attrs.define(kw_only=True)
class ClientConfig:
    """What every client instance shares (``ClientConfig``); the client id is ``clientIP@instanceName``."""

    instance_name: str = DEFAULT_INSTANCE_NAME
    client_ip: str = "127.0.0.1"
    poll_name_server_interval_ms: int = attrs.field(default=POLL_NAME_SERVER_INTERVAL_MS, validator=_positive)
    heartbeat_broker_interval_ms: int = attrs.field(default=HEARTBEAT_BROKER_INTERVAL_MS, validator=_positive)
    persist_consumer_offset_interval_ms: int = attrs.field(default=PERSIST_CONSUMER_OFFSET_INTERVAL_MS,
                                                           validator=_positive)
    rebalance_interval_ms: int = attrs.field(default=REBALANCE_INTERVAL_MS, validator=_positive)
    mq_client_api_timeout_ms: int = attrs.field(default=MQ_CLIENT_API_TIMEOUT_MS, validator=_positive)
    language: int = LanguageCode.JAVA
    version: int = VERSION_V4_9_8
    # Plain ACL credentials (SessionCredentials): with them every request is signed as AclClientRPCHook signs it.
    access_key: str | None = None
    secret_key: str | None = None
    security_token: str | None = None
    # The namespace (instance id) every topic and group of the client lives in: brokers see ``namespace%name``.
    namespace: str | None = None

    def __attrs_post_init__(self) -> None:
        if (self.access_key is None) != (self.secret_key is None):
            raise ValueError("access_key and secret_key go together: give both or neither")

    def client_id(self) -> str:
        """``ClientConfig.buildMQClientId`` (no unit name)."""
        return f"{self.client_ip}@{self.instance_name}"

    def with_namespace(self, resource: str) -> str:
        """``ClientConfig.withNamespace`` (``NamespaceUtil.wrapNamespace``): ``[%RETRY%|%DLQ%]namespace%name``."""
        ns = self.namespace
        if not ns or not resource or _untouchable(resource):
            return resource
        head, body = _retry_or_dlq(resource)
        if body.startswith(ns + NAMESPACE_SEPARATOR):
            return resource  # wrapped already
        return f"{head}{ns}{NAMESPACE_SEPARATOR}{body}"

    def without_namespace(self, resource: str) -> str:
        """``ClientConfig.withoutNamespace`` (``NamespaceUtil.withoutNamespace(resource, namespace)``)."""
        ns = self.namespace
        if not ns or not resource:
            return resource
        head, body = _retry_or_dlq(resource)
        if not body.startswith(ns + NAMESPACE_SEPARATOR) or _untouchable(resource):
            return resource
        index = body.find(NAMESPACE_SEPARATOR)
        return head + body[index + 1:] if index > 0 else resource


def _untouchable(resource: str) -> bool:
    """``NamespaceUtil.isSystemResource``: a system topic of the client's ``TopicValidator`` or a system group."""
    if resource in SYSTEM_TOPICS:
        return True
    return resource.startswith((SYSTEM_TOPIC_PREFIX, SYS_CONSUMER_GROUP_PREFIX))


def _retry_or_dlq(resource: str) -> tuple[str, str]:
    """A retry or dead-letter topic's prefix and the name after it (``withOutRetryAndDLQ``)."""
    for head in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX):
        if resource.startswith(head):
            return head, resource[len(head):]
    return "", resource


@attrs.define(kw_only=True)
class ProducerConfig:
    """``DefaultMQProducer`` options."""

    group: str
    send_msg_timeout_ms: int = attrs.field(default=DEFAULT_SEND_MSG_TIMEOUT_MS, validator=_non_negative)
    retry_times_when_send_failed: int = attrs.field(default=DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED,
                                                    validator=_non_negative)
    retry_times_when_send_async_failed: int = attrs.field(default=DEFAULT_RETRY_TIMES_WHEN_SEND_ASYNC_FAILED,
                                                          validator=_non_negative)
    retry_another_broker_when_not_store_ok: bool = DEFAULT_RETRY_ANOTHER_BROKER_WHEN_NOT_STORE_OK
    send_latency_fault_enable: bool = DEFAULT_SEND_LATENCY_FAULT_ENABLE
    compress_msg_body_over_bytes: int = attrs.field(default=COMPRESS_MSG_BODY_OVER_BYTES, validator=_non_negative)
    max_message_size: int = attrs.field(default=MAX_MESSAGE_SIZE, validator=_positive)
    default_topic_queue_nums: int = attrs.field(default=DEFAULT_TOPIC_QUEUE_NUMS, validator=_positive)
    create_topic_key: str = AUTO_CREATE_TOPIC_KEY
    retry_response_codes: frozenset[int] = attrs.field(default=DEFAULT_RETRY_RESPONSE_CODES, converter=frozenset)
    not_available_duration_ms: tuple[int, ...] = attrs.field(default=NOT_AVAILABLE_DURATION_MS, converter=tuple)
    latency_max_ms: tuple[int, ...] = attrs.field(default=LATENCY_MAX_MS, converter=tuple)
    send_message_with_vip_channel: bool = False
    use_v2_header: bool = True
    unit_mode: bool = False
    # zlib level of DefaultMQProducerImpl (system property rocketmq.message.compressLevel, default 5).
    compress_level: int = 5

    def __attrs_post_init__(self) -> None:
        if len(self.not_available_duration_ms) != len(self.latency_max_ms):
            raise ValueError("latency_max_ms and not_available_duration_ms must have the same length")
