"""The reference broker's SQL92 filter: its own parser and evaluator, CHECK_CLIENT_CONFIG and filtered pulls.

The evaluator is checked three ways: the examples 4.9.8's jar answered (``sql92_examples``), its compile errors'
texts, and generated selectors against the spec's independent oracle (``spec.message_filter.sql92_evaluate``).
``tests/test_realclient_java_filter.py`` runs generated selectors through the 4.9.8 jar itself.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from sql92_examples import EXAMPLES, properties, selectors
from test_refimpl_broker import Env, FakeChannel

from rocketspec.refimpl.broker.filter import ConsumerFilterManager
from rocketspec.refimpl.broker.sql92 import EvaluationError, SelectorError, compile_selector
from rocketspec.refimpl.broker.sql92_values import java_double_str
from rocketspec.refimpl.message import decode_stored_messages
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec import message_filter as oracle
from rocketspec.spec.protocol import PULL_FLAG_SUBSCRIPTION, PULL_FLAG_SUSPEND, RequestCode, ResponseCode

RC = ResponseCode


def outcome(expression: str, props: dict[str, str]) -> str:
    """TRUE, FALSE, NULL, ERROR or INVALID, as the refimpl decides."""
    try:
        selector = compile_selector(expression)
    except SelectorError:
        return "INVALID"
    try:
        value = selector.evaluate(props)
    except EvaluationError:
        return "ERROR"
    return {True: "TRUE", False: "FALSE", None: "NULL"}[value]


@pytest.mark.parametrize(("expression", "props", "expected"), EXAMPLES)
def test_examples_checked_on_4_9_8(expression: str, props: dict[str, str], expected: str) -> None:
    assert outcome(expression, props) == expected
    if expected != "INVALID":
        assert compile_selector(expression).matches(props) == (expected == "TRUE")


@settings(max_examples=120)
@given(selectors(), properties())
def test_refimpl_agrees_with_the_spec_oracle(expression: str, props: dict[str, str]) -> None:
    assert outcome(expression, props) == oracle.sql92_evaluate(expression, props).value


# Compile errors as 4.9.8 words them (MQFilterException.getMessage: the cause's toString), read from the jar.
COMPILE_ERRORS = (
    ("a > 0.0", "java.lang.RuntimeException: 0.0 is less than 4.9E-324"),
    ("a > 1e400", "java.lang.RuntimeException: 1e400 is greater than 1.7976931348623157E308"),
    ("TRUE = 'true'", "java.lang.RuntimeException: 'TRUE' cannot be compared with ''true''"),
    ("a BETWEEN 2 AND 1", "java.lang.RuntimeException: Illegal values of between, left value(2) must less than or "
                          "equal to right value(1)"),
    ("1 IN ('x')", "java.lang.RuntimeException: Expected a property for In expression, got: 1"),
    ("a > 'x'", "java.lang.RuntimeException: Value ''x'' cannot be compared."),
    ("1", "org.apache.rocketmq.filter.parser.ParseException: Expression will not result in a boolean value: 1"),
    ("a = = 1", 'org.apache.rocketmq.filter.parser.ParseException: Encountered " "=" "= "" at line 1, column 5.'),
    ("a NOT b", 'org.apache.rocketmq.filter.parser.ParseException: Encountered " "NOT" "NOT "" at line 1, column 3.'),
    ("a IN (1)", 'org.apache.rocketmq.filter.parser.ParseException: Encountered " <DECIMAL_LITERAL> "1 "" at line 1, '
                 'column 7.'),
    ("a = 1 AND", 'org.apache.rocketmq.filter.parser.ParseException: Encountered "<EOF>" at line 1, column 9.'),
    ("", 'org.apache.rocketmq.filter.parser.ParseException: Encountered "<EOF>" at line 0, column 0.'),
    ("a ! 1", 'org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line 1, column 3.  Encountered: '
              '"!" (33), after : ""'),
    ("a = 'x", 'org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line 1, column 7.  Encountered: '
               "<EOF> after : \"\\'x\""),
    ("(a >= c_1) > 2", "java.lang.RuntimeException: Value '(a >= c_1)' cannot be compared."),
    ("(A OR 2 <> --1) < 1", "java.lang.RuntimeException: Value '(A || (NOT (2 == (- (- 1)))))' cannot be compared."),
    ("(b NOT IN ('x', 'abc')) > 1", "java.lang.RuntimeException: Value 'b NOT IN ( x, abc )' cannot be compared."),
)


@pytest.mark.parametrize(("expression", "message"), COMPILE_ERRORS)
def test_compile_error_texts(expression: str, message: str) -> None:
    """Java's texts for semantic errors exactly; for syntax errors the first line of JavaCC's message (4.9.8 goes
    on with the list of expected tokens)."""
    with pytest.raises(SelectorError) as caught:
        compile_selector(expression)
    assert str(caught.value) == message


def test_java_double_text() -> None:
    assert [java_double_str(x) for x in (1.0, 1000.0, 1e7, 1.5e-5, 0.001, -2.5, 1e22)] == [
        "1.0", "1000.0", "1.0E7", "1.5E-5", "0.001", "-2.5", "1.0E22"]


def test_lazy_lexing_and_trailing_text() -> None:
    assert compile_selector("a = 1 b = 2").matches({"a": "1"})  # the parse stops after a complete expression
    assert compile_selector("a = 1 b @").matches({"a": "1"})  # '@' is never read
    for bad in ("a = 1 @", "a = 1 NOT @", "a = 1 IS", "a = 1 AND"):  # read as the next (or second) token
        with pytest.raises(SelectorError):
            compile_selector(bad)
    assert compile_selector("x IS NULL").matches({})


def test_evaluation_errors_mean_no_match() -> None:
    selector = compile_selector("a > 1")
    with pytest.raises(EvaluationError):
        selector.evaluate({"a": "1.5"})  # Integer.valueOf("1.5")
    assert not selector.matches({"a": "1.5"})
    assert compile_selector("a > 1.0").matches({"a": "1.5"})
    with pytest.raises(SelectorError):
        compile_selector(None)


def test_filter_manager_versions() -> None:
    manager = ConsumerFilterManager()
    assert not manager.register("T", "G", "a > 1", "TAG", 1)
    assert not manager.register("T", "G", "", "SQL92", 1)
    assert not manager.register("T", "G", "a >", "SQL92", 1) and manager.get("T", "G") is None
    assert manager.register("T", "G", "a > 1", "SQL92", 5)
    assert not manager.register("T", "G", "b = 1", "SQL92", 5)  # same version: ignored
    assert manager.get("T", "G").expression == "a > 1"  # type: ignore[union-attr]
    assert manager.register("T", "G", "a > 1", "SQL92", 6) and manager.get("T", "G").client_version == 6  # type: ignore[union-attr]
    assert not manager.register("T", "G", "b =", "SQL92", 7) and manager.get("T", "G") is None


# ------------------------------------------------------------------------------------------- through the broker
def check(env: Env, sub: dict[str, Any] | None, body: bytes | None = None) -> RemotingCommand:
    payload = body if body is not None else json.dumps(
        {"clientId": "c1", "group": "CG", **({"subscriptionData": sub} if sub is not None else {})}).encode()
    response = env.handle(RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, {}, payload))
    assert response is not None
    return response


def sql_sub(expression: str | None, kind: str | None = "SQL92", version: int = 1) -> dict[str, Any]:
    return {"topic": "T", "subString": expression, "expressionType": kind, "tagsSet": [], "codeSet": [],
            "subVersion": version, "classFilterMode": False}


def test_check_client_config_answers() -> None:
    on, off = Env(enable_property_filter=True), Env()
    assert check(on, sql_sub("a > 1")).code == RC.SUCCESS
    assert check(on, None).code == RC.SUCCESS
    assert check(on, sql_sub("*", "TAG")).code == RC.SUCCESS
    assert check(off, sql_sub("*", None)).code == RC.SUCCESS
    refused = check(off, sql_sub("a > 1"))
    assert (refused.code, refused.remark) == (RC.SYSTEM_ERROR,
                                              "The broker does not support consumer to filter message by SQL92")
    bad = check(on, sql_sub("a > 'x'"))
    assert (bad.code, bad.remark) == (RC.SUBSCRIPTION_PARSE_FAILED,
                                      "java.lang.RuntimeException: Value ''x'' cannot be compared.")
    assert check(on, sql_sub(None)).code == RC.SUBSCRIPTION_PARSE_FAILED
    assert check(on, sql_sub("a > 1", "FOO")).code == RC.SUBSCRIPTION_PARSE_FAILED
    assert check(off, sql_sub("a > 1", "FOO")).code == RC.SYSTEM_ERROR
    # Bad bodies as 4.9.8 answers them (read from a real broker): Java's decoding fails with SYSTEM_ERROR, JSON null
    # or an object without subscription data is a SUCCESS.
    for junk in (b"", b"{not json", b"[1, 2]", b'{"subscriptionData": "x"}'):
        assert check(on, None, junk).code == RC.SYSTEM_ERROR
    for empty in (b"null", b"{}", b'{"subscriptionData": null}'):
        assert check(on, None, empty).code == RC.SUCCESS
    assert check(on, None, b"").remark == ('java.lang.NullPointerException: Cannot read the array length because '
                                           '"bytes" is null, java.base/java.lang.String.<init>(String.java:1387)')
    unknown = check(on, sql_sub("a > 1", "sql92"))  # the type is case-sensitive
    assert (unknown.code, unknown.remark) == (RC.SUBSCRIPTION_PARSE_FAILED, (
        'Cannot invoke "org.apache.rocketmq.filter.FilterSpi.compile(String)" because the return value of '
        '"org.apache.rocketmq.filter.FilterFactory.get(String)" is null'))
    assert check(on, {"expressionType": 5, "subString": 7}).code == RC.SUBSCRIPTION_PARSE_FAILED


@given(selectors(noise=False))
@settings(max_examples=60)
def test_check_client_config_follows_the_oracle(expression: str) -> None:
    env = _shared_env()
    code = check(env, sql_sub(expression)).code
    assert code == oracle.check_client_config(True, "SQL92", expression, True)


_ENV: list[Env] = []


def _shared_env() -> Env:
    if not _ENV:
        _ENV.append(Env(enable_property_filter=True))
    return _ENV[0]


MESSAGES = (
    ("m0", {"a": "1", "s": "x"}), ("m1", {"a": "5"}), ("m2", {"a": "abc"}), ("m3", {"s": "y"}),
    ("m4", {"a": "2.5", "s": "x"}), ("m5", {}),
)


def sql_heartbeat(env: Env, channel: FakeChannel, expression: str, version: int, kind: str = "SQL92") -> None:
    body = {"clientID": "c1", "producerDataSet": [], "consumerDataSet": [{
        "groupName": "CG", "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": False,
        "subscriptionDataSet": [sql_sub(expression, kind, version)]}]}
    response = env.handle(RemotingCommand.request(RequestCode.HEART_BEAT, {}, json.dumps(body).encode()), channel)
    assert response is not None and response.code == RC.SUCCESS


def fill(env: Env) -> None:
    env.broker.create_topic("T", 1, 1)
    for body, props in MESSAGES:
        assert env.send("T", body.encode(), tags="TagA", props=props).code == RC.SUCCESS


def bodies(response: RemotingCommand | None) -> list[str]:
    assert response is not None and response.code == RC.SUCCESS, response
    return [m.body.decode() for m in decode_stored_messages(response.body or b"", "broker-a")]


@pytest.mark.parametrize("expression", ["a > 1", "a > 1.0", "s = 'x' OR a IS NULL", "a BETWEEN 1 AND 5",
                                        "s IN ('x', 'y') AND NOT (a = '1')", "TAGS = 'TagA' AND a <> 5", "TRUE"])
def test_pull_filters_by_the_registered_expression(expression: str) -> None:
    env = Env(enable_property_filter=True)
    fill(env)
    channel = env.channel()
    sql_heartbeat(env, channel, expression, 7)
    expected = [b for b, props in MESSAGES if oracle.sql92_matches(expression, {**props, "TAGS": "TagA"})]
    assert bodies(env.pull("T", sys_flag=0, sub_version=7, channel=channel)) == expected
    # The subscription bit carries the expression in the request: the same answer, without filter data.
    assert bodies(env.pull("T", group="OTHER", subscription=expression, expressionType="SQL92",
                           sys_flag=PULL_FLAG_SUBSCRIPTION)) == expected


def test_pull_filter_data_checks() -> None:
    env = Env(enable_property_filter=True)
    fill(env)
    channel = env.channel()
    sql_heartbeat(env, channel, "a >", 3)  # does not compile: no filter data
    missing = env.pull("T", sys_flag=0, sub_version=3, channel=channel)
    assert missing is not None and (missing.code, missing.remark) == (
        RC.FILTER_DATA_NOT_EXIST, "The broker's consumer filter data is not exist!Your expression may be wrong!")
    sql_heartbeat(env, channel, "a > 1", 4)
    assert bodies(env.pull("T", sys_flag=0, sub_version=4, channel=channel)) == ["m1"]  # "2.5" > 1 throws
    stale = env.pull("T", sys_flag=0, sub_version=5, channel=channel)
    assert stale is not None and stale.code == RC.SUBSCRIPTION_NOT_LATEST  # the subscription is checked first
    sql_heartbeat(env, channel, "a > 1", 2)  # older: changes nothing
    assert env.broker.filters.get("T", "CG").client_version == 4  # type: ignore[union-attr]
    # Every message fails the expression: the scan ends with NO_MATCHED_MESSAGE -> PULL_RETRY_IMMEDIATELY.
    sql_heartbeat(env, channel, "a = 'zzz'", 9)
    none = env.pull("T", sys_flag=0, sub_version=9, channel=channel)
    assert none is not None and none.code == RC.PULL_RETRY_IMMEDIATELY and none.ext_fields["nextBeginOffset"] == "6"


def test_pull_filter_data_not_latest() -> None:
    env = Env(enable_property_filter=True)
    fill(env)
    channel = env.channel()
    sql_heartbeat(env, channel, "a > 1", 4)
    sql_heartbeat(env, channel, "a >", 6)  # removes the filter data; the subscription moves to version 6
    sql_heartbeat(env, channel, "a > 1", 5)  # new filter data at 5 (the subscription stays at 6)
    stale = env.pull("T", sys_flag=0, sub_version=6, channel=channel)
    assert stale is not None and (stale.code, stale.remark) == (RC.FILTER_DATA_NOT_LATEST,
                                                                "the consumer's consumer filter data not latest")


def test_pull_without_the_switch_and_with_bad_subscriptions() -> None:
    off = Env()
    fill(off)
    channel = off.channel()
    sql_heartbeat(off, channel, "a > 1", 1)  # registered even so
    refused = off.pull("T", sys_flag=0, sub_version=1, channel=channel)
    assert refused is not None and (refused.code, refused.remark) == (
        RC.SYSTEM_ERROR, "The broker does not support consumer to filter message by SQL92")
    on = Env(enable_property_filter=True)
    fill(on)
    empty = on.pull("T", subscription="", expressionType="SQL92")
    assert empty is not None and empty.code == RC.SUBSCRIPTION_PARSE_FAILED
    # With the subscription bit a selector that does not compile leaves no filter data: nothing is filtered.
    assert bodies(on.pull("T", subscription="a >", expressionType="SQL92")) == [b for b, _ in MESSAGES]
    assert bodies(on.pull("T", subscription="a > 1", expressionType="FOO")) == [b for b, _ in MESSAGES]


def test_held_pull_wakes_and_filters() -> None:
    env = Env(enable_property_filter=True)
    env.broker.create_topic("T", 1, 1)
    channel = env.channel()
    sql_heartbeat(env, channel, "a > 1", 1)
    held = env.pull("T", sys_flag=PULL_FLAG_SUSPEND, sub_version=1, channel=channel)
    assert held is None
    env.send("T", b"no", props={"a": "0"})
    env.runtime.advance(10)
    assert channel.responses == []  # a message the selector drops does not wake the pull
    env.send("T", b"yes", props={"a": "2"})
    env.runtime.advance(10)
    assert [bodies(r) for r in channel.responses] == [["yes"]]
    # With only dropped messages the periodic check (every 5 s, no properties) wakes it: nothing matched.
    again = env.pull("T", 0, 2, sys_flag=PULL_FLAG_SUSPEND, sub_version=1, channel=channel)
    assert again is None
    env.send("T", b"no again", props={"a": "1"})
    env.runtime.advance(100)
    assert len(channel.responses) == 1
    env.runtime.advance(5_000)
    last = channel.responses[-1]
    assert last.code == RC.PULL_RETRY_IMMEDIATELY and last.ext_fields["nextBeginOffset"] == "3"


def test_a_broken_evaluator_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The examples catch an evaluator that lets NULL through."""
    from rocketspec.refimpl.broker import sql92

    monkeypatch.setattr(sql92.Selector, "matches", lambda self, props: self.evaluate(props) is not False)
    wrong = [e for e, p, want in EXAMPLES if want in ("NULL",) and compile_selector(e).matches(p)]
    assert wrong


# ------------------------------------------------------------------------------------------ the option everywhere
def check_body(expression: str) -> bytes:
    return json.dumps({"clientId": "c1", "group": "CG", "subscriptionData": sql_sub(expression)}).encode()


def test_serve_cli_enable_property_filter() -> None:
    from test_serve_cli import ask, serving

    request = RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, {}, check_body("a > 1"))
    with serving("--enable-property-filter") as addrs:
        assert ask(addrs["broker-a"], request).code == RC.SUCCESS
    with serving() as addrs:  # off by default, as in 4.9.8
        assert ask(addrs["broker-a"], request).code == RC.SYSTEM_ERROR


@pytest.mark.rocketmq_server(brokers=1, enable_property_filter=True, trace=False)
def test_pytest_marker_enables_the_filter(rocketmq_server: Any) -> None:
    assert all(b.config.enable_property_filter for b in rocketmq_server.cluster.brokers.values())
