"""Name server: the state (the route tables of each name server and the brokers that register with them) and what a
client reads of it: routes, cluster info, topic lists, KV tables, the configuration, the queues of a route."""

from __future__ import annotations

import functools
from typing import TypeVar

import attrs

from rocketspec.spec.name_server.oracles import (
    UnitList,
    kv_get,
    order_topic_conf,
    route_code,
    subscribe_queue_ids,
    unit_listed,
)
from rocketspec.spec.protocol import (
    BROKER_CHANNEL_EXPIRED_MS,
    DEFAULT_NAMESRV_PORT,
    MASTER_ID,
    NAMESRV_CONFIG_DEFAULTS,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    ResponseCode,
)
from rocketspec.spec.queues import MessageQueue
from rocketspec.spec.send_retry import QueueData as PublishQueueData
from rocketspec.spec.send_retry import publish_queues as send_publish_queues

# The explorer's brokers: (broker name, broker id, address), all in one cluster.
CLUSTER = "C"
BROKERS: tuple[tuple[str, int, str], ...] = (("a", MASTER_ID, "a0"), ("a", 1, "a1"), ("b", MASTER_ID, "b0"))
TOPICS: tuple[str, ...] = ("T1", "T2")
# The topic configs an explorer master registers at each data version: (topic, queue nums, perm).
TOPIC_CONFIGS: dict[int, tuple[tuple[str, int, int], ...]] = {
    1: (("T1", 4, PERM_READ | PERM_WRITE),),
    2: (("T1", 4, PERM_READ | PERM_WRITE), ("T2", 2, PERM_READ | PERM_WRITE | PERM_INHERIT)),
}
# One tick of the explorer's clock, and the age a live entry is capped at (any age past the expiry is the same).
TICK_MS = BROKER_CHANNEL_EXPIRED_MS * 2 // 3
AGE_CAP_MS = BROKER_CHANNEL_EXPIRED_MS + 1
MAX_AGE_TICKS = 2
ORDER_CONF = "a:4;b:4"


@attrs.frozen
class QueueData:
    """A topic's queue data for one broker name (``QueueData``)."""

    topic: str
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


@attrs.frozen
class TopicConf:
    """A topic config as a registration body carries it (``TopicConfig``)."""

    topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


def boot_config(port: int = DEFAULT_NAMESRV_PORT) -> frozenset[tuple[str, str]]:
    """The configuration a name server listening on ``port`` starts with (NS-15, NS-18)."""
    return frozenset((key, str(port) if key == "listenPort" else value) for key, value in NAMESRV_CONFIG_DEFAULTS)


_BOOT = boot_config()


@attrs.frozen(cache_hash=True)
class Tables:
    """One name server: ``up``; ``addrs`` (brokerAddrTable as (name, id, address)), ``clusters`` (clusterAddrTable as
    (cluster, name)), ``live`` (brokerLiveTable as (address, data version, age in ms capped at ``AGE_CAP_MS``,
    haServerAddr)), ``filters`` (filterServerTable), ``queue_data`` (topicQueueTable), ``kv`` and ``namespaces``
    (KVConfigManager), ``config`` (its properties), ``port`` (where it listens) and ``scan_in_ms`` (the time to its
    next scan for expired brokers; None: scans are not timed, as in the explorer)."""

    up: bool = True
    addrs: frozenset[tuple[str, int, str]] = frozenset()
    clusters: frozenset[tuple[str, str]] = frozenset()
    live: frozenset[tuple[str, int, int, str]] = frozenset()
    filters: frozenset[tuple[str, tuple[str, ...]]] = frozenset()
    queue_data: frozenset[QueueData] = frozenset()
    kv: frozenset[tuple[str, str, str]] = frozenset()
    namespaces: frozenset[str] = frozenset()
    config: frozenset[tuple[str, str]] = _BOOT
    port: int = DEFAULT_NAMESRV_PORT
    scan_in_ms: int | None = None


@attrs.frozen
class BrokerSide:
    """A broker of the cluster as the name servers see it register (NS-17): who it is, whether it runs, the configs
    of the ``watched`` topics it has held (``tables``, the last its current one), per name server the table its last
    registration there carried (``seen``, an index into ``tables``) and the time since its current table last
    reached it (``since_ms``), and the name servers it cannot reach (``cut_off``)."""

    name: str
    broker_id: int
    addr: str
    cluster: str
    ha_addr: str
    watched: frozenset[str] = frozenset()
    tables: tuple[frozenset[TopicConf], ...] = (frozenset(),)
    running: bool = False
    seen: tuple[int, ...] = ()
    since_ms: tuple[int, ...] = ()
    cut_off: frozenset[int] = frozenset()

    @property
    def key(self) -> tuple[str, int]:
        return self.name, self.broker_id


@attrs.frozen(cache_hash=True)
class NamesrvState:
    """The name servers (``servers``, one per address of the brokers' namesrvAddr) and the brokers registering with
    them (``brokers``; none: registrations from anyone, unchecked, as in the explorer). ``timed``: scans follow the
    4.9.8 schedule and brokers must register on time, allowing ``grace_ms`` for the transport.

    ``addrs``, ``clusters``, ``live``, ``queue_data`` and ``kv`` are the first name server's tables (a deployment
    with one name server)."""

    servers: tuple[Tables, ...] = (Tables(),)
    brokers: tuple[BrokerSide, ...] = ()
    timed: bool = False
    grace_ms: int = 0

    @property
    def addrs(self) -> frozenset[tuple[str, int, str]]:
        return self.servers[0].addrs

    @property
    def clusters(self) -> frozenset[tuple[str, str]]:
        return self.servers[0].clusters

    @property
    def live(self) -> frozenset[tuple[str, int, int, str]]:
        return self.servers[0].live

    @property
    def queue_data(self) -> frozenset[QueueData]:
        return self.servers[0].queue_data

    @property
    def kv(self) -> frozenset[tuple[str, str, str]]:
        return self.servers[0].kv


@attrs.frozen
class RouteAnswer:
    """What GET_ROUTEINFO_BY_TOPIC answers: the code, the queue data, the broker data (name, id, address) of
    their broker names and each name's cluster, ``orderTopicConf`` and the filter server table."""

    code: ResponseCode
    queue_datas: frozenset[QueueData] = frozenset()
    broker_addrs: frozenset[tuple[str, int, str]] = frozenset()
    order_topic_conf: str | None = None
    broker_clusters: frozenset[tuple[str, str]] = frozenset()
    filter_servers: frozenset[tuple[str, tuple[str, ...]]] = frozenset()


@attrs.frozen
class Answer:
    """A request's response as a client reads it: the code, the remark, the header fields and the body (a KVTable as
    a frozenset of pairs, a DataVersion, or None)."""

    code: ResponseCode
    remark: str | None = None
    fields: frozenset[tuple[str, str]] = frozenset()
    body: object = None


_FIELDS: dict[type, tuple[str, ...]] = {}
T = TypeVar("T")


def evolve(obj: T, **changes: object) -> T:
    """``attrs.evolve`` of the state's classes, without its per-call checks (the explorer evolves states a million
    times)."""
    cls = type(obj)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(a.name for a in attrs.fields(cls))  # type: ignore[arg-type]
    return cls(*[changes[n] if n in changes else getattr(obj, n) for n in names])


# ------------------------------------------------------------------------------------------------ reading tables
def broker_addr(name: str, broker_id: int) -> str:
    """The explorer's address of a broker."""
    for n, i, addr in BROKERS:
        if (n, i) == (name, broker_id):
            return addr
    raise KeyError((name, broker_id))


def names_with_addresses(state: NamesrvState | Tables) -> frozenset[str]:
    return frozenset(name for name, _, _ in state.addrs)


def _tables(state: NamesrvState | Tables, server: int) -> Tables:
    return state.servers[server] if isinstance(state, NamesrvState) else state


def live_entry(tables: Tables, addr: str) -> tuple[str, int, int, str] | None:
    return next((entry for entry in tables.live if entry[0] == addr), None)


def config_value(tables: Tables, key: str) -> str:
    return next((value for k, value in tables.config if k == key), "")


def route(state: NamesrvState | Tables, topic: str, order_message_enable: bool | None = None,
          server: int = 0) -> RouteAnswer:
    """GET_ROUTEINFO_BY_TOPIC against a name server's tables (NS-2, NS-3): orderTopicConf from the KV config when
    ``order_message_enable`` (None: the name server's orderMessageEnable, NS-7), and the filter servers of the
    route's addresses (NS-12)."""
    tables = _tables(state, server)
    enabled = config_value(tables, "orderMessageEnable") == "true" if order_message_enable is None \
        else order_message_enable
    return _route(tables, topic, enabled)


@functools.lru_cache(maxsize=1 << 15)
def _route(tables: Tables, topic: str, enabled: bool) -> RouteAnswer:
    queue_datas = frozenset(q for q in tables.queue_data if q.topic == topic)
    names = tuple(sorted({q.broker_name for q in queue_datas}))
    code = route_code(names, tuple(sorted(names_with_addresses(tables))))
    if code is not ResponseCode.SUCCESS:
        return RouteAnswer(code)
    brokers = frozenset(a for a in tables.addrs if a[0] in names)
    addresses = {a[2] for a in brokers}
    return RouteAnswer(
        code, queue_datas, brokers, order_topic_conf(tuple(sorted(tables.kv)), topic, enabled),
        frozenset(c[::-1] for c in tables.clusters if c[1] in names),
        frozenset(f for f in tables.filters if f[0] in addresses))


def topic_list(state: NamesrvState | Tables, server: int = 0) -> frozenset[str]:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (NS-6)."""
    return frozenset(q.topic for q in _tables(state, server).queue_data)


def cluster_info(state: NamesrvState | Tables, server: int = 0
                 ) -> tuple[frozenset[tuple[str, int, str]], frozenset[tuple[str, str]]]:
    """GET_BROKER_CLUSTER_INFO: (brokerAddrTable, clusterAddrTable) (NS-5)."""
    tables = _tables(state, server)
    return tables.addrs, tables.clusters


def topics_by_cluster(state: NamesrvState | Tables, cluster: str, server: int = 0) -> frozenset[str]:
    """GET_TOPICS_BY_CLUSTER (NS-14)."""
    tables = _tables(state, server)
    names = {name for c, name in tables.clusters if c == cluster}
    return frozenset(q.topic for q in tables.queue_data if q.broker_name in names)


def system_topics(state: NamesrvState | Tables, server: int = 0) -> tuple[frozenset[str], frozenset[str]]:
    """GET_SYSTEM_TOPIC_LIST_FROM_NS (NS-14): the cluster and broker names, and the addresses ``brokerAddr`` may
    be (the first address of any broker name: 4.9.8 takes the first in its HashMap's order); empty without brokers."""
    tables = _tables(state, server)
    topics = frozenset(c for c, _ in tables.clusters) | {name for _, name in tables.clusters}
    first = frozenset(min((a for a in tables.addrs if a[0] == name), key=lambda a: a[1])[2]
                      for name in names_with_addresses(tables))
    return topics, first


def unit_topics(state: NamesrvState | Tables, which: UnitList, server: int = 0) -> frozenset[str]:
    """The unit topic lists (NS-14): topics whose queue data passes (the model's topics have one flag in all their
    queue data: 4.9.8 reads one of them)."""
    tables = _tables(state, server)
    return frozenset(q.topic for q in tables.queue_data if unit_listed(which, q.topic_sys_flag))


def kv_value(state: NamesrvState | Tables, namespace: str | None, key: str | None,
             server: int = 0) -> tuple[ResponseCode, str]:
    """GET_KV_CONFIG (NS-7)."""
    return kv_get(tuple(sorted(_tables(state, server).kv)), namespace, key)


def kv_namespace(state: NamesrvState | Tables, namespace: str, server: int = 0
                 ) -> frozenset[tuple[str, str]] | None:
    """GET_KVLIST_BY_NAMESPACE's KVTable, None when the namespace does not exist (QUERY_NOT_FOUND) (NS-7)."""
    tables = _tables(state, server)
    if namespace not in tables.namespaces:
        return None
    return frozenset((k, v) for ns, k, v in tables.kv if ns == namespace)


def namesrv_config(state: NamesrvState | Tables, server: int = 0) -> frozenset[tuple[str, str]]:
    """GET_NAMESRV_CONFIG's properties (NS-15)."""
    return _tables(state, server).config


def subscribe_queues(answer: RouteAnswer, topic: str) -> frozenset[MessageQueue]:
    """The queues a client reads of a route (NS-16)."""
    return frozenset(MessageQueue(topic, q.broker_name, i) for q in answer.queue_datas
                     for i in subscribe_queue_ids(q.perm, q.read_queue_nums))


def publish_queues(answer: RouteAnswer, topic: str) -> tuple[MessageQueue, ...]:
    """The queues a client writes to of a route (SEND-22): the writable queue data of broker names with a master,
    or the orderTopicConf entries."""
    masters = frozenset(name for name, broker_id, _ in answer.broker_addrs if broker_id == MASTER_ID)
    datas = tuple(PublishQueueData(q.broker_name, q.write_queue_nums, q.perm)
                  for q in sorted(answer.queue_datas, key=lambda q: q.broker_name))
    return send_publish_queues(topic, datas, masters, answer.order_topic_conf or "")


def reachable_server(state: NamesrvState) -> int | None:
    """The name server a client of all of them reads from: the first of its list that is up (NS-18)."""
    return next((i for i, tables in enumerate(state.servers) if tables.up), None)
