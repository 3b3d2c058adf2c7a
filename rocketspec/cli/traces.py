"""``rocketspec traces generate|check|schema``: record seeded traces and check protocol invariants on them."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocketspec.cli.argtypes import non_negative_int, positive_int
from rocketspec.cli.errors import UsageError
from rocketspec.cli.progress import ProgressLine, if_watched
from rocketspec.traces.engine import AUTO, DEFAULT_MASTER, ENGINES
from rocketspec.traces.recording import FORMATS
from rocketspec.traces.schema import FAULT_PROFILES, MANIFEST

if TYPE_CHECKING:  # the generator is imported when it runs (it loads the whole reference cluster)
    from rocketspec.traces.generate import Progress


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
    from rocketspec.traces.invariants import not_judged_notes
    from rocketspec.traces.report import format_report
    from rocketspec.traces.schema import SchemaError

    source: str | Path = args.trace if is_remote(args.trace) else Path(args.trace)
    if isinstance(source, Path) and not source.exists():
        raise UsageError(f"no trace at {source}")
    if args.report is not None:
        parent = Path(args.report).resolve().parent
        if not parent.is_dir():
            raise UsageError(f"cannot write the report: {parent} is not a directory")
    if args.html is not None:
        from rocketspec.traces.html import HtmlReportError, check_directory

        if not isinstance(source, Path):
            raise UsageError("--html reads the trace again on this machine: it needs a local trace, not a URL")
        try:
            check_directory(args.html)
        except HtmlReportError as exc:
            raise UsageError(str(exc)) from None
    try:
        engine, why = choose_engine(source, args.engine, args.master)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        if engine == PYTHON:
            from rocketspec.traces.pycheck import check_python

            report = check_python(source, progress=if_watched(ProgressLine("python checker")))
        else:
            from rocketspec.traces.sparkcheck import SparkJobFailed, SparkUnavailable, check_spark

            try:
                report = check_spark(source, master=args.master, progress=if_watched(ProgressLine("spark checker")))
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
    for result in report.results:  # the parts not judged, each with why in one line (invariants.NOT_JUDGED_WHY)
        for note in not_judged_notes(result.name, dict(result.counts)):
            print(f"rocketspec: {note}", file=sys.stderr)
    if args.report is not None:
        Path(args.report).write_text(report.dumps() + "\n", encoding="utf-8")
    if args.html is not None:
        from rocketspec.traces.html import write_html

        try:
            page = write_html(report, source, args.html)
        except (SchemaError, OSError, ValueError) as exc:
            raise UsageError(f"cannot write the HTML report: {exc}") from None
        print(f"rocketspec: HTML report {page}", file=sys.stderr)
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


def add_parsers(commands: Any) -> None:
    """Register ``traces`` and its sub-commands on the top-level sub-command parsers."""
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
    tgenerate.add_argument("--format", choices=FORMATS, default=FORMATS[0], dest="fmt",
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
    tcheck.add_argument("--html", metavar="DIR",
                        help="also write DIR/index.html: each violated or excused invariant's sample rows, with a "
                             "plot of the queue's offsets (stored, delivered, consumed, committed) around each")
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
