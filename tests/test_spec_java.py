"""The Java semantics every layer shares (``rocketspec.spec.java``): int and long wrapping, ``Math.abs`` and ``%``,
``Long.parseLong``, ``Character.isWhitespace`` / ``isBlank``, ``String.hashCode``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketspec.spec import java


def test_int_and_long_wrap() -> None:
    assert java.int32(2**31) == -(2**31) and java.int32(-(2**31) - 1) == 2**31 - 1 and java.int32(5) == 5
    assert java.int64(2**63) == -(2**63) and java.int64(-1) == -1
    assert java.int_abs(-(2**31)) == -(2**31) and java.int_abs(-7) == 7


def test_java_remainder_takes_the_dividend_sign() -> None:
    assert java.rem(-7, 3) == -1 and java.rem(7, -3) == 1 and java.rem(-6, 3) == 0


def test_parse_long_as_java() -> None:
    assert java.parse_long("+12") == 12 and java.parse_long("-3") == -3
    assert java.parse_long("1_0") is None and java.parse_long(" 1") is None and java.parse_long(None) is None
    assert java.parse_long("") is None and java.parse_long("-") is None and java.parse_long("1.0") is None
    assert java.parse_long(str(1 << 31), 32) is None and java.parse_long(str(1 << 31)) == 1 << 31
    assert java.parse_long(str(2**63)) is None and java.parse_long(str(-(2**63))) == -(2**63)
    assert java.parse_long("١٢") == 12  # Character.digit reads any Unicode decimal digit


def test_blank_is_java_whitespace() -> None:
    assert java.is_blank(None) and java.is_blank("") and java.is_blank(" \t\r\n\u001f\u2028\u3000")
    assert not java.is_blank("\u00a0") and not java.is_blank("\u202f") and not java.is_blank(" x ")
    assert not java.is_blank("\u180e")  # whitespace in Java 8 only (Unicode 6.2)


def _naive_hash(text: str) -> int:
    h = 0
    for unit in java.utf16_units(text):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 2**32 if h & 0x80000000 else h


@given(st.text(max_size=40))
def test_string_hash_is_the_recurrence_over_utf16_units(text: str) -> None:
    assert java.string_hash(text) == _naive_hash(text)


def test_string_hash_known_values() -> None:
    assert java.string_hash("") == 0 and java.string_hash("TagA") == 2598919
    assert java.string_hash("TagNeg") == -1797390410  # the negative tags code the system machine sends
    assert java.string_hash("😀") == _naive_hash("\ud83d\ude00".encode("utf-16", "surrogatepass").decode("utf-16"))
