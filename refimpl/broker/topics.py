"""Topic configurations of one broker (``TopicConfigManager``, ``TopicConfig``, ``TopicValidator``, ``DataVersion``).

The table starts with the system topics a 4.9.8 broker creates in its constructor, then the persisted
``config/topics.json`` is laid over it. Producers create topics implicitly on send (from ``TBW102`` when auto
creation is on), the send-back and transaction paths create retry, dead-letter and system topics; every change bumps
the data version the name server compares, is persisted, and (for implicit creations) triggers a registration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from rocketspec.refimpl.broker.config import TOPICS_FILE, BrokerConfig, ConfigDisk, load_json, save_json
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    BENCHMARK_TOPIC,
    BENCHMARK_TOPIC_QUEUE_NUMS,
    DEFAULT_PERM,
    MAX_DELAY_LEVEL,
    NOT_ALLOWED_SEND_TOPICS,
    OFFSET_MOVED_EVENT_TOPIC,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    REPLY_TOPIC_POSTFIX,
    SCHEDULE_TOPIC,
    SELF_TEST_TOPIC,
    SYSTEM_TOPIC_PREFIX,
    SYSTEM_TOPICS,
    TOPIC_CONFIG_DEFAULT_QUEUE_NUMS,
    TOPIC_FILTER_MULTI_TAG,
    TOPIC_FILTER_SINGLE_TAG,
    TOPIC_MAX_LENGTH,
    TRACE_TOPIC,
    VALID_TOPIC_CHARS,
    dlq_topic,
    retry_topic,
)


def is_topic_or_group_illegal(name: str) -> bool:
    """``TopicValidator.isTopicOrGroupIllegal``: only ``^[%|a-zA-Z0-9_-]+$`` characters are allowed."""
    return any(ch not in VALID_TOPIC_CHARS for ch in name)


def validate_topic(topic: str | None) -> str | None:
    """``TopicValidator.validateTopic``: the SYSTEM_ERROR remark for a bad topic name, None when it is valid."""
    if topic is None or not topic.strip():
        return "The specified topic is blank."
    if is_topic_or_group_illegal(topic):
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def is_not_allowed_send_topic(topic: str) -> bool:
    """``TopicValidator.isNotAllowedSendTopic``: system topics clients may not send to (NO_PERMISSION)."""
    return topic in NOT_ALLOWED_SEND_TOPICS


@attrs.define
class TopicConfig:
    """``TopicConfig``: queue counts, permission bits, tag filter type, sys flag and order flag of a topic."""

    topic_name: str
    read_queue_nums: int = TOPIC_CONFIG_DEFAULT_QUEUE_NUMS
    write_queue_nums: int = TOPIC_CONFIG_DEFAULT_QUEUE_NUMS
    perm: int = DEFAULT_PERM
    topic_filter_type: str = TOPIC_FILTER_SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False

    @property
    def multi_tag(self) -> bool:
        return self.topic_filter_type == TOPIC_FILTER_MULTI_TAG

    def to_json(self) -> dict[str, Any]:
        return {
            "topicName": self.topic_name,
            "readQueueNums": self.read_queue_nums,
            "writeQueueNums": self.write_queue_nums,
            "perm": self.perm,
            "topicFilterType": self.topic_filter_type,
            "topicSysFlag": self.topic_sys_flag,
            "order": self.order,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TopicConfig:
        return cls(
            topic_name=str(data["topicName"]),
            read_queue_nums=int(data.get("readQueueNums", TOPIC_CONFIG_DEFAULT_QUEUE_NUMS)),
            write_queue_nums=int(data.get("writeQueueNums", TOPIC_CONFIG_DEFAULT_QUEUE_NUMS)),
            perm=int(data.get("perm", DEFAULT_PERM)),
            topic_filter_type=str(data.get("topicFilterType", TOPIC_FILTER_SINGLE_TAG)),
            topic_sys_flag=int(data.get("topicSysFlag", 0)),
            order=bool(data.get("order", False)),
        )


@attrs.define
class DataVersion:
    """``DataVersion``: the name server re-reads a broker's topics when (timestamp, counter) changes."""

    timestamp: int
    counter: int = 0

    def next_version(self, now_ms: int) -> None:
        self.timestamp = now_ms
        self.counter += 1

    def to_json(self) -> dict[str, int]:
        return {"timestamp": self.timestamp, "counter": self.counter}

    @classmethod
    def from_json(cls, data: Any, default_ms: int) -> DataVersion:
        if not isinstance(data, dict):
            return cls(default_ms)
        return cls(int(data.get("timestamp", default_ms)), int(data.get("counter", 0)))


class TopicConfigManager:
    """``TopicConfigManager``: the topic table, its data version and persistence.

    ``on_created`` is called after a topic is created implicitly (send, send-back, system topics): the broker then
    registers with the name server at once (``registerBrokerAll(false, true, true)``) so routes appear.
    """

    def __init__(
        self,
        config: BrokerConfig,
        clock: Callable[[], int],
        disk: ConfigDisk,
        on_created: Callable[[], None] | None = None,
    ) -> None:
        self._config = config
        self._clock = clock
        self._disk = disk
        self.on_created = on_created
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion(clock())
        self.system_topics: set[str] = set(SYSTEM_TOPICS)
        self._create_builtin_topics()

    # ------------------------------------------------------------------------------------------- built-in topics
    def _builtin(self, name: str, queues: int | None = None, perm: int = DEFAULT_PERM) -> None:
        topic = TopicConfig(name, perm=perm)
        if queues is not None:
            topic.read_queue_nums = topic.write_queue_nums = queues
        self.system_topics.add(name)
        self.table[name] = topic

    def _create_builtin_topics(self) -> None:
        """The topics TopicConfigManager's constructor creates, in its order and with its queue counts."""
        config = self._config
        self._builtin(SELF_TEST_TOPIC, 1)
        if config.auto_create_topic_enable:
            self._builtin(AUTO_CREATE_TOPIC_KEY, config.default_topic_queue_nums, PERM_INHERIT | PERM_READ | PERM_WRITE)
        self._builtin(BENCHMARK_TOPIC, BENCHMARK_TOPIC_QUEUE_NUMS)
        cluster_perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if config.cluster_topic_enable else 0)
        self._builtin(config.cluster_name, None, cluster_perm)
        broker_perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if config.broker_topic_enable else 0)
        self._builtin(config.broker_name, 1, broker_perm)
        self._builtin(OFFSET_MOVED_EVENT_TOPIC, 1)
        self._builtin(SCHEDULE_TOPIC, MAX_DELAY_LEVEL)
        if config.trace_topic_enable:
            self._builtin(TRACE_TOPIC, 1)
        self._builtin(f"{config.cluster_name}_{REPLY_TOPIC_POSTFIX}", 1)

    # ------------------------------------------------------------------------------------------------- queries
    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def is_order_topic(self, topic: str) -> bool:
        config = self.table.get(topic)
        return config is not None and config.order

    def is_system_topic(self, topic: str) -> bool:
        """``TopicValidator.isSystemTopic``: built-in names and the ``rmq_sys_`` prefix."""
        return topic in self.system_topics or topic.startswith(SYSTEM_TOPIC_PREFIX)

    # ------------------------------------------------------------------------------------------------- creation
    def create_in_send(
        self, topic: str, default_topic: str, client_default_queue_nums: int, topic_sys_flag: int
    ) -> TopicConfig | None:
        """``createTopicInSendMessageMethod``: copy the default topic (TBW102) when its perm has the inherit bit.

        Queue count = min(requested defaultTopicQueueNums, default topic's write queues), at least 0; the inherit bit
        is cleared. Without auto creation an existing TBW102 is first demoted to plain read/write, so nothing inherits.
        """
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        default = self.table.get(default_topic)
        if default is None:
            return None
        if default_topic == AUTO_CREATE_TOPIC_KEY and not self._config.auto_create_topic_enable:
            default.perm = PERM_READ | PERM_WRITE
        if not default.perm & PERM_INHERIT:
            return None
        queues = max(0, min(client_default_queue_nums, default.write_queue_nums))
        created = TopicConfig(
            topic,
            read_queue_nums=queues,
            write_queue_nums=queues,
            perm=default.perm & ~PERM_INHERIT,
            topic_filter_type=default.topic_filter_type,
            topic_sys_flag=topic_sys_flag,
        )
        self._created(created)
        return created

    def create_in_send_back(self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int = 0) -> TopicConfig:
        """``createTopicInSendMessageBackMethod``: return the topic, creating it with these queues and perm."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        created = TopicConfig(topic, read_queue_nums=queue_nums, write_queue_nums=queue_nums, perm=perm,
                              topic_sys_flag=topic_sys_flag)
        self._created(created)
        return created

    def create_retry_topic(self, group: str, queue_nums: int, topic_sys_flag: int = 0) -> TopicConfig:
        """``%RETRY%<group>`` with read/write perm (heartbeat, send-back, sends to retry topics)."""
        return self.create_in_send_back(retry_topic(group), queue_nums, PERM_READ | PERM_WRITE, topic_sys_flag)

    def create_dlq_topic(self, group: str, queue_nums: int, perm: int) -> TopicConfig:
        """``%DLQ%<group>`` (send-back uses write-only perm, the send path read/write)."""
        return self.create_in_send_back(dlq_topic(group), queue_nums, perm, 0)

    def create_system_topic(self, topic: str, queue_nums: int, perm: int) -> TopicConfig:
        """Transaction half/op topics and TRANS_CHECK_MAX_TIME_TOPIC (``createTopicOfTranCheckMaxTime``)."""
        return self.create_in_send_back(topic, queue_nums, perm, 0)

    def _created(self, topic: TopicConfig) -> None:
        self.table[topic.topic_name] = topic
        self.data_version.next_version(self._clock())
        self.persist()
        if self.on_created is not None:
            self.on_created()

    def update(self, topic: TopicConfig) -> None:
        """``updateTopicConfig`` (UPDATE_AND_CREATE_TOPIC, admin tools): put, new version, persist."""
        self.table[topic.topic_name] = topic
        self.data_version.next_version(self._clock())
        self.persist()

    def delete(self, topic: str) -> TopicConfig | None:
        """``deleteTopicConfig`` (DELETE_TOPIC_IN_BROKER): remove, new version, persist; the removed config or None."""
        removed = self.table.pop(topic, None)
        if removed is not None:
            self.data_version.next_version(self._clock())
            self.persist()
        return removed

    def update_order_topics(self, order_topics: set[str]) -> None:
        """``updateOrderTopicConfig``: the name server's order-topic table decides every topic's order flag."""
        changed = False
        for name, topic in self.table.items():
            order = name in order_topics
            if topic.order != order:
                topic.order = order
                changed = True
        if changed:
            self.data_version.next_version(self._clock())
            self.persist()

    # ------------------------------------------------------------------------------------------- serialisation
    def wrapper(self, broker_permission: int | None = None) -> dict[str, Any]:
        """``TopicConfigSerializeWrapper`` JSON; a broker without read or write permission registers every topic with
        the broker's permission instead (``registerBrokerAll``)."""
        table: dict[str, Any] = {}
        for name, topic in self.table.items():
            if broker_permission is not None and broker_permission & (PERM_READ | PERM_WRITE) != PERM_READ | PERM_WRITE:
                topic = TopicConfig(name, topic.read_queue_nums, topic.write_queue_nums, broker_permission)
            table[name] = topic.to_json()
        return {"topicConfigTable": table, "dataVersion": self.data_version.to_json()}

    def persist(self) -> None:
        save_json(self._disk, TOPICS_FILE, self.wrapper())

    def load(self) -> None:
        """Lay the persisted table over the built-in topics and take its data version (``decode``)."""
        data = load_json(self._disk, TOPICS_FILE)
        if data is None:
            return
        table = data.get("topicConfigTable")
        if isinstance(table, dict):
            for name, raw in table.items():
                if isinstance(raw, dict) and "topicName" in raw:
                    self.table[str(name)] = TopicConfig.from_json(raw)
        self.data_version = DataVersion.from_json(data.get("dataVersion"), self._clock())
