"""Broker requests: the machine's state: one broker's settings, tables, store, clients and last answer."""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TypeVar

import attrs

from rocketspec.spec.broker_requests.admin import REPORTED_SETTINGS, GroupConf, builtin_groups, builtin_topics
from rocketspec.spec.broker_requests.oracles import TopicConf
from rocketspec.spec.protocol import (
    BROKER_DEFAULT_TOPIC_QUEUE_NUMS,
    COMPRESS_MSG_BODY_OVER_BYTES,
    DEFAULT_BROKER_PORT,
    DEFAULT_CLUSTER_NAME,
    DEFAULT_PERM,
    MAX_MESSAGE_SIZE,
    SYSFLAG_COMPRESSED,
    ResponseCode,
)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: The model broker: its name, cluster, store host (127.0.0.1 as a number) and port.
BROKER_NAME = "broker-a"
CLUSTER = DEFAULT_CLUSTER_NAME
STORE_IP = 0x7F000001
STORE_PORT = DEFAULT_BROKER_PORT
STORE_ADDR = f"127.0.0.1:{DEFAULT_BROKER_PORT}"

Table = tuple[tuple[K, V], ...]


def table_get(table: Table[K, V], key: K, default: V | None = None) -> V | None:
    """The value of ``key`` in a sorted table of pairs (the frozen form of a map), or ``default``."""
    for k, v in table:
        if k == key:
            return v
    return default


def table_put(table: Table[K, V], key: K, value: V) -> Table[K, V]:
    """``table`` with ``key`` set to ``value`` (kept sorted by key)."""
    return _sorted([*((k, v) for k, v in table if k != key), (key, value)])


def table_drop(table: Table[K, V], key: K) -> Table[K, V]:
    return tuple((k, v) for k, v in table if k != key)


def _sorted(pairs: Iterable[tuple[K, V]]) -> Table[K, V]:
    return tuple(sorted(pairs, key=lambda kv: repr(kv[0])))


@attrs.frozen(cache_hash=True)
class Settings:
    """What a run configures and UPDATE_BROKER_CONFIG changes: the broker's settings the answers depend on, the
    options of the clients it serves (the producer's compressMsgBodyOverHowmuch, every client's unitMode), and the
    round trip of a registration with the name server (``register_rtt``: when its answer is applied)."""

    max_message_size: int = MAX_MESSAGE_SIZE
    auto_create_topic: bool = True
    auto_create_group: bool = True
    notify_enable: bool = True
    default_topic_queue_nums: int = BROKER_DEFAULT_TOPIC_QUEUE_NUMS
    store_reply: bool = True
    compress_over: int = COMPRESS_MSG_BODY_OVER_BYTES
    unit_mode: bool = False
    broker_perm: int = DEFAULT_PERM
    register_rtt: int = 0
    reported: tuple[tuple[str, str], ...] = tuple((key, default) for key, _type, default in REPORTED_SETTINGS)


@attrs.frozen(cache_hash=True)
class Stored:
    """A message in the commit log (and its consume queue): tags and store time, what was stored (topic, queue,
    queue offset, body, properties sorted by name, sysFlag, flag, reconsume times), where (commit-log offset, size)
    and what a reader gets back (``original``: the inflated body of a compressed one, None: the body itself)."""

    tags: str | None
    store_time: int
    topic: str = ""
    queue_id: int = 0
    queue_offset: int = 0
    body: bytes = b""
    properties: tuple[tuple[str, str], ...] = ()
    sys_flag: int = 0
    flag: int = 0
    reconsume_times: int = 0
    commit_log_offset: int = 0
    size: int = 0
    original: bytes | None = None

    @property
    def read_body(self) -> bytes | None:
        """The body a reader gets (BRK-22): the body the client compressed, or the body as stored; None when it
        cannot: the sysFlag says compressed but the body is not (a half-message copy of a compressed one, BRK-31)."""
        if self.original is not None:
            return self.original
        return None if self.sys_flag & SYSFLAG_COMPRESSED else self.body

    def prop(self, name: str) -> str | None:
        for k, v in self.properties:
            if k == name:
                return v
        return None


@attrs.frozen(cache_hash=True)
class Answer:
    """A request's answer as the spec decides it: code and remark; for a send the queue, the first queue offset,
    how many messages were stored and the msgId field; ``body`` the answer's body, decoded to what the spec models
    (a table, ids, offsets: hashable), None when it has none."""

    code: ResponseCode
    remark: str | None = None
    queue_id: int = -1
    queue_offset: int = -1
    stored: int = 0
    msg_id: str | None = None
    body: Hashable = None
    fields: tuple[tuple[str, str], ...] = ()


#: The remark of an answer whose text the spec does not decide (a Java exception's message, say).
UNDECIDED = "<any remark: not decided by the spec>"

#: The answer of a send that was stored (the old name).
SendAnswer = Answer


@attrs.frozen(cache_hash=True)
class ConsumerGroup:
    """A consumer group online at the broker: its connections with the client id each registered, the topics
    subscribed."""

    members: tuple[tuple[str, str], ...] = ()
    topics: frozenset[str] = frozenset()

    @property
    def connections(self) -> frozenset[str]:
        return frozenset(c for c, _ in self.members)

    @property
    def client_ids(self) -> tuple[str, ...]:
        return tuple(sorted(cid for _, cid in self.members))


@attrs.frozen(cache_hash=True)
class StatsCount:
    """One increment of a stats item: when, by how much (value) and how many times."""

    at: int
    value: int
    times: int


@attrs.frozen(cache_hash=True)
class BrokerState:
    """One broker, as its clients see it.

    ``scenario`` names the model's slice (the explorer's candidates; a lockstep run is "all"). ``topics`` and
    ``groups`` are the topic and subscription-group tables with their DataVersion counters; ``queues`` the consume
    queues written since their topic was (re)created, ``log`` every message in the commit log (in order) and
    ``commit_log`` its end; ``consumers``/``producers`` who is registered (``client_channels``: the producer
    manager's client id -> connection table); ``offsets`` committed consumer offsets; ``locks`` the queue locks
    (holder, last lock time); ``stats`` the increments of each stats item; ``config_version`` the configuration's
    DataVersion (counter, timestamp); ``answer`` the last request's answer, ``notified`` the (connection, group)
    NOTIFY_CONSUMER_IDS_CHANGED the last step sent and ``pushed`` the (connection, correlation id) reply pushes it
    made. The old single-topic fields are kept: ``auto_create`` (= settings.auto_create_topic at the start) and
    ``group_notify`` (the model group's switch)."""

    scenario: str
    auto_create: bool = True
    settings: Settings = Settings()
    boot: int = 0
    now: int = 0
    topics: Table[str, TopicConf] = ()
    topics_version: tuple[int, int] = (0, 0)
    groups: Table[str, GroupConf] = ()
    groups_version: tuple[int, int] = (0, 0)
    queues: Table[tuple[str, int], tuple[Stored, ...]] = ()
    log: tuple[Stored, ...] = ()
    commit_log: int = 0
    consumers: Table[str, ConsumerGroup] = ()
    producers: Table[str, tuple[tuple[str, str], ...]] = ()
    client_channels: Table[str, str] = ()
    offsets: Table[tuple[str, str, int], int] = ()
    locks: Table[tuple[str, str, int], tuple[str, int]] = ()
    namesrv_order: frozenset[str] | None = None
    stats: Table[tuple[str, str], tuple[StatsCount, ...]] = ()
    config_version: tuple[int, int] = (0, 0)
    answer: Answer | None = None
    notified: tuple[tuple[str, str], ...] = ()
    pushed: tuple[tuple[str, str], ...] = ()
    group_notify: bool = True

    # ------------------------------------------------------------------------------------------- lookups
    def topic(self, name: str) -> TopicConf | None:
        return table_get(self.topics, name)

    def group(self, name: str) -> GroupConf | None:
        return table_get(self.groups, name)

    def queue(self, topic: str, queue_id: int) -> tuple[Stored, ...]:
        return table_get(self.queues, (topic, queue_id), ()) or ()

    def consumer_group(self, name: str) -> ConsumerGroup | None:
        return table_get(self.consumers, name)

    @property
    def message_count(self) -> int:
        return sum(len(q) for _, q in self.queues)


def fresh_broker(scenario: str, settings: Settings = Settings(), now: int = 0) -> BrokerState:
    """A broker just started with ``settings`` at ``now``: its built-in topics and groups (BRK-21)."""
    return BrokerState(
        scenario, auto_create=settings.auto_create_topic, settings=settings, boot=now, now=now,
        topics=_sorted(builtin_topics(CLUSTER, BROKER_NAME, settings.auto_create_topic,
                                      settings.default_topic_queue_nums)),
        topics_version=(0, now), groups=_sorted((g, GroupConf()) for g in builtin_groups()),
        groups_version=(0, now), config_version=(0, now))
