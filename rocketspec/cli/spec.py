"""``rocketspec spec check|clauses|oracles``: check the specification, list its clauses and its oracles."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocketspec.cli.argtypes import non_negative_int, positive_float, positive_int
from rocketspec.cli.errors import UsageError
from rocketspec.cli.progress import ProgressLine, if_watched
from rocketspec.contracts import CONDITION_TIMEOUT_S, UNINTERESTING_ITERATIONS
from rocketspec.spec import AREAS, area_module

if TYPE_CHECKING:  # the checker is imported when it runs
    from rocketspec.speccheck import AreaReport


def _areas(names: Sequence[str]) -> list[str]:
    unknown = [n for n in names if n not in AREAS]
    if unknown:
        raise UsageError(f"unknown area(s) {', '.join(unknown)}; areas are: {', '.join(AREAS)}")
    return list(dict.fromkeys(names)) or list(AREAS)


def summary_line(reports: Sequence[AreaReport]) -> str:
    """The last line of ``spec check``: areas, clauses, states, the verdict, and how many CrossHair conditions are
    unconfirmed (neither refuted nor confirmed over all paths) where any are."""
    ok = all(r.ok for r in reports)
    clauses = sum(len(r.clauses) for r in reports)
    failed = sum(not c.ok for r in reports for c in r.clauses)
    states = sum(r.exploration.states for r in reports if r.exploration is not None)
    unconfirmed = sum(r.unconfirmed for r in reports)
    verdict = "all pass" if ok else f"{failed} clause(s) FAILED"
    if unconfirmed:
        verdict += f", {unconfirmed} CrossHair condition{'s' if unconfirmed != 1 else ''} unconfirmed"
    return f"{len(reports)} area(s), {clauses} clauses, {states} states explored: {verdict}"


def cmd_spec_check(args: argparse.Namespace) -> int:
    """Exit 0 when every clause passes, 1 when one fails (or, with ``--strict``, when a CrossHair condition is
    unconfirmed), 2 on bad input."""
    from rocketspec.checkcache import CheckCache
    from rocketspec.console import wrap_block
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
        progress=if_watched(ProgressLine("spec check")),
        cache=CheckCache(read=not args.no_cache),
    )
    ok = all(r.ok for r in reports)
    unconfirmed = sum(r.unconfirmed for r in reports)
    document = {"ok": ok, "unconfirmed": unconfirmed, "areas": [r.to_json() for r in reports]}
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        for report in reports:
            print(format_report(report))
            print()
        print(wrap_block(summary_line(reports)))
    if args.report is not None:
        Path(args.report).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    if not ok:
        return 1
    if args.strict and unconfirmed:
        print(f"rocketspec: --strict: {unconfirmed} CrossHair condition(s) unconfirmed", file=sys.stderr)
        return 1
    return 0


def cmd_spec_clauses(args: argparse.Namespace) -> int:
    from rocketspec.console import format_fitting
    from rocketspec.speccheck import clause_listing

    listing = clause_listing(_areas(args.areas))
    if args.json:
        print(json.dumps(listing, indent=2, ensure_ascii=False))
        return 0
    rows = [
        [str(c["id"]), str(c["statement"]), str(c["source"]), ", ".join(c["checks"]) or "-"]  # type: ignore[arg-type]
        for c in listing
    ]
    # A table where the terminal is wide enough to keep every identifier whole, else a block per clause.
    print(format_fitting(rows, ["clause", "statement", "source", "checks"]))
    return 0


def cmd_spec_oracles(args: argparse.Namespace) -> int:
    from rocketspec.console import format_table
    from rocketspec.speccheck import clause_table, oracle_reference

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


def cmd_spec_diagrams(args: argparse.Namespace) -> int:
    from rocketspec.diagrams import draw, markdown

    areas = tuple(_areas(args.areas))
    if args.markdown:
        print(markdown(areas))
        return 0
    for area in areas:
        diagram = draw(area)
        print(f"%% {area}: phases of {diagram.entity} ({diagram.states:,} states explored)")
        print(diagram.mermaid())
        print()
    return 0


def add_parsers(commands: Any) -> None:
    """Register ``spec`` and its sub-commands on the top-level sub-command parsers."""
    spec = commands.add_parser("spec", help="check or list the specification", description="The specification.")
    spec_commands = spec.add_subparsers(dest="spec_command", metavar="SPEC_COMMAND")
    spec_commands.required = True

    check = spec_commands.add_parser(
        "check",
        help="run CrossHair and the bounded explorer; print a table per clause",
        description=(
            "Check every contract with CrossHair and every invariant by bounded exhaustive exploration, then "
            "print, per area, a table: clause, checked by, result, states explored. Exit 1 if any clause fails. "
            "A result whose sources and settings have not changed since an earlier run is taken from the cache "
            "(marked cached); --no-cache runs everything."
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
    check.add_argument("--strict", action="store_true",
                       help="exit 1 also when a CrossHair condition is unconfirmed (no counterexample found, but not "
                            "confirmed over all paths within the timeout and iterations)")
    check.add_argument("--no-cache", action="store_true",
                       help="run every check again, ignoring the results stored by earlier runs with the same "
                            "sources and settings (the fresh ones are stored; the cache is $ROCKETSPEC_CACHE_DIR, "
                            "else $XDG_CACHE_HOME/rocketspec, else ~/.cache/rocketspec)")
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

    diagrams = spec_commands.add_parser(
        "diagrams",
        help="draw each area's machine (Mermaid state diagrams, from exploring its model)",
        description=("Explore each area's default model completely and draw the phases of its entities and the "
                     "actions that move them (Mermaid stateDiagram-v2); --markdown for docs/machines.md."),
    )
    diagrams.add_argument("areas", nargs="*", metavar="AREA", help="areas to draw (default all)")
    diagrams.add_argument("--markdown", action="store_true", help="print the Markdown page (docs/machines.md)")
    diagrams.set_defaults(handler=cmd_spec_diagrams)
