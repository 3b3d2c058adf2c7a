"""The client conformance suite: the Java 4.9.8 driver passes it; broken drivers are caught; bad drivers are errors.

The Java driver (``conformance/drivers/java/RocketspecDriver.java``) is compiled with ``javac`` against the RocketMQ
home's ``lib/*`` (skipped with the reason when there is none, see ``tests/realcluster.py``) and cached by source
hash. A broken driver is the same source with ONE rule changed by a text substitution: each must fail at least one
case that passes with the real one. Tiny Python drivers show the contract's error paths.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from realcluster import JAVA_OPTS, _java_cache_root, require_home

from rocketspec.conformance.client import CLIENT_CASES, DriverStartError, run_client_suite
from rocketspec.conformance.model import CaseResult, Outcome
from rocketspec.spec import AREAS, area_module

pytestmark = pytest.mark.xdist_group("conformance-client")

REPO = Path(__file__).resolve().parent.parent
JAVA_DRIVER = REPO / "conformance" / "drivers" / "java" / "RocketspecDriver.java"
CASE_BUDGET_S = 60.0  # above the retry cases' positive wait (conformance/client/retry.py)


def compile_java_driver(home: Path, source: str) -> Path:
    """``javac`` the driver source against ``home/lib/*`` into a cache directory named by the source's hash."""
    digest = hashlib.sha256(source.encode() + str(home.resolve()).encode()).hexdigest()[:16]
    root = _java_cache_root() / "conformance-driver"
    root.mkdir(parents=True, exist_ok=True)
    target = root / digest
    with open(root / f"{digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / ".compiled").is_file():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            (target / "RocketspecDriver.java").write_text(source)
            done = subprocess.run(
                ["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(target), "-cp", f"{home}/lib/*",
                 str(target / "RocketspecDriver.java")],
                capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
            )
            if done.returncode != 0:
                raise RuntimeError(f"javac failed:\n{done.stdout}{done.stderr}")
            (target / ".compiled").write_text("ok")
    return target


def java_command(home: Path, classes: Path) -> list[str]:
    return ["java", *JAVA_OPTS, "-cp", f"{classes}:{home}/lib/*", "RocketspecDriver"]


@pytest.fixture(scope="module")
def java_home() -> Path:
    return require_home()


def summary(results: list[CaseResult]) -> str:
    return "\n".join(f"{r.outcome.value:8} {r.case.id} {r.expected} | {r.actual} | {r.detail}" for r in results)


def test_the_java_driver_passes_every_client_case(java_home: Path, tmp_path: Path) -> None:
    """Every case passes; and every driver process removes the directory it kept the client's logs and local
    offsets in (a user runs hundreds of them)."""
    classes = compile_java_driver(java_home, JAVA_DRIVER.read_text())
    command = java_command(java_home, classes)
    command.insert(1, f"-Djava.io.tmpdir={tmp_path}")
    results = run_client_suite(command, [], CASE_BUDGET_S)
    assert len(results) == len(CLIENT_CASES) >= 14
    bad = [r for r in results if r.outcome not in (Outcome.PASSED, Outcome.SKIPPED)
           or (r.outcome is Outcome.SKIPPED and not r.detail)]
    assert not bad, summary(results)
    assert not list(tmp_path.glob("rocketspec-java-driver-*")), "a driver process left its directory behind"


# A broken driver: the real one with one rule changed (old text, new text), and the cases that must catch it.
_SAME_BROKER_RETRY = '''
    private static SendResult sendToOneQueue(DefaultMQProducer producer, Message message) throws Exception {
        Exception last = null;
        for (int attempt = 0; attempt <= producer.getRetryTimesWhenSendFailed(); attempt++) {
            try {
                return producer.send(message, (mqs, msg, arg) -> mqs.get(0), null);
            } catch (Exception e) {
                last = e;
            }
        }
        throw last;
    }

    // ------------------------------------------------------------------------------------------------- helpers
'''
BROKEN: dict[str, tuple[list[tuple[str, str]], str]] = {
    # Retries a failed send on the same queue (broker) instead of another broker: SEND-13.
    "retries-on-the-same-broker": (
        [("emit(sent(index, producer.send(message)));", "emit(sent(index, sendToOneQueue(producer, message)));"),
         ("\n    // ------------------------------------------------------------------------------------------------- "
          "helpers\n", _SAME_BROKER_RETRY)],
        "client/send/sync-retry-another-broker"),
    # Leaves sendLatencyFaultEnable off whatever the case asks: SEND-14..17.
    "ignores-latency-fault": (
        [('producer.setSendLatencyFaultEnable(Boolean.parseBoolean(env("ROCKETSPEC_LATENCY_FAULT", "false")));',
          "")],
        "client/send/latency-isolates-failed-broker"),
    # Allocates by circle instead of the default AVG: REB-3.
    "wrong-allocation": (
        [("consumer.setVipChannelEnabled(false);\n",
          "consumer.setVipChannelEnabled(false);\n        consumer.setAllocateMessageQueueStrategy("
          "new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle());\n")],
        "client/rebalance/avg-two-consumers"),
    # Commits each delivered message's offset before its result is known: OFF-4, OFF-18.
    "commits-past-unconsumed": (
        [("return later ? ConsumeConcurrentlyStatus.RECONSUME_LATER",
          "consumer.getDefaultMQPushConsumerImpl().getOffsetStore().updateOffset(context.getMessageQueue(), "
          "messages.get(messages.size() - 1).getQueueOffset() + 1, true);\n"
          "                return later ? ConsumeConcurrentlyStatus.RECONSUME_LATER")],
        "client/offsets/failed-send-back-holds-offset"),
    # Answers a check-back with null, so no END_TRANSACTION is sent: TXN-21.
    "ignores-checks": (
        [("emit(checked);\n                return check;", "emit(checked);\n                return null;")],
        "client/transaction/check-answer-commit"),
    # Sends every sync message to the first queue of the list instead of round robin: SEND-11, SEND-12.
    "always-the-first-queue": (
        [("emit(sent(index, producer.send(message)));",
          "emit(sent(index, producer.send(message, (mqs, msg, arg) -> mqs.get(0), null)));")],
        "client/send/round-robin-queue-list"),
    # Retries a send answered with a non-OK SendStatus on another broker: SEND-6.
    "retries-not-store-ok": (
        [("        producer.setSendMsgTimeout(",
          "        producer.setRetryAnotherBrokerWhenNotStoreOK(true);\n        producer.setSendMsgTimeout(")],
        "client/send/flush-disk-timeout-returned"),
    # Starts a new group at the first offset whatever ROCKETSPEC_CONSUME_FROM says: REB-13.
    "always-consume-from-first": (
        [('from.equals("last") ? ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET',
          'false ? ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET')],
        "client/rebalance/consume-from-first-or-last"),
    # Empties the subscription's tag set (its codes stay): the client no longer re-filters by tag (FILTER-3).
    "keeps-colliding-tags": (
        [('consumer.subscribe(env("ROCKETSPEC_TOPIC", "TopicTest"), env("ROCKETSPEC_SUBSCRIPTION", "*"));',
          'consumer.subscribe(env("ROCKETSPEC_TOPIC", "TopicTest"), env("ROCKETSPEC_SUBSCRIPTION", "*"));\n'
          '        consumer.getDefaultMQPushConsumerImpl().getSubscriptionInner()'
          '.get(env("ROCKETSPEC_TOPIC", "TopicTest")).getTagsSet().clear();')],
        "client/pull/tag-hash-collision-dropped"),
    # Exits on SIGTERM without shutting the client down (no offsets persisted, no unregistration): REB-23.
    "no-clean-shutdown": (
        [("            closer.run();\n", "")],
        "client/offsets/persist-on-shutdown"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_java_driver_is_caught(java_home: Path, name: str) -> None:
    substitutions, case = BROKEN[name]
    source = JAVA_DRIVER.read_text()
    for old, new in substitutions:
        assert source.count(old) == 1, f"the mutation {name} no longer applies: {old!r}"
        source = source.replace(old, new)
    classes = compile_java_driver(java_home, source)
    results = run_client_suite(java_command(java_home, classes), [case], CASE_BUDGET_S)
    assert [r.case.id for r in results] == [case]
    # FAILED for a MUST case, NON_STRICT for a SHOULD one: a departure either way.
    assert results[0].outcome in (Outcome.FAILED, Outcome.NON_STRICT), summary(results)


# ------------------------------------------------------------------------------------------------ contract errors


def python_driver(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(body))
    return [sys.executable, str(script)]


ONE_CASE = ["client/send/oneway-one-attempt"]


def test_a_driver_printing_garbage_is_an_error(tmp_path: Path) -> None:
    command = python_driver(tmp_path, """
        import time
        print("hello, I am not JSON", flush=True)
        time.sleep(30)
    """)
    [result] = run_client_suite(command, ONE_CASE, 10.0)
    assert result.outcome is Outcome.ERROR
    assert "driver printed a line that is not JSON: hello, I am not JSON" in result.detail


def test_a_silent_driver_is_an_error_at_the_bounded_wait(tmp_path: Path) -> None:
    command = python_driver(tmp_path, """
        import time
        time.sleep(60)
    """)
    first, second = run_client_suite(command, ["client/send/oneway-one-attempt", "client/send/timeout-budget"], 3.0)
    assert first.outcome is Outcome.ERROR
    assert 'did not report {"event":"started"}' in first.detail
    # The next case is not tried: it would wait the same way.
    assert second.outcome is Outcome.ERROR and second.detail.startswith("not run: the driver did not start in "
                                                                        "client/send/oneway-one-attempt")


def test_a_driver_that_exits_early_is_an_error_quoting_stderr(tmp_path: Path) -> None:
    command = python_driver(tmp_path, """
        import sys
        print("no client library here", file=sys.stderr)
        sys.exit(5)
    """)
    [result] = run_client_suite(command, ONE_CASE, 10.0)
    assert result.outcome is Outcome.ERROR
    assert "exited with code 5" in result.detail and "no client library here" in result.detail


def test_an_unsupported_role_is_skipped_with_the_reason(tmp_path: Path) -> None:
    command = python_driver(tmp_path, """
        import json, os, sys
        print(json.dumps({"event": "unsupported", "reason": "no " + os.environ["ROCKETSPEC_SEND_MODE"] + " sends"}))
        sys.exit(3)
    """)
    [result] = run_client_suite(command, ONE_CASE, 10.0)
    assert result.outcome is Outcome.SKIPPED
    assert result.detail == "the client cannot play this case: no oneway sends"


def test_a_command_that_cannot_start_is_one_clear_error() -> None:
    with pytest.raises(DriverStartError, match="is not found on PATH"):
        run_client_suite("no-such-rocketmq-driver --flag", [], 10.0)
    with pytest.raises(DriverStartError, match="is not an executable file"):
        run_client_suite(["/nonexistent/driver"], [], 10.0)


def test_every_client_case_cites_known_clauses() -> None:
    known = {clause for area in AREAS for clause in area_module(area).CLAUSES.ids}
    for case in CLIENT_CASES:
        assert case.id.startswith("client/")
        assert set(case.clauses) <= known, (case.id, set(case.clauses) - known)
