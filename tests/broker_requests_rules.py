"""The broker_requests lockstep machine's admin, offset and query rules (a mixin of ``BrokerRequestsMachine`` in
tests/test_stateful_broker_requests.py), its connections and its capture of what the broker gets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
from broker_requests_support import heartbeat_body
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from rocketspec.refimpl.client.consumer_config import ConsumerConfig
from rocketspec.refimpl.client.push_consumer import PushConsumer
from rocketspec.refimpl.message import decode_properties
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec import broker_requests as spec
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    SCHEDULE_TOPIC,
    STATS_BROKER_PUT_NUMS,
    STATS_TOPIC_PUT_NUMS,
    Property,
    RequestCode,
)

CONNECTIONS = ("c1", "c2", "c3")
TOPICS = ("T", "U", "%RETRY%G", AUTO_CREATE_TOPIC_KEY)
BAD_TOPICS = ("a b", "", "x" * 128, SCHEDULE_TOPIC, "DefaultCluster", "rmq_sys_x")
GROUPS = ("G", "H", "CID_RMQ_SYS_X")
PRODUCER_GROUPS = ("PG", "PH")
DEFAULT_TOPICS = (AUTO_CREATE_TOPIC_KEY, "DefaultCluster", "T", "nope")
BODY_SIZES = (1, 20, 150, 5000)
WAITS = (1, 700, 3_000, 10_000, 25_000, 40_000)
HORIZON_MS = 100_000
# UPDATE_BROKER_CONFIG values per key: the model's settings, the settings it only reports, unknown and black-listed
# keys. maxMessageSize only grows past the bodies sent (CommitLog keeps a value below 10 out of its encoder; a smaller
# limit is the run's configuration, the broker.maxMessageSize dimension).
CONFIG_VALUES = {
    "maxMessageSize": ("8388608", "4194304", "64x"),
    "autoCreateTopicEnable": ("false", "true", "yes"),
    "autoCreateSubscriptionGroup": ("false", "TRUE", "true"),
    "notifyConsumerIdsChangedEnable": ("false", "true", "no"),
    "defaultTopicQueueNums": ("2", "8", "x"),
    "storeReplyMessageEnable": ("false", "true", "true"),
    "brokerPermission": ("4", "6", "6"),
    "fileReservedTime": ("48", "2x", "72"),
    "deleteWhen": ("05", "04", "23"),
    "cleanFileForciblyEnable": ("false", "true", "False"),
    "fooBar": ("1", "x", ""),
    "brokerConfigPath": ("/tmp/x", "", "y"),
    "flushDiskType": ("SYNC_FLUSH", "ASYNC_FLUSH", "x"),
}
# KEYS whose properties string is over Short.MAX_VALUE: the store refuses the message (BRK-5).
HUGE_KEYS = "K" * 33_000
SETTLE_MS = 3
NOTIFIED = "NOTIFY_CONSUMER_IDS_CHANGED received (BRK-14)"
PUSHED = "reply pushes received (BRK-28)"


class Conn:
    """A raw client connection: its remoting client and what the broker sent it."""

    def __init__(self, machine: Any, name: str) -> None:
        self.name = name
        self.client = machine.cluster.network.client(name, self)
        self.client_id = f"127.0.0.1@{name}"
        self.notified: list[tuple[str, str]] = []
        self.pushed: list[tuple[str, str]] = []
        self.push_ok = True

    def handle(self, request: RemotingCommand, channel: Any) -> RemotingCommand | None:
        if request.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED:
            self.notified.append((self.name, request.ext_fields.get("consumerGroup", "")))
            return None
        if request.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT:
            props = decode_properties(request.ext_fields.get("properties", ""))
            self.pushed.append((self.name, props.get(Property.CORRELATION_ID, "")))
            return request.response(0 if self.push_ok else 1)
        return None


class Capture:
    """Every request the broker handles, as it arrives: (time, client address, request, immediate response)."""

    def __init__(self, machine: Any, broker: Any) -> None:
        self.machine = machine
        self.original = broker.handle
        self.seen: list[tuple[int, str, RemotingCommand, RemotingCommand | None]] = []
        broker.handle = self

    def __call__(self, request: RemotingCommand, channel: Any) -> RemotingCommand | None:
        response = self.original(request, channel)
        self.seen.append((self.machine.cluster.now_ms(), channel.remote_addr, request, response))
        return response


def _code_name(code: int) -> str:
    try:
        return RequestCode(code).name
    except ValueError:
        return str(code)


def _drawn(action: Any, response: RemotingCommand | None) -> Any:
    """A send to a negative queue id: the broker's random draw is the queue it answered with (BRK-3)."""
    if response is None or "queueId" not in response.ext_fields or action.queue_id >= 0:
        return action
    return attrs.evolve(action, draw=int(response.ext_fields["queueId"]))


class RequestRules:
    """The rules of the admin, offset and query requests: each builds its action, ``_admin`` sends it over the admin
    connection and steps the spec (the machine's)."""

    cluster: Any
    admin: Any
    conns: dict[str, Conn]
    state: Any
    boot: int

    if TYPE_CHECKING:

        def _admin(self, action: Any, timeout_ms: int = 3_000) -> None: ...

        def _ask(
            self, conn: Conn, request: RemotingCommand, make: Any, timeout_ms: int = 3_000, ahead: int = 1
        ) -> None: ...

        def _replay(self, mine: RemotingCommand | None, make: Any, response: RemotingCommand | None = None) -> None: ...

        def drive(self, action: Any, note: str = "") -> Any: ...

    unit: bool
    builder: Any

    # ------------------------------------------------------------------------------------------------ admin

    @precondition(lambda self: self.cluster is not None)
    @rule(
        topic=st.sampled_from(TOPICS + BAD_TOPICS),
        queues=st.integers(1, 4),
        write=st.sampled_from((None, 1, 3)),
        perm=st.sampled_from((6, 4, 2, 7)),
        multi_tag=st.booleans(),
        sys_flag=st.sampled_from((0, 1)),
        filter_ok=st.sampled_from((True, True, True, False)),
    )
    def create_topic(
        self, topic: str, queues: int, write: int | None, perm: int, multi_tag: bool, sys_flag: int, filter_ok: bool
    ) -> None:
        """UPDATE_AND_CREATE_TOPIC (BRK-17, BRK-21)."""
        self._admin(spec.CreateTopic(queues, perm, topic, write, multi_tag, sys_flag, filter_ok))

    @precondition(lambda self: self.cluster is not None)
    @rule(topic=st.sampled_from(("T", "T", "U", *TOPICS, *BAD_TOPICS)))
    def delete_topic(self, topic: str) -> None:
        """DELETE_TOPIC_IN_BROKER (BRK-17)."""
        self._admin(spec.DeleteTopic(topic))

    @precondition(lambda self: self.cluster is not None)
    @rule()
    def get_topic_config(self) -> None:
        """GET_ALL_TOPIC_CONFIG (BRK-17, BRK-21)."""
        self._admin(spec.GetTopicConfig())

    @precondition(lambda self: self.cluster is not None)
    @rule(which=st.sampled_from(("system", "groups", "producers", "runtime")))
    def read_tables(self, which: str) -> None:
        """GET_SYSTEM_TOPIC_LIST_FROM_BROKER, GET_ALL_SUBSCRIPTIONGROUP_CONFIG, GET_ALL_PRODUCER_INFO,
        GET_BROKER_RUNTIME_INFO (BRK-18, BRK-21, BRK-26, BRK-29)."""
        self._admin(
            {
                "system": spec.GetSystemTopics(),
                "groups": spec.GetGroups(),
                "producers": spec.ProducerInfo(),
                "runtime": spec.RuntimeInfo(),
            }[which]
        )

    @precondition(lambda self: self.cluster is not None)
    @rule()
    def get_broker_config(self) -> None:
        """GET_BROKER_CONFIG (BRK-18, BRK-24)."""
        self._admin(spec.GetBrokerConfig())

    @precondition(lambda self: self.cluster is not None)
    @rule(topic=st.sampled_from(("T", "T", "U", *TOPICS, "nope")), by_who=st.booleans())
    def topic_stats(self, topic: str, by_who: bool) -> None:
        """GET_TOPIC_STATS_INFO, QUERY_TOPIC_CONSUME_BY_WHO (BRK-13, BRK-25, BRK-30)."""
        self._admin(spec.ConsumedBy(topic) if by_who else spec.GetTopicStats(topic))

    @precondition(lambda self: self.cluster is not None)
    @rule(
        kind=st.sampled_from(("min", "max", "earliest", "search")),
        topic=st.sampled_from(TOPICS[:2]),
        queue_id=st.integers(0, 4),
        back=st.sampled_from((0, 1, 500, 10**6)),
    )
    def offset_query(self, kind: str, topic: str, queue_id: int, back: int) -> None:
        """GET_MIN_OFFSET, GET_MAX_OFFSET, GET_EARLIEST_MSG_STORETIME, SEARCH_OFFSET_BY_TIMESTAMP (BRK-10, BRK-11)."""
        self._admin(spec.OffsetQuery(kind, topic, queue_id, self.state.now - back))

    @precondition(lambda self: self.cluster is not None)
    @rule(
        written=st.sampled_from((True, True, False)),
        n=st.integers(0, 9),
        index=st.integers(-1, 3),
        count=st.integers(0, 3),
        group=st.sampled_from((None, None, *GROUPS[:2])),
    )
    def query_consume_queue(self, written: bool, n: int, index: int, count: int, group: str | None) -> None:
        """QUERY_CONSUME_QUEUE of a queue that was written, or of one never written, with a group's subscription
        (BRK-9, BRK-13, BRK-25)."""
        queues = [key for key, queue in self.state.queues if queue]
        topic, queue_id = queues[n % len(queues)] if written and queues else ("U", 7)
        self._admin(spec.QueryConsumeQueue(topic, queue_id, index, count, group))

    @precondition(lambda self: self.cluster is not None)
    @rule(
        group=st.sampled_from(GROUPS),
        retry=st.integers(1, 3),
        times=st.sampled_from((16, 3)),
        notify=st.booleans(),
        consume=st.booleans(),
        then=st.booleans(),
    )
    def create_group(self, group: str, retry: int, times: int, notify: bool, consume: bool, then: bool) -> None:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (BRK-20, BRK-21), and (``then``) a consumer of the group starting,
        as a deployment does: its heartbeat creates the retry topic with the group's retry queues (BRK-13)."""
        self._admin(spec.CreateGroup(group, retry, times, notify, consume))
        if then:
            self._client_heartbeat("c3", group, frozenset({"T"}))

    def _client_heartbeat(self, conn: str, group: str, topics: frozenset[str], producer: str | None = None) -> None:
        """A heartbeat whose ConsumerData a reference consumer of ``group`` builds (its unitMode, BRK-23)."""
        c = self.conns[conn]
        consumer = PushConsumer(self.builder, ConsumerConfig(group=group, unit_mode=self.unit), lambda m: None)
        for topic in sorted(topics):
            consumer.subscribe(topic, "*")
        data = consumer.heartbeat_data()
        action = spec.Heartbeat(conn, topics, group, producer, c.client_id, bool(data["unitMode"]), True)
        request = RemotingCommand.request(RequestCode.HEART_BEAT, {}, heartbeat_body(c.client_id, data, producer))
        self._ask(c, request, lambda r: action)

    @precondition(lambda self: self.cluster is not None)
    @rule(group=st.sampled_from(GROUPS))
    def delete_group(self, group: str) -> None:
        """DELETE_SUBSCRIPTIONGROUP (BRK-20)."""
        self._admin(spec.DeleteGroup(group))

    @precondition(lambda self: self.cluster is not None)
    @rule(
        key=st.sampled_from(sorted(CONFIG_VALUES)),
        value=st.integers(0, 2),
        extra=st.sampled_from((None, None, "fooBar", "brokerConfigPath", "flushDiskType", "maxMessageSize")),
        empty=st.sampled_from((False,) * 9 + (True,)),
    )
    def update_broker_config(self, key: str, value: int, extra: str | None, empty: bool) -> None:
        """UPDATE_BROKER_CONFIG of one or two keys, or without a body (BRK-24)."""
        entries = [(key, CONFIG_VALUES[key][value])]
        if extra is not None:
            entries.append((extra, CONFIG_VALUES[extra][value]))
        self._admin(spec.UpdateBrokerConfig(() if empty else tuple(entries)))

    @precondition(lambda self: self.cluster is not None)
    @rule(
        counted=st.sampled_from((True, True, True, False)),
        n=st.integers(0, 9),
        name=st.sampled_from((STATS_TOPIC_PUT_NUMS, STATS_BROKER_PUT_NUMS, "GROUP_GET_NUMS")),
    )
    def view_stats(self, counted: bool, n: int, name: str) -> None:
        """VIEW_BROKER_STATS_DATA of an item counted, or of one never counted (BRK-27)."""
        items = [key for key, _ in self.state.stats]
        key = items[n % len(items)] if counted and items else (name, "T")
        self._admin(spec.ViewStats(*key))

    @precondition(lambda self: self.cluster is not None)
    @rule(
        code=st.sampled_from(
            (
                RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
                RequestCode.DELETE_EXPIRED_COMMITLOG,
                RequestCode.CLEAN_UNUSED_TOPIC,
                RequestCode.GET_ALL_DELAY_OFFSET,
                RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
                RequestCode.DELETE_ACL_CONFIG,
                RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                RequestCode.GET_BROKER_CLUSTER_ACL_INFO,
                RequestCode.REGISTER_BROKER,
                9999,
            )
        )
    )
    def maintenance(self, code: int) -> None:
        """The maintenance and ACL requests, and codes the broker does not serve (BRK-19, BRK-31)."""
        self._admin(spec.Maintenance(code), timeout_ms=50)

    @precondition(lambda self: self.cluster is not None)
    @rule(which=st.sampled_from(sorted(spec.MALFORMED_REQUESTS)))
    def malformed(self, which: tuple[int, str]) -> None:
        """A request without a header field its handler needs (BRK-32)."""
        self._admin(spec.Malformed(*which))

    # ------------------------------------------------------------------------------------------------ offsets
    @precondition(lambda self: self.cluster is not None)
    @rule(
        group=st.sampled_from(GROUPS[:2]),
        topic=st.sampled_from(TOPICS[:2]),
        queue_id=st.integers(0, 2),
        offset=st.sampled_from((0, 1, 5, -1)),
    )
    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """UPDATE_CONSUMER_OFFSET (BRK-30)."""
        self._admin(spec.CommitOffset(group, topic, queue_id, offset))

    @precondition(lambda self: self.cluster is not None)
    @rule(
        group=st.sampled_from(GROUPS[:2]),
        topic=st.sampled_from(TOPICS[:2]),
        queue_id=st.integers(0, 2),
        n=st.integers(0, 9),
    )
    def query_offset(self, group: str, topic: str, queue_id: int, n: int) -> None:
        """QUERY_CONSUMER_OFFSET, mostly of a committed queue (BRK-30)."""
        committed = [k for k, _ in self.state.offsets]
        if committed and n < 7:
            group, topic, queue_id = committed[n % len(committed)]
        self._admin(spec.QueryOffset(group, topic, queue_id))

    @precondition(lambda self: self.cluster is not None)
    @rule(topic=st.sampled_from(TOPICS[:2]), filters=st.sampled_from(((), ("G",), ("G", "H"))))
    def correction_offset(self, topic: str, filters: tuple[str, ...]) -> None:
        """QUERY_CORRECTION_OFFSET, which also drops the filter groups' offsets (BRK-30)."""
        self._admin(spec.CorrectionOffset(topic, filters))

    @precondition(lambda self: self.cluster is not None)
    @rule(topic=st.sampled_from(TOPICS[:2]), order=st.booleans())
    def order_topic(self, topic: str, order: bool) -> None:
        """The name server's ORDER_TOPIC_CONFIG gains or loses a topic (PUT_KV_CONFIG / DELETE_KV_CONFIG there); the
        broker's next registration answer sets its topics' order flags (BRK-1)."""
        assert self.cluster is not None
        fields = {"namespace": NAMESPACE_ORDER_TOPIC_CONFIG, "key": topic}
        if order:
            fields["value"] = "broker-a:4"
        code = RequestCode.PUT_KV_CONFIG if order else RequestCode.DELETE_KV_CONFIG
        self.cluster.runtime.wait(
            self.admin.client.invoke(self.cluster.namesrv_addr, RemotingCommand.request(code, fields), 3_000)
        )
        self._replay(None, None)
        self.drive(spec.OrderTopicConfig(topic, order), "at the name server")

    # ------------------------------------------------------------------------------------------------ queries
    def _stored_offset(self, n: int) -> int:
        log = self.state.log
        return log[n % len(log)].commit_log_offset if log else 0

    @precondition(lambda self: self.cluster is not None)
    @rule(
        key=st.sampled_from(("k1", "uniq", "uniq", "k2", "none")),
        max_num=st.sampled_from((32, 1, 100, -1)),
        window=st.sampled_from(("all", "first", "recent", "past", "first", "edge")),
        n=st.integers(0, 9),
        other=st.sampled_from((False, False, True)),
    )
    def query_message(self, key: str, max_num: int, window: str, n: int, other: bool) -> None:
        """QUERY_MESSAGE by key or unique key, mostly of a topic that has messages (BRK-12, BRK-22)."""
        unique = key == "uniq"
        log = [
            m
            for m in self.state.log
            if (m.prop(Property.KEYS) or m.prop(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)) and m.read_body is not None
        ]
        picked = (log[0] if window == "first" else log[n % len(log)]) if log else None
        topic = "U" if picked is None or other else picked.topic
        if unique:
            key = (picked.prop(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) if picked is not None else None) or "U0000"
        now = self.state.now
        first = log[0].store_time if log else now
        # "edge": the window ends at the picked message's time as the index keeps it (whole seconds after the
        # index's first entry): BRK-12's bounds are inclusive.
        indexed = [m for m in self.state.log if m.prop(Property.KEYS) or m.prop(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)]
        edge = spec.index_time(indexed[0].store_time, picked.store_time) if picked is not None else now
        begin, end = {
            "all": (0, now + 10_000),
            "recent": (now - 2_000, now + 10_000),
            "past": (0, self.boot),
            "first": (0, first),
            "edge": (0, edge),
        }[window]
        self._admin(spec.QueryMessage(topic, key, max_num, begin, end, unique))

    @precondition(lambda self: self.cluster is not None)
    @rule(n=st.integers(0, 9), bogus=st.sampled_from((None, None, None, 1, -1, 0)))
    def view_message(self, n: int, bogus: int | None) -> None:
        """VIEW_MESSAGE_BY_ID at a message's offset, inside one, past the log, or without one (BRK-12, BRK-22)."""
        offset = (
            None if bogus == 0 else self._stored_offset(n) + (bogus or 0) if bogus != -1 else self.state.commit_log + 7
        )
        self._admin(spec.ViewMessage(offset))

    @precondition(lambda self: self.cluster is not None)
    @rule(n=st.integers(0, 9), bad=st.sampled_from((False, False, True)))
    def resume_half(self, n: int, bad: bool) -> None:
        """RESUME_CHECK_HALF_MESSAGE (BRK-31)."""
        offset = None if bad or not self.state.log else self._stored_offset(n)
        self._admin(spec.ResumeHalf(offset))
