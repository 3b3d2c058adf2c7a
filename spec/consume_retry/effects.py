"""Consume retry: what each action does to the state (the effects of the transition table), and their helpers."""

from __future__ import annotations

import attrs

from rocketspec.spec.consume_retry.batches import (
    concurrent_commit_offset,
    consume_requests,
    properties_after_own_send,
)
from rocketspec.spec.consume_retry.oracles import (
    SendBackResult,
    Target,
    after_listener,
    client_retry_message,
    consumer_send_back,
    delay_millis,
    effective_delay_level,
    retry_topic_send,
    send_back_properties,
    suspend_millis,
    visible_topic,
)
from rocketspec.spec.consume_retry.state import (
    GROUP,
    SCHEDULE,
    TOPIC,
    Batch,
    BrokerAnswers,
    BrokerRestarts,
    ChainHistory,
    Copy,
    DeadLetterOutcome,
    DeadLetterSent,
    Deliver,
    Delivery,
    FallbackFails,
    FallbackStored,
    Held,
    Key,
    ListenerReturns,
    LocalReconsume,
    LocksRefused,
    Path,
    Publish,
    Pulled,
    Queue,
    RetryState,
    ScheduleDelivers,
    SendBackFails,
    Stage,
    Stored,
    TimePasses,
    Waiting,
    offset_id,
    tracked,
    uniq_id,
)
from rocketspec.spec.protocol import (
    SCHEDULE_FIRST_DELAY_MS,
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
    ConsumeOrderlyStatus,
    Property,
)

# ------------------------------------------------------------------------------------------------------------
# Helpers (also what the guards read)
# ------------------------------------------------------------------------------------------------------------


def put(pairs: tuple[tuple[Queue, int], ...], queue: Queue, value: int) -> tuple[tuple[Queue, int], ...]:
    """``pairs`` as a table with ``queue`` set to ``value``, sorted."""
    table = dict(pairs)
    table[queue] = value
    return tuple(sorted(table.items()))


def batch_of(state: RetryState, members: tuple[Key, ...]) -> Batch | None:
    """The batch handed to the listener with exactly ``members``."""
    return next((b for b in state.batches if b.members == members), None)


def sending(state: RetryState, key: Key, stage: Stage) -> Batch | None:
    """The answered batch whose send in flight is ``key``'s, at ``stage``."""
    return next((b for b in state.batches if b.answered and b.pending[:1] == (key,) and b.stage is stage), None)


def resumed(state: RetryState, queue: Queue) -> Waiting | None:
    """The suspended orderly batch of ``queue`` (None for a concurrent consumer)."""
    return next((w for w in state.waiting if w.queue == queue), None) if state.config.orderly else None


def local_group(state: RetryState, members: tuple[Key, ...]) -> Waiting | None:
    """The due local re-consume group whose next consume request is ``members``: its first
    consumeMessageBatchMaxSize messages (RETRY-28)."""
    cfg = state.config
    if cfg.orderly or not members:
        return None
    return next((w for w in state.waiting if w.members[:len(members)] == members
                 and len(members) == min(cfg.batch_max, len(w.members)) and state.now_ms >= w.due_ms), None)


def parked_left(state: RetryState) -> tuple[Stored, ...]:
    """The parked messages the schedule service has not moved yet."""
    return tuple(s for s in state.stored if s.key[0] == SCHEDULE and s.key[2] >= state.schedule_next(s.level))


def parked_at(state: RetryState, action: ScheduleDelivers) -> Stored | None:
    """The parked message ``action`` moves, if it is the level's next one."""
    if action.offset != state.schedule_next(action.level):
        return None
    return state.find((SCHEDULE, action.level - 1, action.offset))


def _replace(state: RetryState, old: Batch, new: Batch | None) -> RetryState:
    """``old`` (named by its members) replaced by ``new``, or removed."""
    kept = (b if b.members != old.members else new for b in state.batches)
    return attrs.evolve(state, batches=tuple(b for b in kept if b is not None))


def _set_held(state: RetryState, held: Held) -> RetryState:
    return attrs.evolve(state, held=tuple(held if h.source == held.source else h for h in state.held))


def _history(state: RetryState, chain: int, deliveries: tuple[Delivery, ...] | None = None,
             copies: tuple[Copy, ...] | None = None, consumed: bool | None = None) -> RetryState:
    """``state`` with chain ``chain``'s history changed as given."""
    chains = list(state.chains)
    was = chains[chain]
    chains[chain] = ChainHistory(was.deliveries if deliveries is None else deliveries,
                                 was.copies if copies is None else copies,
                                 was.consumed if consumed is None else consumed)
    return attrs.evolve(state, chains=tuple(chains))


def _store(state: RetryState, topic: str, queue_id: int, chain: int, times: int, at_ms: int,
           props: tuple[tuple[str, str], ...], real: Queue | None = None) -> RetryState:
    """Put a message: a DELAY > 0 parks it in SCHEDULE_TOPIC_XXXX (the level clamped, the property too) for
    ``real`` (default: where it was sent)."""
    values = dict(props)
    level = int(values.get(Property.DELAY_TIME_LEVEL, "0"))
    target: Queue = (topic, queue_id) if real is None else real
    if level > 0:
        level = effective_delay_level(level, state.config.max_level)
        values[Property.DELAY_TIME_LEVEL] = str(level)
        offset = len(state.stored_in(SCHEDULE, level - 1))
        due = at_ms + delay_millis(level, state.config.delay_table)
        entry = Stored((SCHEDULE, level - 1, offset), chain, times, at_ms, tracked(values), level, target, due)
    else:
        offset = len(state.stored_in(*target))
        entry = Stored((*target, offset), chain, times, at_ms, tracked(values))
    return attrs.evolve(state, stored=(*state.stored, entry))


def _copy(state: RetryState, held: Held, result: SendBackResult, path: Path, props: tuple[tuple[str, str], ...],
          at_ms: int, context_level: int = 0, retried: bool = False) -> RetryState:
    """Store the copy ``result`` describes and note it in the chain's history."""
    target: Queue = (result.topic, 0)
    state = _store(state, result.topic, 0, held.chain, result.reconsume_times, at_ms, props, target)
    history = state.chains[held.chain]
    copy = Copy(result.target is Target.DLQ, result.reconsume_times, at_ms, path, context_level,
                len(history.deliveries), retried, held.reconsume_times)
    return _history(state, held.chain, copies=(*history.copies, copy))


def _shown_topic(held: Held) -> str:
    return visible_topic(held.source[0], dict(held.properties).get(Property.RETRY_TOPIC), GROUP)


def _deliver(state: RetryState, queue: Queue, members: tuple[Key, ...], local: bool) -> RetryState:
    """Hand ``members`` (held) to the listener as one batch; note the deliveries."""
    for key in members:
        held = state.holding(key)
        assert held is not None
        history = state.chains[held.chain]
        delivery = Delivery(held.reconsume_times, state.now_ms, local, queue)
        state = _history(state, held.chain, deliveries=(*history.deliveries, delivery))
    return attrs.evolve(state, batches=(*state.batches, Batch(queue, members, local)))


def _unfinished(state: RetryState, queue: Queue) -> tuple[int, ...]:
    return tuple(h.source[2] for h in state.held if h.source[:2] == queue)


def _settle(state: RetryState, batch: Batch) -> RetryState:
    """Every send of an answered batch is made: the batch is done.

    Concurrent: members whose sends both failed wait 5 s for a local re-consume, the others leave the process
    queue, and the queue's offset is committed (RETRY-17, RETRY-28). Orderly: a suspending batch goes back to the
    process queue for the suspension (RETRY-21, RETRY-24), else its offset is committed past it (RETRY-29).
    """
    cfg = state.config
    state = _replace(state, batch, None)
    queue = batch.queue
    if cfg.orderly and batch.suspend:
        due = state.now_ms + suspend_millis(batch.context_ms, cfg.suspend_ms)
        return attrs.evolve(state, waiting=(*state.waiting, Waiting(queue, batch.members, due)))
    done = set(batch.members) - set(batch.back_failed)
    state = attrs.evolve(state, held=tuple(h for h in state.held if h.source not in done))
    if batch.back_failed:
        due = state.now_ms + SEND_BACK_LOCAL_RETRY_DELAY_MS
        state = attrs.evolve(state, waiting=(*state.waiting, Waiting(queue, batch.back_failed, due)))
    committed = dict(state.committed).get(queue, -1)
    if cfg.orderly:
        front = max(k[2] for k in batch.members) + 1
        state = attrs.evolve(state, fronts=put(state.fronts, queue, front))
        return attrs.evolve(state, committed=put(state.committed, queue, front))
    offset = concurrent_commit_offset(_unfinished(state, queue), state.front(queue), committed)
    return attrs.evolve(state, committed=put(state.committed, queue, offset))


def _next(state: RetryState, batch: Batch, failed: bool = False) -> RetryState:
    """The batch's send in flight is over (``failed``: both sends of a concurrent member failed): the next
    member's send starts, or the batch settles."""
    back_failed = (*batch.back_failed, batch.pending[0]) if failed else batch.back_failed
    stage = Stage.DEAD_LETTER if state.config.orderly else Stage.BROKER
    after = attrs.evolve(batch, pending=batch.pending[1:], stage=stage, back_failed=back_failed)
    state = _replace(state, batch, after)
    return _settle(state, after) if not after.pending else state


def _at(state: RetryState, stored_at_ms: int | None) -> int:
    return state.now_ms if stored_at_ms is None else stored_at_ms


def _consumed(state: RetryState, key: Key) -> RetryState:
    held = state.holding(key)
    assert held is not None
    return _history(state, held.chain, consumed=True)


def _own_copy(state: RetryState, held: Held, retried: bool, stored_at_ms: int | None, orderly: bool) -> RetryState:
    """Store the consumer's own send of ``held`` (:func:`client_retry_message`) as the broker does
    (:func:`retry_topic_send`)."""
    cfg = state.config
    message = client_retry_message(_shown_topic(held), held.reconsume_times, cfg.limit, GROUP, held.properties,
                                   uniq_id(held.chain), orderly, retried=retried)
    result = retry_topic_send(message.header_reconsume_times, message.delay_level,
                              message.header_max_reconsume_times, cfg.client_version, GROUP,
                              group_retry_max_times=cfg.group_max, max_level=cfg.max_level)
    path = Path.ORDERLY if orderly else Path.CLIENT
    return _copy(state, held, result, path, message.properties, _at(state, stored_at_ms), retried=retried)


# ------------------------------------------------------------------------------------------------------------
# Effects
# ------------------------------------------------------------------------------------------------------------


def publish(state: RetryState, action: Publish) -> RetryState:
    """A producer stores a message in ``T``: a new chain, reconsumeTimes 0, which the group consumes (RETRY-19,
    RETRY-28, RETRY-29)."""
    chain = len(state.chains)
    state = attrs.evolve(state, chains=(*state.chains, ChainHistory()))
    return _store(state, TOPIC, action.queue_id, chain, 0, state.now_ms, ())


def pulled(state: RetryState, action: Pulled) -> RetryState:
    """A pull finds the next messages of a queue of ``T`` or ``%RETRY%G`` (RETRY-31): they enter the process queue.
    A concurrent consumer cuts them into consume requests of consumeMessageBatchMaxSize (:func:`consume_requests`,
    RETRY-28); an orderly one takes its batches from them (RETRY-29)."""
    queue = (action.topic, action.queue_id)
    state = attrs.evolve(state, pulled=put(state.pulled, queue, action.offsets[-1] + 1))
    if state.config.orderly:
        return state
    requests, start = [], 0
    for size in consume_requests(len(action.offsets), state.config.batch_max):
        requests.append((queue, action.offsets[start:start + size]))
        start += size
    return attrs.evolve(state, requests=(*state.requests, *requests))


def deliver(state: RetryState, action: Deliver) -> RetryState:
    """A batch of one queue of ``T`` or ``%RETRY%G`` (never of ``%DLQ%G``, RETRY-27), shown with RETRY_TOPIC
    (RETRY-19) and their stored count and properties.

    Concurrent: the queue's next consume request (RETRY-28). Orderly: one batch per queue at a time, the first
    min(consumeMessageBatchMaxSize, pulled and unfinished) from the first unfinished message; a suspended batch comes
    back first, whole, once its suspension is over (RETRY-29, RETRY-24, RETRY-21).
    """
    queue = (action.topic, action.queue_id)
    keys = tuple((action.topic, action.queue_id, o) for o in action.offsets)
    back = resumed(state, queue)
    if back is not None:
        state = attrs.evolve(state, waiting=tuple(w for w in state.waiting if w is not back))
    new = []
    for key in keys:
        if state.holding(key) is None:
            stored = state.find(key)
            assert stored is not None
            new.append(Held(key, stored.chain, stored.reconsume_times, stored.properties))
    state = attrs.evolve(state, held=(*state.held, *new))
    if not state.config.orderly:
        requests = list(state.requests)
        requests.remove((queue, action.offsets))
        state = attrs.evolve(state, fronts=put(state.fronts, queue, keys[-1][2] + 1), requests=tuple(requests))
    return _deliver(state, queue, keys, local=False)


def local_reconsume(state: RetryState, action: LocalReconsume) -> RetryState:
    """The local re-consume of messages both of whose sends failed, 5000 ms after their batch (RETRY-17): in
    their order, in consume requests of consumeMessageBatchMaxSize (RETRY-28), showing the raised count
    (RETRY-25)."""
    group = local_group(state, action.members)
    assert group is not None
    rest = group.members[len(action.members):]
    waiting = tuple(w for w in state.waiting if w is not group)
    if rest:
        waiting = (*waiting, attrs.evolve(group, members=rest))
    state = attrs.evolve(state, waiting=waiting)
    return _deliver(state, group.queue, action.members, local=True)


def listener_returns(state: RetryState, action: ListenerReturns) -> RetryState:
    """The listener's answer for a batch.

    Concurrent (:func:`after_listener`, RETRY-13): the acknowledged messages succeed; the others are dropped in
    broadcasting mode (RETRY-14) or sent back with CONSUMER_SEND_MSG_BACK one after another, with the context's
    delay level (RETRY-15). Orderly: SUCCESS commits the batch (RETRY-29); SUSPEND_CURRENT_QUEUE_A_MOMENT, an
    exception or null: a message at the consumer's limit (RETRY-22) is to be dead-lettered, every other one counts
    one more and suspends the batch (RETRY-21). A batch with nothing to send settles at once: committed (RETRY-28,
    RETRY-29), members waiting for a local re-consume (RETRY-17) or suspended (RETRY-24).
    """
    cfg = state.config
    batch = batch_of(state, action.members)
    assert batch is not None
    members = batch.members
    if cfg.orderly:
        if action.status is ConsumeOrderlyStatus.SUCCESS:
            for key in members:
                state = _consumed(state, key)
            return _settle(state, attrs.evolve(batch, answered=True))
        pending, suspend = [], False
        for key in members:
            held = state.holding(key)
            assert held is not None
            if held.reconsume_times >= cfg.limit:
                pending.append(key)
            else:
                suspend = True
                state = _set_held(state, attrs.evolve(held, reconsume_times=held.reconsume_times + 1))
        after = attrs.evolve(batch, answered=True, context_ms=action.context_ms, pending=tuple(pending),
                             stage=Stage.DEAD_LETTER, suspend=suspend)
    else:
        assert not isinstance(action.status, ConsumeOrderlyStatus)
        outcome = after_listener(action.status, len(members), cfg.message_model, action.ack_index)
        for key in members[:outcome.succeeded]:
            state = _consumed(state, key)
        after = attrs.evolve(batch, answered=True, context_level=action.delay_level,
                             pending=tuple(members[i] for i in outcome.send_back), stage=Stage.BROKER)
    state = _replace(state, batch, after)
    return _settle(state, after) if not after.pending else state


def broker_answers(state: RetryState, action: BrokerAnswers) -> RetryState:
    """The broker's answer to CONSUMER_SEND_MSG_BACK (:func:`consumer_send_back`, RETRY-4, RETRY-5, RETRY-6, RETRY-7,
    RETRY-8, RETRY-9): it reads the stored message, so the consumer's local raises do not count (RETRY-18); no retry
    queue drops it (RETRY-5); the copy has RETRY_TOPIC and ORIGIN_MESSAGE_ID (:func:`send_back_properties`), DELAY =
    its level, parked in the schedule topic (RETRY-2); an error answer makes the consumer send it itself (RETRY-16)."""
    cfg = state.config
    batch = sending(state, action.key, Stage.BROKER)
    held = state.holding(action.key)
    source = state.find(action.key)
    assert batch is not None and held is not None and source is not None
    result = consumer_send_back(
        source.reconsume_times, batch.context_level, cfg.limit, cfg.client_version, GROUP,
        retry_queue_nums=cfg.retry_queue_nums, group_retry_max_times=cfg.group_max, max_level=cfg.max_level,
    )
    if result.target is Target.DROPPED:
        return _next(state, batch)
    if result.target is not Target.RETRY and result.target is not Target.DLQ:
        return _replace(state, batch, attrs.evolve(batch, stage=Stage.FALLBACK))
    props = dict(source.properties)
    retry_topic, origin = send_back_properties(
        source.key[0], props.get(Property.RETRY_TOPIC), props.get(Property.ORIGIN_MESSAGE_ID), offset_id(source.key))
    props[Property.RETRY_TOPIC], props[Property.ORIGIN_MESSAGE_ID] = retry_topic, origin
    props[Property.DELAY_TIME_LEVEL] = str(result.delay_level)
    state = _copy(state, attrs.evolve(held, reconsume_times=source.reconsume_times), result, Path.BROKER,
                  tuple(props.items()), _at(state, action.stored_at_ms), batch.context_level)
    return _next(state, sending(state, action.key, Stage.BROKER) or batch)


def send_back_fails(state: RetryState, action: SendBackFails) -> RetryState:
    """CONSUMER_SEND_MSG_BACK fails: the consumer sends the message to %RETRY%G itself (RETRY-16)."""
    batch = sending(state, action.key, Stage.BROKER)
    assert batch is not None
    state = attrs.evolve(state, faults_left=state.faults_left - 1)
    return _replace(state, batch, attrs.evolve(batch, stage=Stage.FALLBACK))


def fallback_stored(state: RetryState, action: FallbackStored) -> RetryState:
    """The consumer's own send to %RETRY%G is stored (:func:`client_retry_message`, RETRY-16; the broker's handling
    :func:`retry_topic_send`, RETRY-11, RETRY-12, parked by its DELAY, RETRY-2); a retried attempt carries neither
    count nor max (RETRY-16)."""
    batch = sending(state, action.key, Stage.FALLBACK)
    held = state.holding(action.key)
    assert batch is not None and held is not None
    if action.retried:
        state = attrs.evolve(state, faults_left=state.faults_left - 1)
    state = _own_copy(state, held, action.retried, action.stored_at_ms, orderly=False)
    return _next(state, sending(state, action.key, Stage.FALLBACK) or batch)


def fallback_fails(state: RetryState, action: FallbackFails) -> RetryState:
    """The own send fails too: the message counts one more locally and waits for its local re-consume (RETRY-17);
    it shows what the send set in the property map it shared (:func:`properties_after_own_send`, RETRY-30)."""
    batch = sending(state, action.key, Stage.FALLBACK)
    held = state.holding(action.key)
    assert batch is not None and held is not None
    props = properties_after_own_send(held.properties, _shown_topic(held), held.reconsume_times)
    state = _set_held(state, attrs.evolve(held, reconsume_times=held.reconsume_times + 1, properties=props))
    state = attrs.evolve(state, faults_left=state.faults_left - 1)
    return _next(state, batch, failed=True)


def dead_letter_sent(state: RetryState, action: DeadLetterSent) -> RetryState:
    """The orderly dead-letter send of a message at the limit (RETRY-21): RECONSUME_TIME n (RETRY-23), so the
    broker dead-letters it through the schedule topic (RETRY-11, RETRY-12); a retried attempt has no count and
    makes a retry copy (RETRY-16); a failed send counts one more and suspends the batch (RETRY-21). The message
    shows what the send set in the property map it shared (RETRY-30)."""
    batch = sending(state, action.key, Stage.DEAD_LETTER)
    held = state.holding(action.key)
    assert batch is not None and held is not None
    outcome = action.outcome
    if outcome is not DeadLetterOutcome.STORED:
        state = attrs.evolve(state, faults_left=state.faults_left - 1)
    if outcome is not DeadLetterOutcome.FAILED:
        state = _own_copy(state, held, outcome is DeadLetterOutcome.RETRIED, action.stored_at_ms, orderly=True)
    props = properties_after_own_send(held.properties, _shown_topic(held), held.reconsume_times, uniq_id(held.chain),
                                      orderly=True)
    failed = outcome is DeadLetterOutcome.FAILED
    times = held.reconsume_times + (1 if failed else 0)
    state = _set_held(state, attrs.evolve(held, reconsume_times=times, properties=props))
    batch = sending(state, action.key, Stage.DEAD_LETTER) or batch
    if failed:
        suspended = attrs.evolve(batch, suspend=True)
        state = _replace(state, batch, suspended)
        batch = suspended
    return _next(state, batch)


def schedule_delivers(state: RetryState, action: ScheduleDelivers) -> RetryState:
    """A parked message is due (:func:`schedule_due` on the broker's delay table, RETRY-1, RETRY-3) and the
    schedule service's tasks run (RETRY-32): it is put to its real topic and queue in level order, not delayed
    again, with its count and its stored properties (DELAY still shown); a dead letter the consumer sent lands in
    %DLQ%G (RETRY-12), never delivered again (RETRY-27)."""
    parked = parked_at(state, action)
    assert parked is not None
    schedule = dict(state.schedule)
    schedule[action.level] = action.offset + 1
    state = attrs.evolve(state, schedule=tuple(sorted(schedule.items())))
    topic, queue_id = parked.real
    entry = Stored((topic, queue_id, len(state.stored_in(topic, queue_id))), parked.chain, parked.reconsume_times,
                   state.now_ms, parked.properties)
    return attrs.evolve(state, stored=(*state.stored, entry))


def broker_restarts(state: RetryState, action: BrokerRestarts) -> RetryState:
    """A clean restart: the stores and the schedule service's offsets are kept (RETRY-32); every level's task first
    runs SCHEDULE_FIRST_DELAY_MS after the start (RETRY-3)."""
    return attrs.evolve(state, schedule_from_ms=state.now_ms + SCHEDULE_FIRST_DELAY_MS)


def locks_refused(state: RetryState, action: LocksRefused) -> RetryState:
    """The orderly consumer's lock requests fail: its batches wait for the lock (RETRY-33), a suspended one comes back
    at its suspension's end or later (RETRY-24)."""
    return attrs.evolve(state, locks_refused=True)


def time_passes(state: RetryState, action: TimePasses) -> RetryState:
    """The clock moves, never past what is due: a parked message moves within two schedule ticks after its due
    time or the schedule's first run (:func:`latest_move_ms`, RETRY-3, RETRY-26, RETRY-32), a local re-consume at
    its 5000 ms (RETRY-17), a suspended batch when its suspension ends (RETRY-24) unless it waits for its lock
    (RETRY-33)."""
    return attrs.evolve(state, now_ms=state.now_ms + action.ms)
