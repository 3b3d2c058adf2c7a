"""Offset commit: the guards and effects of the machine's transitions for pulls and consumption (``steps`` has
those of the brokers' queues, the clients' lives and assignment; ``admin`` those of the admin requests and resets;
``machine`` the table).

The state and the actions are in ``state``; the oracles the effects apply in ``oracles``. Each effect's docstring
states its rule and cites the clauses; its guard says when the action can happen.
"""

from __future__ import annotations

from rocketspec.spec.offset_commit.oracles import (
    NO_OFFSET,
    concurrent_consume_result,
    make_message_to_consume_again,
    orderly_commit,
    put_messages,
    take_messages,
    update_offset,
)
from rocketspec.spec.offset_commit.state import (
    ConsumeFinished,
    ConsumeRequest,
    Held,
    OffsetState,
    OffsetUpdated,
    OrderlyConsumed,
    PullFailed,
    PullFound,
    PullNoNewMessage,
    PullOffsetMoved,
    PullSent,
    StalePull,
    StalePullAnswered,
    TakeMessages,
    but,
)
from rocketspec.spec.offset_commit.steps import (
    canonical_requests,
    client_alive,
    held_lane,
    mark_handled,
    overflow_next,
    pull_commit,
    start_commit,
    valid,
)

# --- Guards and effects: pulls ------------------------------------------------------------------------------


def _pull_sent_enabled(state: OffsetState, action: PullSent) -> bool:
    held = held_lane(state, action.client, action.queue)
    if held is None or state.clients[action.client].paused or held.pull is not None or not held.started:
        return False
    return action.offset == held.next_offset and action.commit == pull_commit(state, action.client, action.queue)


def _pull_sent(state: OffsetState, action: PullSent) -> OffsetState:
    """A pull at the next offset carries the memory entry as its commit when clustering and > 0 (OFF-9); the broker
    commits it when the request arrives and passes its checks (OFF-10), which the commit's arrival shows."""
    lane = state.lanes[action.client][action.queue]
    assert lane.held is not None
    state = state.with_lane(action.client, action.queue,
                            but(lane, held=but(lane.held, pull=action.offset)))
    if action.commit is not None:
        state = start_commit(state, action.queue, action.commit)
    return state


def _pulling(state: OffsetState, client: int, queue: int) -> Held | None:
    held = held_lane(state, client, queue)
    return held if held is not None and held.pull is not None else None


def _found_enabled(state: OffsetState, action: PullFound) -> bool:
    held = _pulling(state, action.client, action.queue)
    if held is None or held.pull is None:
        return False
    q = state.queues[action.queue]
    if not held.pull < action.max_offset <= q.max_offset:
        return False
    return action.count == min(state.config.pull_batch, action.max_offset - held.pull)


def _found(state: OffsetState, action: PullFound) -> OffsetState:
    """A FOUND answer: the batch is cached (OFF-1, OFF-2) and, when concurrent, cut into consume requests of
    consumeMessageBatchMaxSize (OFF-4); the next pull starts after it (OFF-9)."""
    config = state.config
    lane = state.lanes[action.client][action.queue]
    held = lane.held
    assert held is not None and held.pull is not None
    batch = tuple(range(held.pull, held.pull + action.count))
    pq, _dispatch = put_messages(held.pq, batch)
    queued = held.requests
    if not config.orderly:
        size = config.consume_batch
        chunks = (ConsumeRequest(batch[i:i + size]) for i in range(0, len(batch), size))
        queued = canonical_requests((*queued, *chunks))
    pulled = but(held, pq=pq, next_offset=held.pull + action.count, requests=queued, pull=None)
    return state.with_lane(action.client, action.queue, but(lane, held=pulled))


def _no_new_enabled(state: OffsetState, action: PullNoNewMessage) -> bool:
    held = _pulling(state, action.client, action.queue)
    if held is None or held.pull is None or action.max_offset > state.queues[action.queue].max_offset:
        return False
    return held.pull == action.max_offset or action.max_offset == 0


def _no_new(state: OffsetState, action: PullNoNewMessage) -> OffsetState:
    """NO_NEW_MSG (a pull at the max offset; on an empty queue, at any offset): the next pull offset becomes
    nextBeginOffset (the pull's; 0 for an empty queue) and, when the ProcessQueue's msgCount is 0, the memory entry
    gets it with increaseOnly (correctTagsOffset, OFF-14)."""
    lane = state.lanes[action.client][action.queue]
    held = lane.held
    assert held is not None and held.pull is not None
    next_offset = held.pull if action.max_offset else 0
    memory = lane.memory
    if held.pq.msg_count == 0:
        memory = update_offset(memory, next_offset, True)
    return state.with_lane(action.client, action.queue, but(
        lane, memory=memory, held=but(held, next_offset=next_offset, pull=None)))


def _moved_enabled(state: OffsetState, action: PullOffsetMoved) -> bool:
    held = _pulling(state, action.client, action.queue)
    if held is None or held.pull is None:
        return False
    max_offset = state.queues[action.queue].max_offset
    if held.pull <= max_offset or max_offset == 0:
        return False
    return action.next_offset == overflow_next(max_offset, state.config.profile)


def _moved(state: OffsetState, action: PullOffsetMoved) -> OffsetState:
    """OFFSET_ILLEGAL (a pull past the max offset, after a crash lost the queue's tail): the ProcessQueue is marked
    dropped, stays in processQueueTable, and its pull offset becomes nextBeginOffset (OFF-23)."""
    lane = state.lanes[action.client][action.queue]
    assert lane.held is not None
    held = but(lane.held, dropped=True, moved_to=action.next_offset, next_offset=action.next_offset,
                        pull=None, requests=())
    return state.with_lane(action.client, action.queue, but(lane, held=held))


def _failed_enabled(state: OffsetState, action: PullFailed) -> bool:
    held = _pulling(state, action.client, action.queue)
    return held is not None and held.pull == action.offset


def _failed(state: OffsetState, action: PullFailed) -> OffsetState:
    """A pull that fails (its broker gone, or refusing it) is sent again later from the same offset; its commit
    never reached the broker's table (OFF-9, OFF-10)."""
    lane = state.lanes[action.client][action.queue]
    assert lane.held is not None
    return state.with_lane(action.client, action.queue, but(lane, held=but(lane.held, pull=None)))


STALE_WRITES = frozenset({"NO_NEW_MSG", "NO_MATCHED_MSG"})
STALE_ANSWERS = frozenset({"FOUND", "ERROR"}) | STALE_WRITES


def _stale_enabled(state: OffsetState, action: StalePullAnswered) -> bool:
    if not client_alive(state, action.client) or not valid(state, action.client, action.queue):
        return False
    stale = state.lanes[action.client][action.queue].stale
    return action.status in STALE_ANSWERS and any(_answers(action, s) for s in stale)


def _answers(action: StalePullAnswered, pull: StalePull) -> bool:
    return pull.offset == action.offset and action.empty in (None, pull.empty)


def _stale_answered(state: OffsetState, action: StalePullAnswered) -> OffsetState:
    """The answer to a pull of a dropped ProcessQueue: nothing is consumed, but a NO_NEW_MSG (NO_MATCHED_MSG) answer
    to a ProcessQueue that held no message writes its offset with increaseOnly (correctTagsOffset does not check
    isDropped): a late write into the memory entry the queue has now (OFF-12, OFF-14)."""
    lane = state.lanes[action.client][action.queue]
    pulls = [s for s in lane.stale if _answers(action, s)]
    # Of two stale pulls at one offset the answer goes to the empty one when it writes (the machine's choice of
    # the interleaving that matters).
    pull = max(pulls, key=lambda s: s.empty)
    stale = list(lane.stale)
    stale.remove(pull)
    memory, held, raised = lane.memory, lane.held, lane.raised
    if action.status in STALE_WRITES and pull.empty:
        memory = update_offset(lane.memory, action.offset, True)
        if held is not None and memory != lane.memory:
            held = but(held, late_write=True)
        raised = raised or (lane.reading is not None and memory != lane.memory)
    return state.with_lane(action.client, action.queue, but(lane, memory=memory, held=held, stale=tuple(stale),
                                                            raised=raised))


# --- Guards and effects: consumption ------------------------------------------------------------------------


def _request(held: Held, offsets: tuple[int, ...], finished: bool) -> ConsumeRequest | None:
    for request in held.requests:
        if request.offsets == offsets and (request.removed is not None) == finished:
            return request
    return None


def _finished_enabled(state: OffsetState, action: ConsumeFinished) -> bool:
    held = held_lane(state, action.client, action.queue)
    if held is None or state.config.orderly or _request(held, action.offsets, False) is None:
        return False
    if not set(action.send_back_failed) <= set(action.offsets):
        return False
    return not action.send_back_failed or (state.config.clustering and not action.success)


def _consume_finished(state: OffsetState, action: ConsumeFinished) -> OffsetState:
    """A concurrent consume request finished (OFF-4): what was sent back failing stays cached and is resubmitted,
    the rest leaves the ProcessQueue and its removeMessage result waits to be written; clustering sends failures
    back to the queue's broker, whose retry queue receives each copy later (OFF-30), broadcasting drops them. What
    left is handled (OFF-17)."""
    config = state.config
    client, queue = action.client, action.queue
    lane = state.lanes[client][queue]
    held = lane.held
    assert held is not None
    request = _request(held, action.offsets, False)
    assert request is not None
    failed = tuple(o in action.send_back_failed for o in request.offsets)
    pq, commit, retried = concurrent_consume_result(held.pq, request.offsets, failed, config.message_model)
    requests = list(held.requests)
    requests.remove(request)
    if commit != NO_OFFSET:
        requests.append(ConsumeRequest(request.offsets, commit))
    if retried:
        requests.append(ConsumeRequest(retried))
    state = state.with_lane(client, queue, but(lane, held=but(held, pq=pq,
                                                                                 requests=canonical_requests(requests))))
    state = mark_handled(state, client, queue, set(request.offsets) - set(retried))
    if config.clustering and not action.success:
        retry = config.retry_queue(config.queues[queue].broker_name)
        if retry is not None and state.queues[retry].owed >= 0:
            r = state.queues[retry]
            state = state.with_queue(retry, but(r, owed=r.owed + len(request.offsets) - len(retried)))
    return but(state, send_back_failures=state.send_back_failures + (1 if retried else 0))


def _updated_enabled(state: OffsetState, action: OffsetUpdated) -> bool:
    held = held_lane(state, action.client, action.queue)
    return held is not None and _request(held, action.offsets, True) is not None


def _offset_updated(state: OffsetState, action: OffsetUpdated) -> OffsetState:
    """The consume thread writes its removeMessage result with updateOffset(increaseOnly=true) (OFF-4, OFF-5)."""
    lane = state.lanes[action.client][action.queue]
    held = lane.held
    assert held is not None
    request = _request(held, action.offsets, True)
    assert request is not None and request.removed is not None
    requests = list(held.requests)
    requests.remove(request)
    return state.with_lane(action.client, action.queue, but(
        lane, memory=update_offset(lane.memory, request.removed, True),
        held=but(held, requests=tuple(requests))))


def _take_enabled(state: OffsetState, action: TakeMessages) -> bool:
    held = held_lane(state, action.client, action.queue)
    return state.config.orderly and held is not None and not held.pq.taken and bool(held.pq.cached)


def _take(state: OffsetState, action: TakeMessages) -> OffsetState:
    """Orderly takeMessages: the smallest cached offsets move to the consuming map (OFF-15)."""
    lane = state.lanes[action.client][action.queue]
    assert lane.held is not None
    pq, _taken = take_messages(lane.held.pq, state.config.consume_batch)
    return state.with_lane(action.client, action.queue, but(lane, held=but(lane.held, pq=pq)))


def _orderly_enabled(state: OffsetState, action: OrderlyConsumed) -> bool:
    held = held_lane(state, action.client, action.queue)
    return state.config.orderly and held is not None and bool(held.pq.taken)


def _orderly_consumed(state: OffsetState, action: OrderlyConsumed) -> OffsetState:
    """Orderly: SUCCESS commits the taken batch, written with updateOffset(increaseOnly=false); SUSPEND puts it
    back (OFF-15)."""
    client, queue = action.client, action.queue
    lane = state.lanes[client][queue]
    held = lane.held
    assert held is not None
    if not action.success:
        again = make_message_to_consume_again(held.pq, held.pq.taken)
        return state.with_lane(client, queue, but(lane, held=but(held, pq=again)))
    pq, commit = orderly_commit(held.pq)
    state = state.with_lane(client, queue, but(lane, memory=update_offset(lane.memory, commit, False),
                                                        held=but(held, pq=pq)))
    return mark_handled(state, client, queue, held.pq.taken)
