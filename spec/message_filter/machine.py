"""Message filter: the state machine: frozen state, actions, ``enabled`` and ``step``."""

from __future__ import annotations

import attrs

from rocketspec.spec.explorer import Invariant, Model, StepInvariant, require_enabled
from rocketspec.spec.message_filter.clauses import CLAUSES
from rocketspec.spec.message_filter.oracles import FilterData, pull_filter_answer, register_filter_data
from rocketspec.spec.message_filter.sql92 import sql92_compiles
from rocketspec.spec.protocol import EXPRESSION_TYPE_SQL92, ResponseCode


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
