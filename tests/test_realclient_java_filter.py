"""SQL92 filtering (``MessageSelector.bySql``) with the official 4.9.8 Java client, on the real cluster and `serve`.

The real cluster runs with ``enablePropertyFilter=true`` and so does the module's `serve` (``SERVED_OPTIONS``). Push
consumers, a lite pull consumer (which sends the expression with every pull) and a pull consumer receive the
messages their selector keeps; a selector that does not compile fails the consumer's start (CHECK_CLIENT_CONFIG).
A `serve` and a real broker without the switch refuse SQL92. The first test runs 4.9.8's own evaluator (the filter
module in the jar) on generated selectors and compares it with the refimpl's and the spec's.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from javacompare import Targets, assert_same
from realcluster import BROKER_EXTRA_CONF, SERVED_OPTIONS, JavaDriver, RealCluster, real_cluster
from sql92_examples import EXAMPLES, LITERALS, NAMES, NOISE, VALUES
from test_refimpl_sql92 import outcome
from wire_client import WireClient

from rocketspec.refimpl.broker.sql92 import SelectorError, compile_selector
from rocketspec.refimpl.message import encode_properties
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.served import ServedCluster
from rocketspec.spec import message_filter as oracle
from rocketspec.spec.protocol import PULL_FLAG_SUBSCRIPTION, RequestCode

pytestmark = pytest.mark.xdist_group("rocketmq-real")

# Properties as the producer sets them (user properties); TAGS is the system property a selector may read too.
MESSAGES: list[dict[str, Any]] = [
    {"body": "m0", "tags": "A", "props": {"a": "1", "s": "x"}},
    {"body": "m1", "tags": "B", "props": {"a": "5"}},
    {"body": "m2", "tags": "A", "props": {"a": "abc"}},
    {"body": "m3", "tags": "B", "props": {"s": "y"}},
    {"body": "m4", "tags": "A", "props": {"a": "2.5", "s": "x"}},
    {"body": "m5", "tags": "B", "props": {}},
    {"body": "m6", "tags": "A", "props": {"a": "10", "s": "z"}},
    {"body": "m7", "tags": "B", "props": {"a": "-3", "s": "y"}},
]
GOOD = ["a > 1", "a > 1.0", "s = 'x' OR a IS NULL", "a BETWEEN 1 AND 5", "s IN ('x', 'y') AND NOT (a = '1')",
        "TAGS = 'A' AND a <> 5", "s IS NOT NULL AND a < 0", "a = 1 b"]
BAD = ["a > 'x'", "a = = 1"]


def expected(expression: str) -> list[str]:
    """The bodies the oracle keeps (FILTER-16)."""
    return sorted(m["body"] for m in MESSAGES if oracle.sql92_matches(expression, {**m["props"], "TAGS": m["tags"]}))


@pytest.fixture(scope="module")
def targets(java_driver: JavaDriver, real_rocketmq: RealCluster, served_for_java: ServedCluster) -> Iterator[Targets]:
    yield Targets(java_driver, real_rocketmq, served_for_java)


# ------------------------------------------------------------------------------------- the 4.9.8 jar's evaluator
def generated_cases(seed: int, count: int) -> list[dict[str, Any]]:
    """Selectors built from the grammar's pieces (and noise), with property maps, deterministically."""
    rng = random.Random(seed)

    def operand(depth: int) -> str:
        pick = rng.random()
        if pick < 0.45:
            return rng.choice(NAMES)
        if pick < 0.85 or depth >= 2:
            return rng.choice(LITERALS)
        if pick < 0.92:
            return f"({disjunction(depth + 1)})"
        return rng.choice(("-", "+", "NOT ")) + operand(depth + 1)

    def comparison(depth: int) -> str:
        pick, a = rng.random(), operand(depth)
        if pick < 0.5:
            return f"{a} {rng.choice(('=', '<>', '<', '<=', '>', '>='))} {operand(depth)}"
        if pick < 0.6:
            return f"{a} {rng.choice(('BETWEEN', 'NOT BETWEEN', 'between'))} {operand(depth)} AND {operand(depth)}"
        if pick < 0.7:
            items = ", ".join(rng.choice(("'x'", "'1'", "'abc'", "''")) for _ in range(rng.randint(1, 6)))
            return f"{a} {rng.choice(('IN', 'NOT IN'))} ({items})"
        if pick < 0.8:
            return f"{a} {rng.choice(('IS NULL', 'IS NOT NULL'))}"
        return a

    def disjunction(depth: int) -> str:
        text = comparison(depth)
        for _ in range(rng.randint(0, 2)):
            text += rng.choice((" AND ", " OR ", " and ", " Or ")) + comparison(depth)
        return text

    cases = []
    for _ in range(count):
        text = disjunction(0)
        if rng.random() < 0.15:
            text += rng.choice(NOISE)
        props = {name: rng.choice(VALUES) for name in NAMES if rng.random() < 0.6}
        cases.append({"expr": text, "props": props})
    return cases


def test_refimpl_and_spec_agree_with_the_4_9_8_evaluator(java_driver: JavaDriver, tmp_path: Path) -> None:
    """Every example and 1500 generated selectors: whether they compile, what they evaluate to, whether the broker
    keeps the message; and for semantic compile errors, the error text (the CHECK_CLIENT_CONFIG remark)."""
    cases = [{"expr": e, "props": p} for e, p, _ in EXAMPLES] + generated_cases(20261125, 1500)
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases), encoding="utf-8")
    results = java_driver.run("127.0.0.1:1", "filter.evaluate", casesFile=str(path))["results"]
    assert len(results) == len(cases)
    differences = []
    for case, java in zip(cases, results, strict=True):
        want = java["value"] if java["compiles"] else "INVALID"
        mine, spec = outcome(case["expr"], case["props"]), oracle.sql92_evaluate(case["expr"], case["props"]).value
        if not mine == spec == want:
            differences.append(f"{case}: 4.9.8 {want}, refimpl {mine}, spec {spec}")
        elif want == "INVALID" and java["error"].startswith("java.lang.RuntimeException"):
            with pytest.raises(SelectorError) as caught:
                compile_selector(case["expr"])
            if str(caught.value) != java["error"]:
                differences.append(f"{case['expr']!r}: 4.9.8 says {java['error']!r}, refimpl {caught.value}")
    assert not differences, "\n".join(differences[:20])
    outcomes = {r["value"] if r["compiles"] else "INVALID" for r in results}
    assert outcomes == {"TRUE", "FALSE", "NULL", "ERROR", "INVALID"}  # the cases reach every outcome


# ---------------------------------------------------------------------------------------------------- consumers
def test_push_consumers_with_sql92_selectors(targets: Targets) -> None:
    """Each push consumer gets exactly what its selector keeps; a selector that does not compile fails start()
    with SUBSCRIPTION_PARSE_FAILED (the broker's CHECK_CLIENT_CONFIG answer)."""
    expressions = GOOD + BAD
    expect = [len(expected(e)) for e in GOOD] + [0] * len(BAD)
    real, served = targets.both("filter.push", messages=MESSAGES, expressions=expressions, expect=expect)
    assert real["received"][: len(GOOD)] == [expected(e) for e in GOOD]
    starts = real["start"]
    assert starts[: len(GOOD)] == ["started"] * len(GOOD)
    assert [(s["exception"], s["code"]) for s in starts[len(GOOD):]] == [("MQClientException", 23)] * len(BAD)
    assert "java.lang.RuntimeException: Value ''x'' cannot be compared." in starts[len(GOOD)]["message"]
    # The syntax error's remark: serve sends the first line of JavaCC's message, 4.9.8 the expected tokens too.
    for obs in (real, served):
        first = obs["start"][-1]["message"]
        obs["start"][-1]["message"] = first[: first.index(" at line 1, column 5.") + 21]
    assert_same(real, served)


def test_lite_pull_consumer_sends_the_selector_with_each_pull(targets: Targets) -> None:
    expression = "s = 'x' OR a IS NULL"
    real, served = targets.both("filter.litePull", messages=MESSAGES, expression=expression,
                                expect=len(expected(expression)))
    assert real == {"start": "started", "received": expected(expression)}
    assert_same(real, served)


def test_lite_pull_consumer_with_a_bad_selector(targets: Targets) -> None:
    real, served = targets.both("filter.litePull", messages=MESSAGES[:1], expression="a > 'x'", expect=0)
    assert (real["start"]["exception"], real["start"]["code"]) == ("MQClientException", 23)
    assert_same(real, served)


def test_pull_consumer_selectors(targets: Targets) -> None:
    """DefaultMQPullConsumer.pull with bySql: no CHECK_CLIENT_CONFIG, no heartbeat filter data; the broker compiles
    the request's selector, and one that does not compile filters nothing (FILTER-19)."""
    expressions = ["a > 1", "a >", "TRUE", "NULL", "s IN ('x', 'y')"]
    real, served = targets.both("filter.pull", messages=MESSAGES, expressions=expressions)
    assert real["beforeHeartbeat"]["code"] == -1  # the client's own refusal before it knows the broker's version
    assert_same(real, served)
    for index, expression in enumerate(expressions):
        got = sorted(b.split("@")[0] for q in real[f"q{index:02d}"] for b in q.get("bodies", ()))
        want = [m["body"] for m in MESSAGES] if expression == "a >" else expected(expression)
        assert got == want, expression


# ------------------------------------------------------------------------------------------ brokers without it
@pytest.fixture(scope="module")
def served_without_filter() -> Iterator[ServedCluster]:
    options = {k: v for k, v in SERVED_OPTIONS.items() if k != "enable_property_filter"}
    with ServedCluster(brokers=1, **options) as served:
        yield served


@pytest.fixture(scope="module")
def real_without_filter(rocketmq_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    extra = "\n".join(line for line in BROKER_EXTRA_CONF.splitlines() if not line.startswith("enablePropertyFilter"))
    with real_cluster(tmp_path_factory.mktemp("rmq-nofilter"), brokers=1, extra_conf=extra) as cluster:
        yield cluster


def test_a_broker_without_enable_property_filter_refuses_sql92(
        java_driver: JavaDriver, served_without_filter: ServedCluster, real_without_filter: RealCluster) -> None:
    args: dict[str, Any] = {"messages": MESSAGES[:2], "expressions": ["a > 1"], "expect": [0], "suffix": "NoFilter"}
    real = java_driver.run(real_without_filter.namesrv_addr, "filter.push", **args)
    served = java_driver.run(served_without_filter.namesrv_addr, "filter.push", **args)
    [start] = real["start"]
    assert (start["exception"], start["code"]) == ("MQClientException", 1)
    assert "The broker does not support consumer to filter message by SQL92" in start["message"]
    assert_same(real, served)
    pulls = {"messages": MESSAGES[:2], "expressions": ["a > 1"], "suffix": "NoFilterPull"}
    real_pull = java_driver.run(real_without_filter.namesrv_addr, "filter.pull", **pulls)
    served_pull = java_driver.run(served_without_filter.namesrv_addr, "filter.pull", **pulls)
    assert real_pull["q00"][0]["code"] == 1  # MQBrokerException: SYSTEM_ERROR
    for obs in (real_pull, served_pull):  # the message names the broker's address
        for answer in obs["q00"]:
            answer["message"] = re.sub(r" BROKER: [0-9.:]+", " BROKER: <addr>", answer["message"])
    assert_same(real_pull, served_pull)


# ----------------------------------------------------------------------------------- the broker's answers, raw
def filter_data_sequence(addr: str, topic: str) -> list[Any]:
    """Heartbeats with SQL92 subscriptions at changing versions and pulls after each, over a raw connection: what
    the broker answers (code, remark, next offset, body size)."""
    client = WireClient(addr, timeout=10)
    group = "CG" + topic

    def request(code: int, fields: dict[str, Any], body: bytes | None = None) -> RemotingCommand:
        return client.request(RemotingCommand.request(code, fields, body))

    out: list[Any] = [request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": 1, "writeQueueNums": 1, "perm": 6,
        "topicFilterType": "SINGLE_TAG"}).code]
    for index, value in enumerate(("1", "5", "x")):
        out.append(request(RequestCode.SEND_MESSAGE, {
            "producerGroup": "PG", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
            "queueId": 0, "sysFlag": 0, "bornTimestamp": 1, "flag": 0,
            "properties": encode_properties({"a": value, "TAGS": "T"})}, f"m{index}".encode()).code)

    def heartbeat(expression: str, version: int, kind: str = "SQL92") -> None:
        sub = {"topic": topic, "subString": expression, "expressionType": kind, "tagsSet": [], "codeSet": [],
               "subVersion": version, "classFilterMode": False}
        body = {"clientID": "cid-1", "producerDataSet": [], "consumerDataSet": [{
            "groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
            "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": False, "subscriptionDataSet": [sub]}]}
        out.append(("heartbeat", expression, version, request(RequestCode.HEART_BEAT, {}, json.dumps(body).encode())
                    .code))

    def pull(version: int, flag: int = 0, sub: str | None = None, kind: str | None = None) -> None:
        fields: dict[str, Any] = {"consumerGroup": group, "topic": topic, "queueId": 0, "queueOffset": 0,
                                  "maxMsgNums": 32, "sysFlag": flag, "commitOffset": 0, "suspendTimeoutMillis": 0,
                                  "subVersion": version}
        fields.update({k: v for k, v in (("subscription", sub), ("expressionType", kind)) if v is not None})
        answer = request(RequestCode.PULL_MESSAGE, fields)
        out.append(("pull", version, sub, kind, answer.code, answer.remark if answer.code else None,
                    answer.ext_fields.get("nextBeginOffset"), len(answer.body or b"")))

    heartbeat("a >", 3)
    pull(3)
    heartbeat("a > 1", 4)
    pull(4)
    pull(5)
    heartbeat("a >", 6)
    pull(6)
    heartbeat("a > 1", 5)
    pull(6)
    pull(5)
    heartbeat("a = 'zz'", 9)
    pull(9)
    heartbeat("a > 1", 10, "FOO")
    pull(10)
    for sub, kind in (("a > 1", "FOO"), ("a >", "SQL92"), ("", "SQL92"), (None, "SQL92"), ("a > 1", "SQL92")):
        pull(0, PULL_FLAG_SUBSCRIPTION, sub, kind)
    client.close()
    return out


def test_filter_data_and_pull_answers_on_the_wire(real_rocketmq: RealCluster, served_for_java: ServedCluster) -> None:
    """FILTER_DATA_NOT_EXIST / NOT_LATEST, SUBSCRIPTION_PARSE_FAILED, unfiltered pulls for selectors that do not
    compile, NO_MATCHED_MESSAGE: the same codes, remarks, offsets and body sizes from both brokers."""
    topic = f"JSqlRaw{random.randrange(1 << 30)}"
    real = filter_data_sequence(real_rocketmq.broker_addrs["broker-a"], topic)
    served = filter_data_sequence(served_for_java.broker_addrs["broker-a"], topic)
    assert real == served
    assert ("pull", 6, None, None, 28, "the consumer's consumer filter data not latest", None, 0) in real
