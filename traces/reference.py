"""The schema and invariant reference, rendered from traces.schema and traces.invariants (docs/traces.md embeds it)."""

from __future__ import annotations

from typing import Any

from rocketspec.traces.invariants import CASES, INVARIANTS
from rocketspec.traces.schema import COLUMNS, CORE, KINDS, MANIFEST, SCHEMA_VERSION

BEGIN = "<!-- BEGIN GENERATED: rocketspec traces schema --markdown -->"
END = "<!-- END GENERATED -->"


def schema_json() -> dict[str, Any]:
    """The schema as data, for implementations that emit traces."""
    return {
        "schema_version": SCHEMA_VERSION,
        "manifest": MANIFEST,
        "core": list(CORE),
        "columns": [{"name": c.name, "type": c.type, "doc": c.doc} for c in COLUMNS],
        "kinds": [
            {"kind": k.name, "doc": k.doc, "required": list(k.required), "optional": list(k.optional)}
            for k in KINDS.values()
        ],
        "invariants": [
            {"name": i.name, "title": i.title, "clauses": list(i.clauses), "kinds": list(i.kinds), "rule": i.rule,
             "case": CASES[i.name]}
            for i in INVARIANTS
        ],
    }


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown() -> str:
    """Columns, kinds and invariants as Markdown."""
    lines = [BEGIN, "", f"### Columns (schema version {SCHEMA_VERSION})", "", "| column | type | meaning |",
             "|---|---|---|"]
    lines += [f"| `{c.name}` | {c.type} | {_cell(c.doc)} |" for c in COLUMNS]
    lines += ["", "### Kinds", "",
              f"Every row also sets the core columns {', '.join(f'`{c}`' for c in CORE)}.", "",
              "| kind | meaning | required | optional |", "|---|---|---|---|"]
    for k in KINDS.values():
        req = ", ".join(f"`{c}`" for c in k.required)
        opt = ", ".join(f"`{c}`" for c in k.optional) or "-"
        lines.append(f"| `{k.name}` | {_cell(k.doc)} | {req} | {opt} |")
    lines += ["", "### Invariants", ""]
    for i in INVARIANTS:
        lines += [f"#### `{i.name}`: {i.title}", "",
                  f"Clauses {', '.join(i.clauses)}. Reads {', '.join(f'`{k}`' for k in i.kinds)}.", "", i.rule, "",
                  f"A case judged: {CASES[i.name]}.", ""]
    lines.append(END)
    return "\n".join(lines)


def embed(document: str) -> str:
    """``document`` with the text between the BEGIN and END markers replaced by :func:`markdown`."""
    start, end = document.find(BEGIN), document.find(END)
    if start < 0 or end < start:
        raise ValueError("the document has no generated section markers")
    return document[:start] + markdown() + document[end + len(END):]
