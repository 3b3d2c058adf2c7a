"""Console output fits the terminal, 80 columns where its width is unknown, and keeps identifiers whole."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pytest

from rocketspec.checkcache import CACHE_ENV
from rocketspec.cli import main
from rocketspec.console import display_width, format_records, format_table, table_width, wrap, wrap_block
from rocketspec.speccheck import clause_listing

WORD = re.compile(r"[^\W\d_][^\W_]*")  # a run of letters and digits: what must never be cut in two


@pytest.fixture
def no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Output to a pipe or a file, ``COLUMNS`` unset: what a log or CI sees."""
    monkeypatch.delenv("COLUMNS", raising=False)

    def not_a_terminal(fd: int = 1) -> os.terminal_size:
        raise OSError("not a terminal")

    monkeypatch.setattr(os, "get_terminal_size", not_a_terminal)


def test_the_width_is_80_when_unknown(no_terminal: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert table_width() == 80
    monkeypatch.setenv("COLUMNS", "132")
    assert table_width() == 132


def test_spec_check_fits_80_columns(no_terminal: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    main(["spec", "check", "--no-crosshair", "--max-states", "30", "--no-cache"])
    out = capsys.readouterr().out
    assert out.count("== ") >= 10
    too_wide = [line for line in out.splitlines() if display_width(line) > 80]
    assert not too_wide, too_wide[:3]


def test_spec_clauses_fits_80_columns_and_cuts_no_identifier(no_terminal: None,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "clauses"]) == 0
    out = capsys.readouterr().out
    too_wide = [line for line in out.splitlines() if display_width(line) > 80]
    assert not too_wide, too_wide[:3]
    # Every word of every cell appears whole as often as the cells hold it: no identifier was cut in two.
    cells = [text for c in clause_listing() for text in (str(c["id"]), str(c["statement"]), str(c["source"]),
                                                        ", ".join(c["checks"]))]  # type: ignore[arg-type]
    expected = Counter(w for text in cells for w in WORD.findall(text))
    shown = Counter(w for w in WORD.findall(out))
    missing = {w: n - shown[w] for w, n in expected.items() if shown[w] < n}
    assert not missing, sorted(missing)[:10]
    sources = {w for c in clause_listing() for w in WORD.findall(str(c["source"]))}
    assert "sendDefaultImpl" in sources and not sources & set(missing)


def test_a_wide_terminal_gets_the_table(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["spec", "clauses", "send_retry"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["clause", "statement", "source", "checks"]


def test_long_identifiers_break_after_a_separator_first() -> None:
    assert wrap("DefaultMQProducerImpl.sendDefaultImpl; seed 000", 24) == ["DefaultMQProducerImpl.",
                                                                             "sendDefaultImpl; seed", "000"]
    assert wrap("a crosshair:step[EndTransactionDuplicated](confirmed)", 30) == [
        "a crosshair:step[", "EndTransactionDuplicated](", "confirmed)"]
    assert wrap("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]  # nowhere to break: cut, as a last resort


def test_area_headers_wrap_with_an_indent() -> None:
    head = "== send_retry: 29 clauses, explored " + "lots of words " * 30
    lines = wrap_block(head, 80).splitlines()
    assert len(lines) > 1 and all(display_width(line) <= 80 for line in lines)
    assert all(line.startswith("    ") for line in lines[1:])
    assert " ".join(" ".join(lines).split()) == " ".join(head.split())


def test_records_keep_every_cell() -> None:
    rows = [["SEND-1", "word " * 40, "AbstractTransactionalMessageCheckListener.resolveHalfMsg", "crosshair:x"]]
    text = format_records(rows, ["clause", "statement", "source", "checks"], width=60)
    assert all(display_width(line) <= 60 for line in text.splitlines())
    assert "AbstractTransactionalMessageCheckListener." in text and "source: " in text and "checks: crosshair:x" in text
    table = format_table(rows, ["clause", "statement", "source", "checks"], width=400)
    assert len(table.splitlines()) == 3
