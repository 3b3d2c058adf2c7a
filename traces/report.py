"""What a trace check reports: per invariant, events scanned, violations, sample rows and counts; as tables or JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from rocketspec.traces.invariants import BY_NAME, MAX_SAMPLES, UNJUDGED
from rocketspec.traces.schema import SCHEMA_VERSION


@attrs.frozen
class InvariantResult:
    """One invariant's outcome. ``samples`` are violating rows (each with ``trace_id``, ``seq`` and ``reason``),
    sorted by (trace_id, seq), at most MAX_SAMPLES; ``counts`` holds named tallies (allowed duplicates by cause,
    skipped traces, ...); ``excused`` are the first rows the rule allowed by a cause (duplicates, regressions), each
    with its ``cause``, chosen like the samples."""

    name: str
    events_scanned: int
    violations: int
    samples: tuple[Mapping[str, Any], ...] = ()
    counts: Mapping[str, int] = attrs.field(factory=dict)
    judged: int = 0  # cases judged (invariants.CASES): zero means the invariant said nothing about the input
    excused: tuple[Mapping[str, Any], ...] = ()

    @property
    def verdict(self) -> str:
        """``VIOLATED``, ``ok``, or ``nothing judged`` (no violation, and no case to find one in)."""
        if self.violations:
            return "VIOLATED"
        return "ok" if self.judged else "nothing judged"

    @property
    def clauses(self) -> tuple[str, ...]:
        return BY_NAME[self.name].clauses

    @property
    def ok(self) -> bool:
        return self.violations == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": BY_NAME[self.name].title,
            "clauses": list(self.clauses),
            "events_scanned": self.events_scanned,
            "judged": self.judged,
            "violations": self.violations,
            "ok": self.ok,
            "verdict": self.verdict,
            "counts": dict(sorted(self.counts.items())),
            "samples": [dict(s) for s in self.samples],
            "excused": [dict(s) for s in self.excused],
        }


def excused_reason(cause: str) -> str:
    """The reason an excused row reads: the cause that allows it."""
    return f"allowed: {cause}"


def sample_rows(rows: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The first MAX_SAMPLES violating (or excused) rows by (trace_id, seq), nulls dropped."""
    ordered = sorted(rows, key=lambda r: (str(r.get("trace_id")), int(r.get("seq") or 0)))
    return tuple({k: v for k, v in r.items() if v is not None} for r in ordered[:MAX_SAMPLES])


@attrs.frozen
class Report:
    source: str
    engine: str
    events: int
    traces: int
    results: tuple[InvariantResult, ...]
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def result(self, name: str) -> InvariantResult:
        return next(r for r in self.results if r.name == name)

    def nothing_judged(self) -> list[str]:
        """The invariants that judged no case in the whole input (they hold vacuously: they said nothing)."""
        return [r.name for r in self.results if not r.judged]

    def unjudged(self) -> dict[str, dict[str, int]]:
        """Per invariant, the parts it could not judge on some traces (count name -> traces)."""
        found = {r.name: {k: r.counts[k] for k in UNJUDGED if r.counts.get(k)} for r in self.results}
        return {name: counts for name, counts in found.items() if counts}

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "source": self.source,
            "engine": self.engine,
            "events": self.events,
            "traces": self.traces,
            "seconds": round(self.seconds, 3),
            "ok": self.ok,
            "invariants": [r.to_json() for r in self.results],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, default=str)


def _table(rows: list[list[str]], headers: list[str]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)), line]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def format_report(report: Report, *, samples: int = 5) -> str:
    """The human report: a summary table, then per invariant with violations its sample rows and counts."""
    rows = [
        [r.name, ", ".join(r.clauses), f"{r.events_scanned:,}", f"{r.judged:,}", f"{r.violations:,}", r.verdict]
        for r in report.results
    ]
    parts = [
        f"trace {report.source}: {report.events:,} events in {report.traces:,} trace(s), engine {report.engine}, "
        f"{report.seconds:.1f} s",
        "",
        _table(rows, ["invariant", "clauses", "events scanned", "cases judged", "violations", "result"]),
    ]
    for r in report.results:
        if r.counts:
            parts += ["", f"{r.name}: " + ", ".join(f"{k} {v:,}" for k, v in sorted(r.counts.items()))]
        if r.ok:
            continue
        parts += ["", f"{r.name} ({BY_NAME[r.name].title}), {r.violations:,} violation(s), first {samples}:"]
        for s in r.samples[:samples]:
            head = f"  trace {s.get('trace_id')} seq {s.get('seq')}: {s.get('reason', '')}"
            rest = ", ".join(f"{k}={v}" for k, v in s.items() if k not in ("trace_id", "seq", "reason"))
            parts.append(head + (f" [{rest}]" if rest else ""))
    failed = sum(not r.ok for r in report.results)
    idle = report.nothing_judged()
    if not report.ok:
        verdict = f"{failed} invariant(s) VIOLATED"
    elif idle:
        verdict = (f"{len(report.results) - len(idle)} invariant(s) hold on the cases they judged; nothing judged by "
                   f"{', '.join(idle)}")
    else:
        verdict = "all invariants hold"
    parts += ["", verdict]
    return "\n".join(parts)
