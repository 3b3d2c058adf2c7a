"""Bounded exhaustive exploration of a spec state machine.

A :class:`Model` bundles an area's ``enabled``/``step`` with small, fixed parameters (its bounds) and the
invariants to check. :func:`explore` enumerates every state reachable from the initial states breadth first,
checks every state invariant on every state and every step invariant on every transition, and returns a
shortest counterexample (fewest steps from an initial state) for each invariant that fails.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar, get_args

import attrs

S = TypeVar("S", bound=Hashable)
A = TypeVar("A", bound=Hashable)


@attrs.frozen
class Invariant(Generic[S]):
    """A predicate every reachable state must satisfy; ``clauses`` are the rules it checks."""

    name: str
    clauses: tuple[str, ...]
    holds: Callable[[S], bool]


@attrs.frozen
class StepInvariant(Generic[S, A]):
    """A predicate over every transition ``(before, action, after)``."""

    name: str
    clauses: tuple[str, ...]
    holds: Callable[[S, A, S], bool]


@attrs.frozen
class Model(Generic[S, A]):
    """A spec state machine with bounds: what the explorer walks.

    ``actions(state)`` proposes candidate actions (a finite set for the bounds); only those for which
    ``enabled(state, action)`` holds are taken.
    """

    area: str
    bounds: str
    initial: tuple[S, ...]
    actions: Callable[[S], Iterable[A]]
    enabled: Callable[[S, A], bool]
    step: Callable[[S, A], S]
    invariants: tuple[Invariant[S], ...]
    step_invariants: tuple[StepInvariant[S, A], ...] = ()


@attrs.frozen
class Counterexample(Generic[S, A]):
    """A shortest path from an initial state to a violation."""

    invariant: str
    clauses: tuple[str, ...]
    initial: S
    steps: tuple[tuple[A, S], ...]
    error: str = ""

    def describe(self) -> str:
        lines = [f"{self.invariant} ({', '.join(self.clauses)}) fails after {len(self.steps)} step(s)"]
        if self.error:
            lines.append(f"  error: {self.error}")
        lines.append(f"  initial: {self.initial!r}")
        for n, (action, state) in enumerate(self.steps, 1):
            lines.append(f"  {n}. {action!r}")
            lines.append(f"     -> {state!r}")
        return "\n".join(lines)


@attrs.frozen
class Exploration:
    """What one exploration saw."""

    area: str
    bounds: str
    states: int
    transitions: int
    depth: int
    complete: bool
    invariants: tuple[str, ...]
    clauses: tuple[str, ...]
    violations: tuple[Counterexample[Any, Any], ...]

    @property
    def ok(self) -> bool:
        return self.complete and not self.violations

    def failed_clauses(self) -> set[str]:
        return {c for v in self.violations for c in v.clauses}


STEP_RAISED = "step raised"


class ActionNotEnabled(ValueError):
    """``step`` was called with an action its machine does not enable in that state."""


def require_enabled(
    enabled: Callable[[S, A], bool], state: S, action: A, action_types: object
) -> None:
    """The precondition of every ``step``: ``action`` is one of the machine's actions and enabled in ``state``.

    ``action_types`` is the area's ``Action`` union. The postcondition of ``step`` is the area's invariants and
    step invariants, which :func:`explore` checks on every reachable transition.
    """
    if not isinstance(action, get_args(action_types) or action_types):  # type: ignore[arg-type]
        raise TypeError(f"not an action of this machine: {action!r}")
    if not enabled(state, action):
        raise ActionNotEnabled(f"step called with an action not enabled in this state: {action!r}")


#: How many new states the explorer finds between two calls of its ``progress``.
PROGRESS_EVERY_STATES = 10_000


def explore(model: Model[S, A], max_states: int = 2_000_000,
            progress: Callable[[int, int], None] | None = None) -> Exploration:
    """Walk every reachable state of ``model`` (up to ``max_states``) and check its invariants.

    Exploration is breadth first, so each counterexample reported is a shortest one. One counterexample is
    kept per invariant. A step that raises is reported as a violation of the clauses of every invariant
    (the machine left its own domain). ``complete`` is false when ``max_states`` cut the walk short.
    ``progress(states, transitions)`` hears how far the walk is every :data:`PROGRESS_EVERY_STATES` states.
    """
    parents: dict[S, tuple[S, A] | None] = {}
    depth_of: dict[S, int] = {}
    queue: deque[S] = deque()
    found: dict[str, Counterexample[S, A]] = {}
    checks: tuple[Invariant[S] | StepInvariant[S, A], ...] = (*model.invariants, *model.step_invariants)
    all_clauses = tuple(
        sorted({c for inv in checks for c in inv.clauses})
    )
    transitions = 0
    complete = True

    def path_to(state: S) -> tuple[S, tuple[tuple[A, S], ...]]:
        steps: list[tuple[A, S]] = []
        cursor = state
        while (link := parents[cursor]) is not None:
            prev, action = link
            steps.append((action, cursor))
            cursor = prev
        return cursor, tuple(reversed(steps))

    def check_state(state: S) -> None:
        for inv in model.invariants:
            if inv.name in found:
                continue
            try:
                ok = inv.holds(state)
                error = ""
            except Exception as exc:  # an invariant that raises is a failed invariant
                ok, error = False, f"{type(exc).__name__}: {exc}"
            if not ok:
                initial, steps = path_to(state)
                found[inv.name] = Counterexample(inv.name, inv.clauses, initial, steps, error)

    for state in model.initial:
        if state not in parents:
            parents[state] = None
            depth_of[state] = 0
            queue.append(state)
            check_state(state)

    while queue:
        state = queue.popleft()
        for action in model.actions(state):
            if not model.enabled(state, action):
                continue
            transitions += 1
            try:
                after = model.step(state, action)
            except Exception as exc:
                if STEP_RAISED not in found:
                    initial, steps = path_to(state)
                    found[STEP_RAISED] = Counterexample(
                        STEP_RAISED, all_clauses, initial, (*steps, (action, state)),
                        f"{type(exc).__name__}: {exc}",
                    )
                continue
            for sinv in model.step_invariants:
                if sinv.name in found:
                    continue
                try:
                    ok = sinv.holds(state, action, after)
                    error = ""
                except Exception as exc:
                    ok, error = False, f"{type(exc).__name__}: {exc}"
                if not ok:
                    initial, steps = path_to(state)
                    found[sinv.name] = Counterexample(
                        sinv.name, sinv.clauses, initial, (*steps, (action, after)), error
                    )
            if after in parents:
                continue
            if len(parents) >= max_states:
                complete = False
                continue
            parents[after] = (state, action)
            depth_of[after] = depth_of[state] + 1
            queue.append(after)
            check_state(after)
            if progress is not None and len(parents) % PROGRESS_EVERY_STATES == 0:
                progress(len(parents), transitions)

    names = tuple(inv.name for inv in checks)
    return Exploration(
        area=model.area,
        bounds=model.bounds,
        states=len(parents),
        transitions=transitions,
        depth=max(depth_of.values(), default=0),
        complete=complete,
        invariants=names,
        clauses=all_clauses,
        violations=tuple(found.values()),
    )
