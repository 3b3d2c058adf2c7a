"""Remoting: the invariants the bounded explorer checks on every state and step of the connection machine, and the
model."""

from __future__ import annotations

from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.remoting.machine import (
    TRANSITIONS,
    Action,
    Bounds,
    CallerTimesOut,
    Config,
    ConnectionState,
    ResponseArrives,
    call_of,
)
from rocketspec.spec.remoting.oracles import MAX_OPAQUES


def _never_answered(state: ConnectionState) -> bool:
    """A oneway request, one sent with the response bit and one of a code the server answers nothing to get no
    response."""
    return all(c is None or not ((c.oneway or c.flagged or c.silent) and (c.answers or c.seen)) for c in state.calls)


def _seen_at_most_once(state: ConnectionState) -> bool:
    return all(c is None or c.seen <= 1 for c in state.calls)


def _counts_ordered(state: ConnectionState) -> bool:
    """A caller sees only a response that arrived, which the server wrote for a copy that reached it."""
    return all(c is None or c.seen <= c.arrived <= c.answers <= c.copies <= state.config.max_copies
               for c in state.calls)


def _no_response_after_timeout(before: ConnectionState, action: Action, after: ConnectionState) -> bool:
    if not isinstance(action, ResponseArrives):
        return True
    was, now = call_of(before, action.opaque), call_of(after, action.opaque)
    assert was is not None and now is not None
    return now.seen == was.seen or was.waiting


def _first_response_in_time_is_seen(before: ConnectionState, action: Action, after: ConnectionState) -> bool:
    if not isinstance(action, ResponseArrives):
        return True
    was, now = call_of(before, action.opaque), call_of(after, action.opaque)
    assert was is not None and now is not None
    return not was.waiting or (now.seen == 1 and not now.waiting)


def _given_up_without_a_response(before: ConnectionState, action: Action, after: ConnectionState) -> bool:
    """A caller that times out or whose connection closes is failed, no response given (WIRE-5, WIRE-18)."""
    if not isinstance(action, CallerTimesOut):
        return True
    was, now = call_of(before, action.opaque), call_of(after, action.opaque)
    assert was is not None and now is not None
    return now.seen == was.seen and not now.waiting


INVARIANTS: tuple[Invariant[ConnectionState], ...] = (
    Invariant("a oneway request, or one marked as a response, is never answered",
              ("WIRE-4", "WIRE-5", "WIRE-7", "WIRE-12"), _never_answered),
    Invariant("a caller sees at most one response per request", ("WIRE-5", "WIRE-8"), _seen_at_most_once),
    Invariant("a caller sees only a response the server wrote for a copy it received", ("WIRE-4", "WIRE-8"),
              _counts_ordered),
)

STEP_INVARIANTS: tuple[StepInvariant[ConnectionState, Action], ...] = (
    StepInvariant("a response reaches only a waiting caller", ("WIRE-5",), _no_response_after_timeout),
    StepInvariant("the first response in time ends the wait", ("WIRE-5", "WIRE-8"), _first_response_in_time_is_seen),
    StepInvariant("a caller given up on, or failed by its connection closing, sees no response",
                  ("WIRE-5", "WIRE-18"), _given_up_without_a_response),
)


def model(slots: int = MAX_OPAQUES, max_copies: int = 2, flagged: bool = True, silent: bool = True
          ) -> Model[ConnectionState, Action]:
    """One connection with up to ``slots`` requests (oneway, plain, marked as a response, or of a code the server
    answers nothing to), each reaching the server up to ``max_copies`` times, answered, late or lost."""
    config = Config(slots=slots, max_copies=max_copies)
    return TRANSITIONS.model(
        Bounds(flagged=flagged, silent=silent),
        f"one connection, {slots} requests, up to {max_copies} copies of each"
        f"{', response bit' if flagged else ''}{', unanswered codes' if silent else ''}",
        (ConnectionState(config),),
        INVARIANTS,
        STEP_INVARIANTS,
    )
