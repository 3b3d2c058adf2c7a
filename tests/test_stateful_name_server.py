"""Lockstep: the name_server spec (NS-*) drives the reference implementation's name servers.

Each run draws its configuration (``tests/dimensions.py``): 1-3 broker names, a slave per master or none, one or
two name servers, TBW102 or not (autoCreateTopicEnable), the test topics' queue counts and permission, and whether
an operator wipes a broker's write permission at the name servers. The brokers of a ``Cluster`` start, stop, crash,
restart and are cut off from a name server (driven through the spec's world: ``BrokerStarts``, ``BrokerStops``,
``BrokerCutOff``, ``TopicCreated``), name servers stop and start (``NamesrvStops``, ``NamesrvStarts``), and time
passes past the 120 s expiry (``TimePasses``). A raw client registers a fake broker group (``broker-x`` in its own
cluster, whose name is not ASCII; every body form: JSON, compressed, pre-V3_0_11, none, a bad CRC, bodies that do not
decode, the implementation's own encoder too; an address under another id), unregisters it, drops its connection,
keeps it alive with QUERY_DATA_VERSION, and sends the admin requests (WIPE/ADD_WRITE_PERM_OF_BROKER,
DELETE_TOPIC_IN_NAMESRV, the KV config, QUERY_DATA_VERSION, UPDATE_NAMESRV_CONFIG and mqadmin's order conf, a code no
name server serves).

What each name server sees (every request with its answer, every closed channel, every scan) is tapped and observed
as the spec's actions, in order, time passing between them: each must be enabled where the spec is (a registration
from a broker of the cluster carries its topic table, NS-17; no scan early or late, NS-8; no broker late to
register, NS-17), and each answer must be the spec's. After every step a client's view of every name server is
compared with the spec's: the route of each watched topic in both JSON forms, the cluster info, the topic lists, the
KV tables, the configuration, and, from the first name server up, the queues a client sends to and reads from.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from lockstep import LockstepMachine, machine_test, variant_needs
from namesrv_tap import (
    CONFIG_UPDATES,
    DOWNTIMES,
    FAKE_CLUSTER,
    FAKE_HOST,
    FAKE_NAME,
    FILTERS,
    FORM_ASKS,
    FORMS,
    GRACE_MS,
    KV_KEYS,
    KV_NAMESPACES,
    KV_VALUES,
    NS_T,
    PROPERTY_STYLES,
    RAW_TOPIC,
    READS,
    TOPIC,
    TOPIC2,
    WAITS,
    WATCHED,
    Tap,
    Versions,
    body_crc,
    property_line,
    raw_body,
    read_route,
    read_server,
    register_action,
    route_view,
    spec_route_view,
    spec_server,
    unregister_action,
)

from rocketspec.refimpl import Cluster
from rocketspec.refimpl import namesrv as namesrv_module
from rocketspec.refimpl import namesrv_admin as admin_module
from rocketspec.refimpl import route as route_module
from rocketspec.refimpl.broker import broker as broker_module
from rocketspec.refimpl.broker import topics as topics_module
from rocketspec.refimpl.cluster import namesrv_node
from rocketspec.refimpl.remoting import RemotingCommand, RemotingConnectError
from rocketspec.spec import name_server as ns
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    DEFAULT_CLUSTER_NAME,
    MASTER_ID,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    NAMESRV_SCAN_INITIAL_DELAY_MS,
    VERSION_V4_9_8,
    RequestCode,
    ResponseCode,
    split_addr,
)

# Parts of the projection, each with the clauses that decide it.
ROUTES = "routes (NS-1, NS-2, NS-3, NS-4, NS-6, NS-7, NS-8, NS-9, NS-12, NS-17)"
CLUSTER_INFO = "cluster info (NS-1, NS-4, NS-5)"
LISTS = "topic lists (NS-6, NS-14)"
KV = "KV config (NS-7)"
CONFIG = "configuration (NS-15, NS-18)"
SYSTEM_ADDR = "system topic list's brokerAddr (NS-14)"
FORMS_PART = "route body forms (NS-11)"
DOWN = "stopped (NS-18)"
CLIENT = "client view of the first name server up (NS-16, NS-18, SEND-22)"


class NameServerMachine(LockstepMachine):
    """The name servers of a cluster, configured as the run draws, stepped with the spec's name server machine
    request by request (NS-1..18)."""

    TABLE = ns.TRANSITIONS
    DIMENSIONS = ("topology.brokers", "topology.slaves", "topology.nameServers", "broker.wipeWritePerm",
                  "broker.autoCreateTopicEnable", "topic.perm", "topic.queueNums")
    DRIVEN = (ns.TimePasses, ns.NamesrvStops, ns.NamesrvStarts, ns.BrokerStarts, ns.BrokerStops, ns.TopicCreated,
              ns.BrokerCutOff)
    OBSERVED = (ns.RegisterBroker, ns.UnregisterBroker, ns.ChannelClosed, ns.ScanNotActiveBrokers, ns.WritePerm,
                ns.DeleteTopic, ns.PutKV, ns.DeleteKV, ns.QueryDataVersion, ns.UpdateConfig)
    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None

    # ------------------------------------------------------------------------------------------------ setup
    def setup(self, config: dict[str, Any], data: st.DataObject) -> None:
        """A cluster as configured and a raw client; the spec starts with the name servers empty and every broker
        of the cluster starting; the test topic is created on every master, and, with broker.wipeWritePerm, the
        first broker's write permission is wiped at every name server."""
        self.read_nums, self.write_nums = config["topic.queueNums"]
        self.perm = config["topic.perm"]
        self.auto_create = config["broker.autoCreateTopicEnable"]
        cluster = Cluster(brokers=config["topology.brokers"], name_servers=config["topology.nameServers"],
                          slaves=config["topology.slaves"], clock="simulated", wire_codec="json", seed=5,
                          keep_events=False, auto_create_topic_enable=self.auto_create)
        self.cluster = cluster
        self.tap = Tap(cluster)
        self.versions = Versions()
        self.spec_ms = self.start_ms = cluster.now_ms()
        self.channels: dict[tuple[int, str], Any] = {}  # (server, address) -> the channel it last registered through
        self.raw: dict[int, Any] = {}  # opaque -> the spec action a raw request is
        self.sent: list[tuple[Any, int, bool]] = []  # (future, server, whether the spec had it up)
        self.last_pair: dict[str, tuple[int, int]] = {}
        self.cuts: dict[tuple[str, int], Any] = {}
        self.previous: dict[str, Any] = {}
        self.previous_spec: dict[str, Any] = {}
        world = [ns.new_broker(name, MASTER_ID, b.addr, b.config.cluster_name, b.config.ha_addr,
                               len(cluster.namesrvs), self.auto_create) for name, b in cluster.brokers.items()]
        world += [ns.new_broker(name, bid, b.addr, b.config.cluster_name, b.config.ha_addr, len(cluster.namesrvs),
                                self.auto_create) for (name, bid), b in cluster.slaves.items()]
        servers = tuple(ns.Tables(port=split_addr(addr)[1], config=ns.boot_config(split_addr(addr)[1]),
                                  scan_in_ms=NAMESRV_SCAN_INITIAL_DELAY_MS) for addr in cluster.namesrv_addrs)
        self.begin(ns.NamesrvState(servers, tuple(world), timed=True, grace_ms=GRACE_MS))
        for broker in world:
            self.drive(ns.BrokerStarts(broker.name, broker.broker_id), "started with the cluster")
        self.network = cluster.network
        self.fakes = [(bid, f"{FAKE_HOST}:{20911 + 10 * bid}", cluster.network.client(f"raw-{bid}"))
                      for bid in range(config["topology.slaves"] + 1)]
        self.admin = cluster.network.client("admin")
        for name in list(cluster.brokers):
            self._create(name, TOPIC)
        if config["broker.wipeWritePerm"]:
            for server in range(len(cluster.namesrvs)):
                self._send(self.admin, server, ns.WritePerm("broker-a", True, server),
                           RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
        self._advance(10)

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    # ------------------------------------------------------------------------------------------------ replay
    def _advance(self, ms: int) -> None:
        assert self.cluster is not None
        self.cluster.advance(ms)
        self._sync()

    def _to(self, ms: int) -> None:
        if ms > self.spec_ms:
            self.drive(ns.TimePasses(ms - self.spec_ms), f"to +{ms - self.start_ms} ms")
            self.spec_ms = ms

    def _sync(self) -> None:
        """Observe, in order, what the name servers saw, time passing between; then time up to now."""
        assert self.cluster is not None
        for seen in self.tap.take():
            self._to(seen.ms)
            if seen.kind == "scan":
                self.observe(ns.ScanNotActiveBrokers(seen.server), "the scan timer")
            elif seen.kind == "closed":
                own = any(channel is seen.channel for channel in self.tap.closed_by_server)
                for key in [k for k, channel in self.channels.items() if k[0] == seen.server
                            and channel is seen.channel]:
                    del self.channels[key]
                    if not own:  # closed by the name server itself (its scan): not an event of the world
                        self.observe(ns.ChannelClosed(key[1], seen.server), "its channel closed")
            else:
                self._request(seen.server, seen.request, seen.response, seen.channel)
        self._to(self.cluster.now_ms())
        for future, server, up in [s for s in self.sent if s[0].done()]:
            self.sent.remove((future, server, up))
            refused = isinstance(future.exception(), RemotingConnectError)
            if refused == up:
                self.fail(f"NS-18: a request to name server {server} {'failed to connect' if refused else 'went '}"
                          f"{'' if refused else 'through'} while the spec has it {'up' if up else 'stopped'}")

    def _request(self, server: int, request: RemotingCommand | None, response: RemotingCommand | None,
                 channel: Any) -> None:
        assert request is not None
        action = self.raw.pop(request.opaque, None)
        if action == "unserved":
            if response is not None or ns.namesrv_answers(request.code):
                self.fail(f"NS-10: code {request.code} answered {response!r}")
            return
        if action is None:
            if request.code == RequestCode.REGISTER_BROKER:
                action = register_action(server, request, self.versions)
            elif request.code == RequestCode.UNREGISTER_BROKER:
                action = unregister_action(server, request)
            else:
                self.fail(f"an unexpected request at name server {server}: {request!r}")
        before = self.state
        self.observe(action, f"at name server {server}")
        if response is None:
            if not request.is_oneway:
                self.fail(f"no answer to {action!r}")
            return
        expected = ns.answer(before, action)
        got = self._answer(action, response)
        # A SYSTEM_ERROR's remark is the exception's description: it contains the spec's remark.
        if expected.code is ResponseCode.SYSTEM_ERROR:
            remark_ok = expected.remark is None or expected.remark in (got.remark or "")
        else:
            remark_ok = got.remark == expected.remark
        if (got.code, got.fields, got.body) != (expected.code, expected.fields, expected.body) or not remark_ok:
            clauses = ", ".join(self.TABLE.clauses_of(action))
            self.fail(f"{clauses}: {action!r} answered {got!r}, the spec {expected!r}")
        if isinstance(action, ns.RegisterBroker) and response.code == ResponseCode.SUCCESS:
            addr = ns.registration_addr(action)
            self.channels[(server, addr)] = channel
            self.last_pair[addr] = self.versions.pair(action.version)

    def _answer(self, action: Any, response: RemotingCommand) -> ns.Answer:
        body: object = None
        if isinstance(action, ns.RegisterBroker) and response.body is not None:
            body = frozenset(json.loads(response.body).get("table", {}).items())
        elif isinstance(action, ns.QueryDataVersion) and response.body is not None:
            body = self.versions.of_json(json.loads(response.body))
        return ns.Answer(ResponseCode(response.code), response.remark, frozenset(response.ext_fields.items()), body)

    # ------------------------------------------------------------------------------------------------ raw client
    def _send(self, client: Any, server: int, action: Any, code: int, fields: dict[str, Any],
              body: bytes | None = None, version: int = VERSION_V4_9_8) -> None:
        assert self.cluster is not None
        request = RemotingCommand.request(code, fields, body, version=version)
        self.raw[request.opaque] = action
        future = client.invoke(self.cluster.namesrv_addrs[server], request, 3000)
        self.sent.append((future, server, self.state.servers[server].up))

    def _server(self, index: int) -> int:
        return index % len(self.state.servers)

    @precondition(lambda self: self.cluster is not None)
    @rule(fake=st.integers(0, 1), switch=st.booleans(), version=st.integers(1, 3), form=st.sampled_from(FORMS),
          filters=st.sampled_from(FILTERS), flag=st.integers(0, 3), server=st.integers(0, 1))
    def raw_register(self, fake: int, switch: bool, version: int, form: str, filters: tuple[str, ...], flag: int,
                     server: int) -> None:
        """A raw REGISTER_BROKER of the fake broker group, in one of the body forms, an address under its own id or
        the other one (a slave switched to master) (NS-1, NS-12)."""
        own, addr, client = self.fakes[fake % len(self.fakes)]
        bid = (own + switch) % len(self.fakes)
        server = self._server(server)
        conf = ns.TopicConf(RAW_TOPIC, self.read_nums, self.write_nums, self.perm, flag)
        raw = raw_body(form, 1000 + version, version, conf, filters)
        body, ts, counter = raw.body, raw.timestamp, raw.counter
        # A bad CRC is one off either way (an odd version: above).
        crc = (body_crc(body) + ((1 if version % 2 else -1) if form == "bad-crc" else 0)) % 2**31
        action = ns.RegisterBroker(FAKE_NAME, bid, self.versions.of(ts, counter), server, addr, FAKE_CLUSTER,
                                   raw.confs, f"{FAKE_HOST}:{20912 + 10 * own}", raw.listed, form != "bad-crc",
                                   raw.parses)
        fields = {"brokerName": FAKE_NAME, "brokerAddr": addr, "clusterName": FAKE_CLUSTER,
                  "haServerAddr": action.ha_addr, "brokerId": bid, "compressed": raw.compressed,
                  "bodyCrc32": crc if body is not None else 0}
        self._send(client, server, action, RequestCode.REGISTER_BROKER, fields, body, raw.version)
        self._advance(5)

    @precondition(lambda self: self.cluster is not None)
    @rule(fake=st.integers(0, 1), server=st.integers(0, 1))
    def raw_unregister(self, fake: int, server: int) -> None:
        """A raw UNREGISTER_BROKER of a fake broker (NS-4)."""
        bid, addr, client = self.fakes[fake % len(self.fakes)]
        server = self._server(server)
        self._send(client, server, ns.UnregisterBroker(FAKE_NAME, bid, server, addr, FAKE_CLUSTER),
                   RequestCode.UNREGISTER_BROKER,
                   {"brokerName": FAKE_NAME, "brokerAddr": addr, "clusterName": FAKE_CLUSTER, "brokerId": bid})
        self._advance(5)

    @precondition(lambda self: self.cluster is not None)
    @rule(fake=st.integers(0, 1), form=st.sampled_from(("json", "none", "compressed", "old")), same=st.booleans(),
          rounds=st.integers(2, 4), server=st.integers(0, 1))
    def raw_keep_alive(self, fake: int, form: str, same: bool, rounds: int, server: int) -> None:
        """A fake broker registers, then keeps itself alive with QUERY_DATA_VERSION every 61 s, as a 4.9.8 broker
        with forceRegister off does: an unchanged version refreshes it, another does not, and it expires (NS-8,
        NS-13)."""
        _own, addr, _client = self.fakes[fake % len(self.fakes)]
        self.raw_register(fake, False, 1, form, (), 0, server)
        server = self._server(server)
        pair = self.last_pair.get(addr, (0, 0)) if same else (7, 7)
        for _ in range(rounds):
            self._send(self.admin, server, ns.QueryDataVersion(addr, self.versions.of(*pair), server),
                       RequestCode.QUERY_DATA_VERSION,
                       {"brokerAddr": addr, "brokerName": FAKE_NAME, "clusterName": FAKE_CLUSTER, "brokerId": 0},
                       json.dumps({"timestamp": pair[0], "counter": pair[1]}).encode())
            self._advance(61_000)
            self.compare(f"{addr} kept alive")

    @precondition(lambda self: self.cluster is not None)
    @rule(fake=st.integers(0, 1))
    def raw_disconnect(self, fake: int) -> None:
        """A fake broker's connections close (NS-4)."""
        self.fakes[fake % len(self.fakes)][2].close()
        self._advance(1)

    @precondition(lambda self: self.cluster is not None)
    @rule(which=st.integers(0, 7), same=st.sampled_from((True, False, None)), server=st.integers(0, 1))
    def raw_query_data_version(self, which: int, same: bool | None, server: int) -> None:
        """QUERY_DATA_VERSION for a broker's address (a fake one for even ``which``), with its last registered
        DataVersion, another, or a body that does not decode (None) (NS-13)."""
        addrs = sorted(b.addr for b in self.state.brokers) if which % 2 else [addr for _, addr, _ in self.fakes]
        addr = addrs[which // 2 % len(addrs)]
        pair = self.last_pair.get(addr, (0, 0)) if same else (7, 7)
        server = self._server(server)
        body = json.dumps({"timestamp": pair[0], "counter": pair[1]}).encode() if same is not None else b"{x"
        self._send(self.admin, server, ns.QueryDataVersion(addr, self.versions.of(*pair), server, same is not None),
                   RequestCode.QUERY_DATA_VERSION,
                   {"brokerAddr": addr, "brokerName": FAKE_NAME, "clusterName": FAKE_CLUSTER, "brokerId": 0}, body)
        self._advance(5)

    @precondition(lambda self: self.cluster is not None and self.config["broker.wipeWritePerm"])
    @rule(name=st.sampled_from(("broker-a", "broker-b", FAKE_NAME)), wipe=st.booleans(), server=st.integers(0, 1))
    def raw_write_perm(self, name: str, wipe: bool, server: int) -> None:
        """WIPE_WRITE_PERM_OF_BROKER / ADD_WRITE_PERM_OF_BROKER, as mqadmin wipeWritePerm / addWritePerm (NS-9)."""
        server = self._server(server)
        code = RequestCode.WIPE_WRITE_PERM_OF_BROKER if wipe else RequestCode.ADD_WRITE_PERM_OF_BROKER
        self._send(self.admin, server, ns.WritePerm(name, wipe, server), code, {"brokerName": name})
        self._advance(5)

    @precondition(lambda self: self.cluster is not None)
    @rule(topic=st.sampled_from((TOPIC, RAW_TOPIC, AUTO_CREATE_TOPIC_KEY, None)),
          cluster=st.sampled_from((None, DEFAULT_CLUSTER_NAME, FAKE_CLUSTER)), server=st.integers(0, 1))
    def raw_delete_topic(self, topic: str | None, cluster: str | None, server: int) -> None:
        """DELETE_TOPIC_IN_NAMESRV, with or without a cluster (NS-6)."""
        server = self._server(server)
        self._send(self.admin, server, ns.DeleteTopic(topic, server, cluster), RequestCode.DELETE_TOPIC_IN_NAMESRV,
                   {"topic": topic, "clusterName": cluster})
        self._advance(5)

    @precondition(lambda self: self.cluster is not None)
    @rule(namespace=st.sampled_from(KV_NAMESPACES), key=st.sampled_from(KV_KEYS), value=st.sampled_from(KV_VALUES),
          server=st.integers(0, 1))
    def raw_put_kv(self, namespace: str | None, key: str | None, value: str | None, server: int) -> None:
        """PUT_KV_CONFIG, fields missing too (NS-7)."""
        server = self._server(server)
        self._send(self.admin, server, ns.PutKV(namespace, key, value, server), RequestCode.PUT_KV_CONFIG,
                   {"namespace": namespace, "key": key, "value": value})
        self._advance(5)

    @precondition(lambda self: self.cluster is not None)
    @rule(namespace=st.sampled_from(KV_NAMESPACES), key=st.sampled_from(KV_KEYS), server=st.integers(0, 1))
    def raw_delete_kv(self, namespace: str | None, key: str | None, server: int) -> None:
        """DELETE_KV_CONFIG (NS-7)."""
        server = self._server(server)
        self._send(self.admin, server, ns.DeleteKV(namespace, key, server), RequestCode.DELETE_KV_CONFIG,
                   {"namespace": namespace, "key": key})
        self._advance(5)

    @precondition(lambda self: self.cluster is not None)
    @rule(props=st.sampled_from(CONFIG_UPDATES), style=st.sampled_from(PROPERTY_STYLES), server=st.integers(0, 1))
    def raw_update_config(self, props: tuple[tuple[str, str], ...], style: str, server: int) -> None:
        """UPDATE_NAMESRV_CONFIG, as mqadmin updateNamesrvConfig, its body in one of the forms Properties.load
        reads (NS-15)."""
        server = self._server(server)
        body = "".join(property_line(style, k, v) for k, v in props).encode()
        self._send(self.admin, server, ns.UpdateConfig(props, server), RequestCode.UPDATE_NAMESRV_CONFIG, {}, body)
        self._advance(5)

    @precondition(lambda self: self.cluster is not None)
    @rule(value=st.sampled_from(KV_VALUES[:2]), server=st.integers(0, 1))
    def raw_order_topic(self, value: str, server: int) -> None:
        """mqadmin updateOrderConf: orderMessageEnable on and the test topic's ORDER_TOPIC_CONFIG entry, its
        routes' orderTopicConf (NS-7, NS-15)."""
        server = self._server(server)
        props = (("orderMessageEnable", "true"),)
        self._send(self.admin, server, ns.UpdateConfig(props, server), RequestCode.UPDATE_NAMESRV_CONFIG, {},
                   b"orderMessageEnable=true\n")
        self._send(self.admin, server, ns.PutKV(NAMESPACE_ORDER_TOPIC_CONFIG, TOPIC, value, server),
                   RequestCode.PUT_KV_CONFIG, {"namespace": NAMESPACE_ORDER_TOPIC_CONFIG, "key": TOPIC, "value": value})
        self._advance(5)

    @precondition(lambda self: self.cluster is not None)
    @rule(code=st.sampled_from((RequestCode.SEND_MESSAGE, RequestCode.PULL_MESSAGE, 9999)), server=st.integers(0, 1))
    def raw_unserved(self, code: int, server: int) -> None:
        """A request no name server serves: never answered (NS-10)."""
        assert self.cluster is not None
        server = self._server(server)
        request = RemotingCommand.request(code, {"topic": TOPIC})
        self.raw[request.opaque] = "unserved"
        self.admin.invoke(self.cluster.namesrv_addrs[server], request, 100)
        self._advance(5)

    # ------------------------------------------------------------------------------------------------ the world
    @precondition(lambda self: self.cluster is not None)
    @rule(ms=st.sampled_from(WAITS))
    def time_passes(self, ms: int) -> None:
        """Time passes: brokers register every 30 s, the name servers scan every 10 s (NS-8, NS-17)."""
        self._advance(ms)

    @precondition(lambda self: self.cluster is not None)
    @rule(index=st.integers(0, 5), crash=st.booleans())
    def broker_stops_or_starts(self, index: int, crash: bool) -> None:
        """A broker of the cluster stops (cleanly: UNREGISTER_BROKER; or crashes) or starts again (NS-4, NS-17)."""
        assert self.cluster is not None
        broker = self.state.brokers[index % len(self.state.brokers)]
        if broker.running:
            self.drive(ns.BrokerStops(broker.name, broker.broker_id, crash))
            if broker.broker_id == MASTER_ID:
                self.cluster.stop_broker(broker.name, crash=crash)
            else:
                self.cluster.stop_slave(broker.name, broker.broker_id, crash=crash)
        else:
            self.drive(ns.BrokerStarts(broker.name, broker.broker_id))
            if broker.broker_id == MASTER_ID:
                self.cluster.start_broker(broker.name)
            else:
                self.cluster.start_slave(broker.name, broker.broker_id)
        self._advance(1)

    def _create(self, name: str, topic: str) -> None:
        assert self.cluster is not None
        self.drive(ns.TopicCreated(name, ns.TopicConf(topic, self.read_nums, self.write_nums, self.perm)))
        self.cluster.create_topic(topic, read_queues=self.read_nums, write_queues=self.write_nums, perm=self.perm,
                                  brokers=[name])
        self._sync()

    @precondition(lambda self: self.cluster is not None)
    @rule(index=st.integers(0, 2), second=st.booleans())
    def create_topic(self, index: int, second: bool) -> None:
        """A topic is created (or updated) on a running master: a new data version, registered at once (NS-17)."""
        assert self.cluster is not None
        names = sorted(self.cluster.brokers)
        if names:
            self._create(names[index % len(names)], TOPIC2 if second else TOPIC)

    @precondition(lambda self: self.cluster is not None)
    @rule(index=st.integers(0, 2), server=st.integers(0, 1))
    def broker_cut_off(self, index: int, server: int) -> None:
        """A broker group's way to a name server is cut (every request lost) or restored (NS-8, NS-17)."""
        assert self.cluster is not None
        names = sorted({b.name for b in self.state.brokers})
        name, server = names[index % len(names)], self._server(server)
        cut = (name, server) not in self.cuts
        if cut:
            self.cuts[(name, server)] = self.cluster.faults.drop(namesrv_node(server), client=name)
        else:
            self.cluster.faults.remove(self.cuts.pop((name, server)))
        for broker in self.state.brokers:
            if broker.name == name:
                self.drive(ns.BrokerCutOff(name, broker.broker_id, server, cut))
        self._sync()

    @precondition(lambda self: self.cluster is not None)
    @rule(server=st.integers(0, 1), downtime=st.sampled_from(DOWNTIMES), ask=st.booleans())
    def namesrv_restarts(self, server: int, downtime: int, ask: bool) -> None:
        """A name server stops (its route tables go, its KV config stays; a request to it fails to connect; clients
        read from another one) and, ``downtime`` later, starts again (NS-18)."""
        assert self.cluster is not None
        server = self._server(server)
        self.drive(ns.NamesrvStops(server))
        self.cluster.stop_namesrv(server)
        self._sync()
        if ask:
            self._send(self.admin, server, ns.PutKV(NS_T, "k", "v1", server), RequestCode.PUT_KV_CONFIG,
                       {"namespace": NS_T, "key": "k", "value": "v1"})
        self._advance(downtime)
        self.compare("while it is stopped")
        self.drive(ns.NamesrvStarts(server))
        self.cluster.start_namesrv(server)
        self._sync()

    # ------------------------------------------------------------------------------------------------ projections
    def project_spec(self) -> dict[str, Any]:
        """Per name server: what a client reads of it (NS-1..15), or that it is stopped (NS-18); and the queues a
        client of all of them sends to and reads from (NS-16, SEND-22)."""
        state = self.state
        parts: dict[str, Any] = {}
        for i, tables in enumerate(state.servers):
            if not tables.up:
                parts[f"name server {i} {DOWN}"] = "stopped"
                continue
            read = spec_server(state, i, READS)
            parts.update(self._parts(i, read))
            parts[f"name server {i} {SYSTEM_ADDR}"] = "an address of a broker name"
            parts[f"name server {i} {FORMS_PART}"] = self._spec_forms(tables)
        parts[CLIENT] = self._spec_client(state)
        return parts

    def project_system(self) -> dict[str, Any]:
        assert self.cluster is not None
        parts: dict[str, Any] = {}
        for i, addr in enumerate(self.cluster.namesrv_addrs):
            if self.network.node_of(addr) is None:
                parts[f"name server {i} {DOWN}"] = "stopped"
                continue
            read, _bodies = read_server(self.tap.handles[i], READS)
            parts.update(self._parts(i, read))
            _topics, allowed = ns.system_topics(self.state.servers[i]) if self.state.servers[i].up else (0, set())
            first = read["systemBrokerAddr"]
            parts[f"name server {i} {SYSTEM_ADDR}"] = "an address of a broker name" if (
                first in allowed or (first is None and not allowed)) else first
            parts[f"name server {i} {FORMS_PART}"] = self._forms(i)
        parts[CLIENT] = self._client()
        return parts

    @staticmethod
    def _parts(i: int, read: dict[str, Any]) -> dict[str, Any]:
        return {f"name server {i} {ROUTES}": read["routes"], f"name server {i} {CLUSTER_INFO}": read["cluster"],
                f"name server {i} {LISTS}": read["lists"], f"name server {i} {KV}": read["kv"],
                f"name server {i} {CONFIG}": read["config"]}

    def _spec_forms(self, tables: ns.Tables) -> Any:
        forms: dict[str, Any] = {}
        for topic in (TOPIC, RAW_TOPIC):
            answer = ns.route(tables, topic)
            if answer.code is not ResponseCode.SUCCESS:
                forms[topic] = None
                continue
            plain = repr(spec_route_view(answer)).isascii()
            forms[topic] = tuple((standard, standard or plain) for standard in
                                 (ns.route_body_standard(version, accept) for version, accept in FORM_ASKS))
        return forms

    def _forms(self, i: int) -> Any:
        """The test topic's and the fake broker's topic's routes (its cluster's name is not ASCII) asked by clients
        of 4.9.8, 4.9.4 and 4.9.0 (accepting standard JSON only or not): whether each body is standard JSON (quoted
        broker ids) and whether it is ASCII (standard JSON escapes the rest); all must carry the same route."""
        forms: dict[str, Any] = {}
        for topic in (TOPIC, RAW_TOPIC):
            bodies = [read_route(self.tap.handles[i], topic, version, accept) for version, accept in FORM_ASKS]
            if bodies[0][0] != ResponseCode.SUCCESS:
                forms[topic] = None
                continue
            routes = {json.dumps(route_module.TopicRouteData.from_json(body or b"").to_dict(), sort_keys=True)
                      for _code, _remark, body in bodies}
            if len(routes) != 1:
                self.fail(f"NS-11: the route bodies of the JSON forms carry different routes: {bodies}")
            forms[topic] = tuple((b'"brokerAddrs":{"' in (body or b""), (body or b"").isascii())
                                 for _code, _remark, body in bodies)
        return forms

    def _spec_client(self, state: ns.NamesrvState) -> Any:
        server = ns.reachable_server(state)
        if server is None:
            return "no name server up"
        view: dict[str, Any] = {}
        for topic in WATCHED:
            answer = ns.route(state, topic, server=server)
            if answer.code is not ResponseCode.SUCCESS:
                view[topic] = None
                continue
            current = spec_route_view(answer)
            changed = self.previous_spec.get(topic) != current
            self.previous_spec[topic] = current
            view[topic] = (current, list(ns.publish_queues(answer, topic)), sorted(ns.subscribe_queues(answer, topic)),
                           bool(answer.order_topic_conf), changed)
        return view

    def _client(self) -> Any:
        assert self.cluster is not None
        server = next((i for i, addr in enumerate(self.cluster.namesrv_addrs) if self.network.node_of(addr)), None)
        if server is None:
            return "no name server up"
        view: dict[str, Any] = {}
        for topic in WATCHED:
            code, _remark, body = read_route(self.tap.handles[server], topic)
            if code != ResponseCode.SUCCESS:
                view[topic] = None
                continue
            route = route_module.TopicRouteData.from_json(body or b"")
            changed = route_module.route_changed(self.previous.get(topic), route)
            self.previous[topic] = route
            view[topic] = (route_view(route.to_dict()), route_module.publish_queues(route, topic),
                           sorted(route_module.subscribe_queues(route, topic)), route_module.is_order_topic(route),
                           changed)
        return view


test_name_server_machine = machine_test(NameServerMachine, 100, 40)


# ------------------------------------------------------------------------------------------ configuration variants
MUTANT_EXAMPLES, MUTANT_STEPS = 100, 30
# For each dimension the machine draws, a broken copy that only a non-default value of it reveals: the machine catches
# it, and the machine with that dimension pinned to its default does not (slow: two searches each).
VARIANTS = {
    # Routes keep only the first broker name's broker data: only a topic on two broker names shows it.
    "topology.brokers": (namesrv_module, "        for name in sorted(queue_datas):\n",
                         "        for name in sorted(queue_datas)[:1]:\n", ("routes", "NS-2", "SEND-22")),
    # A slave is answered its own address as its master's.
    "topology.slaves": (namesrv_module, "            master = broker_data.broker_addrs.get(MASTER_ID)",
                        "            master = broker_data.broker_addrs.get(broker_id)", ("NS-1",)),
    # A broker registers with the first name server of its namesrvAddr only.
    "topology.nameServers": (broker_module, 'return [a for a in (self.namesrv_addr or "").split(";") if a]',
                             'return [a for a in (self.namesrv_addr or "").split(";") if a][:1]', ("NS-17",)),
    # WIPE_WRITE_PERM_OF_BROKER clears the read bit instead.
    "broker.wipeWritePerm": (admin_module, "queue_data.perm = queue_data.perm & ~PERM_WRITE if wipe",
                             "queue_data.perm = queue_data.perm & ~PERM_READ if wipe", ("routes", "NS-9")),
    # TBW102 is created whatever autoCreateTopicEnable says.
    "broker.autoCreateTopicEnable": (topics_module,
                                     "        if config.auto_create_topic_enable:\n            self._builtin(",
                                     "        if True:\n            self._builtin(", ("NS-17",)),
    # A client reads any queue data with a permission, write-only ones too.
    "topic.perm": (route_module, "        if is_readable(qd.perm)\n", "        if qd.perm\n", ("NS-16",)),
    # A registration's queue data takes the write queue count for the read one and the other way round.
    "topic.queueNums": (namesrv_module, "QueueData(broker_name, config.read_queue_nums, config.write_queue_nums,",
                        "QueueData(broker_name, config.read_queue_nums, config.read_queue_nums,", ("routes", "NS-1")),
}


def test_every_dimension_has_a_variant() -> None:
    assert set(VARIANTS) == set(NameServerMachine.DIMENSIONS)


@pytest.mark.slow
@pytest.mark.parametrize("dimension", sorted(VARIANTS))
def test_variant_needs_a_non_default_configuration(dimension: str) -> None:
    module, old, new, clauses = VARIANTS[dimension]
    variant_needs(NameServerMachine, dimension, module, old, new, clauses, examples=MUTANT_EXAMPLES,
                  steps=MUTANT_STEPS)
