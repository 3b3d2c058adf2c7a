"""Consume retry: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from rocketspec.spec.consume_retry.machine import TRANSITIONS, Bounds
from rocketspec.spec.consume_retry.state import (
    DLQ,
    SCHEDULE,
    Action,
    BrokerAnswers,
    ChainHistory,
    Copy,
    DeadLetterOutcome,
    DeadLetterSent,
    FallbackStored,
    ListenerReturns,
    Path,
    RetryConfig,
    RetryState,
)
from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.protocol import (
    DEFAULT_MAX_RECONSUME_TIMES,
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
    VERSION_V3_0_11,
    VERSION_V3_4_9,
    ConsumeOrderlyStatus,
    MessageModel,
)

# ------------------------------------------------------------------------------------------------------------
# Invariants (computed from the protocol tables and the configuration, not from the oracles)
# ------------------------------------------------------------------------------------------------------------


def _broker_limit(cfg: RetryConfig) -> int:
    return cfg.limit if cfg.client_version >= VERSION_V3_4_9 else cfg.group_max


def _expected_level(copy: Copy, max_level: int) -> int:
    # The broker honours a positive level the listener asked for; otherwise (and always for the client's own
    # send) the level is 3 + the previous count, i.e. the copy's count + 2.
    asked = copy.context_level if copy.path is Path.BROKER else 0
    level = asked if asked > 0 else copy.reconsume_times + 2
    if copy.retried or copy.path is Path.ORDERLY:
        # A retried send keeps DELAY 3 + the consumer's count but restarts its count at 0 (RETRY-16); the orderly
        # dead letter carries the count itself (RETRY-23).
        level = copy.made_from + 3
    return min(level, max_level)


def _concurrent_chains(state: RetryState) -> Iterable[ChainHistory]:
    return () if state.config.orderly else state.chains


def _dlq_exactly_at_threshold(state: RetryState) -> bool:
    cfg = state.config
    limit = _broker_limit(cfg)
    for chain in state.chains:
        for copy in chain.copies:
            if copy.retried:
                # Neither count nor max reaches the broker: 0 against the group's retryMaxTimes (RETRY-16, RETRY-11).
                should_die = 0 >= cfg.group_max
            elif copy.path is Path.BROKER:
                should_die = copy.reconsume_times - 1 >= limit or copy.context_level < 0
            else:
                should_die = copy.reconsume_times >= limit
            if copy.dead != should_die:
                return False
    return True


def _delivery_sequence(state: RetryState) -> bool:
    for chain in _concurrent_chains(state):
        deliveries = chain.deliveries
        if deliveries and deliveries[0].reconsume_times != 0:
            return False
        restarts = {c.deliveries_before for c in chain.copies if c.retried}
        last_store = 0
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
    table = state.config.delay_table
    for chain in _concurrent_chains(state):
        live = [c for c in chain.copies if not c.dead]
        store_deliveries = [d for d in chain.deliveries if not d.local][1:]
        for copy, delivery in zip(live, store_deliveries, strict=False):
            if delivery.at_ms < copy.stored_at_ms + table[_expected_level(copy, len(table)) - 1]:
                return False
        for before, after in itertools.pairwise(chain.deliveries):
            if after.local and after.at_ms < before.at_ms + SEND_BACK_LOCAL_RETRY_DELAY_MS:
                return False
    return True


def _dead_is_final(state: RetryState) -> bool:
    if any(h.source[0] in (DLQ, SCHEDULE) for h in state.held):
        return False
    for chain in _concurrent_chains(state):
        for n, copy in enumerate(chain.copies):
            if copy.dead:
                return n == len(chain.copies) - 1 and len(chain.deliveries) == copy.deliveries_before
    return True


def _broadcast_drops(state: RetryState) -> bool:
    if state.config.message_model is not MessageModel.BROADCASTING:
        return True
    return all(not c.copies and len(c.deliveries) <= 1 for c in state.chains) and not state.waiting


def _one_batch_per_orderly_queue(state: RetryState) -> bool:
    if not state.config.orderly:
        return True
    queues = [b.queue for b in state.batches] + [w.queue for w in state.waiting]
    if len(queues) != len(set(queues)):
        return False
    # Every message the orderly consumer holds is at or after its queue's first unfinished offset.
    return all(h.source[2] >= state.front(h.source[:2]) for h in state.held)


def _orderly_dead_letters_at_the_limit(state: RetryState) -> bool:
    limit = state.config.limit
    return all(c.made_from >= limit for chain in state.chains for c in chain.copies if c.path is Path.ORDERLY)


def _committed_behind_unfinished(state: RetryState) -> bool:
    for queue, offset in state.committed:
        if any(h.source[:2] == queue and h.source[2] < offset for h in state.held):
            return False
    return True


INVARIANTS: tuple[Invariant[RetryState], ...] = (
    Invariant("dlq exactly at the threshold", ("RETRY-6", "RETRY-7", "RETRY-8", "RETRY-11", "RETRY-23"),
              _dlq_exactly_at_threshold),
    Invariant("deliveries count up by one", ("RETRY-25", "RETRY-17", "RETRY-18"), _delivery_sequence),
    Invariant("redelivery not before its delay", ("RETRY-26", "RETRY-1", "RETRY-2", "RETRY-3", "RETRY-8",
                                                  "RETRY-16"), _redelivery_not_early),
    Invariant("dead letter is final", ("RETRY-27", "RETRY-7"), _dead_is_final),
    Invariant("broadcasting drops failures", ("RETRY-14",), _broadcast_drops),
    Invariant("one orderly batch per queue, in order", ("RETRY-29", "RETRY-21"), _one_batch_per_orderly_queue),
    Invariant("orderly dead letters only at the limit", ("RETRY-21", "RETRY-22", "RETRY-23"),
              _orderly_dead_letters_at_the_limit),
    Invariant("committed offsets never pass a held message", ("RETRY-28", "RETRY-17", "RETRY-29"),
              _committed_behind_unfinished),
)


def _new_copies(before: RetryState, after: RetryState) -> list[Copy]:
    return [c for b, a in zip(before.chains, after.chains, strict=False) for c in a.copies[len(b.copies):]]


def _copies_count_up_by_one(before: RetryState, action: Action, after: RetryState) -> bool:
    copies = _new_copies(before, after)
    if not copies:
        return True
    if len(copies) != 1 or not isinstance(action, BrokerAnswers | FallbackStored | DeadLetterSent):
        return False
    held = before.holding(action.key)
    source = before.find(action.key)
    assert held is not None and source is not None
    if isinstance(action, BrokerAnswers):
        expected = source.reconsume_times + 1
    elif isinstance(action, FallbackStored):
        expected = 0 if action.retried else held.reconsume_times + 1
    else:
        expected = 0 if action.outcome is DeadLetterOutcome.RETRIED else held.reconsume_times
    return copies[0].reconsume_times == expected


def _no_retry_queue_discards(before: RetryState, action: Action, after: RetryState) -> bool:
    if not isinstance(action, BrokerAnswers) or before.config.retry_queue_nums > 0:
        return True
    return after.stored == before.stored


def _nothing_after_success(before: RetryState, action: Action, after: RetryState) -> bool:
    if before.config.orderly:
        return True
    return all(b.deliveries == a.deliveries and b.copies == a.copies
               for b, a in zip(before.chains, after.chains, strict=False) if b.consumed)


def _retry_copy_is_delayed(before: RetryState, action: Action, after: RetryState) -> bool:
    # A new copy bound for %RETRY% always passes through the schedule topic; so does a client's dead letter.
    copies = _new_copies(before, after)
    if not copies:
        return True
    new = after.stored[len(before.stored):]
    via_schedule = not copies[0].dead or copies[0].path is not Path.BROKER
    return len(new) == 1 and (new[0].key[0] == SCHEDULE) == via_schedule and (new[0].key[0] == DLQ) != via_schedule


def _orderly_suspension_counts(before: RetryState, action: Action, after: RetryState) -> bool:
    if not before.config.orderly or not isinstance(action, ListenerReturns):
        return True
    if action.status is ConsumeOrderlyStatus.SUCCESS:
        return True
    for key in action.members:
        was, now = before.holding(key), after.holding(key)
        assert was is not None
        raised = was.reconsume_times < before.config.limit
        if now is None or now.reconsume_times != was.reconsume_times + (1 if raised else 0):
            return False
    return True


STEP_INVARIANTS: tuple[StepInvariant[RetryState, Action], ...] = (
    StepInvariant("each copy is one more", ("RETRY-9", "RETRY-16", "RETRY-18", "RETRY-23"), _copies_count_up_by_one),
    StepInvariant("retryQueueNums <= 0 drops", ("RETRY-5", "RETRY-4"), _no_retry_queue_discards),
    StepInvariant("nothing after a success", ("RETRY-13", "RETRY-5", "RETRY-14"), _nothing_after_success),
    StepInvariant("retry copies are delayed", ("RETRY-8", "RETRY-12", "RETRY-7"), _retry_copy_is_delayed),
    StepInvariant("a suspended batch counts one more", ("RETRY-21",), _orderly_suspension_counts),
)

#: A short delay table (1 s 5 s 10 s), so that chains pass its last level.
SHORT_TABLE = (1_000, 5_000, 10_000)


def model(max_reconsume_times: int = 3, faults: int = 4, listener_levels: tuple[int, ...] = (0, 1, -1),
          orderly: bool = True, batches: bool = True) -> Model[RetryState, Action]:
    """The consumer and its messages, from these starting points.

    One message: a new client (maxReconsumeTimes ``max_reconsume_times`` sent in requests), an old one (version
    V3_0_11, so the group's retryMaxTimes = ``max_reconsume_times`` rules), a group with retryQueueNums 0, a
    broadcasting consumer, a broker whose delay table has three levels (so that levels pass its end), (max 1, no
    faults) a broker restarting once when a parked copy comes due before its schedule's first run, and an orderly
    consumer (max 1, no faults) whose locks are refused once while a batch is suspended; with
    ``batches``, two messages consumed in batches of two (max 1); with ``orderly``, two messages of one queue
    consumed orderly in batches of two (max 1). ``faults`` RPC failures may be injected (one in the batch setups);
    a retried first attempt of the consumer's own send is explored for the first copy of a chain only; the listener
    may ask for each of ``listener_levels`` when it fails.
    """
    def start(faults_left: int = faults, **config: object) -> RetryState:
        return RetryState(RetryConfig(**config), faults_left=faults_left)  # type: ignore[arg-type]

    group_default = DEFAULT_MAX_RECONSUME_TIMES
    one = Bounds(1, listener_levels)
    initial = [
        start(max_reconsume_times=max_reconsume_times),
        start(max_reconsume_times=group_default, client_version=VERSION_V3_0_11, group_max=max_reconsume_times),
        start(max_reconsume_times=max_reconsume_times, retry_queue_nums=0),
        start(max_reconsume_times=max_reconsume_times, message_model=MessageModel.BROADCASTING),
        start(max_reconsume_times=max_reconsume_times, delay_table=SHORT_TABLE),
    ]
    restart = start(0, max_reconsume_times=1, delay_table=SHORT_TABLE)
    locks = start(0, max_reconsume_times=1, orderly=True, suspend_ms=SHORT_TABLE[0])
    two: list[RetryState] = []
    if batches:
        two.append(start(1, max_reconsume_times=1, batch_max=2))
    if orderly:
        two.append(start(1, max_reconsume_times=1, batch_max=2, orderly=True))

    special = {restart.config: Bounds(1, listener_levels, restarts=True),
               locks.config: Bounds(1, listener_levels, lock_faults=True)}

    def actions(state: RetryState) -> Iterable[Action]:
        bounds = Bounds(2, (0,)) if state.config.batch_max > 1 else special.get(state.config, one)
        for action in TRANSITIONS.candidates(state, bounds):
            # A retried own send restarts the count at 0 (RETRY-16), which makes chains long: it is explored for
            # the first copy of a chain only.
            if isinstance(action, FallbackStored) and action.retried:
                held = state.holding(action.key)
                if held is None or state.chains[held.chain].copies:
                    continue
            yield action

    return TRANSITIONS.model(
        one,
        f"1 message, max {max_reconsume_times} (new and old client), retryQueueNums 1 and 0, broadcasting, a "
        f"3-level delay table; {faults} RPC faults; listener levels {listener_levels}; max 1 and a broker restart; "
        f"orderly, max 1, refused locks"
        + ("; 2 messages in batches of 2, max 1, 1 fault" if batches else "")
        + ("; 2 messages orderly in batches of 2, max 1, 1 fault" if orderly else ""),
        (*initial, restart, locks, *two), INVARIANTS, STEP_INVARIANTS, actions=actions,
    )
