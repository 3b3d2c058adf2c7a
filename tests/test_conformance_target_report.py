"""What the suite learns about its target (masters only, the first master's settings) and how a run's outcomes read
in its JUnit report, without a target: discovery's two requests are replaced, the report is built by hand."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from rocketspec.conformance import target as target_module
from rocketspec.conformance.model import CaseList, CaseResult, Level, Outcome
from rocketspec.conformance.report import junit_xml
from rocketspec.conformance.runner import RunReport
from rocketspec.conformance.target import DEFAULT_SETTINGS, Broker, Target, TargetError, discover
from rocketspec.conformance.wire import Exchange


def _discover(monkeypatch: pytest.MonkeyPatch, table: dict[str, object],
              configs: dict[str, dict[str, str]]) -> Target:
    monkeypatch.setattr(target_module, "_cluster_info", lambda namesrv, timeout: {"brokerAddrTable": table})
    monkeypatch.setattr(target_module, "_broker_config", lambda addr, timeout: configs.get(addr))
    return discover("127.0.0.1:9876")


def test_discovery_keeps_masters_and_leaves_out_brokers_with_only_a_slave(monkeypatch: pytest.MonkeyPatch) -> None:
    table = {
        "broker-b": {"cluster": "c", "brokerName": "broker-b", "brokerAddrs": {"1": "127.0.0.1:20912"}},
        "broker-a": {"cluster": "c", "brokerName": "broker-a",
                     "brokerAddrs": {"0": "127.0.0.1:10911", "1": "127.0.0.1:10912"}},
    }
    configs = {"127.0.0.1:10911": {"maxMessageSize": "1024"}, "127.0.0.1:10912": {},
               "127.0.0.1:20912": {}}
    found = _discover(monkeypatch, table, configs)
    assert [(b.name, b.addr, b.cluster) for b in found.brokers] == [("broker-a", "127.0.0.1:10911", "c")]


def test_discovery_with_no_master_at_all_is_a_target_error(monkeypatch: pytest.MonkeyPatch) -> None:
    table = {"broker-a": {"cluster": "c", "brokerAddrs": {"1": "127.0.0.1:10912"}}}
    with pytest.raises(TargetError, match="no master broker is registered"):
        _discover(monkeypatch, table, {"127.0.0.1:10912": {}})


def test_a_setting_is_the_first_masters_unless_another_is_named() -> None:
    first = Broker("broker-a", "127.0.0.1:10911", "c", {"maxMessageSize": "1024"})
    second = Broker("broker-b", "127.0.0.1:10921", "c", {"maxMessageSize": "2048"})
    found = Target("127.0.0.1:9876", [first, second], 5.0)
    assert found.setting("maxMessageSize") == "1024" and found.setting_int("maxMessageSize") == 1024
    assert found.setting_int("maxMessageSize", 1) == 2048
    assert found.setting("transactionTimeOut") == DEFAULT_SETTINGS["transactionTimeOut"]
    assert found.settings_used["transactionTimeOut"].endswith("(4.9.8 default; not reported)")


def _report(strict: bool) -> RunReport:
    cases = CaseList("broker/pull")
    for name, level in (("passes", Level.MUST), ("fails", Level.MUST), ("lenient", Level.SHOULD),
                        ("skips", Level.MUST), ("breaks", Level.MUST)):
        cases.case(name, clauses=("PULL-1",), requirement=f"{name} rule", level=level)(lambda ctx: None)
    frame = Exchange(0.5, ">", "broker-a", 11, "PULL_MESSAGE", 7, 0, None, {"queueId": "0"}, 0, "")
    passes, fails, lenient, skips, breaks = cases.cases
    results = (
        CaseResult(passes, Outcome.PASSED, exchanges=(frame,)),
        CaseResult(fails, Outcome.FAILED, "code 0", "code 1", exchanges=(frame,)),
        CaseResult(lenient, Outcome.NON_STRICT, "a", "b"),
        CaseResult(skips, Outcome.SKIPPED, detail="no SQL92 here"),
        CaseResult(breaks, Outcome.ERROR, detail="RuntimeError: bug", exchanges=(frame,)),
    )
    return RunReport("broker", "127.0.0.1:9876", results, {}, strict, "2026-01-01T00:00:00Z", 1.0)


@pytest.mark.parametrize("strict", [False, True])
def test_the_junit_report_shows_each_outcome_with_its_clauses_and_frames(strict: bool) -> None:
    root = ET.fromstring(junit_xml(_report(strict)))
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("5", "2" if strict else "1", "1")
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert list(cases["broker/pull/passes"]) == []
    failure = cases["broker/pull/fails"].find("failure")
    assert failure is not None and failure.get("message") == "Expected: code 0 Actual: code 1"
    assert failure.text is not None and "Clauses: PULL-1 (MUST)" in failure.text and "PULL_MESSAGE" in failure.text
    lenient = cases["broker/pull/lenient"]
    if strict:
        assert lenient.find("failure") is not None
    else:
        out = lenient.find("system-out")
        assert out is not None and out.text is not None and out.text.startswith("NON-STRICT: Expected: a Actual: b")
    skipped = cases["broker/pull/skips"].find("skipped")
    assert skipped is not None and skipped.get("message") == "no SQL92 here"
    error = cases["broker/pull/breaks"].find("error")
    assert error is not None and error.get("message") == "RuntimeError: bug"
    assert error.text is not None and "Requirement: breaks rule" in error.text and "PULL_MESSAGE" in error.text
