"""Every area module follows the contract of docs/spec-authoring.md."""

from __future__ import annotations

import ast
import builtins
import inspect
import re
from pathlib import Path
from typing import get_args

import attrs
import pytest

from rocketspec.spec import AREAS, area_module
from rocketspec.spec.clauses import ClauseTable
from rocketspec.spec.explorer import ActionNotEnabled, Invariant, Model, StepInvariant
from rocketspec.spec.transitions import TransitionTable

PREFIXES = {
    "send_retry": "SEND",
    "rebalance": "REB",
    "offset_commit": "OFF",
    "pull_correction": "PULL",
    "transaction_check": "TXN",
    "consume_retry": "RETRY",
    "message_filter": "FILTER",
    "name_server": "NS",
    "broker_requests": "BRK",
    "remoting": "WIRE",
}
TESTS = Path(__file__).parent


@pytest.mark.parametrize("area", AREAS)
def test_area_module_shape(area: str) -> None:
    module = area_module(area)
    table = module.CLAUSES
    assert isinstance(table, ClauseTable)
    assert table.area == area and table.prefix == PREFIXES[area]
    numbers = [int(re.match(r"[A-Z]+-(\d+)", c.id).group(1)) for c in table.clauses]  # type: ignore[union-attr]
    assert numbers == list(range(1, len(numbers) + 1)), "clause IDs are numbered from 1 without gaps"
    for clause in table.clauses:
        assert "\n" not in clause.statement and clause.statement.strip()
        assert clause.source.strip()
    transitions = module.TRANSITIONS
    assert isinstance(transitions, TransitionTable) and transitions.area == area and transitions.clauses is table
    assert module.enabled == transitions.enabled and module.step == transitions.step
    registered = {o.name: o for o in table.oracles}
    for transition in transitions.transitions:
        assert transition.kind in get_args(module.Action), f"{transition.kind.__name__} is not in {area}'s Action"
        assert transition.clauses, f"{area}: the {transition.kind.__name__} transition cites no clause"
        assert registered[f"step[{transition.kind.__name__}]"].function is transition.effect
    assert set(transitions.kinds) == set(get_args(module.Action)), "every action kind has one transition"
    invariants = (*module.INVARIANTS, *getattr(module, "STEP_INVARIANTS", ()))
    assert invariants
    for inv in invariants:
        assert isinstance(inv, Invariant | StepInvariant)
        table.require(inv.clauses)
    model = module.model()
    assert isinstance(model, Model) and model.area == area and model.bounds
    for state in model.initial:
        assert attrs.has(type(state)) and hash(state) is not None


@pytest.mark.parametrize("area", AREAS)
def test_every_clause_is_checked_and_every_oracle_documented(area: str) -> None:
    module = area_module(area)
    table = module.CLAUSES
    invariants = (*module.INVARIANTS, *getattr(module, "STEP_INVARIANTS", ()))
    cited = {c for o in table.oracles for c in o.clauses} | {c for i in invariants for c in i.clauses}
    assert set(table.ids) <= cited, f"unchecked clauses: {sorted(set(table.ids) - cited)}"
    for oracle in table.oracles:
        doc = inspect.getdoc(oracle.function) or ""
        for clause_id in oracle.clauses:
            assert clause_id in doc, f"{oracle.name} is registered for {clause_id} but its docstring does not cite it"


@pytest.mark.parametrize("area", AREAS)
def test_every_oracle_is_exercised_by_the_area_tests(area: str) -> None:
    source = (TESTS / f"test_spec_{area}.py").read_text(encoding="utf-8")
    # A transition (step[Kind]) is exercised by the explorer and the area's machine; an oracle by its own tests.
    missing = [o.name for o in area_module(area).CLAUSES.oracles if not o.name.startswith("step[")
               and o.name not in source]
    assert not missing, f"oracles with no test in test_spec_{area}.py: {missing}"


@pytest.mark.parametrize("area", AREAS)
def test_step_refuses_an_action_that_is_not_enabled(area: str) -> None:
    """step's precondition is part of its contract: a disabled action is refused, never half-applied."""
    module = area_module(area)
    model = module.model()
    frontier = list(model.initial)
    seen: set[object] = set(frontier)
    while frontier:
        state = frontier.pop(0)
        for action in model.actions(state):
            if not module.enabled(state, action):
                with pytest.raises(ActionNotEnabled):
                    module.step(state, action)
                return
            after = module.step(state, action)
            if after not in seen and len(seen) < 5000:
                seen.add(after)
                frontier.append(after)
    # Every action of this machine is enabled everywhere explored (message_filter: heartbeats and pulls may come at
    # any time): what its precondition still refuses is anything that is not one of its actions.
    assert seen, f"{area}: no initial state"
    with pytest.raises(TypeError, match="not an action of the"):
        module.step(next(iter(model.initial)), object())


CONTRACT_LINE = re.compile(r"^\s*(pre|post|inv)(\[[^\]]*\])?\s*:\s*(.+)$")


@pytest.mark.parametrize("area", AREAS)
def test_every_name_a_contract_uses_resolves_in_its_module(area: str) -> None:
    """CrossHair evaluates a contract in the module that defines the function: a name a condition uses (and no code
    does, so a linter may drop its import) must be there, or the condition fails with a NameError."""
    package = area_module(area)
    missing = []
    for module in (package, *(getattr(package, m) for m in dir(package) if inspect.ismodule(getattr(package, m)))):
        for name, function in vars(module).items():
            if not inspect.isfunction(function) or function.__module__ != module.__name__:
                continue
            params = set(inspect.signature(function).parameters)
            for line in (function.__doc__ or "").splitlines():
                match = CONTRACT_LINE.match(line)
                if match is None:
                    continue
                tree = ast.parse(match.group(3).strip(), mode="eval")
                used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.Lambda) for a in n.args.args}
                unknown = {n for n in used - params - bound - {"__return__", "__old__"}
                           if n not in function.__globals__ and not hasattr(builtins, n)}
                missing += [f"{module.__name__}.{name}: {n}" for n in sorted(unknown)]
    assert not missing, missing
