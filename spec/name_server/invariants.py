"""Name server: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

from collections.abc import Iterator

from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.name_server.machine import (
    BROKERS,
    MAX_AGE_TICKS,
    ORDER_CONF,
    TICK_MS,
    TOPIC_CONFIGS,
    TOPICS,
    Action,
    ChannelClosed,
    DeleteKV,
    DeleteTopic,
    NamesrvState,
    PutKV,
    RegisterBroker,
    ScanNotActiveBrokers,
    TimePasses,
    UnregisterBroker,
    WritePerm,
    _live_entry,
    broker_addr,
    cluster_info,
    enabled,
    names_with_addresses,
    route,
    step,
    topic_list,
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
