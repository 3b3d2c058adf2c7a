"""The machine diagrams are drawn from the machines: docs/machines.md is what the code draws, and a rule broken in
``step`` or ``enabled`` shows in the picture."""

from __future__ import annotations

from pathlib import Path

import pytest
from mutation import mutant

from rocketspec.diagrams import VIEWS, draw, markdown
from rocketspec.spec import AREAS, remoting

DOC = Path(__file__).resolve().parent.parent / "docs" / "machines.md"


def test_every_area_has_a_view() -> None:
    assert set(VIEWS) == set(AREAS)


def test_the_connection_diagram() -> None:
    """WIRE-4, WIRE-5: a request is sent once; only a request that is not oneway is answered; a late answer ends
    nothing."""
    diagram = draw("remoting")
    edges = {(a, b): names for a, b, names in diagram.edges}
    assert diagram.initial == ("not sent",)
    assert edges[("not sent", "oneway sent")] == ("request sent",)
    assert edges[("waiting for the answer", "caller gave up")] == ("caller times out",)
    assert not any(a == "oneway sent" for a, _b in edges), "a oneway request is never answered"
    assert "stateDiagram-v2" in diagram.mermaid() and '[*] --> s' in diagram.mermaid()


def test_a_broken_rule_shows_in_the_diagram() -> None:
    """Broken WIRE-4: the server answers a oneway request; the diagram grows an arrow out of "oneway sent"."""
    broken = mutant(remoting, "not (call.oneway or call.flagged or call.silent) and",
                    "not (call.flagged or call.silent) and")
    edges = {(a, b) for a, b, _names in draw("remoting", broken.model(), broken.TRANSITIONS).edges}
    assert any(a == "oneway sent" for a, _b in edges), edges


@pytest.mark.slow
def test_the_diagrams_page_is_current() -> None:
    """docs/machines.md is generated: `rocketspec spec diagrams --markdown > docs/machines.md`."""
    assert DOC.read_text(encoding="utf-8") == markdown() + "\n", \
        "docs/machines.md is stale: rocketspec spec diagrams --markdown > docs/machines.md"
