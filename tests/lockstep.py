"""The lockstep base: an area's spec machine and the reference implementation, stepped side by side.

A lockstep machine is a hypothesis ``RuleBasedStateMachine`` with two sides:

- **the spec**: the area's ``TRANSITIONS`` table (``rocketspec.spec.transitions``) and a state, which starts from the
  configuration drawn for the run (:mod:`dimensions`: broker settings, client options, wire, topology; the defaults
  are one draw among many) and is stepped only through the table;
- **the system**: the reference implementation, built from the same configuration and driven through its public API
  (a ``Cluster``, its clients, its faults, its clock; the system machine through the socket server).

Each rule is a spec action. The environment's actions (a send, a consumer joining, a fault, time passing) are
*driven*: the rule checks that the spec enables the action, steps the spec (:meth:`LockstepMachine.drive`) and makes
the implementation do it. The actions the implementation takes itself (an attempt, a rebalance, a check-back) are
*observed*: read from its event log, translated into spec actions, each of which must be enabled where the spec is
(:meth:`LockstepMachine.observe`). After every rule the base compares an observable projection of both sides
(:meth:`LockstepMachine.project_spec`, :meth:`LockstepMachine.project_system`; what each client received, response
codes, stored messages per queue, committed offsets, retry and DLQ topics, route data: what the area models). A
mismatch, or an observed action the spec does not allow, fails with the steps taken so far (hypothesis shrinks the
program to a shortest one) and both projections, part by part.

:func:`machine_test` makes the pytest test of a machine: the ci (or deep) run, then the check that the run drew each
of the machine's dimensions with a non-default value (and with the default) at least once. :func:`variant_caught`
and :func:`variant_needs` show that a broken copy of the implementation that only a non-default configuration
reveals is caught by its machine, and is not by the machine pinned to the default.
"""

from __future__ import annotations

import pprint
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any, ClassVar, NoReturn

import attrs
import pytest
from dimensions import DIMENSIONS, dimension
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, run_state_machine_as_test
from mutation import refimpl_mutant
from stateful_support import failure_text, hypothesis_finds_failure, stateful_settings

from rocketspec.spec.transitions import TransitionTable

#: What each machine's runs drew, per process: machine name -> dimension -> [default drawn, non-default drawn].
DRAWN: dict[str, dict[str, list[bool]]] = {}


class LockstepFailure(AssertionError):
    """The implementation and the spec parted: an action the spec does not allow, or projections that differ."""


@attrs.frozen
class Taken:
    """One step of the spec side: who took the action (``rule``: driven; ``observed``: the implementation's)."""

    actor: str
    action: Any
    note: str = ""


class Lockstep:
    """The spec side of a run: the table, the configuration, the state and the steps taken."""

    def __init__(self, table: TransitionTable[Any, Any, Any], state: Any, config: Mapping[str, Any]) -> None:
        self.table = table
        self.state = state
        self.config = dict(config)
        self.trail: list[Taken] = []

    def enabled(self, action: Any) -> bool:
        return self.table.enabled(self.state, action)

    def step(self, action: Any, actor: str, note: str = "") -> Any:
        if not self.table.enabled(self.state, action):
            clauses = ", ".join(self.table.clauses_of(action)) if type(action) in self.table.by_kind else "none"
            who = "the implementation did" if actor == "observed" else "the rule drove"
            # The rules of the action that led here: an observed action the spec refuses usually breaks one of them.
            driven = next((t.action for t in reversed(self.trail) if t.actor == "rule"), None)
            after = ""
            if driven is not None and type(driven) in self.table.by_kind:
                after = (f", after {self.table.label(driven)} (clauses "
                         f"{', '.join(self.table.clauses_of(driven))})")
            raise LockstepFailure(
                f"{who} {action!r} ({note or self.table.label(action)}; clauses {clauses}), which the spec does not "
                f"allow here{after}\n{self.describe()}\n  spec state: {pprint.pformat(self.state, width=116)}")
        self.state = self.table.step(self.state, action)
        self.trail.append(Taken(actor, action, note))
        return self.state

    def describe(self, last: int = 60) -> str:
        """The configuration and the numbered steps (the last ``last`` of them)."""
        lines = [f"  configuration: {self.config}", f"  steps ({len(self.trail)}):"]
        shown = self.trail[-last:]
        first = len(self.trail) - len(shown) + 1
        if first > 1:
            lines.append(f"    ... {first - 1} earlier step(s)")
        for n, taken in enumerate(shown, first):
            note = f"  # {taken.note}" if taken.note else ""
            lines.append(f"    {n:3}. {taken.actor:8} {taken.action!r}{note}")
        return "\n".join(lines)


def configurations(names: Iterable[str], values: Mapping[str, st.SearchStrategy[Any]] | None = None,
                   pinned: Mapping[str, Any] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """A strategy of configurations: one value of each dimension, from the registry's strategy, a machine's own
    (``values``) or fixed (``pinned``)."""
    values = values or {}
    pinned = pinned or {}
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for name in names:
        dim = dimension(name)
        parts[name] = st.just(pinned[name]) if name in pinned else values.get(name, dim.values)
    return st.fixed_dictionaries(parts)


def record(machine: str, config: Mapping[str, Any]) -> None:
    """Note which dimensions a run drew at their default and which not."""
    seen = DRAWN.setdefault(machine, {})
    for name, value in config.items():
        dim = DIMENSIONS[name]
        flags = seen.setdefault(name, [False, False])
        flags[0 if dim.is_default(value, dim.default) else 1] = True


class LockstepMachine(RuleBasedStateMachine):
    """The base of every lockstep machine (see the module's docstring).

    A subclass sets ``TABLE`` (the area's ``TRANSITIONS``) and ``DIMENSIONS`` (the dimensions it draws; ``VALUES``
    narrows or widens a dimension's strategy for this machine), lists the action kinds its rules drive
    (``DRIVEN``) and those it reads from the implementation (``OBSERVED``): together every kind of the table.
    It implements :meth:`setup` (build both sides from the configuration, then call :meth:`begin`) and the two
    projections. ``PINNED`` fixes dimensions (``pinned()`` makes such a subclass: the default-only machine).
    """

    TABLE: ClassVar[TransitionTable[Any, Any, Any]]
    DIMENSIONS: ClassVar[tuple[str, ...]] = ()
    VALUES: ClassVar[Mapping[str, st.SearchStrategy[Any]]] = {}
    PINNED: ClassVar[Mapping[str, Any]] = {}
    DRIVEN: ClassVar[tuple[type[Any], ...]] = ()
    OBSERVED: ClassVar[tuple[type[Any], ...]] = ()

    def __init__(self) -> None:
        super().__init__()
        self.spec: Lockstep | None = None
        self.config: dict[str, Any] = {}
        self.deferred: list[str] = []

    # -------------------------------------------------------------------------------------------- the run's start
    @classmethod
    def configurations(cls) -> st.SearchStrategy[dict[str, Any]]:
        return configurations(cls.DIMENSIONS, cls.VALUES, cls.PINNED)

    @classmethod
    def machine_name(cls) -> str:
        """The name runs are recorded under (a pinned subclass records under its own)."""
        return cls.__name__

    @initialize(data=st.data())
    def configure(self, data: st.DataObject) -> None:
        """Draw the run's configuration (part of the machine's state) and build both sides from it."""
        config = data.draw(self.configurations(), label="configuration")
        self.config = config
        record(self.machine_name(), config)
        self.setup(config, data)

    def setup(self, config: dict[str, Any], data: st.DataObject) -> None:
        """Build the implementation and the spec state from ``config`` (``data`` draws what is not configuration:
        random starts, seeds); call :meth:`begin` once the spec's state is known."""
        raise NotImplementedError

    def begin(self, state: Any) -> None:
        """The spec side starts in ``state`` (which holds the configuration)."""
        self.spec = Lockstep(self.TABLE, state, self.config)

    # -------------------------------------------------------------------------------------------- stepping
    @property
    def state(self) -> Any:
        assert self.spec is not None, "the machine is not set up"
        return self.spec.state

    def can(self, action: Any) -> bool:
        """Whether the spec enables ``action`` now (a rule's precondition)."""
        return self.spec is not None and self.spec.enabled(action)

    def drive(self, action: Any, note: str = "") -> Any:
        """A rule's action: the spec steps first (it must be enabled); the caller then makes the implementation do
        it. Returns the spec's new state."""
        assert self.spec is not None
        return self.spec.step(action, "rule", note)

    def observe(self, action: Any, note: str = "") -> Any:
        """An action the implementation took, translated: it must be enabled where the spec is."""
        assert self.spec is not None
        return self.spec.step(action, "observed", note)

    def fail(self, message: str) -> NoReturn:
        """Fail with ``message``, the steps so far and the spec's state."""
        context = self.spec.describe() if self.spec is not None else ""
        raise LockstepFailure(f"{message}\n{context}")

    def fail_later(self, message: str) -> None:
        """A failure seen inside the implementation's own callbacks (a hook on its network or clock), where raising
        would reach the implementation's runtime and not the test: kept, and raised by the next :meth:`compare`."""
        self.deferred.append(message)

    def raise_deferred(self) -> None:
        if self.deferred:
            self.fail("\n".join(self.deferred))

    # -------------------------------------------------------------------------------------------- projections
    def project_spec(self) -> Mapping[str, Any]:
        """What a client can observe, as the spec's state says it must be: named parts."""
        raise NotImplementedError

    def project_system(self) -> Mapping[str, Any]:
        """The same parts, read off the implementation."""
        raise NotImplementedError

    def compare(self, where: str = "") -> None:
        """Both projections, part by part; a mismatch fails with every part that differs."""
        self.raise_deferred()
        if self.spec is None:
            return
        expected, actual = self.project_spec(), self.project_system()
        if set(expected) != set(actual):
            self.fail(f"the projections have different parts: spec {sorted(expected)}, system {sorted(actual)}")
        differ = [name for name in expected if expected[name] != actual[name]]
        if not differ:
            return
        parts = []
        for name in differ:
            parts.append(f"  {name}:\n    spec:           {pprint.pformat(expected[name], width=100)}\n"
                         f"    implementation: {pprint.pformat(actual[name], width=100)}")
        self.fail(f"lockstep: the implementation differs from the spec{f' ({where})' if where else ''} in "
                  f"{', '.join(differ)}\n" + "\n".join(parts))

    @invariant()
    def projections_agree(self) -> None:
        self.compare()


# ------------------------------------------------------------------------------------------------------ the tests


def pinned(machine: type[LockstepMachine], values: Mapping[str, Any] | None = None) -> type[LockstepMachine]:
    """``machine`` with dimensions fixed: ``pinned(M, {"broker.messageDelayLevel": "1s"})``, or every one of its
    dimensions at its default with ``pinned(M)``."""
    fixed = dict(values) if values else {name: DIMENSIONS[name].default for name in machine.DIMENSIONS}
    unknown = set(fixed) - set(machine.DIMENSIONS)
    assert not unknown, f"{machine.__name__} draws none of {sorted(unknown)}"
    return type(f"{machine.__name__}Pinned", (machine,), {"PINNED": {**machine.PINNED, **fixed}})


def check_kinds(machine: type[LockstepMachine]) -> None:
    """Every action kind of the machine's table is driven by a rule or observed, and none is both."""
    kinds = set(machine.TABLE.kinds)
    driven, observed = set(machine.DRIVEN), set(machine.OBSERVED)
    assert not driven & observed, f"{machine.__name__}: both driven and observed: {driven & observed}"
    missing = kinds - driven - observed
    assert not missing, f"{machine.__name__}: action kinds neither driven nor observed: " \
        f"{sorted(k.__name__ for k in missing)}"
    extra = (driven | observed) - kinds
    assert not extra, f"{machine.__name__}: kinds not in the table: {sorted(k.__name__ for k in extra)}"


def run_machine(machine: type[LockstepMachine], run: settings) -> None:
    """One run of ``machine`` under ``run``, then: each of its dimensions was drawn with a value other than the
    default at least once, and with the default at least once (the defaults are one draw among many)."""
    check_kinds(machine)
    DRAWN.pop(machine.machine_name(), None)
    run_state_machine_as_test(machine, settings=run)
    seen = DRAWN.get(machine.machine_name(), {})
    never = [name for name in machine.DIMENSIONS if name not in machine.PINNED and not seen.get(name, [0, 0])[1]]
    assert not never, f"{machine.__name__}: no run drew a non-default value of {never}"
    only = [name for name in machine.DIMENSIONS if name not in machine.PINNED and not seen.get(name, [0, 0])[0]]
    assert not only, f"{machine.__name__}: no run drew the default of {only}"


def machine_test(machine: type[LockstepMachine], examples: int, steps: int) -> Callable[[], None]:
    """The pytest test of ``machine``: ``examples`` programs of up to ``steps`` steps in the ci profile (see
    ``stateful_support.stateful_settings`` for deep), marked ``machine`` (what ``benchmarks/mutation.py
    --machines`` runs)."""

    @pytest.mark.machine
    def test() -> None:
        run_machine(machine, stateful_settings(examples, steps))

    test.__name__ = f"test_{machine.__name__}"
    test.__doc__ = machine.__doc__
    return test


def variant_caught(machine: type[LockstepMachine], module: ModuleType, old: str, new: str,
                   clauses: Iterable[str], examples: int = 60, steps: int = 30) -> str:
    """A broken copy of the implementation (``old`` -> ``new`` in ``module``) is caught by ``machine``: hypothesis
    finds a failing program, and the failure names one of ``clauses`` (or a projection part). Returns the text."""
    with refimpl_mutant(module, old, new):
        failure = hypothesis_finds_failure(machine, examples=examples, steps=steps)
    text = failure_text(failure)
    wanted = tuple(clauses)
    assert any(c in text for c in wanted), f"the failure names none of {wanted}: {text[:3000]}"
    return text


def passes(machine: type[LockstepMachine], examples: int = 60, steps: int = 30) -> None:
    """``machine`` finds nothing in ``examples`` programs (the default-only machine against a variant)."""
    search = settings(stateful_settings(examples, steps), max_examples=examples, stateful_step_count=steps,
                      derandomize=True, phases=[Phase.explicit, Phase.generate], report_multiple_bugs=False)
    run_state_machine_as_test(machine, settings=search)


def variant_needs(machine: type[LockstepMachine], dimension_name: str, module: ModuleType, old: str, new: str,
                  clauses: Iterable[str], examples: int = 60, steps: int = 30) -> None:
    """The variant is caught by ``machine`` and survives the machine with ``dimension_name`` pinned to its default:
    only a non-default configuration reveals it."""
    variant_caught(machine, module, old, new, clauses, examples, steps)
    default_only = pinned(machine, {dimension_name: DIMENSIONS[dimension_name].default})
    with refimpl_mutant(module, old, new):
        passes(default_only, examples, steps)
