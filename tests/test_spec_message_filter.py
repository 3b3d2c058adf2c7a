"""Message filtering (FILTER): tags, SQL92 selectors and the broker's filter data; examples checked on 4.9.8."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutation import crosshair_mutant, mutant
from sql92_examples import EXAMPLES, properties, selectors

from rocketspec.spec import message_filter as mf
from rocketspec.spec.explorer import explore
from rocketspec.spec.java import string_hash as java_string_hash
from rocketspec.spec.protocol import ResponseCode

R = mf.Sql92Result
RC = ResponseCode
TAGS = st.text(alphabet=st.sampled_from("AB |*\t x"), max_size=12)


# ---------------------------------------------------------------------------------------------------------- tags
def test_java_string_hash_known_values() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("abc") == 96354
    assert java_string_hash("TagA") == 2598919
    assert java_string_hash("polygenelubricants") == -(2**31)  # the classic Integer.MIN_VALUE string
    assert java_string_hash("\U0001f600") == 55357 * 31 + 56832  # a surrogate pair hashes as two units


def test_subscription_tags_examples() -> None:
    assert mf.subscription_tags("*") == mf.subscription_tags("") == mf.subscription_tags(None) == ()
    assert mf.subscription_tags("TagA || TagB") == ("TagA", "TagB")
    assert mf.subscription_tags(" TagA||||TagA ") == ("TagA",)
    assert mf.subscription_tags(" * ") == ("*",)  # only exactly "*" means all


@given(st.lists(st.text(alphabet="ABC", min_size=1, max_size=3), min_size=1, max_size=4))
def test_subscription_tags_round_trip(tags: list[str]) -> None:
    assert mf.subscription_tags(" || ".join(tags)) == tuple(dict.fromkeys(tags))


@given(TAGS, st.text(alphabet="AB", max_size=3))
def test_broker_and_client_tag_matching(sub: str, tag: str) -> None:
    wanted = mf.subscription_tags(sub)
    code = java_string_hash(tag)
    every = sub in ("", "*")
    # A blank subscription (" ") has no tags and is not "*": the broker matches nothing, the client all.
    assert mf.broker_tag_matches(sub, code) == (every or any(java_string_hash(t) == code for t in wanted))
    # Widened to a long as the consume queue stores it: the int value decides.
    assert mf.broker_tag_matches(sub, code + (1 << 32)) == mf.broker_tag_matches(sub, code)
    assert mf.client_tag_matches(sub, tag) == (not wanted or tag in wanted)
    if wanted and mf.client_tag_matches(sub, tag):
        assert mf.broker_tag_matches(sub, code)  # the client only removes what the broker let through
    assert mf.client_tag_matches(sub, None) == (not wanted)


def test_tag_hash_collision_is_removed_by_the_client() -> None:
    assert java_string_hash("Aa") == java_string_hash("BB")
    assert mf.broker_tag_matches("Aa", java_string_hash("BB"))
    assert not mf.client_tag_matches("Aa", "BB")


@given(st.one_of(st.none(), st.sampled_from(("", "TAG", "SQL92", "tag", "sql92", "FOO"))))
def test_is_tag_type(kind: str | None) -> None:
    assert mf.is_tag_type(kind) == (kind in (None, "", "TAG"))


# --------------------------------------------------------------------------------------------------------- SQL92
@pytest.mark.parametrize(("expression", "props", "expected"), EXAMPLES)
def test_sql92_examples_checked_on_4_9_8(expression: str, props: dict[str, str], expected: str) -> None:
    assert mf.sql92_evaluate(expression, props) is R[expected]
    assert mf.sql92_compiles(expression) == (expected != "INVALID")
    assert mf.sql92_matches(expression, props) == (expected in ("TRUE", "INVALID"))


@given(selectors(), properties())
def test_sql92_matches_is_true_or_no_filter(expression: str, props: dict[str, str]) -> None:
    result = mf.sql92_evaluate(expression, props)
    assert (result is R.INVALID) == (not mf.sql92_compiles(expression))
    assert mf.sql92_matches(expression, props) == (result in (R.TRUE, R.INVALID))


NEGATED = {R.TRUE: R.FALSE, R.FALSE: R.TRUE, R.NULL: R.NULL, R.ERROR: R.ERROR}


@given(selectors(noise=False), properties())
def test_sql92_three_valued_logic(expression: str, props: dict[str, str]) -> None:
    """NOT, AND and OR around any selector: Java's three-valued, left-to-right, short-circuit rules (FILTER-15)."""
    result = mf.sql92_evaluate(expression, props)
    wrapped = mf.sql92_evaluate(f"({expression})", props)
    if result is R.INVALID or wrapped is R.INVALID:
        return  # trailing text a bare selector ignores is an error inside parentheses
    assert wrapped is result
    assert mf.sql92_evaluate(f"NOT ({expression})", props) is NEGATED[result]
    assert mf.sql92_evaluate(f"TRUE OR ({expression})", props) is R.TRUE
    assert mf.sql92_evaluate(f"FALSE AND ({expression})", props) is R.FALSE
    assert mf.sql92_evaluate(f"NULL AND ({expression})", props) is (
        R.FALSE if result is R.FALSE else R.ERROR if result is R.ERROR else R.NULL)
    assert mf.sql92_evaluate(f"({expression}) OR TRUE", props) is (R.ERROR if result is R.ERROR else R.TRUE)


@given(selectors(noise=False), properties())
def test_sql92_keywords_and_layout_do_not_matter(expression: str, props: dict[str, str]) -> None:
    if "--" in expression:
        return  # "--" starts a comment only when a line end follows: adding one changes the selector
    result = mf.sql92_evaluate(expression, props)
    spaced = expression.replace(" AND ", " /* c */\tAND\n ").replace(" OR ", "  oR  ")
    assert mf.sql92_evaluate(spaced, props) is result


@given(st.sampled_from(("1", "2", "3", "1.5", "0x1p1", "abc", " 2 ")), st.integers(-2, 4), st.integers(-2, 4))
def test_sql92_between_is_two_comparisons(value: str, low: int, high: int) -> None:
    props = {"a": value}
    lo, hi = (f"({low})" if low < 0 else str(low)), (f"({high})" if high < 0 else str(high))
    between = mf.sql92_evaluate(f"a BETWEEN {lo} AND {hi}", props)
    if low <= high or low < 0 or high < 0:  # a negative bound is not a constant: no order check
        assert between is mf.sql92_evaluate(f"a >= {lo} AND a <= {hi}", props)
    else:
        assert between is R.INVALID
    assert mf.sql92_evaluate(f"a NOT BETWEEN {lo} AND {hi}", props) is mf.sql92_evaluate(
        f"a < {lo} OR a > {hi}", props)


@given(st.integers(-(2**40), 2**40), st.integers(0, 2**40))
def test_sql92_integer_properties_compare_as_numbers(value: int, literal: int) -> None:
    props = {"a": str(value)}
    fits_int = -(2**31) <= value < 2**31
    expected_eq = R.TRUE if value == literal else R.FALSE
    if literal < 2**31 and not fits_int:
        expected_eq = R.ERROR  # Integer.valueOf of a value beyond int
    assert mf.sql92_evaluate(f"a = {literal}", props) is expected_eq
    assert mf.sql92_evaluate(f"a > {literal}.0", props) is (R.TRUE if value > literal else R.FALSE) or literal == 0


@given(st.text(max_size=6), st.sampled_from(("'x'", "'1'", "''")))
def test_sql92_strings_compare_only_for_equality(value: str, literal: str) -> None:
    text = literal[1:-1]
    assert mf.sql92_evaluate(f"a = {literal}", {"a": value}) is (R.TRUE if value == text else R.FALSE)
    assert mf.sql92_evaluate(f"a <> {literal}", {"a": value}) is (R.FALSE if value == text else R.TRUE)
    assert mf.sql92_evaluate(f"a > {literal}", {"a": value}) is R.INVALID
    assert mf.sql92_evaluate(f"a IN ({literal}, 'zz')", {"a": value}) is (R.TRUE if value in (text, "zz") else R.FALSE)


def test_sql92_missing_properties() -> None:
    assert mf.sql92_evaluate("a = 'x'", {}) is R.NULL
    assert mf.sql92_evaluate("a > 1", {}) is R.NULL
    assert mf.sql92_evaluate("a IN ('x')", {}) is R.NULL
    assert mf.sql92_evaluate("a IS NULL", {}) is R.TRUE
    assert mf.sql92_evaluate("a IS NOT NULL", {}) is R.FALSE
    assert mf.sql92_evaluate(None, {}) is R.INVALID
    assert not mf.sql92_compiles(None)
    assert not mf.sql92_matches("a = 'x'", {})


# -------------------------------------------------------------------------------------------- broker decisions
@given(st.booleans(), st.one_of(st.none(), st.sampled_from(("", "TAG", "SQL92", "FOO"))),
       st.one_of(st.none(), st.sampled_from(("a > 1", "a >", "*", "TRUE"))), st.booleans())
def test_check_client_config(has_sub: bool, kind: str | None, expression: str | None, enabled: bool) -> None:
    code = mf.check_client_config(has_sub, kind, expression, enabled)
    if not has_sub or mf.is_tag_type(kind):
        assert code is RC.SUCCESS
    elif not enabled:
        assert code is RC.SYSTEM_ERROR
    elif kind == "SQL92" and mf.sql92_compiles(expression):
        assert code is RC.SUCCESS
    else:
        assert code is RC.SUBSCRIPTION_PARSE_FAILED


def test_register_filter_data_examples() -> None:
    first = mf.register_filter_data(None, "SQL92", "a > 1", 5)
    assert first == mf.FilterData("a > 1", 5)
    assert mf.register_filter_data(None, "SQL92", "a >", 5) is None
    assert mf.register_filter_data(first, "SQL92", "b = 1", 5) == first  # same version: ignored, even changed
    assert mf.register_filter_data(first, "SQL92", "a > 1", 7) == mf.FilterData("a > 1", 7)
    assert mf.register_filter_data(first, "SQL92", "b = 1", 7) == mf.FilterData("b = 1", 7)
    assert mf.register_filter_data(first, "SQL92", "b =", 7) is None  # removed: the client reports the error
    assert mf.register_filter_data(first, "TAG", "x", 9) == first
    assert mf.register_filter_data(first, "SQL92", "", 9) == first
    assert mf.register_filter_data(first, "FOO", "a > 1", 9) is None  # another type: changed, cannot compile


@given(st.booleans(), st.sampled_from((None, "TAG", "SQL92")), st.sampled_from((None, "", "a > 1")),
       st.one_of(st.none(), st.builds(mf.FilterData, st.just("a > 1"), st.integers(0, 3))), st.integers(0, 3),
       st.booleans())
def test_pull_filter_answer(flag: bool, kind: str | None, expression: str | None, data: mf.FilterData | None,
                            version: int, enabled: bool) -> None:
    code = mf.pull_filter_answer(flag, kind, expression, data, version, enabled)
    if mf.is_tag_type(kind):
        assert code is None
    elif flag and not expression:
        assert code is RC.SUBSCRIPTION_PARSE_FAILED
    elif not flag and data is None:
        assert code is RC.FILTER_DATA_NOT_EXIST
    elif not flag and data is not None and data.version < version:
        assert code is RC.FILTER_DATA_NOT_LATEST
    else:
        assert code is (None if enabled else RC.SYSTEM_ERROR)


# --------------------------------------------------------------------------------- subscriptions, registration
def test_build_subscription_examples() -> None:
    assert mf.build_subscription("T", None, None, 5) == mf.Subscription("T", "TAG", "*", 5)
    assert mf.build_subscription("T", "TAG", "", 5) == mf.Subscription("T", "TAG", "*", 5)
    assert mf.build_subscription("T", "TAG", " A || B", 5) == mf.Subscription("T", "TAG", " A || B", 5)
    assert mf.build_subscription("T", "TAG", "||||", 5) is None  # "subString split error"
    assert mf.build_subscription("T", "TAG", "|||", 5) is not None  # the pieces "" and "|"
    assert mf.build_subscription("T", "SQL92", "", 5) is None  # "Expression can't be null! SQL92"
    assert mf.build_subscription("T", "SQL92", "a >", 5) == mf.Subscription("T", "SQL92", "a >", 5)


@given(st.sampled_from(("TAG", "SQL92", None)), st.text(alphabet="a|* ", max_size=5), st.integers(0, 9))
def test_build_subscription(kind: str | None, expression: str, version: int) -> None:
    sub = mf.build_subscription("T", kind, expression, version)
    if kind == "SQL92":
        assert (sub is None) == (expression == "")
    elif sub is None:
        assert set(expression.split("||")) == {""}
    else:
        assert sub.expression_type == "TAG" and sub.version == version


S = mf.Subscription


def test_register_subscriptions_examples() -> None:
    old = (S("R", "TAG", "*", 1), S("T", "SQL92", "a > 1", 5))
    assert mf.register_subscriptions(None, (S("T", "TAG", "A", 3),)) == (S("T", "TAG", "A", 3),)
    assert mf.register_subscriptions(old, (S("R", "TAG", "*", 1), S("T", "TAG", "A", 3))) == old  # older: kept
    assert mf.register_subscriptions(old, (S("T", "TAG", "A", 5),)) == (old[1],)  # equal: kept; R removed
    assert mf.register_subscriptions(old, (S("T", "TAG", "A", 6),)) == (S("T", "TAG", "A", 6),)


def test_registration_answer_examples() -> None:
    registered = (S("T", "TAG", "*", 5),)
    assert mf.registration_answer(None, "T", 1) is RC.SUBSCRIPTION_NOT_EXIST
    assert mf.registration_answer(registered, "U", 1) is RC.SUBSCRIPTION_NOT_EXIST
    assert mf.registration_answer(registered, "T", 6) is RC.SUBSCRIPTION_NOT_LATEST
    assert mf.registration_answer(registered, "T", 5) is None


@given(st.lists(st.booleans(), max_size=40), st.integers(0, 40), st.integers(1, 40), st.booleans())
def test_scan_queue(kept: list[bool], offset: int, max_msgs: int, suspend: bool) -> None:
    offset = min(offset, len(kept))
    answer = mf.scan_queue(tuple(kept), offset, max_msgs, suspend)
    wanted = [i for i in range(offset, len(kept)) if kept[i]][:min(max_msgs, 32)]
    assert list(answer.found) == wanted
    if offset == len(kept):
        assert answer.code is (None if suspend else RC.PULL_NOT_FOUND) and answer.next_begin == offset
    elif wanted:
        assert answer.code is RC.SUCCESS
        full = len(wanted) == min(max_msgs, 32)
        assert answer.next_begin == (wanted[-1] + 1 if full else len(kept))
    else:
        assert answer.code is RC.PULL_RETRY_IMMEDIATELY and answer.next_begin == len(kept)


def test_broker_and_client_keep() -> None:
    assert mf.tags_code(None) == mf.tags_code("") == 0
    assert mf.tags_code("Aa") == mf.tags_code("BB")
    assert mf.broker_keeps("TAG", "Aa", None, "BB", {})  # the hash code decides at the broker
    assert not mf.client_keeps(S("T", "TAG", "Aa", 1), "BB")  # the tag at the client
    assert mf.broker_keeps("SQL92", "a > 1", None, None, {})  # no filter data: everything
    assert not mf.broker_keeps("SQL92", "a > 1", "a > 1", None, {"a": "1"})
    assert mf.broker_keeps("SQL92", "a > 1", "a > 1", None, {"a": "2"})
    assert mf.client_keeps(S("T", "SQL92", "a > 1", 1), None)  # no tags: the client keeps all


@given(st.sampled_from(("*", "A", "Aa", "A || BB", " ")), st.one_of(st.none(), st.sampled_from(("A", "BB", "Aa"))))
def test_keeps_agree_with_the_tag_oracles(expression: str, tags: str | None) -> None:
    assert mf.broker_keeps("TAG", expression, None, tags, {}) == mf.broker_tag_matches(expression, mf.tags_code(tags))
    assert mf.client_keeps(S("T", "TAG", expression, 1), tags) == mf.client_tag_matches(expression, tags)


# ------------------------------------------------------------------------------------------------ state machine
@pytest.mark.slow  # the default model: `spec check` explores it (test_cli.test_full_check_passes)
def test_explore() -> None:
    result = explore(mf.model())
    assert result.complete and not result.violations
    assert result.states > 1000


C1, C2 = "c1", "c2"
M0 = mf.Message("m0", "BB", (("TAGS", "BB"), ("a", "2")))


def _retry(version: int) -> mf.Subscription:
    return S("%RETRY%CG", "TAG", "*", version)


def test_enabled_and_step() -> None:
    state = mf.FilterState(True)
    assert not mf.enabled(state, mf.Pull(C1, mf.TOPIC, 0, 0, 1))  # no such consumer
    state = mf.step(state, mf.ConsumerStarts(C1, "SQL92", "a > 1", 1))
    assert not mf.enabled(state, mf.ConsumerStarts(C1, "TAG", "*", 2))  # started once
    assert not mf.enabled(state, mf.Subscribe(C1, "SQL92", "", 2))  # FilterAPI.build throws
    pull = mf.Pull(C1, mf.TOPIC, 0, 0, 1)
    assert mf.pull_answer(state, pull)[0].code is RC.SUBSCRIPTION_NOT_EXIST
    subs = (_retry(1), S(mf.TOPIC, "SQL92", "a > 1", 1))
    assert mf.enabled(state, mf.CheckClientConfig(C1, subs[1]))
    state = mf.step(state, mf.CheckClientConfig(C1, subs[1]))
    assert state.consumer(C1).check is RC.SUCCESS  # type: ignore[union-attr]
    state = mf.step(state, mf.Heartbeat(C1, subs))
    assert state.filter_data == mf.FilterData("a > 1", 1) and state.sub_version == 1
    state = mf.step(state, mf.Store(0, M0))
    answer, used = mf.pull_answer(state, pull)
    assert answer == mf.PullAnswer(RC.SUCCESS, (0,), 1) and used == ("SQL92", "a > 1")
    state = mf.step(state, pull)
    assert state.consumer(C1).pending == {(mf.TOPIC, 0, 0)}  # type: ignore[union-attr]
    state = mf.step(state, mf.Deliver(C1, mf.TOPIC, 0, 0))
    assert state.consumer(C1).received == {(mf.TOPIC, 0, 0)}  # type: ignore[union-attr]
    assert not mf.enabled(state, mf.Deliver(C1, mf.TOPIC, 0, 0))  # handed over once per pull
    # A second consumer of the group with a newer subscription that does not compile: the data goes.
    state = mf.step(state, mf.ConsumerStarts(C2, "SQL92", "a >", 2))
    state = mf.step(state, mf.Heartbeat(C2, (_retry(2), S(mf.TOPIC, "SQL92", "a >", 2))))
    assert state.filter_data is None and state.sub_version == 2
    assert mf.pull_answer(state, pull)[0].code is RC.FILTER_DATA_NOT_EXIST
    # The first consumer's heartbeat brings its (older) data back: the second's pulls are not served by it.
    state = mf.step(state, mf.Heartbeat(C1, subs))
    assert mf.pull_answer(state, pull)[0].code is RC.SUCCESS
    assert mf.pull_answer(state, mf.Pull(C2, mf.TOPIC, 0, 0, 2))[0].code is RC.FILTER_DATA_NOT_LATEST
    assert mf.pull_answer(state, mf.Pull(C2, mf.TOPIC, 0, 1, 3))[0].code is RC.SUBSCRIPTION_NOT_LATEST
    # A rebalance raised c1's version: the raised subscription is c1's from the heartbeat on.
    raised = (_retry(1), S(mf.TOPIC, "SQL92", "a > 1", 4))
    assert mf.enabled(state, mf.Heartbeat(C1, raised))
    assert not mf.enabled(state, mf.Heartbeat(C1, (_retry(1), S(mf.TOPIC, "SQL92", "a > 2", 4))))
    off = mf.step(mf.FilterState(False), mf.ConsumerStarts(C1, "SQL92", "a > 1", 1))
    off = mf.step(off, mf.CheckClientConfig(C1, subs[1]))
    assert off.consumer(C1).check is RC.SYSTEM_ERROR  # type: ignore[union-attr]
    off = mf.step(off, mf.Heartbeat(C1, subs))
    assert mf.pull_answer(off, pull)[0].code is RC.SYSTEM_ERROR
    assert not mf.enabled(off, mf.CheckClientConfig(C1, subs[1]))  # a start checks before its first heartbeat


def test_tag_collisions_reach_the_client_and_stop_there() -> None:
    state = mf.step(mf.FilterState(False), mf.ConsumerStarts(C1, "TAG", "Aa", 1))
    state = mf.step(state, mf.Heartbeat(C1, (_retry(1), S(mf.TOPIC, "TAG", "Aa", 1))))
    state = mf.step(mf.step(state, mf.Store(0, M0)), mf.Rebalanced(C1, mf.TOPIC, frozenset({0})))
    pull = mf.Pull(C1, mf.TOPIC, 0, 0, 1)
    assert mf.pull_answer(state, pull)[0].found == (0,)  # "BB" has the hash code of "Aa"
    assert mf.step(state, pull).consumer(C1).pending == frozenset()  # type: ignore[union-attr]


def test_mutant_serving_stale_filter_data() -> None:
    mod = mutant(mf, "        if filter_data.version < request_sub_version:\n",
                 "        if False:\n")
    # Two consumers, no message: a pull of the queue's end is served (held) with the filter data it found.
    assert "FILTER-20" in explore(mod.model(mod.Bounds(max_messages=0))).failed_clauses()


def test_mutant_ignoring_enable_property_filter() -> None:
    mod = mutant(mf, "    if not enable_property_filter:\n        return ResponseCode.SYSTEM_ERROR\n    return None",
                 "    return None")
    assert "FILTER-21" in explore(mod.model(mod.Bounds(clients=("c1",), pulling=("c1",)))).failed_clauses()


def test_mutant_keeping_an_invalid_expression() -> None:
    mod = mutant(mf, "str(expression_type)) if compiles else None", "str(expression_type))")
    assert "FILTER-18" in explore(mod.model(mod.Bounds(clients=("c1",), pulling=("c1",)))).failed_clauses()


def test_mutant_older_heartbeat_replacing_the_registration() -> None:
    mod = mutant(mf, "sub if kept is None or sub.version > kept.version else kept", "sub")
    assert "FILTER-22" in explore(mod.model(mod.Bounds(max_messages=0))).failed_clauses()


def test_mutant_client_keeping_collisions() -> None:
    mod = mutant(mf, "        return client_tag_matches(subscription.expression, tags)\n", "        return True\n")
    assert {"FILTER-3", "FILTER-26"} & explore(mod.model(mod.Bounds(clients=("c1",), pulling=("c1",)))).failed_clauses()


def test_mutant_scan_without_the_filter() -> None:
    mod = mutant(mf, "broker_keeps(sub.expression_type, sub.expression, sql, m.tags, m.props) for m in queue)",
                 "True for m in queue)")
    bounds = mod.Bounds(clients=("c1",), pulling=("c1",), max_messages=2)  # m1 is kept by none of the filters
    assert "FILTER-23" in explore(mod.model(bounds)).failed_clauses()


def test_mutant_and_without_short_circuit_fails_the_examples() -> None:
    mod = mutant(mf, "        if left is not None and left[1] is stop:\n            return (\"bool\", stop)\n", "")
    assert mf.sql92_evaluate("FALSE AND a > 1", {"a": "x"}) is R.FALSE
    assert mod.sql92_evaluate("FALSE AND a > 1", {"a": "x"}).name == "ERROR"


def test_mutant_string_conversion_without_range_check_fails_the_examples() -> None:
    mod = mutant(mf, "    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):\n", "    if False:\n")
    assert [e for e, p, want in EXAMPLES if mod.sql92_evaluate(e, p).name != want]


@pytest.mark.slow
def test_crosshair_mutant_check_client_config_without_the_switch() -> None:
    switch = "    if not enable_property_filter:\n        return ResponseCode.SYSTEM_ERROR\n    if expression_type"
    mod = mutant(mf, switch, "    if expression_type")
    run = crosshair_mutant(mod, "check_client_config", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr


@pytest.mark.slow
def test_crosshair_mutant_scan_ignoring_the_batch_limit() -> None:
    mod = mutant(mf, "        if len(found) >= limit:\n", "        if False:\n")
    run = crosshair_mutant(mod, "scan_queue", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr


@pytest.mark.slow
def test_crosshair_mutant_tags_not_trimmed() -> None:
    mod = mutant(mf, "        tag = java_trim(piece)\n", "        tag = piece\n")
    run = crosshair_mutant(mod, "subscription_tags", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr
