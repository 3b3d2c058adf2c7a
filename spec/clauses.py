"""Clauses: every normative rule of the spec has an ID, a one-line statement and its source.

Docstrings, tests, conformance cases and trace checks cite clauses by ID. Each area module builds a
:class:`ClauseTable`; oracle functions and invariants say which clauses they check, so that
``rocketspec spec clauses`` can list, for each rule, what checks it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

import attrs

_CLAUSE_ID = re.compile(r"^[A-Z]+-\d+[a-z]?$")


def _valid_id(_inst: object, _attr: object, value: str) -> None:
    if not _CLAUSE_ID.match(value):
        raise ValueError(f"clause IDs look like PULL-3, not {value!r}")


@attrs.frozen
class Clause:
    """One rule: ``id`` (e.g. ``PULL-3``), the rule in one line, and where it comes from.

    ``source`` names the seed article section or the RocketMQ class and method; ``versions`` says which
    releases the statement covers when releases differ (empty: all of 4.x that the spec describes).
    """

    id: str = attrs.field(validator=_valid_id)
    statement: str
    source: str
    versions: str = ""


F = TypeVar("F", bound=Callable[..., object])


@attrs.frozen
class Oracle:
    """A normative decision function and the clauses its contract checks."""

    name: str
    clauses: tuple[str, ...]
    function: Callable[..., object]


@attrs.define
class ClauseTable:
    """The clauses of one protocol area, and the oracles registered against them."""

    area: str
    prefix: str
    clauses: tuple[Clause, ...]
    oracles: list[Oracle] = attrs.Factory(list)

    def __attrs_post_init__(self) -> None:
        seen: set[str] = set()
        for clause in self.clauses:
            if not clause.id.startswith(self.prefix + "-"):
                raise ValueError(f"{clause.id} does not belong to area {self.area} ({self.prefix}-N)")
            if clause.id in seen:
                raise ValueError(f"clause {clause.id} is defined twice")
            seen.add(clause.id)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.clauses)

    def get(self, clause_id: str) -> Clause:
        for clause in self.clauses:
            if clause.id == clause_id:
                return clause
        raise KeyError(clause_id)

    def require(self, ids: Iterable[str]) -> tuple[str, ...]:
        """Check that every cited ID is a clause of this table; return them as a tuple."""
        ids = tuple(ids)
        unknown = [i for i in ids if i not in self.ids]
        if unknown:
            raise ValueError(f"{self.area}: unknown clause(s) {', '.join(unknown)}")
        return ids

    def oracle(self, *ids: str) -> Callable[[F], F]:
        """Register the decorated function as an oracle checking ``ids``; the function is returned unchanged."""
        cited = self.require(ids)

        def register(function: F) -> F:
            self.oracles.append(Oracle(function.__name__, cited, function))
            return function

        return register
