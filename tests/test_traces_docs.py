"""docs/traces.md embeds the schema and invariant reference generated from traces.schema and traces.invariants."""

from __future__ import annotations

import json
from pathlib import Path

from rocketspec.cli import main
from rocketspec.spec import AREAS, area_module
from rocketspec.traces.invariants import INVARIANTS
from rocketspec.traces.reference import embed, markdown
from rocketspec.traces.schema import COLUMNS, KINDS

DOC = Path(__file__).resolve().parent.parent / "docs" / "traces.md"


def test_docs_embed_the_generated_reference() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert embed(text) == text, "docs/traces.md is stale: run the snippet in traces/reference.py's embed()"
    for column in COLUMNS:
        assert f"`{column.name}`" in text
    for kind in KINDS:
        assert f"`{kind}`" in text


def test_invariants_cite_existing_clauses_and_kinds() -> None:
    known = {c.id for area in AREAS for c in area_module(area).CLAUSES.clauses}
    for inv in INVARIANTS:
        assert inv.clauses and set(inv.clauses) <= known, inv.name
        assert set(inv.kinds) <= set(KINDS), inv.name


def test_schema_command_prints_json_and_markdown(capsys) -> None:
    assert main(["traces", "schema"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema_version"] == 1
    assert [c["name"] for c in data["columns"]] == [c.name for c in COLUMNS]
    assert main(["traces", "schema", "--markdown"]) == 0
    assert capsys.readouterr().out.strip() == markdown().strip()
