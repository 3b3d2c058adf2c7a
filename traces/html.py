"""``traces check --html DIR``: the report as a page a person looks at, with a plot around each sample row.

For every invariant that was violated or excused a case, the page shows its sample rows (violations, then the rows
a cause excused) and, for the first few of them, a plot of the sample's queue over ``seq`` around the row: the
offsets stored (``store.put``), delivered to the group (``consume.deliver``), consumed (``consume.result``
successes), committed (``offset.commit``) and handed back by the broker as the next pull offset
(``pull.response``), with the group's disturbances (rebalances, client lifecycle) and the trace's (broker restarts,
faults, deletions) as dashed lines and the sample row as a red one. A reader sees what happened without reading
rows.

The rows come from a second pass over the trace with the Python reader (``traces.reading``), reading only the
traces the samples name; the page is one self-contained file (inline SVG, no script).
"""

from __future__ import annotations

import html
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from rocketspec.traces import reading
from rocketspec.traces.invariants import BY_NAME
from rocketspec.traces.report import InvariantResult, Report

#: Plots drawn per invariant (the first sample rows, violations before excused ones).
PLOTS_PER_INVARIANT = 4
#: How far a plot reaches before and after its row, in seq.
WINDOW_SEQ = 400
#: The points a plot draws at most per series (evenly thinned beyond it).
MAX_POINTS = 600
COLUMNS = ("seq", "kind", "node", "group", "topic", "broker", "queue_id", "offset", "next_offset", "status", "action")

#: series name -> (colour, how a row belongs to it, which offset it plots)
SERIES: dict[str, tuple[str, str]] = {
    "stored": ("#4c78a8", "store.put offset"),
    "delivered": ("#f58518", "consume.deliver offset (the group)"),
    "consumed": ("#54a24b", "consume.result success offset (the group)"),
    "committed": ("#b279a2", "offset.commit offset (the group)"),
    "next pull offset": ("#9d755d", "pull.response nextBeginOffset (the group)"),
}
GROUP_DISTURBANCES = ("rebalance.assign", "client.lifecycle")
TRACE_DISTURBANCES = ("broker.restart", "fault.inject", "store.delete")
SUCCESS = frozenset({"CONSUME_SUCCESS", "SUCCESS"})


class HtmlReportError(ValueError):
    """The page cannot be written (the trace is not on this machine, the directory is a file)."""


@attrs.frozen
class Focus:
    """What one plot is about: a sample row of an invariant and the queue it names."""

    invariant: str
    sample: Mapping[str, Any]
    excused: bool

    @property
    def trace_id(self) -> str:
        return str(self.sample["trace_id"])

    @property
    def seq(self) -> int:
        return int(self.sample["seq"])

    @property
    def queue(self) -> tuple[str, str, int] | None:
        topic, broker, queue_id = (self.sample.get(k) for k in ("topic", "broker", "queue_id"))
        if topic is None or broker is None or queue_id is None:
            return None
        return str(topic), str(broker), int(queue_id)


@attrs.define
class Plot:
    """The rows of one focus's window, gathered while the trace goes by."""

    focus: Focus
    series: dict[str, list[tuple[int, int]]] = attrs.Factory(lambda: defaultdict(list))
    marks: list[tuple[int, str]] = attrs.Factory(list)

    def take(self, row: Mapping[str, Any]) -> None:
        queue = self.focus.queue
        seq, kind = int(row["seq"]), row["kind"]
        if queue is None or abs(seq - self.focus.seq) > WINDOW_SEQ:
            return
        group = self.focus.sample.get("group")
        if kind in TRACE_DISTURBANCES or (kind in GROUP_DISTURBANCES and row.get("group") == group):
            self.marks.append((seq, kind))
        if (row.get("topic"), row.get("broker"), row.get("queue_id")) != queue:
            return
        own_group = group is None or row.get("group") == group
        if kind == "store.put" and row.get("offset") is not None:
            self.series["stored"].append((seq, int(row["offset"])))
        elif not own_group:
            return
        elif kind == "consume.deliver" and row.get("offset") is not None:
            self.series["delivered"].append((seq, int(row["offset"])))
        elif kind == "consume.result" and row.get("status") in SUCCESS and row.get("offset") is not None:
            self.series["consumed"].append((seq, int(row["offset"])))
        elif kind == "offset.commit" and row.get("offset") is not None:
            self.series["committed"].append((seq, int(row["offset"])))
        elif kind == "pull.response" and row.get("next_offset") is not None:
            self.series["next pull offset"].append((seq, int(row["next_offset"])))

    def svg(self, width: int = 760, height: int = 260) -> str:
        points = [p for values in self.series.values() for p in values]
        if not points:
            return '<p class="none">No stored, delivered, consumed or committed offset of this queue near the row.</p>'
        left, right, top, bottom = 56, 150, 12, 28
        x0, x1 = self.focus.seq - WINDOW_SEQ, self.focus.seq + WINDOW_SEQ
        y0 = min(o for _s, o in points)
        y1 = max(max(o for _s, o in points), y0 + 1)

        def x(seq: int) -> float:
            return left + (seq - x0) / (x1 - x0) * (width - left - right)

        def y(offset: int) -> float:
            return height - bottom - (offset - y0) / (y1 - y0) * (height - top - bottom)

        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
               f'aria-label="offsets of the queue around seq {self.focus.seq}">',
               f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{height - top - bottom}" '
               'fill="#fafafa" stroke="#ccc"/>']
        for seq, kind in self.marks:
            out.append(f'<line x1="{x(seq):.1f}" x2="{x(seq):.1f}" y1="{top}" y2="{height - bottom}" stroke="#999" '
                       f'stroke-dasharray="3,3"><title>{html.escape(kind)} at seq {seq}</title></line>')
        sx = x(self.focus.seq)
        out.append(f'<line x1="{sx:.1f}" x2="{sx:.1f}" y1="{top}" y2="{height - bottom}" stroke="#d62728" '
                   f'stroke-width="2"><title>the sample row, seq {self.focus.seq}</title></line>')
        for i, (name, (colour, _what)) in enumerate(SERIES.items()):
            values = _thin(self.series.get(name, []))
            if values:
                path = " ".join(f"{x(s):.1f},{y(o):.1f}" for s, o in values)
                out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.2" '
                           'stroke-linejoin="round"/>')
                out += [f'<circle cx="{x(s):.1f}" cy="{y(o):.1f}" r="2" fill="{colour}"><title>{name}: offset {o} '
                        f'at seq {s}</title></circle>' for s, o in values]
            ly = top + 14 * i + 8
            out.append(f'<rect x="{width - right + 10}" y="{ly - 6}" width="10" height="3" fill="{colour}"/>'
                       f'<text x="{width - right + 24}" y="{ly}" font-size="11">{html.escape(name)}</text>')
        out.append(f'<text x="{left}" y="{height - 8}" font-size="11">seq {x0}</text>'
                   f'<text x="{width - right}" y="{height - 8}" font-size="11" text-anchor="end">seq {x1}</text>'
                   f'<text x="{left - 6}" y="{top + 10}" font-size="11" text-anchor="end">{y1}</text>'
                   f'<text x="{left - 6}" y="{height - bottom}" font-size="11" text-anchor="end">{y0}</text>')
        out.append("</svg>")
        return "".join(out)


def _thin(values: Sequence[tuple[int, int]]) -> Sequence[tuple[int, int]]:
    if len(values) <= MAX_POINTS:
        return values
    step = len(values) / MAX_POINTS
    return [values[int(i * step)] for i in range(MAX_POINTS)]


def focuses(report: Report) -> list[Focus]:
    """The sample rows to plot: per invariant the first violations, then the first excused rows."""
    found: list[Focus] = []
    for result in report.results:
        rows = [(s, False) for s in result.samples] + [(s, True) for s in result.excused]
        found += [Focus(result.name, s, excused) for s, excused in rows[:PLOTS_PER_INVARIANT]]
    return found


def gather(source: str | os.PathLike[str], wanted: Iterable[Focus]) -> list[Plot]:
    """One pass over the traces the focuses name, collecting each focus's window."""
    plots = [Plot(f) for f in wanted]
    by_trace: dict[str, list[Plot]] = defaultdict(list)
    for plot in plots:
        if plot.focus.queue is not None:
            by_trace[plot.focus.trace_id].append(plot)
    if not by_trace:
        return plots
    for trace_id, rows in reading.read_traces(source, COLUMNS):
        mine = by_trace.get(trace_id)
        if mine is None:
            for _row in rows:  # the reader wants each trace's rows consumed before the next
                pass
            continue
        for row in rows:
            for plot in mine:
                plot.take(row)
    return plots


def _sample_table(samples: Sequence[Mapping[str, Any]]) -> str:
    if not samples:
        return ""
    columns = ["trace_id", "seq", "reason", *sorted({k for s in samples for k in s} - {"trace_id", "seq", "reason"})]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(s.get(c, '')))}</td>" for c in columns) + "</tr>"
                   for s in samples)
    return f'<div class="rows"><table><tr>{head}</tr>{body}</table></div>'


def _section(result: InvariantResult, plots: Sequence[Plot]) -> str:
    invariant = BY_NAME[result.name]
    counts = ", ".join(f"{k} {v:,}" for k, v in sorted(result.counts.items())) or "none"
    parts = [f'<section id="{result.name}" data-verdict="{html.escape(result.verdict)}">',
             f"<h2>{html.escape(result.name)} <span class=\"verdict\">{html.escape(result.verdict)}</span></h2>",
             f"<p>{html.escape(invariant.title)} ({', '.join(invariant.clauses)}). {result.judged:,} case(s) judged, "
             f"{result.violations:,} violation(s), {result.events_scanned:,} events scanned; counts: "
             f"{html.escape(counts)}.</p>"]
    if result.samples:
        parts += ["<h3>Violations (first rows)</h3>", _sample_table(result.samples)]
    if result.excused:
        parts += ["<h3>Excused (first rows, with the cause that allows them)</h3>", _sample_table(result.excused)]
    for plot in plots:
        f = plot.focus
        queue = f.queue
        what = "excused" if f.excused else "violation"
        where = (f"{queue[0]} on {queue[1]} queue {queue[2]}" if queue else "no queue")
        group = f", group {html.escape(str(f.sample['group']))}" if f.sample.get("group") else ""
        parts.append(f'<figure><figcaption>{what} at seq {f.seq} of trace {html.escape(f.trace_id)}: '
                     f'{html.escape(where)}{group} — {html.escape(str(f.sample.get("reason", "")))}</figcaption>'
                     + (plot.svg() if queue else '<p class="none">The row names no queue to plot.</p>')
                     + "</figure>")
    parts.append("</section>")
    return "".join(parts)


STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}
.rows{overflow-x:auto;margin-bottom:1em}.verdict{font-size:14px;padding:2px 8px;border-radius:4px;background:#eee}
section[data-verdict=VIOLATED] .verdict{background:#f8d0d0}figure{margin:1em 0}figcaption{font-size:13px}
.none{color:#777;font-style:italic}"""


def html_page(report: Report, plots: Sequence[Plot]) -> str:
    by_name: dict[str, list[Plot]] = defaultdict(list)
    for plot in plots:
        by_name[plot.focus.invariant].append(plot)
    shown = [r for r in report.results if r.violations or r.excused]
    def name_cell(result: InvariantResult) -> str:
        return f'<a href="#{result.name}">{result.name}</a>' if result in shown else result.name

    rows = "".join(f"<tr><td>{name_cell(r)}</td><td>{r.verdict}</td><td>{r.judged:,}</td>"
                   f"<td>{r.violations:,}</td><td>{sum(r.counts.values()):,}</td></tr>" for r in report.results)
    verdict = "all invariants hold" if report.ok else "VIOLATED"
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>rocketspec trace check</title>"
            f"<style>{STYLE}</style></head><body><h1>Trace check: <span id=\"verdict\">{verdict}</span></h1>"
            f"<p>{html.escape(report.source)}: {report.events:,} events in {report.traces:,} trace(s), engine "
            f"{html.escape(report.engine)}.</p><table><tr><th>invariant</th><th>verdict</th><th>judged</th>"
            f"<th>violations</th><th>counted (allowed, skipped, ...)</th></tr>{rows}</table>"
            + "".join(_section(r, by_name[r.name]) for r in shown)
            + ("" if shown else "<p>No invariant was violated and none excused a case: nothing to plot.</p>")
            + "</body></html>\n")


def check_directory(directory: str | os.PathLike[str]) -> Path:
    """The page's folder, if it can be written (absent, or a directory, under an existing one); else
    :class:`HtmlReportError` saying why. A caller checks it before a long check, not only after."""
    folder = Path(directory)
    if folder.exists() and not folder.is_dir():
        raise HtmlReportError(f"cannot write the HTML report: {folder} is a file, not a directory")
    if not folder.resolve().parent.is_dir():
        raise HtmlReportError(f"cannot write the HTML report: {folder.resolve().parent} is not a directory")
    return folder


def write_html(report: Report, source: str | os.PathLike[str], directory: str | os.PathLike[str]) -> Path:
    """Write ``directory/index.html`` for ``report`` of the trace at ``source``; the page's path."""
    folder = check_directory(directory)
    plots = gather(source, focuses(report))
    folder.mkdir(parents=True, exist_ok=True)
    page = folder / "index.html"
    page.write_text(html_page(report, plots), encoding="utf-8")
    return page


__all__ = ["HtmlReportError", "Plot", "check_directory", "focuses", "gather", "html_page", "write_html"]
