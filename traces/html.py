"""``traces check --html DIR``: the report as a page a person looks at, with a plot around each sample row.

For every invariant that was violated or excused a case, the page shows its sample rows (violations, then the rows
a cause excused) and, for the first few of them, a plot of the sample's queue over ``seq`` around the row: the
offsets stored (``store.put``), delivered to the group (``consume.deliver``), consumed (``consume.result``
successes), committed (``offset.commit``) and handed back by the broker as the next pull offset
(``pull.response``), with the group's disturbances (rebalances, client lifecycle) and the trace's (broker restarts,
faults, deletions) as dashed lines and the sample row as a red one. A lost message (a ``no_lost_message`` sample)
gets the plot of its life instead, one lane per step — sent, stored, pulled, delivered, consumed, failed and sent
back, dead-lettered, the group's offset committed past it — over the seq range of its own rows, with the step it
never reached marked. A reader sees what happened without reading rows.

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

from rocketspec.spec.protocol import DLQ_GROUP_TOPIC_PREFIX
from rocketspec.traces import reading
from rocketspec.traces.invariants import BY_NAME
from rocketspec.traces.report import InvariantResult, Report, excused_reason

#: Plots drawn per invariant (the first sample rows, violations before excused ones).
PLOTS_PER_INVARIANT = 4
#: How far a plot reaches before and after its row, in seq.
WINDOW_SEQ = 400
#: The points a plot draws at most per series (evenly thinned beyond it).
MAX_POINTS = 600
#: The columns of a sample table that place its row, first and in this order (the others follow by name).
LEADING_COLUMNS = ("trace_id", "seq", "reason", "kind", "group", "topic", "broker", "queue_id", "offset", "msg_id")
#: A table cell longer than this wraps (within a bounded width); shorter ones keep to one line.
LONG_CELL = 40
COLUMNS = ("seq", "kind", "node", "group", "topic", "broker", "queue_id", "offset", "next_offset", "status", "action",
           "msg_id")

#: series name -> (colour, how a row belongs to it, which offset it plots)
SERIES: dict[str, tuple[str, str]] = {
    "stored": ("#4c78a8", "store.put offset"),
    "delivered": ("#f58518", "consume.deliver offset (the group)"),
    "consumed": ("#54a24b", "consume.result success offset (the group)"),
    "committed": ("#b279a2", "offset.commit offset (the group)"),
    "next pull offset": ("#9d755d", "pull.response nextBeginOffset (the group)"),
}
GROUP_DISTURBANCES = ("rebalance.assign", "client.lifecycle", "offset.reset")
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


#: The lanes of a lost message's plot, in the order of its life: (name, colour, the rows drawn on it).
LIFE_LANES: tuple[tuple[str, str, str], ...] = (
    ("sent", "#4c78a8", "send.attempt and send.result rows of the message"),
    ("stored", "#72b7b2", "store.put of the message or a retry copy"),
    ("pulled", "#9d755d", "a FOUND pull.response of the group whose offsets cover a stored copy"),
    ("delivered", "#f58518", "consume.deliver to the group"),
    ("consumed", "#54a24b", "a successful consume.result of the group"),
    ("failed, sent back", "#e45756", "a failed consume.result, a sendback"),
    ("dead-lettered", "#79706e", "store.put in a dead-letter topic"),
    ("committed past", "#b279a2", "the group's first offset.commit beyond a stored copy"),
)
#: The steps a delivered message takes, in order: where a lost one stopped is the last it reached.
LIFE_PATH = ("sent", "stored", "pulled", "delivered", "consumed")
#: A lost message's plot reaches this share of its rows' seq span beyond them on each side (at least LIFE_PAD_MIN).
LIFE_PAD = 0.08
LIFE_PAD_MIN = 10
#: The disturbance lines a plot draws at most (the first ones of its range).
MAX_MARKS = 200


def is_lost_message(focus: Focus) -> bool:
    """Whether a focus is a lost message: its plot is the message's life, not its queue's offsets."""
    return focus.invariant == "no_lost_message" and bool(focus.sample.get("msg_id"))


@attrs.define
class Life:
    """The rows of one lost message, gathered over the whole trace while it goes by: each lane's (seq, what)."""

    focus: Focus
    lanes: dict[str, list[tuple[int, str]]] = attrs.Factory(lambda: defaultdict(list))
    marks: list[tuple[int, str]] = attrs.Factory(list)
    end: tuple[int, str] | None = None
    # Where copies of the message were stored: (topic, broker, queue_id) -> offsets; those committed past already.
    copies: dict[tuple[str, str, int], list[int]] = attrs.Factory(lambda: defaultdict(list))
    passed: set[tuple[str, str, int, int]] = attrs.Factory(set)

    def take(self, row: Mapping[str, Any]) -> None:
        seq, kind = int(row["seq"]), str(row["kind"])
        group = self.focus.sample.get("group")
        own_group = group is None or row.get("group") == group
        if kind in TRACE_DISTURBANCES or (kind in GROUP_DISTURBANCES and own_group):
            self.marks.append((seq, kind))
        if kind == "trace.end":
            self.end = (seq, str(row.get("status") or ""))
            return
        if row.get("msg_id") == self.focus.sample["msg_id"]:
            self._own(seq, kind, row, own_group)
            return
        if not own_group or row.get("queue_id") is None or row.get("offset") is None:
            return
        queue = (str(row.get("topic")), str(row.get("broker")), int(row["queue_id"]))
        offsets = self.copies.get(queue)
        if not offsets:
            return
        offset = int(row["offset"])
        if kind == "pull.response" and row.get("status") == "FOUND" and row.get("next_offset") is not None:
            covered = [o for o in offsets if offset <= o < int(row["next_offset"])]
            if covered:
                self.lanes["pulled"].append((seq, f"{row.get('node')} pulled offsets {offset}.."
                                                  f"{int(row['next_offset']) - 1}"))
        elif kind == "offset.commit":
            for o in offsets:
                key = (*queue, o)
                if offset > o and key not in self.passed:
                    self.passed.add(key)
                    self.lanes["committed past"].append((seq, f"committed offset {offset}, past offset {o}"))

    def _own(self, seq: int, kind: str, row: Mapping[str, Any], own_group: bool) -> None:
        """A row of the message itself (its msg_id)."""
        where = f"{row.get('topic')} on {row.get('broker')} queue {row.get('queue_id')}"
        if kind in ("send.attempt", "send.result"):
            status = f" {row['status']}" if row.get("status") else ""
            self.lanes["sent"].append((seq, f"{kind}{status} to {where}"))
        elif kind == "store.put" and row.get("offset") is not None:
            topic = str(row.get("topic") or "")
            lane = "dead-lettered" if topic.startswith(DLQ_GROUP_TOPIC_PREFIX) else "stored"
            self.lanes[lane].append((seq, f"stored in {where} at offset {row['offset']}"))
            if lane == "stored":
                self.copies[(topic, str(row.get("broker")), int(row["queue_id"]))].append(int(row["offset"]))
        elif not own_group:
            return
        elif kind == "consume.deliver":
            self.lanes["delivered"].append((seq, f"delivered to {row.get('node')}"))
        elif kind == "consume.result":
            lane = "consumed" if row.get("status") in SUCCESS else "failed, sent back"
            self.lanes[lane].append((seq, f"listener of {row.get('node')}: {row.get('status')}"))
        elif kind == "sendback":
            self.lanes["failed, sent back"].append((seq, f"sent back by {row.get('node')}"))

    def gap(self) -> tuple[str, str] | None:
        """The first step on LIFE_PATH the message never reached after one it did (a trace may start its record
        later than the send: a served trace without a send mode), with the step before it; None when it reached
        them all, was dead-lettered or has no row at all."""
        reached = [i for i, step in enumerate(LIFE_PATH) if self.lanes.get(step)]
        if self.lanes.get("dead-lettered") or not reached:
            return None
        missing = next((i for i in range(reached[0], len(LIFE_PATH)) if not self.lanes.get(LIFE_PATH[i])), None)
        return None if missing is None else (LIFE_PATH[missing - 1], LIFE_PATH[missing])

    def stopped(self) -> str:
        """Where the message's life stopped: its last step before the first it never reached (and any step seen
        past that gap, which only a trace missing rows has)."""
        def at(step: str) -> str:
            return f"{step} at seq {self.lanes[step][-1][0]}"

        if self.lanes.get("dead-lettered"):
            return f"dead-lettered at seq {self.lanes['dead-lettered'][0][0]}"
        reached = [step for step in LIFE_PATH if self.lanes.get(step)]
        if not reached:
            return "no row of this message in the trace"
        gap = self.gap()
        if gap is None:
            return at(reached[-1])
        before, missing = gap
        later = reached[-1] if LIFE_PATH.index(reached[-1]) > LIFE_PATH.index(missing) else None
        return f"{at(before)}, never {missing}" + (f" (yet {at(later)})" if later else "")

    def span(self) -> tuple[int, int]:
        """The seq range drawn: the message's rows and the sample row, with a margin each side."""
        seqs = [s for values in self.lanes.values() for s, _what in values] + [self.focus.seq]
        lo, hi = min(seqs), max(seqs)
        pad = max(LIFE_PAD_MIN, int((hi - lo) * LIFE_PAD))
        return max(0, lo - pad), hi + pad

    def svg(self, width: int = 760) -> str:
        left, right, top, bottom, lane = 120, 24, 10, 28, 22
        height = top + lane * len(LIFE_LANES) + bottom
        x0, x1 = self.span()

        def x(seq: int) -> float:
            return left + (seq - x0) / max(x1 - x0, 1) * (width - left - right)

        def y(i: int) -> float:
            return top + lane * i + lane / 2

        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
               f'aria-label="the life of message {html.escape(str(self.focus.sample["msg_id"]))}">',
               f'<rect x="{left}" y="{top}" width="{width - left - right}" height="{lane * len(LIFE_LANES)}" '
               'fill="#fafafa" stroke="#ccc"/>']
        for seq, kind in [m for m in self.marks if x0 <= m[0] <= x1][:MAX_MARKS]:
            out.append(f'<line x1="{x(seq):.1f}" x2="{x(seq):.1f}" y1="{top}" y2="{height - bottom}" stroke="#999" '
                       f'stroke-dasharray="3,3"><title>{html.escape(kind)} at seq {seq}</title></line>')
        if self.end is not None and x0 <= self.end[0] <= x1:
            ex = x(self.end[0])
            out.append(f'<line x1="{ex:.1f}" x2="{ex:.1f}" y1="{top}" y2="{height - bottom}" stroke="#333" '
                       f'stroke-width="1.5"><title>trace.end {html.escape(self.end[1])} at seq {self.end[0]}'
                       "</title></line>")
        sx = x(self.focus.seq)
        out.append(f'<line x1="{sx:.1f}" x2="{sx:.1f}" y1="{top}" y2="{height - bottom}" stroke="#d62728" '
                   f'stroke-width="2"><title>the sample row, seq {self.focus.seq}</title></line>')
        # The path the message took: the first row of each step it reached, in order.
        path = [(x(self.lanes[s][0][0]), y(i)) for i, (s, _c, _w) in enumerate(LIFE_LANES)
                if s in LIFE_PATH and self.lanes.get(s)]
        if len(path) > 1:
            out.append('<polyline points="' + " ".join(f"{px:.1f},{py:.1f}" for px, py in path)
                       + '" fill="none" stroke="#bbb" stroke-width="1"/>')
        for i, (name, colour, what) in enumerate(LIFE_LANES):
            values = _thin([(s, 0) for s, _w in self.lanes.get(name, [])])
            titles = dict(self.lanes.get(name, []))
            out.append(f'<text x="{left - 6}" y="{y(i) + 4:.1f}" font-size="11" text-anchor="end">'
                       f"<title>{html.escape(what)}</title>{html.escape(name)}</text>")
            out += [f'<circle cx="{x(s):.1f}" cy="{y(i):.1f}" r="3" fill="{colour}"><title>{html.escape(name)}: '
                    f"{html.escape(titles[s])} at seq {s}</title></circle>" for s, _o in values]
        stop = self._stop_mark()
        if stop is not None:
            seq, i, step = stop
            # Right of the last step's row; left of it near the plot's right edge, so the words stay inside.
            anchor = "end" if x(seq) > width - right - 110 else "start"
            tx = x(seq) - 4 if anchor == "end" else x(seq) + 4
            out.append(f'<text x="{tx:.1f}" y="{y(i) + 4:.1f}" font-size="11" fill="#d62728" text-anchor="{anchor}">'
                       f"\u2715 never {html.escape(step)}</text>")
        out.append(f'<text x="{left}" y="{height - 8}" font-size="11">seq {x0}</text>'
                   f'<text x="{width - right}" y="{height - 8}" font-size="11" text-anchor="end">seq {x1}</text>')
        out.append("</svg>")
        return "".join(out)

    def _stop_mark(self) -> tuple[int, int, str] | None:
        """Where to mark the step never reached: (seq of the step before's last row, the missing step's lane, name)."""
        gap = self.gap()
        if gap is None:
            return None
        before, missing = gap
        lane = next(i for i, (name, _c, _w) in enumerate(LIFE_LANES) if name == missing)
        return self.lanes[before][-1][0], lane, missing


def focuses(report: Report) -> list[Focus]:
    """The sample rows to plot: per invariant the first violations, then the first excused rows."""
    found: list[Focus] = []
    for result in report.results:
        rows = [(s, False) for s in result.samples] + [(s, True) for s in result.excused]
        found += [Focus(result.name, s, excused) for s, excused in rows[:PLOTS_PER_INVARIANT]]
    return found


#: A focus's figure: its queue's offsets around the row, or a lost message's life.
Figure = Plot | Life


def figure(focus: Focus) -> Figure:
    return Life(focus) if is_lost_message(focus) else Plot(focus)


def gather(source: str | os.PathLike[str], wanted: Iterable[Focus]) -> list[Figure]:
    """One pass over the traces the focuses name, collecting each focus's window (a lost message: its life)."""
    plots = [figure(f) for f in wanted]
    by_trace: dict[str, list[Figure]] = defaultdict(list)
    for plot in plots:
        if plot.focus.queue is not None or isinstance(plot, Life):
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


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    # Short cells keep to one line, so a row reads across; long ones (most reasons) wrap within a bounded width.
    return f'<td class="long">{html.escape(text)}</td>' if len(text) > LONG_CELL else f"<td>{html.escape(text)}</td>"


def _sample_table(samples: Sequence[Mapping[str, Any]]) -> str:
    """The sample rows as a table: the columns that place a row first, the others after them by name; ``cause``
    left out where each row's reason already says it. Wider than the page, the table scrolls in its box."""
    if not samples:
        return ""
    present = {k for s in samples for k in s}
    if "cause" in present and all(s.get("reason") == excused_reason(str(s.get("cause"))) for s in samples):
        present.discard("cause")
    columns = [c for c in LEADING_COLUMNS if c in present] + sorted(present - set(LEADING_COLUMNS))
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(_cell(s.get(c)) for c in columns) + "</tr>" for s in samples)
    return f'<div class="rows"><table><tr>{head}</tr>{body}</table></div>'


def _section(result: InvariantResult, plots: Sequence[Figure]) -> str:
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
        reason = html.escape(str(f.sample.get("reason", "")))
        if isinstance(plot, Life):
            ended = (f"; the trace ends {html.escape(plot.end[1])} at seq {plot.end[0]}" if plot.end else "")
            caption = (f"{what} at seq {f.seq} of trace {html.escape(f.trace_id)}: message "
                       f"{html.escape(str(f.sample['msg_id']))} ({html.escape(where)}{group}) — {reason}. Its life: "
                       f'<span class="stopped">{html.escape(plot.stopped())}</span>{ended}.')
            parts.append(f"<figure><figcaption>{caption}</figcaption>{plot.svg()}</figure>")
            continue
        parts.append(f"<figure><figcaption>{what} at seq {f.seq} of trace {html.escape(f.trace_id)}: "
                     f"{html.escape(where)}{group} — {reason}</figcaption>"
                     + (plot.svg() if queue else '<p class="none">The row names no queue to plot.</p>')
                     + "</figure>")
    parts.append("</section>")
    return "".join(parts)


# Nothing may widen the page past the window: tables scroll in their box (a shadow at an edge says more is there),
# long words (paths, ids) break, plots shrink.
STYLE = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
p,h1,h2,figcaption{overflow-wrap:anywhere}svg{max-width:100%;height:auto}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;
white-space:nowrap;vertical-align:top}td.long{white-space:normal;min-width:14em;max-width:40em;overflow-wrap:anywhere}
.rows{overflow-x:auto;max-width:100%;margin-bottom:1em;background:linear-gradient(to right,#fff 30%,#fff0),
linear-gradient(to left,#fff 30%,#fff0) 100% 0,radial-gradient(farthest-side at 0 50%,#0003,#0000),
radial-gradient(farthest-side at 100% 50%,#0003,#0000) 100% 0;background-repeat:no-repeat;
background-size:40px 100%,40px 100%,14px 100%,14px 100%;background-attachment:local,local,scroll,scroll}
.verdict{font-size:14px;padding:2px 8px;border-radius:4px;background:#eee}
section[data-verdict=VIOLATED] .verdict{background:#f8d0d0}figure{margin:1em 0}figcaption{font-size:13px}
.stopped{color:#d62728}.none{color:#777;font-style:italic}"""


def html_page(report: Report, plots: Sequence[Figure]) -> str:
    by_name: dict[str, list[Figure]] = defaultdict(list)
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
            f"{html.escape(report.engine)}.</p><div class=\"rows\"><table><tr><th>invariant</th><th>verdict</th>"
            f"<th>judged</th><th>violations</th><th>counted (allowed, skipped, ...)</th></tr>{rows}</table></div>"
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


__all__ = ["Figure", "HtmlReportError", "Life", "Plot", "check_directory", "focuses", "gather", "html_page",
           "is_lost_message", "write_html"]
