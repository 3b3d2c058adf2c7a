"""The broker conformance suite, end to end: every MUST case passes on the real RocketMQ 4.9.8 and on ``serve``.

Each target is run once through the command line (``rocketspec conformance broker``) with every report written;
the tests then read the JSON, JUnit and HTML reports of those runs. The real cluster is the session one of
``tests/realcluster.py`` (short timers: 1 s delay levels, 1 s transaction timeout and check interval, checkMax 3); the
reference broker gets the same settings. The HTML page is opened in a real headless Chromium.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import attrs
import pytest
from browser import chromium, layout
from documented_config import documented_settings
from realcluster import SERVED_OPTIONS, RealCluster

from rocketspec.cli import main
from rocketspec.conformance import requests
from rocketspec.conformance.broker import BROKER_CASES
from rocketspec.conformance.target import discover
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.served import ServedCluster
from rocketspec.refimpl.store import GetMessageResult, MessageStore
from rocketspec.spec.protocol import SYS_CONSUMER_GROUP_PREFIX, GetMessageStatus, RequestCode, ResponseCode
from rocketspec.traces.pycheck import check_python
from rocketspec.traces.report import format_report
from rocketspec.traces.served import TracedServer


@attrs.frozen
class SuiteRun:
    exit_code: int
    output: str
    folder: Path
    listed_before: dict[str, frozenset[str]] | None = None  # listed(target) before the run and after it
    listed_after: dict[str, frozenset[str]] | None = None

    @property
    def document(self) -> dict:
        return json.loads((self.folder / "report.json").read_text())


def run_suite(namesrv: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> SuiteRun:
    folder.mkdir(parents=True, exist_ok=True)
    code = main(["conformance", "broker", "--namesrv", namesrv, "--json", str(folder / "report.json"),
                 "--junit", str(folder / "junit.xml"), "--html", str(folder / "html")])
    out = capsys.readouterr().out
    return SuiteRun(code, out, folder)


def listed(namesrv: str) -> dict[str, frozenset[str]]:
    """What the target lists that a run can add to: the name server's topics, and each master's topics, subscription
    groups and the ``topic@group`` keys of its consumer offsets; without what a broker makes for itself (the topics
    GET_SYSTEM_TOPIC_LIST_FROM_BROKER names, such as RMQ_SYS_TRANS_HALF_TOPIC, and the CID_RMQ_SYS_ groups)."""
    def body(addr: str, request: RemotingCommand) -> dict:
        with WireClient(addr, 10.0) as client:
            answer = client.request(request)
        if answer.code == ResponseCode.SYSTEM_ERROR and request.code == RequestCode.GET_ALL_CONSUMER_OFFSET:
            return {"offsetTable": {}}  # 4.9.8: "No consumer offset in this broker"
        assert answer.code == ResponseCode.SUCCESS, (addr, request.code_name(), answer.code, answer.remark)
        return requests.json_body(answer)

    found = {"namesrv": frozenset(body(namesrv, requests.all_topic_list())["topicList"])}
    system: set[str] = set()
    for broker in discover(namesrv).brokers:
        system |= set(body(broker.addr, requests.topic_list_request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER))
                      ["topicList"])
        found[f"{broker.name} topics"] = frozenset(body(broker.addr, requests.all_topic_config())["topicConfigTable"])
        found[f"{broker.name} groups"] = frozenset(
            body(broker.addr, requests.all_subscription_groups())["subscriptionGroupTable"])
        found[f"{broker.name} offsets"] = frozenset(body(broker.addr, requests.all_consumer_offsets())["offsetTable"])

    def own(name: str) -> bool:  # a broker's own topic or group (a topic, a group or a topic@group key)
        topic, _, group = name.partition("@")
        return topic in system or name.startswith(SYS_CONSUMER_GROUP_PREFIX) or group.startswith(
            SYS_CONSUMER_GROUP_PREFIX)

    return {key: frozenset(n for n in names if not own(n)) for key, names in found.items()}


def left_behind(run: SuiteRun) -> dict[str, list[str]]:
    """What the run added to the target's lists (and did not delete), and what it deleted that it had not made."""
    assert run.listed_before is not None and run.listed_after is not None
    return {f"{key} {sign}": sorted(diff) for key in run.listed_before
            for sign, diff in (("+", run.listed_after[key] - run.listed_before[key]),
                               ("-", run.listed_before[key] - run.listed_after[key])) if diff}


def failures(run: SuiteRun) -> str:
    bad = [c for c in run.document["cases"] if c["outcome"] in ("failed", "error")]
    return "\n".join(f"{c['id']}: {c['expected']} / {c['actual']} / {c['detail']}" for c in bad)


# -------------------------------------------------------------------------------------------------------- the runs


@pytest.mark.xdist_group("rocketmq-real")
def test_every_must_case_passes_on_real_rocketmq(real_rocketmq: RealCluster, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    before = listed(real_rocketmq.namesrv_addr)
    run = run_suite(real_rocketmq.namesrv_addr, tmp_path, capsys)
    # The run deletes what it made: topics, its groups' retry and dead-letter topics, groups and their offsets.
    assert not left_behind(attrs.evolve(run, listed_before=before, listed_after=listed(real_rocketmq.namesrv_addr)))
    assert run.exit_code == 0, failures(run) + "\n" + run.output[-4000:]
    document = run.document
    assert document["ok"] is True
    assert document["settings"]["transactionCheckInterval"] == "1000"
    ran = [c for c in document["cases"] if c["outcome"] != "skipped"]
    assert len(ran) >= 80


@pytest.fixture(scope="module")
def served_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SuiteRun]:
    folder = tmp_path_factory.mktemp("conformance-serve")
    # serve --trace, with the two files docs/conformance.md shows for running every case but the --long ones.
    with TracedServer(folder / "trace", fmt="jsonl", brokers=2, broker_settings=documented_settings()) as cluster:
        # capsys is function-scoped: capture by hand for this module-wide run.
        buffer = io.StringIO()
        before = listed(cluster.namesrv_addr)
        with contextlib.redirect_stdout(buffer):
            code = main(["conformance", "broker", "--namesrv", cluster.namesrv_addr,
                         "--json", str(folder / "report.json"), "--junit", str(folder / "junit.xml"),
                         "--html", str(folder / "html")])
        after = listed(cluster.namesrv_addr)
        cluster.close_trace()  # written now, for the test that checks it
        yield SuiteRun(code, buffer.getvalue(), folder, before, after)


# One worker runs the served suite once for all the tests that read it (a module fixture runs once per worker).
@pytest.mark.xdist_group("conformance-serve")
def test_every_must_case_passes_on_serve(served_run: SuiteRun) -> None:
    assert served_run.exit_code == 0, failures(served_run) + "\n" + served_run.output[-4000:]
    assert len(served_run.document["cases"]) == len(BROKER_CASES)


# One worker runs the served suite once for all the tests that read it (a module fixture runs once per worker).
@pytest.mark.xdist_group("conformance-serve")
def test_with_the_documented_files_nothing_is_skipped_but_the_long_cases(served_run: SuiteRun) -> None:
    """docs/conformance.md's two files (broker-b the other way round: SQL92 off, commit-log files it may delete) run
    every case that needs a setting one way on the broker that has it (issue 29): only the --long ones skip."""
    skipped = {c["id"]: c.get("detail") for c in served_run.document["cases"] if c["outcome"] == "skipped"}
    assert set(skipped) == {c.id for c in BROKER_CASES if c.slow}, skipped


# One worker runs the served suite once for all the tests that read it (a module fixture runs once per worker).
@pytest.mark.xdist_group("conformance-serve")
def test_the_served_runs_trace_holds_every_invariant(served_run: SuiteRun) -> None:
    """What ``serve --trace`` recorded of the run holds every invariant (issue 29): the suite's deliberate commits
    from connections that are no consumer of the group (a lower one over a higher, OFF-8) are an administrator's
    writes (offset.reset), not a consumer's progress."""
    report = check_python(served_run.folder / "trace")
    assert report.ok, format_report(report)
    assert report.result("offset_no_regression").judged > 0


# One worker runs the served suite once for all the tests that read it (a module fixture runs once per worker).
@pytest.mark.xdist_group("conformance-serve")
def test_a_full_run_leaves_the_target_listing_what_it_listed_before(served_run: SuiteRun) -> None:
    """Topics (with the retry and dead-letter topics of the run's groups) and subscription groups with their offsets
    are deleted after the run, on each master and on the name server; nothing else is touched."""
    assert served_run.listed_before is not None and len(served_run.listed_before) == 1 + 3 * 2  # namesrv, 2 masters
    assert not left_behind(served_run)


# One worker runs the served suite once for all the tests that read it (a module fixture runs once per worker).
@pytest.mark.xdist_group("conformance-serve")
def test_console_prints_the_coverage_line_and_every_unreached_clause(served_run: SuiteRun) -> None:
    lines = served_run.output.splitlines()
    coverage = [line for line in lines if "broker-side clauses covered" in line]
    assert len(coverage) == 1
    covered, total = coverage[0].split(" clauses")[0].split(" of ")
    unreached = [line for line in lines if line.startswith("  not covered: ")]
    assert int(total.split()[0]) - int(covered) == len(unreached)
    assert all("no case reaches it" not in line for line in unreached), "every unreached clause has a reason"
    assert lines[-2].startswith("PASS") or lines[-1].startswith("HTML report")


# One worker runs the served suite once for all the tests that read it (a module fixture runs once per worker).
@pytest.mark.xdist_group("conformance-serve")
def test_json_report_has_every_field_per_case(served_run: SuiteRun) -> None:
    document = served_run.document
    assert set(document) >= {"suite", "target", "ok", "summary", "settings", "coverage", "cases"}
    for case in document["cases"]:
        assert set(case) >= {"id", "clauses", "level", "outcome", "expected", "actual", "duration_s", "frames"}
        assert case["clauses"] and case["level"] in ("MUST", "SHOULD")
        if case["outcome"] == "passed":
            assert case["frames"], f"{case['id']} exchanged no frame"


# One worker runs the served suite once for all the tests that read it (a module fixture runs once per worker).
@pytest.mark.xdist_group("conformance-serve")
def test_junit_report_is_valid_and_counts_match(served_run: SuiteRun) -> None:
    root = ET.parse(served_run.folder / "junit.xml").getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == len(served_run.document["cases"])
    assert int(root.get("tests", "0")) == len(cases)
    assert {c.get("name") for c in cases} == {c["id"] for c in served_run.document["cases"]}


class _Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: dict[str, dict[str, str | None]] = {}
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs_: list[tuple[str, str | None]]) -> None:
        values = dict(attrs_)
        if values.get("id"):
            self.ids[values["id"]] = values  # type: ignore[index]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


# One worker runs the served suite once for all the tests that read it (a module fixture runs once per worker).
@pytest.mark.xdist_group("conformance-serve")
@pytest.mark.xdist_group("conformance-serve")
def test_html_report_renders_in_a_headless_browser(served_run: SuiteRun, tmp_path: Path) -> None:
    browser = chromium()
    page = served_run.folder / "html" / "index.html"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    parsed = _Dom()
    parsed.feed(dom)
    assert parsed.ids["verdict"] is not None and "PASS" in "".join(parsed.text)
    for case in served_run.document["cases"]:
        assert case["id"] in parsed.ids, f"{case['id']} missing from the rendered page"
        assert parsed.ids[case["id"]].get("data-outcome") == case["outcome"]
    assert parsed.ids["total-passed"] is not None
    shot = tmp_path / "report.png"
    subprocess.run([browser, *flags, "--window-size=1200,2000", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # At 1280 px nothing widens the page: frames too long for the window scroll in their own box.
    seen = layout(page, tmp_path / "layout", width=1280)
    assert seen["scroll_width"] <= 1280 and not seen["wide"], seen


def test_a_case_needing_a_setting_skips_naming_every_brokers_value(tmp_path: Path) -> None:
    """Where no master has what a case needs, the skip names each master's value; where one has, it runs there."""
    with ServedCluster(brokers=2, **SERVED_OPTIONS) as cluster, contextlib.redirect_stdout(io.StringIO()) as out:
        main(["conformance", "broker", "--namesrv", cluster.namesrv_addr, "--json", str(tmp_path / "r.json"),
              "--case", "broker/filter/sql92-property-filter-disabled", "--case", "broker/pull/offset-too-small"])
    document = json.loads((tmp_path / "r.json").read_text())
    details = {c["id"]: (c["outcome"], c["detail"]) for c in document["cases"]}
    assert details["broker/filter/sql92-property-filter-disabled"] == (
        "skipped", "needs a master with enablePropertyFilter=false; broker-a: the target reports "
        "enablePropertyFilter=true: the refusal cannot be seen; broker-b: the target reports "
        "enablePropertyFilter=true: the refusal cannot be seen"), out.getvalue()
    outcome, detail = details["broker/pull/offset-too-small"]
    assert outcome == "skipped" and "broker-a: fileReservedTime=72 (needs 0)" in detail and "broker-b:" in detail


@pytest.mark.slow  # (10 s: it waits for a commit-log file to be deleted)
def test_a_pull_correction_to_below_the_queues_min_offset_is_caught(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken PULL-3: OFFSET_TOO_SMALL answers PULL_OFFSET_MOVED with nextBeginOffset and minOffset both at the
    offset asked for (a stale min), consistent with each other but below the GET_MIN_OFFSET answer: the case fails."""
    real_get = MessageStore.get_message

    def stale_min(self: MessageStore, topic: str, queue_id: int, offset: int, max_msgs: int,
                  *args: object, **kwargs: object) -> GetMessageResult:
        result = real_get(self, topic, queue_id, offset, max_msgs, *args, **kwargs)  # type: ignore[arg-type]
        if result.status is GetMessageStatus.OFFSET_TOO_SMALL:
            return attrs.evolve(result, next_begin_offset=offset, min_offset=offset)
        return result

    monkeypatch.setattr(MessageStore, "get_message", stale_min)
    options = {**SERVED_OPTIONS, "file_reserved_ms": 0, "segment_bytes": 262144}
    with ServedCluster(brokers=1, **options) as cluster, contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(["conformance", "broker", "--namesrv", cluster.namesrv_addr, "--json", str(tmp_path / "r.json"),
                     "--case", "broker/pull/offset-too-small"])
    document = json.loads((tmp_path / "r.json").read_text())
    assert code == 1, out.getvalue()
    (case,) = document["cases"]
    assert case["outcome"] == "failed" and case["expected"].startswith("minOffset ≥"), case


def test_the_wrong_queue_offset_case_holds_on_a_fresh_broker(tmp_path: Path) -> None:
    """TXN-7's case alone on a fresh broker, where the half message is the first of the half topic (queue offset 0):
    the offset it sends must still be another one."""
    with ServedCluster(brokers=1, **SERVED_OPTIONS) as cluster, contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(["conformance", "broker", "--namesrv", cluster.namesrv_addr, "--json", str(tmp_path / "r.json"),
                     "--case", "broker/transaction/end-wrong-queue-offset"])
    document = json.loads((tmp_path / "r.json").read_text())
    assert code == 0, out.getvalue()
    assert [c["outcome"] for c in document["cases"]] == ["passed"], out.getvalue()
