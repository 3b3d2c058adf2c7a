"""Java semantics RocketMQ's code relies on: the one owner every layer imports (like ``protocol``).

Not protocol rules but language facts: ``int`` and ``long`` arithmetic wraps, ``Long.parseLong`` /
``Integer.parseInt`` accept an optional sign and decimal digits only, ``Character.isWhitespace`` (and so
``UtilAll.isBlank`` / ``StringUtils.isBlank``) knows a fixed set of characters, ``String.hashCode`` runs over UTF-16
code units. The spec's oracles and the reference implementation both use these, so neither restates them.
"""

from __future__ import annotations

import decimal
import functools
import operator
import re
import struct
from collections.abc import Sequence

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1

#: ``Character.isWhitespace`` (Java 17): the separators (Zs, Zl, Zp) except the no-break spaces U+00A0, U+2007 and
#: U+202F, and the controls TAB, LF, VT, FF, CR and FS, GS, RS, US. (Java 8's Unicode 6.2 also counts U+180E, which
#: later Unicode versions, and this set, do not.)
WHITESPACE = frozenset(
    "\t\n\u000b\f\r\u001c\u001d\u001e\u001f \u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2008\u2009"
    "\u200a\u2028\u2029\u205f\u3000"
)

_DECIMAL = re.compile(r"[+-]?\d+\Z")  # Character.digit: any Unicode decimal digit


def int32(value: int) -> int:
    """``value`` wrapped to a Java ``int``.

    post: INT_MIN <= __return__ <= INT_MAX
    post: (__return__ - value) % 2**32 == 0
    """
    return (value - INT_MIN) % 2**32 + INT_MIN


def int64(value: int) -> int:
    """``value`` wrapped to a Java ``long``.

    post: LONG_MIN <= __return__ <= LONG_MAX
    post: (__return__ - value) % 2**64 == 0
    """
    return (value - LONG_MIN) % 2**64 + LONG_MIN


def int_abs(value: int) -> int:
    """``Math.abs`` of a Java ``int``: ``Integer.MIN_VALUE`` stays negative."""
    return int32(abs(value))


def rem(dividend: int, divisor: int) -> int:
    """Java's ``%``: truncating, so the remainder takes the sign of the dividend.

    pre: divisor != 0
    post: abs(__return__) < abs(divisor)
    post: __return__ == 0 or (__return__ > 0) == (dividend > 0)
    """
    magnitude = abs(dividend) % abs(divisor)
    return magnitude if dividend >= 0 else -magnitude


def parse_long(text: str | None, bits: int = 64) -> int | None:
    """``Long.parseLong`` (``bits=64``) / ``Integer.parseInt`` (``bits=32``): an optional sign, then decimal digits
    (any Unicode decimal digit, as ``Character.digit`` reads it), within range; None where Java throws
    ``NumberFormatException`` (null included).

    post: __return__ is None or -(2 ** (bits - 1)) <= __return__ < 2 ** (bits - 1)
    """
    if text is None or not _DECIMAL.match(text):
        return None
    value = int(text)
    limit = 1 << (bits - 1)
    return value if -limit <= value < limit else None


def is_whitespace(ch: str) -> bool:
    """``Character.isWhitespace`` of one character."""
    return ch in WHITESPACE


def trim(text: str) -> str:
    """``String.trim``: every character up to U+0020 off both ends (Python's ``strip`` takes Unicode whitespace
    instead, and leaves control characters)."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def is_blank(text: str | None) -> bool:
    """``UtilAll.isBlank`` / ``StringUtils.isBlank``: null, empty, or only ``Character.isWhitespace`` characters."""
    return text is None or all(ch in WHITESPACE for ch in text)


@functools.lru_cache(maxsize=512)
def _powers_of_31(n: int) -> tuple[int, ...]:
    return tuple(pow(31, n - 1 - i, 0x1_0000_0000) for i in range(n))


def utf16_units(text: str) -> Sequence[int]:
    """The UTF-16 code units of ``text`` (a Java ``String``'s chars); lone surrogates pass through."""
    if text.isascii():
        return text.encode("ascii")
    return [unit for (unit,) in struct.iter_unpack(">H", text.encode("utf-16-be", "surrogatepass"))]


def string_hash(text: str) -> int:
    """``String.hashCode``: ``h = 31*h + c`` over UTF-16 code units, as a signed 32-bit int.

    Computed as the sum of each unit times its power of 31 modulo 2**32 (the recurrence unrolled, the loop in C):
    the store hashes every key of every message it indexes.

    post: INT_MIN <= __return__ <= INT_MAX
    post: text != "" or __return__ == 0
    """
    units = utf16_units(text)
    h: int = sum(map(operator.mul, units, _powers_of_31(len(units)))) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x80000000 else h


def big_decimal_text(value: decimal.Decimal) -> str:
    """``BigDecimal.toString`` of a JSON decimal as fastjson keeps it: its digits and exponent as written
    (``1.50``, ``1E+3``), with no negative zero (``-0.0`` is ``0.0``)."""
    return str(value.copy_abs()) if value.is_zero() else str(value)


def big_decimal_int(value: decimal.Decimal) -> int:
    """``BigDecimal.intValue``: the integer part (toward zero), wrapped to a Java ``int`` (3e9 is -1294967296)."""
    return int32(int(value.to_integral_value(rounding=decimal.ROUND_DOWN)))

