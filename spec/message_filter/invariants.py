"""Message filter: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.message_filter.machine import (
    TRANSITIONS,
    Action,
    Bounds,
    Deliver,
    FilterState,
    Heartbeat,
    Pull,
    pull_answer,
)
from rocketspec.spec.message_filter.oracles import check_client_config
from rocketspec.spec.message_filter.sql92 import sql92_compiles, sql92_matches
from rocketspec.spec.message_filter.tags import broker_tag_matches, client_tag_matches, is_tag_type, tags_code
from rocketspec.spec.protocol import EXPRESSION_TYPE_SQL92, ResponseCode


# ------------------------------------------------------------------------------------------------- state invariants
def _filter_data_compiles(state: FilterState) -> bool:
    return all(sql92_compiles(data.expression) for _topic, data in state.filters)


def _listener_gets_what_the_client_keeps(state: FilterState) -> bool:
    for consumer in state.consumers:
        for entry in (*consumer.received, *consumer.pending):
            message = state.message(entry)
            if message is None or not any(not is_tag_type(s.expression_type) or client_tag_matches(
                    s.expression, message.tags) for s in consumer.history if s.topic == entry[0]):
                return False
    return True


def _check_success_means_supported(state: FilterState) -> bool:
    for consumer in state.consumers:
        if consumer.check is ResponseCode.SUCCESS and not (
                state.enable_property_filter and any(s.expression_type == EXPRESSION_TYPE_SQL92
                                                     and sql92_compiles(s.expression) for s in consumer.history)):
            return False
    return True


def _registered_from_heartbeats(state: FilterState) -> bool:
    if (state.registered is None) != (not state.clients):
        return False
    sent = {s for c in state.consumers for s in c.history}
    return all(s in sent for s in state.registered or ())


INVARIANTS: tuple[Invariant[FilterState], ...] = (
    Invariant("filter data compiles", ("FILTER-18",), _filter_data_compiles),
    Invariant("a listener gets only what its client filter keeps", ("FILTER-3", "FILTER-26"),
              _listener_gets_what_the_client_keeps),
    Invariant("CHECK_CLIENT_CONFIG succeeds only where SQL92 is served", ("FILTER-17", "FILTER-25"),
              _check_success_means_supported),
    Invariant("registered subscriptions come from heartbeats", ("FILTER-22",), _registered_from_heartbeats),
)


# -------------------------------------------------------------------------------------------------- step invariants
def _version_never_drops(before: FilterState, action: Action, after: FilterState) -> bool:
    for topic, old in before.filters:
        new = after.filter_of(topic)
        if new is not None and new.version < old.version:
            return False
    return True


def _registered_version_never_drops(before: FilterState, action: Action, after: FilterState) -> bool:
    for old in before.registered or ():
        new = after.registered_of(old.topic)
        if new is not None and new.version < old.version:
            return False
    return True


def _only_heartbeats_register(before: FilterState, action: Action, after: FilterState) -> bool:
    if isinstance(action, Heartbeat):
        return True
    return (before.filters, before.registered, before.clients) == (after.filters, after.registered, after.clients)


def _served_only_with_the_filter_on(before: FilterState, action: Action, after: FilterState) -> bool:
    if not isinstance(action, Pull):
        return True
    _answer, used = pull_answer(before, action)
    return used is None or is_tag_type(used[0]) or before.enable_property_filter


def _filters_with_what_is_registered(before: FilterState, action: Action, after: FilterState) -> bool:
    if not isinstance(action, Pull) or action.subscription is not None:
        return True
    _answer, used = pull_answer(before, action)
    if used is None:
        return True
    registered = before.registered_of(action.topic)
    if registered is None or registered.version < action.sub_version or used[0] != registered.expression_type:
        return False
    if is_tag_type(used[0]):
        return used[1] == registered.expression
    data = before.filter_of(action.topic)
    return data is not None and data.version >= action.sub_version and used[1] == data.expression


def _returns_what_the_filter_keeps(before: FilterState, action: Action, after: FilterState) -> bool:
    if not isinstance(action, Pull):
        return True
    answer, used = pull_answer(before, action)
    if used is None:
        return answer.code not in (None, ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY,
                                   ResponseCode.PULL_NOT_FOUND)
    kind, expression = used
    queue = before.stored(action.topic, action.queue_id)
    if is_tag_type(kind):
        kept = [broker_tag_matches(expression, tags_code(m.tags)) for m in queue]
    else:
        kept = [expression is None or sql92_matches(expression, m.props) for m in queue]
    if not action.offset <= answer.next_begin <= len(queue):
        return False
    if list(answer.found) != [i for i in range(action.offset, answer.next_begin) if kept[i]]:
        return False
    if answer.code is None:
        return action.suspend and action.offset == len(queue)
    return (answer.code is ResponseCode.SUCCESS) == bool(answer.found)


def _delivers_what_pulls_brought(before: FilterState, action: Action, after: FilterState) -> bool:
    if isinstance(action, Deliver):
        old = before.consumer(action.client_id)
        return old is not None and (action.topic, action.queue_id, action.offset) in old.pending
    return all(before.consumer(c.client_id) is None or c.received == before.consumer(c.client_id).received  # type: ignore[union-attr]
               for c in after.consumers)


def _check_answer(before: FilterState, action: Action, after: FilterState) -> bool:
    for consumer in after.consumers:
        old = before.consumer(consumer.client_id)
        if old is not None and old.check != consumer.check:
            subs = [s for s in old.subscriptions if not is_tag_type(s.expression_type)]
            if consumer.check not in {check_client_config(True, s.expression_type, s.expression,
                                                          before.enable_property_filter) for s in subs}:
                return False
    return True


STEP_INVARIANTS: tuple[StepInvariant[FilterState, Action], ...] = (
    StepInvariant("filter data version never drops", ("FILTER-18",), _version_never_drops),
    StepInvariant("a registered subscription version never drops", ("FILTER-22",), _registered_version_never_drops),
    StepInvariant("only heartbeats register", ("FILTER-20", "FILTER-22"), _only_heartbeats_register),
    StepInvariant("SQL92 is served only with enablePropertyFilter", ("FILTER-21",), _served_only_with_the_filter_on),
    StepInvariant("a pull filters with what is registered", ("FILTER-20", "FILTER-22"),
                  _filters_with_what_is_registered),
    StepInvariant("a pull returns what the filter keeps, in order", ("FILTER-2", "FILTER-16", "FILTER-23"),
                  _returns_what_the_filter_keeps),
    StepInvariant("a listener gets what pulls brought", ("FILTER-26",), _delivers_what_pulls_brought),
    StepInvariant("CHECK_CLIENT_CONFIG answers as checkClientConfig", ("FILTER-17", "FILTER-25"), _check_answer),
)


# ------------------------------------------------------------------------------------------------------- the model
def model(bounds: Bounds | None = None) -> Model[FilterState, Action]:
    """Consumers of one group started (and one re-subscribed) with a tag expression, a SQL92 one and one that does not
    compile, at versions up to ``bounds.max_version``, a message stored in one queue, on a broker with and without
    enablePropertyFilter; heartbeats, checks, a rebalance, pulls (held or not) and deliveries in any order. One
    consumer pulls; the other heartbeats its own subscription into the group's."""
    bounds = bounds if bounds is not None else Bounds()
    description = (f"{len(bounds.clients)} consumers ({len(bounds.pulling)} pulling) x {len(bounds.expressions)} "
                   f"expressions (one invalid), versions 1..{bounds.max_version}, {bounds.max_messages} message(s) "
                   "in 1 queue, filter on and off")
    return TRANSITIONS.model(bounds, description, (FilterState(True), FilterState(False)), INVARIANTS,
                             STEP_INVARIANTS)
