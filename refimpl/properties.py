"""``java.util.Properties.load`` for the configuration bodies admin tools send (UPDATE_BROKER_CONFIG,
UPDATE_NAMESRV_CONFIG): shared by the broker and the name server."""

from __future__ import annotations

import re

_LINE = re.compile(r"((?:[^=:\s\\]|\\.)*)\s*[=:]?\s*(.*)$", re.DOTALL)


def parse_properties(text: str) -> dict[str, str]:
    """``java.util.Properties.load`` for what mqadmin sends: ``key=value`` (or ``key:value`` / ``key value``) lines,
    ``#`` and ``!`` comments, blank lines skipped, leading blanks of keys and values dropped."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if not line or line[0] in "#!":
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        out[match.group(1).replace("\\", "")] = match.group(2)
    return out
