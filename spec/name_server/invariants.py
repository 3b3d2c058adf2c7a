"""Name server: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

from collections.abc import Callable

from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.name_server.actions import (
    Action,
    ChannelClosed,
    DeleteTopic,
    NamesrvStarts,
    NamesrvStops,
    QueryDataVersion,
    RegisterBroker,
    ScanNotActiveBrokers,
    UnregisterBroker,
    WritePerm,
    registration_addr,
    registration_topics,
)
from rocketspec.spec.name_server.machine import TRANSITIONS, Bounds, answer
from rocketspec.spec.name_server.oracles import registration_overdue
from rocketspec.spec.name_server.state import (
    AGE_CAP_MS,
    BROKERS,
    MAX_AGE_TICKS,
    TICK_MS,
    TOPICS,
    NamesrvState,
    Tables,
    cluster_info,
    live_entry,
    names_with_addresses,
    route,
    subscribe_queues,
    system_topics,
    topic_list,
    topics_by_cluster,
)
from rocketspec.spec.protocol import (
    BROKER_CHANNEL_EXPIRED_MS,
    MASTER_ID,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    PERM_READ,
    PERM_WRITE,
    ResponseCode,
)


# ------------------------------------------------------------------------------------------------- invariants
def _every(check: Callable[[Tables], bool]) -> Callable[[NamesrvState], bool]:
    """An invariant over each name server's tables."""

    def holds(state: NamesrvState) -> bool:
        return all(check(tables) for tables in state.servers)

    return holds


def _queue_data_has_broker(tables: Tables) -> bool:
    return {q.broker_name for q in tables.queue_data} <= names_with_addresses(tables)


def _listed_addresses_are_live(tables: Tables) -> bool:
    # An address whose id another address took stays live unlisted until its channel closes or it expires.
    return {a[2] for a in tables.addrs} <= {e[0] for e in tables.live} and len(tables.live) == len(
        {e[0] for e in tables.live})


def _cluster_info_complete(tables: Tables) -> bool:
    addrs, clusters = cluster_info(tables)
    names = {a[0] for a in addrs}
    return {name for _, name in clusters} == names and all(
        sum(1 for c in clusters if c[1] == name) == 1 for name in names)


def _routes_follow_queue_data(tables: Tables) -> bool:
    for topic in TOPICS:
        answer = route(tables, topic)
        has_queues = any(q.topic == topic for q in tables.queue_data)
        if (answer.code is ResponseCode.SUCCESS) != has_queues:
            return False
        if answer.code is ResponseCode.SUCCESS:
            names = {q.broker_name for q in answer.queue_datas}
            if {a[0] for a in answer.broker_addrs} != names or answer.broker_addrs != {
                    a for a in tables.addrs if a[0] in names}:
                return False
    return True


def _topic_lists_are_routed(tables: Tables) -> bool:
    listed = topic_list(tables)
    clusters = {c for c, _ in tables.clusters}
    by_cluster = set().union(*(topics_by_cluster(tables, c) for c in clusters)) if clusters else set()
    system, _first = system_topics(tables)
    return (listed == {t for t in listed if route(tables, t).code is ResponseCode.SUCCESS}
            and by_cluster == listed and system == clusters | names_with_addresses(tables))


def _order_conf_from_kv(tables: Tables) -> bool:
    for topic in TOPICS:
        if route(tables, topic).code is not ResponseCode.SUCCESS:
            continue
        stored = next((v for ns, k, v in tables.kv if ns == NAMESPACE_ORDER_TOPIC_CONFIG and k == topic), None)
        if route(tables, topic, True).order_topic_conf != stored or route(tables, topic, False).order_topic_conf:
            return False
    return {ns for ns, _, _ in tables.kv} <= tables.namespaces


def _filters_of_live_addresses(tables: Tables) -> bool:
    return {f[0] for f in tables.filters} <= {e[0] for e in tables.live} and all(f[1] for f in tables.filters)


def _stopped_has_no_routes(tables: Tables) -> bool:
    return tables.up or not (tables.addrs or tables.live or tables.queue_data or tables.clusters or tables.filters)


def _clients_read_readable_queues(tables: Tables) -> bool:
    for topic in TOPICS:
        answer = route(tables, topic)
        readable = {(q.broker_name, i) for q in answer.queue_datas if q.perm & PERM_READ
                    for i in range(q.read_queue_nums)}
        if {(mq.broker_name, mq.queue_id) for mq in subscribe_queues(answer, topic)} != readable:
            return False
    return True


def _scans_never_overdue(tables: Tables) -> bool:
    return tables.scan_in_ms is None or tables.scan_in_ms >= 0


def _brokers_never_late(state: NamesrvState) -> bool:
    return not state.timed or not any(
        registration_overdue(broker.since_ms[i], state.grace_ms)
        for broker in state.brokers if broker.running
        for i, tables in enumerate(state.servers) if tables.up and i not in broker.cut_off)


def _master_registration_writes_topics(before: NamesrvState, action: Action, after: NamesrvState) -> bool:
    if not isinstance(action, RegisterBroker) or not action.crc_ok or not action.parses:
        return True
    was, now = before.servers[action.server], after.servers[action.server]
    mine_before = {q for q in was.queue_data if q.broker_name == action.name}
    mine_after = {q for q in now.queue_data if q.broker_name == action.name}
    addr = registration_addr(action)
    if (action.name, action.broker_id, addr) not in now.addrs or (addr, action.version, 0, action.ha_addr) \
            not in now.live:
        return False
    if action.broker_id != MASTER_ID:
        return mine_after == mine_before
    live = live_entry(was, addr)
    fresh = live is None or live[1] != action.version or not any(
        a[:2] == (action.name, action.broker_id) for a in was.addrs)
    expected = {(c.topic, c.read_queue_nums, c.write_queue_nums, c.perm) for c in registration_topics(action)}
    got = {(q.topic, q.read_queue_nums, q.write_queue_nums, q.perm) for q in mine_after}
    return expected <= got if fresh else mine_after == mine_before


def _slave_learns_live_master(before: NamesrvState, action: Action, after: NamesrvState) -> bool:
    if not isinstance(action, RegisterBroker) or action.broker_id == MASTER_ID or not action.crc_ok \
            or not action.parses:
        return True
    fields = dict(answer(before, action).fields)
    tables = after.servers[action.server]
    master = next((a[2] for a in tables.addrs if a[:2] == (action.name, MASTER_ID)), None)
    return fields.get("masterAddr") == (master if master is not None and live_entry(tables, master) else None)


def _unregister_removes_broker(before: NamesrvState, action: Action, after: NamesrvState) -> bool:
    if isinstance(action, UnregisterBroker):
        addr, name = registration_addr(action), action.name
    elif isinstance(action, ChannelClosed):
        addr = action.addr
        name = next((a[0] for a in before.servers[action.server].addrs if a[2] == addr), "")
    else:
        return True
    was, now = before.servers[action.server], after.servers[action.server]
    if any(a[2] == addr for a in now.addrs) or live_entry(now, addr) is not None:
        return False
    if any(a[0] == name for a in now.addrs):
        return {q for q in now.queue_data if q.broker_name == name} == {
            q for q in was.queue_data if q.broker_name == name}
    return all(q.broker_name != name for q in now.queue_data) and all(c[1] != name for c in now.clusters)


def _scan_drops_expired(before: NamesrvState, action: Action, after: NamesrvState) -> bool:
    if not isinstance(action, ScanNotActiveBrokers):
        return True
    kept = {e[0] for e in before.servers[action.server].live if e[2] <= BROKER_CHANNEL_EXPIRED_MS}
    return {e[0] for e in after.servers[action.server].live} == kept


def _write_perm_counts_and_sets(before: NamesrvState, action: Action, after: NamesrvState) -> bool:
    if not isinstance(action, WritePerm):
        return True
    was, now = before.servers[action.server], after.servers[action.server]
    mine = [q for q in now.queue_data if q.broker_name == action.name]
    others_same = {q for q in now.queue_data if q.broker_name != action.name} == {
        q for q in was.queue_data if q.broker_name != action.name}
    count = len({q.topic for q in was.queue_data if q.broker_name == action.name})
    if action.wipe:
        perms_ok = all(not q.perm & PERM_WRITE and q.perm & PERM_READ for q in mine)
    else:
        perms_ok = all(q.perm == PERM_READ | PERM_WRITE for q in mine)
    answered = dict(answer(before, action).fields)["wipeTopicCount" if action.wipe else "addTopicCount"]
    return others_same and perms_ok and answered == str(count) and count == len(mine)


def _delete_topic_removes_only_it(before: NamesrvState, action: Action, after: NamesrvState) -> bool:
    if not isinstance(action, DeleteTopic) or action.cluster:
        return True
    now = after.servers[action.server]
    return now.queue_data == {q for q in before.servers[action.server].queue_data if q.topic != action.topic} and (
        action.topic not in topic_list(now))


def _query_refreshes_unchanged(before: NamesrvState, action: Action, after: NamesrvState) -> bool:
    if not isinstance(action, QueryDataVersion):
        return True
    was, now = before.servers[action.server], after.servers[action.server]
    if not action.parses:
        return now == was
    live = live_entry(was, action.addr)
    changed = dict(answer(before, action).fields)["changed"] == "true"
    if live is None or live[1] != action.version:
        return changed and now == was
    return not changed and live_entry(now, action.addr) == (live[0], live[1], 0, live[3])


def _restart_keeps_kv_only(before: NamesrvState, action: Action, after: NamesrvState) -> bool:
    if not isinstance(action, NamesrvStops | NamesrvStarts):
        return True
    was, now = before.servers[action.server], after.servers[action.server]
    return now.kv == was.kv and now.namespaces == was.namespaces and not now.queue_data and not now.addrs


INVARIANTS: tuple[Invariant[NamesrvState], ...] = (
    Invariant("queue data only for broker names with addresses", ("NS-4",), _every(_queue_data_has_broker)),
    Invariant("every listed address is live (so expiry reaches it)", ("NS-1", "NS-4", "NS-8"),
              _every(_listed_addresses_are_live)),
    Invariant("cluster info lists every broker name once", ("NS-5",), _every(_cluster_info_complete)),
    Invariant("a topic has a route exactly when it has queue data", ("NS-2", "NS-3"),
              _every(_routes_follow_queue_data)),
    Invariant("the topic lists are the routed topics", ("NS-6", "NS-14"), _every(_topic_lists_are_routed)),
    Invariant("orderTopicConf comes from the KV config when enabled", ("NS-7",), _every(_order_conf_from_kv)),
    Invariant("filter servers only for live addresses", ("NS-12",), _every(_filters_of_live_addresses)),
    Invariant("a stopped name server has no routes", ("NS-18",), _every(_stopped_has_no_routes)),
    Invariant("clients read the readable queues", ("NS-16",), _every(_clients_read_readable_queues)),
    Invariant("scans are never overdue", ("NS-8",), _every(_scans_never_overdue)),
    Invariant("running brokers register on time", ("NS-17",), _brokers_never_late),
)

STEP_INVARIANTS: tuple[StepInvariant[NamesrvState, Action], ...] = (
    StepInvariant("a master registration writes its topic configs", ("NS-1",), _master_registration_writes_topics),
    StepInvariant("a slave learns its live master", ("NS-1",), _slave_learns_live_master),
    StepInvariant("unregistering removes the broker and its last routes", ("NS-4",), _unregister_removes_broker),
    StepInvariant("the scan drops exactly the expired brokers", ("NS-8",), _scan_drops_expired),
    StepInvariant("write perm wipe/add count and set perms", ("NS-9",), _write_perm_counts_and_sets),
    StepInvariant("DELETE_TOPIC_IN_NAMESRV removes only that topic", ("NS-6",), _delete_topic_removes_only_it),
    StepInvariant("QUERY_DATA_VERSION refreshes an unchanged broker", ("NS-13",), _query_refreshes_unchanged),
    StepInvariant("a restart keeps the KV config only", ("NS-18",), _restart_keeps_kv_only),
)


def model(versions: int = 2, with_kv: bool = True, restarts: bool = True, queries: bool = True,
          initial: NamesrvState | None = None, tick_ms: int = TICK_MS,
          brokers: tuple[tuple[str, int, str], ...] = BROKERS) -> Model[NamesrvState, Action]:
    """Brokers ``a`` (master and slave) and ``b`` (master) (or ``brokers``) registering topic-config versions
    1..``versions``, unregistering, closing channels and expiring; write-perm and topic deletion requests; the
    ORDER_TOPIC_CONFIG entry of T1 put and deleted (``with_kv``); the name server stopping and starting
    (``restarts``); a QUERY_DATA_VERSION of ``a0`` (``queries``); time in ticks of ``tick_ms``. ``initial``:
    another start (e.g. a timed world whose brokers must register on time)."""
    bounds = Bounds(versions, with_kv, restarts, queries, tick_ms, brokers)
    return TRANSITIONS.model(
        bounds,
        f"brokers a (master, slave) and b (master), topic-config versions 1..{versions}, "
        f"{MAX_AGE_TICKS} ticks of {TICK_MS // 1000} s (ages capped at {AGE_CAP_MS} ms), "
        f"KV {'on' if with_kv else 'off'}, "
        f"restarts {'on' if restarts else 'off'}, QUERY_DATA_VERSION {'on' if queries else 'off'}",
        (initial if initial is not None else NamesrvState(),),
        INVARIANTS,
        STEP_INVARIANTS,
    )
