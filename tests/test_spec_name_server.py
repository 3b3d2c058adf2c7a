"""The name server (NS): registration, routes, cluster info, KV config, expiry; examples checked on 4.9.8."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutation import crosshair_mutant, mutant

from rocketspec.spec import name_server as ns
from rocketspec.spec.explorer import ActionNotEnabled, explore
from rocketspec.spec.protocol import (
    BROKER_CHANNEL_EXPIRED_MS,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    PERM_READ,
    PERM_WRITE,
    RequestCode,
    ResponseCode,
)

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


# ------------------------------------------------------------------------------------------------ state machine
def test_explore() -> None:
    result = explore(ns.model())
    assert result.complete and not result.violations
    assert result.states > 1000


def test_register_route_unregister() -> None:
    state = ns.step(ns.NamesrvState(), ns.RegisterBroker("a", 0, 2))
    answer = ns.route(state, "T2")
    assert answer.code is RC.SUCCESS
    assert answer.broker_addrs == {("a", 0, "a0")}
    assert {(q.broker_name, q.read_queue_nums, q.perm) for q in answer.queue_datas} == {("a", 2, 7)}
    state = ns.step(state, ns.RegisterBroker("a", 1, 1))  # the slave: an address, no queue data
    assert ns.route(state, "T2").broker_addrs == {("a", 0, "a0"), ("a", 1, "a1")}
    state = ns.step(state, ns.UnregisterBroker("a", 0))
    assert ns.route(state, "T2").code is RC.SUCCESS  # the slave keeps the broker name and its routes
    state = ns.step(state, ns.ChannelClosed("a1"))
    assert ns.route(state, "T2").code is RC.TOPIC_NOT_EXIST
    assert ns.topic_list(state) == frozenset() and ns.cluster_info(state) == (frozenset(), frozenset())


def test_registration_with_the_same_version_keeps_wiped_perm() -> None:
    state = ns.step(ns.NamesrvState(), ns.RegisterBroker("a", 0, 1))
    state = ns.step(state, ns.WritePerm("a", True))
    assert state.count == 1
    assert {q.perm for q in state.queue_data} == {PERM_READ}
    again = ns.step(state, ns.RegisterBroker("a", 0, 1))
    assert {q.perm for q in again.queue_data} == {PERM_READ}  # same data version: configs not re-read
    changed = ns.step(state, ns.RegisterBroker("a", 0, 2))
    assert {q.perm & PERM_WRITE for q in changed.queue_data} == {PERM_WRITE}


def test_expiry_scan() -> None:
    state = ns.step(ns.NamesrvState(), ns.RegisterBroker("b", 0, 1))
    state = ns.step(state, ns.TimePasses())
    assert ns.step(state, ns.ScanNotActiveBrokers()) == state  # 80 s: still live
    state = ns.step(state, ns.TimePasses())
    scanned = ns.step(state, ns.ScanNotActiveBrokers())
    assert scanned.addrs == frozenset() and scanned.queue_data == frozenset()
    with pytest.raises(ActionNotEnabled):
        ns.step(state, ns.TimePasses())


def test_kv_and_delete_topic() -> None:
    state = ns.step(ns.NamesrvState(), ns.RegisterBroker("a", 0, 1))
    state = ns.step(state, ns.PutKV(NAMESPACE_ORDER_TOPIC_CONFIG, "T1", "a:4"))
    assert ns.route(state, "T1", True).order_topic_conf == "a:4"
    assert ns.route(state, "T1").order_topic_conf is None
    state = ns.step(state, ns.DeleteTopic("T1"))
    assert ns.route(state, "T1").code is RC.TOPIC_NOT_EXIST
    assert ns.enabled(state, ns.DeleteKV(NAMESPACE_ORDER_TOPIC_CONFIG, "T1"))


# --------------------------------------------------------------------------------------------------- sensitivity
def test_mutant_slave_writing_queue_data() -> None:
    mod = mutant(ns, "    if broker_id != MASTER_ID:\n        return False\n", "")
    assert "NS-1" in explore(mod.model()).failed_clauses()


def test_mutant_keeping_routes_of_a_removed_broker() -> None:
    mod = mutant(ns, "        queue_data=frozenset(q for q in state.queue_data if q.broker_name != name),\n", "")
    assert "NS-4" in explore(mod.model()).failed_clauses()


def test_mutant_expiry_at_or_after_the_limit() -> None:
    mod = mutant(ns, "    return last_update_ms + BROKER_CHANNEL_EXPIRED_MS < now_ms\n",
                 "    return last_update_ms + BROKER_CHANNEL_EXPIRED_MS // 2 < now_ms\n")
    assert "NS-8" in explore(mod.model()).failed_clauses()


def test_mutant_add_write_perm_keeping_other_bits() -> None:
    mod = mutant(ns, "    return PERM_READ | PERM_WRITE\n", "    return perm | PERM_WRITE\n")
    assert "NS-9" in explore(mod.model()).failed_clauses()


@pytest.mark.slow
def test_crosshair_mutant_expiry_boundary() -> None:
    mod = mutant(ns, "    return last_update_ms + BROKER_CHANNEL_EXPIRED_MS < now_ms\n",
                 "    return last_update_ms + BROKER_CHANNEL_EXPIRED_MS <= now_ms\n")
    run = crosshair_mutant(mod, "broker_expired", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr
