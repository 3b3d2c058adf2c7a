"""Name server: the state machine as a transition table: guards, effects, answers and candidates of the actions
(``actions``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import attrs

from rocketspec.spec.name_server.actions import (
    Action,
    BrokerCutOff,
    BrokerStarts,
    BrokerStops,
    ChannelClosed,
    DeleteKV,
    DeleteTopic,
    NamesrvStarts,
    NamesrvStops,
    PutKV,
    QueryDataVersion,
    RegisterBroker,
    Request,
    ScanNotActiveBrokers,
    TimePasses,
    TopicCreated,
    UnregisterBroker,
    UpdateConfig,
    WritePerm,
    registration_addr,
    registration_topics,
)
from rocketspec.spec.name_server.clauses import CLAUSES
from rocketspec.spec.name_server.oracles import (
    auto_create_topic_conf,
    broker_expired,
    data_version_changed,
    filter_servers_after,
    namesrv_config_update,
    registration_overdue,
    registration_rewrites_topics,
    write_perm_after,
)
from rocketspec.spec.name_server.state import (
    AGE_CAP_MS,
    BROKERS,
    ORDER_CONF,
    TICK_MS,
    TOPICS,
    Answer,
    BrokerSide,
    NamesrvState,
    QueueData,
    Tables,
    TopicConf,
    boot_config,
    evolve,
    kv_namespace,
    live_entry,
    names_with_addresses,
)
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    BROKER_CHANNEL_EXPIRED_MS,
    BROKER_DEFAULT_TOPIC_QUEUE_NUMS,
    BROKER_REGISTER_INTERVAL_MS,
    MASTER_ID,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    NAMESRV_SCAN_INITIAL_DELAY_MS,
    NAMESRV_SCAN_INTERVAL_MS,
    ResponseCode,
)
from rocketspec.spec.transitions import Transition, TransitionTable


def _with_server(state: NamesrvState, server: int, tables: Tables) -> NamesrvState:
    return evolve(state, servers=(*state.servers[:server], tables, *state.servers[server + 1:]))


def _up(state: NamesrvState, server: int) -> bool:
    return 0 <= server < len(state.servers) and state.servers[server].up


def broker_side(state: NamesrvState, name: str, broker_id: int) -> BrokerSide | None:
    return next((b for b in state.brokers if b.key == (name, broker_id)), None)


def _broker_at(state: NamesrvState, addr: str) -> BrokerSide | None:
    return next((b for b in state.brokers if b.addr == addr), None)


def _with_broker(state: NamesrvState, broker: BrokerSide) -> NamesrvState:
    return evolve(state, brokers=tuple(broker if b.key == broker.key else b for b in state.brokers))


def _at(values: tuple[int, ...], i: int, value: int) -> tuple[int, ...]:
    return (*values[:i], value, *values[i + 1:])


def _table_index(broker: BrokerSide, action: RegisterBroker) -> int | None:
    """The newest of the broker's tables since the one last seen at the name server that the registration
    carries (masters; a slave's topics are not read)."""
    if broker.broker_id != MASTER_ID:
        return len(broker.tables) - 1
    carried = frozenset(c for c in registration_topics(action) if c.topic in broker.watched)
    first = broker.seen[action.server]
    return next((j for j in range(len(broker.tables) - 1, first - 1, -1) if broker.tables[j] == carried), None)


def new_broker(name: str, broker_id: int, addr: str, cluster: str, ha_addr: str, servers: int,
               auto_create_topic_enable: bool) -> BrokerSide:
    """A broker not started yet, its topic table as TopicConfigManager builds it: TBW102 with
    autoCreateTopicEnable (NS-17)."""
    table: frozenset[TopicConf] = frozenset()
    conf = auto_create_topic_conf(auto_create_topic_enable, BROKER_DEFAULT_TOPIC_QUEUE_NUMS)
    if conf is not None and broker_id == MASTER_ID:
        table = frozenset({TopicConf(AUTO_CREATE_TOPIC_KEY, *conf)})
    return BrokerSide(name, broker_id, addr, cluster, ha_addr, frozenset({AUTO_CREATE_TOPIC_KEY}), (table,),
                      False, (0,) * servers, (0,) * servers)


# ------------------------------------------------------------------------------------------------ route tables
def _remove_broker_name_if_empty(tables: Tables, name: str | None) -> Tables:
    if name is None or name in names_with_addresses(tables):
        return tables
    return evolve(
        tables,
        clusters=frozenset(c for c in tables.clusters if c[1] != name),
        queue_data=frozenset(q for q in tables.queue_data if q.broker_name != name),
    )


def _forget_address(tables: Tables, addr: str) -> Tables:
    """``onChannelDestroy`` for an address: live and filter entries, the address under every name, then every
    emptied name."""
    found = {a for a in tables.addrs if a[2] == addr}
    tables = evolve(tables, live=frozenset(e for e in tables.live if e[0] != addr),
                          filters=frozenset(f for f in tables.filters if f[0] != addr),
                          addrs=tables.addrs - found)
    for name in sorted({a[0] for a in found}):
        tables = _remove_broker_name_if_empty(tables, name)
    return tables


def _register_tables(tables: Tables, action: RegisterBroker) -> Tables:
    addr = registration_addr(action)
    name_known = action.name in names_with_addresses(tables)
    id_had_address = any(a[0] == action.name and a[1] == action.broker_id for a in tables.addrs)
    live = live_entry(tables, addr)
    rewrite = registration_rewrites_topics(action.broker_id, name_known, id_had_address,
                                           None if live is None else live[1], action.version)
    # One address keeps one id under its broker name (a slave switched to master).
    addrs = frozenset(a for a in tables.addrs
                      if not (a[0] == action.name and (a[2] == addr or a[1] == action.broker_id)))
    queue_data = tables.queue_data
    if rewrite:
        configs = registration_topics(action)
        written = {c.topic for c in configs}
        queue_data = frozenset(q for q in queue_data if not (q.broker_name == action.name and q.topic in written))
        queue_data |= {QueueData(c.topic, action.name, c.read_queue_nums, c.write_queue_nums, c.perm,
                                 c.topic_sys_flag) for c in configs}
    current = next((f[1] for f in tables.filters if f[0] == addr), ())
    servers = filter_servers_after(current, action.filter_servers)
    return evolve(
        tables,
        addrs=addrs | {(action.name, action.broker_id, addr)},
        clusters=tables.clusters | {(action.cluster, action.name)},
        live=frozenset(e for e in tables.live if e[0] != addr) | {(addr, action.version, 0, action.ha_addr)},
        filters=frozenset(f for f in tables.filters if f[0] != addr) | ({(addr, servers)} if servers else set()),
        queue_data=queue_data,
    )


# ------------------------------------------------------------------------------------------------ transitions
class _OnServer(Protocol):
    @property
    def server(self) -> int: ...


def _request_enabled(state: NamesrvState, action: _OnServer) -> bool:
    return _up(state, action.server)


def _register_enabled(state: NamesrvState, action: RegisterBroker) -> bool:
    if not _up(state, action.server):
        return False
    broker = _broker_at(state, registration_addr(action))
    if broker is None or not action.crc_ok or not action.parses:
        return True
    same = (action.name, action.broker_id, action.cluster, action.ha_addr) == (
        broker.name, broker.broker_id, broker.cluster, broker.ha_addr)
    return same and _table_index(broker, action) is not None


def _register(state: NamesrvState, action: RegisterBroker) -> NamesrvState:
    """REGISTER_BROKER at a name server that is up (NS-1, NS-7, NS-12, NS-17): the broker's address under its name
    and cluster, its live entry (data version, haServerAddr) and filter servers, and a master's topic configs as
    queue data when the registration is its first or its data version changed; a body not matching its CRC, or not
    decoding, changes nothing. A broker of the cluster registers its current topic table or one it held since its
    last registration there (one still in flight): TBW102 only with autoCreateTopicEnable, then the topics created."""
    if not action.crc_ok or not action.parses:
        return state
    state = _with_server(state, action.server, _register_tables(state.servers[action.server], action))
    broker = _broker_at(state, registration_addr(action))
    if broker is None:
        return state
    index = _table_index(broker, action)
    assert index is not None
    current = index == len(broker.tables) - 1
    return _with_broker(state, evolve(
        broker, seen=_at(broker.seen, action.server, index),
        since_ms=_at(broker.since_ms, action.server, 0) if current else broker.since_ms))


def _unregister(state: NamesrvState, action: UnregisterBroker) -> NamesrvState:
    """UNREGISTER_BROKER (NS-4): the broker id leaves its name; the address's live and filter entries go once no
    name lists it; an emptied name goes with its cluster place and queue data."""
    tables = state.servers[action.server]
    addr = registration_addr(action)
    addrs = frozenset(a for a in tables.addrs if not (a[0] == action.name and a[1] == action.broker_id))
    tables = evolve(tables, addrs=addrs)
    if not any(a[2] == addr for a in addrs):
        tables = evolve(tables, live=frozenset(e for e in tables.live if e[0] != addr),
                              filters=frozenset(f for f in tables.filters if f[0] != addr))
    return _with_server(state, action.server, _remove_broker_name_if_empty(tables, action.name))


def _any_server(state: NamesrvState, action: ChannelClosed) -> bool:
    return 0 <= action.server < len(state.servers)


def _channel_closed(state: NamesrvState, action: ChannelClosed) -> NamesrvState:
    """A closed channel (NS-4) forgets the address registered through it; a channel whose address is no longer live
    (unregistered, expired, or the name server stopped) changes nothing (NS-12: its filter servers go too)."""
    tables = state.servers[action.server]
    if live_entry(tables, action.addr) is None:
        return state
    return _with_server(state, action.server, _forget_address(tables, action.addr))


def _time_passes_enabled(state: NamesrvState, action: TimePasses) -> bool:
    if action.ms <= 0:
        return False
    for tables in state.servers:
        if tables.up and tables.scan_in_ms is not None and action.ms > tables.scan_in_ms:
            return False
    if not state.timed:
        return True
    return not any(
        registration_overdue(broker.since_ms[i] + action.ms, state.grace_ms)
        for broker in state.brokers if broker.running
        for i, tables in enumerate(state.servers) if tables.up and i not in broker.cut_off)


def _time_passes(state: NamesrvState, action: TimePasses) -> NamesrvState:
    """Time passes (NS-8, NS-17): never past a name server's due scan, nor, when timed, past a running broker's due
    registration with a name server it reaches; every live entry ages (capped just past the expiry)."""
    servers = tuple(evolve(
        tables,
        live=frozenset((a, v, min(age + action.ms, AGE_CAP_MS), ha) for a, v, age, ha in tables.live),
        scan_in_ms=None if tables.scan_in_ms is None else tables.scan_in_ms - action.ms,
    ) for tables in state.servers)
    cap = BROKER_REGISTER_INTERVAL_MS + state.grace_ms + 1
    brokers = tuple(evolve(b, since_ms=tuple(min(s + action.ms, cap) for s in b.since_ms)) if b.running else b
                    for b in state.brokers)
    return evolve(state, servers=servers, brokers=brokers)


def _scan_enabled(state: NamesrvState, action: ScanNotActiveBrokers) -> bool:
    return _up(state, action.server) and state.servers[action.server].scan_in_ms in (None, 0)


def _scan(state: NamesrvState, action: ScanNotActiveBrokers) -> NamesrvState:
    """The scan, when due (every 10 s, the first 5 s after the start), forgets every broker whose last registration
    is more than 120 s old (NS-8)."""
    tables = state.servers[action.server]
    now = AGE_CAP_MS
    for addr, _, age, _ in sorted(tables.live):
        if broker_expired(now - age, now):
            tables = _forget_address(tables, addr)
    if tables.scan_in_ms is not None:
        tables = evolve(tables, scan_in_ms=NAMESRV_SCAN_INTERVAL_MS)
    return _with_server(state, action.server, tables)


def _write_perm(state: NamesrvState, action: WritePerm) -> NamesrvState:
    """WIPE_WRITE_PERM_OF_BROKER / ADD_WRITE_PERM_OF_BROKER: the broker name's queue data in every topic (NS-9)."""
    tables = state.servers[action.server]
    touched = {q for q in tables.queue_data if q.broker_name == action.name}
    changed = {evolve(q, perm=write_perm_after(q.perm, action.wipe)) for q in touched}
    return _with_server(state, action.server, evolve(tables, queue_data=(tables.queue_data - touched) | changed))


def _delete_topic(state: NamesrvState, action: DeleteTopic) -> NamesrvState:
    """DELETE_TOPIC_IN_NAMESRV: the topic's queue data, with a cluster name only its broker names' (NS-6)."""
    tables = state.servers[action.server]
    if action.cluster:
        names = {name for c, name in tables.clusters if c == action.cluster}
        kept = frozenset(q for q in tables.queue_data if q.topic != action.topic or q.broker_name not in names)
    else:
        kept = frozenset(q for q in tables.queue_data if q.topic != action.topic)
    return _with_server(state, action.server, evolve(tables, queue_data=kept))


def _put_kv(state: NamesrvState, action: PutKV) -> NamesrvState:
    """PUT_KV_CONFIG (NS-7): the namespace exists from now on; the key is set, or absent without a value."""
    if action.namespace is None or action.key is None:
        return state
    tables = state.servers[action.server]
    kv = frozenset(e for e in tables.kv if e[:2] != (action.namespace, action.key))
    if action.value is not None:
        kv |= {(action.namespace, action.key, action.value)}
    return _with_server(state, action.server, evolve(tables, kv=kv,
                                                           namespaces=tables.namespaces | {action.namespace}))


def _delete_kv(state: NamesrvState, action: DeleteKV) -> NamesrvState:
    """DELETE_KV_CONFIG (NS-7): the key goes, its namespace stays."""
    tables = state.servers[action.server]
    kv = frozenset(e for e in tables.kv if e[:2] != (action.namespace, action.key))
    return _with_server(state, action.server, evolve(tables, kv=kv))


def _query_data_version(state: NamesrvState, action: QueryDataVersion) -> NamesrvState:
    """QUERY_DATA_VERSION (NS-13, NS-8): an unchanged version refreshes the address's live entry; a body that does
    not decode is SYSTEM_ERROR."""
    tables = state.servers[action.server]
    live = live_entry(tables, action.addr)
    if not action.parses or live is None or data_version_changed(live[1], action.version):
        return state
    return _with_server(state, action.server, evolve(
        tables, live=(tables.live - {live}) | {(live[0], live[1], 0, live[3])}))


def _update_config(state: NamesrvState, action: UpdateConfig) -> NamesrvState:
    """UPDATE_NAMESRV_CONFIG (NS-15): every known key not black-listed takes its new value."""
    tables = state.servers[action.server]
    _code, config = namesrv_config_update(tuple(sorted(tables.config)), action.props)
    return _with_server(state, action.server, evolve(tables, config=frozenset(config)))


def _namesrv_down(state: NamesrvState, action: NamesrvStarts) -> bool:
    return 0 <= action.server < len(state.servers) and not state.servers[action.server].up


def _namesrv_stops(state: NamesrvState, action: NamesrvStops) -> NamesrvState:
    """A name server stops (NS-18): its route tables are gone, its configuration is what it will start with again,
    its KV config stays."""
    tables = state.servers[action.server]
    return _with_server(state, action.server, Tables(up=False, kv=tables.kv, namespaces=tables.namespaces,
                                                     config=boot_config(tables.port), port=tables.port))


def _namesrv_starts(state: NamesrvState, action: NamesrvStarts) -> NamesrvState:
    """A stopped name server starts (NS-18, NS-8, NS-17): empty route tables, its first scan 5 s later, and every
    running broker owes it a registration within a period."""
    tables = evolve(state.servers[action.server], up=True,
                          scan_in_ms=NAMESRV_SCAN_INITIAL_DELAY_MS if state.timed else None)
    brokers = tuple(evolve(b, since_ms=_at(b.since_ms, action.server, 0)) for b in state.brokers)
    return evolve(_with_server(state, action.server, tables), brokers=brokers)


def _broker_stopped(state: NamesrvState, action: BrokerStarts) -> bool:
    broker = broker_side(state, action.name, action.broker_id)
    return broker is not None and not broker.running


def _broker_starts(state: NamesrvState, action: BrokerStarts) -> NamesrvState:
    """A broker starts (NS-17): it registers with every name server at once and then every period; its topic
    table is what it held (its disk keeps the topics created)."""
    broker = broker_side(state, action.name, action.broker_id)
    assert broker is not None
    return _with_broker(state, evolve(broker, running=True, since_ms=(0,) * len(state.servers)))


def _broker_running(state: NamesrvState, action: BrokerStops) -> bool:
    broker = broker_side(state, action.name, action.broker_id)
    return broker is not None and broker.running


def _broker_stops(state: NamesrvState, action: BrokerStops) -> NamesrvState:
    """A broker stops or crashes (NS-17): it registers no more (a clean stop's UNREGISTER_BROKER and the closing
    of its connections reach the name servers as requests and closed channels)."""
    broker = broker_side(state, action.name, action.broker_id)
    assert broker is not None
    return _with_broker(state, evolve(broker, running=False))


def _topic_created_enabled(state: NamesrvState, action: TopicCreated) -> bool:
    broker = broker_side(state, action.name, MASTER_ID)
    return broker is not None and broker.running


def _topic_created(state: NamesrvState, action: TopicCreated) -> NamesrvState:
    """A topic created on a running master (NS-17): its table gains (or updates) the topic under a new data
    version, and the next registrations carry it."""
    broker = broker_side(state, action.name, MASTER_ID)
    assert broker is not None
    table = frozenset(c for c in broker.tables[-1] if c.topic != action.conf.topic) | {action.conf}
    return _with_broker(state, evolve(broker, tables=(*broker.tables, table),
                                            watched=broker.watched | {action.conf.topic}))


def _cut_off_enabled(state: NamesrvState, action: BrokerCutOff) -> bool:
    broker = broker_side(state, action.name, action.broker_id)
    return (broker is not None and 0 <= action.server < len(state.servers)
            and (action.server in broker.cut_off) != action.cut)


def _cut_off(state: NamesrvState, action: BrokerCutOff) -> NamesrvState:
    """A broker's way to a name server is cut (its registrations there are lost, so the name server expires it,
    NS-8) or restored (it owes a registration within a period again, NS-17)."""
    broker = broker_side(state, action.name, action.broker_id)
    assert broker is not None
    if action.cut:
        return _with_broker(state, evolve(broker, cut_off=broker.cut_off | {action.server}))
    return _with_broker(state, evolve(broker, cut_off=broker.cut_off - {action.server},
                                            since_ms=_at(broker.since_ms, action.server, 0)))


# ------------------------------------------------------------------------------------------------------ answers
#: What the remark of a REGISTER_BROKER whose body does not decode names (the remoting layer adds the exception's
#: class and where it was thrown: a SYSTEM_ERROR remark contains the spec's).
DECODE_FAILURE = "Failed to decode RegisterBrokerBody"


def answer(state: NamesrvState, action: Request) -> Answer:
    """What the name server answers ``action`` in ``state`` (the state before it): NS-1, NS-4, NS-6, NS-7, NS-9,
    NS-13, NS-15."""
    tables = state.servers[action.server]
    if isinstance(action, RegisterBroker):
        if not action.crc_ok:
            return Answer(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        if not action.parses:
            return Answer(ResponseCode.SYSTEM_ERROR, DECODE_FAILURE)
        after = _register_tables(tables, action)
        fields: frozenset[tuple[str, str]] = frozenset()
        if action.broker_id != MASTER_ID:
            master = next((a[2] for a in after.addrs if a[:2] == (action.name, MASTER_ID)), None)
            live = None if master is None else live_entry(after, master)
            if master is not None and live is not None:
                fields = frozenset({("masterAddr", master), ("haServerAddr", live[3])})
        return Answer(ResponseCode.SUCCESS, None, fields, kv_namespace(tables, NAMESPACE_ORDER_TOPIC_CONFIG))
    if isinstance(action, WritePerm):
        count = len({q.topic for q in tables.queue_data if q.broker_name == action.name})
        return Answer(ResponseCode.SUCCESS, None,
                      frozenset({("wipeTopicCount" if action.wipe else "addTopicCount", str(count))}))
    if isinstance(action, PutKV) and (action.namespace is None or action.key is None):
        return Answer(ResponseCode.SYSTEM_ERROR, "namespace or key is null")
    if isinstance(action, QueryDataVersion) and not action.parses:
        return Answer(ResponseCode.SYSTEM_ERROR)
    if isinstance(action, QueryDataVersion):
        live = live_entry(tables, action.addr)
        changed = data_version_changed(None if live is None else live[1], action.version)
        return Answer(ResponseCode.SUCCESS, None, frozenset({("changed", str(changed).lower())}),
                      None if live is None else live[1])
    if isinstance(action, UpdateConfig):
        code, _config = namesrv_config_update(tuple(sorted(tables.config)), action.props)
        return Answer(code, None if code is ResponseCode.SUCCESS else "Can not update config in black list.")
    return Answer(ResponseCode.SUCCESS)


# --------------------------------------------------------------------------------------------------- candidates
@attrs.frozen
class Bounds:
    """What the explorer tries: registrations of ``brokers`` at topic-config versions 1..``versions``, the
    ORDER_TOPIC_CONFIG entry of T1 (``with_kv``), the name server's restart (``restarts``), QUERY_DATA_VERSION
    (``queries``) and time passing in ticks of ``tick_ms``; the world's events come from the state's brokers."""

    versions: int = 2
    with_kv: bool = True
    restarts: bool = True
    queries: bool = True
    tick_ms: int = TICK_MS
    brokers: tuple[tuple[str, int, str], ...] = BROKERS


def _register_candidates(state: NamesrvState, bounds: Bounds) -> Iterable[RegisterBroker]:
    for name, broker_id, _addr in bounds.brokers:
        for version in range(1, bounds.versions + 1) if broker_id == MASTER_ID else (1,):
            yield RegisterBroker(name, broker_id, version)


# The explorer's requests go to the first name server; a request that would change nothing there is left out
# (its transition is a loop: the states reached are the same).
def _unregister_candidates(state: NamesrvState, bounds: Bounds) -> Iterable[UnregisterBroker]:
    listed = {a[:2] for a in state.servers[0].addrs}
    return (UnregisterBroker(name, broker_id) for name, broker_id, _ in bounds.brokers if (name, broker_id) in listed)


def _channel_candidates(state: NamesrvState, bounds: Bounds) -> Iterable[ChannelClosed]:
    live = {e[0] for e in state.servers[0].live}
    return (ChannelClosed(addr) for _, _, addr in bounds.brokers if addr in live)


def _time_candidates(state: NamesrvState, bounds: Bounds) -> tuple[TimePasses, ...]:
    # Untimed and past the horizon, nothing ages any more: time passing would change nothing.
    ages = any(age < AGE_CAP_MS for tables in state.servers for _, _, age, _ in tables.live)
    return (TimePasses(bounds.tick_ms),) if state.timed or ages else ()


def _scan_candidates(state: NamesrvState, bounds: Bounds) -> tuple[ScanNotActiveBrokers, ...]:
    tables = state.servers[0]
    due = tables.scan_in_ms is not None or any(e[2] > BROKER_CHANNEL_EXPIRED_MS for e in tables.live)
    return (ScanNotActiveBrokers(),) if due else ()


def _write_perm_candidates(state: NamesrvState, bounds: Bounds) -> tuple[WritePerm, ...]:
    # One broker name and one topic: the others behave alike.
    name = bounds.brokers[0][0]
    if not any(q.broker_name == name for q in state.servers[0].queue_data):
        return ()
    return WritePerm(name, True), WritePerm(name, False)


def _delete_candidates(state: NamesrvState, bounds: Bounds) -> tuple[DeleteTopic, ...]:
    return (DeleteTopic(TOPICS[0]),) if any(q.topic == TOPICS[0] for q in state.servers[0].queue_data) else ()


_ORDER_ENTRY = (NAMESPACE_ORDER_TOPIC_CONFIG, TOPICS[0], ORDER_CONF)


def _put_candidates(state: NamesrvState, bounds: Bounds) -> tuple[PutKV, ...]:
    return (PutKV(*_ORDER_ENTRY),) if bounds.with_kv and _ORDER_ENTRY not in state.servers[0].kv else ()


def _delete_kv_candidates(state: NamesrvState, bounds: Bounds) -> tuple[DeleteKV, ...]:
    return (DeleteKV(*_ORDER_ENTRY[:2]),) if bounds.with_kv and _ORDER_ENTRY in state.servers[0].kv else ()


def _query_candidates(state: NamesrvState, bounds: Bounds) -> tuple[QueryDataVersion, ...]:
    addr = bounds.brokers[0][2]
    live = live_entry(state.servers[0], addr) is not None
    return (QueryDataVersion(addr, 1),) if bounds.queries and live else ()


def _no_config(state: NamesrvState, bounds: Bounds) -> tuple[UpdateConfig, ...]:
    return ()


def _stop_candidates(state: NamesrvState, bounds: Bounds) -> tuple[NamesrvStops, ...]:
    return tuple(NamesrvStops(i) for i in range(len(state.servers))) if bounds.restarts else ()


def _start_candidates(state: NamesrvState, bounds: Bounds) -> tuple[NamesrvStarts, ...]:
    return tuple(NamesrvStarts(i) for i in range(len(state.servers))) if bounds.restarts else ()


def _broker_start_candidates(state: NamesrvState, bounds: Bounds) -> tuple[BrokerStarts, ...]:
    return tuple(BrokerStarts(b.name, b.broker_id) for b in state.brokers)


def _broker_stop_candidates(state: NamesrvState, bounds: Bounds) -> tuple[BrokerStops, ...]:
    return tuple(BrokerStops(b.name, b.broker_id, crash) for b in state.brokers for crash in (False, True))


def _no_topics(state: NamesrvState, bounds: Bounds) -> tuple[TopicCreated, ...]:
    return ()


def _cut_candidates(state: NamesrvState, bounds: Bounds) -> tuple[BrokerCutOff, ...]:
    return tuple(BrokerCutOff(b.name, b.broker_id, i, cut) for b in state.brokers
                 for i in range(len(state.servers)) for cut in (True, False))


# ------------------------------------------------------------------------------------------------------ the table
TRANSITIONS: TransitionTable[NamesrvState, Action, Bounds] = TransitionTable("name_server", CLAUSES, (
    Transition(RegisterBroker, _register_enabled, _register, _register_candidates,
               ("NS-1", "NS-7", "NS-12", "NS-17"), "register broker"),
    Transition(UnregisterBroker, _request_enabled, _unregister, _unregister_candidates, ("NS-4",)),
    Transition(ChannelClosed, _any_server, _channel_closed, _channel_candidates, ("NS-4", "NS-12")),
    Transition(TimePasses, _time_passes_enabled, _time_passes, _time_candidates, ("NS-8", "NS-17")),
    Transition(ScanNotActiveBrokers, _scan_enabled, _scan, _scan_candidates, ("NS-8",), "scan"),
    Transition(WritePerm, _request_enabled, _write_perm, _write_perm_candidates, ("NS-9",), "write perm"),
    Transition(DeleteTopic, _request_enabled, _delete_topic, _delete_candidates, ("NS-6",)),
    Transition(PutKV, _request_enabled, _put_kv, _put_candidates, ("NS-7",), "put KV"),
    Transition(DeleteKV, _request_enabled, _delete_kv, _delete_kv_candidates, ("NS-7",), "delete KV"),
    Transition(QueryDataVersion, _request_enabled, _query_data_version, _query_candidates, ("NS-8", "NS-13")),
    Transition(UpdateConfig, _request_enabled, _update_config, _no_config, ("NS-15",), "update config"),
    Transition(NamesrvStops, _request_enabled, _namesrv_stops, _stop_candidates, ("NS-18",)),
    Transition(NamesrvStarts, _namesrv_down, _namesrv_starts, _start_candidates, ("NS-8", "NS-17", "NS-18")),
    Transition(BrokerStarts, _broker_stopped, _broker_starts, _broker_start_candidates, ("NS-17",)),
    Transition(BrokerStops, _broker_running, _broker_stops, _broker_stop_candidates, ("NS-17",)),
    Transition(TopicCreated, _topic_created_enabled, _topic_created, _no_topics, ("NS-17",)),
    Transition(BrokerCutOff, _cut_off_enabled, _cut_off, _cut_candidates, ("NS-8", "NS-17"), "broker cut off"),
))

#: Whether an action can happen in a state (its transition's guard).
enabled = TRANSITIONS.enabled
#: The state after an enabled action (its transition's effect).
step = TRANSITIONS.step
