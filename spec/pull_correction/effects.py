"""Pull correction: the guards and effects of the store's, the broker's and the consumer's lifecycle actions, and
of time passing (each effect's docstring cites the clauses it implements); ``machine`` puts them in the table."""

from __future__ import annotations

import attrs

from rocketspec.spec.pull_correction.oracles import (
    HoldOutcome,
    arrival_wakes_held,
    broker_commits,
    held_request_outcome,
)
from rocketspec.spec.pull_correction.state import (
    Answer,
    Append,
    Assign,
    BrokerRestart,
    ConsumerStarts,
    ConsumerStops,
    CorrectMinOffset,
    DeleteCommitLog,
    DeleteConsumeQueueFile,
    Flushed,
    Heartbeat,
    OffsetReset,
    OffsetsPersisted,
    Phase,
    ProcessQueue,
    PullState,
    QueueDestroyed,
    QueueState,
    RawPull,
    Rebalance,
    Store,
    TimePasses,
    Unregistered,
    takes,
)
from rocketspec.spec.pull_correction.views import (
    CHECK_MS,
    broker_answer,
    consumer_queues,
    corrected_min,
    decide,
    failed_answer,
    last_file_start,
    pull_exact,
    queue_exists,
    quiet,
    rebalance_start,
    recovered,
)

# --------------------------------------------------------------------------------------------------------------
# The store and the broker
# --------------------------------------------------------------------------------------------------------------


def append_enabled(state: PullState, action: Append) -> bool:
    cfg = state.config
    if not 0 <= action.queue_id < cfg.queue_count or not cfg.writable(action.queue_id):
        return False
    store = state.queues[action.queue_id].store
    return store.max_offset < cfg.max_messages and (not store.times or action.time >= store.times[-1])


def append(state: PullState, action: Append) -> PullState:
    """A message is stored (an arrival). On a master with long polling a matching arrival wakes the requests held
    on the queue at once; any other arrival past a held request's offset leaves it to the next check (PULL-14,
    PULL-15). With SYNC_FLUSH it is flushed before the put returns (PULL-42)."""
    cfg = state.config
    qs = state.queues[action.queue_id]
    store = attrs.evolve(qs.store, tags=(*qs.store.tags, action.tag), times=(*qs.store.times, action.time))
    if cfg.flush_sync:
        store = attrs.evolve(store, durable=store.max_offset)  # flushed before the put is answered (PULL-42)
    wakes = arrival_wakes_held(is_slave=cfg.is_slave, long_polling_enable=cfg.long_polling)
    requests = []
    for r in qs.requests:
        if r.phase is Phase.HELD and store.max_offset > r.offset:
            matched = wakes and takes(cfg.subscription_of(action.queue_id), action.tag)
            if held_request_outcome(store.max_offset, r.offset, matched=matched) is HoldOutcome.WAKE:
                r = attrs.evolve(r, wake_by=0)
            elif r.wake_by is None:
                r = attrs.evolve(r, wake_by=CHECK_MS)
        requests.append(r)
    return state.with_queue(action.queue_id, store=store, requests=tuple(requests))


def delete_commit_log_enabled(state: PullState, action: DeleteCommitLog) -> bool:
    if not queue_exists(state, action.queue_id):
        return False
    store = state.queues[action.queue_id].store
    return store.data_from < store.max_offset


def delete_commit_log(state: PullState, action: DeleteCommitLog) -> PullState:
    """The oldest message's commit-log data goes; its entry stays until its file does (PULL-6, PULL-9)."""
    store = state.queues[action.queue_id].store
    return state.with_queue(action.queue_id, store=attrs.evolve(store, data_from=store.data_from + 1))


def delete_cq_file_enabled(state: PullState, action: DeleteConsumeQueueFile) -> bool:
    if not queue_exists(state, action.queue_id):
        return False
    store, f = state.queues[action.queue_id].store, state.config.cq_file_entries
    # A file goes when its last entry's data is gone; the last file of a queue is never deleted.
    return store.max_offset > 0 and store.cq_from + f <= store.data_from and store.cq_from < last_file_start(store, f)


def delete_cq_file(state: PullState, action: DeleteConsumeQueueFile) -> PullState:
    """The first consume-queue file goes: its offsets answer OFFSET_FOUND_NULL until min is corrected (PULL-6)."""
    store = state.queues[action.queue_id].store
    return state.with_queue(action.queue_id,
                            store=attrs.evolve(store, cq_from=store.cq_from + state.config.cq_file_entries))


def correct_min_enabled(state: PullState, action: CorrectMinOffset) -> bool:
    return queue_exists(state, action.queue_id) and \
        corrected_min(state, action.queue_id) != state.queues[action.queue_id].store.min_offset


def correct_min(state: PullState, action: CorrectMinOffset) -> PullState:
    """correctMinOffset: min moves to the first entry of the first file whose data remains (PULL-3)."""
    store = state.queues[action.queue_id].store
    return state.with_queue(action.queue_id, store=attrs.evolve(store, min_offset=corrected_min(state,
                                                                                                  action.queue_id)))


def offset_reset_enabled(state: PullState, action: OffsetReset) -> bool:
    return 0 <= action.queue_id < state.config.topic_queues and action.offset >= 0


def offset_reset(state: PullState, action: OffsetReset) -> PullState:
    """An operator's UPDATE_CONSUMER_OFFSET: the broker commits it as it is, in range or not; a consumer that reads
    it starts there and corrects it if it is outside the queue (PULL-24, PULL-3, PULL-5)."""
    return state.with_queue(action.queue_id, broker_offset=action.offset)


def restart_enabled(state: PullState, action: BrokerRestart) -> bool:
    return True


def restart(state: PullState, action: BrokerRestart) -> PullState:
    """The broker restarts: every request on the wire or held fails on the client (its connection closes), offset
    updates on the wire are lost, the group must heartbeat again, the committed offsets and the messages stay, the
    consume-queue files whose data is gone go and each min offset is recomputed from the first file (PULL-38,
    PULL-23). A crash keeps only the messages flushed and the offsets last persisted (PULL-42);
    its torn writes past them are dropped by the recovery (PULL-44)."""
    f = state.config.cq_file_entries
    queues = []
    for qs in state.queues:
        requests = tuple(attrs.evolve(r, phase=Phase.ANSWERED, answer=failed_answer(r.offset), hold_left=0,
                                      wake_by=None) for r in qs.requests)
        store = qs.store
        if action.crash:
            kept = store.durable
            store = attrs.evolve(store, tags=store.tags[:kept], times=store.times[:kept],
                                 data_from=min(store.data_from, kept), cq_from=min(store.cq_from, kept))
            qs = attrs.evolve(qs, broker_offset=qs.durable_offset, raw_offset=qs.durable_raw)
        queues.append(attrs.evolve(qs, store=recovered(store, f), requests=requests, in_transit=()))
    return attrs.evolve(state, queues=tuple(queues), registered=False)


def flushed_enabled(state: PullState, action: Flushed) -> bool:
    return True


def flushed(state: PullState, action: Flushed) -> PullState:
    """The store's flush: every message stored so far survives a crash (PULL-42)."""
    queues = tuple(attrs.evolve(qs, store=attrs.evolve(qs.store, durable=qs.store.max_offset))
                   for qs in state.queues)
    return attrs.evolve(state, queues=queues)


def persisted_enabled(state: PullState, action: OffsetsPersisted) -> bool:
    return True


def persisted(state: PullState, action: OffsetsPersisted) -> PullState:
    """The broker persists its committed offsets: a crash keeps them (PULL-42)."""
    queues = tuple(attrs.evolve(qs, durable_offset=qs.broker_offset, durable_raw=qs.raw_offset)
                   for qs in state.queues)
    return attrs.evolve(state, queues=queues)


def heartbeat_enabled(state: PullState, action: Heartbeat) -> bool:
    return state.running


def heartbeat(state: PullState, action: Heartbeat) -> PullState:
    """The broker registers the group's subscription: pulls without the subscription flag pass PULL-17."""
    return attrs.evolve(state, registered=True)


def unregistered_enabled(state: PullState, action: Unregistered) -> bool:
    return state.registered and not state.running


def unregistered(state: PullState, action: Unregistered) -> PullState:
    """The broker forgets a stopped consumer's group (PULL-39): pulls without the subscription flag fail PULL-17."""
    return attrs.evolve(state, registered=False)


def raw_pull_enabled(state: PullState, action: RawPull) -> bool:
    return action.offset >= 0 and action.max_msgs > 0 and action.answer == raw_answer(state, action)


def raw_answer(state: PullState, action: RawPull) -> Answer:
    """The broker's answer to another client's pull: with the subscription flag it filters by the request's
    subscription, without it by the group's registered one (the consumer's, when it pulls as that group)."""
    flag = action.subscription_flag
    if flag or not action.as_consumer:
        subscription = action.subscription
    else:
        subscription = state.config.subscription if 0 <= action.queue_id < state.config.topic_queues else None
    return decide(state, action.queue_id, action.offset, suspend=False, subscription_flag=flag,
                  subscription=subscription, max_msgs=action.max_msgs,
                  registered=state.registered and action.as_consumer, raw=True, topic_exists=action.topic_exists,
                  tag_expression=not (flag and action.sql), parses=action.parses or not flag, newer=action.newer)


def raw_pull(state: PullState, action: RawPull) -> PullState:
    """Another client's pull at any offset: the broker's checks (PULL-16, PULL-17), the store's decision (PULL-1,
    PULL-2, PULL-3, PULL-4, PULL-5, PULL-6, PULL-7, PULL-8, PULL-9) and the answer (PULL-10, PULL-11, PULL-12), then
    the commit its flag carries, on a master, once the checks passed (PULL-18)."""
    commits = broker_commits(broker_allow_suspend=True, has_commit_flag=action.commit is not None,
                             is_slave=state.config.is_slave)
    if action.answer.status is None or not commits:
        return state
    if action.as_consumer:
        return state.with_queue(action.queue_id, broker_offset=action.commit)
    return state.with_queue(action.queue_id, raw_offset=action.commit)


# --------------------------------------------------------------------------------------------------------------
# The consumer's lifecycle
# --------------------------------------------------------------------------------------------------------------


def _cleared(qs: QueueState) -> QueueState:
    return attrs.evolve(qs, pq=None, pull_offset=None, memory_offset=None, requests=(), pull_in=None, fix=None,
                        fix_in=0, removing=False, assigned=False, consume_offset=None, seek=None, paused=False,
                        late=False)


def starts_enabled(state: PullState, action: ConsumerStarts) -> bool:
    return not state.running


def starts(state: PullState, action: ConsumerStarts) -> PullState:
    """A consumer starts with an empty offset store and no queue; a group new to the broker has no committed offset
    and its own (empty) %RETRY% queue (PULL-24, PULL-28, PULL-37)."""
    queues = tuple(_cleared(qs) for qs in state.queues)
    if action.fresh:
        cfg = state.config
        queues = tuple(attrs.evolve(qs, broker_offset=None, durable_offset=None, in_transit=(),
                                    store=Store() if cfg.is_retry(q) else qs.store)
                       for q, qs in enumerate(queues))
    return attrs.evolve(state, queues=queues, running=True, registered=state.registered and not action.fresh,
                        cache=(), auto_commit_in=0, suspended=False)


def stops_enabled(state: PullState, action: ConsumerStops) -> bool:
    return state.running and quiet(state)


def stops(state: PullState, action: ConsumerStops) -> PullState:
    """The consumer stops while none of its pulls is on the wire: a shutdown persists the offsets of the queues it
    owns (the broker gets them next), a crash nothing, and the offset updates it had on the wire die with its
    connection, as its held pulls do (PULL-39)."""
    queues = []
    for qs in state.queues:
        sent = () if action.crash else qs.in_transit
        if not action.crash and qs.pq is not None and qs.memory_offset is not None and qs.memory_offset >= 0:
            sent = (*sent, qs.memory_offset)
        queues.append(attrs.evolve(_cleared(qs), in_transit=sent))
    return attrs.evolve(state, queues=tuple(queues), running=False, cache=(), auto_commit_in=0, suspended=False)


def rebalance_enabled(state: PullState, action: Rebalance) -> bool:
    q = action.queue_id
    if not (state.running and state.registered and q in consumer_queues(state)):
        return False
    if state.config.lite and state.config.assign is not None:
        return False
    qs = state.queues[q]
    return qs.pq is None and qs.fix is None and not qs.removing and action.start == rebalance_start(state, q)


def rebalance(state: PullState, action: Rebalance) -> PullState:
    """A rebalance adds a queue it finds without a process queue: the offset store's entry is dropped, then
    computePullFromWhere reads the broker, whose answer the store keeps (PULL-24, PULL-28, PULL-29); a push
    consumer pulls from ``start`` at once, a lite pull consumer's pull task starts once the queue is assigned."""
    q = action.queue_id
    answer = broker_answer(state, q)
    memory = answer if answer >= 0 else None
    if state.config.lite:
        return state.with_queue(q, pq=ProcessQueue(), memory_offset=memory)
    return state.with_queue(q, pq=ProcessQueue(), memory_offset=memory, pull_offset=action.start, pull_in=0)


def assign_enabled(state: PullState, action: Assign) -> bool:
    cfg, q = state.config, action.queue_id
    if not (state.running and cfg.lite and queue_exists(state, q)) or state.queues[q].assigned:
        return False
    if cfg.assign is not None:
        return q in cfg.assign
    return state.queues[q].pq is not None


def assign(state: PullState, action: Assign) -> PullState:
    """A lite pull consumer's queue is assigned: no pull, consume or seek offset yet; its pull task runs now
    (PULL-31, PULL-37)."""
    qs = state.queues[action.queue_id]
    return state.with_queue(action.queue_id, assigned=True, pq=qs.pq or ProcessQueue(), pull_offset=None,
                            consume_offset=None, seek=None, pull_in=0)


# --------------------------------------------------------------------------------------------------------------
# Time
# --------------------------------------------------------------------------------------------------------------


def blocked_by(state: PullState, ms: int) -> str | None:
    """What must happen before ``ms`` more milliseconds can pass (None: nothing): a pull or fix due, a held request
    the hold service must process again, removeProcessQueue after the fix."""
    for q, qs in enumerate(state.queues):
        if qs.removing:
            return f"queue {q}: removeProcessQueue right after the fix (PULL-22)"
        if qs.fix is not None and state.running and qs.fix_in < ms:
            return f"queue {q}: the OFFSET_ILLEGAL fix due in {qs.fix_in} ms (PULL-22)"
        if pull_exact(state, qs) and qs.pull_in is not None and qs.live_request is None and qs.pull_in < ms:
            return f"queue {q}: the next pull due in {qs.pull_in} ms (PULL-20, PULL-21, PULL-23, PULL-32)"
        for r in qs.requests:
            if r.phase is not Phase.HELD:
                continue
            if r.hold_left - ms < -CHECK_MS:
                return f"queue {q}: the pull held at {r.offset} times out within {r.hold_left + CHECK_MS} ms (PULL-14)"
            if r.wake_by is not None and r.wake_by < ms:
                return f"queue {q}: the pull held at {r.offset} is woken within {r.wake_by} ms (PULL-14, PULL-15)"
    return None


def time_enabled(state: PullState, action: TimePasses) -> bool:
    return action.ms > 0 and blocked_by(state, action.ms) is None


def time(state: PullState, action: TimePasses) -> PullState:
    """Time passes: the pull, fix and auto-commit deadlines and the held requests' hold times count down; the guard
    lets no due pull, fix or check be skipped (PULL-14, PULL-15, PULL-22, PULL-23, PULL-34)."""
    ms = action.ms
    queues = []
    for qs in state.queues:
        requests = tuple(
            attrs.evolve(r, hold_left=max(r.hold_left - ms, -CHECK_MS),
                         wake_by=None if r.wake_by is None else max(r.wake_by - ms, 0))
            if r.phase is Phase.HELD else r for r in qs.requests)
        queues.append(attrs.evolve(
            qs, requests=requests, pull_in=None if qs.pull_in is None else max(qs.pull_in - ms, 0),
            fix_in=max(qs.fix_in - ms, 0) if qs.fix is not None else 0))
    return attrs.evolve(state, queues=tuple(queues), auto_commit_in=max(state.auto_commit_in - ms, 0))


def destroyed_enabled(state: PullState, action: QueueDestroyed) -> bool:
    if not queue_exists(state, action.queue_id):
        return False
    store = state.queues[action.queue_id].store
    return store.max_offset > 0 and store.data_from == store.max_offset


def destroyed(state: PullState, action: QueueDestroyed) -> PullState:
    """A consume queue none of whose messages is left is destroyed: it starts again empty at offset 0 (the pulls
    held on it wait for a message past their offset again); committed offsets past it are corrected when a
    consumer pulls (PULL-41, PULL-2, PULL-5)."""
    qs = state.queues[action.queue_id]
    requests = tuple(attrs.evolve(r, wake_by=None) if r.phase is Phase.HELD else r for r in qs.requests)
    return state.with_queue(action.queue_id, store=Store(), requests=requests)
