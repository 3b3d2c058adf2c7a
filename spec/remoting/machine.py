"""Remoting: the state machine: frozen state, actions, ``enabled`` and ``step``."""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from rocketspec.spec.explorer import Invariant, Model, StepInvariant, require_enabled
from rocketspec.spec.remoting.clauses import CLAUSES
from rocketspec.spec.remoting.oracles import MAX_OPAQUES

# ---------------------------------------------------------------------------------------------------------------
# The connection machine (WIRE-4, WIRE-5)
# ---------------------------------------------------------------------------------------------------------------


@attrs.frozen(cache_hash=True)
class Call:
    """One request of the connection: ``oneway``; ``waiting``: the caller still waits; ``answered``: the server
    sent a response; ``seen``: how many responses the caller was given."""

    oneway: bool
    waiting: bool = True
    answered: bool = False
    seen: int = 0


@attrs.frozen(cache_hash=True)
class ConnectionState:
    """The calls by opaque (0..MAX_OPAQUES-1, ``None``: not sent yet)."""

    calls: tuple[Call | None, ...] = (None,) * MAX_OPAQUES


@attrs.frozen
class RequestSent:
    opaque: int
    oneway: bool


@attrs.frozen
class ServerAnswers:
    """The server processes a request and writes a response (never for a oneway, WIRE-4/5)."""

    opaque: int


@attrs.frozen
class ResponseArrives:
    """The response frame reaches the client, which hands it to the caller if it still waits (WIRE-5)."""

    opaque: int


@attrs.frozen
class CallerTimesOut:
    """The caller stops waiting; the request's entry is removed (``scanResponseTable``)."""

    opaque: int


Action = RequestSent | ServerAnswers | ResponseArrives | CallerTimesOut


@CLAUSES.oracle("WIRE-4", "WIRE-5")
def enabled(state: ConnectionState, action: Action) -> bool:
    """Whether ``action`` can happen: an opaque is used once; the server answers a request that is not oneway, once
    (WIRE-4, WIRE-5); a response arrives once it was written; a caller times out while it waits."""
    if not 0 <= action.opaque < MAX_OPAQUES:
        return False
    call = state.calls[action.opaque]
    if isinstance(action, RequestSent):
        return call is None
    if call is None:
        return False
    if isinstance(action, ServerAnswers):
        return not call.oneway and not call.answered
    if isinstance(action, ResponseArrives):
        return call.answered and call.seen == 0 and call.waiting
    if isinstance(action, CallerTimesOut):
        return call.waiting and not call.oneway
    raise TypeError(f"not a remoting action: {action!r}")


@CLAUSES.oracle("WIRE-5")
def step(state: ConnectionState, action: Action) -> ConnectionState:
    """The connection after ``action``: a response the caller still waits for is seen once and ends the wait; a
    late one is dropped (WIRE-5)."""
    require_enabled(enabled, state, action, Action)
    call = state.calls[action.opaque]
    if isinstance(action, RequestSent):
        new = Call(oneway=action.oneway, waiting=not action.oneway)
    elif isinstance(action, ServerAnswers):
        assert call is not None
        new = attrs.evolve(call, answered=True)
    elif isinstance(action, ResponseArrives):
        assert call is not None
        new = attrs.evolve(call, waiting=False, seen=call.seen + 1)
    else:
        assert call is not None
        new = attrs.evolve(call, waiting=False)
    calls = list(state.calls)
    calls[action.opaque] = new
    return ConnectionState(tuple(calls))


def _oneway_unanswered(state: ConnectionState) -> bool:
    return all(c is None or not (c.oneway and (c.answered or c.seen)) for c in state.calls)


def _seen_at_most_once(state: ConnectionState) -> bool:
    return all(c is None or c.seen <= 1 for c in state.calls)


def _seen_only_when_answered(state: ConnectionState) -> bool:
    return all(c is None or c.seen == 0 or c.answered for c in state.calls)


def _no_response_after_timeout(before: ConnectionState, action: Action, after: ConnectionState) -> bool:
    if not isinstance(action, ResponseArrives):
        return True
    was = before.calls[action.opaque]
    return was is not None and was.waiting


INVARIANTS: tuple[Invariant[ConnectionState], ...] = (
    Invariant("a oneway request is never answered", ("WIRE-4", "WIRE-5"), _oneway_unanswered),
    Invariant("a caller sees at most one response per request", ("WIRE-5",), _seen_at_most_once),
    Invariant("a caller sees only a response the server wrote", ("WIRE-4",), _seen_only_when_answered),
)

STEP_INVARIANTS: tuple[StepInvariant[ConnectionState, Action], ...] = (
    StepInvariant("a response reaches only a waiting caller", ("WIRE-5",), _no_response_after_timeout),
)


def candidate_actions(state: ConnectionState) -> Iterator[Action]:
    """Every action on every opaque (``enabled`` decides)."""
    for opaque in range(MAX_OPAQUES):
        yield RequestSent(opaque, oneway=False)
        yield RequestSent(opaque, oneway=True)
        yield ServerAnswers(opaque)
        yield ResponseArrives(opaque)
        yield CallerTimesOut(opaque)


def model() -> Model[ConnectionState, Action]:
    """One connection with up to :data:`MAX_OPAQUES` requests, oneway or not, answered, late or lost."""
    return Model(
        area="remoting",
        bounds=f"one connection, {MAX_OPAQUES} requests",
        initial=(ConnectionState(),),
        actions=candidate_actions,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )
