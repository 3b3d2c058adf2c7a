"""Message filter: the SQL92 filter language as 4.9.8's broker compiles and evaluates it (the oracles' engine)."""

from __future__ import annotations

import enum
import math
import re
import unicodedata
from collections.abc import Mapping

from rocketspec.spec.message_filter.clauses import CLAUSES
from rocketspec.spec.message_filter.tags import java_trim


# ---------------------------------------------------------------------------------------------------------- SQL92
class Sql92Result(enum.Enum):
    """What evaluating a selector gives: a Boolean, null, an exception, or no evaluation (it did not compile)."""

    TRUE = "TRUE"
    FALSE = "FALSE"
    NULL = "NULL"
    ERROR = "ERROR"
    INVALID = "INVALID"


class _CompileError(Exception):
    """MQFilterException: the selector does not compile."""


class _Throw(Exception):
    """An exception thrown while evaluating (NumberFormatException, ClassCastException)."""


# Java values are tagged tuples: ("int"|"long"|"double"|"str"|"bool", value); None is null.
JValue = tuple[str, object] | None
_NUMERIC_RANK = {"int": 0, "long": 1, "double": 2}
_KEYWORDS = ("NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS")
_WS = " \t\n\r\f"
_FLOAT = re.compile(r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+")
_DECIMAL = re.compile(r"0|[1-9][0-9]*[lL]?")
_STRING = re.compile(r"'(?:''|[^'])*'")
_BLOCK = re.compile(r"/\*[^*]*\*+(?:[^/*][^*]*\*+)*/")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_OPERATORS = ("<>", "<=", ">=", "<", ">", "=", "(", ")", ",", "+", "-")
_DOUBLE_MAX = 1.7976931348623157e308
_DOUBLE_MIN = 5e-324


class _Lexer:
    """The selector's tokens, read on demand (JavaCC reads a token only when the parser looks at it)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.tokens: list[tuple[str, str]] = []

    def peek(self, k: int = 1) -> str:
        while len(self.tokens) < k:
            self.tokens.append(self._next())
        return self.tokens[k - 1][0]

    def take(self) -> tuple[str, str]:
        self.peek()
        return self.tokens.pop(0)

    def _next(self) -> tuple[str, str]:
        text = self.text
        while True:
            while self.pos < len(text) and text[self.pos] in _WS:
                self.pos += 1
            if text.startswith("--", self.pos):
                ends = [i for i in (text.find("\n", self.pos), text.find("\r", self.pos)) if i >= 0]
                if ends:
                    self.pos = min(ends) + 1
                    continue
            if text.startswith("/*", self.pos):
                block = _BLOCK.match(text, self.pos)
                if block is None:
                    raise _CompileError("lexical error: unterminated comment")
                self.pos = block.end()
                continue
            break
        if self.pos >= len(text):
            return ("EOF", "")
        ch = text[self.pos]
        for pattern, kind in ((_IDENT, "ID"), (_STRING, "STR")):
            found = pattern.match(text, self.pos)
            if found is not None:
                self.pos = found.end()
                word = found.group()
                if kind == "ID" and word.upper() in _KEYWORDS:
                    return (word.upper(), word)
                return (kind, word)
        if ch.isascii() and (ch.isdigit() or ch == "."):
            dec = _DECIMAL.match(text, self.pos)
            flo = _FLOAT.match(text, self.pos)
            dec_len = dec.end() - self.pos if dec else 0
            flo_len = flo.end() - self.pos if flo else 0
            if dec_len == 0 and flo_len == 0:
                raise _CompileError(f"lexical error at {ch!r}")
            kind, length = ("FLOAT", flo_len) if flo_len > dec_len else ("DEC", dec_len)
            word = text[self.pos:self.pos + length]
            self.pos += length
            return (kind, word)
        for op in _OPERATORS:
            if text.startswith(op, self.pos):
                self.pos += len(op)
                return (op, op)
        raise _CompileError(f"lexical error at {ch!r}")


# Expression nodes: ("const", JValue), ("bconst", JValue), ("prop", name), ("neg", e), ("not", e), ("cast", e),
# ("and", l, r), ("or", l, r), ("eq", l, r), ("cmp", op, l, r), ("in", name, values, negated).
Node = tuple[object, ...]
_BOOLEAN_KINDS = frozenset({"bconst", "not", "cast", "and", "or", "eq", "cmp", "in"})


class _Parser:
    """``SelectorParser``: recursive descent with JavaCC's one- and two-token lookaheads (FILTER-7, FILTER-8)."""

    def __init__(self, text: str) -> None:
        self.lex = _Lexer(text)

    def expect(self, kind: str) -> tuple[str, str]:
        if self.lex.peek() != kind:
            raise _CompileError(f"expected {kind}, found {self.lex.peek()}")
        return self.lex.take()

    def selector(self) -> Node:
        return _as_boolean(self.or_expr())

    def or_expr(self) -> Node:
        left = self.and_expr()
        while self.lex.peek() == "OR":
            self.lex.take()
            right = self.and_expr()
            left = ("or", _as_boolean(left), _as_boolean(right))
        return left

    def and_expr(self) -> Node:
        left = self.equality()
        while self.lex.peek() == "AND":
            self.lex.take()
            right = self.equality()
            left = ("and", _as_boolean(left), _as_boolean(right))
        return left

    def equality(self) -> Node:
        left = self.comparison()
        while True:
            kind = self.lex.peek()
            if kind == "=":
                self.lex.take()
                left = _create_equal(left, self.comparison())
            elif kind == "<>":
                self.lex.take()
                left = ("not", _create_equal(left, self.comparison()))
            elif kind == "IS":
                if self.lex.peek(2) == "NULL":
                    self.lex.take()
                    self.lex.take()
                    left = ("eq", left, ("bconst", None))
                else:
                    self.lex.take()
                    self.expect("NOT")
                    self.expect("NULL")
                    left = ("not", ("eq", left, ("bconst", None)))
            else:
                return left

    def comparison(self) -> Node:
        left = self.unary()
        while True:
            kind = self.lex.peek()
            if kind in ("<", "<=", ">", ">="):
                self.lex.take()
                left = _create_compare(kind, left, self.unary())
            elif kind == "BETWEEN":
                self.lex.take()
                low = self.unary()
                self.expect("AND")
                left = _create_between(left, low, self.unary())
            elif kind == "IN":
                self.lex.take()
                left = _create_in(left, self.string_list(), False)
            elif kind == "NOT":
                second = self.lex.peek(2)
                if second == "BETWEEN":
                    self.lex.take()
                    self.lex.take()
                    low = self.unary()
                    self.expect("AND")
                    high = self.unary()
                    left = ("or", _create_compare("<", left, low), _create_compare(">", left, high))
                elif second == "IN":
                    self.lex.take()
                    self.lex.take()
                    left = _create_in(left, self.string_list(), True)
                else:
                    raise _CompileError("NOT must be followed by BETWEEN or IN here")
            else:
                return left

    def string_list(self) -> frozenset[str]:
        self.expect("(")
        values = {_string_value(self.expect("STR")[1])}
        while self.lex.peek() == ",":
            self.lex.take()
            values.add(_string_value(self.expect("STR")[1]))
        self.expect(")")
        return frozenset(values)

    def unary(self) -> Node:
        kind = self.lex.peek()
        if kind == "+":
            self.lex.take()
            return self.unary()
        if kind == "-":
            self.lex.take()
            return ("neg", self.unary())
        if kind == "NOT":
            self.lex.take()
            return ("not", _as_boolean(self.unary()))
        return self.primary()

    def primary(self) -> Node:
        kind, word = self.lex.take()
        if kind == "STR":
            return ("const", ("str", _string_value(word)))
        if kind == "DEC":
            return ("const", _decimal(word))
        if kind == "FLOAT":
            value = float(word)
            if value > _DOUBLE_MAX or value < _DOUBLE_MIN:
                raise _CompileError(f"{word} is out of range")
            return ("const", ("double", value))
        if kind in ("TRUE", "FALSE"):
            return ("bconst", ("bool", kind == "TRUE"))
        if kind == "NULL":
            return ("bconst", None)
        if kind == "ID":
            return ("prop", word)
        if kind == "(":
            inner = self.or_expr()
            self.expect(")")
            return inner
        raise _CompileError(f"unexpected {kind}")


def _string_value(image: str) -> str:
    return image[1:-1].replace("''", "'")


def _decimal(word: str) -> JValue:
    digits = word[:-1] if word[-1] in "lL" else word
    value = int(digits)
    if value >= 2**63:
        raise _CompileError(f"{word} is not a long")
    return ("int", value) if value < 2**31 else ("long", value)


def _as_boolean(node: Node) -> Node:
    if node[0] in _BOOLEAN_KINDS:
        return node
    if node[0] == "prop":
        return ("cast", node)
    raise _CompileError("Expression will not result in a boolean value")


def _is_constant(node: Node) -> bool:
    return node[0] in ("const", "bconst")


def _create_equal(left: Node, right: Node) -> Node:
    for side in (left, right):
        if _is_constant(side) and side[1] is None:
            raise _CompileError("'NULL' cannot be compared.")
    if _is_constant(left) and _is_constant(right) and left[0] == "bconst" and right[0] != "bconst":
        raise _CompileError("a boolean constant cannot be compared with a non-boolean constant")
    return ("eq", left, right)


def _check_orderable(node: Node) -> None:
    if _is_constant(node):
        value = node[1]
        if value is None or value[0] not in _NUMERIC_RANK:  # type: ignore[index]
            raise _CompileError("Value cannot be compared.")
    elif node[0] in _BOOLEAN_KINDS:
        raise _CompileError("Value cannot be compared.")


def _create_compare(op: str, left: Node, right: Node) -> Node:
    _check_orderable(left)
    _check_orderable(right)
    return ("cmp", op, left, right)


def _create_between(value: Node, low: Node, high: Node) -> Node:
    if _is_constant(low) and _is_constant(high):
        low_value, high_value = low[1], high[1]
        if low_value is None or high_value is None:
            raise _CompileError("Illegal values of between, values can not be null!")
        try:
            descending = _compare(high_value, low_value) < 0  # type: ignore[arg-type]
        except _Throw:
            raise _CompileError("Illegal values of between") from None
        if descending:
            raise _CompileError("Illegal values of between, left value must less than or equal to right value")
    return ("and", _create_compare(">=", value, low), _create_compare("<=", value, high))


def _create_in(left: Node, values: frozenset[str], negated: bool) -> Node:
    if left[0] != "prop":
        raise _CompileError("Expected a property for In expression")
    return ("in", left[1], values, negated)


def _compile(expression: str) -> Node:
    return _Parser(expression).selector()


# Java number parsing --------------------------------------------------------------------------------------------
def _java_parse_integer(text: str, bits: int) -> int:
    """``Integer.valueOf`` / ``Long.valueOf``: optional sign, then decimal digits of any script (Character.digit),
    in range; anything else throws."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body:
        raise _Throw(f"NumberFormatException: {text!r}")
    value = 0
    for ch in body:
        digit = unicodedata.decimal(ch, None) if ord(ch) < 0x10000 else None  # a char, not a code point
        if digit is None:
            raise _Throw(f"NumberFormatException: {text!r}")
        value = value * 10 + digit
    if text[:1] == "-":
        value = -value
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise _Throw(f"NumberFormatException: {text!r} out of range")
    return value


_JAVA_DOUBLE = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_JAVA_HEX_DOUBLE = re.compile(
    r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?)|(?:[0-9a-fA-F]*\.[0-9a-fA-F]+))[pP]([+-]?[0-9]+)[fFdD]?")


def _java_parse_double(text: str) -> float:
    """``Double.valueOf``: trimmed (chars <= ' '), decimal or hexadecimal with ASCII digits, NaN, Infinity, an
    optional f/F/d/D suffix; anything else throws."""
    trimmed = java_trim(text)
    if _JAVA_DOUBLE.fullmatch(trimmed):
        core = trimmed.rstrip("fFdD") if trimmed[-1:] in "fFdD" and "Infinity" not in trimmed else trimmed
        return float(core)
    hexa = _JAVA_HEX_DOUBLE.fullmatch(trimmed)
    if hexa:
        sign, mantissa, exponent = hexa.groups()
        return float.fromhex(f"{sign}0x{mantissa}p{exponent}")
    raise _Throw(f"NumberFormatException: {text!r}")


def _convert_string(text: str, kind: str) -> JValue:
    if kind == "int":
        return ("int", _java_parse_integer(text, 32))
    if kind == "long":
        return ("long", _java_parse_integer(text, 64))
    if kind == "double":
        return ("double", _java_parse_double(text))
    return ("bool", text.lower() == "true" and len(text) == 4)


def _compare(left: tuple[str, object], right: tuple[str, object]) -> int:
    """``ComparisonExpression.__compare`` with string conversion on (FILTER-10): the sign of left - right."""
    lk, rk = left[0], right[0]
    if lk != rk:
        if lk == "bool":
            if rk == "str":
                raise _Throw("ClassCastException")
            return -1
        if lk in _NUMERIC_RANK:
            if rk in _NUMERIC_RANK:
                wider = lk if _NUMERIC_RANK[lk] > _NUMERIC_RANK[rk] else rk
                # Java widens a long to a double with rounding, as float() does.
                cast = float if wider == "double" else int
                left, right = (wider, cast(left[1])), (wider, cast(right[1]))  # type: ignore[arg-type, call-overload]
            elif rk == "str":
                right = _convert_string(str(right[1]), lk)  # type: ignore[assignment]
            else:
                return -1
        elif lk == "str":
            left = _convert_string(str(left[1]), rk)  # type: ignore[assignment]
        else:
            return -1
    a, b = left[1], right[1]
    if left[0] == "double":
        return _double_compare(float(a), float(b))  # type: ignore[arg-type]
    if left[0] == "str":
        ka, kb = str(a).encode("utf-16-be", "surrogatepass"), str(b).encode("utf-16-be", "surrogatepass")
        return (ka > kb) - (ka < kb)
    return (a > b) - (a < b)  # type: ignore[operator, no-any-return]


def _double_compare(a: float, b: float) -> int:
    """``Double.compare``: NaN is above everything and equal to itself; -0.0 is below 0.0."""
    if math.isnan(a) or math.isnan(b):
        return (math.isnan(a) and not math.isnan(b)) - (math.isnan(b) and not math.isnan(a))
    if a != b:
        return -1 if a < b else 1
    return (math.copysign(1, a) > math.copysign(1, b)) - (math.copysign(1, a) < math.copysign(1, b))


def _negate(value: JValue) -> JValue:
    if value is None or value[0] not in _NUMERIC_RANK:
        return None
    kind, number = value
    if kind == "double":
        return ("double", -float(number))  # type: ignore[arg-type]
    bits = 32 if kind == "int" else 64
    wrapped = (-int(number)) & ((1 << bits) - 1)  # type: ignore[call-overload]
    return (kind, wrapped - (1 << bits) if wrapped >> (bits - 1) else wrapped)


def _evaluate(node: Node, props: Mapping[str, str]) -> JValue:
    kind = node[0]
    if kind in ("const", "bconst"):
        return node[1]  # type: ignore[return-value]
    if kind == "prop":
        value = props.get(node[1])  # type: ignore[call-overload]
        return None if value is None else ("str", value)
    if kind == "neg":
        return _negate(_evaluate(node[1], props))  # type: ignore[arg-type]
    if kind == "not":
        inner = _evaluate(node[1], props)  # type: ignore[arg-type]
        return None if inner is None else ("bool", not inner[1])
    if kind == "cast":
        inner = _evaluate(node[1], props)  # type: ignore[arg-type]
        if inner is None:
            return None
        return inner if inner[0] == "bool" else ("bool", False)
    if kind in ("and", "or"):
        stop = kind == "or"  # the value that decides at once: TRUE for OR, FALSE for AND
        left = _evaluate(node[1], props)  # type: ignore[arg-type]
        if left is not None and left[1] is stop:
            return ("bool", stop)
        right = _evaluate(node[2], props)  # type: ignore[arg-type]
        if right is not None and right[1] is stop:
            return ("bool", stop)
        if left is None or right is None:
            return None
        return ("bool", not stop)
    if kind == "in":
        value = props.get(node[1])  # type: ignore[call-overload]
        if value is None:
            return None
        return ("bool", (value in node[2]) != node[3])  # type: ignore[operator]
    if kind == "eq":
        left = _evaluate(node[1], props)  # type: ignore[arg-type]
        right = _evaluate(node[2], props)  # type: ignore[arg-type]
        if left is None and right is None:
            return ("bool", True)
        if left is None:
            return None
        if right is None:
            return ("bool", False)
        return ("bool", _compare(left, right) == 0)
    op, lhs, rhs = node[1], node[2], node[3]
    left = _evaluate(lhs, props)  # type: ignore[arg-type]
    if left is None:
        return None
    right = _evaluate(rhs, props)  # type: ignore[arg-type]
    if right is None:
        return None
    if left[0] == "str" and right[0] == "str":
        left, right = ("double", _java_parse_double(str(left[1]))), ("double", _java_parse_double(str(right[1])))
    answer = _compare(left, right)
    return ("bool", {"<": answer < 0, "<=": answer <= 0, ">": answer > 0, ">=": answer >= 0}[op])  # type: ignore[index]


@CLAUSES.oracle("FILTER-5", "FILTER-6", "FILTER-7", "FILTER-8")
def sql92_compiles(expression: str | None) -> bool:
    """Whether ``SqlFilter.compile`` accepts ``expression`` (FILTER-5, FILTER-6, FILTER-7, FILTER-8).

    pre: expression is None or len(expression) <= 12
    post: expression not in (None, "") or not __return__
    post: expression is None or expression.upper().strip(" ") not in ("TRUE", "FALSE", "NULL") or __return__
    post: expression is None or not expression.startswith(("=", ")", "*", "<")) or not __return__
    """
    if expression is None:
        return False
    try:
        _compile(expression)
    except _CompileError:
        return False
    return True


@CLAUSES.oracle("FILTER-9", "FILTER-10", "FILTER-11", "FILTER-12", "FILTER-13", "FILTER-14", "FILTER-15")
def sql92_evaluate(expression: str | None, properties: Mapping[str, str]) -> Sql92Result:
    """What the compiled selector's ``evaluate`` returns over a message's ``properties`` (FILTER-9, FILTER-10,
    FILTER-11, FILTER-12, FILTER-13, FILTER-14, FILTER-15).

    INVALID when it does not compile; ERROR when Java throws (a failed number conversion, a Boolean compared with
    a string).

    pre: expression is None or len(expression) <= 10
    pre: len(properties) <= 2
    post: (__return__ is Sql92Result.INVALID) == (not sql92_compiles(expression))
    post: expression != "a IS NULL" or __return__ is (Sql92Result.FALSE if "a" in properties else Sql92Result.TRUE)
    post: expression != "NOT a" or __return__ is (Sql92Result.TRUE if "a" in properties else Sql92Result.NULL)
    """
    if expression is None:
        return Sql92Result.INVALID
    try:
        node = _compile(expression)
    except _CompileError:
        return Sql92Result.INVALID
    try:
        value = _evaluate(node, properties)
    except _Throw:
        return Sql92Result.ERROR
    if value is None:
        return Sql92Result.NULL
    return Sql92Result.TRUE if value[1] is True else Sql92Result.FALSE


@CLAUSES.oracle("FILTER-16")
def sql92_matches(expression: str | None, properties: Mapping[str, str]) -> bool:
    """Whether the broker's SQL92 filter keeps a message with ``properties`` (FILTER-16).

    A selector that does not compile has no filter data, and a filter without it keeps everything.

    pre: expression is None or len(expression) <= 10
    pre: len(properties) <= 2
    post: sql92_compiles(expression) or __return__
    post: not __return__ or sql92_evaluate(expression, properties) not in (Sql92Result.NULL, Sql92Result.ERROR, Sql92Result.FALSE)
    """  # noqa: E501
    result = sql92_evaluate(expression, properties)
    return result in (Sql92Result.TRUE, Sql92Result.INVALID)
