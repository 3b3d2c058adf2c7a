"""Remoting: the connection machine as a transition table: frozen state and actions, guards and effects.

One connection: a client sends requests under opaques (oneway, plain, or with the response bit set), each copy that
reaches the server is processed and, unless it is oneway or marked as a response, answered; responses reach the
client, which hands the first one to the caller if it still waits (WIRE-4, WIRE-5, WIRE-7, WIRE-8).
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from rocketspec.spec.protocol import SerializeType
from rocketspec.spec.remoting.clauses import CLAUSES
from rocketspec.spec.remoting.oracles import MAX_OPAQUES
from rocketspec.spec.transitions import Transition, TransitionTable

# ---------------------------------------------------------------------------------------------------------------
# State and actions
# ---------------------------------------------------------------------------------------------------------------


@attrs.frozen
class Config:
    """What the connection is configured with: the serialize type its requests are written in (the response to
    each is written in it too, WIRE-4), how many requests it carries (the model's bound), and how many copies of a
    request may reach the server (more than one: the network duplicated the frame)."""

    serialize_type: SerializeType = SerializeType.JSON
    slots: int = MAX_OPAQUES
    max_copies: int = 2


@attrs.frozen(cache_hash=True)
class Call:
    """One request of the connection.

    ``oneway``: sent with the oneway bit; ``flagged``: sent with the response bit (WIRE-7); ``silent``: a code the
    server has no processor for and answers nothing to (a name server, WIRE-12); ``waiting``: the caller still
    waits; ``copies``: copies that reached the server; ``answers``: responses the server wrote; ``arrived``:
    responses that reached the client; ``seen``: responses the caller was given.
    """

    oneway: bool
    flagged: bool = False
    silent: bool = False
    waiting: bool = True
    copies: int = 0
    answers: int = 0
    arrived: int = 0
    seen: int = 0

    @property
    def answered(self) -> bool:
        return self.answers > 0


@attrs.frozen(cache_hash=True)
class ConnectionState:
    """The connection's configuration and its calls by opaque (``None``: not sent yet)."""

    config: Config = Config()
    calls: tuple[Call | None, ...] = attrs.field()

    @calls.default
    def _no_calls(self) -> tuple[Call | None, ...]:
        return (None,) * self.config.slots


@attrs.frozen
class RequestSent:
    """The caller sends a request under ``opaque``: ``oneway`` sets the oneway bit, ``flagged`` the response bit;
    ``silent``: its code is one the server answers nothing to (WIRE-12)."""

    opaque: int
    oneway: bool
    flagged: bool = False
    silent: bool = False


@attrs.frozen
class RequestArrives:
    """A copy of the request reaches the server (a second copy: the network duplicated the frame)."""

    opaque: int


@attrs.frozen
class ServerAnswers:
    """The server processes a copy of the request and writes a response."""

    opaque: int


@attrs.frozen
class ResponseArrives:
    """A response frame reaches the client, which hands it to the caller if it still waits and has seen none."""

    opaque: int


@attrs.frozen
class CallerTimesOut:
    """The caller stops waiting: its timeout passed (``scanResponseTable``) or its connection closed (``failFast``,
    WIRE-18); the request's entry is removed."""

    opaque: int


Action = RequestSent | RequestArrives | ServerAnswers | ResponseArrives | CallerTimesOut


# ---------------------------------------------------------------------------------------------------------------
# Guards and effects
# ---------------------------------------------------------------------------------------------------------------


def call_of(state: ConnectionState, opaque: int) -> Call | None:
    """The call under ``opaque`` (None: not sent, or an opaque past the connection's slots)."""
    return state.calls[opaque] if 0 <= opaque < len(state.calls) else None


def _with(state: ConnectionState, opaque: int, call: Call) -> ConnectionState:
    calls = list(state.calls)
    calls[opaque] = call
    return attrs.evolve(state, calls=tuple(calls))


def _can_send(state: ConnectionState, action: RequestSent) -> bool:
    return 0 <= action.opaque < len(state.calls) and state.calls[action.opaque] is None \
        and action.oneway + action.flagged + action.silent <= 1


def _sent(state: ConnectionState, action: RequestSent) -> ConnectionState:
    """An opaque is used once; a oneway caller does not wait, any other does (WIRE-4, WIRE-5, WIRE-12)."""
    return _with(state, action.opaque, Call(oneway=action.oneway, flagged=action.flagged, silent=action.silent,
                                            waiting=not action.oneway))


def _can_arrive(state: ConnectionState, action: RequestArrives) -> bool:
    call = call_of(state, action.opaque)
    return call is not None and call.copies < state.config.max_copies


def _arrived(state: ConnectionState, action: RequestArrives) -> ConnectionState:
    """Every copy of a request that reaches the server is processed on its own (WIRE-8)."""
    call = call_of(state, action.opaque)
    assert call is not None
    return _with(state, action.opaque, attrs.evolve(call, copies=call.copies + 1))


def _can_answer(state: ConnectionState, action: ServerAnswers) -> bool:
    call = call_of(state, action.opaque)
    return call is not None and not (call.oneway or call.flagged or call.silent) and call.answers < call.copies


def _answered(state: ConnectionState, action: ServerAnswers) -> ConnectionState:
    """The server answers each copy of a request that is neither oneway, nor marked as a response, nor of a code it
    answers nothing to, under its opaque (WIRE-4, WIRE-7, WIRE-8, WIRE-12)."""
    call = call_of(state, action.opaque)
    assert call is not None
    return _with(state, action.opaque, attrs.evolve(call, answers=call.answers + 1))


def _can_reach(state: ConnectionState, action: ResponseArrives) -> bool:
    call = call_of(state, action.opaque)
    return call is not None and call.arrived < call.answers


def _reached(state: ConnectionState, action: ResponseArrives) -> ConnectionState:
    """A response the caller still waits for is seen once and ends the wait; a late or second one is dropped
    (WIRE-5, WIRE-8)."""
    call = call_of(state, action.opaque)
    assert call is not None
    call = attrs.evolve(call, arrived=call.arrived + 1)
    if call.waiting and call.seen == 0:
        call = attrs.evolve(call, waiting=False, seen=1)
    return _with(state, action.opaque, call)


def _can_time_out(state: ConnectionState, action: CallerTimesOut) -> bool:
    call = call_of(state, action.opaque)
    return call is not None and call.waiting


def _timed_out(state: ConnectionState, action: CallerTimesOut) -> ConnectionState:
    """The caller gives up, or its connection closed and failed it without a response (WIRE-18); what arrives for
    the request afterwards is dropped (WIRE-5)."""
    call = call_of(state, action.opaque)
    assert call is not None
    return _with(state, action.opaque, attrs.evolve(call, waiting=False))


# ---------------------------------------------------------------------------------------------------------------
# Candidates and the table
# ---------------------------------------------------------------------------------------------------------------


@attrs.frozen
class Bounds:
    """What a model tries: requests with the response bit, and requests the server answers nothing to, or not."""

    flagged: bool = True
    silent: bool = True


def _send_candidates(state: ConnectionState, bounds: Bounds) -> Iterator[RequestSent]:
    for opaque, call in enumerate(state.calls):
        if call is None:
            yield RequestSent(opaque, oneway=False)
            yield RequestSent(opaque, oneway=True)
            if bounds.flagged:
                yield RequestSent(opaque, oneway=False, flagged=True)
            if bounds.silent:
                yield RequestSent(opaque, oneway=False, silent=True)


def _sent_opaques(state: ConnectionState) -> list[int]:
    return [opaque for opaque, call in enumerate(state.calls) if call is not None]


def _arrive_candidates(state: ConnectionState, bounds: Bounds) -> list[RequestArrives]:
    return [RequestArrives(opaque) for opaque in _sent_opaques(state)]


def _answer_candidates(state: ConnectionState, bounds: Bounds) -> list[ServerAnswers]:
    return [ServerAnswers(opaque) for opaque in _sent_opaques(state)]


def _reach_candidates(state: ConnectionState, bounds: Bounds) -> list[ResponseArrives]:
    return [ResponseArrives(opaque) for opaque in _sent_opaques(state)]


def _time_out_candidates(state: ConnectionState, bounds: Bounds) -> list[CallerTimesOut]:
    return [CallerTimesOut(opaque) for opaque in _sent_opaques(state)]


TRANSITIONS: TransitionTable[ConnectionState, Action, Bounds] = TransitionTable("remoting", CLAUSES, (
    Transition(RequestSent, _can_send, _sent, _send_candidates, ("WIRE-4", "WIRE-5", "WIRE-12")),
    Transition(RequestArrives, _can_arrive, _arrived, _arrive_candidates, ("WIRE-8",)),
    Transition(ServerAnswers, _can_answer, _answered, _answer_candidates, ("WIRE-4", "WIRE-7", "WIRE-8", "WIRE-12")),
    Transition(ResponseArrives, _can_reach, _reached, _reach_candidates, ("WIRE-5", "WIRE-8")),
    Transition(CallerTimesOut, _can_time_out, _timed_out, _time_out_candidates, ("WIRE-5", "WIRE-18")),
))

#: Whether an action can happen in a state (its transition's guard).
enabled = TRANSITIONS.enabled
#: The state after an enabled action (its transition's effect).
step = TRANSITIONS.step
