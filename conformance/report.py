"""Reports of a conformance run: the console table, JSON, JUnit XML and one self-contained HTML page.

Every format carries the same facts per case: ID, clauses, level, requirement, outcome, ``Expected``/``Actual``, the
detail of a skip or error, the duration and the frames exchanged; and per run: the target, the settings the cases
read, the counts and the clause coverage.
"""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

from rocketspec.conformance.model import CaseResult, Outcome
from rocketspec.conformance.runner import RunReport

LABELS = {
    Outcome.PASSED: "OK",
    Outcome.FAILED: "FAILED",
    Outcome.NON_STRICT: "NON-STRICT",
    Outcome.SKIPPED: "SKIPPED",
    Outcome.ERROR: "ERROR",
}
# Frames shown under a failure on the console (the JSON, JUnit and HTML reports keep all of them).
CONSOLE_FRAMES = 8


def to_json(report: RunReport) -> dict[str, object]:
    return {
        "suite": report.suite,
        "target": report.target,
        "started_at": report.started_at,
        "duration_s": round(report.duration_s, 3),
        "strict": report.strict,
        "ok": report.ok,
        "summary": {o.value: report.count(o) for o in Outcome},
        "settings": report.settings,
        "coverage": report.coverage,
        "cases": [r.to_json() for r in report.results],
    }


def write_json(report: RunReport, path: str | Path) -> None:
    Path(path).write_text(json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def result_line(result: CaseResult) -> str:
    clauses = ",".join(result.case.clauses)
    return (f"[{LABELS[result.outcome]:<10}] {result.case.id:<58} {result.case.level.value:<6} {clauses:<22} "
            f"{result.duration_s:6.2f}s")


def result_explanation(result: CaseResult, frames: int = CONSOLE_FRAMES) -> list[str]:
    """The indented lines under a case that did not pass."""
    lines: list[str] = []
    if result.outcome in (Outcome.FAILED, Outcome.NON_STRICT):
        lines.append(f"    Requirement: {result.case.requirement}")
        lines.append(f"    Expected: {result.expected}")
        lines.append(f"    Actual:   {result.actual}")
        shown = result.exchanges[-frames:]
        if shown:
            more = len(result.exchanges) - len(shown)
            lines.append("    Frames" + (f" (last {len(shown)} of {len(result.exchanges)})" if more else "") + ":")
            lines.extend(f"      {e.line()[:220]}" for e in shown)
    elif result.outcome in (Outcome.SKIPPED, Outcome.ERROR):
        lines.append(f"    {result.detail}")
    return lines


def summary_lines(report: RunReport) -> list[str]:
    counts = Counter(r.outcome for r in report.results)
    parts = [f"{counts[o]} {o.value}" for o in Outcome if counts[o]]
    lines = [f"{len(report.results)} case(s) in {report.duration_s:.1f} s: {', '.join(parts) or 'none'}"]
    coverage = report.coverage
    if coverage:
        lines.append(str(coverage.get("summary", "")))
        uncovered = coverage.get("uncovered", [])
        if coverage.get("filtered"):
            lines.append(f"  ({len(uncovered)} not reached by the selected cases; "
                         "run without --case for every clause and its reason)")
        else:
            for item in uncovered:
                lines.append(f"  not covered: {item['clause']}: {item['reason']}")
    if report.settings:
        used = ", ".join(f"{k}={v}" for k, v in sorted(report.settings.items()))
        lines.append(f"target settings used: {used}")
    verdict = "PASS" if report.ok else "FAIL"
    must = "every MUST case passed" if report.ok else "a MUST case failed or errored"
    if report.strict and not report.ok:
        must = "a case failed or errored (--strict: SHOULD cases count)"
    lines.append(f"{verdict}: {must}")
    return lines


# --------------------------------------------------------------------------------------------------------- JUnit


def junit_xml(report: RunReport) -> str:
    by_area: dict[str, list[CaseResult]] = defaultdict(list)
    for result in report.results:
        by_area["/".join(result.case.id.split("/")[:2])].append(result)
    root = ET.Element("testsuites", name=f"rocketspec conformance {report.suite}", tests=str(len(report.results)),
                      failures=str(report.count(Outcome.FAILED) + (report.count(Outcome.NON_STRICT)
                                                                   if report.strict else 0)),
                      errors=str(report.count(Outcome.ERROR)), time=f"{report.duration_s:.3f}")
    for area, results in by_area.items():
        suite = ET.SubElement(root, "testsuite", name=area, tests=str(len(results)),
                              failures=str(sum(r.outcome is Outcome.FAILED for r in results)),
                              errors=str(sum(r.outcome is Outcome.ERROR for r in results)),
                              skipped=str(sum(r.outcome is Outcome.SKIPPED for r in results)),
                              time=f"{sum(r.duration_s for r in results):.3f}")
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", name="target", value=report.target)
        for result in results:
            case = ET.SubElement(suite, "testcase", classname=area, name=result.case.id,
                                 time=f"{result.duration_s:.3f}")
            frames = "\n".join(e.line() for e in result.exchanges)
            text = (f"Clauses: {', '.join(result.case.clauses)} ({result.case.level.value})\n"
                    f"Requirement: {result.case.requirement}\n")
            if result.outcome is Outcome.FAILED or (result.outcome is Outcome.NON_STRICT and report.strict):
                failure = ET.SubElement(case, "failure", message=f"Expected: {result.expected} Actual: {result.actual}",
                                        type=result.case.level.value)
                failure.text = text + frames
            elif result.outcome is Outcome.NON_STRICT:
                ET.SubElement(case, "system-out").text = (
                    f"NON-STRICT: Expected: {result.expected} Actual: {result.actual}\n" + text + frames)
            elif result.outcome is Outcome.SKIPPED:
                ET.SubElement(case, "skipped", message=result.detail)
            elif result.outcome is Outcome.ERROR:
                error = ET.SubElement(case, "error", message=result.detail)
                error.text = text + frames
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(report: RunReport, path: str | Path) -> None:
    Path(path).write_text(junit_xml(report), encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------- HTML

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse} td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}
.passed{background:#d8f5d8} .failed{background:#f8d0d0} .non-strict{background:#fbe9c4}
.skipped{background:#e6e6e6} .error{background:#f0c0f0}
details{margin:4px 0;border:1px solid #ddd;padding:4px 8px} summary{cursor:pointer}
pre{background:#f6f6f6;padding:6px;overflow-x:auto;font-size:12px}
.outcome{display:inline-block;min-width:7em;padding:0 4px;font-weight:bold}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def html_page(report: RunReport) -> str:
    """One self-contained page: summary by area, coverage, settings, and every case with its exchange."""
    areas: dict[str, Counter[Outcome]] = defaultdict(Counter)
    for result in report.results:
        areas["/".join(result.case.id.split("/")[:2])][result.outcome] += 1
    outcome_heads = "".join(f"<th>{_e(LABELS[o])}</th>" for o in Outcome)
    rows = "".join(
        f"<tr><td>{_e(area)}</td>" + "".join(
            f'<td class="{o.value if counts[o] else ""}">{counts[o]}</td>' for o in Outcome) + "</tr>"
        for area, counts in areas.items())
    totals = "".join(f'<td id="total-{o.value}">{report.count(o)}</td>' for o in Outcome)
    coverage = report.coverage or {}
    uncovered = "".join(f"<li><b>{_e(u['clause'])}</b>: {_e(u['reason'])}</li>"
                        for u in coverage.get("uncovered", []))
    settings = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in sorted(report.settings.items()))
    cases = []
    for result in report.results:
        frames = "\n".join(e.line() for e in result.exchanges) or "(no frames)"
        facts = [f"<p><b>Clauses</b>: {_e(', '.join(result.case.clauses))} &middot; <b>Level</b>: "
                 f"{_e(result.case.level.value)} &middot; {result.duration_s:.2f} s</p>",
                 f"<p><b>Requirement</b>: {_e(result.case.requirement)}</p>"]
        if result.expected or result.actual:
            facts.append(f"<p><b>Expected</b>: {_e(result.expected)}<br><b>Actual</b>: {_e(result.actual)}</p>")
        if result.detail:
            facts.append(f"<p><b>Detail</b>: {_e(result.detail)}</p>")
        opened = " open" if result.outcome in (Outcome.FAILED, Outcome.ERROR) else ""
        cases.append(
            f'<details class="case" id="{_e(result.case.id)}" data-outcome="{result.outcome.value}"{opened}>'
            f'<summary><span class="outcome {result.outcome.value}">{_e(LABELS[result.outcome])}</span> '
            f"{_e(result.case.id)}</summary>{''.join(facts)}<pre>{_e(frames)}</pre></details>")
    verdict = "PASS" if report.ok else "FAIL"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>rocketspec conformance {_e(report.suite)}: {verdict}</title>
<style>{_CSS}</style></head><body>
<h1>rocketspec conformance: {_e(report.suite)} &mdash; <span id="verdict">{verdict}</span></h1>
<p>Target: {_e(report.target)}<br>Started {_e(report.started_at)}, {report.duration_s:.1f} s,
{len(report.results)} case(s){' (strict)' if report.strict else ''}.</p>
<h2>Summary by area</h2>
<table id="summary"><tr><th>area</th>{outcome_heads}</tr>{rows}<tr><th>total</th>{totals}</tr></table>
<h2>Clause coverage</h2><p id="coverage">{_e(coverage.get('summary', ''))}</p><ul>{uncovered}</ul>
<h2>Target settings used</h2><table>{settings or '<tr><td>none</td></tr>'}</table>
<h2>Cases</h2>
{''.join(cases)}
</body></html>
"""


def write_html(report: RunReport, directory: str | Path) -> Path:
    """Write ``index.html`` and ``index.json`` into ``directory`` (created if needed); returns the page's path."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    page = folder / "index.html"
    page.write_text(html_page(report), encoding="utf-8")
    write_json(report, folder / "index.json")
    return page
