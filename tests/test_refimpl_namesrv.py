"""Name server and route JSON of the reference implementation (RouteInfoManager, DefaultRequestProcessor)."""

from __future__ import annotations

import json
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketspec.refimpl.events import EventLog
from rocketspec.refimpl.namesrv import NameServer
from rocketspec.refimpl.remoting import Network, RemotingClient, RemotingCommand
from rocketspec.refimpl.route import (
    BrokerData,
    DataVersion,
    QueueData,
    RegisterBrokerBody,
    TopicConfig,
    TopicRouteData,
    dumps_java,
    loads_lenient,
    publish_queues,
    route_changed,
    subscribe_queues,
)
from rocketspec.refimpl.runtime import SimulatedRuntime
from rocketspec.spec.protocol import (
    BROKER_CHANNEL_EXPIRED_MS,
    PERM_READ,
    PERM_WRITE,
    VERSION_V4_9_0,
    RequestCode,
    ResponseCode,
)
from rocketspec.spec.queues import MessageQueue

NS = "127.0.0.1:9876"
A = "127.0.0.1:10911"
B = "127.0.0.1:10921"


def route_ab() -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[QueueData("broker-b", 2, 3, 6, 0), QueueData("broker-a", 4, 4, 6, 0)],
        broker_datas=[BrokerData("DefaultCluster", "broker-b", {0: B}), BrokerData("DefaultCluster", "broker-a",
                                                                                     {0: A, 1: "127.0.0.1:10912"})],
    )


# ---------------------------------------------------------------------------------------------------------- route JSON


def test_route_json_standard_and_bare_key_forms_round_trip() -> None:
    route = route_ab()
    standard = route.to_json(standard=True)
    legacy = route.to_json(standard=False)
    assert b'"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10912"}' in standard
    assert b'"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10912"}' in legacy
    with pytest.raises(json.JSONDecodeError):
        json.loads(legacy)
    for body in (standard, legacy):
        parsed = TopicRouteData.from_json(body)
        assert parsed == route
    # Java field names, fastjson order (alphabetical), null orderTopicConf left out.
    data = json.loads(standard)
    assert list(data) == ["brokerDatas", "filterServerTable", "queueDatas"]
    assert list(data["queueDatas"][0]) == ["brokerName", "perm", "readQueueNums", "topicSysFlag", "writeQueueNums"]
    assert "orderTopicConf" in json.loads(TopicRouteData(order_topic_conf="broker-a:2").to_json())


def test_lenient_parser_leaves_string_contents_alone() -> None:
    text = '{"a":",0:x",1:"{2:y}","list":[{3:"z"}]}'
    assert loads_lenient(text) == {"a": ",0:x", "1": "{2:y}", "list": [{"3": "z"}]}
    assert loads_lenient(dumps_java({"k": 'quote " and \\ backslash, 5:'}, standard=False)) == {
        "k": 'quote " and \\ backslash, 5:'}


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12)


@given(_JSON_VALUES, st.dictionaries(st.integers(-5, 99), st.text(max_size=6), max_size=4))
def test_lenient_parser_agrees_with_json_on_plain_json_and_reads_bare_keys(value: object,
                                                                           bare: dict[int, str]) -> None:
    """Plain JSON parses as ``json.loads`` does (the parser takes it directly; the bare-key rewrite would leave it
    unchanged); fastjson's bare numeric keys become strings, also beside a plain value."""
    assert loads_lenient(json.dumps(value)) == value
    document = {"plain": value, "bare": bare}
    assert loads_lenient(dumps_java(document, standard=False)) == {
        "plain": value, "bare": {str(k): v for k, v in bare.items()}}


def test_publish_queues_sorted_writable_with_master() -> None:
    route = route_ab()
    route.queue_datas.append(QueueData("broker-c", 2, 2, PERM_READ, 0))  # not writable
    route.queue_datas.append(QueueData("broker-d", 2, 2, 6, 0))
    route.broker_datas.append(BrokerData("DefaultCluster", "broker-d", {1: "127.0.0.1:1"}))  # no master
    queues = publish_queues(route, "T")
    assert queues == [MessageQueue("T", "broker-a", i) for i in range(4)] + [
        MessageQueue("T", "broker-b", i) for i in range(3)]
    subs = subscribe_queues(route, "T")
    assert MessageQueue("T", "broker-b", 1) in subs and MessageQueue("T", "broker-b", 2) not in subs
    assert MessageQueue("T", "broker-c", 1) in subs  # readable, even without write permission
    write_only = TopicRouteData([QueueData("broker-a", 2, 2, PERM_WRITE, 0)], [BrokerData("c", "broker-a", {0: A})])
    assert subscribe_queues(write_only, "T") == set()


def test_order_topic_conf_gives_the_queue_list() -> None:
    route = route_ab()
    route.order_topic_conf = "broker-b:2;broker-a:1"
    assert publish_queues(route, "T") == [MessageQueue("T", "broker-b", 0), MessageQueue("T", "broker-b", 1),
                                          MessageQueue("T", "broker-a", 0)]


def test_route_change_ignores_order_of_queue_and_broker_data() -> None:
    a = route_ab()
    b = route_ab()
    b.queue_datas.reverse()
    b.broker_datas.reverse()
    assert not route_changed(a, b)
    b.queue_datas[0].perm = PERM_READ
    assert route_changed(a, b)
    assert route_changed(None, a)


def test_register_body_json_and_compressed_forms() -> None:
    body = RegisterBrokerBody({"T": TopicConfig("T", 4, 4, 6)}, DataVersion(123, 7), ["127.0.0.1:1"])
    raw = body.encode()
    data = loads_lenient(raw)
    assert data["topicConfigSerializeWrapper"]["topicConfigTable"]["T"]["readQueueNums"] == 4
    assert data["topicConfigSerializeWrapper"]["dataVersion"] == {"counter": 7, "timestamp": 123}
    assert RegisterBrokerBody.decode(raw) == body
    assert RegisterBrokerBody.decode(body.encode(compress=True), compressed=True) == body
    with pytest.raises(ValueError):
        RegisterBrokerBody.decode(b"\x00garbage", compressed=True)
    with pytest.raises(ValueError):
        RegisterBrokerBody.decode(b"not json")


# -------------------------------------------------------------------------------------------------------- name server


class World:
    def __init__(self) -> None:
        self.runtime = SimulatedRuntime(seed=1)
        self.events = EventLog(self.runtime.now_ms)
        self.network = Network(self.runtime, self.events)
        self.namesrv = NameServer(self.runtime, self.network, self.events, NS)
        self.namesrv.start()

    def client(self, name: str) -> RemotingClient:
        return self.network.client(name)

    def call(self, client: RemotingClient, cmd: RemotingCommand) -> RemotingCommand:
        return self.runtime.wait(client.invoke(NS, cmd, 3000))

    def register(self, client: RemotingClient, name: str, addr: str, topics: dict[str, int], *, broker_id: int = 0,
                 version: DataVersion | None = None, compressed: bool = False, crc: int | None = None,
                 cluster: str = "DefaultCluster", filter_servers: list[str] | None = None) -> RemotingCommand:
        body = RegisterBrokerBody({t: TopicConfig(t, n, n, 6) for t, n in topics.items()},
                                  version or DataVersion(self.runtime.now_ms(), 1), filter_servers or [])
        raw = body.encode(compress=compressed)
        fields = {"brokerName": name, "brokerAddr": addr, "clusterName": cluster,
                  "haServerAddr": addr.replace("109", "209"), "brokerId": broker_id, "compressed": compressed,
                  "bodyCrc32": (zlib.crc32(raw) & 0x7FFFFFFF) if crc is None else crc}
        return self.call(client, RemotingCommand.request(RequestCode.REGISTER_BROKER, fields, raw))

    def route(self, topic: str, version: int | None = None) -> RemotingCommand:
        cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        if version is not None:
            cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, version=version)
        return self.call(self.client("asker"), cmd)


def test_registration_gives_routes_in_both_json_forms() -> None:
    w = World()
    a, b = w.client("broker-a"), w.client("broker-b")
    assert w.register(a, "broker-a", A, {"T": 4, "TBW102": 8}).code == ResponseCode.SUCCESS
    assert w.register(b, "broker-b", B, {"T": 2}).code == ResponseCode.SUCCESS
    response = w.route("T")
    assert response.code == ResponseCode.SUCCESS and b'"0":' in response.body
    route = TopicRouteData.from_json(response.body)
    assert sorted((q.broker_name, q.write_queue_nums) for q in route.queue_datas) == [("broker-a", 4), ("broker-b", 2)]
    assert {b.broker_name: b.broker_addrs for b in route.broker_datas} == {"broker-a": {0: A}, "broker-b": {0: B}}
    old = w.route("T", version=VERSION_V4_9_0)
    assert b"{0:" in old.body and TopicRouteData.from_json(old.body) == route
    missing = w.route("Nope")
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST
    assert missing.remark.startswith("No topic route info in name server for the topic: Nope")
    info = w.call(a, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
    cluster = loads_lenient(info.body)
    assert cluster["clusterAddrTable"] == {"DefaultCluster": ["broker-a", "broker-b"]}
    assert cluster["brokerAddrTable"]["broker-b"]["brokerAddrs"] == {"0": B}


def test_slave_registration_answers_master_and_ha_address() -> None:
    w = World()
    master, slave = w.client("broker-a"), w.client("broker-a-s")
    w.register(master, "broker-a", A, {"T": 4})
    response = w.register(slave, "broker-a", "127.0.0.1:10915", {"T": 4, "Other": 1}, broker_id=1)
    assert response.field("masterAddr") == A and response.field("haServerAddr") == "127.0.0.1:20911"
    assert w.route("Other").code == ResponseCode.TOPIC_NOT_EXIST  # a slave's topics are not applied
    route = TopicRouteData.from_json(w.route("T").body)
    assert route.broker_datas[0].broker_addrs == {0: A, 1: "127.0.0.1:10915"}


def test_topics_reapplied_only_when_the_data_version_changes() -> None:
    w = World()
    a = w.client("broker-a")
    w.register(a, "broker-a", A, {"T": 4}, version=DataVersion(1, 1))
    w.register(a, "broker-a", A, {"T": 8}, version=DataVersion(1, 1))
    assert TopicRouteData.from_json(w.route("T").body).queue_datas[0].write_queue_nums == 4
    w.register(a, "broker-a", A, {"T": 8}, version=DataVersion(2, 2))
    assert TopicRouteData.from_json(w.route("T").body).queue_datas[0].write_queue_nums == 8
    w.register(a, "broker-a", A, {"T": 8, "U": 1}, version=DataVersion(3, 3), compressed=True)
    assert w.route("U").code == ResponseCode.SUCCESS


def test_silent_broker_expires_and_registering_keeps_it_alive() -> None:
    w = World()
    a, b = w.client("broker-a"), w.client("broker-b")
    w.register(a, "broker-a", A, {"T": 4})
    w.register(b, "broker-b", B, {"T": 4})
    for _ in range(5):  # broker-b keeps registering every 30 s, broker-a falls silent
        w.runtime.advance(30_000)
        w.register(b, "broker-b", B, {"T": 4})
    assert w.runtime.now_ms() - w.namesrv.broker_live_table[B].last_update_ms < BROKER_CHANNEL_EXPIRED_MS
    assert A not in w.namesrv.broker_live_table
    route = TopicRouteData.from_json(w.route("T").body)
    assert [q.broker_name for q in route.queue_datas] == ["broker-b"]
    assert "broker-a" not in w.namesrv.broker_addr_table
    # The scan also closes the silent broker's channel (scanNotActiveBroker: RemotingUtil.closeChannel).
    open_from = {key[0] for key, conn in w.network._connections.items() if conn.open}
    assert a.addr not in open_from and b.addr in open_from


def test_closed_channel_removes_its_broker_and_topics() -> None:
    w = World()
    a, b = w.client("broker-a"), w.client("broker-b")
    w.register(a, "broker-a", A, {"T": 4, "OnlyA": 2})
    w.register(b, "broker-b", B, {"T": 4})
    a.close()
    w.runtime.run_until_idle()
    assert w.route("OnlyA").code == ResponseCode.TOPIC_NOT_EXIST
    assert [q.broker_name for q in TopicRouteData.from_json(w.route("T").body).queue_datas] == ["broker-b"]
    assert w.namesrv.cluster_addr_table == {"DefaultCluster": {"broker-b"}}


def test_unregister_removes_broker_and_cluster() -> None:
    w = World()
    a = w.client("broker-a")
    w.register(a, "broker-a", A, {"T": 4})
    cmd = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, {
        "brokerName": "broker-a", "brokerAddr": A, "clusterName": "DefaultCluster", "brokerId": 0})
    assert w.call(a, cmd).code == ResponseCode.SUCCESS
    assert w.route("T").code == ResponseCode.TOPIC_NOT_EXIST
    assert w.namesrv.cluster_addr_table == {} and w.namesrv.broker_addr_table == {}


def test_bad_requests_get_rocketmq_error_responses() -> None:
    w = World()
    a = w.client("broker-a")
    assert w.register(a, "broker-a", A, {"T": 4}, crc=12345).remark == "crc32 not match"
    missing = w.call(a, RemotingCommand.request(RequestCode.REGISTER_BROKER, {"brokerName": "x"}))
    assert missing.code == ResponseCode.SYSTEM_ERROR and "brokerAddr" in missing.remark
    bad_body = w.call(a, RemotingCommand.request(RequestCode.REGISTER_BROKER, {
        "brokerName": "x", "brokerAddr": A, "clusterName": "c", "haServerAddr": A, "brokerId": 0}, b"{nope"))
    assert bad_body.code == ResponseCode.SYSTEM_ERROR
    assert w.call(a, RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC)).code == ResponseCode.SYSTEM_ERROR


def test_query_data_version_refreshes_an_unchanged_broker() -> None:
    w = World()
    a = w.client("broker-a")
    w.register(a, "broker-a", A, {"T": 4}, version=DataVersion(5, 5))
    w.runtime.advance(100_000)
    fields = {"brokerName": "broker-a", "brokerAddr": A, "clusterName": "DefaultCluster", "brokerId": 0}
    same = w.call(a, RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, fields,
                                             dumps_java(DataVersion(5, 5).to_dict())))
    assert same.field("changed") == "false"
    w.runtime.advance(100_000)  # 200 s after registering, but the query refreshed it 100 s ago
    assert w.route("T").code == ResponseCode.SUCCESS
    changed = w.call(a, RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, fields,
                                                dumps_java(DataVersion(6, 6).to_dict())))
    assert changed.field("changed") == "true"


# ----------------------------------------------------------------------------------------- cleanup, whatever names

C = "127.0.0.1:10931"


def tables_empty(ns: NameServer) -> bool:
    return not (ns.broker_addr_table or ns.cluster_addr_table or ns.topic_queue_table or ns.broker_live_table
                or ns.filter_server_table)


def assert_consistent(ns: NameServer) -> None:
    """What cleanup must keep true: nothing listed that no expiry or channel close could remove, nothing empty."""
    listed = [addr for bd in ns.broker_addr_table.values() for addr in bd.broker_addrs.values()]
    assert set(listed) <= set(ns.broker_live_table), "a listed address has no live entry: nothing would remove it"
    for name, bd in ns.broker_addr_table.items():
        assert bd.broker_name == name and bd.broker_addrs, name
        assert len(set(bd.broker_addrs.values())) == len(bd.broker_addrs), "one address keeps one id under a name"
    assert all(ns.cluster_addr_table.values()), "an empty cluster stays"
    clustered = set().union(*ns.cluster_addr_table.values()) if ns.cluster_addr_table else set()
    assert clustered == set(ns.broker_addr_table), "clusters list exactly the broker names with addresses"
    assert all(ns.topic_queue_table.values()), "a topic without queue data stays"
    topic_names = {name for queue_datas in ns.topic_queue_table.values() for name in queue_datas}
    assert topic_names <= set(ns.broker_addr_table), "queue data of a removed broker name stays"
    assert set(ns.filter_server_table) <= set(ns.broker_live_table), "filter servers of a forgotten address stay"
    assert all(live.channel.active for live in ns.broker_live_table.values()), "a live entry on a closed channel"


def cluster_info(w: World) -> dict[str, object]:
    info = w.call(w.client("asker"), RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
    return loads_lenient(info.body)


@pytest.mark.parametrize("how", ["close", "expire"])
def test_an_address_under_two_names_and_clusters_leaves_nothing_behind(how: str) -> None:
    w = World()
    a = w.client("broker-a")
    w.register(a, "broker-a", A, {"T": 4, "OnlyA": 2}, cluster="c1", filter_servers=["127.0.0.1:1"])
    w.register(a, "broker-x", A, {"T": 4, "OnlyX": 1}, cluster="c2")
    w.register(a, "broker-x", A, {"T": 4}, cluster="c3")  # the same name under a second cluster
    w.register(a, "broker-c", C, {"C": 1}, cluster="c1")  # a second address over the same connection
    info = cluster_info(w)
    assert info["clusterAddrTable"] == {"c1": ["broker-a", "broker-c"], "c2": ["broker-x"], "c3": ["broker-x"]}
    assert_consistent(w.namesrv)
    if how == "close":
        a.close()
        w.runtime.run_until_idle()
    else:
        w.runtime.advance(BROKER_CHANNEL_EXPIRED_MS + 20_000)  # no registration: the scan expires both addresses
        w.runtime.run_until_idle()
    assert cluster_info(w) == {"brokerAddrTable": {}, "clusterAddrTable": {}}
    for topic in ("T", "OnlyA", "OnlyX", "C"):
        assert w.route(topic).code == ResponseCode.TOPIC_NOT_EXIST
    assert tables_empty(w.namesrv)


def test_unregistering_one_name_keeps_the_other_names_address_alive_until_it_goes() -> None:
    w = World()
    a = w.client("broker-a")
    w.register(a, "broker-a", A, {"T": 4}, cluster="c1")
    w.register(a, "broker-x", A, {"X": 4}, cluster="c2")
    cmd = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, {
        "brokerName": "broker-a", "brokerAddr": A, "clusterName": "c1", "brokerId": 0})
    assert w.call(a, cmd).code == ResponseCode.SUCCESS
    # 4.9.8 drops A's live entry here and broker-x's A is never removed; here it stays live, so it can expire.
    assert A in w.namesrv.broker_live_table and set(w.namesrv.broker_addr_table) == {"broker-x"}
    assert w.route("T").code == ResponseCode.TOPIC_NOT_EXIST and w.route("X").code == ResponseCode.SUCCESS
    assert_consistent(w.namesrv)
    # Unregistering an id the name does not hold under that address leaves the listing and its live entry alone.
    cmd = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, {
        "brokerName": "broker-x", "brokerAddr": A, "clusterName": "c2", "brokerId": 1})
    assert w.call(a, cmd).code == ResponseCode.SUCCESS
    assert_consistent(w.namesrv)
    w.runtime.advance(BROKER_CHANNEL_EXPIRED_MS + 20_000)
    w.runtime.run_until_idle()
    assert tables_empty(w.namesrv)


CONNS = st.integers(0, 2)
CLUSTERS = st.sampled_from(["c1", "c2"])
NAMES = st.sampled_from(["broker-a", "broker-b", "broker-c"])
IDS = st.integers(0, 1)
ADDRS = st.sampled_from([A, B, C])
STEPS = st.one_of(
    st.tuples(st.just("register"), CONNS, CLUSTERS, NAMES, IDS, ADDRS,
              st.frozensets(st.sampled_from(["T", "U"])), st.booleans()),
    st.tuples(st.just("unregister"), CONNS, CLUSTERS, NAMES, IDS, ADDRS),
    st.tuples(st.just("close"), CONNS),
    st.tuples(st.just("wait"), st.sampled_from([10_000, 60_000, BROKER_CHANNEL_EXPIRED_MS + 15_000])),
)


@given(steps=st.lists(STEPS, max_size=25), end_by_expiry=st.booleans())
def test_any_history_leaves_consistent_tables_bounded_by_live_registrations(
        steps: list[tuple[object, ...]], end_by_expiry: bool) -> None:
    w = World()
    clients = [w.client(f"b{i}") for i in range(3)]
    via: dict[str, set[str]] = {}  # client address -> broker addresses it registered
    for step in steps:
        kind = step[0]
        if kind == "register":
            _, i, cluster, name, bid, addr, topics, filters = step
            w.register(clients[i], name, addr, {t: 2 for t in topics}, broker_id=bid, cluster=cluster,
                       filter_servers=["127.0.0.1:1"] if filters else None)
            via.setdefault(clients[i].addr, set()).add(addr)
        elif kind == "unregister":
            _, i, cluster, name, bid, addr = step
            w.call(clients[i], RemotingCommand.request(RequestCode.UNREGISTER_BROKER, {
                "brokerName": name, "brokerAddr": addr, "clusterName": cluster, "brokerId": bid}))
        elif kind == "close":
            clients[step[1]].close()
            clients[step[1]] = w.client(f"b{step[1]}")
        else:
            w.runtime.advance(step[1])
        w.runtime.run_until_idle()
        assert_consistent(w.namesrv)
        # Bounded by the live registrations: a live entry is an address registered through its still-open channel.
        for addr, live in w.namesrv.broker_live_table.items():
            assert addr in via.get(live.channel.remote_addr, set())
    if end_by_expiry:
        w.runtime.advance(BROKER_CHANNEL_EXPIRED_MS + 15_000)
    else:
        for client in clients:
            client.close()
    w.runtime.run_until_idle()
    assert tables_empty(w.namesrv)


@pytest.mark.parametrize("raw", [
    b'{"filterServerList": 5}', b'{"topicConfigSerializeWrapper": 5}',
    b'{"topicConfigSerializeWrapper": {"topicConfigTable": {"T": {"readQueueNums": "x"}}}}',
])
def test_a_register_body_of_the_wrong_shape_is_a_system_error(raw: bytes) -> None:
    """Whatever the body's decoding trips on (a wrong type, a missing member, a bad number), the name server answers
    SYSTEM_ERROR naming it and registers nothing."""
    w = World()
    fields = {"brokerName": "broker-a", "brokerAddr": A, "clusterName": "DefaultCluster", "haServerAddr": A,
              "brokerId": 0, "compressed": False, "bodyCrc32": zlib.crc32(raw) & 0x7FFFFFFF}
    answer = w.call(w.client("broker-a"), RemotingCommand.request(RequestCode.REGISTER_BROKER, fields, raw))
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert (answer.remark or "").startswith("Failed to decode RegisterBrokerBody")
    assert A not in w.namesrv.broker_live_table
