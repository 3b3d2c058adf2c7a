"""Console text that fits the terminal: tables and paragraphs wrapped at word boundaries.

The width is the terminal's, else ``COLUMNS``, else 80 (a pipe or a file). Words are never split where a space can
break the line instead; a word longer than its column (an identifier, a path, a state's repr) is broken after a
``.``, ``_``, ``/``, ``(``, ``,``, ``[`` or ``:`` first, and cut mid-word only when no such break fits. East Asian
wide characters count two columns.
"""

from __future__ import annotations

import shutil
import unicodedata
from collections.abc import Sequence

#: The narrowest a column is squeezed to when a table must fit the terminal.
MIN_COLUMN = 12
#: The width of a console table when the terminal's is unknown (output to a pipe or a file, no ``COLUMNS``).
DEFAULT_WIDTH = 80
#: Where a word too long for its column is broken first: after one of these (a dotted name, a path, a call).
BREAK_AFTER = "._/(,[:"


def table_width() -> int:
    """The width console output must fit: the terminal's, else ``COLUMNS``, else :data:`DEFAULT_WIDTH`."""
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def _pieces(word: str, width: int) -> list[str]:
    """``word`` in pieces of at most ``width`` columns: each broken after the last of :data:`BREAK_AFTER` that fits,
    cut mid-word only where no such break fits (``DefaultMQProducerImpl.sendDefaultImpl`` breaks after the dot)."""
    pieces: list[str] = []
    while display_width(word) > width:
        fits, used = 0, 0
        for i, ch in enumerate(word):
            used += display_width(ch)
            if used > width:
                break
            fits = i + 1
        cut = max((i + 1 for i in range(fits) if word[i] in BREAK_AFTER), default=0) or max(fits, 1)
        pieces.append(word[:cut])
        word = word[cut:]
    pieces.append(word)
    return pieces


def _prefix_at_break(word: str, width: int) -> str:
    """The longest start of ``word`` within ``width`` columns that ends with one of :data:`BREAK_AFTER`, or ``""``."""
    best, used = "", 0
    for i, ch in enumerate(word[:-1]):
        used += display_width(ch)
        if used > width:
            break
        if ch in BREAK_AFTER:
            best = word[: i + 1]
    return best


def wrap(text: str, width: int, rest: int | None = None) -> list[str]:
    """``text`` in lines of at most ``width`` display columns (``rest`` for the lines after the first), broken at
    spaces; a word longer than a line is broken at :data:`BREAK_AFTER` (:func:`_pieces`), mid-word only where it
    must."""
    lines: list[str] = []
    line, used = "", 0

    def room() -> int:
        return width if not lines or rest is None else rest

    for word in text.split():
        size = display_width(word)
        if line and used + 1 + size <= room():
            line, used = f"{line} {word}", used + 1 + size
            continue
        if line and size > room():
            # It must be broken anyway: its first piece fills this line where a separator allows.
            head = _prefix_at_break(word, room() - used - 1)
            if head:
                line, word = f"{line} {head}", word[len(head):]
        if line:
            lines.append(line)
        pieces = _pieces(word, room())
        while len(pieces) > 1:  # after the first line the room may change: cut the rest again
            lines.append(pieces[0])
            pieces = _pieces("".join(pieces[1:]), room())
        line = pieces[0]
        used = display_width(line)
    if line or not lines:
        lines.append(line)
    return lines


def wrap_block(text: str, width: int | None = None, indent: str = "    ") -> str:
    """Every line of ``text`` wrapped to ``width`` (default :func:`table_width`); a line's continuations keep its
    own indentation and ``indent`` more."""
    width = table_width() if width is None else width
    out: list[str] = []
    for raw in text.splitlines() or [""]:
        lead = raw[: len(raw) - len(raw.lstrip())]
        first = max(MIN_COLUMN, width - display_width(lead))
        rest = max(MIN_COLUMN, width - display_width(lead + indent))
        lines = wrap(raw.strip(), first, rest)
        out.append(lead + lines[0])
        out.extend(lead + indent + line for line in lines[1:])
    return "\n".join(out)


def _pad(text: str, width: int) -> str:
    return text + " " * (width - display_width(text))


def _longest_word(text: str) -> int:
    """The widest piece of ``text`` that should stay on one line: a word, or the part of one between breaks."""
    return max((display_width(piece) for word in text.split() for piece in _split_breaks(word)), default=0)


def _split_breaks(word: str) -> list[str]:
    """``word`` cut after each of :data:`BREAK_AFTER`: the pieces :func:`wrap` keeps whole where it can."""
    pieces, start = [], 0
    for i, ch in enumerate(word):
        if ch in BREAK_AFTER:
            pieces.append(word[start:i + 1])
            start = i + 1
    return [*pieces, word[start:]] if start < len(word) else pieces or [word]


def fits_whole(rows: Sequence[Sequence[str]], headers: Sequence[str], width: int | None = None) -> bool:
    """Whether a table of ``rows`` fits ``width`` with no word or identifier piece cut (see :func:`format_table`)."""
    room = (table_width() if width is None else width) - 2 * (len(headers) - 1)
    return sum(_keep_widths(rows, headers)) <= room


def _keep_widths(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> list[int]:
    return [max(MIN_COLUMN, display_width(h), max((_longest_word(r[i]) for r in rows), default=0))
            for i, h in enumerate(headers)]


def format_table(rows: Sequence[Sequence[str]], headers: Sequence[str], width: int | None = None) -> str:
    """A plain-text table within ``width`` columns (default :func:`table_width`): the widest columns are narrowed
    and their cells wrapped onto more lines; the full text of every cell stays (``--json`` has it unwrapped).
    A column is narrowed below its longest unbreakable piece (an identifier) only when nothing else can give."""
    widths = [max(display_width(h), *(display_width(r[i]) for r in rows)) if rows else display_width(h)
              for i, h in enumerate(headers)]
    room = (table_width() if width is None else width) - 2 * (len(headers) - 1)
    floors = [max(MIN_COLUMN, display_width(h)) for h in headers]
    for limit in (_keep_widths(rows, headers), floors):  # keep identifiers whole; below only if it must
        while sum(widths) > room:
            narrowable = [i for i in range(len(widths)) if widths[i] > limit[i]]
            if not narrowable:
                break
            widest = max(narrowable, key=lambda i: widths[i])
            widths[widest] -= 1
    out = ["  ".join(_pad(h, w) for h, w in zip(headers, widths, strict=True)).rstrip(),
           "  ".join("-" * w for w in widths)]
    for row in rows:
        cells = [wrap(cell, w) for cell, w in zip(row, widths, strict=True)]
        for i in range(max(len(c) for c in cells)):
            out.append("  ".join(_pad(c[i] if i < len(c) else "", w)
                                 for c, w in zip(cells, widths, strict=True)).rstrip())
    return "\n".join(out)


def format_records(rows: Sequence[Sequence[str]], headers: Sequence[str], width: int | None = None) -> str:
    """The rows of a table as blocks, for a terminal too narrow for the table without cutting identifiers: the first
    cell, then the second wrapped beside it, then each further cell as ``header: text`` below, all within ``width``.
    A header line names the fields, as a table's would."""
    width = table_width() if width is None else width
    key = max([display_width(headers[0]), *(display_width(r[0]) for r in rows)]) + 2
    head = _pad(headers[0], key) + ", ".join(headers[1:])
    out = [head, "-" * min(width, display_width(head))]
    for row in rows:
        lines = wrap(row[1], max(MIN_COLUMN, width - key))
        out.append(_pad(row[0], key) + lines[0])
        out.extend(" " * key + line for line in lines[1:])
        for header, cell in zip(headers[2:], row[2:], strict=True):
            label = f"{header}: "
            more = wrap(cell, max(MIN_COLUMN, width - key - display_width(label)))
            out.append(" " * key + label + more[0])
            out.extend(" " * (key + display_width(label)) + line for line in more[1:])
    return "\n".join(out)


def format_fitting(rows: Sequence[Sequence[str]], headers: Sequence[str], width: int | None = None) -> str:
    """:func:`format_table` where it fits with every identifier whole, else :func:`format_records`."""
    if fits_whole(rows, headers, width):
        return format_table(rows, headers, width)
    return format_records(rows, headers, width)


__all__ = ["BREAK_AFTER", "DEFAULT_WIDTH", "MIN_COLUMN", "display_width", "fits_whole", "format_fitting",
           "format_records", "format_table", "table_width", "wrap",
           "wrap_block"]
