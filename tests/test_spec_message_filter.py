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


# ------------------------------------------------------------------------------------------------ state machine
def test_explore() -> None:
    result = explore(mf.model())
    assert result.complete and not result.violations
    assert result.states > 100


def test_enabled_and_step() -> None:
    state = mf.FilterState(True)
    assert mf.enabled(state, mf.Pull(1))
    state = mf.step(state, mf.Pull(1))
    assert state.answer is RC.SUBSCRIPTION_NOT_EXIST
    state = mf.step(state, mf.Heartbeat("a > 1", 2))
    assert mf.step(state, mf.Pull(3)).answer is RC.SUBSCRIPTION_NOT_LATEST
    served = mf.step(state, mf.Pull(2))
    assert served.answer is RC.SUCCESS and served.filtered_by == ("a > 1", 2)
    state = mf.step(state, mf.Heartbeat("a >", 3))  # removes the filter data, registers version 3
    assert mf.step(state, mf.Pull(3)).answer is RC.FILTER_DATA_NOT_EXIST
    state = mf.step(state, mf.Heartbeat("a > 1", 1))
    assert mf.step(state, mf.Pull(3)).answer is RC.FILTER_DATA_NOT_LATEST
    off = mf.step(mf.step(mf.FilterState(False), mf.Heartbeat("a > 1", 1)), mf.Pull(1))
    assert off.answer is RC.SYSTEM_ERROR


def test_mutant_serving_stale_filter_data() -> None:
    mod = mutant(mf, "        if filter_data.version < request_sub_version:\n",
                 "        if False:\n")
    assert "FILTER-20" in explore(mod.model()).failed_clauses()


def test_mutant_ignoring_enable_property_filter() -> None:
    mod = mutant(mf, "    if not enable_property_filter:\n        return ResponseCode.SYSTEM_ERROR\n    return None",
                 "    return None")
    assert "FILTER-21" in explore(mod.model()).failed_clauses()


def test_mutant_keeping_an_invalid_expression() -> None:
    mod = mutant(mf, "str(expression_type)) if compiles else None", "str(expression_type))")
    assert "FILTER-18" in explore(mod.model()).failed_clauses()


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
def test_crosshair_mutant_tags_not_trimmed() -> None:
    mod = mutant(mf, "        tag = _java_trim(piece)\n", "        tag = piece\n")
    run = crosshair_mutant(mod, "subscription_tags", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr
