"""Consume retry: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

import itertools

from rocketspec.spec.consume_retry.machine import (
    Action,
    BrokerAnswers,
    Copy,
    FallbackFails,
    FallbackStored,
    ListenerReturns,
    LocalReconsume,
    Path,
    Phase,
    Pull,
    RetryState,
    ScheduleDelivers,
    SendBackFails,
    TimePasses,
    _broker_max,
    enabled,
    step,
)
from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.protocol import (
    DEFAULT_MAX_RECONSUME_TIMES,
    DEFAULT_RETRY_QUEUE_NUMS,
    DELAY_LEVEL_MILLIS,
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
    VERSION_V3_0_11,
    VERSION_V4_9_8,
    ConsumeStatus,
    MessageModel,
)

# ------------------------------------------------------------------------------------------------------------
# Invariants (computed from the protocol tables, not from the oracles above)
# ------------------------------------------------------------------------------------------------------------


def _expected_level(copy: Copy) -> int:
    # The broker honours a positive level the listener asked for; otherwise (and always for the client's own
    # send) the level is 3 + the previous count, i.e. the copy's count + 2.
    asked = copy.context_level if copy.path is Path.BROKER else 0
    level = asked if asked > 0 else copy.reconsume_times + 2
    if copy.retried:
        # A retried client send keeps DELAY 3 + the consumer's count but restarts its count at 0 (RETRY-16).
        level = copy.made_from + 3
    return min(level, len(DELAY_LEVEL_MILLIS))


def _dlq_exactly_at_threshold(state: RetryState) -> bool:
    limit = _broker_max(state)
    for copy in state.copies:
        if copy.path is Path.BROKER:
            should_die = copy.reconsume_times - 1 >= limit or copy.context_level < 0
        elif copy.retried:
            # Neither count nor max reaches the broker: 0 against the group's retryMaxTimes (RETRY-16, RETRY-11).
            should_die = 0 >= state.group_max
        else:
            should_die = copy.reconsume_times >= limit
        if copy.dead != should_die:
            return False
    return True


def _delivery_sequence(state: RetryState) -> bool:
    deliveries = state.deliveries
    if deliveries and deliveries[0].reconsume_times != state.start_times:
        return False
    restarts = {c.deliveries_before for c in state.copies if c.retried}
    last_store = deliveries[0].reconsume_times if deliveries else 0
    for n, (before, after) in enumerate(itertools.pairwise(deliveries), start=1):
        if n in restarts:
            # The copy a retried fallback send stored starts again at 0 (RETRY-16).
            if after.reconsume_times != 0:
                return False
            last_store = 0
            continue
        one_more = after.reconsume_times == before.reconsume_times + 1
        if after.local:
            if not one_more:
                return False
            continue
        if not (one_more or (before.local and after.reconsume_times == last_store + 1)):
            return False
        last_store = after.reconsume_times
    return True


def _redelivery_not_early(state: RetryState) -> bool:
    live = [c for c in state.copies if not c.dead]
    store_deliveries = [d for d in state.deliveries if not d.local][1:]
    for copy, delivery in zip(live, store_deliveries, strict=False):
        if delivery.at_ms < copy.stored_at_ms + DELAY_LEVEL_MILLIS[_expected_level(copy) - 1]:
            return False
    for before, after in itertools.pairwise(state.deliveries):
        if after.local and after.at_ms < before.at_ms + SEND_BACK_LOCAL_RETRY_DELAY_MS:
            return False
    return True


def _dead_is_final(state: RetryState) -> bool:
    for n, copy in enumerate(state.copies):
        if copy.dead:
            return (
                n == len(state.copies) - 1
                and len(state.deliveries) == copy.deliveries_before
                and state.phase in (Phase.SCHEDULED, Phase.DEAD)
            )
    return state.phase is not Phase.DEAD


def _broadcast_drops(state: RetryState) -> bool:
    if state.message_model is not MessageModel.BROADCASTING:
        return True
    return not state.copies and len(state.deliveries) <= 1 and state.phase not in (
        Phase.SENDING_BACK, Phase.FALLBACK, Phase.LOCAL_WAIT,
    )


def _copies_count_up_by_one(before: RetryState, _action: Action, after: RetryState) -> bool:
    if len(after.copies) == len(before.copies):
        return True
    copy = after.copies[-1]
    source = before.stored_times if copy.path is Path.BROKER else before.local_times
    expected = 0 if copy.retried else source + 1
    return len(after.copies) == len(before.copies) + 1 and copy.reconsume_times == expected


def _no_retry_queue_discards(before: RetryState, action: Action, after: RetryState) -> bool:
    if not isinstance(action, BrokerAnswers) or before.retry_queue_nums > 0:
        return True
    return after.phase is Phase.DISCARDED and after.copies == before.copies


def _final_is_final(before: RetryState, _action: Action, after: RetryState) -> bool:
    return not before.phase.final


def _retry_copy_is_delayed(before: RetryState, _action: Action, after: RetryState) -> bool:
    # A new copy bound for %RETRY% always passes through the schedule topic; so does a client's dead letter.
    if len(after.copies) == len(before.copies):
        return True
    copy = after.copies[-1]
    via_schedule = not copy.dead or copy.path is Path.CLIENT
    scheduled = after.phase is Phase.SCHEDULED
    return scheduled == via_schedule and (after.phase is Phase.DEAD) == (not via_schedule)


INVARIANTS: tuple[Invariant[RetryState], ...] = (
    Invariant("dlq exactly at the threshold", ("RETRY-6", "RETRY-7", "RETRY-8", "RETRY-11"),
              _dlq_exactly_at_threshold),
    Invariant("deliveries count up by one", ("RETRY-25", "RETRY-17", "RETRY-18"), _delivery_sequence),
    Invariant("redelivery not before its delay", ("RETRY-26", "RETRY-2", "RETRY-3", "RETRY-8", "RETRY-16"),
              _redelivery_not_early),
    Invariant("dead letter is final", ("RETRY-27", "RETRY-7"), _dead_is_final),
    Invariant("broadcasting drops failures", ("RETRY-14",), _broadcast_drops),
)

STEP_INVARIANTS: tuple[StepInvariant[RetryState, Action], ...] = (
    StepInvariant("each copy is one more", ("RETRY-9", "RETRY-16", "RETRY-18"), _copies_count_up_by_one),
    StepInvariant("retryQueueNums <= 0 drops", ("RETRY-5", "RETRY-4"), _no_retry_queue_discards),
    StepInvariant("nothing after the end", ("RETRY-27", "RETRY-5", "RETRY-14"), _final_is_final),
    StepInvariant("retry copies are delayed", ("RETRY-8", "RETRY-12", "RETRY-7"), _retry_copy_is_delayed),
)


def _candidates(levels: tuple[int, ...]) -> tuple[Action, ...]:
    listener: list[Action] = [
        ListenerReturns(ConsumeStatus.CONSUME_SUCCESS),
        ListenerReturns(ConsumeStatus.CONSUME_SUCCESS, ack_index=-1),
        ListenerReturns(None),
    ]
    listener += [ListenerReturns(ConsumeStatus.RECONSUME_LATER, delay_level=level) for level in levels]
    return (
        Pull(), *listener, BrokerAnswers(), SendBackFails(), FallbackStored(), FallbackStored(retried=True),
        FallbackFails(), TimePasses(), ScheduleDelivers(), LocalReconsume(),
    )


def model(
    max_reconsume_times: int = 3,
    faults: int = 4,
    listener_levels: tuple[int, ...] = (0, 1, -1),
    high_start: int | None = 15,
) -> Model[RetryState, Action]:
    """One message through its retry chain, for each of these starting points.

    A new client (maxReconsumeTimes ``max_reconsume_times`` sent in requests) and an old one (version
    V3_0_11, so the group's retryMaxTimes = ``max_reconsume_times`` rules); a group with retryQueueNums 0; a
    broadcasting consumer; and, when ``high_start`` is set, a message already at that reconsumeTimes with a
    max of ``high_start + 2`` so that delay levels pass the table's end. ``faults`` RPC failures may be
    injected (a failed first attempt of the client's send that a retry then stores counts as one, explored for
    the first copy of a chain that starts at 0); the listener may ask for each of ``listener_levels`` when it
    fails.
    """
    def start(model_: MessageModel, version: int, consumer_max: int, group_max: int, queues: int,
              times: int = 0) -> RetryState:
        return RetryState(model_, version, consumer_max, group_max, queues, times, stored_times=times,
                          local_times=times, faults_left=faults)

    new, old = VERSION_V4_9_8, VERSION_V3_0_11
    group_default, queues = DEFAULT_MAX_RECONSUME_TIMES, DEFAULT_RETRY_QUEUE_NUMS
    initial = [
        start(MessageModel.CLUSTERING, new, max_reconsume_times, group_default, queues),
        start(MessageModel.CLUSTERING, old, group_default, max_reconsume_times, queues),
        start(MessageModel.CLUSTERING, new, max_reconsume_times, group_default, 0),
        start(MessageModel.BROADCASTING, new, max_reconsume_times, group_default, queues),
    ]
    if high_start is not None:
        initial.append(start(MessageModel.CLUSTERING, new, high_start + 2, group_default, queues, high_start))
    candidates = _candidates(listener_levels)
    unretried = tuple(a for a in candidates if a != FallbackStored(retried=True))

    def actions(state: RetryState) -> tuple[Action, ...]:
        # A retried fallback send restarts the count at 0 (RETRY-16), which makes chains long: it is explored
        # for the first copy of a chain that starts at 0 only.
        return candidates if state.start_times == 0 and not state.copies else unretried

    return Model(
        area="consume_retry",
        bounds=(
            f"1 message, max {max_reconsume_times} (new and old client), retryQueueNums 1 and 0, "
            f"broadcasting, start {high_start}; {faults} RPC faults; listener levels {listener_levels}; "
            "a retried fallback send for a chain's first copy"
        ),
        initial=tuple(initial),
        actions=actions,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )
