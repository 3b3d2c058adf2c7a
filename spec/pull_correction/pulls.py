"""Pull correction: the guards and effects of the pull cycle (sent, processed, held, woken, answered), of the
offsets (consumed, persisted, fixed) and of the lite pull consumer's poll, commit and seek; ``machine`` puts them in
the table."""

from __future__ import annotations

import functools

import attrs

from rocketspec.spec.protocol import (
    OFFSET_ILLEGAL_REMOVE_DELAY_MS,
    ResponseCode,
)
from rocketspec.spec.pull_correction.consumers import (
    auto_commit_due,
    consume_progress,
    lite_reaction,
    seek_allowed,
)
from rocketspec.spec.pull_correction.oracles import (
    OffsetUpdate,
    apply_offset_update,
    broker_commits,
    client_reaction,
    commit_flag,
    pull_status,
)
from rocketspec.spec.pull_correction.state import (
    Answer,
    Answered,
    Commit,
    Consume,
    DelayedFix,
    HoldTimeout,
    PauseQueue,
    Persist,
    PersistSent,
    Phase,
    Poll,
    ProcessQueue,
    Pull,
    PullSent,
    PullState,
    QueueRemoved,
    Request,
    Seek,
    Suspend,
    Wake,
)
from rocketspec.spec.pull_correction.views import (
    CHECK_MS,
    broker_answer,
    decide,
    first_request,
    live,
    next_pull_offset,
    queue_exists,
    replaced,
)

# --------------------------------------------------------------------------------------------------------------
# Pulls
# --------------------------------------------------------------------------------------------------------------


def pull_sent_enabled(state: PullState, action: PullSent) -> bool:
    q = action.queue_id
    if not queue_exists(state, q) or not live(state, q):
        return False
    qs = state.queues[q]
    if qs.paused or state.suspended:
        return False
    if state.config.lite and len(state.cache) * state.config.batch > state.config.pull_threshold_for_all:
        return False  # flow control: the task tries again later, sending nothing (PULL-32)
    return qs.pull_in == 0 and qs.live_request is None and action.offset == next_pull_offset(state, q)


def pull_sent(state: PullState, action: PullSent) -> PullState:
    """The consumer sends PULL_MESSAGE. A push pull carries its memory offset to commit when clustering and > 0
    (PULL-18); a lite pull never commits and takes a pending seek (then its consume offset) or, without a pull
    offset, computePullFromWhere reading memory first, the broker's answer kept in memory (PULL-31, PULL-33). A
    suspended consumer or a paused queue sends none (PULL-40), nor a lite pull consumer whose cached consume requests
    times pullBatchSize exceed pullThresholdForAll (PULL-32)."""
    q, cfg = action.queue_id, state.config
    qs = state.queues[q]
    if not cfg.lite:
        memory = -1 if qs.memory_offset is None else qs.memory_offset
        commit = memory if commit_flag(clustering=True, memory_offset=memory) else None
        request = Request(action.offset, commit=commit)
        return state.with_queue(q, requests=(*qs.requests, request), pull_in=None, late=False)
    changes: dict[str, object] = {}
    if qs.seek is not None:
        changes = {"consume_offset": qs.seek, "seek": None}
    elif qs.pull_offset is None and qs.memory_offset is None:
        answer = broker_answer(state, q)
        if answer >= 0:
            changes = {"memory_offset": answer}
    return state.with_queue(q, requests=(*qs.requests, Request(action.offset)), pull_in=None, late=False, **changes)


@functools.lru_cache(maxsize=4096)
def consumer_answer(state: PullState, queue_id: int, offset: int, first: bool) -> Answer:
    """The broker's answer to the consumer's pull at ``offset`` (PULL-33: its flags); a pure function of the state,
    kept for the guard that asks again."""
    return decide(state, queue_id, offset, first=first)


def pull_enabled(state: PullState, action: Pull) -> bool:
    if not queue_exists(state, action.queue_id):
        return False
    qs = state.queues[action.queue_id]
    return first_request(qs, action.offset, Phase.SENT) is not None and \
        action.answer == consumer_answer(state, action.queue_id, action.offset, True)


def pull(state: PullState, action: Pull) -> PullState:
    """The broker's first processing of a pull: once its checks passed (PULL-16, PULL-17: else it answers the
    failure at once), it commits the offset the request carries on a master, whatever the store's result
    (PULL-18), then holds it for the consumer's suspend time when the answer is PULL_NOT_FOUND (PULL-13),
    or answers (PULL-10, PULL-11, PULL-12)."""
    cfg, q = state.config, action.queue_id
    qs = state.queues[q]
    index = first_request(qs, action.offset, Phase.SENT)
    assert index is not None
    request = qs.requests[index]
    broker_offset = qs.broker_offset
    checked = action.answer.status is not None  # a failed check answers before the commit
    if checked and broker_commits(broker_allow_suspend=True, has_commit_flag=request.commit is not None,
                                  is_slave=cfg.is_slave):
        broker_offset = request.commit
    if action.answer.code is None:
        wake_by = CHECK_MS if qs.store.max_offset > action.offset else None
        held = attrs.evolve(request, phase=Phase.HELD, hold_left=cfg.hold_ms, wake_by=wake_by)
        return state.with_queue(q, broker_offset=broker_offset, requests=replaced(qs, index, held))
    answered = attrs.evolve(request, phase=Phase.ANSWERED, answer=action.answer)
    return state.with_queue(q, broker_offset=broker_offset, requests=replaced(qs, index, answered))


def wake_enabled(state: PullState, action: Wake) -> bool:
    if not queue_exists(state, action.queue_id):
        return False
    qs = state.queues[action.queue_id]
    return first_request(qs, action.offset, Phase.HELD, wakeable=True) is not None and \
        action.answer == consumer_answer(state, action.queue_id, action.offset, False)


def timeout_enabled(state: PullState, action: HoldTimeout) -> bool:
    if not queue_exists(state, action.queue_id):
        return False
    qs = state.queues[action.queue_id]
    index = first_request(qs, action.offset, Phase.HELD)
    return index is not None and qs.requests[index].hold_left <= 0 and \
        action.answer == consumer_answer(state, action.queue_id, action.offset, False)


def _processed_again(state: PullState, queue_id: int, index: int, answer: Answer) -> PullState:
    qs = state.queues[queue_id]
    request = attrs.evolve(qs.requests[index], phase=Phase.ANSWERED, answer=answer, hold_left=0, wake_by=None)
    return state.with_queue(queue_id, requests=replaced(qs, index, request))


def wake(state: PullState, action: Wake) -> PullState:
    """The queue's max is past a held request's offset: it is processed again without suspension and without a
    commit, and answered once (PULL-14, PULL-18)."""
    index = first_request(state.queues[action.queue_id], action.offset, Phase.HELD, wakeable=True)
    assert index is not None
    return _processed_again(state, action.queue_id, index, action.answer)


def timeout(state: PullState, action: HoldTimeout) -> PullState:
    """A held request's hold time is over: it is processed again without suspension and answered once
    (PULL-13, PULL-14)."""
    index = first_request(state.queues[action.queue_id], action.offset, Phase.HELD)
    assert index is not None
    return _processed_again(state, action.queue_id, index, action.answer)


def answered_enabled(state: PullState, action: Answered) -> bool:
    if not queue_exists(state, action.queue_id):
        return False
    qs = state.queues[action.queue_id]
    index = first_request(qs, action.offset, Phase.ANSWERED)
    return index is not None and (state.running or not qs.requests[index].live)


def answered(state: PullState, action: Answered) -> PullState:
    """An answer reaches the consumer, which maps its code to a PullStatus (PULL-19): a push consumer reacts to
    FOUND (PULL-20), NO_NEW_MSG and NO_MATCHED_MSG (PULL-21), OFFSET_ILLEGAL (PULL-22) and an error (PULL-23), a lite
    pull consumer as PULL-32 says; the answer of a request sent before a seek is ignored (PULL-32)."""
    q = action.queue_id
    qs = state.queues[q]
    index = first_request(qs, action.offset, Phase.ANSWERED)
    assert index is not None
    request = qs.requests[index]
    state = state.with_queue(q, requests=replaced(qs, index, None))
    if not request.live:
        return state
    assert request.answer is not None
    if state.config.lite:
        return _lite_react(state, q, request.answer)
    return _push_react(state, q, request.answer)


def _push_react(state: PullState, q: int, answer: Answer) -> PullState:
    qs = state.queues[q]
    pq = qs.pq
    assert pq is not None
    status = pull_status(answer.code) if answer.code is not None else None
    reaction = client_reaction(status, answer.next_offset, not pq.cached, request_offset=answer.requested,
                               found_messages=len(answer.delivered),
                               flow_control=answer.code is ResponseCode.FLOW_CONTROL, profile=state.config.profile)
    memory = qs.memory_offset
    if reaction.enqueue:
        pq = attrs.evolve(pq, cached=pq.cached | frozenset(answer.delivered), offset_max=max(answer.delivered))
    if reaction.update is not None:
        memory = apply_offset_update(memory, reaction.update)
    fix_in = 0
    if reaction.drop:
        pq = attrs.evolve(pq, dropped=True)
        fix_in = OFFSET_ILLEGAL_REMOVE_DELAY_MS
    return state.with_queue(q, pq=pq, pull_offset=reaction.next_offset, memory_offset=memory, fix=reaction.fix,
                            fix_in=fix_in, pull_in=reaction.repull_delay_ms)


def _lite_react(state: PullState, q: int, answer: Answer) -> PullState:
    qs = state.queues[q]
    pq = qs.pq
    assert pq is not None
    status = pull_status(answer.code) if answer.code is not None else None
    reaction = lite_reaction(status, answer.next_offset, seek_pending=qs.seek is not None,
                             found_messages=len(answer.delivered),
                             flow_control=answer.code is ResponseCode.FLOW_CONTROL)
    cache = state.cache
    if reaction.enqueue:
        pq = attrs.evolve(pq, cached=pq.cached | frozenset(answer.delivered), offset_max=max(answer.delivered))
        cache = (*cache, (q, answer.delivered))
    pull_offset = qs.pull_offset if reaction.pull_offset is None else reaction.pull_offset
    state = state.with_queue(q, pq=pq, pull_offset=pull_offset, pull_in=reaction.repull_delay_ms)
    return attrs.evolve(state, cache=cache)


# --------------------------------------------------------------------------------------------------------------
# Offsets
# --------------------------------------------------------------------------------------------------------------


def consume_enabled(state: PullState, action: Consume) -> bool:
    if state.config.lite or not queue_exists(state, action.queue_id) or not live(state, action.queue_id):
        return False
    pq = state.queues[action.queue_id].pq
    return pq is not None and action.offset in pq.cached


def consume(state: PullState, action: Consume) -> PullState:
    """The consume service finishes a cached message: it leaves the process queue and the offset store takes the
    progress removeMessage gives, increase-only (PULL-34, PULL-27)."""
    qs = state.queues[action.queue_id]
    assert qs.pq is not None
    progress = consume_progress(qs.pq.cached, qs.pq.offset_max, frozenset({action.offset}))
    memory = apply_offset_update(qs.memory_offset, OffsetUpdate(progress, True))
    return state.with_queue(action.queue_id, pq=attrs.evolve(qs.pq, cached=qs.pq.cached - {action.offset}),
                            memory_offset=memory)


def persist_sent_enabled(state: PullState, action: PersistSent) -> bool:
    if not queue_exists(state, action.queue_id):
        return False
    qs = state.queues[action.queue_id]
    owned = state.running and qs.pq is not None
    return (owned or qs.removing) and qs.memory_offset == action.offset and action.offset >= 0


def persist_sent(state: PullState, action: PersistSent) -> PullState:
    """The offset store sends the queue's memory offset to the broker (persistAll every 5 s, the OFFSET_ILLEGAL
    fix's persist, a lite pull commit) (PULL-22, PULL-35)."""
    qs = state.queues[action.queue_id]
    return state.with_queue(action.queue_id, in_transit=(*qs.in_transit, action.offset))


def persist_enabled(state: PullState, action: Persist) -> bool:
    if not queue_exists(state, action.queue_id):
        return False
    sent = state.queues[action.queue_id].in_transit
    return bool(sent) and sent[0] == action.offset


def persist(state: PullState, action: Persist) -> PullState:
    """The broker commits the offset update, as it is (PULL-22, PULL-24, PULL-35)."""
    qs = state.queues[action.queue_id]
    return state.with_queue(action.queue_id, broker_offset=action.offset, in_transit=qs.in_transit[1:])


def fix_enabled(state: PullState, action: DelayedFix) -> bool:
    if not queue_exists(state, action.queue_id):
        return False
    qs = state.queues[action.queue_id]
    return state.running and qs.fix is not None and qs.fix_in == 0


def fix(state: PullState, action: DelayedFix) -> PullState:
    """10 s after OFFSET_ILLEGAL: updateOffset(next, increaseOnly=false); persist and removeProcessQueue follow at
    once (PULL-22)."""
    qs = state.queues[action.queue_id]
    assert qs.fix is not None
    memory = apply_offset_update(qs.memory_offset, qs.fix)
    return state.with_queue(action.queue_id, memory_offset=memory, fix=None, removing=True)


def removed_enabled(state: PullState, action: QueueRemoved) -> bool:
    return queue_exists(state, action.queue_id) and state.queues[action.queue_id].removing


def removed(state: PullState, action: QueueRemoved) -> PullState:
    """removeProcessQueue: the queue leaves the table and its offset the offset store; the next rebalance adds it
    back from the broker's offset (PULL-22, PULL-24)."""
    return state.with_queue(action.queue_id, pq=None, memory_offset=None, pull_offset=None, removing=False)


# --------------------------------------------------------------------------------------------------------------
# The lite pull consumer's user calls
# --------------------------------------------------------------------------------------------------------------


def _lite_running(state: PullState) -> bool:
    return state.running and state.config.lite


def _commit_all(state: PullState) -> PullState:
    queues = []
    for q, qs in enumerate(state.queues):
        if qs.assigned and qs.consume_offset is not None and live(state, q):
            qs = attrs.evolve(qs, memory_offset=apply_offset_update(qs.memory_offset,
                                                                    OffsetUpdate(qs.consume_offset, False)))
        queues.append(qs)
    return attrs.evolve(state, queues=tuple(queues))


def poll_enabled(state: PullState, action: Poll) -> bool:
    return _lite_running(state)


def poll(state: PullState, action: Poll) -> PullState:
    """poll: an auto commit first when due (PULL-34, PULL-35), then the oldest consume request of a live process
    queue leaves the cache: its messages leave the process queue and the consume offset becomes removeMessage's
    answer (PULL-34)."""
    cfg = state.config
    if auto_commit_due(state.auto_commit_in, auto_commit=cfg.auto_commit):
        state = attrs.evolve(_commit_all(state), auto_commit_in=cfg.auto_commit_interval_ms)
    cache = state.cache
    while cache:
        (q, offsets), cache = cache[0], cache[1:]
        qs = state.queues[q]
        if qs.pq is None or qs.pq.dropped:
            continue
        progress = consume_progress(qs.pq.cached, qs.pq.offset_max, frozenset(offsets))
        pq = attrs.evolve(qs.pq, cached=qs.pq.cached - frozenset(offsets))
        state = state.with_queue(q, pq=pq, consume_offset=progress)
        break
    return attrs.evolve(state, cache=cache)


def taken(state: PullState) -> tuple[int, tuple[int, ...]] | None:
    """The consume request a poll would return now (None: none)."""
    for q, offsets in state.cache:
        pq = state.queues[q].pq
        if pq is not None and not pq.dropped:
            return q, offsets
    return None


def commit_enabled(state: PullState, action: Commit) -> bool:
    return _lite_running(state) and all(queue_exists(state, q) for q, _ in action.offsets or ())


def commit(state: PullState, action: Commit) -> PullState:
    """commitAll: each assigned queue's consume offset into the offset store, not increase-only; or the offsets
    given, for the queues assigned with a live process queue (-1 is skipped). With ``persist`` the offsets of the
    queues committed (all assigned ones for commitAll) are sent to the broker now and the offset store forgets
    every other queue (persistAll); an empty map is ignored (PULL-35)."""
    if action.offsets is None:
        state = _commit_all(state)
        kept = {q for q, qs in enumerate(state.queues) if qs.assigned}
    elif not action.offsets:
        return state  # "MessageQueues is empty, Ignore this commit"
    else:
        for q, offset in action.offsets:
            if offset != -1 and state.queues[q].assigned and live(state, q):
                memory = apply_offset_update(state.queues[q].memory_offset, OffsetUpdate(offset, False))
                state = state.with_queue(q, memory_offset=memory)
        kept = {q for q, _ in action.offsets}
    if action.persist:
        for q, qs in enumerate(state.queues):
            if q not in kept and qs.memory_offset is not None:
                state = state.with_queue(q, memory_offset=None)
    return state


def seek_enabled(state: PullState, action: Seek) -> bool:
    if not _lite_running(state) or not queue_exists(state, action.queue_id):
        return False
    qs = state.queues[action.queue_id]
    return seek_allowed(action.offset, qs.store.min_offset, qs.store.max_offset, assigned=qs.assigned)


def seek(state: PullState, action: Seek) -> PullState:
    """seek within [min, max]: the queue's cached messages and consume requests are cleared, the pulls it sent are
    no longer waited for, and its pull task runs again now from the seek offset (PULL-36, PULL-31)."""
    q = action.queue_id
    qs = state.queues[q]
    requests = tuple(attrs.evolve(r, live=False) for r in qs.requests)
    pq = ProcessQueue(dropped=qs.pq.dropped) if qs.pq is not None else ProcessQueue()
    state = state.with_queue(q, pq=pq, requests=requests, seek=action.offset, pull_in=0)
    return attrs.evolve(state, cache=tuple(r for r in state.cache if r[0] != q))


def pause_enabled(state: PullState, action: PauseQueue) -> bool:
    return _lite_running(state) and queue_exists(state, action.queue_id)


def pause(state: PullState, action: PauseQueue) -> PullState:
    """pause / resume of an assigned queue: paused, its pull task sends no pull and looks again every 1 s; resumed,
    it pulls at its next look (PULL-40)."""
    if not state.queues[action.queue_id].assigned:
        return state
    return state.with_queue(action.queue_id, paused=action.paused, late=True)


def suspend_enabled(state: PullState, action: Suspend) -> bool:
    return state.running and not state.config.lite


def suspend(state: PullState, action: Suspend) -> PullState:
    """suspend / resume of a push consumer: suspended, it sends no pull (its pull requests look again every 1 s) and
    starts no rebalance; resumed, each queue pulls at its next look (PULL-40)."""
    queues = tuple(attrs.evolve(qs, late=True) for qs in state.queues)
    return attrs.evolve(state, queues=queues, suspended=action.suspended)
