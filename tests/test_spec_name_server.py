"""The name server (NS): registration, routes, cluster info, KV config, expiry, restarts, the brokers' side; examples
checked on 4.9.8."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutation import crosshair_mutant, mutant

from rocketspec.spec import name_server as ns
from rocketspec.spec.explorer import ActionNotEnabled, explore
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    BROKER_CHANNEL_EXPIRED_MS,
    BROKER_REGISTER_INTERVAL_MS,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    NAMESRV_CONFIG_DEFAULTS,
    NAMESRV_SCAN_INITIAL_DELAY_MS,
    NAMESRV_SCAN_INTERVAL_MS,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    VERSION_V4_9_0,
    VERSION_V4_9_4,
    VERSION_V4_9_8,
    RequestCode,
    ResponseCode,
)
from rocketspec.spec.queues import MessageQueue

RC = ResponseCode
NAMES = st.sampled_from(("a", "b", "c"))


# ------------------------------------------------------------------------------------------------------- oracles
@given(st.integers(0, 2), st.booleans(), st.booleans(), st.one_of(st.none(), st.integers(0, 3)), st.integers(0, 3))
def test_registration_rewrites_topics(broker_id: int, name_known: bool, id_had: bool, last: int | None,
                                      version: int) -> None:
    rewrites = ns.registration_rewrites_topics(broker_id, name_known, id_had, last, version)
    if broker_id != 0:
        assert not rewrites  # a slave's topic configs never become queue data
    else:
        assert rewrites == (not name_known or not id_had or last != version)


def test_registration_examples() -> None:
    assert ns.registration_rewrites_topics(0, False, False, None, 1)  # a new broker
    assert not ns.registration_rewrites_topics(0, True, True, 5, 5)  # the 30 s re-registration, nothing changed
    assert ns.registration_rewrites_topics(0, True, True, 5, 6)  # a topic was created at the broker
    assert ns.registration_rewrites_topics(0, True, False, 5, 5)  # the id had no address (slave became master)


@given(st.lists(NAMES, max_size=3, unique=True), st.lists(NAMES, max_size=3, unique=True))
def test_route_code(queue_names: list[str], known: list[str]) -> None:
    code = ns.route_code(tuple(queue_names), tuple(known))
    assert (code is RC.SUCCESS) == bool(set(queue_names) & set(known))


def test_route_not_found_remark_checked_on_4_9_8() -> None:
    assert ns.route_not_found_remark("TopicX") == (
        "No topic route info in name server for the topic: TopicX\n"
        "See http://rocketmq.apache.org/docs/faq/ for further details.")


@given(st.integers(0, 10**6), st.integers(0, 10**6))
def test_broker_expired(last: int, elapsed: int) -> None:
    assert ns.broker_expired(last, last + elapsed) == (elapsed > BROKER_CHANNEL_EXPIRED_MS)


def test_broker_expired_boundary() -> None:
    assert not ns.broker_expired(0, BROKER_CHANNEL_EXPIRED_MS)
    assert ns.broker_expired(0, BROKER_CHANNEL_EXPIRED_MS + 1)


@given(st.integers(0, 15))
def test_write_perm_after(perm: int) -> None:
    assert ns.write_perm_after(perm, True) == perm & ~PERM_WRITE
    assert ns.write_perm_after(perm, False) == PERM_READ | PERM_WRITE  # not "perm | W": inherit and others go


@given(st.lists(st.tuples(st.sampled_from(("N1", "N2")), st.sampled_from(("k", "j")), st.text(max_size=3)),
                max_size=3, unique_by=lambda e: e[:2]),
       st.one_of(st.none(), st.sampled_from(("N1", "N2"))), st.one_of(st.none(), st.sampled_from(("k", "j"))))
def test_kv_get(entries: list[tuple[str, str, str]], namespace: str | None, key: str | None) -> None:
    code, text = ns.kv_get(tuple(entries), namespace, key)
    table = {(n, k): v for n, k, v in entries}
    if (namespace, key) in table:
        assert (code, text) == (RC.SUCCESS, table[(namespace, key)])
    else:
        assert code is RC.QUERY_NOT_FOUND
        assert text == f"No config item, Namespace: {namespace or 'null'} Key: {key or 'null'}"


def test_order_topic_conf() -> None:
    entries = ((NAMESPACE_ORDER_TOPIC_CONFIG, "T1", "a:4;b:4"), ("other", "T2", "x"))
    assert ns.order_topic_conf(entries, "T1", True) == "a:4;b:4"
    assert ns.order_topic_conf(entries, "T1", False) is None  # orderMessageEnable is off by default
    assert ns.order_topic_conf(entries, "T2", True) is None


def test_namesrv_answers_checked_on_4_9_8() -> None:
    # A real 4.9.8 name server leaves SEND_MESSAGE (10) and unknown codes unanswered; a broker does not (BRK-19).
    assert not ns.namesrv_answers(RequestCode.SEND_MESSAGE)
    assert not ns.namesrv_answers(9999)
    assert ns.namesrv_answers(RequestCode.GET_ROUTEINFO_BY_TOPIC)
    assert ns.namesrv_answers(RequestCode.GET_KVLIST_BY_NAMESPACE)


def test_route_body_standard() -> None:
    assert ns.route_body_standard(VERSION_V4_9_8, None)
    assert ns.route_body_standard(VERSION_V4_9_4, False)
    assert not ns.route_body_standard(VERSION_V4_9_0, None)  # a 4.9.0 client: bare broker ids
    assert ns.route_body_standard(VERSION_V4_9_0, True)  # acceptStandardJsonOnly


@given(st.lists(st.text(max_size=2), max_size=2), st.one_of(st.none(), st.lists(st.text(max_size=2), max_size=2)))
def test_filter_servers_after(current: list[str], listed: list[str] | None) -> None:
    after = ns.filter_servers_after(tuple(current), None if listed is None else tuple(listed))
    assert after == (tuple(current) if listed is None else tuple(listed))


@given(st.one_of(st.none(), st.integers(0, 3)), st.integers(0, 3))
def test_data_version_changed(live: int | None, version: int) -> None:
    assert ns.data_version_changed(live, version) == (live is None or live != version)


@given(st.sampled_from(ns.UnitList), st.integers(0, 3))
def test_unit_listed(which: ns.UnitList, flag: int) -> None:
    unit, sub = bool(flag & 1), bool(flag & 2)
    expected = {ns.UnitList.UNIT: unit, ns.UnitList.HAS_UNIT_SUB: sub,
                ns.UnitList.HAS_UNIT_SUB_UNUNIT: sub and not unit}
    assert ns.unit_listed(which, flag) == expected[which]


def test_namesrv_config_update_checked_on_4_9_8() -> None:
    config = tuple(NAMESRV_CONFIG_DEFAULTS)
    code, after = ns.namesrv_config_update(config, (("orderMessageEnable", "TRUE"), ("unknownKey", "x")))
    assert code is RC.SUCCESS and dict(after)["orderMessageEnable"] == "true" and "unknownKey" not in dict(after)
    code, after = ns.namesrv_config_update(config, (("serverWorkerThreads", "abc"), ("productEnvName", "test")))
    assert dict(after)["serverWorkerThreads"] == "8" and dict(after)["productEnvName"] == "test"
    code, after = ns.namesrv_config_update(config, (("serverWorkerThreads", "16"), ("clusterTest", "yes")))
    assert dict(after)["serverWorkerThreads"] == "16" and dict(after)["clusterTest"] == "false"
    # rocketmqHome is black-listed by DefaultRequestProcessor.initConfigBlackList whatever configBlackList says.
    for key in ("rocketmqHome", "kvConfigPath", "configBlackList"):
        assert ns.namesrv_config_update(config, ((key, "/x"),)) == (RC.NO_PERMISSION, config)
    assert ns.config_black_list((("configBlackList", "productEnvName"),)) >= {"productEnvName", "rocketmqHome"}


@given(st.integers(0, 15), st.integers(0, 8))
def test_subscribe_queue_ids(perm: int, nums: int) -> None:
    assert ns.subscribe_queue_ids(perm, nums) == (tuple(range(nums)) if perm & PERM_READ else ())


def test_auto_create_topic_conf_checked_on_4_9_8() -> None:
    assert ns.auto_create_topic_conf(True, 8) == (8, 8, PERM_INHERIT | PERM_READ | PERM_WRITE)
    assert ns.auto_create_topic_conf(False, 8) is None


@given(st.integers(0, 100_000), st.integers(0, 5_000))
def test_registration_overdue(since: int, grace: int) -> None:
    assert ns.registration_overdue(since, grace) == (since > BROKER_REGISTER_INTERVAL_MS + grace)


# ------------------------------------------------------------------------------------------------ state machine
@pytest.mark.slow  # the default model: `spec check` explores it (test_cli.test_full_check_passes)
def test_explore() -> None:
    result = explore(ns.model())
    assert result.complete and not result.violations
    assert result.states > 1000


def test_register_route_unregister() -> None:
    state = ns.step(ns.NamesrvState(), ns.RegisterBroker("a", 0, 2))
    answer = ns.route(state, "T2")
    assert answer.code is RC.SUCCESS
    assert answer.broker_addrs == {("a", 0, "a0")} and answer.broker_clusters == {("a", ns.CLUSTER)}
    assert {(q.broker_name, q.read_queue_nums, q.perm) for q in answer.queue_datas} == {("a", 2, 7)}
    slave = ns.RegisterBroker("a", 1, 1, ha_addr="ha1")
    assert dict(ns.answer(state, slave).fields) == {"masterAddr": "a0", "haServerAddr": ""}
    state = ns.step(state, slave)  # the slave: an address, no queue data
    assert ns.route(state, "T2").broker_addrs == {("a", 0, "a0"), ("a", 1, "a1")}
    state = ns.step(state, ns.UnregisterBroker("a", 0))
    assert ns.route(state, "T2").code is RC.SUCCESS  # the slave keeps the broker name and its routes
    assert ns.publish_queues(ns.route(state, "T2"), "T2") == ()  # no master: nothing to send to
    assert ns.subscribe_queues(ns.route(state, "T2"), "T2") == {MessageQueue("T2", "a", 0), MessageQueue("T2", "a", 1)}
    assert ns.answer(state, slave).fields == frozenset()  # its master is gone
    state = ns.step(state, ns.ChannelClosed("a1"))
    assert ns.route(state, "T2").code is RC.TOPIC_NOT_EXIST
    assert ns.topic_list(state) == frozenset() and ns.cluster_info(state) == (frozenset(), frozenset())


def test_registration_with_the_same_version_keeps_wiped_perm() -> None:
    state = ns.step(ns.NamesrvState(), ns.RegisterBroker("a", 0, 1))
    assert dict(ns.answer(state, ns.WritePerm("a", True)).fields) == {"wipeTopicCount": "1"}
    state = ns.step(state, ns.WritePerm("a", True))
    assert {q.perm for q in state.queue_data} == {PERM_READ}
    again = ns.step(state, ns.RegisterBroker("a", 0, 1))
    assert {q.perm for q in again.queue_data} == {PERM_READ}  # same data version: configs not re-read
    changed = ns.step(state, ns.RegisterBroker("a", 0, 2))
    assert {q.perm & PERM_WRITE for q in changed.queue_data} == {PERM_WRITE}


def test_a_body_not_matching_its_crc_changes_nothing() -> None:
    bad = ns.RegisterBroker("a", 0, 1, crc_ok=False)
    assert ns.answer(ns.NamesrvState(), bad) == ns.Answer(RC.SYSTEM_ERROR, "crc32 not match")
    assert ns.step(ns.NamesrvState(), bad) == ns.NamesrvState()


def test_expiry_scan_and_query_data_version() -> None:
    state = ns.step(ns.NamesrvState(), ns.RegisterBroker("b", 0, 1))
    state = ns.step(state, ns.TimePasses())
    assert ns.step(state, ns.ScanNotActiveBrokers()) == state  # 80 s: still live
    assert dict(ns.answer(state, ns.QueryDataVersion("b0", 2)).fields) == {"changed": "true"}
    refreshed = ns.step(state, ns.QueryDataVersion("b0", 1))  # unchanged: live as after a registration
    assert ns.step(ns.step(refreshed, ns.TimePasses()), ns.ScanNotActiveBrokers()).addrs
    state = ns.step(state, ns.TimePasses())
    scanned = ns.step(state, ns.ScanNotActiveBrokers())
    assert scanned.addrs == frozenset() and scanned.queue_data == frozenset()
    assert ns.step(scanned, ns.TimePasses()) == scanned  # nothing left to age


def test_kv_and_delete_topic() -> None:
    state = ns.step(ns.NamesrvState(), ns.RegisterBroker("a", 0, 1))
    state = ns.step(state, ns.PutKV(NAMESPACE_ORDER_TOPIC_CONFIG, "T1", "a:4"))
    assert ns.route(state, "T1", True).order_topic_conf == "a:4"
    assert ns.route(state, "T1").order_topic_conf is None
    assert ns.answer(state, ns.RegisterBroker("a", 0, 1)).body == {("T1", "a:4")}
    state = ns.step(state, ns.DeleteKV(NAMESPACE_ORDER_TOPIC_CONFIG, "T1"))
    assert ns.kv_namespace(state, NAMESPACE_ORDER_TOPIC_CONFIG) == frozenset()  # the namespace stays, empty
    assert ns.kv_namespace(state, "never") is None
    assert ns.answer(state, ns.PutKV(None, "k", "v")) == ns.Answer(RC.SYSTEM_ERROR, "namespace or key is null")
    state = ns.step(state, ns.DeleteTopic("T1"))
    assert ns.route(state, "T1").code is RC.TOPIC_NOT_EXIST


def test_delete_topic_of_one_cluster_and_topic_lists() -> None:
    state = ns.step(ns.NamesrvState(), ns.RegisterBroker("a", 0, 1))
    state = ns.step(state, ns.RegisterBroker("b", 0, 1, cluster="D", topics=(ns.TopicConf("T1", 2, 2, 6, 3),)))
    assert ns.topics_by_cluster(state, "D") == {"T1"} and ns.topics_by_cluster(state, "nope") == frozenset()
    assert ns.system_topics(state) == ({ns.CLUSTER, "D", "a", "b"}, {"a0", "b0"})
    assert ns.unit_topics(state, ns.UnitList.UNIT) == {"T1"}
    state = ns.step(state, ns.DeleteTopic("T1", cluster="D"))
    assert {q.broker_name for q in ns.route(state, "T1").queue_datas} == {"a"}


def test_filter_servers_follow_registrations() -> None:
    state = ns.step(ns.NamesrvState(), ns.RegisterBroker("a", 0, 1, filter_servers=("f1",)))
    assert ns.route(state, "T1").filter_servers == {("a0", ("f1",))}
    kept = ns.step(state, ns.RegisterBroker("a", 0, 1, filter_servers=None))  # a null list leaves them
    assert ns.route(kept, "T1").filter_servers == {("a0", ("f1",))}
    assert ns.route(ns.step(state, ns.RegisterBroker("a", 0, 1)), "T1").filter_servers == frozenset()


def test_restart_and_config() -> None:
    state = ns.step(ns.NamesrvState(), ns.RegisterBroker("a", 0, 1))
    state = ns.step(state, ns.PutKV("N", "k", "v"))
    state = ns.step(state, ns.UpdateConfig((("orderMessageEnable", "true"),)))
    assert ns.config_value(state.servers[0], "orderMessageEnable") == "true"
    assert ns.answer(state, ns.UpdateConfig((("rocketmqHome", "/x"),))).code is RC.NO_PERMISSION
    down = ns.step(state, ns.NamesrvStops())
    assert not ns.enabled(down, ns.RegisterBroker("a", 0, 1)) and ns.reachable_server(down) is None
    up = ns.step(down, ns.NamesrvStarts())
    assert ns.route(up, "T1").code is RC.TOPIC_NOT_EXIST and ns.kv_value(up, "N", "k") == (RC.SUCCESS, "v")
    assert ns.config_value(up.servers[0], "orderMessageEnable") == "false"


def _world(servers: int = 2, auto_create: bool = True) -> ns.NamesrvState:
    broker = ns.new_broker("broker-a", 0, "A0", "DefaultCluster", "A0:1", servers, auto_create)
    tables = tuple(ns.Tables(scan_in_ms=NAMESRV_SCAN_INITIAL_DELAY_MS) for _ in range(servers))
    return ns.NamesrvState(tables, (broker,), timed=True, grace_ms=10)


def _registration(state: ns.NamesrvState, server: int, version: int, *confs: ns.TopicConf) -> ns.RegisterBroker:
    return ns.RegisterBroker("broker-a", 0, version, server, "A0", "DefaultCluster", confs, "A0:1")


def test_a_broker_registers_with_every_name_server_on_time() -> None:
    tbw = ns.TopicConf(AUTO_CREATE_TOPIC_KEY, 8, 8, 7)
    state = ns.step(_world(), ns.BrokerStarts("broker-a", 0))
    assert not ns.enabled(state, _registration(state, 0, 1))  # without TBW102: not what the broker holds
    assert ns.enabled(_world(auto_create=False), _registration(_world(auto_create=False), 0, 1))
    state = ns.step(state, _registration(state, 0, 1, tbw))
    state = ns.step(state, ns.TimePasses(NAMESRV_SCAN_INITIAL_DELAY_MS))
    assert not ns.enabled(state, ns.TimePasses(1))  # the scans are due first
    state = ns.step(ns.step(state, ns.ScanNotActiveBrokers(0)), ns.ScanNotActiveBrokers(1))
    for _ in range(2):
        state = ns.step(state, ns.TimePasses(NAMESRV_SCAN_INTERVAL_MS))
        state = ns.step(ns.step(state, ns.ScanNotActiveBrokers(0)), ns.ScanNotActiveBrokers(1))
    # 25 s: name server 1 has had no registration; 30 s more would be late for both.
    state = ns.step(state, _registration(state, 1, 1, tbw))
    state = ns.step(state, ns.TopicCreated("broker-a", ns.TopicConf("T", 4, 2, 6)))
    late = ns.step(state, ns.TimePasses(5))
    assert not ns.enabled(late, ns.TimePasses(NAMESRV_SCAN_INTERVAL_MS))
    # A registration sent before the topic was created may still arrive; then only the new table.
    state = ns.step(state, _registration(state, 0, 1, tbw))
    state = ns.step(state, _registration(state, 0, 2, tbw, ns.TopicConf("T", 4, 2, 6)))
    assert not ns.enabled(state, _registration(state, 0, 1, tbw))
    cut = ns.step(state, ns.BrokerCutOff("broker-a", 0, 1, True))
    assert ns.broker_side(cut, "broker-a", 0).cut_off == {1}  # type: ignore[union-attr]
    with pytest.raises(ActionNotEnabled):
        ns.step(cut, ns.BrokerCutOff("broker-a", 0, 1, True))


def _world_model(module: object = ns) -> object:
    """A timed world of one broker (``a0``, no TBW102) and one name server, time in 10 s ticks."""
    broker = module.new_broker("a", 0, "a0", module.CLUSTER, "", 1, False)  # type: ignore[attr-defined]
    world = module.NamesrvState((module.Tables(scan_in_ms=NAMESRV_SCAN_INITIAL_DELAY_MS),),  # type: ignore[attr-defined]
                                (broker,), timed=True)
    return module.model(versions=1, with_kv=False, queries=False, initial=world,  # type: ignore[attr-defined]
                        tick_ms=NAMESRV_SCAN_INITIAL_DELAY_MS, brokers=(("a", 0, "a0"),))


def test_explore_a_world() -> None:
    """The brokers' obligations and the scan schedule hold in every reachable state of a timed world."""
    result = explore(_world_model())  # type: ignore[arg-type]
    assert result.complete and not result.violations
    assert result.states > 100


# --------------------------------------------------------------------------------------------------- sensitivity
# The mutants' models: the smallest bounds that still reach the broken rule.
SMALL = {"versions": 1, "with_kv": False, "restarts": False, "queries": False}


def test_mutant_slave_writing_queue_data() -> None:
    mod = mutant(ns, "    if broker_id != MASTER_ID:\n        return False\n", "")
    assert "NS-1" in explore(mod.model(**SMALL)).failed_clauses()


def test_mutant_keeping_routes_of_a_removed_broker() -> None:
    mod = mutant(ns, "        queue_data=frozenset(q for q in tables.queue_data if q.broker_name != name),\n", "")
    assert "NS-4" in explore(mod.model(**SMALL)).failed_clauses()


def test_mutant_expiry_at_or_after_the_limit() -> None:
    mod = mutant(ns, "    return last_update_ms + BROKER_CHANNEL_EXPIRED_MS < now_ms\n",
                 "    return last_update_ms + BROKER_CHANNEL_EXPIRED_MS // 2 < now_ms\n")
    assert "NS-8" in explore(mod.model(**SMALL)).failed_clauses()


def test_mutant_add_write_perm_keeping_other_bits() -> None:
    mod = mutant(ns, "    return PERM_READ | PERM_WRITE\n", "    return perm | PERM_WRITE\n")
    assert "NS-9" in explore(mod.model(**{**SMALL, "versions": 2})).failed_clauses()  # T2 inherits


def test_mutant_filter_servers_outliving_their_broker() -> None:
    mod = mutant(ns, "                          filters=frozenset(f for f in tables.filters if f[0] != addr),\n"
                     "                          addrs=tables.addrs - found)",
                 "                          addrs=tables.addrs - found)")
    broker = mod.RegisterBroker("a", 0, 1, filter_servers=("f",))
    state = mod.step(mod.step(mod.NamesrvState(), broker), mod.ChannelClosed("a0"))
    assert not all(inv.holds(state) for inv in mod.INVARIANTS if "NS-12" in inv.clauses)


def test_mutant_restart_keeping_routes() -> None:
    mod = mutant(ns, "    return _with_server(state, action.server, Tables(up=False, kv=tables.kv,",
                 "    return _with_server(state, action.server, attrs.evolve(tables, up=False, kv=tables.kv,")
    assert "NS-18" in explore(mod.model(versions=1, with_kv=False, queries=False)).failed_clauses()


def test_mutant_query_refreshing_a_changed_version() -> None:
    mod = mutant(ns, "    if not action.parses or live is None or data_version_changed(live[1], action.version):",
                 "    if not action.parses or live is None:")
    assert "NS-13" in explore(mod.model(with_kv=False, restarts=False)).failed_clauses()


def test_mutant_letting_time_pass_a_due_scan() -> None:
    mod = mutant(ns, "        if tables.up and tables.scan_in_ms is not None and action.ms > tables.scan_in_ms:",
                 "        if False:")
    # Time then runs past the scans without end: the first violation comes early in the breadth-first walk.
    assert "NS-8" in explore(_world_model(mod), max_states=3000).failed_clauses()  # type: ignore[arg-type]


def test_mutant_broker_obligations_ignoring_a_restarted_name_server() -> None:
    mod = mutant(ns, "(b, since_ms=_at(b.since_ms, action.server, 0)) for b in state.brokers)",
                 "(b) for b in state.brokers)")
    assert "NS-17" in explore(_world_model(mod), max_states=3000).failed_clauses()  # type: ignore[arg-type]


@pytest.mark.slow
def test_crosshair_mutant_expiry_boundary() -> None:
    mod = mutant(ns, "    return last_update_ms + BROKER_CHANNEL_EXPIRED_MS < now_ms\n",
                 "    return last_update_ms + BROKER_CHANNEL_EXPIRED_MS <= now_ms\n")
    run = crosshair_mutant(mod, "broker_expired", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr


@pytest.mark.slow
def test_crosshair_mutant_config_black_list_without_rocketmq_home() -> None:
    mod = mutant(ns, "    return frozenset(NAMESRV_CONFIG_ALWAYS_BLACK) | {k for k in listed.split(\";\") if k}",
                 "    return frozenset(NAMESRV_CONFIG_ALWAYS_BLACK[:3]) | {k for k in listed.split(\";\") if k}")
    run = crosshair_mutant(mod, "namesrv_config_update", per_condition_timeout=8)
    assert any(r.failed for r in run.results), run.stderr
