"""The ``rocketspec`` command line."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rocketspec import __version__, conformance_cli, serving
from rocketspec.argtypes import non_negative_int, positive_float, positive_int
from rocketspec.contracts import CONDITION_TIMEOUT_S, UNINTERESTING_ITERATIONS
from rocketspec.progress import ProgressLine
from rocketspec.serving import ServeError
from rocketspec.spec import AREAS, area_module
from rocketspec.traces.engine import AUTO, DEFAULT_MASTER, ENGINES
from rocketspec.traces.recording import FORMATS
from rocketspec.traces.schema import FAULT_PROFILES, MANIFEST

if TYPE_CHECKING:  # the generator is imported when it runs (it loads the whole reference cluster)
    from rocketspec.traces.generate import Progress


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


def _generate_progress() -> Callable[[Progress], None]:
    """Generation progress on stderr: a line rewritten in place on a terminal, else a line every 5 s."""
    interactive = sys.stderr.isatty()
    last = [0.0]

    def show(p: Progress) -> None:
        now = time.perf_counter()
        final = p.shards_done == p.shards
        if interactive:
            print(f"\r{p.line()}   ", end="\n" if final else "", file=sys.stderr, flush=True)
        elif final or now - last[0] >= 5.0:
            print(p.line(), file=sys.stderr, flush=True)
            last[0] = now

    return show


def cmd_traces_generate(args: argparse.Namespace) -> int:
    """Exit 0 when every shard settled, 1 when one was cut; bad input is a UsageError (exit 2)."""
    from rocketspec.traces.generate import GenerateError, generate
    from rocketspec.traces.recording import TraceWriteError

    try:
        summary = generate(args.events, args.out, shards=args.shards, seed=args.seed, faults=args.faults,
                           spark=args.spark, master=args.master, fmt=args.fmt, progress=_generate_progress(),
                           force=args.force)
    except (GenerateError, TraceWriteError) as error:
        raise UsageError(str(error)) from None
    print(f"wrote {summary['events']:,} events in {summary['traces']} trace(s) to {summary['out']} "
          f"({summary['events_per_second']:,} events/s; {summary['settled']} settled, {summary['cut']} cut)")
    return 0 if summary["cut"] == 0 else 1


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
    if args.strict:
        unjudged = report.unjudged()
        said = [f"{name}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()) for name, counts in unjudged.items()]
        said += [f"{name}: no case judged" for name in report.nothing_judged() if name not in unjudged]
        if said:
            print(f"rocketspec: --strict: not every invariant could be judged ({'; '.join(said)})", file=sys.stderr)
            return 1
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
    tgenerate = traces_commands.add_parser(
        "generate",
        help="run seeded randomized workloads on the simulated reference cluster and record them as traces",
        description=(
            "Run seeded randomized workloads (producers, transactions, consumer groups joining, leaving and "
            "crashing, faults, retries) on the simulated reference cluster, one independent cluster per shard, "
            f"and record about N events as traces (Parquet partitioned by trace, or JSON Lines) with a {MANIFEST} "
            "manifest. The same arguments give the same traces."
        ),
    )
    tgenerate.add_argument("--events", type=positive_int, required=True, metavar="N",
                           help="about how many events to record in all")
    tgenerate.add_argument("--out", required=True, metavar="DIR", help="output directory (new or empty)")
    tgenerate.add_argument("--force", action="store_true", help="replace the traces of an earlier run in DIR")
    tgenerate.add_argument("--shards", type=positive_int, default=1, metavar="K",
                           help="independent seeded clusters, one trace each, run in parallel (default 1)")
    tgenerate.add_argument("--seed", type=non_negative_int, default=0, metavar="S", help="random seed (default 0)")
    tgenerate.add_argument("--faults", choices=FAULT_PROFILES, default="light",
                           help="fault profile: none, light (default) or heavy (also crashes, restarts, deletions)")
    tgenerate.add_argument("--spark", action="store_true", help="run the shards as Spark tasks")
    tgenerate.add_argument("--master", metavar="URL",
                           help=f"Spark master (implies --spark; default {DEFAULT_MASTER})")
    tgenerate.add_argument("--format", choices=FORMATS, default="parquet", dest="fmt",
                           help="parquet (default, partitioned by trace) or jsonl")
    tgenerate.set_defaults(handler=cmd_traces_generate)
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
                        help=f"Spark master (default {DEFAULT_MASTER}; spark://host:7077, yarn, k8s://..., local[2])")
    tcheck.add_argument("--engine", choices=ENGINES, default=AUTO,
                        help="auto (default: the python checker for a trace on this machine, spark with --master, "
                             "under spark-submit or for a cluster file system URL), spark, or python (one process, "
                             "no Java)")
    tcheck.add_argument("--report", metavar="FILE", help="also write the JSON report to FILE")
    tcheck.add_argument("--json", action="store_true", help="print the JSON report instead of tables")
    tcheck.add_argument("--strict", action="store_true",
                        help="exit 1 also when an invariant judged no case at all, or could not judge a part of it "
                             "on some trace (a cut trace: no_lost_message's part (b))")
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
        # The reader stopped reading (`| head`): it had what it wanted. Nothing more may reach the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
