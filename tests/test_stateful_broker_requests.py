"""Lockstep: the broker_requests spec (BRK-*) drives a reference broker request by request.

Each run draws its configuration (``tests/dimensions.py``): the broker's maxMessageSize and autoCreateTopicEnable,
the producer's compressMsgBodyOverHowmuch and every client's unitMode. A ``Cluster`` (one broker, the JSON frame codec
on its network) serves three raw connections (``c1``..``c3``, each with a client id and a handler that records the
NOTIFY_CONSUMER_IDS_CHANGED and PUSH_REPLY_MESSAGE_TO_CLIENT it gets), an admin connection and a reference
``Producer`` (group ``PP``, connection ``p``). Rules send raw requests (sends, batches, replies, the topic, group,
client, offset, configuration, stats, query and maintenance requests), make the producer send (its compression and
unit flag are the client's), build heartbeats with a reference consumer's ConsumerData (its unitMode), close
connections and let time pass.

Every request the broker handles is read back where it arrives (the broker's ``handle``) and stepped in the spec, in
arrival order, after the time passed since the last one: the test's own requests and the producer's (its sends, its
heartbeats every 30 s) alike (the producer's are observed: its sysFlag and unitMode must be what the spec's client
rules allow, BRK-22, BRK-23). After each request the answer (code, remark, the send fields, the decoded body), the
notifications and the reply pushes each connection got must be the spec's; after every rule the projections must
agree: the stored messages of every queue with their offsets, sizes and properties, the commit log's end, the topic
and subscription-group tables with their DataVersions, who is registered, the committed offsets, the settings and
the stats totals. A run stays under 100 s of simulated time (clients expire after 120 s).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
from broker_requests_rules import (
    BAD_TOPICS,
    BODY_SIZES,
    CONNECTIONS,
    DEFAULT_TOPICS,
    GROUPS,
    HORIZON_MS,
    HUGE_KEYS,
    NOTIFIED,
    PRODUCER_GROUPS,
    PUSHED,
    SETTLE_MS,
    TOPICS,
    WAITS,
    Capture,
    Conn,
    RequestRules,
    _code_name,
    _drawn,
)
from broker_requests_support import (
    admin_request,
    clients,
    consumer_data,
    group_table,
    heartbeat_body,
    msg_id,
    offsets,
    send_request,
    settings,
    spec_answer,
    spec_clients,
    spec_stats_totals,
    spec_stored_messages,
    stats_totals,
    stored_messages,
    system_answer,
    topic_table,
    wire_body,
)
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from lockstep import LockstepMachine, machine_test, variant_caught, variant_needs

from rocketspec.refimpl import Cluster
from rocketspec.refimpl import index as index_module
from rocketspec.refimpl.broker import admin_maintenance as maintenance_module
from rocketspec.refimpl.broker import admin_runtime as runtime_module
from rocketspec.refimpl.broker import admin_topics as admin_topics_module
from rocketspec.refimpl.broker import broker as broker_module
from rocketspec.refimpl.broker import groups as groups_module
from rocketspec.refimpl.broker import query as query_module
from rocketspec.refimpl.broker import stats as stats_module
from rocketspec.refimpl.broker import topics as topics_module
from rocketspec.refimpl.client import producer as producer_module
from rocketspec.refimpl.client.errors import MQBrokerError, MQClientError
from rocketspec.refimpl.client.instance import ClientInstance
from rocketspec.refimpl.message import Message, decode_properties
from rocketspec.refimpl.remoting import RemotingCommand, RemotingError
from rocketspec.spec import broker_requests as spec
from rocketspec.spec.protocol import (
    DEFAULT_TOPIC_QUEUE_NUMS,
    SEND_MESSAGE_V2_FIELDS,
    STATS_SAMPLING,
    Property,
    RequestCode,
)

_LONG = {letter: long for letter, long in SEND_MESSAGE_V2_FIELDS.items()}

class BrokerRequestsMachine(RequestRules, LockstepMachine):
    """One broker, configured as the run draws, stepped with the spec's BrokerState request by request (BRK-1..31)."""

    TABLE = spec.TRANSITIONS
    DIMENSIONS = ("broker.maxMessageSize", "broker.autoCreateTopicEnable", "producer.compressMsgBodyOverHowmuch",
                  "client.unitMode")
    VALUES: ClassVar[dict[str, st.SearchStrategy[Any]]] = {}
    DRIVEN = tuple(k for k in spec.TRANSITIONS.kinds if k not in (spec.Send, spec.Heartbeat))
    OBSERVED = (spec.Send, spec.Heartbeat)

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.uniq = 0
        self.sent_body = b""

    # ------------------------------------------------------------------------------------------------ setup
    def setup(self, config: dict[str, Any], data: st.DataObject) -> None:
        """A cluster with one broker as configured, the raw connections, and a producer (its start heartbeat is
        the first request observed)."""
        self.cluster = Cluster(brokers=1, clock="simulated", wire_codec="json", seed=5,
                               max_message_size=config["broker.maxMessageSize"],
                               auto_create_topic_enable=config["broker.autoCreateTopicEnable"],
                               transaction_check_interval_ms=10**9)
        self.broker = self.cluster.brokers["broker-a"]
        self.boot = self.broker.runtime_admin.boot_ms
        self.capture = Capture(self, self.broker)
        self.conns = {name: Conn(self, name) for name in CONNECTIONS}
        self.admin = Conn(self, "admin")
        self.unit = config["client.unitMode"]
        base = spec.Settings(max_message_size=config["broker.maxMessageSize"],
                             auto_create_topic=config["broker.autoCreateTopicEnable"],
                             compress_over=config["producer.compressMsgBodyOverHowmuch"], unit_mode=self.unit,
                             register_rtt=2 * self.cluster.network.latency_ms)
        self.base = base
        self.begin(spec.fresh_broker(spec.ALL, base, self.boot))
        self.producer = self.cluster.producer(
            "PP", compress_msg_body_over_bytes=base.compress_over, unit_mode=self.unit,
            retry_times_when_send_failed=0)
        self.names = {c.client.addr: n for n, c in self.conns.items()}
        self.names[self.admin.client.addr] = "admin"
        self.names[self.producer.instance.remoting.addr] = "p"
        self.producer_pushes: list[tuple[str, str]] = []
        instance_handle = self.producer.instance.handle

        def producer_handle(request: RemotingCommand, channel: Any) -> RemotingCommand | None:
            if request.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT:
                props = decode_properties(request.ext_fields.get("properties", ""))
                self.producer_pushes.append(("p", props.get(Property.CORRELATION_ID, "")))
            return instance_handle(request, channel)

        self.producer.instance.handle = producer_handle  # type: ignore[method-assign]
        self.builder = ClientInstance(self.cluster.runtime, self.cluster.network, self.cluster.events,
                                      self.cluster.namesrv_addr, "127.0.0.1@builder")
        self._replay(None, None)
        # Most runs start with the topic created by an admin tool (or the test double's API), as a deployment does.
        first = data.draw(st.sampled_from(("admin", "admin", "api", None)), label="topic T created first")
        if first == "admin":
            self._admin(spec.CreateTopic(4, 6, "T"))
        elif first == "api":
            self._to(self.cluster.now_ms())
            self.cluster.create_topic("T", 4)  # at once, then the registration settles
            self.drive(spec.CreateTopic(4, 6, "T"), "Cluster.create_topic")
            self._replay(None, None)
        # Now and then an admin turns group auto-creation off before any client comes (BRK-20).
        if data.draw(st.sampled_from((False, False, False, True)), label="groups not auto-created"):
            self._admin(spec.UpdateBrokerConfig((("autoCreateSubscriptionGroup", "false"),)))

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    # ------------------------------------------------------------------------------------------------ stepping
    def _connection(self, addr: str) -> str:
        return self.names.get(addr, addr)

    def _avoid_ticks(self, ahead: int = 1) -> None:
        """A request must not arrive (nor a reply be stored) at a stats sampling instant: the order of the two is
        the timers' (BRK-27 samples what came before)."""
        assert self.cluster is not None
        period = STATS_SAMPLING[0][1]
        while any((self.cluster.now_ms() + d - self.boot) % period == 0 for d in range(1, ahead + 3)):
            self.cluster.advance(1)

    def _settle(self) -> None:
        assert self.cluster is not None
        self.cluster.advance(SETTLE_MS)

    def _to(self, t: int) -> None:
        if t > self.state.now:
            self.drive(spec.TimePasses(t - self.state.now), "time up to the next request")

    def _replay(self, mine: RemotingCommand | None, make: Any, response: RemotingCommand | None = None) -> None:
        """Step the spec through every request the broker got since the last replay, in arrival order: ``mine`` (the
        rule's request, whose action ``make(response)`` builds) and those of the producer (observed)."""
        seen, self.capture.seen = self.capture.seen, []
        found = False
        for t, addr, request, immediate in seen:
            self._to(t)
            conn = self._connection(addr)
            if mine is not None and request.opaque == mine.opaque and conn != "p":
                found = True
                action = make(response if response is not None else immediate)
                step = self.observe if type(action) in self.OBSERVED else self.drive
                step(action, f"{conn}: {_code_name(request.code)}")
                self._check_answer(action, response if response is not None else immediate)
                self._check_delivered()
                continue
            for action in self._translate(conn, request):
                self.observe(action, f"{conn}: {_code_name(request.code)}")
                self._check_answer(action, immediate)
        if mine is not None and not found:
            self.fail(f"the broker never got {_code_name(mine.code)}")
        assert self.cluster is not None
        self._to(self.cluster.now_ms())  # what the broker did on its own meanwhile (registration answers)

    def _check_answer(self, action: Any, response: RemotingCommand | None) -> None:
        expected = spec_answer(self.state.answer)
        actual = system_answer(action, response, self)
        if expected is not None and actual is not None and expected[1] == spec.UNDECIDED:
            actual = (actual[0], spec.UNDECIDED, *actual[2:])
        if expected != actual:
            clauses = ", ".join(self.TABLE.clauses_of(action))
            self.fail(f"the answer ({clauses}) to {action!r}:\n    spec:           {expected}\n"
                      f"    implementation: {actual}")

    def _check_delivered(self) -> None:
        got_n = sorted(n for c in self.conns.values() for n in c.notified)
        got_p = sorted([p for c in self.conns.values() for p in c.pushed] + self.producer_pushes)
        self.producer_pushes.clear()
        for c in self.conns.values():
            c.notified.clear()
            c.pushed.clear()
        if got_n != sorted(self.state.notified):
            self.fail(f"{NOTIFIED}: spec {sorted(self.state.notified)}, implementation {got_n}")
        if got_p != sorted(self.state.pushed):
            self.fail(f"{PUSHED}: spec {sorted(self.state.pushed)}, implementation {got_p}")

    def _translate(self, conn: str, request: RemotingCommand) -> list[Any]:
        """The spec actions of a request the producer's client made: its heartbeat (one per producer group) and
        its sends (what its compression and unit flag made of the message, BRK-22, BRK-23)."""
        if request.code == RequestCode.HEART_BEAT:
            data = json.loads(request.body or b"{}")
            return [spec.Heartbeat(conn, frozenset(), None, p["groupName"], data["clientID"], client=True)
                    for p in data.get("producerDataSet", ())]
        if request.code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_MESSAGE):
            f = {(_LONG.get(k, k) if request.code == RequestCode.SEND_MESSAGE_V2 else k): v
                 for k, v in request.ext_fields.items()}
            props = decode_properties(f.get("properties", ""))
            extra = set(props) - {Property.TAGS, Property.KEYS, Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
                                  Property.WAIT_STORE_MSG_OK}
            if extra or props.get(Property.WAIT_STORE_MSG_OK, "true") != "true":
                self.fail(f"BRK-8: the producer sent properties the model does not know: {props}")
            body = request.body or b""
            sys_flag = int(f["sysFlag"])
            inflated = wire_body(body, sys_flag)
            if inflated != self.sent_body:
                self.fail(f"BRK-22: the producer sent {body!r} (sysFlag {sys_flag:#x}) for the body {self.sent_body!r}")
            return [spec.Send(int(f["queueId"]), props.get(Property.TAGS), 0, f["topic"], body,
                              props.get(Property.KEYS), props.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
                              Property.WAIT_STORE_MSG_OK in props, sys_flag, f.get("unitMode") == "true",
                              f["defaultTopic"], int(f["defaultTopicQueueNums"]),
                              self.sent_body if body != self.sent_body else None, True,
                              self.producer.instance.remoting.addr)]
        self.fail(f"the producer sent {_code_name(request.code)}, which the model does not know")

    def _ask(self, conn: Conn, request: RemotingCommand, make: Any, timeout_ms: int = 3_000, ahead: int = 1) -> None:
        """Send ``request`` over ``conn``, wait for the answer, let notifications land, step the spec."""
        assert self.cluster is not None
        self._avoid_ticks(ahead)
        future = conn.client.invoke(self.broker.addr, request, timeout_ms)
        try:
            response: RemotingCommand | None = self.cluster.runtime.wait(future)
        except RemotingError:
            response = None
        self._settle()
        self._replay(request, make, response)

    def _admin(self, action: Any, timeout_ms: int = 3_000) -> None:  # type: ignore[override]
        self._ask(self.admin, admin_request(action, msg_id), lambda r: action, timeout_ms)

    def _uniq(self) -> str:
        self.uniq += 1
        return f"U{self.uniq:04d}"

    # ------------------------------------------------------------------------------------------------ sends
    @precondition(lambda self: self.cluster is not None)
    @rule(conn=st.sampled_from(CONNECTIONS), topic=st.sampled_from(("T", "T", "U", "U", *TOPICS[2:], *BAD_TOPICS[:4])),
          queue_id=st.sampled_from((0, 1, 2, -1, 3, 5)), tags=st.sampled_from((None, "A", "B")),
          keys=st.sampled_from((None, "k1", "k1 k2", "k1", HUGE_KEYS)), uniq=st.booleans(), wait=st.booleans(),
          size=st.sampled_from(BODY_SIZES), v1=st.booleans(),
          default=st.sampled_from((*DEFAULT_TOPICS[:1] * 3, *DEFAULT_TOPICS)),
          queues=st.sampled_from((DEFAULT_TOPIC_QUEUE_NUMS, 1, 16)), later=st.sampled_from((0, 0, 0, 11_000)))
    def send(self, conn: str, topic: str, queue_id: int, tags: str | None, keys: str | None, uniq: bool, wait: bool,
             size: int, v1: bool, default: str, queues: int, later: int) -> None:
        """SEND_MESSAGE (long names) or SEND_MESSAGE_V2 built by hand (BRK-1..9, BRK-20, BRK-27), now and then
        followed by a stats sample."""
        c = self.conns[conn]
        action = spec.Send(queue_id, tags, 0, topic, b"m" * size, keys, self._uniq() if uniq else None, wait,
                           default_topic=default, default_queues=queues, producer_addr=c.client.addr)
        code = RequestCode.SEND_MESSAGE if v1 else RequestCode.SEND_MESSAGE_V2
        self._ask(c, send_request(action, code, self.state.now), lambda r: _drawn(action, r))
        if later:
            self._wait(later)

    @precondition(lambda self: self.cluster is not None)
    @rule(conn=st.sampled_from(CONNECTIONS), topic=st.sampled_from(TOPICS[:2]), queue_id=st.integers(-1, 3),
          count=st.integers(1, 3), uniq=st.booleans(), wait=st.booleans(), delay=st.sampled_from((False, False, True)),
          size=st.sampled_from((1, 20)))
    def send_batch(self, conn: str, topic: str, queue_id: int, count: int, uniq: bool, wait: bool, delay: bool,
                   size: int) -> None:
        """SEND_BATCH_MESSAGE with batch=true (BRK-5, BRK-7, BRK-8)."""
        c = self.conns[conn]
        action = spec.SendBatch(queue_id, count, topic, 0, b"b" * size, self._uniq() if uniq else None, wait, delay,
                                default_queues=DEFAULT_TOPIC_QUEUE_NUMS, producer_addr=c.client.addr)
        self._ask(c, send_request(action, RequestCode.SEND_BATCH_MESSAGE, self.state.now), lambda r: _drawn(action, r))

    @precondition(lambda self: self.cluster is not None)
    @rule(conn=st.sampled_from(CONNECTIONS),
          to=st.sampled_from((None, "unknown", "registered", "registered", *CONNECTIONS)),
          n=st.integers(0, 9), queue_id=st.integers(-1, 1), push_ok=st.sampled_from((True, True, False)),
          v1=st.booleans())
    def send_reply(self, conn: str, to: str | None, n: int, queue_id: int, push_ok: bool, v1: bool) -> None:
        """SEND_REPLY_MESSAGE(_V2): pushed to the requester's connection, stored (BRK-28, BRK-29)."""
        c = self.conns[conn]
        registered = [cid for cid, _ in self.state.client_channels]
        if to == "registered":
            to = "unknown" if not registered else registered[n % len(registered)]
        reply_to = None if to is None else "127.0.0.1@unknown" if to == "unknown" else \
            self.conns[to].client_id if to in self.conns else to
        for other in self.conns.values():
            other.push_ok = push_ok
        if reply_to == self.producer.instance.client_id:
            # The reference client has no request-reply: it answers the push REQUEST_CODE_NOT_SUPPORTED (a 4.9.8
            # client answers SUCCESS even without a waiting request).
            push_ok = False
        action = spec.SendReply(queue_id, reply_to, self._uniq(), body=b"reply", push_ok=push_ok, rtt=2,
                                producer_addr=c.client.addr)
        code = RequestCode.SEND_REPLY_MESSAGE if v1 else RequestCode.SEND_REPLY_MESSAGE_V2
        self._ask(c, send_request(action, code, self.state.now), lambda r: _drawn(action, r), ahead=3)

    @precondition(lambda self: self.cluster is not None)
    @rule(topic=st.sampled_from(TOPICS[:2]), size=st.sampled_from(BODY_SIZES), tags=st.sampled_from((None, "A")),
          keys=st.sampled_from((None, "k1")))
    def producer_send(self, topic: str, size: int, tags: str | None, keys: str | None) -> None:
        """The reference producer sends: its sysFlag (compression) and unitMode are the client's (BRK-22, BRK-23);
        the broker's answer is what it got."""
        assert self.cluster is not None
        self._avoid_ticks()
        self.sent_body = bytes(range(256)) * (size // 256) + b"p" * (size % 256)
        try:
            self.producer.send(Message(topic, self.sent_body, tags=tags, keys=keys))
        except (MQClientError, MQBrokerError, RemotingError):
            pass
        self._settle()
        self._replay(None, None)

    # ------------------------------------------------------------------------------------------------ clients
    @precondition(lambda self: self.cluster is not None)
    @rule(conn=st.sampled_from(CONNECTIONS), group=st.sampled_from((None, *GROUPS)),
          topics=st.frozensets(st.sampled_from(TOPICS[:2]), max_size=2), producer=st.sampled_from((None, "PG", "PH")),
          client=st.sampled_from((True, True, False)), malformed=st.sampled_from((False,) * 7 + (True,)))
    def heartbeat(self, conn: str, group: str | None, topics: frozenset[str], producer: str | None,
                  client: bool, malformed: bool) -> None:
        """HEART_BEAT; with ``client`` its ConsumerData is a reference consumer's (its unitMode, BRK-23)
        (BRK-13, BRK-14, BRK-20, BRK-29)."""
        c = self.conns[conn]
        if malformed:
            bad = RemotingCommand.request(RequestCode.HEART_BEAT, {}, b"{not json")
            self._ask(c, bad, lambda r: spec.Heartbeat(conn, group=None, malformed=True))
            return
        if client and group is not None:
            self._client_heartbeat(conn, group, topics, producer)
            return
        data = consumer_data(group, topics, False) if group is not None else None
        action = spec.Heartbeat(conn, topics if group else frozenset(), group, producer, c.client_id)
        request = RemotingCommand.request(RequestCode.HEART_BEAT, {}, heartbeat_body(c.client_id, data, producer))
        self._ask(c, request, lambda r: action)

    @precondition(lambda self: self.cluster is not None)
    @rule(conn=st.sampled_from(CONNECTIONS), group=st.sampled_from((None, *GROUPS)),
          producer=st.sampled_from((None, "PG", "PH")), other=st.sampled_from((None, *CONNECTIONS)))
    def unregister(self, conn: str, group: str | None, producer: str | None, other: str | None) -> None:
        """UNREGISTER_CLIENT, naming its own client id or another's (BRK-14, BRK-15, BRK-20, BRK-29)."""
        c = self.conns[conn]
        cid = (self.conns[other] if other else c).client_id
        action = spec.UnregisterClient(conn, group, producer, cid)
        request = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT,
                                          {"clientID": cid, "consumerGroup": group, "producerGroup": producer})
        self._ask(c, request, lambda r: action)

    @precondition(lambda self: self.cluster is not None)
    @rule(conn=st.sampled_from(CONNECTIONS))
    def close(self, conn: str) -> None:
        """A connection closes: it leaves every group (BRK-13, BRK-14, BRK-29)."""
        action = spec.ConnectionClosed(conn)
        if not self.can(action):  # a connection the broker has registered, when there is one
            registered = [c for c in CONNECTIONS if self.can(spec.ConnectionClosed(c))]
            if not registered:
                return
            conn = registered[0]
            action = spec.ConnectionClosed(conn)
        self.conns[conn].client.close()
        self._settle()
        self._replay(None, None)
        self.drive(action, f"{conn} closes")
        self._check_delivered()

    def _known_group(self, group: str, n: int, producers: bool = False) -> str:
        """Mostly a group that is registered."""
        known = [g for g, _ in (self.state.producers if producers else self.state.consumers)]
        return known[n % len(known)] if known and n < 7 else group

    @precondition(lambda self: self.cluster is not None)
    @rule(group=st.sampled_from(GROUPS), n=st.integers(0, 9), connections=st.booleans())
    def consumer_list(self, group: str, n: int, connections: bool) -> None:
        """GET_CONSUMER_LIST_BY_GROUP, GET_CONSUMER_CONNECTION_LIST (BRK-13)."""
        group = self._known_group(group, n)
        self._admin(spec.ConsumerConnections(group) if connections else spec.ConsumerList(group))

    @precondition(lambda self: self.cluster is not None)
    @rule(group=st.sampled_from(PRODUCER_GROUPS), n=st.integers(0, 9))
    def producer_connections(self, group: str, n: int) -> None:
        """GET_PRODUCER_CONNECTION_LIST (BRK-29)."""
        self._admin(spec.ProducerConnections(self._known_group(group, n, producers=True)))

    @precondition(lambda self: self.cluster is not None)
    @rule(group=st.sampled_from(GROUPS[:2]), topic=st.sampled_from((*TOPICS[:2], None)), n=st.integers(0, 9))
    def consume_stats(self, group: str, topic: str | None, n: int) -> None:
        """GET_CONSUME_STATS of a topic or of every topic the group has offsets on (BRK-13, BRK-30)."""
        offsets = [k for k, _ in self.state.offsets]
        if offsets and n < 7:
            group = offsets[n % len(offsets)][0]
        self._admin(spec.ConsumeStats(group, topic))

    @precondition(lambda self: self.cluster is not None)
    @rule(lock=st.booleans(), conn=st.sampled_from(CONNECTIONS[:2]), group=st.sampled_from(GROUPS[:2]),
          queues=st.lists(st.integers(0, 3), min_size=1, max_size=3).map(tuple))
    def locks(self, lock: bool, conn: str, group: str, queues: tuple[int, ...]) -> None:
        """LOCK_BATCH_MQ / UNLOCK_BATCH_MQ, now and then with a body that is none (BRK-16)."""
        cid = self.conns[conn].client_id
        malformed = queues == (3,)
        self._admin(spec.LockBatch(cid, queues, group, malformed=malformed) if lock else
                    spec.UnlockBatch(cid, queues, group, malformed=malformed))

    # ------------------------------------------------------------------------------------------------ time
    @precondition(lambda self: self.cluster is not None)
    @rule(ms=st.sampled_from(WAITS))
    def time_passes(self, ms: int) -> None:
        """Time passes: stats samples (BRK-27); the producer's heartbeats every 30 s are observed."""
        self._wait(ms)

    def _wait(self, ms: int) -> None:
        """Let ``ms`` pass, staying within the horizon (clients silent for 120 s would expire)."""
        assert self.cluster is not None
        ms = min(ms, self.boot + HORIZON_MS - self.cluster.now_ms())
        if ms <= 0:
            return
        self.cluster.advance(ms)
        self._replay(None, None)

    # ------------------------------------------------------------------------------------------------ projections
    def project_spec(self) -> dict[str, Any]:
        """What the spec's BrokerState says the broker holds."""
        s = self.state
        return {
            "stored messages per queue (BRK-5, BRK-6, BRK-7, BRK-8, BRK-17, BRK-22)": spec_stored_messages(s),
            "commit log end (BRK-6)": s.commit_log,
            "topic table and DataVersion (BRK-2, BRK-13, BRK-17, BRK-21, BRK-23)": (dict(s.topics), s.topics_version),
            "subscription groups and DataVersion (BRK-20, BRK-21)": (dict(s.groups), s.groups_version),
            "registered clients (BRK-13, BRK-15, BRK-29)": spec_clients(s),
            "committed offsets (BRK-30)": dict(s.offsets),
            "settings (BRK-24)": s.settings,
            "configuration DataVersion (BRK-24)": s.config_version,
            "stats totals (BRK-27)": spec_stats_totals(s),
        }

    def project_system(self) -> dict[str, Any]:
        b = self.broker
        return {
            "stored messages per queue (BRK-5, BRK-6, BRK-7, BRK-8, BRK-17, BRK-22)": stored_messages(b),
            "commit log end (BRK-6)": b.store.commit_log_max_offset(),
            "topic table and DataVersion (BRK-2, BRK-13, BRK-17, BRK-21, BRK-23)": topic_table(b),
            "subscription groups and DataVersion (BRK-20, BRK-21)": group_table(b),
            "registered clients (BRK-13, BRK-15, BRK-29)": clients(b, self._connection),
            "committed offsets (BRK-30)": offsets(b),
            "settings (BRK-24)": settings(b, self.base),
            "configuration DataVersion (BRK-24)": (b.runtime_admin.version_counter, b.runtime_admin.version_ms),
            "stats totals (BRK-27)": stats_totals(b),
        }


test_broker_requests_machine = machine_test(BrokerRequestsMachine, 250, 40)


MUTANT_EXAMPLES, MUTANT_STEPS = 300, 40

# ---------------------------------------------------------------------------------------------------- mutants
# Each breaks one rule of the implementation; the machine must find a failing program naming the clause (slow).
MUTANTS = {
    "created_with_the_default_topic_queues": (
        topics_module, "queues = max(0, min(client_default_queue_nums, default.write_queue_nums))",
        "queues = max(0, default.write_queue_nums)", ("BRK-2",)),
    "group_created_whatever_the_switch": (
        groups_module, "if not (self._config.auto_create_subscription_group or is_sys_consumer_group(group)):",
        "if not (True or is_sys_consumer_group(group)):", ("BRK-20",)),
    "deleted_topic_keeps_its_queues": (
        admin_topics_module, "        broker.topics.delete(topic)\n        broker.store.clean_unused_topics(",
        "        broker.topics.delete(topic)\n        set(", ("BRK-17",)),
    "index_end_excluded": (
        index_module, "if entry.key_hash == key_hash and begin <= time_read <= end:",
        "if entry.key_hash == key_hash and begin <= time_read < end:", ("BRK-12",)),
    "unique_key_query_keeps_max_num": (
        query_module, "        max_num = DEFAULT_QUERY_MAX_NUM", "        max_num = max_num", ("BRK-12",)),
    "put_counted_without_times": (
        stats_module, "self.add(TOPIC_PUT_NUMS, topic, count, 1)", "self.add(TOPIC_PUT_NUMS, topic, count, 0)",
        ("BRK-27",)),
    "config_version_stays": (
        runtime_module, "        self.version_counter += 1", "        self.version_counter += 0", ("BRK-24",)),
    "retry_topic_with_one_queue": (
        broker_module, "self.topics.create_retry_topic(consumer.group_name, group_config.retry_queue_nums,",
        "self.topics.create_retry_topic(consumer.group_name, 1,", ("BRK-13",)),
    "correction_keeps_the_filtered_offsets": (
        maintenance_module, "for key in [k for k in table if k.split(\"@\")[1:2] == [group]]:",
        "for key in [k for k in table if k.split(\"@\")[1:2] == [group + \"x\"]]:", ("BRK-30",)),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name: str) -> None:
    module, old, new, clauses = MUTANTS[name]
    variant_caught(BrokerRequestsMachine, module, old, new, clauses, examples=MUTANT_EXAMPLES, steps=MUTANT_STEPS)


# ------------------------------------------------------------------------------------------ configuration variants
# For each dimension the machine draws, a broken copy that only a non-default value of it reveals: the machine catches
# it, and the machine with that dimension pinned to its default does not (slow: two searches each).
VARIANTS = {
    "broker.maxMessageSize": (
        broker_module, "if sum(len(m.body) for m in msgs) > self.config.max_message_size:",
        "if sum(len(m.body) for m in msgs) > 4 * 1024 * 1024:", ("BRK-5",)),
    "broker.autoCreateTopicEnable": (
        topics_module, "        if config.auto_create_topic_enable:\n            self._builtin(AUTO_CREATE_TOPIC_KEY",
        "        if True:\n            self._builtin(AUTO_CREATE_TOPIC_KEY", ("BRK-2", "BRK-21")),
    "producer.compressMsgBodyOverHowmuch": (
        producer_module, "if out.batch is None and len(body) >= self.config.compress_msg_body_over_bytes:",
        "if out.batch is None and len(body) >= 4096:", ("BRK-22",)),
    "client.unitMode": (
        broker_module, "_TOPIC_SYS_FLAG_UNIT_SUB if consumer.unit_mode else 0)", "0)", ("BRK-23",)),
}
def test_every_dimension_has_a_variant() -> None:
    assert set(VARIANTS) == set(BrokerRequestsMachine.DIMENSIONS)


@pytest.mark.slow
@pytest.mark.parametrize("dimension", sorted(VARIANTS))
def test_variant_needs_a_non_default_configuration(dimension: str) -> None:
    module, old, new, clauses = VARIANTS[dimension]
    variant_needs(BrokerRequestsMachine, dimension, module, old, new, clauses, examples=MUTANT_EXAMPLES,
                  steps=MUTANT_STEPS)
