"""Java values of SQL92 selectors and how 4.9.8 compares them (``ComparisonExpression.__compare``).

A selector's values are Java ``Integer``, ``Long``, ``Double`` (``Num``), ``String``, ``Boolean`` or null. Two values of
different classes are reconciled the way ``__compare`` does with ``convertStringExpressions`` on: numbers widen, a
string is parsed with the other side's ``valueOf`` (whose failure throws), anything else compares as "less".
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable

import attrs


class EvaluationError(Exception):
    """Java threw while evaluating (``NumberFormatException`` wrapped in a RuntimeException, ClassCastException)."""


@attrs.frozen
class Num:
    """A Java ``Integer`` (``bits`` 32), ``Long`` (64) or ``Double`` (0)."""

    bits: int
    value: int | float

    def java_str(self) -> str:
        if self.bits:
            return str(self.value)
        return java_double_str(float(self.value))


Value = bool | str | Num | None


def java_double_str(d: float) -> str:
    """``Double.toString``: plain between 10^-3 and 10^7, else ``d.dddE±n``."""
    if math.isnan(d):
        return "NaN"
    if math.isinf(d):
        return "Infinity" if d > 0 else "-Infinity"
    if d == 0:
        return "-0.0" if math.copysign(1, d) < 0 else "0.0"
    if 1e-3 <= abs(d) < 1e7:
        return repr(d)
    if abs(d) == 5e-324:
        # Double.MIN_VALUE: JDK 17's FloatingDecimal prints two digits (JDK 19+ prints the shortest, 4.9E-324 too).
        return "-4.9E-324" if d < 0 else "4.9E-324"
    # Shortest digits that read back as d, in Java's computerized scientific notation.
    for precision in range(17):
        text = f"{d:.{precision}e}"
        if float(text) == d:
            break
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}E{int(exponent)}"


def java_int(text: str, bits: int) -> int:
    """``Integer.parseInt`` / ``Long.parseLong`` in radix 10: a sign, then digits of any script (one UTF-16 unit)."""
    sign = 1
    digits = text
    if text and text[0] in "+-":
        sign = -1 if text[0] == "-" else 1
        digits = text[1:]
    if not digits:
        raise EvaluationError(f'java.lang.NumberFormatException: For input string: "{text}"')
    total = 0
    for ch in digits:
        value = unicodedata.decimal(ch, -1) if ord(ch) <= 0xFFFF else -1
        if value < 0:
            raise EvaluationError(f'java.lang.NumberFormatException: For input string: "{text}"')
        total = total * 10 + value
    total *= sign
    if not -(1 << (bits - 1)) <= total <= (1 << (bits - 1)) - 1:
        raise EvaluationError(f'java.lang.NumberFormatException: For input string: "{text}"')
    return total


_DECIMAL_FLOAT = re.compile(r"([+-]?)(NaN|Infinity|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)([fFdD]?)", re.ASCII)
_HEX_FLOAT = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?", re.ASCII)


def java_double(text: str) -> float:
    """``Double.parseDouble``: String.trim, then a decimal, hexadecimal, NaN or Infinity literal."""
    start, end = 0, len(text)
    while start < end and ord(text[start]) <= 0x20:
        start += 1
    while end > start and ord(text[end - 1]) <= 0x20:
        end -= 1
    core = text[start:end]
    found = _DECIMAL_FLOAT.fullmatch(core)
    if found is not None:
        sign, number, suffix = found.groups()
        if suffix and number in ("NaN", "Infinity"):
            raise EvaluationError(f'java.lang.NumberFormatException: For input string: "{text}"')
        return float(sign + number)
    if _HEX_FLOAT.fullmatch(core) is not None:
        return float.fromhex(core.rstrip("fFdD"))
    raise EvaluationError(f'java.lang.NumberFormatException: For input string: "{text}"')


def _double_order(a: float, b: float) -> int:
    """``Double.compare``."""
    if a < b:
        return -1
    if a > b:
        return 1
    # Equal, or a NaN: order by the canonical bits (-0.0 < 0.0, NaN above all and equal to NaN).
    def key(x: float) -> tuple[int, float]:
        return (2, 0.0) if math.isnan(x) else (1 if math.copysign(1, x) > 0 else 0, 0.0)

    ka, kb = key(a), key(b)
    return (ka > kb) - (ka < kb)


def _from_string(text: str, like: Value) -> Value:
    """``valueOf`` of the other operand's class."""
    if isinstance(like, bool):
        return text.lower() == "true"
    assert isinstance(like, Num)
    if like.bits:
        return Num(like.bits, java_int(text, like.bits))
    return Num(0, java_double(text))


def java_compare(left: Value, right: Value) -> int:
    """``ComparisonExpression.__compare(lv, rv, true)``: negative, zero or positive; -1 for classes it cannot
    reconcile; raises ``EvaluationError`` where Java throws."""
    if type(left) is not type(right) or (isinstance(left, Num) and isinstance(right, Num) and left.bits != right.bits):
        if isinstance(left, bool):
            if isinstance(right, str):
                raise EvaluationError("java.lang.ClassCastException: Boolean cannot be cast to String")
            return -1
        if isinstance(left, Num):
            if isinstance(right, Num):
                # Widen: Integer -> Long -> Double (bits 32 < 64, Double marked 0).
                rank = {32: 0, 64: 1, 0: 2}
                target = left.bits if rank[left.bits] > rank[right.bits] else right.bits
                convert: Callable[[int | float], int | float] = float if target == 0 else int
                left, right = Num(target, convert(left.value)), Num(target, convert(right.value))
            elif isinstance(right, str):
                right = _from_string(right, left)
            else:
                return -1
        elif isinstance(left, str):
            left = _from_string(left, right)
        else:
            return -1
    if isinstance(left, Num) and isinstance(right, Num):
        if left.bits == 0:
            return _double_order(float(left.value), float(right.value))
        return (left.value > right.value) - (left.value < right.value)
    if isinstance(left, str) and isinstance(right, str):
        a, b = left.encode("utf-16-be", "surrogatepass"), right.encode("utf-16-be", "surrogatepass")
        return (a > b) - (a < b)
    return (bool(left) > bool(right)) - (bool(left) < bool(right))



def java_value_str(value: Value) -> str:
    """``String.valueOf`` of a constant's value (``%s``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Num):
        return value.java_str()
    return str(value)
