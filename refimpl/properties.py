"""``java.util.Properties.load`` and ``MixAll.properties2Object``'s value types: shared by the configuration bodies
admin tools send (UPDATE_BROKER_CONFIG, UPDATE_NAMESRV_CONFIG) and the configuration files ``rocketspec serve``
reads (``--broker-config``, ``--namesrv-config``).

:func:`load_properties` reads as Java 17's ``Properties.load`` (its ``LineReader`` and ``loadConvert``): natural lines
end at ``\\n``, ``\\r`` or ``\\r\\n``; leading blanks (space, tab, form feed) are skipped; a line whose first other
character is ``#`` or ``!`` is a comment (never continued); a line ending in an odd number of backslashes goes on
with the next line, whose leading blanks are skipped; the key ends at the first unescaped ``=``, ``:`` or blank, and
the value starts after blanks and at most one ``=`` or ``:``; trailing blanks stay in the value; escapes ``\\t``
``\\n`` ``\\r`` ``\\f`` ``\\uXXXX``, and a backslash before any other character stands for that character. A key set
twice keeps its last value (a ``Hashtable``).
"""

from __future__ import annotations

import re

import attrs

from rocketspec.spec.java import parse_long

_NATURAL_LINE = re.compile(r"\r\n|\r|\n")
_BLANKS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class ConfigFileError(ValueError):
    """A configuration file a server cannot take: ``line N: ...`` (the caller names the file)."""


@attrs.frozen
class PropertyLine:
    """One ``key=value`` of a properties text; ``line`` is the (1-based) natural line its logical line starts on."""

    line: int
    key: str
    value: str


def _continues(text: str) -> bool:
    """An odd number of trailing backslashes: the logical line goes on with the next natural line."""
    return (len(text) - len(text.rstrip("\\"))) % 2 == 1


def _convert(text: str, line: int) -> str:
    """``Properties.loadConvert``: the escapes resolved."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        i += 1
        if ch != "\\" or i == len(text):
            out.append(ch)
            continue
        ch = text[i]
        i += 1
        if ch == "u":
            digits = text[i:i + 4]
            if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(f"line {line}: malformed \\uxxxx encoding")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(ch, ch))
    return "".join(out)


def _split(logical: str) -> tuple[str, str]:
    """``Properties.load0``: (raw key, raw value) of one logical line."""
    key_len, value_start, has_sep, backslash = 0, len(logical), False, False
    while key_len < len(logical):
        ch = logical[key_len]
        if ch in "=:" and not backslash:
            value_start, has_sep = key_len + 1, True
            break
        if ch in _BLANKS and not backslash:
            value_start = key_len + 1
            break
        backslash = not backslash if ch == "\\" else False
        key_len += 1
    while value_start < len(logical):
        ch = logical[value_start]
        if ch not in _BLANKS:
            if has_sep or ch not in "=:":
                break
            has_sep = True
        value_start += 1
    return logical[:key_len], logical[value_start:]


def load_properties(text: str) -> list[PropertyLine]:
    """Every ``key=value`` of ``text`` in order, as ``Properties.load`` reads it (see the module docstring); a
    malformed ``\\uXXXX`` escape raises ``ValueError`` naming its line (Java's ``IllegalArgumentException``)."""
    lines = _NATURAL_LINE.split(text)
    out: list[PropertyLine] = []
    i = 0
    while i < len(lines):
        start = i + 1
        logical = lines[i].lstrip(_BLANKS)
        i += 1
        if not logical or logical[0] in "#!":
            continue
        while _continues(logical):
            logical = logical[:-1]
            if i == len(lines):
                break
            logical += lines[i].lstrip(_BLANKS)
            i += 1
        if not logical:
            continue
        key, value = _split(logical)
        out.append(PropertyLine(start, _convert(key, start), _convert(value, start)))
    return out


def parse_properties(text: str) -> dict[str, str]:
    """``Properties.load`` as a dict (a key set twice keeps its last value); ``ValueError`` on a malformed
    ``\\uXXXX`` escape (``MixAll.string2Properties`` then answers null: the request is SYSTEM_ERROR)."""
    return {entry.key: entry.value for entry in load_properties(text)}


def file_entries(text: str) -> dict[str, PropertyLine]:
    """A configuration file's entries by key, the last of a key set twice (as ``Properties`` keeps it), each with
    its line; ``ConfigFileError`` for a malformed escape."""
    try:
        return {entry.key: entry for entry in load_properties(text)}
    except ValueError as error:
        raise ConfigFileError(str(error)) from None


# --------------------------------------------------------------------------------------- properties2Object's types
JAVA_INT = "int"
JAVA_LONG = "long"
JAVA_BOOLEAN = "boolean"
JAVA_STRING = "String"
_EXPECTED = {
    JAVA_INT: "a Java int (a whole number from -2147483648 to 2147483647, nothing around it)",
    JAVA_LONG: "a Java long (a whole number from -2**63 to 2**63 - 1, nothing around it)",
    JAVA_BOOLEAN: "true or false",
}


def expected(java_type: str) -> str:
    """What a value of ``java_type`` must look like, for an error message."""
    return _EXPECTED.get(java_type, "text")


def java_setting(text: str, java_type: str) -> int | bool | str:
    """A configuration file's value of a field of ``java_type``, as ``MixAll.properties2Object`` sets it:
    ``Integer.parseInt`` / ``Long.parseLong`` (no blanks around the digits) and ``String`` as given.

    Where Java would quietly skip the setting (a number that does not parse: the exception is swallowed) or read
    something else than was written (``Boolean.parseBoolean`` reads anything but ``true``, in any case, as false),
    a file given to ``rocketspec serve`` is wrong: ``ValueError`` with :func:`expected`."""
    if java_type in (JAVA_INT, JAVA_LONG):
        number = parse_long(text, 32 if java_type == JAVA_INT else 64)
        if number is None:
            raise ValueError(expected(java_type))
        return number
    if java_type == JAVA_BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise ValueError(expected(java_type))
        return text.lower() == "true"
    return text
