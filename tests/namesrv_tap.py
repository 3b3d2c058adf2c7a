"""The name servers' side of the name_server lockstep machine (tests/test_stateful_name_server.py).

- :class:`Tap`: on each name server of a ``Cluster``, what it sees, in order: every request it handles with its
  answer, every channel that closes, every scan for expired brokers (wrapping the server's own ``handle``,
  ``channel_closed`` and ``scan_not_active_brokers``).
- The translation of what a real broker sent into the spec's actions, read with ``json`` (not the implementation's
  decoders, whose bugs would otherwise cancel out), and the bodies a raw client sends, written without the
  implementation's encoders where the test has its own (``compressed_body``).
- The raw client's vocabulary: the topics watched, the fake broker group, the body forms of a raw registration
  (:func:`raw_body`), the KV entries and configuration updates it sends.
- :func:`read_server`: what a client reads of a name server (routes in both JSON forms, cluster info, the topic
  lists, the KV tables, the configuration), and :func:`spec_server`: the same as the spec's state says it must be.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from collections.abc import Callable
from typing import Any

import attrs

from rocketspec.refimpl import route as route_module
from rocketspec.refimpl.cluster import Cluster
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec import name_server as ns
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    DEFAULT_CLUSTER_NAME,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    VERSION_V3_0_7_SNAPSHOT,
    VERSION_V4_9_0,
    VERSION_V4_9_4,
    VERSION_V4_9_8,
    RequestCode,
    ResponseCode,
)

Handle = Callable[[RemotingCommand, Any], RemotingCommand | None]


@attrs.define
class Seen:
    """One thing a name server saw: a request (with its answer), a closed channel or a scan."""

    ms: int
    server: int
    kind: str  # "request", "closed", "scan"
    request: RemotingCommand | None = None
    response: RemotingCommand | None = None
    channel: Any = None


class Tap:
    """Records what each name server of ``cluster`` sees, in order; ``handles`` are the servers' own handlers (the
    projection reads through them, unrecorded)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.seen: list[Seen] = []
        # Channels the name servers closed themselves (the scan closes an expired broker's): their closing is the
        # server's own doing, not an event of the world.
        self.closed_by_server: list[Any] = []
        self.handles: list[Handle] = []
        for index, server in enumerate(cluster.namesrvs):
            self.handles.append(server.handle)
            server.handle = self._handler(index, server.handle)  # type: ignore[method-assign]
            server.channel_closed = self._closer(index, server.channel_closed)  # type: ignore[method-assign]
            server.scan_not_active_brokers = self._scanner(index, server.scan_not_active_brokers)  # type: ignore

    def _handler(self, index: int, original: Handle) -> Handle:
        def handle(request: RemotingCommand, channel: Any) -> RemotingCommand | None:
            if "close" not in vars(channel):
                channel.close = self._server_closes(channel, channel.close)
            response = original(request, channel)
            self.seen.append(Seen(self.cluster.now_ms(), index, "request", request, response, channel))
            return response

        return handle

    def _server_closes(self, channel: Any, original: Callable[[], None]) -> Callable[[], None]:
        def close() -> None:
            self.closed_by_server.append(channel)
            original()

        return close

    def _closer(self, index: int, original: Callable[[Any], None]) -> Callable[[Any], None]:
        def closed(channel: Any) -> None:
            self.seen.append(Seen(self.cluster.now_ms(), index, "closed", channel=channel))
            original(channel)

        return closed

    def _scanner(self, index: int, original: Callable[[], int]) -> Callable[[], int]:
        def scan() -> int:
            self.seen.append(Seen(self.cluster.now_ms(), index, "scan"))
            return original()

        return scan

    def take(self) -> list[Seen]:
        seen, self.seen = self.seen, []
        return seen


class Versions:
    """DataVersions (timestamp, counter) as the spec's opaque ints: equal versions, equal ints."""

    def __init__(self) -> None:
        self.ids: dict[tuple[int, int], int] = {}

    def of(self, timestamp: int, counter: int) -> int:
        return self.ids.setdefault((timestamp, counter), len(self.ids) + 1)

    def of_json(self, data: Any) -> int:
        data = data if isinstance(data, dict) else {}
        return self.of(int(data.get("timestamp", 0)), int(data.get("counter") or 0))

    def pair(self, version: int) -> tuple[int, int]:
        return next(pair for pair, v in self.ids.items() if v == version)


def body_crc(body: bytes | None) -> int:
    """``UtilAll.crc32`` of a body, as a broker puts it in bodyCrc32."""
    return zlib.crc32(body or b"") & 0x7FFFFFFF


def confs_of(table: dict[str, Any]) -> tuple[ns.TopicConf, ...]:
    confs = (ns.TopicConf(str(name), int(c.get("readQueueNums", 16)), int(c.get("writeQueueNums", 16)),
                          int(c.get("perm", 6)), int(c.get("topicSysFlag", 0))) for name, c in table.items())
    return tuple(sorted(confs, key=lambda c: c.topic))


def register_action(server: int, request: RemotingCommand, versions: Versions) -> ns.RegisterBroker:
    """A real broker's REGISTER_BROKER (a JSON body) as the spec's action."""
    f = request.ext_fields
    body = json.loads((request.body or b"{}").decode("utf-8"))
    wrapper = body.get("topicConfigSerializeWrapper") or {}
    listed = body.get("filterServerList", [])
    crc = int(f.get("bodyCrc32", "0"))
    return ns.RegisterBroker(
        f["brokerName"], int(f["brokerId"]), versions.of_json(wrapper.get("dataVersion")), server, f["brokerAddr"],
        f["clusterName"], confs_of(wrapper.get("topicConfigTable") or {}), f["haServerAddr"],
        None if listed is None else tuple(listed), crc == 0 or crc == body_crc(request.body))


def unregister_action(server: int, request: RemotingCommand) -> ns.UnregisterBroker:
    f = request.ext_fields
    return ns.UnregisterBroker(f["brokerName"], int(f["brokerId"]), server, f["brokerAddr"], f["clusterName"])


def _pack(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def compressed_body(timestamp: int, counter: int, confs: tuple[ns.TopicConf, ...], servers: tuple[str, ...],
                    servers_json: bytes | None = None) -> bytes:
    """``RegisterBrokerBody.encode(true)`` of 4.9.8, written here: the DataVersion, the count of topic configs,
    each ``TopicConfig.encode()`` ("name read write perm filterType": no sys flag), the filter servers (or
    ``servers_json`` as their JSON); deflated."""
    raw = _pack(json.dumps({"counter": counter, "timestamp": timestamp}).encode())
    raw += struct.pack(">i", len(confs))
    for c in confs:
        raw += _pack(f"{c.topic} {c.read_queue_nums} {c.write_queue_nums} {c.perm} SINGLE_TAG".encode())
    listed = json.dumps(list(servers)).encode() if servers_json is None else servers_json
    return zlib.compress(raw + _pack(listed), 9)


def wrapper_json(timestamp: int, counter: int, confs: tuple[ns.TopicConf, ...]) -> dict[str, Any]:
    return {"dataVersion": {"counter": counter, "timestamp": timestamp},
            "topicConfigTable": {c.topic: {"topicName": c.topic, "readQueueNums": c.read_queue_nums,
                                           "writeQueueNums": c.write_queue_nums, "perm": c.perm,
                                           "topicSysFlag": c.topic_sys_flag, "topicFilterType": "SINGLE_TAG",
                                           "order": False} for c in confs}}


# ------------------------------------------------------------------------------------------------ the world
@attrs.frozen
class Reads:
    """What the projection reads of a name server besides routes."""

    topics: tuple[str, ...]
    clusters: tuple[str, ...]
    namespaces: tuple[str, ...]
    kv_keys: tuple[tuple[str | None, str | None], ...]


TOPIC, TOPIC2, RAW_TOPIC = "TopicTest", "TopicTest2", "RawTopic"
WATCHED = (TOPIC, TOPIC2, AUTO_CREATE_TOPIC_KEY, RAW_TOPIC, "NoSuchTopic")
# The fake broker group's cluster name is not ASCII: a standard route body escapes it, fastjson's own form does not.
FAKE_NAME, FAKE_CLUSTER, FAKE_HOST = "broker-x", "RawClüster", "10.0.0.9"
NS_T = "NS_T"
READS = Reads(WATCHED, (DEFAULT_CLUSTER_NAME, FAKE_CLUSTER, "NoCluster"), (NAMESPACE_ORDER_TOPIC_CONFIG, NS_T, "NoNs"),
              ((NAMESPACE_ORDER_TOPIC_CONFIG, TOPIC), (NS_T, "k"), (NS_T, None), (None, "k")))
# The transport's allowance on a broker's 30 s registration period (the simulated network takes 1 ms a way).
GRACE_MS = 100
WAITS = (1, 997, 5_000, 10_000, 30_000, 61_000, 121_000, 200_000)
DOWNTIMES = (1, 5_000, 35_000)
# Who asks for a route: a client's version and acceptStandardJsonOnly (NS-11).
FORM_ASKS = ((VERSION_V4_9_8, None), (VERSION_V4_9_4, None), (VERSION_V4_9_0, None), (VERSION_V4_9_0, True),
             (VERSION_V4_9_0, False))
FILTERS = ((), (f"{FAKE_HOST}:30000",), (f"{FAKE_HOST}:30000", f"{FAKE_HOST}:30001"))
KV_NAMESPACES = (NAMESPACE_ORDER_TOPIC_CONFIG, NS_T, None)
KV_KEYS = (TOPIC, TOPIC2, "k", None)
KV_VALUES = ("broker-a:2", "broker-a:1;broker-x:2", None)
CONFIG_UPDATES = (
    (("orderMessageEnable", "true"),), (("orderMessageEnable", "false"),), (("orderMessageEnable", "TRUE"),),
    (("orderMessageEnable", "yes"), ("productEnvName", "test")), (("serverWorkerThreads", "16"),),
    (("serverWorkerThreads", "abc"),), (("rocketmqHome", "/x"),), (("kvConfigPath", "/x"), ("clusterTest", "true")),
    (("unknownKey", "1"),), (),
)

#: The body forms of a raw REGISTER_BROKER: JSON (the test's and the implementation's encoder), compressed (both),
#: the wrapper alone of brokers before V3_0_11, none, a bad CRC, and bodies that do not decode.
FORMS = ("json", "refimpl", "compressed", "refimpl-compressed", "old", "none", "bad-crc", "malformed",
         "old-malformed", "compressed-garbage", "compressed-truncated", "compressed-short", "compressed-bad-servers",
         "array")


@attrs.frozen
class RawBody:
    """A raw REGISTER_BROKER's body and what the name server must read of it."""

    body: bytes | None
    compressed: bool
    version: int  # the request's (a broker's) version
    timestamp: int
    counter: int
    confs: tuple[ns.TopicConf, ...]
    listed: tuple[str, ...] | None  # the filter servers it lists (None: a null list)
    parses: bool


def raw_body(form: str, ts: int, counter: int, conf: ns.TopicConf, filters: tuple[str, ...]) -> RawBody:
    """The body of ``form`` for one topic config and the filter servers (NS-1, NS-12)."""
    confs: tuple[ns.TopicConf, ...] = (conf,)
    listed: tuple[str, ...] | None = filters
    version, compressed = VERSION_V4_9_8, False
    body: bytes | None
    if form in ("json", "bad-crc"):
        body = json.dumps({"filterServerList": list(filters),
                           "topicConfigSerializeWrapper": wrapper_json(ts, counter, confs)}).encode()
    elif form in ("refimpl", "refimpl-compressed"):
        compressed = form == "refimpl-compressed"
        body = route_module.RegisterBrokerBody(
            {conf.topic: route_module.TopicConfig(conf.topic, conf.read_queue_nums, conf.write_queue_nums, conf.perm,
                                                  topic_sys_flag=conf.topic_sys_flag)},
            route_module.DataVersion(ts, counter), list(filters)).encode(compress=compressed)
    elif form == "compressed":
        body, compressed = compressed_body(ts, counter, confs, filters), True
    elif form == "old":
        body, listed, version = json.dumps(wrapper_json(ts, counter, confs)).encode(), None, VERSION_V3_0_7_SNAPSHOT
    elif form == "none":
        body, confs, listed, ts, counter = None, (), (), 0, 0
    elif form == "compressed-bad-servers":
        # Their JSON does not parse: 4.9.8 logs it and keeps an empty list.
        body, compressed, listed = compressed_body(ts, counter, confs, filters, b"[oops"), True, ()
    elif form == "compressed-garbage":
        body, compressed = b"not deflated", True
    elif form in ("compressed-truncated", "compressed-short"):
        # The filter servers' chunk holds fewer bytes than it says, or three bytes of its length are left:
        # "End of compressed data has reached".
        whole = zlib.decompress(compressed_body(ts, counter, confs, filters))
        size = len(json.dumps(list(filters)))
        cut = size - 1 if form == "compressed-truncated" else size + 1
        body, compressed = zlib.compress(whole[:-cut]), True
    elif form == "array":
        body = b"[1]"
    elif form == "malformed":
        body = b"{not json"
    else:
        body, version = b"[1]", VERSION_V3_0_7_SNAPSHOT
    if compressed:
        confs = tuple(attrs.evolve(c, topic_sys_flag=0) for c in confs)  # TopicConfig.encode() carries no sys flag
    parses = not form.endswith(("malformed", "garbage", "truncated", "short", "array"))
    return RawBody(body, compressed, version, ts, counter, confs, listed, parses)


#: How an UPDATE_NAMESRV_CONFIG body writes a property (java.util.Properties.load reads them all): key=value,
#: key:value, key value with blanks, after a comment and a blank line.
PROPERTY_STYLES = ("{}={}\n", "{}:{}\n", "  {} \t{}\n", "# mqadmin\n\n! {}\n{}={}\n")


def property_line(style: str, key: str, value: str) -> str:
    return style.format(key, key, value) if style.count("{}") == 3 else style.format(key, value)


# ------------------------------------------------------------------------------------------------ reading
_BARE_KEY = re.compile(rb"([{,])(-?\d+):")


def loads_bare(body: bytes) -> Any:
    """fastjson's own form (bare numeric map keys) read with ``json``: the test's strings hold no ``{1:`` or ``,1:``."""
    return json.loads(_BARE_KEY.sub(rb'\1"\2":', body))


def _ask(handle: Handle, code: int, fields: dict[str, Any] | None = None, version: int = VERSION_V4_9_8
         ) -> RemotingCommand:
    response = handle(RemotingCommand.request(code, fields or {}, version=version), _PROBE)
    assert response is not None, f"no answer to {RequestCode(code).name}"
    return response


class _Probe:
    """The channel of the projection's reads (no name server read looks at it)."""

    remote_addr = "127.0.0.1:1"
    local_addr = "127.0.0.1:2"
    active = True

    def close(self) -> None:  # pragma: no cover - never closed
        pass


_PROBE = _Probe()


def route_view(data: dict[str, Any]) -> dict[str, Any]:
    """A route body as the projection compares it."""
    return {
        "queueDatas": sorted((q["brokerName"], q["readQueueNums"], q["writeQueueNums"], q["perm"], q["topicSysFlag"])
                             for q in data.get("queueDatas") or ()),
        "brokerDatas": sorted((b["brokerName"], b["cluster"], tuple(sorted((int(k), v) for k, v in
                                                                            b["brokerAddrs"].items())))
                              for b in data.get("brokerDatas") or ()),
        "orderTopicConf": data.get("orderTopicConf"),
        "filterServerTable": sorted((k, tuple(v)) for k, v in (data.get("filterServerTable") or {}).items()),
    }


def spec_route_view(answer: ns.RouteAnswer) -> dict[str, Any]:
    names = sorted({a[0] for a in answer.broker_addrs})
    clusters = dict(answer.broker_clusters)
    return {
        "queueDatas": sorted((q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag)
                             for q in answer.queue_datas),
        "brokerDatas": sorted((n, clusters.get(n, ""), tuple(sorted((i, a) for m, i, a in answer.broker_addrs
                                                                     if m == n))) for n in names),
        "orderTopicConf": answer.order_topic_conf,
        "filterServerTable": sorted(answer.filter_servers),
    }


def read_route(handle: Handle, topic: str, version: int = VERSION_V4_9_8, accept_standard: bool | None = None
               ) -> tuple[int, str | None, bytes | None]:
    fields: dict[str, Any] = {"topic": topic}
    if accept_standard is not None:
        fields["acceptStandardJsonOnly"] = accept_standard
    response = _ask(handle, RequestCode.GET_ROUTEINFO_BY_TOPIC, fields, version)
    return response.code, response.remark, response.body


def topic_list(body: bytes | None) -> tuple[list[str], str | None]:
    data = json.loads(body or b"{}")
    return sorted(data.get("topicList") or ()), data.get("brokerAddr")


def read_server(handle: Handle, reads: Reads) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a client reads of a running name server (one part per table), and the route bodies it answered
    (topic -> the standard body or None)."""
    routes: dict[str, Any] = {}
    bodies: dict[str, Any] = {}
    for topic in reads.topics:
        code, remark, body = read_route(handle, topic)
        if code == ResponseCode.SUCCESS:
            routes[topic] = route_view(json.loads(body or b"{}"))
            bodies[topic] = body
        else:
            routes[topic] = (ResponseCode(code).name, remark)
    info = loads_bare(_ask(handle, RequestCode.GET_BROKER_CLUSTER_INFO).body or b"{}")
    cluster = {
        "brokerAddrTable": sorted((name, b["cluster"], tuple(sorted((int(k), v) for k, v in b["brokerAddrs"].items())))
                                  for name, b in (info.get("brokerAddrTable") or {}).items()),
        "clusterAddrTable": sorted((c, tuple(sorted(names)))
                                   for c, names in (info.get("clusterAddrTable") or {}).items()),
    }
    lists: dict[str, Any] = {"all": topic_list(_ask(handle, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body)[0]}
    for c in reads.clusters:
        lists[f"cluster {c}"] = topic_list(_ask(handle, RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": c}).body)[0]
    for which in ns.UnitList:
        lists[which.value] = topic_list(_ask(handle, RequestCode[which.value]).body)[0]
    system, first = topic_list(_ask(handle, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS).body)
    lists["system"] = system
    kv: dict[str, Any] = {}
    for namespace in reads.namespaces:
        response = _ask(handle, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": namespace})
        kv[f"namespace {namespace}"] = (
            sorted(json.loads(response.body or b"{}").get("table", {}).items())
            if response.code == ResponseCode.SUCCESS else (ResponseCode(response.code).name, response.remark))
    for space, key in reads.kv_keys:
        response = _ask(handle, RequestCode.GET_KV_CONFIG, {"namespace": space, "key": key})
        kv[f"{space}/{key}"] = (ResponseCode(response.code).name, response.ext_fields.get("value"),
                                    response.remark)
    text = (_ask(handle, RequestCode.GET_NAMESRV_CONFIG).body or b"").decode("utf-8")
    config = sorted(tuple(line.split("=", 1)) for line in text.splitlines() if line)
    parts = {"routes": routes, "cluster": cluster, "lists": lists, "kv": kv, "config": config,
             "systemBrokerAddr": first}
    return parts, bodies


def spec_server(state: ns.NamesrvState, server: int, reads: Reads) -> dict[str, Any]:
    """The same parts as the spec's state says a client must read them."""
    tables = state.servers[server]
    routes: dict[str, Any] = {}
    for topic in reads.topics:
        answer = ns.route(tables, topic)
        routes[topic] = spec_route_view(answer) if answer.code is ResponseCode.SUCCESS else (
            answer.code.name, ns.route_not_found_remark(topic))
    addrs, clusters = ns.cluster_info(tables)
    names = sorted({a[0] for a in addrs})
    cluster_of = {name: c for c, name in clusters}
    cluster = {
        "brokerAddrTable": sorted((n, cluster_of.get(n, ""), tuple(sorted((i, a) for m, i, a in addrs if m == n)))
                                  for n in names),
        "clusterAddrTable": sorted((c, tuple(sorted(n for k, n in clusters if k == c)))
                                   for c in {c for c, _ in clusters}),
    }
    lists: dict[str, Any] = {"all": sorted(ns.topic_list(tables))}
    for c in reads.clusters:
        lists[f"cluster {c}"] = sorted(ns.topics_by_cluster(tables, c))
    for which in ns.UnitList:
        lists[which.value] = sorted(ns.unit_topics(tables, which))
    system, _first = ns.system_topics(tables)
    lists["system"] = sorted(system)
    kv: dict[str, Any] = {}
    for namespace in reads.namespaces:
        table = ns.kv_namespace(tables, namespace)
        kv[f"namespace {namespace}"] = sorted(table) if table is not None else (
            ResponseCode.QUERY_NOT_FOUND.name, f"No config item, Namespace: {namespace}")
    for space, key in reads.kv_keys:
        code, text = ns.kv_value(tables, space, key)
        kv[f"{space}/{key}"] = (code.name, text, None) if code is ResponseCode.SUCCESS else (code.name, None, text)
    return {"routes": routes, "cluster": cluster, "lists": lists, "kv": kv, "config": sorted(tables.config),
            "systemBrokerAddr": None}


