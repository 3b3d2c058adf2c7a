"""The ``rocketspec`` command line."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rocketspec import __version__, conformance_cli, serving
from rocketspec.argtypes import non_negative_int, positive_float, positive_int
from rocketspec.contracts import CONDITION_TIMEOUT_S, UNINTERESTING_ITERATIONS
from rocketspec.progress import ProgressLine
from rocketspec.serving import ServeError
from rocketspec.spec import AREAS, area_module
from rocketspec.traces.engine import AUTO, ENGINES


class UsageError(Exception):
    """Bad input from the command line: reported in one line, exit status 2."""


def _areas(names: Sequence[str]) -> list[str]:
    unknown = [n for n in names if n not in AREAS]
    if unknown:
        raise UsageError(f"unknown area(s) {', '.join(unknown)}; areas are: {', '.join(AREAS)}")
    return list(dict.fromkeys(names)) or list(AREAS)


def cmd_spec_check(args: argparse.Namespace) -> int:
    from rocketspec.speccheck import check_areas, format_report

    areas = _areas(args.areas)
    if not args.no_crosshair and importlib.util.find_spec("crosshair") is None:
        raise UsageError("CrossHair is not installed: pip install 'rocketspec[check]', or pass --no-crosshair")
    if args.report is not None:
        parent = Path(args.report).resolve().parent
        if not parent.is_dir():
            raise UsageError(f"cannot write the report: {parent} is not a directory")
    reports = check_areas(
        areas,
        crosshair=not args.no_crosshair,
        explorer=not args.no_explore,
        per_condition_timeout=args.crosshair_timeout,
        crosshair_iterations=args.crosshair_iterations,
        max_states=args.max_states,
        jobs=args.jobs,
        progress=_watched(ProgressLine("spec check")),
    )
    ok = all(r.ok for r in reports)
    document = {"ok": ok, "areas": [r.to_json() for r in reports]}
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        for report in reports:
            print(format_report(report))
            print()
        clauses = sum(len(r.clauses) for r in reports)
        failed = sum(not c.ok for r in reports for c in r.clauses)
        states = sum(r.exploration.states for r in reports if r.exploration is not None)
        verdict = "all pass" if ok else f"{failed} clause(s) FAILED"
        print(f"{len(reports)} area(s), {clauses} clauses, {states} states explored: {verdict}")
    if args.report is not None:
        Path(args.report).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0 if ok else 1


def cmd_spec_clauses(args: argparse.Namespace) -> int:
    from rocketspec.speccheck import clause_listing, format_table

    listing = clause_listing(_areas(args.areas))
    if args.json:
        print(json.dumps(listing, indent=2, ensure_ascii=False))
        return 0
    rows = [
        [str(c["id"]), str(c["statement"]), str(c["source"]), ", ".join(c["checks"]) or "-"]  # type: ignore[arg-type]
        for c in listing
    ]
    print(format_table(rows, ["clause", "statement", "source", "checks"]))
    return 0


def cmd_spec_oracles(args: argparse.Namespace) -> int:
    from rocketspec.speccheck import clause_table, format_table, oracle_reference

    areas = _areas(args.areas)
    if args.markdown:
        print(oracle_reference(areas))
        return 0
    rows = [
        [area, oracle.name, ", ".join(oracle.clauses)]
        for area in areas
        for oracle in clause_table(area_module(area)).oracles
    ]
    print(format_table(rows, ["area", "oracle", "clauses"]))
    return 0


def _watched(line: ProgressLine) -> ProgressLine | None:
    """The line where someone watches; else nothing, so a checker does no work to report progress (Spark's is a
    thread polling the status tracker)."""
    return line if line.enabled else None


def cmd_traces_check(args: argparse.Namespace) -> int:
    from rocketspec.traces.engine import PYTHON, choose_engine, is_remote
    from rocketspec.traces.report import format_report
    from rocketspec.traces.schema import SchemaError

    source: str | Path = args.trace if is_remote(args.trace) else Path(args.trace)
    if isinstance(source, Path) and not source.exists():
        raise UsageError(f"no trace at {source}")
    if args.report is not None:
        parent = Path(args.report).resolve().parent
        if not parent.is_dir():
            raise UsageError(f"cannot write the report: {parent} is not a directory")
    try:
        engine, why = choose_engine(source, args.engine, args.master)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        if engine == PYTHON:
            from rocketspec.traces.pycheck import check_python

            report = check_python(source, progress=_watched(ProgressLine("python checker")))
        else:
            from rocketspec.traces.sparkcheck import SparkJobFailed, SparkUnavailable, check_spark

            try:
                report = check_spark(source, master=args.master, progress=_watched(ProgressLine("spark checker")))
            except SparkUnavailable as exc:
                raise UsageError(f"cannot run Spark: {exc}; --engine python checks a local trace without Java") \
                    from None
            except SparkJobFailed as exc:
                raise UsageError(f"the Spark check failed: {exc}") from None
    except SchemaError as exc:
        raise UsageError(f"bad trace {source}: {exc}") from None
    if args.engine == AUTO:
        print(f"rocketspec: engine {engine} ({why})", file=sys.stderr)
    if args.json:
        print(report.dumps())
    else:
        print(format_report(report, samples=args.samples))
    if args.report is not None:
        Path(args.report).write_text(report.dumps() + "\n", encoding="utf-8")
    return 0 if report.ok else 1


def cmd_traces_schema(args: argparse.Namespace) -> int:
    from rocketspec.traces.reference import markdown, schema_json

    if args.markdown:
        print(markdown())
    else:
        print(json.dumps(schema_json(), indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rocketspec",
        description="Executable, formally checked specification of Apache RocketMQ 4.x client/broker protocols.",
    )
    parser.add_argument("--version", action="version", version=f"rocketspec {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    spec = commands.add_parser("spec", help="check or list the specification", description="The specification.")
    spec_commands = spec.add_subparsers(dest="spec_command", metavar="SPEC_COMMAND")
    spec_commands.required = True

    check = spec_commands.add_parser(
        "check",
        help="run CrossHair and the bounded explorer; print a table per clause",
        description=(
            "Check every contract with CrossHair and every invariant by bounded exhaustive exploration, then "
            "print, per area, a table: clause, checked by, result, states explored. Exit 1 if any clause fails."
        ),
    )
    check.add_argument("areas", nargs="*", metavar="AREA", help=f"areas to check (default all: {', '.join(AREAS)})")
    check.add_argument("--crosshair-timeout", type=positive_float, default=CONDITION_TIMEOUT_S, metavar="SECONDS",
                       help=f"CrossHair's CPU time per condition at most (default {CONDITION_TIMEOUT_S:g})")
    check.add_argument("--crosshair-iterations", type=non_negative_int, default=UNINTERESTING_ITERATIONS,
                       metavar="N", help="leave a condition after N iterations that reach no new code; 0: only at "
                       f"the timeout (default {UNINTERESTING_ITERATIONS})")
    check.add_argument("--max-states", type=positive_int, default=2_000_000, metavar="N",
                       help="stop exploring an area after N states; an incomplete exploration fails (default 2000000)")
    check.add_argument("--jobs", type=positive_int, default=2, metavar="N",
                       help="CrossHair processes at once (default 2)")
    check.add_argument("--no-crosshair", action="store_true", help="skip CrossHair")
    check.add_argument("--no-explore", action="store_true", help="skip the bounded explorer")
    check.add_argument("--json", action="store_true", help="print the report as JSON instead of tables")
    check.add_argument("--report", metavar="FILE", help="also write the JSON report to FILE")
    check.set_defaults(handler=cmd_spec_check)

    clauses = spec_commands.add_parser(
        "clauses",
        help="list every clause with its statement, source and checks",
        description="List every clause of the spec with its statement, its source and the checks that cover it.",
    )
    clauses.add_argument("areas", nargs="*", metavar="AREA", help="areas to list (default all)")
    clauses.add_argument("--json", action="store_true", help="print JSON")
    clauses.set_defaults(handler=cmd_spec_clauses)

    oracles = spec_commands.add_parser(
        "oracles",
        help="list the oracle functions (the normative decisions others can call)",
        description="List every oracle function with the clauses it decides; --markdown for the full reference.",
    )
    oracles.add_argument("areas", nargs="*", metavar="AREA", help="areas to list (default all)")
    oracles.add_argument("--markdown", action="store_true", help="print the Markdown reference (docs/oracles.md)")
    oracles.set_defaults(handler=cmd_spec_oracles)

    traces = commands.add_parser(
        "traces", help="generate traces and check protocol invariants on them", description="Traces."
    )
    traces_commands = traces.add_subparsers(dest="traces_command", metavar="TRACES_COMMAND")
    traces_commands.required = True
    from rocketspec.traces import generate as trace_generate

    trace_generate.add_parser(traces_commands)
    tcheck = traces_commands.add_parser(
        "check",
        help="check every protocol invariant on a trace (PySpark)",
        description=(
            "Check every invariant of docs/traces.md on a trace directory or file (Parquet or JSON Lines): a table "
            "per invariant (events scanned, violations, sample violating rows with their seq). Exit 1 if any "
            "invariant is violated, 2 on bad input."
        ),
    )
    tcheck.add_argument("trace", metavar="DIR", help="trace directory (or one .parquet / .jsonl file)")
    tcheck.add_argument("--master", metavar="URL",
                        help="Spark master (default local[*]; spark://host:7077, yarn, k8s://..., local[2])")
    tcheck.add_argument("--engine", choices=ENGINES, default=AUTO,
                        help="auto (default: the python checker for a trace on this machine, spark with --master, "
                             "under spark-submit or for a cluster file system URL), spark, or python (one process, "
                             "no Java)")
    tcheck.add_argument("--report", metavar="FILE", help="also write the JSON report to FILE")
    tcheck.add_argument("--json", action="store_true", help="print the JSON report instead of tables")
    tcheck.add_argument("--samples", type=positive_int, default=5, metavar="N",
                        help="sample violating rows shown per invariant (default 5; the JSON report keeps 20)")
    tcheck.set_defaults(handler=cmd_traces_check)

    tschema = traces_commands.add_parser(
        "schema",
        help="print the trace schema (columns, kinds, invariants) as JSON, or Markdown",
        description="Print the trace event schema and the invariants: JSON for machines, --markdown for people.",
    )
    tschema.add_argument("--markdown", action="store_true", help="print Markdown (docs/traces.md embeds it)")
    tschema.set_defaults(handler=cmd_traces_schema)

    serving.add_parsers(commands)
    conformance_cli.add_parsers(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except UsageError as exc:
        print(f"rocketspec: error: {exc}", file=sys.stderr)
        return 2
    except (ServeError, conformance_cli.ConformanceError) as exc:
        print(f"rocketspec: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rocketspec: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
