"""Name server: the state machine: frozen state, actions, ``enabled`` and ``step``."""

from __future__ import annotations

import attrs

from rocketspec.spec.explorer import require_enabled
from rocketspec.spec.name_server.clauses import CLAUSES
from rocketspec.spec.name_server.oracles import (
    broker_expired,
    order_topic_conf,
    registration_rewrites_topics,
    route_code,
    write_perm_after,
)
from rocketspec.spec.protocol import (
    BROKER_CHANNEL_EXPIRED_MS,
    MASTER_ID,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    ResponseCode,
)

# ------------------------------------------------------------------------------------------------ state machine
# The model's brokers: (broker name, broker id, address), all in one cluster.
CLUSTER = "C"
BROKERS: tuple[tuple[str, int, str], ...] = (("a", MASTER_ID, "a0"), ("a", 1, "a1"), ("b", MASTER_ID, "b0"))
TOPICS: tuple[str, ...] = ("T1", "T2")
# The topic configs a master registers at each data version: (topic, queue nums, perm).
TOPIC_CONFIGS: dict[int, tuple[tuple[str, int, int], ...]] = {
    1: (("T1", 4, PERM_READ | PERM_WRITE),),
    2: (("T1", 4, PERM_READ | PERM_WRITE), ("T2", 2, PERM_READ | PERM_WRITE | PERM_INHERIT)),
}
# One tick of the model's clock.
TICK_MS = BROKER_CHANNEL_EXPIRED_MS * 2 // 3
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
class RouteAnswer:
    """What GET_ROUTEINFO_BY_TOPIC answers: the code, the queue data, the broker data (name, id, address) of
    their broker names, and ``orderTopicConf``."""

    code: ResponseCode
    queue_datas: frozenset[QueueData] = frozenset()
    broker_addrs: frozenset[tuple[str, int, str]] = frozenset()
    order_topic_conf: str | None = None


@attrs.frozen
class NamesrvState:
    """The route tables: ``addrs`` (brokerAddrTable as (name, id, address)), ``clusters`` (clusterAddrTable as
    (cluster, name)), ``live`` (brokerLiveTable as (address, data version, age in ticks)), ``queue_data``
    (topicQueueTable), ``kv`` (the KV config), and ``count`` the last write-perm answer's topic count."""

    addrs: frozenset[tuple[str, int, str]] = frozenset()
    clusters: frozenset[tuple[str, str]] = frozenset()
    live: frozenset[tuple[str, int, int]] = frozenset()
    queue_data: frozenset[QueueData] = frozenset()
    kv: frozenset[tuple[str, str, str]] = frozenset()
    count: int | None = None


@attrs.frozen
class RegisterBroker:
    """A broker registers with its topic configs at a data version."""

    name: str
    broker_id: int
    version: int


@attrs.frozen
class UnregisterBroker:
    """UNREGISTER_BROKER (a broker shutting down)."""

    name: str
    broker_id: int


@attrs.frozen
class ChannelClosed:
    """The connection a broker registered through closes."""

    addr: str


@attrs.frozen
class TimePasses:
    """One tick without registrations."""


@attrs.frozen
class ScanNotActiveBrokers:
    """The periodic scan for expired brokers."""


@attrs.frozen
class WritePerm:
    """WIPE_WRITE_PERM_OF_BROKER (``wipe``) or ADD_WRITE_PERM_OF_BROKER for a broker name."""

    name: str
    wipe: bool


@attrs.frozen
class DeleteTopic:
    """DELETE_TOPIC_IN_NAMESRV without a cluster name."""

    topic: str


@attrs.frozen
class PutKV:
    """PUT_KV_CONFIG."""

    namespace: str
    key: str
    value: str


@attrs.frozen
class DeleteKV:
    """DELETE_KV_CONFIG."""

    namespace: str
    key: str


Action = (RegisterBroker | UnregisterBroker | ChannelClosed | TimePasses | ScanNotActiveBrokers | WritePerm
          | DeleteTopic | PutKV | DeleteKV)


def broker_addr(name: str, broker_id: int) -> str:
    """The model's address of a broker."""
    for n, i, addr in BROKERS:
        if (n, i) == (name, broker_id):
            return addr
    raise KeyError((name, broker_id))


def names_with_addresses(state: NamesrvState) -> frozenset[str]:
    return frozenset(name for name, _, _ in state.addrs)


def route(state: NamesrvState, topic: str, order_message_enable: bool = False) -> RouteAnswer:
    """GET_ROUTEINFO_BY_TOPIC against the state (NS-2, NS-3, NS-7)."""
    queue_datas = frozenset(q for q in state.queue_data if q.topic == topic)
    names = tuple(sorted({q.broker_name for q in queue_datas}))
    code = route_code(names, tuple(sorted(names_with_addresses(state))))
    if code is not ResponseCode.SUCCESS:
        return RouteAnswer(code)
    brokers = frozenset(a for a in state.addrs if a[0] in names)
    return RouteAnswer(code, queue_datas, brokers, order_topic_conf(tuple(sorted(state.kv)), topic,
                                                                     order_message_enable))


def topic_list(state: NamesrvState) -> frozenset[str]:
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (NS-6)."""
    return frozenset(q.topic for q in state.queue_data)


def cluster_info(state: NamesrvState) -> tuple[frozenset[tuple[str, int, str]], frozenset[tuple[str, str]]]:
    """GET_BROKER_CLUSTER_INFO: (brokerAddrTable, clusterAddrTable) (NS-5)."""
    return state.addrs, state.clusters


def _live_entry(state: NamesrvState, addr: str) -> tuple[str, int, int] | None:
    return next((entry for entry in state.live if entry[0] == addr), None)


@CLAUSES.oracle("NS-1", "NS-4", "NS-6", "NS-7", "NS-8", "NS-9")
def enabled(state: NamesrvState, action: Action) -> bool:
    """Registrations, unregistrations, scans, admin and KV requests may come at any time (NS-1, NS-4, NS-6, NS-7,
    NS-9); a channel closes only while its broker is registered, time passes only while a registration is not yet
    older than the model's horizon (NS-8)."""
    if isinstance(action, ChannelClosed):
        return _live_entry(state, action.addr) is not None
    if isinstance(action, TimePasses):
        return any(age < MAX_AGE_TICKS for _, _, age in state.live)
    return isinstance(action, Action)


def _remove_broker_name_if_empty(state: NamesrvState, name: str | None) -> NamesrvState:
    if name is None or name in names_with_addresses(state):
        return state
    return attrs.evolve(
        state,
        clusters=frozenset(c for c in state.clusters if c[1] != name),
        queue_data=frozenset(q for q in state.queue_data if q.broker_name != name),
    )


def _forget_address(state: NamesrvState, addr: str) -> NamesrvState:
    """``onChannelDestroy`` for an address: live entry, the address under its broker name, then the name."""
    found = next((a for a in sorted(state.addrs) if a[2] == addr), None)
    state = attrs.evolve(state, live=frozenset(e for e in state.live if e[0] != addr))
    if found is None:
        return state
    state = attrs.evolve(state, addrs=state.addrs - {found})
    return _remove_broker_name_if_empty(state, found[0])


@CLAUSES.oracle("NS-1", "NS-4", "NS-6", "NS-7", "NS-8", "NS-9")
def step(state: NamesrvState, action: Action) -> NamesrvState:
    """Apply one request or event to the route tables (NS-1, NS-4, NS-6, NS-7, NS-8, NS-9)."""
    require_enabled(enabled, state, action, Action)
    state = attrs.evolve(state, count=None)
    if isinstance(action, RegisterBroker):
        addr = broker_addr(action.name, action.broker_id)
        name_known = action.name in names_with_addresses(state)
        id_had_address = any(a[0] == action.name and a[1] == action.broker_id for a in state.addrs)
        live = _live_entry(state, addr)
        rewrite = registration_rewrites_topics(action.broker_id, name_known, id_had_address,
                                               None if live is None else live[1], action.version)
        # One address keeps one id under its broker name (a slave switched to master).
        addrs = frozenset(a for a in state.addrs
                          if not (a[0] == action.name and (a[2] == addr or a[1] == action.broker_id)))
        queue_data = state.queue_data
        if rewrite:
            configs = TOPIC_CONFIGS[action.version]
            written = {topic for topic, _, _ in configs}
            queue_data = frozenset(q for q in queue_data if not (q.broker_name == action.name and q.topic in written))
            queue_data |= {QueueData(topic, action.name, nums, nums, perm) for topic, nums, perm in configs}
        return attrs.evolve(
            state,
            addrs=addrs | {(action.name, action.broker_id, addr)},
            clusters=state.clusters | {(CLUSTER, action.name)},
            live=frozenset(e for e in state.live if e[0] != addr) | {(addr, action.version, 0)},
            queue_data=queue_data,
        )
    if isinstance(action, UnregisterBroker):
        addr = broker_addr(action.name, action.broker_id)
        state = attrs.evolve(
            state,
            live=frozenset(e for e in state.live if e[0] != addr),
            addrs=frozenset(a for a in state.addrs if not (a[0] == action.name and a[1] == action.broker_id)),
        )
        return _remove_broker_name_if_empty(state, action.name)
    if isinstance(action, ChannelClosed):
        return _forget_address(state, action.addr)
    if isinstance(action, TimePasses):
        return attrs.evolve(state, live=frozenset((a, v, min(age + 1, MAX_AGE_TICKS)) for a, v, age in state.live))
    if isinstance(action, ScanNotActiveBrokers):
        now = MAX_AGE_TICKS * TICK_MS
        for addr, _, age in sorted(state.live):
            if broker_expired(now - age * TICK_MS, now):
                state = _forget_address(state, addr)
        return state
    if isinstance(action, WritePerm):
        touched = {q for q in state.queue_data if q.broker_name == action.name}
        changed = {attrs.evolve(q, perm=write_perm_after(q.perm, action.wipe)) for q in touched}
        return attrs.evolve(state, queue_data=(state.queue_data - touched) | changed,
                            count=len({q.topic for q in touched}))
    if isinstance(action, DeleteTopic):
        return attrs.evolve(state, queue_data=frozenset(q for q in state.queue_data if q.topic != action.topic))
    if isinstance(action, PutKV):
        kv = frozenset(e for e in state.kv if e[:2] != (action.namespace, action.key))
        return attrs.evolve(state, kv=kv | {(action.namespace, action.key, action.value)})
    assert isinstance(action, DeleteKV)
    return attrs.evolve(state, kv=frozenset(e for e in state.kv if e[:2] != (action.namespace, action.key)))
