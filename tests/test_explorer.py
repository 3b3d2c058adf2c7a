"""The bounded explorer itself: it visits every reachable state, and its counterexamples are shortest."""

from __future__ import annotations

import attrs
import pytest

from rocketspec.spec.explorer import Invariant, Model, StepInvariant, explore


@attrs.frozen
class Counter:
    value: int


def toy(limit: int, bug_at: int | None = None, raise_at: int | None = None) -> Model[Counter, str]:
    """A counter that goes up by 1 or 2 and never passes ``limit``; ``bug_at`` lets it jump past."""

    def enabled(state: Counter, action: str) -> bool:
        return state.value + (1 if action == "inc" else 2) <= limit

    def step(state: Counter, action: str) -> Counter:
        if raise_at is not None and state.value == raise_at:
            raise RuntimeError("boom")
        delta = 1 if action == "inc" else 2
        if bug_at is not None and state.value == bug_at:
            delta += 5
        return Counter(state.value + delta)

    return Model(
        area="toy",
        bounds=f"limit {limit}",
        initial=(Counter(0),),
        actions=lambda s: ("inc", "inc2"),
        enabled=enabled,
        step=step,
        invariants=(Invariant("bounded", ("TOY-1",), lambda s: s.value <= limit),),
        step_invariants=(StepInvariant("monotone", ("TOY-2",), lambda a, _x, b: b.value > a.value),),
    )


def test_explores_every_reachable_state() -> None:
    result = explore(toy(10))
    assert result.ok
    assert result.states == 11
    assert result.depth == 5  # BFS depth: shortest distance, by steps of 2
    # from each value v, inc is enabled when v <= 9 and inc2 when v <= 8
    assert result.transitions == 10 + 9


def test_counterexample_is_shortest() -> None:
    result = explore(toy(10, bug_at=4))
    assert not result.ok
    (violation,) = result.violations
    assert violation.invariant == "bounded"
    assert violation.clauses == ("TOY-1",)
    # 0 -> 2 -> 4 -> (jump) is 3 steps; no shorter path reaches a violation
    assert len(violation.steps) == 3
    assert violation.steps[-1][1].value > 10
    assert "TOY-1" in violation.describe()


def test_step_exception_is_a_violation() -> None:
    result = explore(toy(10, raise_at=3))
    assert [v.invariant for v in result.violations] == ["step raised"]
    assert "RuntimeError: boom" in result.violations[0].error


def test_state_bound_makes_exploration_incomplete() -> None:
    result = explore(toy(1000), max_states=50)
    assert not result.complete
    assert not result.ok
    assert result.states == 50


@pytest.mark.parametrize("limit", [0, 1, 5])
def test_small_limits(limit: int) -> None:
    result = explore(toy(limit))
    assert result.ok and result.states == limit + 1
