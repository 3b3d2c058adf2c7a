"""Transition tables: an area's machine as data, and ``enabled``, ``step`` and the candidate actions written once.

Each area's ``machine.py`` exports one :class:`TransitionTable`, ``TRANSITIONS``: for every action kind (an
action class) a :class:`Transition` with

- its **guard**, ``guard(state, action) -> bool``: whether the action can happen in the state;
- its **effect**, ``effect(state, action) -> state``: the state after it (only ever called when the guard holds);
- its **candidate generator**, ``candidates(state, bounds) -> Iterable[action]``: the actions of that kind worth
  trying in the state under the bounds of a model (the explorer's small ones, or a stateful test's wider ones);
  the guard decides which of them can happen;
- the **clauses** it implements, and the **label** its edges carry in ``rocketspec spec diagrams``.

The table is the only place an area's actions are listed: ``enabled``, ``step`` and the candidates are the table's
generic methods, the explorer walks ``table.candidates`` and the diagrams name an edge by ``table.label``. Adding an
action is one new entry. The effects and guards are registered with the area's clause table, one oracle
``step[Kind]`` per transition, so ``rocketspec spec clauses`` lists each transition against the rules it implements.

The table is built in the style of h11's: one owner of the state machine, transitions as data, nothing else that
decides.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import attrs

from rocketspec.spec.clauses import ClauseTable, Oracle
from rocketspec.spec.explorer import ActionNotEnabled, Invariant, Model, StepInvariant

S = TypeVar("S", bound=Hashable)
A = TypeVar("A", bound=Hashable)
B = TypeVar("B")


def _words(kind: type[Any]) -> str:
    """``SelectQueue`` -> ``select queue``: the default label of a transition."""
    return re.sub(r"(?<!^)(?=[A-Z])", " ", kind.__name__).lower()


def no_candidates(state: object, bounds: object) -> tuple[()]:
    """The candidate generator of a kind only the environment produces (a test drives it; the explorer does not)."""
    return ()


@attrs.frozen
class Transition(Generic[S, B]):
    """One action kind of a machine: guard, effect, candidate generator, clauses and label.

    ``guard`` and ``effect`` take the state and an action of ``kind``; ``candidates`` takes the state and the
    model's bounds and yields actions of ``kind`` (each filtered by the guard before it is taken).
    """

    kind: type[Any]
    guard: Callable[[S, Any], bool]
    effect: Callable[[S, Any], S]
    candidates: Callable[[S, B], Iterable[Any]] = no_candidates
    clauses: tuple[str, ...] = ()
    label: str = ""

    @property
    def name(self) -> str:
        """The edge label: ``label`` if given, else the kind's name in words."""
        return self.label or _words(self.kind)


@attrs.frozen
class TransitionTable(Generic[S, A, B]):
    """An area's machine: its transitions, one per action kind, in the order candidates are proposed.

    ``clauses`` is the area's clause table: every transition's clauses must be its clauses, and each transition is
    registered there as the oracle ``step[Kind]`` (its effect, whose docstring states the guard and the effect).
    """

    area: str
    clauses: ClauseTable
    transitions: tuple[Transition[S, B], ...]
    by_kind: dict[type[Any], Transition[S, B]] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        by_kind: dict[type[Any], Transition[S, B]] = {}
        for transition in self.transitions:
            if transition.kind in by_kind:
                raise ValueError(f"{self.area}: {transition.kind.__name__} has two transitions")
            by_kind[transition.kind] = transition
            self.clauses.require(transition.clauses)
            if transition.clauses:
                self.clauses.oracles.append(
                    Oracle(f"step[{transition.kind.__name__}]", transition.clauses, transition.effect)
                )
        object.__setattr__(self, "by_kind", by_kind)

    @property
    def kinds(self) -> tuple[type[Any], ...]:
        """The action kinds, in table order."""
        return tuple(t.kind for t in self.transitions)

    def transition(self, action: object) -> Transition[S, B]:
        """The transition of ``action``'s kind; a foreign object is a TypeError."""
        found = self.by_kind.get(type(action))
        if found is None:
            raise TypeError(f"not an action of the {self.area} machine: {action!r}")
        return found

    def enabled(self, state: S, action: A) -> bool:
        """Whether ``action`` can happen in ``state``: its kind's guard (False for an object of no kind here)."""
        found = self.by_kind.get(type(action))
        return found is not None and found.guard(state, action)

    def step(self, state: S, action: A) -> S:
        """The state after ``action``, which must be enabled.

        The precondition of every effect: ``action`` is of one of the table's kinds (else TypeError) and its guard
        holds (else :class:`ActionNotEnabled`). The postcondition is the area's invariants and step invariants,
        which the explorer checks on every reachable transition.
        """
        transition = self.transition(action)
        if not transition.guard(state, action):
            raise ActionNotEnabled(f"step called with an action not enabled in this state: {action!r}")
        return transition.effect(state, action)

    def candidates(self, state: S, bounds: B) -> Iterator[A]:
        """Every candidate action of every kind in ``state`` under ``bounds``, in table order (not yet guarded)."""
        for transition in self.transitions:
            yield from transition.candidates(state, bounds)

    def enabled_actions(self, state: S, bounds: B, kinds: Sequence[type[Any]] | None = None) -> list[A]:
        """The candidates of ``kinds`` (default all) that are enabled in ``state``."""
        wanted = self.kinds if kinds is None else tuple(kinds)
        return [
            a
            for t in self.transitions
            if t.kind in wanted
            for a in t.candidates(state, bounds)
            if t.guard(state, a)
        ]

    def label(self, action: object) -> str:
        """The edge label of ``action``'s transition."""
        return self.transition(action).name

    def clauses_of(self, action: object) -> tuple[str, ...]:
        """The clauses ``action``'s transition implements."""
        return self.transition(action).clauses

    def model(
        self,
        bounds: B,
        description: str,
        initial: Iterable[S],
        invariants: tuple[Invariant[S], ...],
        step_invariants: tuple[StepInvariant[S, A], ...] = (),
        actions: Callable[[S], Iterable[A]] | None = None,
    ) -> Model[S, A]:
        """The explorer's model of this machine under ``bounds`` (``actions`` narrows the candidates further)."""

        def candidates(state: S) -> Iterable[A]:
            return self.candidates(state, bounds)

        return Model(
            area=self.area,
            bounds=description,
            initial=tuple(initial),
            actions=actions if actions is not None else candidates,
            enabled=self.enabled,
            step=self.step,
            invariants=invariants,
            step_invariants=step_invariants,
        )
