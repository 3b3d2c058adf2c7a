"""SQL92 selectors with what RocketMQ 4.9.8's own filter module answers, and a generator of selectors.

Every row of ``EXAMPLES`` was run through the 4.9.8 jar (``SqlFilter.compile`` and ``evaluate`` over a
``MessageEvaluationContext``, the Java driver's ``filter.evaluate`` scenario): the expression, the message's
properties, and the result: TRUE, FALSE, NULL, ERROR (evaluate throws) or INVALID (does not compile).
``tests/test_refimpl_sql92.py`` re-runs them on the jar when a RocketMQ installation is present.
"""

from __future__ import annotations

import random

from hypothesis import strategies as st

EXAMPLES: tuple[tuple[str, dict[str, str], str], ...] = (
    ('a = 1 b = 2', {'a': '1'}, 'TRUE'),
    ("a = 1 '", {'a': '1'}, 'INVALID'),
    ('a = 1 b @', {'a': '1'}, 'TRUE'),
    ('a = 1 NOT @', {'a': '1'}, 'INVALID'),
    ('a = 1 @', {'a': '1'}, 'INVALID'),
    ('a = 1)', {'a': '1'}, 'TRUE'),
    ('a > 0.0', {'a': '1'}, 'INVALID'),
    ('a > 1', {'a': '1.5'}, 'ERROR'),
    ('a > 1.0', {'a': '1.5'}, 'TRUE'),
    ('a = b', {}, 'TRUE'),
    ("'abc' = a", {}, 'FALSE'),
    ("a = 'abc'", {}, 'NULL'),
    ('a = TRUE', {'a': 'TrUe'}, 'TRUE'),
    ("TRUE = 'true'", {}, 'INVALID'),
    ("'true' = TRUE", {}, 'TRUE'),
    ('1 = TRUE', {}, 'FALSE'),
    ('a', {'a': 'true'}, 'FALSE'),
    ('NULL', {}, 'NULL'),
    ('TRUE', {}, 'TRUE'),
    ('a BETWEEN 2 AND 1', {}, 'INVALID'),
    ('a BETWEEN 1 AND -5', {'a': '0'}, 'FALSE'),
    ('a NOT BETWEEN 2 AND 1', {'a': '0'}, 'TRUE'),
    ('--1\n a = 1', {'a': '1'}, 'TRUE'),
    ('a = --1', {'a': '1'}, 'TRUE'),
    ("\u212a = 'x'", {'\u212a': 'x'}, 'INVALID'),
    ('a = 1', {'a': 'abc'}, 'ERROR'),
    # Long against Double: both widened to double (ComparisonExpression.__compare), so 2**53 + 1 equals 2**53.
    ('3 < 3.5', {}, 'TRUE'),
    ('9007199254740993 = 9007199254740992.0', {}, 'TRUE'),
    ('9007199254740992.0 = 9007199254740993', {}, 'TRUE'),
    ('9007199254740993 > 9007199254740992.0', {}, 'FALSE'),
    ('a = 1', {'a': '3000000000'}, 'ERROR'),
    ('a = 3000000000', {'a': '3000000000'}, 'TRUE'),
    ('a = 1', {'a': ' 1'}, 'ERROR'),
    ('a = 1.0', {'a': ' 1 '}, 'TRUE'),
    ('a = 1.0', {'a': '1d'}, 'TRUE'),
    ('a > b', {'a': '2', 'b': '0x1p0'}, 'TRUE'),
    ("a IN ('x', 'y')", {'a': 'y'}, 'TRUE'),
    ("1 IN ('x')", {}, 'INVALID'),
    ("a NOT IN ('x')", {}, 'NULL'),
    ('a = 0123', {'a': '0'}, 'TRUE'),
    ('a = 1L', {'a': '1'}, 'TRUE'),
    ("a = -'x'", {'a': '1'}, 'FALSE'),
    ('NOT a', {'a': 'x'}, 'TRUE'),
    ('-a > 1', {'a': '-5'}, 'NULL'),
    ("a = '\u0661'", {'a': 'x'}, 'FALSE'),
    ('a = 1', {'a': '\u0661'}, 'TRUE'),
    ('a = 1', {'a': '+1'}, 'TRUE'),
    ("TAGS = 'A'", {'TAGS': 'A'}, 'TRUE'),
    ("(a = 1) = 'x'", {'a': '1'}, 'ERROR'),
    ('a > 1e400', {'a': '1'}, 'INVALID'),
    ('a >= 5e-324', {'a': '1'}, 'TRUE'),
    ('a = 1 AND', {'a': '1'}, 'INVALID'),
    ('', {}, 'INVALID'),
    ('a = 1 /* c */ OR b = 2', {'b': '2'}, 'TRUE'),
    ('a = 1 /* c', {'b': '2'}, 'INVALID'),
    ('a IS NOT NULL', {'a': '2'}, 'TRUE'),
    ('a is null', {}, 'TRUE'),
    ("a > 'x'", {}, 'INVALID'),
    ('a <> 1', {}, 'NULL'),
    ('+ a = 1', {'a': '1'}, 'TRUE'),
    ("+ 'x' = a", {'a': 'x'}, 'TRUE'),
    ('a = 1 or', {'a': '1'}, 'INVALID'),
    ('a = = 1', {}, 'INVALID'),
    ('a NOT b', {}, 'INVALID'),
    ('a = 1 AND', {}, 'INVALID'),
    ('1', {}, 'INVALID'),
    ('a IN (1)', {}, 'INVALID'),
    ('(a = 1', {}, 'INVALID'),
    ('a ! 1', {}, 'INVALID'),
    ("a = 'x", {}, 'INVALID'),
    ('a = 1 IS 2', {}, 'INVALID'),
    ('a = 1 IS NOT 2', {}, 'INVALID'),
    ('a BETWEEN 1 OR 2', {}, 'INVALID'),
    ('a = #', {}, 'INVALID'),
    ('a = 1\n AND b = ', {}, 'INVALID'),)

NAMES = ("a", "b", "TAGS", "A", "c_1")
VALUES = ("1", "2", "-1", "1.5", " 1", "abc", "true", "TRUE", "0", "3000000000", "1e3", "NaN", "x", "", "+7",
          "0x10", "1d", "-0.0", "9223372036854775807", "\u0661", "0x1p3", "Infinity")
LITERALS = ("1", "0", "2", "1.5", "3000000000", "'x'", "'1'", "'abc'", "TRUE", "FALSE", "NULL", "1L", "1e3", ".5",
            "0.0", "'it''s'", "9999999999999999999", "-1", "- 2", "2147483648", "5e-324")
NOISE = (" b", " )", " @", " '", " NOT", " =", " -- c", " --c\n OR a", " /* x */", " IS", "!", " 1", " AND", " OR b")


@st.composite
def selectors(draw: st.DrawFn, noise: bool = True) -> str:
    """Selector text from the grammar's pieces, with ``noise`` sometimes trailing text (valid or not, on purpose)."""
    text = draw(_disjunction(0))
    if noise and draw(st.integers(0, 6)) == 0:
        text += draw(st.sampled_from(NOISE))
    return text


def _operand(depth: int) -> st.SearchStrategy[str]:
    simple = st.one_of(st.sampled_from(NAMES), st.sampled_from(LITERALS))
    if depth >= 2:
        return simple
    return st.one_of(
        simple,
        simple,
        st.builds(lambda e: f"({e})", st.deferred(lambda: _disjunction(depth + 1))),
        st.builds(lambda op, e: op + e, st.sampled_from(("-", "+", "NOT ")), st.deferred(lambda: _operand(depth + 1))),
    )


def _comparison(depth: int) -> st.SearchStrategy[str]:
    operand = _operand(depth)
    items = st.lists(st.sampled_from(("'x'", "'1'", "'abc'", "''")), min_size=1, max_size=5).map(", ".join)
    return st.one_of(
        operand,
        st.builds(lambda a, op, b: f"{a} {op} {b}", operand,
                  st.sampled_from(("=", "<>", "<", "<=", ">", ">=")), operand),
        st.builds(lambda a, op, lo, hi: f"{a} {op} {lo} AND {hi}", operand,
                  st.sampled_from(("BETWEEN", "NOT BETWEEN", "between")), operand, operand),
        st.builds(lambda a, op, xs: f"{a} {op} ({xs})", operand, st.sampled_from(("IN", "NOT IN", "in")), items),
        st.builds(lambda a, op: f"{a} {op}", operand, st.sampled_from(("IS NULL", "IS NOT NULL", "is null"))),
    )


def _disjunction(depth: int) -> st.SearchStrategy[str]:
    part = _comparison(depth)
    joiners = st.sampled_from((" AND ", " OR ", " and ", " Or "))
    return st.builds(lambda first, rest: first + "".join(j + p for j, p in rest), part,
                     st.lists(st.tuples(joiners, part), max_size=2))


def properties() -> st.SearchStrategy[dict[str, str]]:
    """Message properties over the selector's names, each present or not."""
    return st.dictionaries(st.sampled_from(NAMES), st.sampled_from(VALUES), max_size=len(NAMES))


# Selectors that mostly compile: comparisons of properties (one, "z", never set) with literals of every type, the
# operators 4.9.8's grammar has (no LIKE: it is a property name there), combined with AND, OR, NOT and parentheses.
TYPED_NAMES = ("a", "b", "A", "c_1", "TAGS", "z")
NUMBERS = ("1", "0", "2", "5", "1.5", "3000000000", "1L", "1e3", ".5", "2147483648", "5e-324", "- 1", "-2.5", "1e10",
           "1e-5")
STRINGS = ("'x'", "'1'", "'abc'", "'A'", "'Aa'", "'BB'", "'true'", "''", "'it''s'", "'1.5'")


def _typed_comparison() -> st.SearchStrategy[str]:
    name = st.sampled_from(TYPED_NAMES)
    number = st.sampled_from(NUMBERS)
    order = st.sampled_from(("=", "<>", "<", ">", "<=", ">="))
    bounds = st.lists(st.integers(-2, 6), min_size=2, max_size=2).map(sorted)
    strings = st.lists(st.sampled_from(STRINGS), min_size=1, max_size=4).map(", ".join)
    return st.one_of(
        st.builds(lambda p, op, n: f"{p} {op} {n}", name, order, number),
        st.builds(lambda n, op, p: f"{n} {op} {p}", number, order, name),
        st.builds(lambda p, op, s: f"{p} {op} {s}", name, st.sampled_from(("=", "<>")), st.sampled_from(STRINGS)),
        st.builds(lambda s, p: f"{s} = {p}", st.sampled_from(STRINGS), name),
        st.builds(lambda p, b: f"{p} = {b}", name, st.sampled_from(("TRUE", "FALSE", "true"))),
        st.builds(lambda p, q, op: f"{p} {op} {q}", name, name, order),
        st.builds(lambda p, neg, lh: f"{p} {neg}BETWEEN {lh[0]} AND {lh[1]}", name, st.sampled_from(("", "NOT ")),
                  bounds),
        st.builds(lambda p, neg, lh: f"{p} {neg}BETWEEN {lh[0]}.5 AND {lh[1] + 1}", name,
                  st.sampled_from(("", "NOT ")), bounds),
        st.builds(lambda p, neg, xs: f"{p} {neg}IN ({xs})", name, st.sampled_from(("", "NOT ")), strings),
        st.builds(lambda p, neg: f"{p} IS {neg}NULL", name, st.sampled_from(("", "NOT ", "not "))),
        st.builds(lambda p: f"-{p} < 0", name),
        st.builds(lambda x, op, y: f"{x} {op} {y}", number, order, number),
        st.builds(lambda b, p: f"{b} = {p}", st.sampled_from(("TRUE", "FALSE")), name),
        st.builds(lambda p, n, b: f"({p} > {n}) = {b}", name, number, st.sampled_from(("TRUE", "FALSE", "1"))),
        st.builds(lambda n, p, m: f"{n} = ({p} > {m})", number, name, number),
        st.sampled_from(("TRUE", "FALSE", "NULL", "a LIKE 'x'")),
        st.builds(lambda neg, p: f"{neg}{p}", st.sampled_from(("", "NOT ")), name),
    )


def _refused() -> st.SearchStrategy[str]:
    """Well-formed selectors 4.9.8 refuses to compile (each error's text renders the expression)."""
    name = st.sampled_from(TYPED_NAMES)
    number = st.sampled_from(NUMBERS)
    return st.one_of(
        st.builds(lambda p, hi, lo: f"{p} BETWEEN {hi} AND {lo}", name,
                  st.sampled_from(("2.5", "3", "3000000000", "1e10", "'b'", "TRUE")),
                  st.sampled_from(("1.5", "1", "0", "5e-324", "1e-5", "'a'", "FALSE"))),
        st.builds(lambda p, n, m: f"({p} > {n}) > {m}", name, number, number),
        st.builds(lambda n: f"{n} IN ('x')", number),
        st.builds(lambda p: f"{p} = NULL", name),
        st.builds(lambda s: f"TRUE = {s}", st.sampled_from(STRINGS)),
        st.builds(lambda p, s: f"{p} > {s}", name, st.sampled_from(STRINGS)),
        st.builds(lambda n: f"{n} AND a", number),
        st.builds(lambda p: f"{p} BETWEEN NULL AND 1", name),
    )


def _typed(depth: int) -> st.SearchStrategy[str]:
    if depth >= 2:
        return _typed_comparison()
    inner = st.deferred(lambda: _typed(depth + 1))
    return st.one_of(
        _typed_comparison(),
        _typed_comparison(),
        st.builds(lambda x, op, y: f"{x} {op} {y}", inner, st.sampled_from(("AND", "OR", "and", "Or")), inner),
        st.builds(lambda x: f"NOT ({x})", inner),
        st.builds(lambda x: f"({x})", inner),
    )


def typed_selectors(refused: bool = False) -> st.SearchStrategy[str]:
    """Selectors built from the grammar's well-typed pieces (they compile); with ``refused``, also well-formed ones
    4.9.8 refuses (bounds descending or null, NULL compared, a boolean ordered, IN after a constant)."""
    return st.one_of(_typed(0), _refused()) if refused else _typed(0)


def typed_pool(size: int = 400, seed: int = 28) -> tuple[str, ...]:
    """``size`` selectors from the pieces of ``typed_selectors``, built with a seeded generator: a fixed, varied pool
    a machine can draw from evenly (hypothesis, drawing a strategy, mostly mutates what it drew before)."""
    rng = random.Random(seed)

    def comparison() -> str:
        p, q = rng.choice(TYPED_NAMES), rng.choice(TYPED_NAMES)
        n, m = rng.choice(NUMBERS), rng.choice(NUMBERS)
        s = rng.choice(STRINGS)
        op = rng.choice(("=", "<>", "<", ">", "<=", ">="))
        low, high = sorted((rng.randint(-2, 6), rng.randint(-2, 6)))
        neg = rng.choice(("", "NOT "))
        items = ", ".join(rng.choice(STRINGS) for _ in range(rng.randint(1, 4)))
        return rng.choice((
            f"{p} {op} {n}", f"{n} {op} {p}", f"{p} {rng.choice(('=', '<>'))} {s}", f"{s} = {p}",
            f"{p} = {rng.choice(('TRUE', 'FALSE', 'true'))}", f"{p} {op} {q}", f"{p} {neg}BETWEEN {low} AND {high}",
            f"{p} {neg}BETWEEN {low}.5 AND {high + 1}", f"{p} {neg}IN ({items})", f"{p} IS {neg}NULL",
            f"-{p} < 0", f"{n} {op} {m}", f"{rng.choice(('TRUE', 'FALSE'))} = {p}", f"({p} > {n}) = TRUE",
            f"{neg}{p}", f"{p} <> {n}", f"NOT ({p} = {s})",
        ))

    def expression(depth: int) -> str:
        kind = rng.randint(0, 4) if depth < 2 else 0
        if kind <= 1:
            return comparison()
        if kind == 2:
            return f"{expression(depth + 1)} {rng.choice(('AND', 'OR', 'and', 'Or'))} {expression(depth + 1)}"
        if kind == 3:
            return f"NOT ({expression(depth + 1)})"
        return f"({expression(depth + 1)})"

    return tuple(dict.fromkeys(expression(0) for _ in range(size)))
