"""The name server: broker registration, topic routes, cluster info, KV config and broker expiry.

The area covers what clients and brokers observe of a 4.9.8 name server (``NamesrvController``,
``DefaultRequestProcessor``, ``RouteInfoManager``, ``KVConfigManager``):

* REGISTER_BROKER / UNREGISTER_BROKER and a closed broker channel build and tear down the route tables: topic ->
  broker name -> queue data, broker name -> broker data (addresses by broker id), cluster -> broker names, and the
  live table (address -> data version, last update);
* GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO and GET_ALL_TOPIC_LIST_FROM_NAMESERVER read them;
  DELETE_TOPIC_IN_NAMESRV, WIPE_WRITE_PERM_OF_BROKER and ADD_WRITE_PERM_OF_BROKER change them;
* the KV config (PUT/GET/DELETE_KV_CONFIG) and its ORDER_TOPIC_CONFIG namespace, which becomes a route's
  ``orderTopicConf`` when ``NamesrvConfig.orderMessageEnable`` is on;
* the scan that drops brokers not registered again within 120 s;
* request codes the name server does not serve (no answer at all).

The state machine is one name server with one cluster of two broker names (``a`` with a master and a slave, ``b``
with a master) whose masters register one of two topic-config versions; time passes in 60 s ticks.

Versions: read in ``rocketmq-all-4.9.8``; the route tables and these requests are the same in every 4.9.x (4.9.4
changed only the route body's JSON form, which this area does not model). 5.x moved liveness to
``BrokerHousekeepingService`` and an optional controller; not described here.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from rocketspec.spec.clauses import Clause, ClauseTable
from rocketspec.spec.explorer import Invariant, Model, StepInvariant, require_enabled
from rocketspec.spec.protocol import (
    BROKER_CHANNEL_EXPIRED_MS,
    MASTER_ID,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    RequestCode,
    ResponseCode,
    suggest_todo,
)

CLAUSES = ClauseTable(
    area="name_server",
    prefix="NS",
    clauses=(
        Clause(
            "NS-1",
            "REGISTER_BROKER records cluster -> broker name and broker name -> (broker id -> address), an address "
            "registered under another id of that name moving to the new id; a master's (id 0) topic configs become "
            "the topics' queue data for its broker name (readQueueNums, writeQueueNums, perm, topicSysFlag) when the "
            "name or id is new or the DataVersion differs from the one last registered from that address; it answers "
            "SUCCESS, with masterAddr and haServerAddr for a slave whose master is registered.",
            "DefaultRequestProcessor.registerBrokerWithFilterServer; RouteInfoManager.registerBroker",
        ),
        Clause(
            "NS-2",
            "GET_ROUTEINFO_BY_TOPIC for a topic with queue data of a broker name that has broker data answers SUCCESS "
            "with TopicRouteData: every queue data of the topic (brokerName, readQueueNums, writeQueueNums, perm, "
            "topicSysFlag) and the broker data (cluster, brokerName, brokerAddrs by id) of those broker names.",
            "DefaultRequestProcessor.getRouteInfoByTopic; RouteInfoManager.pickupTopicRouteData",
        ),
        Clause(
            "NS-3",
            "GET_ROUTEINFO_BY_TOPIC for any other topic answers TOPIC_NOT_EXIST with remark 'No topic route info in "
            "name server for the topic: <topic>' followed by the FAQ suggestion.",
            "DefaultRequestProcessor.getRouteInfoByTopic; FAQUrl.suggestTodo",
        ),
        Clause(
            "NS-4",
            "UNREGISTER_BROKER removes the address from the live table and the broker id from its broker name, and a "
            "closed channel does the same for the address registered through it; a broker name left without "
            "addresses loses its broker data, its place in its cluster (an empty cluster goes) and its queue data in "
            "every topic, and a topic left without queue data has no route. (4.9.8's onChannelDestroy clears only "
            "the first broker name and cluster listing the address: one address registered under several names "
            "leaves the others behind; rocketspec's name server clears them all, which this model, one address per "
            "broker, does not tell apart.)",
            "RouteInfoManager.unregisterBroker, onChannelDestroy, removeTopicByBrokerName",
        ),
        Clause(
            "NS-5",
            "GET_BROKER_CLUSTER_INFO answers SUCCESS with ClusterInfo: brokerAddrTable (broker name -> cluster, "
            "broker name, addresses by broker id) and clusterAddrTable (cluster -> broker names), for every broker "
            "name that has an address.",
            "DefaultRequestProcessor.getBrokerClusterInfo; RouteInfoManager.getAllClusterInfo",
        ),
        Clause(
            "NS-6",
            "GET_ALL_TOPIC_LIST_FROM_NAMESERVER answers every topic with queue data; DELETE_TOPIC_IN_NAMESRV removes "
            "the topic's queue data (with a clusterName, only that cluster's broker names', the topic going when "
            "none is left) and answers SUCCESS; brokers keep the topic, and their next registration with a changed "
            "data version brings it back.",
            "RouteInfoManager.getAllTopicList, deleteTopic",
        ),
        Clause(
            "NS-7",
            "PUT_KV_CONFIG sets (namespace, key) to the value (SYSTEM_ERROR 'namespace or key is null' without "
            "them); GET_KV_CONFIG answers it in the value field, or QUERY_NOT_FOUND 'No config item, Namespace: <ns> "
            "Key: <key>'; DELETE_KV_CONFIG removes it and answers SUCCESS; with orderMessageEnable a topic's "
            "ORDER_TOPIC_CONFIG entry is its route's orderTopicConf, and every REGISTER_BROKER answer carries that "
            "namespace as a KVTable body.",
            "DefaultRequestProcessor.putKVConfig, getKVConfig, deleteKVConfig, getRouteInfoByTopic; KVConfigManager",
        ),
        Clause(
            "NS-8",
            "Every 10 s (first after 5 s) the name server drops each broker whose last registration (or unchanged "
            "QUERY_DATA_VERSION) is more than 120 s old (BROKER_CHANNEL_EXPIRED_TIME), closing its channel and "
            "removing it as NS-4 says.",
            "RouteInfoManager.scanNotActiveBroker; NamesrvController.initialize",
        ),
        Clause(
            "NS-9",
            "WIPE_WRITE_PERM_OF_BROKER clears the write bit of the broker name's queue data in every topic and "
            "answers wipeTopicCount, the number of topics with queue data of that name; ADD_WRITE_PERM_OF_BROKER sets "
            "that perm to read|write (6, whatever it was) and answers addTopicCount; a later registration with a "
            "changed data version writes the brokers' own perms again.",
            "RouteInfoManager.operateWritePermOfBroker; DefaultRequestProcessor.wipeWritePermOfBroker",
        ),
        Clause(
            "NS-10",
            "A request code the name server's DefaultRequestProcessor does not serve gets no response at all (the "
            "processor returns null; a broker answers REQUEST_CODE_NOT_SUPPORTED instead, BRK-19).",
            "DefaultRequestProcessor.processRequest; NettyRemotingAbstract.processRequestCommand",
        ),
    ),
)

# The request codes DefaultRequestProcessor.processRequest serves (4.9.8); anything else is left unanswered.
NAMESRV_REQUEST_CODES: frozenset[int] = frozenset({
    RequestCode.PUT_KV_CONFIG, RequestCode.GET_KV_CONFIG, RequestCode.DELETE_KV_CONFIG,
    RequestCode.QUERY_DATA_VERSION, RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER,
    RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_BROKER_CLUSTER_INFO, RequestCode.WIPE_WRITE_PERM_OF_BROKER,
    RequestCode.ADD_WRITE_PERM_OF_BROKER, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    RequestCode.DELETE_TOPIC_IN_NAMESRV, RequestCode.GET_KVLIST_BY_NAMESPACE, RequestCode.GET_TOPICS_BY_CLUSTER,
    RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS, RequestCode.GET_UNIT_TOPIC_LIST, RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
    RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, RequestCode.UPDATE_NAMESRV_CONFIG, RequestCode.GET_NAMESRV_CONFIG,
})


# ------------------------------------------------------------------------------------------------------- oracles
@CLAUSES.oracle("NS-1")
def registration_rewrites_topics(
    broker_id: int, name_known: bool, id_had_address: bool, last_version: int | None, version: int
) -> bool:
    """Whether a REGISTER_BROKER writes the broker's topic configs into the queue data (NS-1).

    ``name_known``: the broker name had broker data; ``id_had_address``: that name had an address under this id;
    ``last_version``: the data version last registered from this address (None: not in the live table).

    pre: -2 <= broker_id <= 2
    post: broker_id == MASTER_ID or not __return__
    post: broker_id != MASTER_ID or (last_version is not None and last_version == version and name_known and id_had_address) or __return__
    post: not __return__ or not name_known or not id_had_address or last_version != version
    """  # noqa: E501
    if broker_id != MASTER_ID:
        return False
    register_first = not name_known or not id_had_address
    return register_first or last_version is None or last_version != version


@CLAUSES.oracle("NS-2", "NS-3")
def route_code(queue_broker_names: tuple[str, ...], names_with_broker_data: tuple[str, ...]) -> ResponseCode:
    """The code of a GET_ROUTEINFO_BY_TOPIC answer for a topic with queue data of ``queue_broker_names`` (NS-2,
    NS-3): SUCCESS only when some of them still has broker data.

    pre: len(queue_broker_names) <= 3 and len(names_with_broker_data) <= 3
    post: __return__ in (ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST)
    post: queue_broker_names != () or __return__ is ResponseCode.TOPIC_NOT_EXIST
    post: (__return__ is ResponseCode.SUCCESS) == any(n in names_with_broker_data for n in queue_broker_names)
    """
    for name in queue_broker_names:
        if name in names_with_broker_data:
            return ResponseCode.SUCCESS
    return ResponseCode.TOPIC_NOT_EXIST


@CLAUSES.oracle("NS-3")
def route_not_found_remark(topic: str) -> str:
    """The remark of a TOPIC_NOT_EXIST route answer (NS-3).

    post: __return__.startswith("No topic route info in name server for the topic: ")
    post: __return__.endswith(" for further details.")
    post: topic in __return__
    """
    return f"No topic route info in name server for the topic: {topic}{suggest_todo()}"


@CLAUSES.oracle("NS-8")
def broker_expired(last_update_ms: int, now_ms: int) -> bool:
    """Whether the scan drops a broker last registered at ``last_update_ms`` (NS-8).

    pre: 0 <= last_update_ms <= now_ms
    post: __return__ == (now_ms - last_update_ms > BROKER_CHANNEL_EXPIRED_MS)
    post: now_ms - last_update_ms != BROKER_CHANNEL_EXPIRED_MS or not __return__
    """
    return last_update_ms + BROKER_CHANNEL_EXPIRED_MS < now_ms


@CLAUSES.oracle("NS-9")
def write_perm_after(perm: int, wipe: bool) -> int:
    """A queue data's perm after WIPE_WRITE_PERM_OF_BROKER (``wipe``) or ADD_WRITE_PERM_OF_BROKER (NS-9).

    pre: 0 <= perm <= 15
    post: not wipe or (__return__ & PERM_WRITE == 0 and __return__ | PERM_WRITE == perm | PERM_WRITE)
    post: wipe or __return__ == PERM_READ | PERM_WRITE
    post: wipe or __return__ & PERM_INHERIT == 0
    """
    if wipe:
        return perm & ~PERM_WRITE
    return PERM_READ | PERM_WRITE


@CLAUSES.oracle("NS-7")
def kv_get(
    entries: tuple[tuple[str, str, str], ...], namespace: str | None, key: str | None
) -> tuple[ResponseCode, str]:
    """GET_KV_CONFIG over ``entries`` (namespace, key, value): (SUCCESS, value) or (QUERY_NOT_FOUND, remark)
    (NS-7). A missing header field is Java's null, printed as ``null``.

    pre: len(entries) <= 2
    post: (__return__[0] is ResponseCode.SUCCESS) == any(e[0] == namespace and e[1] == key for e in entries)
    post: __return__[0] is ResponseCode.SUCCESS or __return__[1].startswith("No config item, Namespace: ")
    post: __return__[0] is not ResponseCode.SUCCESS or any(e[0] == namespace and e[1] == key and e[2] == __return__[1] for e in entries)
    """  # noqa: E501
    for ns, k, value in entries:
        if ns == namespace and k == key:
            return ResponseCode.SUCCESS, value
    shown_ns = "null" if namespace is None else namespace
    shown_key = "null" if key is None else key
    return ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {shown_ns} Key: {shown_key}"


@CLAUSES.oracle("NS-7")
def order_topic_conf(
    entries: tuple[tuple[str, str, str], ...], topic: str, order_message_enable: bool
) -> str | None:
    """A route's ``orderTopicConf``: the topic's ORDER_TOPIC_CONFIG entry when orderMessageEnable (NS-7).

    pre: len(entries) <= 2
    post: order_message_enable or __return__ is None
    post: __return__ is None or any(e[0] == NAMESPACE_ORDER_TOPIC_CONFIG and e[1] == topic and e[2] == __return__ for e in entries)
    post: not order_message_enable or __return__ is not None or not any(e[0] == NAMESPACE_ORDER_TOPIC_CONFIG and e[1] == topic for e in entries)
    """  # noqa: E501
    if not order_message_enable:
        return None
    code, value = kv_get(entries, NAMESPACE_ORDER_TOPIC_CONFIG, topic)
    return value if code is ResponseCode.SUCCESS else None


@CLAUSES.oracle("NS-10")
def namesrv_answers(code: int) -> bool:
    """Whether the name server answers a request with this code at all (NS-10).

    post: __return__ == (code in NAMESRV_REQUEST_CODES)
    post: code != RequestCode.SEND_MESSAGE or not __return__
    post: code != RequestCode.GET_ROUTEINFO_BY_TOPIC or __return__
    """
    return code in NAMESRV_REQUEST_CODES


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
    return isinstance(action, Action)  # type: ignore[arg-type]


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


# ------------------------------------------------------------------------------------------------- invariants
def _queue_data_has_broker(state: NamesrvState) -> bool:
    return {q.broker_name for q in state.queue_data} <= names_with_addresses(state)


def _live_matches_addresses(state: NamesrvState) -> bool:
    return {e[0] for e in state.live} == {a[2] for a in state.addrs} and len(state.live) == len(
        {e[0] for e in state.live})


def _cluster_info_complete(state: NamesrvState) -> bool:
    addrs, clusters = cluster_info(state)
    names = {a[0] for a in addrs}
    return {name for _, name in clusters} == names and all(
        sum(1 for c in clusters if c[1] == name) == 1 for name in names)


def _routes_follow_queue_data(state: NamesrvState) -> bool:
    for topic in TOPICS:
        answer = route(state, topic)
        has_queues = any(q.topic == topic for q in state.queue_data)
        if (answer.code is ResponseCode.SUCCESS) != has_queues:
            return False
        if answer.code is ResponseCode.SUCCESS:
            names = {q.broker_name for q in answer.queue_datas}
            if {a[0] for a in answer.broker_addrs} != names or answer.broker_addrs != {
                    a for a in state.addrs if a[0] in names}:
                return False
    return True


def _topic_list_is_routed(state: NamesrvState) -> bool:
    return topic_list(state) == {t for t in TOPICS if route(state, t).code is ResponseCode.SUCCESS}


def _order_conf_from_kv(state: NamesrvState) -> bool:
    for topic in TOPICS:
        if route(state, topic).code is not ResponseCode.SUCCESS:
            continue
        stored = next((v for ns, k, v in state.kv if ns == NAMESPACE_ORDER_TOPIC_CONFIG and k == topic), None)
        if route(state, topic, True).order_topic_conf != stored or route(state, topic, False).order_topic_conf:
            return False
    return True


def _master_registration_writes_topics(before: NamesrvState, action: Action, after: NamesrvState) -> bool:
    if not isinstance(action, RegisterBroker):
        return True
    mine_before = {q for q in before.queue_data if q.broker_name == action.name}
    mine_after = {q for q in after.queue_data if q.broker_name == action.name}
    addr = broker_addr(action.name, action.broker_id)
    if (action.name, action.broker_id, addr) not in after.addrs or (addr, action.version, 0) not in after.live:
        return False
    if action.broker_id != MASTER_ID:
        return mine_after == mine_before
    live = _live_entry(before, addr)
    fresh = live is None or live[1] != action.version or not any(
        a[:2] == (action.name, action.broker_id) for a in before.addrs)
    expected = {(t, n, p) for t, n, p in TOPIC_CONFIGS[action.version]}
    got = {(q.topic, q.write_queue_nums, q.perm) for q in mine_after}
    return expected <= got if fresh else mine_after == mine_before


def _unregister_removes_broker(before: NamesrvState, action: Action, after: NamesrvState) -> bool:
    if isinstance(action, UnregisterBroker):
        addr, name = broker_addr(action.name, action.broker_id), action.name
    elif isinstance(action, ChannelClosed):
        addr = action.addr
        name = next((a[0] for a in before.addrs if a[2] == addr), "")
    else:
        return True
    if any(a[2] == addr for a in after.addrs) or _live_entry(after, addr) is not None:
        return False
    if any(a[0] == name for a in after.addrs):
        return {q for q in after.queue_data if q.broker_name == name} == {
            q for q in before.queue_data if q.broker_name == name}
    return all(q.broker_name != name for q in after.queue_data) and all(c[1] != name for c in after.clusters)


def _scan_drops_expired(before: NamesrvState, action: Action, after: NamesrvState) -> bool:
    if not isinstance(action, ScanNotActiveBrokers):
        return True
    kept = {addr for addr, _, age in before.live if age * TICK_MS <= BROKER_CHANNEL_EXPIRED_MS}
    return {addr for addr, _, _ in after.live} == kept


def _write_perm_counts_and_sets(before: NamesrvState, action: Action, after: NamesrvState) -> bool:
    if not isinstance(action, WritePerm):
        return after.count is None
    mine = [q for q in after.queue_data if q.broker_name == action.name]
    others_same = {q for q in after.queue_data if q.broker_name != action.name} == {
        q for q in before.queue_data if q.broker_name != action.name}
    count = len({q.topic for q in before.queue_data if q.broker_name == action.name})
    if action.wipe:
        perms_ok = all(not q.perm & PERM_WRITE and q.perm & PERM_READ for q in mine)
    else:
        perms_ok = all(q.perm == PERM_READ | PERM_WRITE for q in mine)
    return others_same and perms_ok and after.count == count == len(mine)


def _delete_topic_removes_only_it(before: NamesrvState, action: Action, after: NamesrvState) -> bool:
    if not isinstance(action, DeleteTopic):
        return True
    return after.queue_data == {q for q in before.queue_data if q.topic != action.topic} and (
        action.topic not in topic_list(after))


INVARIANTS: tuple[Invariant[NamesrvState], ...] = (
    Invariant("queue data only for broker names with addresses", ("NS-4",), _queue_data_has_broker),
    Invariant("live table matches the broker addresses", ("NS-1", "NS-4", "NS-8"), _live_matches_addresses),
    Invariant("cluster info lists every broker name once", ("NS-5",), _cluster_info_complete),
    Invariant("a topic has a route exactly when it has queue data", ("NS-2", "NS-3"), _routes_follow_queue_data),
    Invariant("the topic list is the routed topics", ("NS-6",), _topic_list_is_routed),
    Invariant("orderTopicConf comes from the KV config when enabled", ("NS-7",), _order_conf_from_kv),
)

STEP_INVARIANTS: tuple[StepInvariant[NamesrvState, Action], ...] = (
    StepInvariant("a master registration writes its topic configs", ("NS-1",), _master_registration_writes_topics),
    StepInvariant("unregistering removes the broker and its last routes", ("NS-4",), _unregister_removes_broker),
    StepInvariant("the scan drops exactly the expired brokers", ("NS-8",), _scan_drops_expired),
    StepInvariant("write perm wipe/add count and set perms", ("NS-9",), _write_perm_counts_and_sets),
    StepInvariant("DELETE_TOPIC_IN_NAMESRV removes only that topic", ("NS-6",), _delete_topic_removes_only_it),
)


def model(versions: int = 2, with_kv: bool = True) -> Model[NamesrvState, Action]:
    """Brokers ``a`` (master and slave) and ``b`` (master) registering topic-config versions 1..``versions``,
    unregistering, closing channels and expiring; write-perm and topic deletion requests; the ORDER_TOPIC_CONFIG
    entry of T1 put and deleted (``with_kv``)."""
    candidates: list[Action] = []
    for name, broker_id, addr in BROKERS:
        for version in range(1, versions + 1) if broker_id == MASTER_ID else (1,):
            candidates.append(RegisterBroker(name, broker_id, version))
        candidates.append(UnregisterBroker(name, broker_id))
        candidates.append(ChannelClosed(addr))
    candidates += [TimePasses(), ScanNotActiveBrokers()]
    # Admin requests for one broker name and one topic: the others behave alike.
    candidates += [WritePerm(BROKERS[0][0], True), WritePerm(BROKERS[0][0], False), DeleteTopic(TOPICS[0])]
    if with_kv:
        candidates += [PutKV(NAMESPACE_ORDER_TOPIC_CONFIG, "T1", ORDER_CONF), DeleteKV(NAMESPACE_ORDER_TOPIC_CONFIG,
                                                                                      "T1")]
    frozen = tuple(candidates)

    def actions(state: NamesrvState) -> Iterator[Action]:
        return iter(frozen)

    return Model(
        area="name_server",
        bounds=f"brokers a (master, slave) and b (master), topic-config versions 1..{versions}, "
               f"{MAX_AGE_TICKS} ticks of {TICK_MS // 1000} s, KV {'on' if with_kv else 'off'}",
        initial=(NamesrvState(),),
        actions=actions,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )
