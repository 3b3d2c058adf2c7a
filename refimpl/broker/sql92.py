"""SQL92 message selectors as the 4.9.8 broker compiles and evaluates them (``org.apache.rocketmq.filter``).

``compile_selector(text)`` is ``SqlFilter.compile`` (``SelectorParser.parse``): a ``Selector`` or a
``SelectorError`` whose text is what ``MQFilterException.getMessage`` gives (the CHECK_CLIENT_CONFIG remark).
``Selector.evaluate(properties)`` is ``BooleanExpression.evaluate`` over ``MessageEvaluationContext``: True, False
or None (null), raising ``EvaluationError`` where Java throws; ``Selector.matches`` is
``ExpressionMessageFilter.isMatchedByCommitLog`` (only TRUE keeps the message).

Java's behaviour kept on purpose:

* The grammar (``SelectorParser.jj``) has no end-of-input rule: parsing stops after the first complete expression,
  and tokens are read lazily, one (two after ``IS`` or a ``NOT`` in a comparison) at a time, so ``a = 1 b`` compiles
  and a lexical error is reported only when the parser reads the bad token.
* Literals are ``Integer`` when they fit, else ``Long``; floats are ``Double`` and must lie in
  [Double.MIN_VALUE, Double.MAX_VALUE] (so ``0.0`` does not compile).
* Property values are strings. A comparison converts a string to the other side's type with ``Integer.valueOf``,
  ``Long.valueOf``, ``Double.valueOf`` or ``Boolean.valueOf`` (``ComparisonExpression.__compare`` with
  ``convertStringExpressions``, which ``SelectorParser.parse`` always turns on); a failed conversion throws.
"""

from __future__ import annotations

import abc
import math
import re
from collections.abc import Callable, Iterator, Mapping

import attrs

from rocketspec.refimpl.broker.sql92_values import (
    EvaluationError,
    Num,
    Value,
    java_compare,
    java_double,
    java_double_str,
    java_value_str,
)
from rocketspec.refimpl.message import java_string_hash

# java_double_str is used by other broker modules through this one (Double.toString for Java-formatted texts).
__all__ = ["EvaluationError", "Selector", "SelectorError", "compile_selector", "java_double_str"]


class SelectorError(ValueError):
    """The selector does not compile (``MQFilterException``); ``str()`` is the remark 4.9.8 sends."""


_PARSE_EXCEPTION = "org.apache.rocketmq.filter.parser.ParseException"
_LEXICAL_ERROR = "org.apache.rocketmq.filter.parser.TokenMgrError"
_RUNTIME = "java.lang.RuntimeException"


# --------------------------------------------------------------------------------------------------- expressions
class Expr(abc.ABC):
    """An expression node; ``boolean`` marks Java's ``BooleanExpression``."""

    boolean = False

    @abc.abstractmethod
    def evaluate(self, props: Mapping[str, str]) -> Value:
        """The node's value for a message with these properties (Java's ``Expression.evaluate``)."""

    @abc.abstractmethod
    def java(self) -> str:
        """The node as Java's ``toString`` prints it (used in error texts)."""


@attrs.frozen
class Const(Expr):
    """``ConstantExpression`` (``boolean_constant``: ``BooleanConstantExpression`` TRUE, FALSE or NULL)."""

    value: Value
    boolean_constant: bool = False

    @property
    def boolean(self) -> bool:  # type: ignore[override]
        return self.boolean_constant

    def evaluate(self, props: Mapping[str, str]) -> Value:
        return self.value

    def java(self) -> str:
        v = self.value
        if v is None:
            return "NULL"
        if isinstance(v, bool):
            return "TRUE" if v else "FALSE"
        if isinstance(v, str):
            return "'" + v.replace("'", "''") + "'"
        return v.java_str()


@attrs.frozen
class Prop(Expr):
    name: str

    def evaluate(self, props: Mapping[str, str]) -> Value:
        return props.get(self.name)

    def java(self) -> str:
        return self.name


@attrs.frozen
class Neg(Expr):
    operand: Expr

    def evaluate(self, props: Mapping[str, str]) -> Value:
        v = self.operand.evaluate(props)
        if not isinstance(v, Num):
            return None
        if v.bits == 0:
            return Num(0, -float(v.value))
        mask = (1 << v.bits) - 1
        raw = -int(v.value) & mask
        return Num(v.bits, raw - (1 << v.bits) if raw >> (v.bits - 1) else raw)

    def java(self) -> str:
        return f"(- {self.operand.java()})"


@attrs.frozen
class Not(Expr):
    operand: Expr
    boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Value:
        v = self.operand.evaluate(props)
        return None if v is None else not v

    def java(self) -> str:
        return f"(NOT {self.operand.java()})"


@attrs.frozen
class BoolCast(Expr):
    """``createBooleanCast`` of a property: a string is never a Boolean, so FALSE unless null."""

    operand: Expr
    boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Value:
        v = self.operand.evaluate(props)
        if v is None:
            return None
        return v if isinstance(v, bool) else False

    def java(self) -> str:
        return self.operand.java()


@attrs.frozen
class Logic(Expr):
    """``LogicExpression`` AND (``is_or`` False) / OR, short-circuit, three-valued."""

    is_or: bool
    left: Expr
    right: Expr
    boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Value:
        decisive = self.is_or
        lv = self.left.evaluate(props)
        if lv is decisive:
            return decisive
        rv = self.right.evaluate(props)
        if rv is decisive:
            return decisive
        if lv is None or rv is None:
            return None
        return not decisive

    def java(self) -> str:
        return f"({self.left.java()} {'||' if self.is_or else '&&'} {self.right.java()})"


@attrs.frozen
class Equal(Expr):
    """``doCreateEqual``: null rules first, then equals, then the converting comparison."""

    left: Expr
    right: Expr
    boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Value:
        lv = self.left.evaluate(props)
        rv = self.right.evaluate(props)
        if (lv is None) != (rv is None):
            return None if lv is None else False
        if lv is None or (type(lv) is type(rv) and lv == rv and not _nan_or_zero_trap(lv, rv)):
            return True
        return java_compare(lv, rv) == 0

    def java(self) -> str:
        return f"({self.left.java()} == {self.right.java()})"


def _nan_or_zero_trap(a: Value, b: Value) -> bool:
    # Python's == says 0.0 == -0.0 and NaN != NaN; Double.equals says the opposite: let compare decide.
    return isinstance(a, Num) and a.bits == 0


_ORDER_TESTS: dict[str, Callable[[int], bool]] = {
    "<": lambda c: c < 0, "<=": lambda c: c <= 0, ">": lambda c: c > 0, ">=": lambda c: c >= 0,
}


@attrs.frozen
class Order(Expr):
    """``<``, ``<=``, ``>``, ``>=``: null-propagating; two strings are compared as doubles."""

    op: str
    left: Expr
    right: Expr
    boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Value:
        lv = self.left.evaluate(props)
        if lv is None:
            return None
        rv = self.right.evaluate(props)
        if rv is None:
            return None
        if isinstance(lv, str) and isinstance(rv, str):
            try:
                lv, rv = Num(0, java_double(lv)), Num(0, java_double(rv))
            except EvaluationError as error:
                raise EvaluationError(f"{_RUNTIME}: It's illegal to compare string by '>=', '>', '<', '<='. "
                                      f"lv={lv}, rv={rv}") from error
        return _ORDER_TESTS[self.op](java_compare(lv, rv))

    def java(self) -> str:
        return f"({self.left.java()} {self.op} {self.right.java()})"


@attrs.frozen
class InList(Expr):
    """``createInExpression``; ``listed`` keeps the order Java prints the list in (``_java_collection_order``)."""

    prop: Prop
    values: frozenset[str]
    negated: bool
    listed: tuple[str, ...] = ()
    boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Value:
        v = self.prop.evaluate(props)
        if v is None:
            return None
        return (v in self.values) != self.negated

    def java(self) -> str:
        return f"{self.prop.java()} {'NOT IN' if self.negated else 'IN'} ( {', '.join(self.listed)} )"


# -------------------------------------------------------------------------------------------------------- lexer
_KEYWORDS = frozenset({"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS"})
_TOKEN = re.compile(
    r"""(?P<ws>[ \t\n\r\f]+)
      | (?P<line>--[^\n\r]*[\n\r])
      | (?P<block>/\*[^*]*\*+(?:[^/*][^*]*\*+)*/)
      | (?P<float>\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)
      | (?P<decimal>0|[1-9]\d*[lL]?)
      | (?P<string>'(?:''|[^'])*')
      | (?P<id>[a-zA-Z_$][a-zA-Z0-9_$]*)
      | (?P<op><>|<=|>=|[=<>(),+-])""",
    re.VERBOSE | re.ASCII,
)


@attrs.frozen
class Token:
    kind: str  # a keyword, "decimal", "float", "string", "id", an operator, or "EOF"
    text: str
    line: int
    column: int


def _tokens(text: str) -> Iterator[Token]:
    """Tokens one at a time; a lexical error is raised only when the bad token is asked for."""
    pos = 0
    while True:
        found = _TOKEN.match(text, pos)
        if found is None:
            if pos >= len(text):
                # JavaCC places <EOF> at the last character read (line 0, column 0 for an empty selector).
                end = Token("EOF", "", *(_position(text, len(text) - 1) if text else (0, 0)))
                while True:  # the parser may look past the end
                    yield end
            line, column = _position(text, pos)
            if text[pos] in "'/":  # an unterminated string or comment runs into the end
                line, column = _position(text, len(text))
                raise SelectorError(f'{_LEXICAL_ERROR}: Lexical error at line {line}, column {column}.  '
                                    f'Encountered: <EOF> after : "{_escape(text[pos:])}"')
            raise SelectorError(f'{_LEXICAL_ERROR}: Lexical error at line {line}, column {column}.  '
                                f'Encountered: "{_escape(text[pos])}" ({ord(text[pos])}), after : ""')
        kind = found.lastgroup or ""
        if kind in ("ws", "line", "block"):
            pos = found.end()
            continue
        word = found.group()
        line, column = _position(text, pos)
        pos = found.end()
        if kind == "id" and word.upper() in _KEYWORDS:
            kind = word.upper()
        elif kind == "op":
            kind = word
        yield Token(kind, word, line, column)


_TOKEN_IMAGES = {"decimal": "<DECIMAL_LITERAL>", "float": "<FLOATING_POINT_LITERAL>", "string": "<STRING_LITERAL>",
                 "id": "<ID>"}


def _escape(text: str) -> str:
    """JavaCC's ``addEscapes``."""
    named = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "'": "\\'",
             "\\": "\\\\"}
    out = []
    for ch in text:
        if ch in named:
            out.append(named[ch])
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            out.append("".join(f"\\u{unit:04x}" for unit in
                               [int.from_bytes(ch.encode("utf-16-be", "surrogatepass")[i:i + 2], "big")
                                for i in range(0, len(ch.encode("utf-16-be", "surrogatepass")), 2)]))
        else:
            out.append(ch)
    return "".join(out)


def _position(text: str, pos: int) -> tuple[int, int]:
    before = text[:pos]
    return before.count("\n") + 1, pos - (before.rfind("\n") + 1) + 1


# ------------------------------------------------------------------------------------------------------- parser
class _Parser:
    def __init__(self, text: str) -> None:
        self._source = _tokens(text)
        self._ahead: list[Token] = []

    def la(self, n: int = 1) -> Token:
        while len(self._ahead) < n:
            self._ahead.append(next(self._source))
        return self._ahead[n - 1]

    def eat(self, kind: str | None = None) -> Token:
        token = self.la()
        if kind is not None and token.kind != kind:
            self.fail(token)
        self._ahead.pop(0)
        return token

    @staticmethod
    def fail(token: Token) -> None:
        """``generateParseException``: the first line of its message (the expected-token list is left out)."""
        if token.kind == "EOF":
            shown = "<EOF>"
        else:
            image = _TOKEN_IMAGES.get(token.kind, f'"{token.kind}"')
            shown = f' {image} "{_escape(token.text)} "'
        raise SelectorError(f'{_PARSE_EXCEPTION}: Encountered "{shown}" at line {token.line}, column '
                            f"{token.column}.")

    # JmsSelector ... primaryExpr
    def selector(self) -> Expr:
        return _boolean(self.disjunction())

    def disjunction(self) -> Expr:
        node = self.conjunction()
        while self.la().kind == "OR":
            self.eat()
            right = self.conjunction()  # Java converts the operands once the right one is parsed
            node = Logic(True, _boolean(node), _boolean(right))
        return node

    def conjunction(self) -> Expr:
        node = self.equality()
        while self.la().kind == "AND":
            self.eat()
            right = self.equality()
            node = Logic(False, _boolean(node), _boolean(right))
        return node

    def equality(self) -> Expr:
        node = self.relation()
        while True:
            kind = self.la().kind
            if kind in ("=", "<>"):
                self.eat()
                equal = _equal(node, self.relation())
                node = equal if kind == "=" else Not(equal)
            elif kind == "IS":
                negated = self.la(2).kind != "NULL"
                self.eat()
                if negated:
                    self.eat("NOT")
                self.eat("NULL")
                is_null = Equal(node, Const(None, True))
                node = Not(is_null) if negated else is_null
            else:
                return node

    def relation(self) -> Expr:
        node = self.unary()
        while True:
            kind = self.la().kind
            negated = False
            if kind == "NOT":
                follower = self.la(2).kind
                if follower not in ("BETWEEN", "IN"):
                    self.fail(self.la())  # JavaCC reports the NOT it cannot continue from
                self.eat()
                negated, kind = True, follower
            if kind in _ORDER_TESTS:
                self.eat()
                node = _order(kind, node, self.unary())
            elif kind == "BETWEEN":
                self.eat()
                low = self.unary()
                self.eat("AND")
                high = self.unary()
                node = _not_between(node, low, high) if negated else _between(node, low, high)
            elif kind == "IN":
                self.eat()
                self.eat("(")
                items = [self.string()]
                while self.la().kind == ",":
                    self.eat()
                    items.append(self.string())
                self.eat(")")
                if not isinstance(node, Prop):
                    raise SelectorError(f"{_RUNTIME}: Expected a property for In expression, got: {node.java()}")
                node = InList(node, frozenset(items), negated, _java_collection_order(items))
            else:
                return node

    def string(self) -> str:
        return self.eat("string").text[1:-1].replace("''", "'")

    def unary(self) -> Expr:
        kind = self.la().kind
        if kind == "+":
            self.eat()
            return self.unary()
        if kind == "-":
            self.eat()
            return Neg(self.unary())
        if kind == "NOT":
            self.eat()
            return Not(_boolean(self.unary()))
        return self.primary()

    def primary(self) -> Expr:
        token = self.eat()
        kind = token.kind
        if kind == "string":
            return Const(token.text[1:-1].replace("''", "'"))
        if kind == "decimal":
            return Const(_decimal_literal(token.text))
        if kind == "float":
            return Const(_float_literal(token.text))
        if kind in ("TRUE", "FALSE", "NULL"):
            return Const(None if kind == "NULL" else kind == "TRUE", True)
        if kind == "id":
            return Prop(token.text)
        if kind == "(":
            inner = self.disjunction()
            self.eat(")")
            return inner
        self.fail(token)
        raise AssertionError("unreachable")


def _decimal_literal(text: str) -> Num:
    digits = text.rstrip("lL")
    value = int(digits)
    if value > (1 << 63) - 1:
        raise SelectorError(f'java.lang.NumberFormatException: For input string: "{digits}"')
    return Num(32 if value <= (1 << 31) - 1 else 64, value)


def _float_literal(text: str) -> Num:
    value = float(text)
    if math.isinf(value):
        raise SelectorError(f"{_RUNTIME}: {text} is greater than 1.7976931348623157E308")
    if value == 0.0:
        raise SelectorError(f"{_RUNTIME}: {text} is less than 4.9E-324")
    return Num(0, value)


def _boolean(node: Expr) -> Expr:
    """``asBooleanExpression``."""
    if node.boolean:
        return node
    if isinstance(node, Prop):
        return BoolCast(node)
    raise SelectorError(f"{_PARSE_EXCEPTION}: Expression will not result in a boolean value: {node.java()}")


def _equal(left: Expr, right: Expr) -> Expr:
    """``createEqual``: ``checkEqualOperand`` both sides, then ``checkEqualOperandCompatability``."""
    for side in (left, right):
        if isinstance(side, Const) and side.value is None:
            raise SelectorError(f"{_RUNTIME}: '{side.java()}' cannot be compared.")
    if isinstance(left, Const) and isinstance(right, Const) and left.boolean and not right.boolean:
        raise SelectorError(f"{_RUNTIME}: '{left.java()}' cannot be compared with '{right.java()}'")
    return Equal(left, right)


def _order(op: str, left: Expr, right: Expr) -> Expr:
    """``checkLessThanOperand`` both sides: constants must be numbers, boolean expressions are refused."""
    for side in (left, right):
        if (isinstance(side, Const) and not isinstance(side.value, Num)) or (
                not isinstance(side, Const) and side.boolean):
            raise SelectorError(f"{_RUNTIME}: Value '{side.java()}' cannot be compared.")
    return Order(op, left, right)


def _between(value: Expr, low: Expr, high: Expr) -> Expr:
    if isinstance(low, Const) and isinstance(high, Const):
        if low.value is None or high.value is None:
            raise SelectorError(f"{_RUNTIME}: Illegal values of between, values can not be null!")
        try:
            order = java_compare(high.value, low.value)
        except EvaluationError as error:
            raise SelectorError(f"{_RUNTIME}: {error}") from None
        if order < 0:
            raise SelectorError(f"{_RUNTIME}: Illegal values of between, left value({java_value_str(low.value)}) "
                                f"must less than or equal to right value({java_value_str(high.value)})")
    return Logic(False, _order(">=", value, low), _order("<=", value, high))


def _java_collection_order(items: list[str]) -> tuple[str, ...]:
    """How Java iterates the IN list: as given below 5 items, else as a ``HashSet`` (buckets by spread hash)."""
    if len(items) < 5:
        return tuple(items)
    wanted = int(len(items) / 0.75) + 1
    capacity = 16
    while capacity < wanted:
        capacity *= 2
    buckets: dict[int, list[str]] = {}
    for item in items:
        h = java_string_hash(item) & 0xFFFFFFFF
        bucket = buckets.setdefault((h ^ (h >> 16)) & (capacity - 1), [])
        if item not in bucket:
            bucket.append(item)
    return tuple(item for index in sorted(buckets) for item in buckets[index])


def _not_between(value: Expr, low: Expr, high: Expr) -> Expr:
    return Logic(True, _order("<", value, low), _order(">", value, high))


# ---------------------------------------------------------------------------------------------------------- API
@attrs.frozen
class Selector:
    """A compiled SQL92 selector."""

    text: str
    root: Expr

    def evaluate(self, properties: Mapping[str, str]) -> bool | None:
        """``evaluate``: True, False or None; raises ``EvaluationError`` where Java throws."""
        value = self.root.evaluate(properties)
        return value if isinstance(value, bool) else None

    def matches(self, properties: Mapping[str, str]) -> bool:
        """``ExpressionMessageFilter.isMatchedByCommitLog``: only a TRUE result keeps the message."""
        try:
            return self.evaluate(properties) is True
        except EvaluationError:
            return False


def compile_selector(text: str | None) -> Selector:
    """``SqlFilter.compile``; raises ``SelectorError`` with 4.9.8's message (its first line for syntax errors)."""
    if text is None:
        raise SelectorError("java.lang.NullPointerException")
    return Selector(text, _Parser(text).selector())
