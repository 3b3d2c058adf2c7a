"""Message filtering: tags (hash codes at the broker, strings at the client) and SQL92 property selectors.

The area covers how a consumer's subscription decides which messages it gets:

* tags (``FilterAPI.buildSubscriptionData``, ``ExpressionMessageFilter.isMatchedByConsumeQueue``,
  ``PullAPIWrapper.processPullResult``): ``*`` or ``A || B``, matched by ``String.hashCode`` at the broker and by
  the tag string at the client;
* SQL92 (``org.apache.rocketmq.filter``: ``SelectorParser.jj``, ``ComparisonExpression``, ``LogicExpression``,
  ``UnaryExpression``, ``ConstantExpression``, ``PropertyExpression``; the broker's ``ExpressionMessageFilter``,
  ``MessageEvaluationContext``): the selector grammar, what compiles, and Java's evaluation of it over the
  message's stored properties (user and system properties alike, ``TAGS`` included), all strings;
* the broker's decisions around it (``ConsumerFilterManager``, ``PullMessageProcessor``,
  ``ClientManageProcessor.checkClientConfig``, ``BrokerConfig.enablePropertyFilter``, default false).

The state machine is one consumer group's filter data for one topic at a broker: heartbeats (any subscription
version, in any order, with expressions that compile or not) and pulls without the subscription bit.

Versions: read in ``rocketmq-all-4.9.8``; the filter module and these broker classes are the same in all 4.9.x.
The SQL92 facts were checked against the 4.9.8 jar (``tests/test_refimpl_sql92.py`` runs its evaluator): a
selector is parsed without an end-of-input check, so text after a complete expression is ignored unless the lexer
reads it as a lookahead; literals are Java ``Integer``/``Long``/``Double``; a property (always a string) is
converted to the other operand's type (``Integer.valueOf``, ``Long.valueOf``, ``Double.valueOf``,
``Boolean.valueOf``) and a failed conversion makes the evaluation throw, which the broker treats as no match.
"""

from __future__ import annotations

import enum
import math
import re
import unicodedata
from collections.abc import Mapping

import attrs

from rocketspec.spec.clauses import Clause, ClauseTable
from rocketspec.spec.explorer import Invariant, Model, StepInvariant, require_enabled
from rocketspec.spec.java import string_hash as java_string_hash
from rocketspec.spec.protocol import EXPRESSION_TYPE_SQL92, EXPRESSION_TYPE_TAG, SUB_ALL, ResponseCode

CLAUSES = ClauseTable(
    area="message_filter",
    prefix="FILTER",
    clauses=(
        Clause(
            "FILTER-1",
            "A tag subscription that is null, empty or exactly '*' subscribes to every tag; otherwise it is split "
            "on '||', each piece trimmed, empty pieces skipped; the tag set keeps the pieces, the code set their "
            "String.hashCode.",
            "FilterAPI.buildSubscriptionData",
        ),
        Clause(
            "FILTER-2",
            "At the broker a tag subscription matches a consume-queue entry when it subscribes to every tag or "
            "the entry's tags code (as an int) is in the code set; a message without tags has code 0.",
            "ExpressionMessageFilter.isMatchedByConsumeQueue; MessageExtBrokerInner.tagsString2tagsCode",
        ),
        Clause(
            "FILTER-3",
            "At the client a pulled message is kept when the tag set is empty, else only when its tags are in the "
            "tag set (a message without tags is dropped): this removes hash collisions.",
            "PullAPIWrapper.processPullResult",
        ),
        Clause(
            "FILTER-4",
            "The expression type is a tag type when it is null, empty or TAG; any other type goes through the "
            "FilterFactory, which knows only SQL92 (case-sensitive).",
            "ExpressionType.isTagType; FilterFactory",
        ),
        Clause(
            "FILTER-5",
            "SQL92 lexing: whitespace is space, tab, CR, LF, FF; '--' to a line end and '/* */' are comments; "
            "keywords NOT AND OR BETWEEN IN TRUE FALSE NULL IS are case-insensitive; identifiers are ASCII "
            "[A-Za-z_$][A-Za-z0-9_$]*; any other character, an unterminated string or comment is a lexical error "
            "when the parser reads that token.",
            "SelectorParser.jj (TOKEN, SKIP, SPECIAL_TOKEN)",
        ),
        Clause(
            "FILTER-6",
            "SQL92 literals: decimal 0 or [1-9][0-9]* with optional L (an Integer when it fits, else a Long, beyond "
            "Long a compile error); floats with '.' or an exponent (a Double, compile error when above "
            "Double.MAX_VALUE or below Double.MIN_VALUE, so 0.0 is an error); strings in single quotes with '' for "
            "a quote; TRUE, FALSE, NULL; no hex, octal or signed literals (a sign is an operator).",
            "SelectorParser.jj (literal); ConstantExpression.createFromDecimal, createFloat",
        ),
        Clause(
            "FILTER-7",
            "SQL92 grammar, loosest first: OR, AND, then = <> IS [NOT] NULL (left-assoc), then > >= < <= "
            "[NOT] BETWEEN x AND y, [NOT] IN ('s', ...) (left-assoc), then unary + - NOT, then literal, property "
            "or parenthesis; the parse ends after the first complete expression (no end-of-input check).",
            "SelectorParser.jj (JmsSelector .. primaryExpr)",
        ),
        Clause(
            "FILTER-8",
            "A compile error: the whole expression, an OR/AND/NOT operand that is neither a boolean expression nor "
            "a property; a NULL constant in = or <>; a boolean constant compared with a non-boolean constant on its "
            "right; a string, boolean or boolean expression in < <= > >= or BETWEEN; constant BETWEEN bounds that "
            "are null or descending; IN after something other than a property.",
            "SelectorParser.asBooleanExpression; ComparisonExpression.check*, createBetween, createInFilter",
        ),
        Clause(
            "FILTER-9",
            "A property evaluates to its string value, or null when the message lacks it; a bare property used as a "
            "boolean is null when missing and FALSE otherwise (a string is never a Boolean).",
            "PropertyExpression.evaluate; MessageEvaluationContext; UnaryExpression.createBooleanCast",
        ),
        Clause(
            "FILTER-10",
            "Comparison of two values of different types converts: numbers widen (Integer < Long < Double); a "
            "string next to a number is parsed as that number's type (Integer.valueOf, Long.valueOf, "
            "Double.valueOf) and next to a Boolean by Boolean.valueOf; a Boolean left of a string throws; other "
            "pairs compare as 'less'; a failed parse throws.",
            "ComparisonExpression.__compare",
        ),
        Clause(
            "FILTER-11",
            "= evaluates both sides: null = null is TRUE, null on the left only gives null, on the right only "
            "FALSE; otherwise equal values or a comparison result of 0 give TRUE; <> is NOT of =; IS NULL is TRUE "
            "exactly when the value is null and IS NOT NULL its negation.",
            "ComparisonExpression.doCreateEqual, createNotEqual, createIsNull, createIsNotNull",
        ),
        Clause(
            "FILTER-12",
            "< <= > >= give null when the left side is null (the right is not evaluated) or the right is null; two "
            "strings are both parsed as doubles (failure throws); else the converted comparison decides.",
            "ComparisonExpression.evaluate",
        ),
        Clause(
            "FILTER-13",
            "x BETWEEN a AND b is x >= a AND x <= b; x NOT BETWEEN a AND b is x < a OR x > b.",
            "ComparisonExpression.createBetween, createNotBetween",
        ),
        Clause(
            "FILTER-14",
            "IN / NOT IN: null when the property is missing, otherwise TRUE when membership of its string in the "
            "list differs from NOT.",
            "UnaryExpression.createInExpression",
        ),
        Clause(
            "FILTER-15",
            "AND and OR are three-valued and short-circuit: AND is FALSE as soon as the left is FALSE (the right is "
            "not evaluated), then FALSE if the right is FALSE, null if either is null, else TRUE; OR dually; NOT "
            "null is null; unary minus of a non-number is null.",
            "LogicExpression.createAND, createOR; UnaryExpression.createNOT, createNegate",
        ),
        Clause(
            "FILTER-16",
            "The broker keeps a message for an SQL92 filter exactly when evaluation returns TRUE: null, FALSE or an "
            "exception means no match; a subscription without compiled filter data filters nothing.",
            "ExpressionMessageFilter.isMatchedByCommitLog",
        ),
        Clause(
            "FILTER-17",
            "CHECK_CLIENT_CONFIG answers SUCCESS without a subscription or for a tag type; SYSTEM_ERROR 'The "
            "broker does not support consumer to filter message by <type>' without enablePropertyFilter; "
            "SUBSCRIPTION_PARSE_FAILED (remark: the compile error) when the type is unknown or the expression does "
            "not compile; else SUCCESS.",
            "ClientManageProcessor.checkClientConfig",
        ),
        Clause(
            "FILTER-18",
            "A heartbeat registers filter data per subscribed topic for non-tag types with a non-empty expression: "
            "new data only when it compiles; a version not above the stored one changes nothing; a newer version "
            "with the same expression only raises the version; a newer version with another expression replaces "
            "the data, or removes it when the new expression does not compile.",
            "ConsumerFilterManager.register, FilterDataMapByTopic.register",
        ),
        Clause(
            "FILTER-19",
            "A pull with the subscription bit and a non-tag type with an empty expression answers "
            "SUBSCRIPTION_PARSE_FAILED; with a non-empty expression the broker compiles it for this pull only, and "
            "one that does not compile filters nothing.",
            "PullMessageProcessor.processRequest; FilterAPI.build; ConsumerFilterManager.build",
        ),
        Clause(
            "FILTER-20",
            "A pull without the subscription bit whose registered subscription is not a tag type needs the group's "
            "filter data: none answers FILTER_DATA_NOT_EXIST, a version below the request's subVersion "
            "FILTER_DATA_NOT_LATEST (both after the SUBSCRIPTION_NOT_EXIST / NOT_LATEST checks).",
            "PullMessageProcessor.processRequest",
        ),
        Clause(
            "FILTER-21",
            "Then a non-tag subscription on a broker without enablePropertyFilter answers SYSTEM_ERROR 'The broker "
            "does not support consumer to filter message by <type>'.",
            "PullMessageProcessor.processRequest; BrokerConfig.enablePropertyFilter",
        ),
    ),
)


# ----------------------------------------------------------------------------------------------------------- tags
@CLAUSES.oracle("FILTER-1")
def subscription_tags(sub_string: str | None) -> tuple[str, ...]:
    """The tag set of a tag subscription, in order, duplicates kept once; empty = every tag (FILTER-1).

    post: all(t != "" and t == _java_trim(t) for t in __return__)
    post: sub_string not in (None, "", "*") or __return__ == ()
    post: len(set(__return__)) == len(__return__)
    """
    if sub_string is None or sub_string == SUB_ALL or sub_string == "":
        return ()
    tags: list[str] = []
    for piece in sub_string.split("||"):
        # Java's String.trim strips chars <= ' ' (not Python's whitespace set).
        tag = _java_trim(piece)
        if tag and tag not in tags:
            tags.append(tag)
    return tuple(tags)


def _java_trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


@CLAUSES.oracle("FILTER-2")
def broker_tag_matches(sub_string: str | None, tags_code: int) -> bool:
    """Whether the broker's consume-queue filter keeps an entry with ``tags_code`` (FILTER-2).

    The code set holds the int hash of every subscribed tag; the stored code is compared as ``Long.intValue``.

    pre: -2**63 <= tags_code < 2**63
    post: sub_string not in (None, "", "*") or __return__
    post: not __return__ or sub_string in (None, "", "*") or any(java_string_hash(t) == _as_int(tags_code) for t in subscription_tags(sub_string))
    """  # noqa: E501
    if sub_string is None or sub_string == SUB_ALL or sub_string == "":
        return True
    codes = {java_string_hash(t) for t in subscription_tags(sub_string)}
    return _as_int(tags_code) in codes


def _as_int(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@CLAUSES.oracle("FILTER-3")
def client_tag_matches(sub_string: str | None, tags: str | None) -> bool:
    """Whether the client keeps a pulled message whose tags are ``tags`` (FILTER-3).

    post: subscription_tags(sub_string) != () or __return__
    post: tags is not None or not __return__ or subscription_tags(sub_string) == ()
    """
    wanted = subscription_tags(sub_string)
    if not wanted:
        return True
    return tags is not None and tags in wanted


@CLAUSES.oracle("FILTER-4")
def is_tag_type(expression_type: str | None) -> bool:
    """``ExpressionType.isTagType``: null, empty or ``TAG`` (FILTER-4).

    post: __return__ == (expression_type in (None, "", "TAG"))
    post: expression_type != "SQL92" or not __return__
    """
    return expression_type is None or expression_type == "" or expression_type == EXPRESSION_TYPE_TAG


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
    trimmed = _java_trim(text)
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
                left, right = (wider, cast(left[1])), (wider, cast(right[1]))  # type: ignore[call-overload]
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
    return (a > b) - (a < b)  # type: ignore[operator]


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
        value = props.get(node[1])  # type: ignore[arg-type]
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
        value = props.get(node[1])  # type: ignore[arg-type]
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


# ------------------------------------------------------------------------------------------- broker decisions
@CLAUSES.oracle("FILTER-17")
def check_client_config(
    has_subscription: bool, expression_type: str | None, expression: str | None, enable_property_filter: bool
) -> ResponseCode:
    """The code of a CHECK_CLIENT_CONFIG answer (FILTER-17).

    pre: expression is None or len(expression) <= 8
    post: has_subscription or __return__ is ResponseCode.SUCCESS
    post: not is_tag_type(expression_type) or __return__ is ResponseCode.SUCCESS
    post: enable_property_filter or is_tag_type(expression_type) or not has_subscription or __return__ is ResponseCode.SYSTEM_ERROR
    post: __return__ is not ResponseCode.SUCCESS or not has_subscription or is_tag_type(expression_type) or sql92_compiles(expression)
    """  # noqa: E501
    if not has_subscription or is_tag_type(expression_type):
        return ResponseCode.SUCCESS
    if not enable_property_filter:
        return ResponseCode.SYSTEM_ERROR
    if expression_type != EXPRESSION_TYPE_SQL92 or not sql92_compiles(expression):
        return ResponseCode.SUBSCRIPTION_PARSE_FAILED
    return ResponseCode.SUCCESS


@attrs.frozen
class FilterData:
    """``ConsumerFilterData`` of one group and topic: the expression (it compiled), the client's version and the
    expression type."""

    expression: str
    version: int
    expression_type: str = EXPRESSION_TYPE_SQL92


@CLAUSES.oracle("FILTER-18")
def register_filter_data(
    old: FilterData | None, expression_type: str | None, expression: str | None, version: int
) -> FilterData | None:
    """The group's filter data for a topic after a heartbeat subscribing with this expression (FILTER-18).

    pre: expression is None or len(expression) <= 8
    pre: old is None or sql92_compiles(old.expression)
    post: __return__ is None or sql92_compiles(__return__.expression)
    post: old is None or __return__ is None or __return__.version >= old.version
    post: old is None or version > old.version or __return__ == old
    post: __return__ is None or __return__ == old or __return__.version == version
    """
    if is_tag_type(expression_type) or not expression:
        return old
    compiles = expression_type == EXPRESSION_TYPE_SQL92 and sql92_compiles(expression)
    new = FilterData(expression, version, str(expression_type)) if compiles else None
    if old is None:
        return new
    if version <= old.version:
        return old
    if expression == old.expression and expression_type == old.expression_type:
        return attrs.evolve(old, version=version)
    # "new expression compile error, remove old, let client report error"
    return new


@CLAUSES.oracle("FILTER-19", "FILTER-20", "FILTER-21")
def pull_filter_answer(
    has_subscription_flag: bool,
    expression_type: str | None,
    expression: str | None,
    filter_data: FilterData | None,
    request_sub_version: int,
    enable_property_filter: bool,
) -> ResponseCode | None:
    """The code a pull is answered with by the filter checks, or None when it goes on to the store (FILTER-19,
    FILTER-20, FILTER-21). ``expression_type``/``expression`` are the request's with the subscription bit, else the
    registered subscription's.

    post: not is_tag_type(expression_type) or __return__ is None
    post: enable_property_filter or is_tag_type(expression_type) or __return__ is not None
    post: has_subscription_flag or is_tag_type(expression_type) or filter_data is not None or __return__ is ResponseCode.FILTER_DATA_NOT_EXIST
    post: __return__ is not None or is_tag_type(expression_type) or has_subscription_flag or filter_data.version >= request_sub_version
    """  # noqa: E501
    if is_tag_type(expression_type):
        return None
    if has_subscription_flag:
        if not expression:
            return ResponseCode.SUBSCRIPTION_PARSE_FAILED
    else:
        if filter_data is None:
            return ResponseCode.FILTER_DATA_NOT_EXIST
        if filter_data.version < request_sub_version:
            return ResponseCode.FILTER_DATA_NOT_LATEST
    if not enable_property_filter:
        return ResponseCode.SYSTEM_ERROR
    return None


# ------------------------------------------------------------------------------------------------ state machine
@attrs.frozen
class FilterState:
    """One group's subscription and filter data for one topic at a broker, and the last pull's answer.

    ``sub_version`` is the registered ``SubscriptionData`` version (0: none); ``filtered_by`` the expression the
    last pull that reached the store filtered with, and the version it was asked at.
    """

    enable_property_filter: bool
    filter_data: FilterData | None = None
    sub_version: int = 0
    answer: ResponseCode | None = None
    filtered_by: tuple[str, int] | None = None


@attrs.frozen
class Heartbeat:
    """A heartbeat subscribing the group to the topic with an SQL92 expression at a version."""

    expression: str
    version: int


@attrs.frozen
class Pull:
    """A pull without the subscription bit at a subVersion (the push consumer's pulls)."""

    sub_version: int


Action = Heartbeat | Pull


@CLAUSES.oracle("FILTER-18", "FILTER-20")
def enabled(state: FilterState, action: Action) -> bool:
    """Heartbeats and pulls may come at any time, in any order (FILTER-18, FILTER-20)."""
    return isinstance(action, Heartbeat | Pull)


@CLAUSES.oracle("FILTER-18", "FILTER-19", "FILTER-20", "FILTER-21")
def step(state: FilterState, action: Action) -> FilterState:
    """A heartbeat registers the subscription (a newer version replaces it) and the filter data (FILTER-18); a
    pull is checked against both (FILTER-20, FILTER-21) and, when it reaches the store, filters with the filter
    data's expression (FILTER-19 concerns the other kind of pull)."""
    require_enabled(enabled, state, action, Action)
    if isinstance(action, Heartbeat):
        data = register_filter_data(state.filter_data, EXPRESSION_TYPE_SQL92, action.expression, action.version)
        return attrs.evolve(state, filter_data=data, sub_version=max(state.sub_version, action.version))
    if state.sub_version == 0:
        return attrs.evolve(state, answer=ResponseCode.SUBSCRIPTION_NOT_EXIST, filtered_by=None)
    if state.sub_version < action.sub_version:
        return attrs.evolve(state, answer=ResponseCode.SUBSCRIPTION_NOT_LATEST, filtered_by=None)
    answer = pull_filter_answer(False, EXPRESSION_TYPE_SQL92, None, state.filter_data, action.sub_version,
                                state.enable_property_filter)
    if answer is not None:
        return attrs.evolve(state, answer=answer, filtered_by=None)
    data = state.filter_data
    assert data is not None
    return attrs.evolve(state, answer=ResponseCode.SUCCESS, filtered_by=(data.expression, action.sub_version))


def _filter_data_compiles(state: FilterState) -> bool:
    return state.filter_data is None or sql92_compiles(state.filter_data.expression)


def _served_only_with_the_filter_on(state: FilterState) -> bool:
    return state.answer is not ResponseCode.SUCCESS or state.enable_property_filter


def _filters_with_latest(before: FilterState, action: Action, after: FilterState) -> bool:
    if not isinstance(action, Pull) or after.answer is not ResponseCode.SUCCESS:
        return True
    data = before.filter_data
    return data is not None and after.filtered_by == (data.expression, action.sub_version) and (
        data.version >= action.sub_version)


def _version_never_drops(before: FilterState, action: Action, after: FilterState) -> bool:
    old, new = before.filter_data, after.filter_data
    return old is None or new is None or new.version >= old.version


def _pull_leaves_registration(before: FilterState, action: Action, after: FilterState) -> bool:
    if not isinstance(action, Pull):
        return True
    return before.filter_data == after.filter_data and before.sub_version == after.sub_version


INVARIANTS: tuple[Invariant[FilterState], ...] = (
    Invariant("filter data compiles", ("FILTER-18",), _filter_data_compiles),
    Invariant("SQL92 is served only with enablePropertyFilter", ("FILTER-21",), _served_only_with_the_filter_on),
)

STEP_INVARIANTS: tuple[StepInvariant[FilterState, Action], ...] = (
    StepInvariant("filter data version never drops", ("FILTER-18",), _version_never_drops),
    StepInvariant("pulls do not register", ("FILTER-20",), _pull_leaves_registration),
    StepInvariant("a pull filters with current filter data", ("FILTER-20",), _filters_with_latest),
)

_MODEL_EXPRESSIONS = ("a > 1", "b = 'x'", "a >")


def model(versions: int = 3, expressions: tuple[str, ...] = _MODEL_EXPRESSIONS) -> Model[FilterState, Action]:
    """Heartbeats with each expression (one that does not compile) at versions 1..``versions`` and pulls at each
    version, on a broker with and without enablePropertyFilter."""
    candidates: tuple[Action, ...] = (
        *(Heartbeat(e, v) for e in expressions for v in range(1, versions + 1)),
        *(Pull(v) for v in range(1, versions + 1)),
    )
    return Model(
        area="message_filter",
        bounds=f"{len(expressions)} expressions (one invalid) x versions 1..{versions}, filter on and off",
        initial=(FilterState(True), FilterState(False)),
        actions=lambda state: candidates,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )

