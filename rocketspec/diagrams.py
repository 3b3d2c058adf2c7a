"""Diagrams of the spec's state machines, drawn from the machines themselves.

An area's machine has far too many states to draw (tens of thousands under the default bounds). A diagram draws a
*view* of it instead: each area names the entities of its state (one send, each consumer, each transactional
message, each call on a connection, ...) and the phase each entity is in (:data:`VIEWS`). The diagram explores the
area's default model completely (the same states ``rocketspec spec check`` explores), and draws an arrow from phase
``p`` to phase ``q`` labelled with a transition's label (the area's ``TRANSITIONS`` table names it) whenever some
reachable transition by an action of that kind moves one entity from ``p`` to ``q``. Nothing in a diagram is written
by hand: a rule changed in the table changes the picture.

``rocketspec spec diagrams --markdown`` writes ``docs/machines.md`` (Mermaid, rendered by GitHub).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from itertools import zip_longest
from typing import Any

import attrs

from rocketspec.spec import AREAS, area_module
from rocketspec.spec.explorer import Model
from rocketspec.spec.transitions import TransitionTable

#: The phase of an entity a state does not have yet (or any more): a view may grow, a call on a connection.
ABSENT = "(none)"
#: An area's view of one state: one phase name per entity, in a fixed order (entity i is the same one in every state).
View = Callable[[Any], tuple[str, ...]]


def _send(state: Any) -> tuple[str, ...]:
    outcome = state.outcome.kind.name
    if outcome != "PENDING":
        return (outcome,)
    if state.in_flight:
        return ("attempt in flight",)
    if state.attempts:
        return ("between attempts",)
    return ("new send",) if state.sends else ("no send yet",)


def _consumer(consumer: Any) -> str:
    if consumer.phase.name != "LIVE":
        return consumer.phase.name
    return "LIVE, table matches its view" if consumer.synced else "LIVE, to rebalance"


def _offsets(state: Any) -> tuple[str, ...]:
    held = "queue held" if state.held is not None else "queue not held"
    return (held + (", commit in flight" if state.in_flight else ""),)


def _pull(state: Any) -> tuple[str, ...]:
    if state.pq is None:
        return ("no process queue",)
    if state.pq.dropped:
        return ("queue dropped",)
    if state.held is not None:
        return ("pull held by the broker",)
    if state.fix is not None:
        return ("offset fix pending",)
    return ("pulling",)


def _filter(state: Any) -> tuple[str, ...]:
    data = state.filter_data
    if data is None:
        return ("no filter data",)
    return ("filter data of the latest version" if data.version >= state.sub_version else "filter data outdated",)


def _name_server(state: Any) -> tuple[str, ...]:
    module = area_module("name_server")
    live = {entry[0] for entry in state.live}
    known = {entry[2] for entry in state.addrs}
    return tuple("live" if addr in live else "registered, expired" if addr in known else "not registered"
                 for _name, _id, addr in module.BROKERS)


def _broker(state: Any) -> tuple[str, ...]:
    answer = state.answer
    return ("no request yet" if answer is None else f"sent: {answer.code.name}",)


def _call(call: Any) -> str:
    if call is None:
        return "not sent"
    if call.seen:
        return "answered"
    if call.answered:
        return "answered, caller waiting" if call.waiting else "answered after the caller gave up"
    if call.oneway:
        return "oneway sent"
    if call.flagged:
        return "sent marked as a response"
    return "waiting for the answer" if call.waiting else "caller gave up"


def _retrying(state: Any) -> tuple[str, ...]:
    """The retrying consumer: what it does with the messages it holds (RETRY-*)."""
    if any(not b.answered for b in state.batches):
        return ("the listener consumes",)
    if state.batches:
        return ("sending back",)
    if state.waiting:
        return ("waiting to consume again",)
    if state.held:
        return ("holding pulled messages",)
    return ("idle",)


VIEWS: dict[str, tuple[str, View]] = {
    "send_retry": ("the send in progress", _send),
    "rebalance": ("each consumer", lambda s: tuple(_consumer(c) for c in s.consumers)),
    "offset_commit": ("the queue's offsets", _offsets),
    "pull_correction": ("the pulled queue", _pull),
    "transaction_check": ("each transactional message (its local transaction)",
                          lambda s: tuple(p.name for p in s.phase)),
    "consume_retry": ("the consumer", _retrying),
    "message_filter": ("the broker's filter data of the group's SQL92 subscription", _filter),
    "name_server": ("each broker's registration", _name_server),
    "broker_requests": ("the last send", _broker),
    "remoting": ("each call on the connection", lambda s: tuple(_call(c) for c in s.calls)),
}


@attrs.frozen
class Diagram:
    """The phases of an area's view and the actions that move an entity between them."""

    area: str
    entity: str
    states: int
    initial: tuple[str, ...]
    edges: tuple[tuple[str, str, tuple[str, ...]], ...]  # (from, to, action names)

    def mermaid(self) -> str:
        phases = sorted({p for e in self.edges for p in e[:2]} | set(self.initial))
        ids = {p: f"s{i}" for i, p in enumerate(phases)}
        lines = ["stateDiagram-v2"]
        lines += [f'    state "{p}" as {ids[p]}' for p in phases]
        lines += [f"    [*] --> {ids[p]}" for p in self.initial]
        lines += [f"    {ids[a]} --> {ids[b]}: {', '.join(names)}" for a, b, names in self.edges]
        return "\n".join(lines)


def draw(area: str, model: Model[Any, Any] | None = None,
         table: TransitionTable[Any, Any, Any] | None = None) -> Diagram:
    """Explore ``model`` (the area's default one) completely and collect the moves of its view, each labelled by
    ``table`` (the area's; a copy of the area passes its own with its model)."""
    entity, view = VIEWS[area]
    module = area_module(area)
    table = table if table is not None else module.TRANSITIONS
    model = model if model is not None else module.model()
    seen = set(model.initial)
    queue = deque(model.initial)
    initial = {p for s in model.initial for p in view(s)}
    moves: dict[tuple[str, str], set[str]] = {}
    while queue:
        state = queue.popleft()
        before = view(state)
        for action in model.actions(state):
            if not model.enabled(state, action):
                continue
            after_state = model.step(state, action)
            after = view(after_state)
            for a, b in zip_longest(before, after, fillvalue=ABSENT):
                if a != b:
                    moves.setdefault((a, b), set()).add(table.label(action))
            if after_state not in seen:
                seen.add(after_state)
                queue.append(after_state)
    edges = tuple((a, b, tuple(sorted(names))) for (a, b), names in sorted(moves.items()))
    return Diagram(area, entity, len(seen), tuple(sorted(initial)), edges)


def markdown(areas: tuple[str, ...] = AREAS) -> str:
    """``docs/machines.md``: each area's diagram with what it shows."""
    out = ["# The state machines, drawn from the spec", "",
           "Generated by `rocketspec spec diagrams --markdown > docs/machines.md` (`rocketspec/diagrams.py`); a test",
           "checks that it is current. Each diagram is a view of an area's machine: the phases of one kind of entity",
           "of its state, and the transitions (each labelled as the area's `TRANSITIONS` table labels it) that move",
           "an entity from one phase to another",
           "in some reachable transition of the area's default model, explored completely.", ""]
    for area in areas:
        diagram = draw(area)
        summary = (area_module(area).__doc__ or "").strip().splitlines()[0]
        out += [f"## {area}", "", summary, "",
                f"Phases of {diagram.entity}; {diagram.states:,} states explored "
                f"({area_module(area).model().bounds}).", "", "```mermaid", diagram.mermaid(), "```", ""]
    return "\n".join(out)


__all__ = ["VIEWS", "Diagram", "View", "draw", "markdown"]
