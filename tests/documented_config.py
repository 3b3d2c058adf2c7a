"""The broker files the docs show for the whole conformance suite against ``serve`` (``docs/conformance.md`` and
``docs/serve.md``: ``conformance-a.conf`` for broker-a, ``conformance-b.conf`` for broker-b). Tests run with them as
written, so the docs cannot drift from what passes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rocketspec.refimpl.broker.config_file import load_broker_file

ROOT = Path(__file__).resolve().parent.parent


def documented_files(doc: str = "conformance.md") -> list[str]:
    """The texts of the per-broker files ``docs/<doc>`` shows (its ```properties blocks headed ``# conformance-``),
    in broker order."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    blocks = [str(b) for b in re.findall(r"```properties\n(.*?)```", text, re.DOTALL) if b.startswith("# conformance-")]
    assert len(blocks) == 2, f"docs/{doc} shows {len(blocks)} per-broker conformance files, not 2"
    return blocks


def documented_settings(doc: str = "conformance.md") -> list[dict[str, Any]]:
    """Each documented file as ``serve --broker-config`` reads it: one broker's ``BrokerConfig`` options."""
    return [dict(load_broker_file(text).options) for text in documented_files(doc)]
