"""``rocketspec spec check``: CrossHair on every contract and the bounded explorer on every machine, per clause.

For each area the CrossHair run (a subprocess) and the exhaustive exploration (in process) are attributed to the
clauses they check. A clause passes when at least one check covers it and none of its checks failed; a clause
that nothing checks is a failure too, so the clause table cannot drift away from the checks.

A CrossHair condition without a counterexample is either confirmed over all paths or unconfirmed (CrossHair ran
out of time or iterations): a clause passes either way, and the report says per clause how many of its conditions
are unconfirmed (``pass (unconfirmed N)``). Results come from :mod:`rocketspec.checkcache` where nothing that
decides them has changed, and the report marks them ``(cached)``.
"""

from __future__ import annotations

import inspect
import linecache
import pkgutil
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from types import ModuleType

import attrs

from rocketspec.checkcache import CheckCache, module_file, split_run
from rocketspec.console import format_table, table_width, wrap_block
from rocketspec.contracts import (
    CONDITION_TIMEOUT_S,
    UNINTERESTING_ITERATIONS,
    Cancellation,
    CrosshairRun,
    run_crosshair,
)
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
class Condition:
    """One condition line CrossHair reported on: where, its text, and whether it was confirmed over all paths."""

    path: str
    line: int
    text: str
    confirmed: bool
    message: str = ""

    def to_json(self) -> dict[str, object]:
        return {"line": self.line, "condition": self.text,
                "verdict": "confirmed" if self.confirmed else "unconfirmed", "crosshair": self.message}


@attrs.frozen
class Check:
    """One check of one clause: ``kind`` is ``crosshair`` or ``explore``, ``name`` the oracle or invariant.

    A CrossHair check names its ``conditions`` that found no counterexample: each either confirmed over all paths,
    or unconfirmed (CrossHair ran out of time or iterations: no counterexample found, none ruled out)."""

    kind: str
    name: str
    verdict: str
    failed: bool
    detail: str = ""
    conditions: tuple[Condition, ...] = ()

    def label(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def unconfirmed(self) -> int:
        return sum(not c.confirmed for c in self.conditions)

    def shown_verdict(self) -> str:
        """The verdict as the table shows it: how many conditions stayed unconfirmed, of how many."""
        if self.verdict == NO_COUNTEREXAMPLE and self.conditions:
            return f"{self.unconfirmed} of {len(self.conditions)} unconfirmed"
        return self.verdict


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

    @property
    def unconfirmed(self) -> int:
        """The conditions of this clause's CrossHair checks that CrossHair neither refuted nor confirmed."""
        return sum(c.unconfirmed for c in self.checks)

    def shown_result(self) -> str:
        """``pass``, or ``pass (unconfirmed N)`` when a check of it is not confirmed over all paths; else the
        failure."""
        if self.ok and self.unconfirmed:
            return f"{PASS} (unconfirmed {self.unconfirmed})"
        return self.result


@attrs.frozen
class AreaReport:
    area: str
    clauses: tuple[ClauseResult, ...]
    exploration: Exploration | None
    crosshair: CrosshairRun | None
    unattributed: tuple[str, ...]
    explore_seconds: float
    #: Whether the exploration, and how many of the ``crosshair_modules`` CrossHair runs, came from the cache.
    explore_cached: bool = False
    crosshair_cached: int = 0
    crosshair_modules: int = 0

    @property
    def ok(self) -> bool:
        exploration_ok = self.exploration is None or self.exploration.ok
        return exploration_ok and not self.unattributed and all(c.ok for c in self.clauses)

    @property
    def unconfirmed(self) -> int:
        """The area's CrossHair conditions neither refuted nor confirmed over all paths."""
        return 0 if self.crosshair is None else self.crosshair.unconfirmed

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
                "cached": self.explore_cached,
                "counterexamples": [v.describe() for v in ex.violations],
            },
            "crosshair": None if self.crosshair is None else {
                "returncode": self.crosshair.returncode,
                "per_condition_timeout": self.crosshair.seconds_per_condition,
                "conditions": len(self.crosshair.results),
                "confirmed": sum(r.confirmed for r in self.crosshair.results),
                "unconfirmed": self.crosshair.unconfirmed,
                "modules": self.crosshair_modules,
                "cached_modules": self.crosshair_cached,
                "counterexamples": [f"{r.path}:{r.line}: {r.message}" for r in self.crosshair.results if r.failed],
            },
            "unattributed": list(self.unattributed),
            "clauses": [
                {
                    "id": c.clause.id,
                    "result": c.result,
                    "unconfirmed": c.unconfirmed,
                    "states": c.states,
                    "checks": [
                        {"check": k.label(), "verdict": k.verdict, **({"detail": k.detail} if k.detail else {}),
                         **({"conditions": [d.to_json() for d in k.conditions]} if k.conditions else {})}
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


def _condition_text(path: str, line: int) -> str:
    """The condition CrossHair reports on at ``path:line`` (a ``pre:``/``post:`` line of a docstring)."""
    return linecache.getline(path, line).strip()


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
        else:
            conditions = tuple(Condition(r.path, r.line, _condition_text(r.path, r.line), r.confirmed, r.message)
                               for r in results)
            verdict = CONFIRMED if all(r.confirmed for r in results) else NO_COUNTEREXAMPLE
            checks[oracle.name] = Check("crosshair", oracle.name, verdict, False, conditions=conditions)
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


def _merge_runs(target: str, parts: Sequence[CrosshairRun], timeout: float) -> CrosshairRun:
    """The runs over an area's modules (some from the cache) as one run."""
    crashed = [p for p in parts if p.crashed]
    code = crashed[0].returncode if crashed else max((p.returncode for p in parts), default=0)
    return CrosshairRun(target, code, tuple(r for p in parts for r in p.results),
                        "".join(p.stderr for p in parts), timeout)


class _CrosshairArea:
    """The CrossHair part of one area: its modules' cached runs, and one CrossHair process over the others."""

    def __init__(self, area: str, modules: list[str], cache: CheckCache | None, timeout: float,
                 iterations: int) -> None:
        self.area, self.modules, self.cache = area, modules, cache
        self.timeout, self.iterations = timeout, iterations
        self.keys = {m: cache.crosshair_key(m, timeout, iterations) for m in modules} if cache is not None else {}
        self.cached: dict[str, CrosshairRun] = {}
        for module, key in self.keys.items():
            hit = cache.get_crosshair(key) if cache is not None else None
            if hit is not None:
                self.cached[module] = CrosshairRun(module, hit[0], hit[1], "", timeout)
        self.stale = [m for m in modules if m not in self.cached]

    def run(self, cancel: Cancellation) -> CrosshairRun:
        """Run CrossHair over the stale modules (in a worker thread), store each module's result, merge."""
        parts = [self.cached[m] for m in self.modules if m in self.cached]
        if self.stale:
            fresh = run_crosshair(self.stale, self.timeout, max_uninteresting_iterations=self.iterations,
                                  cancel=cancel)
            parts.append(fresh)
            files = {m: module_file(m) for m in self.stale}
            split = None if fresh.crashed else split_run(fresh, {m: f for m, f in files.items() if f})
            if self.cache is not None and split is not None and len(split) == len(self.stale):
                for module, (code, results) in split.items():
                    self.cache.put_crosshair(self.keys[module], code, results)
        return _merge_runs(" ".join(self.modules), parts, self.timeout)


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
    cache: CheckCache | None = None,
) -> list[AreaReport]:
    """Run CrossHair (in ``jobs`` parallel subprocesses) and the explorer over ``areas``; ``progress`` hears, as
    often as there is news and at least once a second, which area the explorer walks and how far, and how many
    areas CrossHair has done and has left. With a ``cache``, a result whose sources and settings are unchanged is
    taken from it (the report says so) and every fresh result is stored.

    An interrupt (``KeyboardInterrupt``, which the command line also raises on SIGTERM) stops everything at once:
    no CrossHair process starts after it, every running one is killed with its process group, and it propagates.
    """
    modules = {area: area_module(area) for area in areas}
    crosshair_done: list[str] = []
    conditions = [0]
    exploring = ["", 0, 0]  # area, states, transitions
    cancel = Cancellation()

    def tell() -> None:
        if progress is None:
            return
        parts = []
        if explorer:
            area, states, transitions = exploring
            parts.append(f"explorer: {area} {states:,} states, {transitions:,} transitions" if area
                         else "explorer: done")
        if crosshair:
            left = len(areas) - len(crosshair_done)
            parts.append(f"CrossHair: {len(crosshair_done)}/{len(areas)} areas done, {left} left, "
                         f"{conditions[0]} conditions checked"
                         + (f" (last {crosshair_done[-1]})" if crosshair_done else ""))
        progress("; ".join(parts))

    def walked(area: str) -> Callable[[int, int], None]:
        def report(states: int, transitions: int) -> None:
            exploring[:] = [area, states, transitions]
            tell()
        return report

    def finished(area: str) -> Callable[[Future[CrosshairRun]], None]:
        def report(future: Future[CrosshairRun]) -> None:
            if future.cancelled() or future.exception() is not None:
                return
            crosshair_done.append(area)
            conditions[0] += len(future.result().results)
            tell()
        return report

    heartbeat = threading.Event()

    def beat() -> None:
        # The explorer reports every so many states and CrossHair when an area ends: in between, the line (which
        # prints only when due) still hears that the check goes on.
        while not heartbeat.wait(HEARTBEAT_S):
            tell()

    pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="rocketspec-crosshair")
    beating = threading.Thread(target=beat, daemon=True, name="rocketspec-progress")
    if progress is not None:
        beating.start()
    try:
        runs: dict[str, Future[CrosshairRun]] = {}
        planned: dict[str, _CrosshairArea] = {}
        if crosshair:
            for area in areas:
                planned[area] = _CrosshairArea(area, contract_modules(modules[area]), cache,
                                               per_condition_timeout, crosshair_iterations)
                runs[area] = pool.submit(planned[area].run, cancel)
                runs[area].add_done_callback(finished(area))
        explorations: dict[str, tuple[Exploration | None, float, bool]] = {}
        for area in areas:
            explorations[area] = _explore_area(area, modules[area], max_states, cache, walked(area),
                                               progress is not None) if explorer else (None, 0.0, False)
        exploring[:] = ["", 0, 0]
        tell()
        reports = []
        for area in areas:
            run = _wait(runs[area]) if area in runs else None
            explored, seconds, explore_cached = explorations[area]
            report = build_report(area, modules[area], explored, run, seconds)
            cached_modules = len(planned[area].cached) if area in planned else 0
            reports.append(attrs.evolve(report, explore_cached=explore_cached,
                                        crosshair_cached=cached_modules,
                                        crosshair_modules=len(planned[area].modules) if area in planned else 0))
    except BaseException:
        cancel.cancel()  # first: the CrossHair processes die now, whatever happens next
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        heartbeat.set()
    pool.shutdown(wait=True)
    return reports


#: How often ``check_areas`` tells its ``progress`` that the check goes on, news or not.
HEARTBEAT_S = 1.0


def _wait(future: Future[CrosshairRun]) -> CrosshairRun:
    """The run's result, waiting in short slices so that a signal is handled at once in the main thread."""
    while True:
        try:
            return future.result(timeout=0.5)
        except FutureTimeout:
            continue


def _explore_area(area: str, module: ModuleType, max_states: int, cache: CheckCache | None,
                  walked: Callable[[int, int], None], report_progress: bool) -> tuple[Exploration, float, bool]:
    """One area's exploration (from the cache if its sources and bound are unchanged), its seconds, and whether it
    came from the cache."""
    key = cache.explore_key(module.__name__, max_states) if cache is not None else ""
    hit = cache.get_exploration(key) if cache is not None else None
    if hit is not None:
        walked(hit[0].states, hit[0].transitions)
        return hit[0], hit[1], True
    started = time.perf_counter()
    walked(0, 0)
    exploration = explore(module.model(), max_states=max_states, progress=walked if report_progress else None)
    seconds = time.perf_counter() - started
    walked(exploration.states, exploration.transitions)
    if cache is not None:
        cache.put_exploration(key, exploration, seconds)
    return exploration, seconds, False


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


def _cached(report: AreaReport) -> str:
    if not report.crosshair_modules or not report.crosshair_cached:
        return ""
    if report.crosshair_cached == report.crosshair_modules:
        return " (cached)"
    return f" (cached {report.crosshair_cached}/{report.crosshair_modules} modules)"


def format_report(report: AreaReport, show_counterexamples: bool = True, width: int | None = None) -> str:
    """An area's header (its clauses, the exploration, CrossHair's conditions, what came from the cache), a table
    row per clause, and the counterexamples; every line within ``width`` (default :func:`table_width`)."""
    width = table_width() if width is None else width
    ex = report.exploration
    head = f"== {report.area}: {len(report.clauses)} clauses"
    if ex is not None:
        head += (
            f", explored {ex.states} states / {ex.transitions} transitions (depth {ex.depth}) "
            f"in {report.explore_seconds:.1f} s{' (cached)' if report.explore_cached else ''} [{ex.bounds}]"
        )
        if not ex.complete:
            head += " INCOMPLETE: state bound reached"
    if report.crosshair is not None:
        run = report.crosshair
        confirmed = sum(r.confirmed for r in run.results)
        head += f"; crosshair {confirmed}/{len(run.results)} conditions confirmed over all paths"
        if run.unconfirmed:
            head += f", {run.unconfirmed} unconfirmed (no counterexample within the time or iterations)"
        head += _cached(report)
    rows = []
    for c in report.clauses:
        # An oracle without a contract checks nothing; it stays in the JSON report but not in the table.
        shown = [k for k in c.checks if k.verdict != NO_CONTRACT]
        checked = ", ".join(f"{k.label()}({k.shown_verdict()})" for k in shown) or "-"
        rows.append([c.clause.id, checked, c.shown_result(), "-" if c.states is None else str(c.states)])
    parts = [wrap_block(head, width), format_table(rows, ["clause", "checked by", "result", "states explored"],
                                                   width)]
    for stray in report.unattributed:
        parts.append(wrap_block(f"  counterexample outside any registered oracle: {stray}", width))
    if report.crosshair is not None and report.crosshair.crashed:
        parts.append(wrap_block(f"  crosshair did not run: {report.crosshair.stderr.strip()[-2000:]}", width))
    if show_counterexamples:
        seen: set[str] = set()
        for c in report.clauses:
            for k in c.checks:
                if k.failed and k.detail and k.label() not in seen:
                    seen.add(k.label())
                    parts.append(wrap_block(f"  {k.label()}: {k.detail}", width))
    return "\n".join(parts)


__all__ = [
    "CONFIRMED",
    "COUNTEREXAMPLE",
    "FAIL",
    "NO_CONTRACT",
    "NO_COUNTEREXAMPLE",
    "PASS",
    "UNCHECKED",
    "AreaReport",
    "Check",
    "ClauseResult",
    "Condition",
    "build_report",
    "check_areas",
    "clause_listing",
    "clause_table",
    "contract_modules",
    "crosshair_checks",
    "explore_checks",
    "format_report",
    "invariants_of",
    "oracle_reference",
]
