"""``rocketspec spec check``: CrossHair on every contract and the bounded explorer on every machine, per clause.

For each area the CrossHair run (a subprocess) and the exhaustive exploration (in process) are attributed to the
clauses they check. A clause passes when at least one check covers it and none of its checks failed; a clause
that nothing checks is a failure too, so the clause table cannot drift away from the checks.
"""

from __future__ import annotations

import inspect
import pkgutil
import shutil
import time
import unicodedata
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import ModuleType

import attrs

from rocketspec.contracts import CONDITION_TIMEOUT_S, UNINTERESTING_ITERATIONS, CrosshairRun, run_crosshair
from rocketspec.spec import AREAS, area_module
from rocketspec.spec.clauses import Clause, ClauseTable, Oracle
from rocketspec.spec.explorer import Exploration, Invariant, StepInvariant, explore

PASS = "pass"
FAIL = "FAIL"
UNCHECKED = "FAIL (no check)"

# Per-oracle CrossHair verdicts.
CONFIRMED = "confirmed"
NO_COUNTEREXAMPLE = "no counterexample"
COUNTEREXAMPLE = "counterexample"
NO_CONTRACT = "no contract"
CROSSHAIR_BROKE = "crosshair failed"


@attrs.frozen
class Check:
    """One check of one clause: ``kind`` is ``crosshair`` or ``explore``, ``name`` the oracle or invariant."""

    kind: str
    name: str
    verdict: str
    failed: bool
    detail: str = ""

    def label(self) -> str:
        return f"{self.kind}:{self.name}"


@attrs.frozen
class ClauseResult:
    clause: Clause
    checks: tuple[Check, ...]
    states: int | None

    @property
    def result(self) -> str:
        counted = [c for c in self.checks if c.verdict != NO_CONTRACT]
        if not counted:
            return UNCHECKED
        return FAIL if any(c.failed for c in counted) else PASS

    @property
    def ok(self) -> bool:
        return self.result == PASS


@attrs.frozen
class AreaReport:
    area: str
    clauses: tuple[ClauseResult, ...]
    exploration: Exploration | None
    crosshair: CrosshairRun | None
    unattributed: tuple[str, ...]
    explore_seconds: float

    @property
    def ok(self) -> bool:
        exploration_ok = self.exploration is None or self.exploration.ok
        return exploration_ok and not self.unattributed and all(c.ok for c in self.clauses)

    def to_json(self) -> dict[str, object]:
        ex = self.exploration
        return {
            "area": self.area,
            "ok": self.ok,
            "exploration": None if ex is None else {
                "bounds": ex.bounds,
                "states": ex.states,
                "transitions": ex.transitions,
                "depth": ex.depth,
                "complete": ex.complete,
                "seconds": round(self.explore_seconds, 3),
                "counterexamples": [v.describe() for v in ex.violations],
            },
            "crosshair": None if self.crosshair is None else {
                "returncode": self.crosshair.returncode,
                "per_condition_timeout": self.crosshair.seconds_per_condition,
                "conditions": len(self.crosshair.results),
                "confirmed": sum(r.confirmed for r in self.crosshair.results),
                "counterexamples": [f"{r.path}:{r.line}: {r.message}" for r in self.crosshair.results if r.failed],
            },
            "unattributed": list(self.unattributed),
            "clauses": [
                {
                    "id": c.clause.id,
                    "result": c.result,
                    "states": c.states,
                    "checks": [
                        {"check": k.label(), "verdict": k.verdict, **({"detail": k.detail} if k.detail else {})}
                        for k in c.checks
                    ],
                }
                for c in self.clauses
            ],
        }


def contract_modules(module: ModuleType) -> list[str]:
    """The modules CrossHair checks for an area: each module of its package (CrossHair checks the functions a
    module defines, not those it re-exports), or the module itself."""
    if not hasattr(module, "__path__"):
        return [module.__name__]
    return [f"{module.__name__}.{info.name}" for info in pkgutil.iter_modules(module.__path__)]


def clause_table(module: ModuleType) -> ClauseTable:
    table = module.CLAUSES
    if not isinstance(table, ClauseTable):
        raise TypeError(f"{module.__name__}.CLAUSES is not a ClauseTable")
    return table


def invariants_of(module: ModuleType) -> tuple[Invariant | StepInvariant, ...]:
    return (*module.INVARIANTS, *getattr(module, "STEP_INVARIANTS", ()))


def _oracle_lines(oracle: Oracle) -> tuple[str, int, int]:
    function = inspect.unwrap(oracle.function)
    path = inspect.getsourcefile(function) or ""
    lines, first = inspect.getsourcelines(function)
    return path, first, first + len(lines) - 1


def crosshair_checks(table: ClauseTable, run: CrosshairRun) -> tuple[dict[str, Check], tuple[str, ...]]:
    """CrossHair's verdict per oracle, and any reported condition that lies in no registered oracle."""
    checks: dict[str, Check] = {}
    attributed: set[tuple[str, int]] = set()
    for oracle in table.oracles:
        if run.crashed:
            tail = run.stderr.strip().splitlines()[-1:] or ["no output"]
            checks[oracle.name] = Check("crosshair", oracle.name, CROSSHAIR_BROKE, True, tail[0])
            continue
        path, first, last = _oracle_lines(oracle)
        results = run.in_lines(path, first, last)
        attributed.update((r.path, r.line) for r in results)
        if any(r.failed for r in results):
            detail = "; ".join(r.message for r in results if r.failed)
            checks[oracle.name] = Check("crosshair", oracle.name, COUNTEREXAMPLE, True, detail)
        elif not results:
            checks[oracle.name] = Check("crosshair", oracle.name, NO_CONTRACT, False)
        elif all(r.confirmed for r in results):
            checks[oracle.name] = Check("crosshair", oracle.name, CONFIRMED, False)
        else:
            checks[oracle.name] = Check("crosshair", oracle.name, NO_COUNTEREXAMPLE, False)
    stray = tuple(
        f"{r.path}:{r.line}: {r.message}"
        for r in run.results
        if r.failed and (r.path, r.line) not in attributed
    )
    return checks, stray


def explore_checks(module: ModuleType, exploration: Exploration) -> dict[str, Check]:
    failures = {v.invariant: v for v in exploration.violations}
    checks: dict[str, Check] = {}
    for inv in invariants_of(module):
        violation = failures.get(inv.name)
        if violation is not None:
            checks[inv.name] = Check("explore", inv.name, "counterexample", True, violation.describe())
        elif not exploration.complete:
            checks[inv.name] = Check("explore", inv.name, "incomplete", True, "state bound reached")
        else:
            checks[inv.name] = Check("explore", inv.name, "holds", False)
    return checks


def build_report(
    area: str,
    module: ModuleType,
    exploration: Exploration | None,
    run: CrosshairRun | None,
    explore_seconds: float,
) -> AreaReport:
    table = clause_table(module)
    oracle_checks, stray = crosshair_checks(table, run) if run is not None else ({}, ())
    inv_checks = explore_checks(module, exploration) if exploration is not None else {}
    step_raised = None
    if exploration is not None:
        step_raised = next((v for v in exploration.violations if v.invariant == "step raised"), None)
    results = []
    for clause in table.clauses:
        checks: list[Check] = []
        for oracle in table.oracles:
            if clause.id in oracle.clauses and oracle.name in oracle_checks:
                checks.append(oracle_checks[oracle.name])
        cited_by_invariant = False
        for inv in invariants_of(module):
            if clause.id in inv.clauses:
                cited_by_invariant = True
                if inv.name in inv_checks:
                    checks.append(inv_checks[inv.name])
        if step_raised is not None and clause.id in step_raised.clauses:
            checks.append(Check("explore", "step raised", "counterexample", True, step_raised.describe()))
        states = exploration.states if (exploration is not None and cited_by_invariant) else None
        results.append(ClauseResult(clause, tuple(checks), states))
    return AreaReport(area, tuple(results), exploration, run, stray, explore_seconds)


def check_areas(
    areas: Sequence[str] = AREAS,
    *,
    crosshair: bool = True,
    explorer: bool = True,
    per_condition_timeout: float = CONDITION_TIMEOUT_S,
    crosshair_iterations: int = UNINTERESTING_ITERATIONS,
    max_states: int = 2_000_000,
    jobs: int = 2,
    progress: Callable[[str], None] | None = None,
) -> list[AreaReport]:
    """Run CrossHair (in ``jobs`` parallel subprocesses) and the explorer over ``areas``; ``progress`` hears, as
    often as there is news, which area the explorer walks and how far, and how many areas CrossHair has done."""
    modules = {area: area_module(area) for area in areas}
    crosshair_done: list[str] = []
    exploring = ["", 0, 0]  # area, states, transitions

    def tell() -> None:
        if progress is None:
            return
        parts = []
        if explorer:
            area, states, transitions = exploring
            parts.append(f"explorer: {area} {states:,} states, {transitions:,} transitions" if area
                         else "explorer: done")
        if crosshair:
            parts.append(f"CrossHair: {len(crosshair_done)}/{len(areas)} areas done"
                         + (f" (last {crosshair_done[-1]})" if crosshair_done else ""))
        progress("; ".join(parts))

    def walked(area: str) -> Callable[[int, int], None]:
        def report(states: int, transitions: int) -> None:
            exploring[:] = [area, states, transitions]
            tell()
        return report

    def finished(area: str) -> Callable[[Future[CrosshairRun]], None]:
        def report(_: Future[CrosshairRun]) -> None:
            crosshair_done.append(area)
            tell()
        return report

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        runs: dict[str, Future[CrosshairRun]] = {}
        if crosshair:
            for area in areas:
                runs[area] = pool.submit(run_crosshair, contract_modules(modules[area]), per_condition_timeout,
                                          max_uninteresting_iterations=crosshair_iterations)
                runs[area].add_done_callback(finished(area))
        explorations: dict[str, tuple[Exploration | None, float]] = {}
        for area in areas:
            if explorer:
                started = time.perf_counter()
                walked(area)(0, 0)
                exploration = explore(modules[area].model(), max_states=max_states,
                                      progress=walked(area) if progress is not None else None)
                explorations[area] = (exploration, time.perf_counter() - started)
                walked(area)(exploration.states, exploration.transitions)
            else:
                explorations[area] = (None, 0.0)
        exploring[:] = ["", 0, 0]
        tell()
        reports = []
        for area in areas:
            run = runs[area].result() if area in runs else None
            explored, seconds = explorations[area]
            reports.append(build_report(area, modules[area], explored, run, seconds))
    return reports


def clause_listing(areas: Sequence[str] = AREAS) -> list[dict[str, object]]:
    """Every clause with its statement, source, versions and the checks that cover it."""
    listing: list[dict[str, object]] = []
    for area in areas:
        module = area_module(area)
        table = clause_table(module)
        for clause in table.clauses:
            checks = [f"crosshair:{o.name}" for o in table.oracles if clause.id in o.clauses]
            checks += [f"explore:{i.name}" for i in invariants_of(module) if clause.id in i.clauses]
            listing.append(
                {
                    "id": clause.id,
                    "area": area,
                    "statement": clause.statement,
                    "source": clause.source,
                    "versions": clause.versions,
                    "checks": checks,
                }
            )
    return listing


def oracle_reference(areas: Sequence[str] = AREAS) -> str:
    """Markdown reference of every oracle: signature, the first paragraph of its docstring, its clauses."""
    out = [
        "# Oracle reference",
        "",
        "Generated by `rocketspec spec oracles --markdown`; every function below is importable from",
        "`rocketspec.spec.<area>`. Those with a PEP 316 contract are checked by CrossHair in `rocketspec spec check`.",
        "",
    ]
    for area in areas:
        table = clause_table(area_module(area))
        out += [f"## {area}", ""]
        for oracle in table.oracles:
            signature = str(inspect.signature(oracle.function)).replace("'", "")
            doc = (inspect.getdoc(oracle.function) or "").split("\n\n")[0].replace("\n", " ")
            out += [f"### `{oracle.name}`", "", "```python", f"{oracle.name}{signature}", "```", "",
                    f"{doc} Clauses: {', '.join(oracle.clauses)}.", ""]
    return "\n".join(out)


#: The narrowest a column is squeezed to when a table must fit the terminal.
MIN_COLUMN = 12


def table_width() -> int:
    """The width a console table must fit: the terminal's, else ``COLUMNS``, else 120 (output to a pipe or file)."""
    return shutil.get_terminal_size((120, 24)).columns


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` display columns, broken at spaces, a longer word cut where it must."""
    lines: list[str] = []
    line, used = "", 0
    for word in text.split():
        size = display_width(word)
        if line and used + 1 + size <= width:
            line, used = f"{line} {word}", used + 1 + size
            continue
        if line:
            lines.append(line)
        line, used = "", 0
        for ch in word:  # a word wider than the column is cut
            if used + display_width(ch) > width:
                lines.append(line)
                line, used = "", 0
            line, used = line + ch, used + display_width(ch)
    if line or not lines:
        lines.append(line)
    return lines


def _pad(text: str, width: int) -> str:
    return text + " " * (width - display_width(text))


def format_table(rows: Sequence[Sequence[str]], headers: Sequence[str], width: int | None = None) -> str:
    """A plain-text table within ``width`` columns (default :func:`table_width`): the widest columns are narrowed
    and their cells wrapped onto more lines; the full text of every cell stays (``--json`` has it unwrapped)."""
    widths = [max(display_width(h), *(display_width(r[i]) for r in rows)) if rows else display_width(h)
              for i, h in enumerate(headers)]
    room = (table_width() if width is None else width) - 2 * (len(headers) - 1)
    while sum(widths) > room:
        widest = max(range(len(widths)), key=lambda i: widths[i])
        if widths[widest] <= max(MIN_COLUMN, len(headers[widest])):
            break  # as narrow as readable: wider than the terminal rather than unreadable
        widths[widest] -= 1
    out = ["  ".join(_pad(h, w) for h, w in zip(headers, widths, strict=True)).rstrip(),
           "  ".join("-" * w for w in widths)]
    for row in rows:
        cells = [_wrap(cell, w) for cell, w in zip(row, widths, strict=True)]
        for i in range(max(len(c) for c in cells)):
            out.append("  ".join(_pad(c[i] if i < len(c) else "", w)
                                 for c, w in zip(cells, widths, strict=True)).rstrip())
    return "\n".join(out)


def format_report(report: AreaReport, show_counterexamples: bool = True) -> str:
    ex = report.exploration
    head = f"== {report.area}: {len(report.clauses)} clauses"
    if ex is not None:
        head += (
            f", explored {ex.states} states / {ex.transitions} transitions (depth {ex.depth}) "
            f"in {report.explore_seconds:.1f} s [{ex.bounds}]"
        )
        if not ex.complete:
            head += " INCOMPLETE: state bound reached"
    if report.crosshair is not None:
        run = report.crosshair
        confirmed = sum(r.confirmed for r in run.results)
        head += f"; crosshair {confirmed}/{len(run.results)} conditions confirmed over all paths"
    rows = []
    for c in report.clauses:
        # An oracle without a contract checks nothing; it stays in the JSON report but not in the table.
        shown = [k for k in c.checks if k.verdict != NO_CONTRACT]
        checked = ", ".join(f"{k.label()}({k.verdict})" for k in shown) or "-"
        rows.append([c.clause.id, checked, c.result, "-" if c.states is None else str(c.states)])
    parts = [head, format_table(rows, ["clause", "checked by", "result", "states explored"])]
    for stray in report.unattributed:
        parts.append(f"  counterexample outside any registered oracle: {stray}")
    if report.crosshair is not None and report.crosshair.crashed:
        parts.append(f"  crosshair did not run: {report.crosshair.stderr.strip()[-2000:]}")
    if show_counterexamples:
        seen: set[str] = set()
        for c in report.clauses:
            for k in c.checks:
                if k.failed and k.detail and k.label() not in seen:
                    seen.add(k.label())
                    parts.append(f"  {k.label()}: {k.detail}")
    return "\n".join(parts)
