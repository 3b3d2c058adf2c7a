"""The client conformance suite against the JavaScript client ali-ons 3.12.0, driven by the shipped driver
``conformance/drivers/ons/driver.js`` as a user would run it: ``npm ci`` next to the driver, then
``rocketspec conformance client --exec "node .../driver.js"``.

The client is installed by ``npm ci`` from ``conformance/drivers/ons/package-lock.json`` into a cache directory (one
per hash of package.json and the lockfile: ``$ROCKETSPEC_JS_CACHE``, else ``$XDG_CACHE_HOME/rocketspec/realclient-js``
or ``~/.cache/rocketspec/realclient-js``, shared with tests/test_realclient_js.py) and the driver is copied next to
it. Every case must end as docs/conformance.md ("The three real clients") says for this client: passed; skipped
with the driver's reason
(ali-ons lacks the feature: UNSUPPORTED); or failed for one of its documented departures, named by the clause it
breaks (DEPARTURES). A case neither table lists must pass. Skipped only when ``node`` or ``npm`` is not installed; a
failing install fails the tests.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from client_tables import assert_ends_as_documented, assert_tables_name_cases
from jsinstall import install_driver

import rocketspec.conformance
from rocketspec.conformance.client import CLIENT_CASES, run_client_suite
from rocketspec.conformance.model import CaseResult

pytestmark = pytest.mark.xdist_group("client-suite-js")

DRIVER_DIR = Path(rocketspec.conformance.__file__).parent / "drivers" / "ons"
BUDGET_S = 60.0

# Case (or glob) -> words of the driver's `unsupported` reason: what ali-ons does not have.
UNSUPPORTED: dict[str, str] = {
    "client/send/async-*": "no async send",
    "client/send/oneway-*": "no oneway send",
    "client/send/latency-*": "no latency fault tolerance",
    "client/retry/orderly-*": "no orderly listener",
    "client/rebalance/orderly-*": "no orderly listener",
    "client/offsets/orderly-*": "no orderly listener",
    "client/transaction/*": "no transaction producer",
}
# Case -> (clause, why): the client's departures, from a clause the case checks (None: a difference from the Java
# client that no clause states yet); the case fails.
DEPARTURES: dict[str, tuple[str, str]] = {
    "client/pull/offset-moved-drops-queue": (
        "PULL-22", "OFFSET_ILLEGAL: the offset store takes nextBeginOffset and the request pulls again there at once; "
                   "the queue is not dropped, so what is persisted is the offset after consuming, not nextBeginOffset"),
    "client/send/finished-send-no-further-attempt": (
        "SEND-13", "a selection advances the shared counter once and probes from a local copy, so a retry (and the "
                   "sends after it) take other queues than the Java round robin"),
    "client/offsets/failed-send-back-holds-offset": (
        "RETRY-17", "after a failed send-back and fallback the client re-consumes one message at a time, 5 s apart: "
                    "the queue's next message waits"),
    "client/retry/fallback-send-when-send-back-fails": (
        "RETRY-16", "the fallback send to %RETRY%<group> has DELAY 0 (not 3 + reconsumeTimes) and "
                    "maxReconsumeTimes 17"),
}




# Case -> (clause, what was seen): a departure seen only sometimes; the case passes or departs.
INTERMITTENT: dict[str, tuple[str, str]] = {
    "client/offsets/persist-on-queue-removal": (
        "OFF-19", "the client rebalances only on its timer (ROCKETSPEC_ONS_REBALANCE_MS, 1 s; it ignores "
                  "NOTIFY_CONSUMER_IDS_CHANGED). The case holds the new owner's offset queries 1 s, so the leaving "
                  "consumer usually persists first; when its timer comes later, the new owner pulls a moved queue "
                  "from the old stored offset and messages are consumed twice"),
}

@pytest.fixture(scope="module")
def driver_command() -> list[str]:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for the ali-ons client conformance tests (not installed)")
    return [node, str(install_driver(DRIVER_DIR, npm))]


@pytest.fixture(scope="module")
def results(driver_command: list[str]) -> dict[str, CaseResult]:
    return {r.case.id: r for r in run_client_suite(driver_command, [], BUDGET_S)}


@pytest.mark.parametrize("case_id", [case.id for case in CLIENT_CASES])
def test_case_ends_as_documented(results: dict[str, CaseResult], case_id: str) -> None:
    assert_ends_as_documented(results[case_id], UNSUPPORTED, DEPARTURES, INTERMITTENT)


def test_tables_name_existing_cases() -> None:
    assert_tables_name_cases(UNSUPPORTED, DEPARTURES, INTERMITTENT)


def _run_driver(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROCKETSPEC_")}
    return subprocess.run(command, env={**base, **env}, capture_output=True, text=True, timeout=60, check=False)


def test_driver_answers_unsupported_for_a_transaction_producer(driver_command: list[str]) -> None:
    done = _run_driver(driver_command, {"ROCKETSPEC_NAMESRV": "127.0.0.1:9", "ROCKETSPEC_ROLE": "transaction-producer",
                                        "ROCKETSPEC_TOPIC": "T", "ROCKETSPEC_GROUP": "G"})
    assert done.returncode == 3, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["event"] for line in lines] == ["unsupported"] and lines[0]["reason"]


def test_driver_rejects_a_bad_environment(driver_command: list[str]) -> None:
    done = _run_driver(driver_command, {"ROCKETSPEC_NAMESRV": "127.0.0.1:9", "ROCKETSPEC_ROLE": "producer",
                                        "ROCKETSPEC_TOPIC": "T", "ROCKETSPEC_GROUP": "G", "ROCKETSPEC_COUNT": "-1"})
    assert done.returncode == 2
    assert done.stdout == "" and "ROCKETSPEC_COUNT" in done.stderr
