"""``rocketspec conformance broker|client``: run the conformance suite and write its reports (the parsers are in
``cli.conformance``)."""

from __future__ import annotations

import argparse
import datetime
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rocketspec.cli.errors import UsageError
from rocketspec.conformance import report as reports
from rocketspec.conformance.broker import BROKER_CASES
from rocketspec.conformance.client import CLIENT_CASES, DriverStartError, check_command, run_client_suite
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.coverage import coverage
from rocketspec.conformance.model import Case, CaseResult, Outcome, select
from rocketspec.conformance.runner import RunReport, run_cases
from rocketspec.conformance.target import Target, TargetError, describe, discover
from rocketspec.spec.protocol import split_addr


def _check_outputs(args: argparse.Namespace) -> None:
    for name in ("junit", "json"):
        path = getattr(args, name)
        if path is not None and not Path(path).resolve().parent.is_dir():
            raise UsageError(f"cannot write --{name} {path}: {Path(path).resolve().parent} is not a directory")
    if args.html is not None:
        folder = Path(args.html)
        if folder.exists() and not folder.is_dir():
            raise UsageError(f"cannot write --html {folder}: it is a file, not a directory")
        if not folder.resolve().parent.is_dir():
            raise UsageError(f"cannot write --html {folder}: {folder.resolve().parent} is not a directory")


def _selected(cases: Sequence[Case], patterns: Sequence[str]) -> list[Case]:
    chosen = select(cases, patterns)
    if patterns and not chosen:
        raise UsageError(f"no case matches {' '.join(patterns)} (see --list)")
    return chosen


def case_table_markdown(cases: Sequence[Case]) -> str:
    """The case catalogue as a Markdown table (docs/conformance.md embeds it)."""
    rows = ["| case | level | clauses | requirement |", "|---|---|---|---|"]
    for case in cases:
        slow = " (`--long`)" if case.slow else ""
        requirement = case.requirement.replace("|", "\\|")
        rows.append(f"| `{case.id}` | {case.level.value} | {', '.join(case.clauses)} | {requirement}{slow} |")
    return "\n".join(rows)


def _list(cases: Sequence[Case], markdown: bool) -> int:
    if markdown:
        print(case_table_markdown(cases))
        return 0
    for case in cases:
        slow = " [--long]" if case.slow else ""
        print(f"{case.id:<60} {case.level.value:<6} {','.join(case.clauses):<24} {case.requirement}{slow}")
    print(f"{len(cases)} case(s)")
    return 0


def _progress(result: CaseResult) -> None:
    print(reports.result_line(result), flush=True)
    for line in reports.result_explanation(result):
        print(line, flush=True)


def _finish(args: argparse.Namespace, report: RunReport) -> int:
    print()
    for line in reports.summary_lines(report):
        print(line)
    if args.json is not None:
        reports.write_json(report, args.json)
    if args.junit is not None:
        reports.write_junit(report, args.junit)
    if args.html is not None:
        page = reports.write_html(report, args.html)
        print(f"HTML report: {page}")
    return 0 if report.ok else 1


def _run(suite: str, target_text: str, cases: list[Case], make_context: Callable[[Case, float], object],
         args: argparse.Namespace, settings: Callable[[], dict[str, str]]) -> RunReport:
    started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    started = time.monotonic()
    runnable = [c for c in cases if args.long or not c.slow]
    results = run_cases(runnable, make_context, args.timeout, progress=_progress)
    skipped_slow = [c for c in cases if c.slow and not args.long]
    for case in skipped_slow:
        result = CaseResult(case, Outcome.SKIPPED, detail="waits on a fixed RocketMQ timer; run with --long")
        _progress(result)
        results.append(result)
    return RunReport(suite, target_text, tuple(results), settings(), args.strict, started_at,
                     time.monotonic() - started, _coverage(suite, cases, results, args))


def _coverage(suite: str, cases: Sequence[Case], results: Sequence[CaseResult],
              args: argparse.Namespace) -> dict[str, object]:
    """The run's coverage: only clauses a case judged (a verdict, not a skip or an error) count as covered."""
    document = coverage(suite, cases, results=results).to_json()
    document["filtered"] = bool(args.case)
    return document


# After Ctrl-C the clean-up may take this long (the command must end within 2 s).
INTERRUPTED_CLEANUP_S = 1.0


def _report_leftovers(left: frozenset[str]) -> None:
    """Say which of the run's names the target still lists after the clean-up (it refused to delete them)."""
    if left:
        shown = ", ".join(sorted(left)[:10]) + (f" and {len(left) - 10} more" if len(left) > 10 else "")
        print(f"rocketspec conformance broker: the target did not delete {len(left)} name(s) the run made: {shown}",
              flush=True)


def cmd_conformance_broker(args: argparse.Namespace) -> int:
    cases = _selected(BROKER_CASES, args.case)
    if args.list:
        return _list(cases, args.markdown)
    if args.namesrv is None:
        raise UsageError("--namesrv HOST:PORT is required (the name server of the broker under test)")
    try:
        split_addr(args.namesrv)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    _check_outputs(args)
    try:
        target: Target = discover(args.namesrv, timeout=min(args.timeout, 10.0))
    except TargetError as exc:
        raise UsageError(str(exc)) from None
    print(f"rocketspec conformance broker: {describe(target)}; {len(cases)} case(s)", flush=True)
    target.take_inventory()
    try:
        report = _run("broker", describe(target), cases, lambda case, budget: BrokerContext(target, case, budget),
                      args, lambda: dict(target.settings_used))
    except BaseException:
        # Ctrl-C ends the command within 2 s: the clean-up gets part of that, and what it cannot delete stays.
        target.cleanup(deadline=time.monotonic() + INTERRUPTED_CLEANUP_S)
        raise
    _report_leftovers(target.cleanup())
    return _finish(args, report)


def cmd_conformance_client(args: argparse.Namespace) -> int:
    cases = _selected(CLIENT_CASES, args.case)
    if args.list:
        return _list(cases, args.markdown)
    if args.exec is None:
        raise UsageError('--exec "COMMAND" is required (the driver command of the client under test)')
    try:
        argv = check_command(args.exec)
    except DriverStartError as exc:
        raise UsageError(str(exc)) from None
    _check_outputs(args)
    print(f"rocketspec conformance client: driver {' '.join(argv)}; {len(cases)} case(s)", flush=True)
    started_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    started = time.monotonic()
    try:
        results = run_client_suite(argv, [c.id for c in cases] if args.case else [], args.timeout,
                                   progress=_progress)
    except DriverStartError as exc:
        raise UsageError(str(exc)) from None
    report = RunReport("client", f"driver: {' '.join(argv)}", tuple(results), {}, args.strict, started_at,
                       time.monotonic() - started, _coverage("client", cases, results, args))
    code = _finish(args, report)
    broken = next((r.detail for r in results if r.detail.startswith("not run: ")), None)
    if broken is not None:
        # The driver never started: every case after the first was not run. Say it once, as an error.
        raise UsageError(broken.removeprefix("not run: "))
    return code
