"""The lockstep machines cover RocketMQ's whole configuration space and refimpl's modules.

- Every configuration dimension of ``tests/dimensions.py`` is drawn by at least one lockstep machine (each machine's
  own test, ``lockstep.run_machine``, checks that its ci run drew every one of its dimensions with a non-default value
  and with the default).
- Every machine drives or observes every action kind of its area's transition table, and has a broken variant for
  each of its dimensions (``VARIANTS``, run by the slow ``test_variant_needs_a_non_default_configuration``).
- Every module of refimpl belongs to a protocol area (``benchmarks/mutation.py``'s ``COVERAGE_AREAS``), is the test
  double's infrastructure, or is left out of a ``--machines`` mutation run with its reason.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import pytest
from dimensions import DIMENSIONS, GROUPS
from lockstep import LockstepMachine, check_kinds

from rocketspec.spec import AREAS

TESTS = Path(__file__).parent
ROOT = TESTS.parent
# benchmarks/mutation.py, by path: tests/mutation.py (the spec's broken copies) holds the name ``mutation``.
_SPEC = importlib.util.spec_from_file_location("mutation_harness", ROOT / "benchmarks" / "mutation.py")
assert _SPEC is not None and _SPEC.loader is not None
harness = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(harness)

#: Each spec area's lockstep machine modules.
MACHINE_MODULES: dict[str, tuple[str, ...]] = {
    **{area: (f"test_stateful_{area}",) for area in AREAS},
    "consume_retry": ("test_stateful_consume_retry", "test_stateful_orderly"),
    "remoting": ("test_stateful_remoting", "test_stateful_tcp"),
}


def _machines() -> dict[str, list[type[LockstepMachine]]]:
    found: dict[str, list[type[LockstepMachine]]] = {}
    for area, names in MACHINE_MODULES.items():
        for name in names:
            if not (TESTS / f"{name}.py").exists():
                continue
            module = importlib.import_module(name)
            found.setdefault(area, []).extend(
                v for v in vars(module).values()
                if isinstance(v, type) and issubclass(v, LockstepMachine) and v is not LockstepMachine
                and v.__module__ == module.__name__ and not v.PINNED)
    return found


def test_every_area_has_a_lockstep_machine() -> None:
    machines = _machines()
    missing = [area for area in AREAS if not machines.get(area)]
    assert not missing, f"areas without a lockstep machine: {missing}"
    for area, classes in machines.items():
        for machine in classes:
            assert machine.TABLE is importlib.import_module(f"rocketspec.spec.{area}").TRANSITIONS, machine
            check_kinds(machine)


def test_every_dimension_is_drawn_by_a_machine() -> None:
    drawn = {d for classes in _machines().values() for m in classes for d in m.DIMENSIONS}
    never = sorted(set(DIMENSIONS) - drawn)
    assert not never, f"dimensions no lockstep machine draws: {never}"
    assert {d.group for d in DIMENSIONS.values()} == set(GROUPS)


def test_every_machine_has_a_variant_per_dimension() -> None:
    for classes in _machines().values():
        for machine in classes:
            variants = getattr(importlib.import_module(machine.__module__), "VARIANTS", {})
            missing = sorted(set(machine.DIMENSIONS) - set(variants))
            assert not missing, f"{machine.__name__}: dimensions without a broken variant: {missing}"


def test_every_refimpl_module_has_an_area() -> None:
    placed = {str(m) for paths, _machine in harness.COVERAGE_AREAS.values() for m in harness.modules_of(paths)}
    placed |= set(harness.INFRASTRUCTURE) | set(harness.MACHINES_EXCLUDED)
    modules = {str(m) for m in harness.modules_of(["refimpl"])}
    assert not modules - placed, f"refimpl modules in no area: {sorted(modules - placed)}"
    assert not placed - modules, f"areas name modules that do not exist: {sorted(placed - modules)}"
    assert harness.excluded_share(harness.modules_of(["refimpl"])) < harness.MAX_EXCLUDED_SHARE


@pytest.mark.parametrize("name", sorted(DIMENSIONS))
def test_a_dimension_draws_its_default_and_others(name: str) -> None:
    from hypothesis import find

    dim = DIMENSIONS[name]
    assert dim.is_default(dim.default, dim.default)
    find(dim.values, lambda v: not dim.is_default(v, dim.default))
