"""Topic routes and the JSON the name server and brokers exchange about them.

``TopicRouteData`` is what GET_ROUTEINFO_BY_TOPIC answers (``TopicRouteData.java``, ``QueueData.java``,
``BrokerData.java``); ``publish_queues`` / ``subscribe_queues`` turn a route into the queues a producer writes to and a
consumer reads from (``MQClientInstance.topicRouteData2TopicPublishInfo`` / ``topicRouteData2TopicSubscribeInfo``).
``RegisterBrokerBody`` is the REGISTER_BROKER body (``RegisterBrokerBody.java``, ``TopicConfigSerializeWrapper.java``)
in both its JSON and its compressed form.

fastjson quirks kept on the wire: fields are written in alphabetical order, ``null`` fields are left out, and without
the "standard JSON" features a ``Map<Long, String>`` (``brokerAddrs``) is written with bare numeric keys
(``{0:"127.0.0.1:10911"}``) — the form name servers older than 4.9.4 send and clients must still accept.
"""

from __future__ import annotations

import io
import json
import re
import struct
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from rocketspec.spec.protocol import DEFAULT_PERM, MASTER_ID, PERM_READ, PERM_WRITE
from rocketspec.spec.queues import MessageQueue, java_string_key

# ------------------------------------------------------------------------------------------------------------ fastjson


class RawJson(str):
    """Text already in JSON form, written as is. fastjson writes a map keyed by an object (``MessageQueue`` in
    ``TopicStatsTable`` / ``ConsumeStats`` / ``ResetOffsetBody``) with the object itself as the key:
    ``{{"brokerName":"b","queueId":0,"topic":"T"}:{...}}``."""


def _encode(value: Any, *, standard: bool) -> str:
    """fastjson-like compact JSON: sorted keys; int keys bare unless ``standard`` (QuoteFieldNames + MapSortField)."""
    if isinstance(value, RawJson):
        return str(value)
    if isinstance(value, Mapping):
        parts = []
        for key in sorted(value, key=lambda k: (not isinstance(k, int), k if isinstance(k, int) else 0, str(k))):
            if isinstance(key, RawJson):
                name = str(key)
            elif isinstance(key, int) and not isinstance(key, bool) and not standard:
                name = str(key)
            else:
                name = json.dumps(str(key), ensure_ascii=standard)
            parts.append(f"{name}:{_encode(value[key], standard=standard)}")
        return "{" + ",".join(parts) + "}"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        return "[" + ",".join(_encode(v, standard=standard) for v in items) + "]"
    # BrowserCompatible (the standard form) escapes non-ASCII characters as \\uXXXX.
    return json.dumps(value, ensure_ascii=standard)


def dumps_java(value: Any, *, standard: bool = True) -> bytes:
    """Encode ``value`` as RocketMQ's fastjson does (``standard=False``: bare numeric map keys)."""
    return _encode(value, standard=standard).encode("utf-8")


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BARE_KEY = re.compile(r"([{,]\s*)(-?\d+)(\s*:)")


def loads_lenient(data: bytes | str) -> Any:
    """Parse JSON that may carry fastjson's bare numeric map keys (``{0:"addr"}``), outside string literals only."""
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    try:
        # Most bodies are plain JSON (a broker's register body every 30 s), and the rewrite below leaves plain JSON
        # as it is: outside strings, a number between "{" or "," and ":" is never valid JSON.
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    out: list[str] = []
    pos = 0
    for match in _STRING.finditer(text):
        out.append(_BARE_KEY.sub(r'\1"\2"\3', text[pos:match.start()]))
        out.append(match.group(0))
        pos = match.end()
    out.append(_BARE_KEY.sub(r'\1"\2"\3', text[pos:]))
    return json.loads("".join(out))


# --------------------------------------------------------------------------------------------------------- route data


def is_writeable(perm: int) -> bool:
    """``PermName.isWriteable``."""
    return bool(perm & PERM_WRITE)


def is_readable(perm: int) -> bool:
    """``PermName.isReadable``."""
    return bool(perm & PERM_READ)


@attrs.define
class QueueData:
    """One broker's queues of a topic (``QueueData.java``); sorted by broker name (``compareTo``)."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int = DEFAULT_PERM
    topic_sys_flag: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueueData:
        return cls(
            broker_name=str(data.get("brokerName", "")),
            read_queue_nums=int(data.get("readQueueNums", 0)),
            write_queue_nums=int(data.get("writeQueueNums", 0)),
            perm=int(data.get("perm", 0)),
            topic_sys_flag=int(data.get("topicSysFlag", 0)),
        )


@attrs.define
class BrokerData:
    """A broker group's addresses by broker id, 0 the master (``BrokerData.java``)."""

    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = attrs.Factory(dict)

    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    def clone(self) -> BrokerData:
        return BrokerData(self.cluster, self.broker_name, dict(self.broker_addrs))

    def to_dict(self) -> dict[str, Any]:
        return {"brokerAddrs": dict(self.broker_addrs), "brokerName": self.broker_name, "cluster": self.cluster}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BrokerData:
        addrs = {int(k): str(v) for k, v in (data.get("brokerAddrs") or {}).items()}
        return cls(cluster=str(data.get("cluster", "")), broker_name=str(data.get("brokerName", "")),
                   broker_addrs=addrs)


@attrs.define
class TopicRouteData:
    """The route of a topic (``TopicRouteData.java``): queue data per broker, broker addresses, order config."""

    queue_datas: list[QueueData] = attrs.Factory(list)
    broker_datas: list[BrokerData] = attrs.Factory(list)
    order_topic_conf: str | None = None
    filter_server_table: dict[str, list[str]] = attrs.Factory(dict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "brokerDatas": [b.to_dict() for b in self.broker_datas],
            "filterServerTable": {k: list(v) for k, v in self.filter_server_table.items()},
            "queueDatas": [q.to_dict() for q in self.queue_datas],
        }
        if self.order_topic_conf is not None:  # fastjson leaves null fields out
            data["orderTopicConf"] = self.order_topic_conf
        return data

    def to_json(self, standard: bool = True) -> bytes:
        """The GET_ROUTEINFO_BY_TOPIC body: standard JSON (4.9.4+) or fastjson's bare-key form (older servers).

        Encoded once per distinct route: a name server answers the same route to every client every 30 s."""
        key = (standard, self._value())
        body = _ROUTE_BODIES.get(key)
        if body is None:
            if len(_ROUTE_BODIES) >= _CACHED_ROUTES:
                _ROUTE_BODIES.clear()
            body = _ROUTE_BODIES[key] = dumps_java(self.to_dict(), standard=standard)
        return body

    def _value(self) -> tuple[Any, ...]:
        """Everything the route's JSON says, hashable."""
        return (
            tuple((q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag)
                  for q in self.queue_datas),
            tuple((b.cluster, b.broker_name, tuple(b.broker_addrs.items())) for b in self.broker_datas),
            self.order_topic_conf,
            tuple((k, tuple(v)) for k, v in self.filter_server_table.items()),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TopicRouteData:
        return cls(
            queue_datas=[QueueData.from_dict(q) for q in data.get("queueDatas") or ()],
            broker_datas=[BrokerData.from_dict(b) for b in data.get("brokerDatas") or ()],
            order_topic_conf=data.get("orderTopicConf"),
            filter_server_table={str(k): [str(a) for a in v] for k, v in (data.get("filterServerTable") or {}).items()},
        )

    @classmethod
    def from_json(cls, body: bytes | str) -> TopicRouteData:
        """Parse a route body in either form (a copy of the route parsed last time for the same bytes: clients ask
        for the same route every 30 s)."""
        if not isinstance(body, (bytes, str)):  # a bytearray or view: not a key
            return cls.from_dict(loads_lenient(bytes(body)))
        parsed = _PARSED_ROUTES.get(body)
        if parsed is None:
            parsed = cls.from_dict(loads_lenient(body))
            if len(_PARSED_ROUTES) >= _CACHED_ROUTES:
                _PARSED_ROUTES.clear()
            _PARSED_ROUTES[body] = parsed.clone()
            return parsed
        return parsed.clone()

    def clone(self) -> TopicRouteData:
        """``cloneTopicRouteData``: a deep copy the client keeps."""
        return TopicRouteData(
            queue_datas=[attrs.evolve(q) for q in self.queue_datas],
            broker_datas=[b.clone() for b in self.broker_datas],
            order_topic_conf=self.order_topic_conf,
            filter_server_table={k: list(v) for k, v in self.filter_server_table.items()},
        )

    def broker_data(self, broker_name: str) -> BrokerData | None:
        return next((b for b in self.broker_datas if b.broker_name == broker_name), None)


#: Route bodies by what they say, and routes by their bodies (each bounded: cleared when full).
_CACHED_ROUTES = 4096
_ROUTE_BODIES: dict[tuple[Any, ...], bytes] = {}
_PARSED_ROUTES: dict[bytes | str, TopicRouteData] = {}


def _route_key(route: TopicRouteData) -> tuple[Any, ...]:
    queues = sorted(route.queue_datas, key=lambda q: java_string_key(q.broker_name))
    brokers = sorted(route.broker_datas, key=lambda b: java_string_key(b.broker_name))
    return (
        [attrs.astuple(q) for q in queues],
        [(b.cluster, b.broker_name, sorted(b.broker_addrs.items())) for b in brokers],
        route.order_topic_conf,
        sorted((k, tuple(v)) for k, v in route.filter_server_table.items()),
    )


def route_changed(old: TopicRouteData | None, new: TopicRouteData | None) -> bool:
    """``MQClientInstance.topicRouteDataIsChange``: compare both routes with queue and broker data sorted."""
    if old is None or new is None:
        return True
    return _route_key(old) != _route_key(new)


def publish_queues(route: TopicRouteData, topic: str) -> list[MessageQueue]:
    """The queues a producer writes to (``topicRouteData2TopicPublishInfo``).

    With ``orderTopicConf`` ("brokerName:num;..."), its entries in order; otherwise, for each queue data sorted by
    broker name that is writable and whose broker has a master, queue ids ``0..writeQueueNums-1``.
    """
    queues: list[MessageQueue] = []
    if route.order_topic_conf:
        for item in route.order_topic_conf.split(";"):
            if not item:
                continue
            broker, _, nums = item.partition(":")
            queues.extend(MessageQueue(topic, broker, i) for i in range(int(nums)))
        return queues
    for qd in sorted(route.queue_datas, key=lambda q: java_string_key(q.broker_name)):
        if not is_writeable(qd.perm):
            continue
        bd = route.broker_data(qd.broker_name)
        if bd is None or MASTER_ID not in bd.broker_addrs:
            continue
        queues.extend(MessageQueue(topic, qd.broker_name, i) for i in range(qd.write_queue_nums))
    return queues


def is_order_topic(route: TopicRouteData) -> bool:
    return bool(route.order_topic_conf)


def subscribe_queues(route: TopicRouteData, topic: str) -> set[MessageQueue]:
    """The queues a consumer reads (``topicRouteData2TopicSubscribeInfo``): readable queue data, ``readQueueNums``."""
    return {
        MessageQueue(topic, qd.broker_name, i)
        for qd in route.queue_datas
        if is_readable(qd.perm)
        for i in range(qd.read_queue_nums)
    }


# ------------------------------------------------------------------------------------------------- register broker


@attrs.define
class TopicConfig:
    """A broker's topic configuration as it registers it (``TopicConfig.java``; Java defaults 16/16/RW)."""

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = DEFAULT_PERM
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "order": self.order,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicFilterType": self.topic_filter_type,
            "topicName": self.topic_name,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], name: str | None = None) -> TopicConfig:
        return cls(
            topic_name=str(data.get("topicName") or name or ""),
            read_queue_nums=int(data.get("readQueueNums", 16)),
            write_queue_nums=int(data.get("writeQueueNums", 16)),
            perm=int(data.get("perm", DEFAULT_PERM)),
            topic_filter_type=str(data.get("topicFilterType", "SINGLE_TAG")),
            topic_sys_flag=int(data.get("topicSysFlag", 0)),
            order=bool(data.get("order", False)),
        )

    def encode_text(self) -> str:
        """``TopicConfig.encode``: "name read write perm filterType" (the compressed register body's entries)."""
        return f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} {self.perm} {self.topic_filter_type}"

    @classmethod
    def decode_text(cls, text: str) -> TopicConfig:
        parts = text.split(" ")
        if len(parts) != 5:
            raise ValueError(f"bad topic config entry {text!r}")
        return cls(parts[0], int(parts[1]), int(parts[2]), int(parts[3]), parts[4])


@attrs.define
class DataVersion:
    """``DataVersion``: a broker's topic-config version; the name server re-reads topics only when it changes."""

    timestamp: int = 0
    counter: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"counter": self.counter, "timestamp": self.timestamp}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> DataVersion:
        data = data or {}
        return cls(timestamp=int(data.get("timestamp", 0)), counter=int(data.get("counter") or 0))


@attrs.define
class RegisterBrokerBody:
    """The REGISTER_BROKER body: ``{topicConfigSerializeWrapper:{topicConfigTable, dataVersion}, filterServerList}``."""

    topic_config_table: dict[str, TopicConfig] = attrs.Factory(dict)
    data_version: DataVersion = attrs.Factory(DataVersion)
    filter_server_list: list[str] | None = attrs.Factory(list)

    def wrapper_dict(self) -> dict[str, Any]:
        return {
            "dataVersion": self.data_version.to_dict(),
            "topicConfigTable": {name: tc.to_dict() for name, tc in self.topic_config_table.items()},
        }

    def encode(self, compress: bool = False) -> bytes:
        """JSON, or (``compress``) the deflated binary form of ``RegisterBrokerBody.encode(true)``."""
        if not compress:
            return dumps_java({"filterServerList": list(self.filter_server_list or []),
                               "topicConfigSerializeWrapper": self.wrapper_dict()}, standard=False)
        raw = io.BytesIO()
        version = dumps_java(self.data_version.to_dict())
        raw.write(struct.pack(">i", len(version)) + version)
        raw.write(struct.pack(">i", len(self.topic_config_table)))
        for tc in self.topic_config_table.values():
            entry = tc.encode_text().encode("utf-8")
            raw.write(struct.pack(">i", len(entry)) + entry)
        servers = dumps_java(list(self.filter_server_list or []))
        raw.write(struct.pack(">i", len(servers)) + servers)
        return zlib.compress(raw.getvalue(), 9)

    @classmethod
    def decode(cls, data: bytes, compressed: bool = False) -> RegisterBrokerBody:
        """Parse either form; raises ``ValueError`` on a malformed body."""
        if not compressed:
            try:
                parsed = loads_lenient(data)
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                raise ValueError(f"bad register body: {error}") from None
            if not isinstance(parsed, dict):
                raise ValueError("bad register body: not an object")
            # An absent list is RegisterBrokerBody's empty default; an explicit null stays null (table untouched).
            return cls.from_wrapper(parsed.get("topicConfigSerializeWrapper") or {}, parsed.get("filterServerList", []))
        try:
            raw = zlib.decompress(data)
        except zlib.error as error:
            raise ValueError(f"bad compressed register body: {error}") from None
        pos = 0

        def chunk() -> bytes:
            nonlocal pos
            if pos + 4 > len(raw):
                raise ValueError("End of compressed data has reached")
            (length,) = struct.unpack_from(">i", raw, pos)
            pos += 4
            if length < 0 or pos + length > len(raw):
                raise ValueError("End of compressed data has reached")
            out = raw[pos:pos + length]
            pos += length
            return out

        version = DataVersion.from_dict(loads_lenient(chunk()))
        if pos + 4 > len(raw):
            raise ValueError("End of compressed data has reached")
        (count,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        table: dict[str, TopicConfig] = {}
        for _ in range(count):
            tc = TopicConfig.decode_text(chunk().decode("utf-8"))
            table[tc.topic_name] = tc
        # A short chunk fails the whole body (RegisterBrokerBody.readBytes throws); only its JSON is forgiven.
        listed = chunk()
        try:
            servers = [str(s) for s in json.loads(listed.decode("utf-8")) or []]
        except (ValueError, TypeError):
            servers = []  # Java logs the parse error and keeps an empty list
        return cls(table, version, servers)

    @classmethod
    def from_wrapper(cls, wrapper: Mapping[str, Any], filter_servers: Iterable[str] | None = None
                     ) -> RegisterBrokerBody:
        """From a ``topicConfigSerializeWrapper`` object (also the whole body of brokers before V3_0_11)."""
        table = {str(name): TopicConfig.from_dict(tc or {}, str(name))
                 for name, tc in (wrapper.get("topicConfigTable") or {}).items()}
        version = DataVersion.from_dict(wrapper.get("dataVersion"))
        servers = None if filter_servers is None else [str(s) for s in filter_servers]
        return cls(table, version, servers)


def cluster_info_json(broker_addr_table: Mapping[str, BrokerData], cluster_addr_table: Mapping[str, Iterable[str]]
                      ) -> bytes:
    """GET_BROKER_CLUSTER_INFO body (``ClusterInfo``), written as RemotingSerializable does (bare numeric keys)."""
    return dumps_java({
        "brokerAddrTable": {name: bd.to_dict() for name, bd in broker_addr_table.items()},
        "clusterAddrTable": {name: sorted(names) for name, names in cluster_addr_table.items()},
    }, standard=False)
