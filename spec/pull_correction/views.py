"""Pull correction: what the state says, through the oracles: the broker's decision for a pull, the queues the
consumer is given, where a queue starts, the offset the next pull asks for, and the recomputed min offsets."""

from __future__ import annotations

from types import EllipsisType

import attrs

from rocketspec.spec.protocol import (
    LONG_POLLING_CHECK_INTERVAL_MS,
    PERM_READ,
    GetMessageStatus,
)
from rocketspec.spec.pull_correction.consumers import (
    consumer_queue_ids,
    offset_by_time,
    start_offset,
    stored_offset,
)
from rocketspec.spec.pull_correction.oracles import (
    CqEntry,
    pull_precheck,
    response_code,
    roll_next_file,
    scan_queue,
    store_status,
)
from rocketspec.spec.pull_correction.state import (
    Answer,
    Phase,
    PullState,
    QueueState,
    Request,
    Store,
    Subscription,
    takes,
)

#: How often the hold service checks every held request (long polling).
CHECK_MS = LONG_POLLING_CHECK_INTERVAL_MS


def failed_answer(offset: int) -> Answer:
    """The client's view of a request whose connection closed: no answer, an exception (PULL-23)."""
    return Answer(offset, None, None, 0, 0, 0)


# --------------------------------------------------------------------------------------------------------------
# The broker's decision
# --------------------------------------------------------------------------------------------------------------


def decide(
    state: PullState,
    queue_id: int,
    offset: int,
    *,
    first: bool = True,
    suspend: bool = True,
    subscription_flag: bool | None = None,
    subscription: Subscription | EllipsisType = ...,
    max_msgs: int | None = None,
    registered: bool | None = None,
    raw: bool = False,
    topic_exists: bool = True,
    tag_expression: bool = True,
    parses: bool = True,
    newer: bool = False,
) -> Answer:
    """The broker's outcome for a pull at ``offset`` of queue ``queue_id``, through the oracles (PULL-1 to PULL-17).

    Defaults are the consumer's pull: a push pull has no subscription flag (the broker needs the registered group),
    a lite pull has it; both suspend, ask for pullBatchSize messages with the consumer's subscription (``...``; None
    is ``*``). ``first`` is
    brokerAllowSuspend (false for a held request processed again). ``raw``: ``queue_id`` is an id of the topic (any
    id, even one it does not have), not a queue of the state (the %RETRY% queue is not the topic's); a raw pull
    may also name a topic that does not exist, carry an SQL92 subscription (``tag_expression`` false; the broker's
    enablePropertyFilter is off) that ``parses`` or not, or ask for a subscription version ``newer`` than the
    registered one.
    """
    cfg = state.config
    flag = cfg.lite if subscription_flag is None else subscription_flag
    known = state.registered if registered is None else registered
    topic_queue, read_queue_nums, perm = cfg.topic_of(queue_id) if not raw else (queue_id, cfg.read_queues, cfg.perm)
    failed = pull_precheck(
        topic_exists=topic_exists, topic_readable=bool(perm & PERM_READ), queue_id=topic_queue,
        read_queue_nums=read_queue_nums, has_subscription_flag=flag, subscription_parses=parses,
        group_info_exists=known, subscription_exists=known, request_sub_version=1 if newer else 0,
        tag_expression=tag_expression,
    )
    if failed is not None:
        return Answer(offset, None, failed, 0, 0, 0)
    sub = cfg.subscription_of(queue_id) if isinstance(subscription, EllipsisType) else subscription
    batch = cfg.batch if max_msgs is None else max_msgs
    store = state.queues[queue_id].store
    readable = offset >= store.cq_from
    scan = None
    entries: tuple[CqEntry, ...] = ()
    if store.min_offset <= offset < store.max_offset and readable:
        end = min(store.max_offset, roll_next_file(offset, cfg.cq_file_entries))
        entries = tuple(
            (CqEntry.MATCH if takes(sub, store.tags[j]) else CqEntry.NO_MATCH)
            if j >= store.data_from
            else (CqEntry.GONE_MATCH if takes(sub, store.tags[j]) else CqEntry.GONE_NO_MATCH)
            for j in range(offset, end)
        )
        scan = scan_queue(entries, max_msg_nums=batch)
    decision = store_status(
        offset, store.min_offset, store.max_offset, entry_readable=readable, scan=scan, is_slave=cfg.is_slave,
        offset_check_in_slave=cfg.offset_check_in_slave, cq_file_entries=cfg.cq_file_entries, profile=cfg.profile,
    )
    answer = response_code(
        decision.status, requested_offset=offset, is_slave=cfg.is_slave,
        offset_check_in_slave=cfg.offset_check_in_slave, suspend=suspend, broker_allow_suspend=first,
        long_polling_enable=cfg.long_polling,
    )
    delivered: tuple[int, ...] = ()
    if decision.status is GetMessageStatus.FOUND and scan is not None:
        delivered = tuple(offset + k for k in range(scan.entries_scanned) if entries[k] is CqEntry.MATCH)
    return Answer(offset, decision.status, answer.code, decision.next_begin_offset, store.min_offset,
                  store.max_offset, delivered)
# --------------------------------------------------------------------------------------------------------------
# Views of the state
# --------------------------------------------------------------------------------------------------------------


def consumer_queues(state: PullState) -> tuple[int, ...]:
    """The queues the consumer is given (PULL-37): the topic's readable read queues (a lite pull consumer assigned
    by hand: its queues) and, for a clustering push consumer, its %RETRY% queue."""
    cfg = state.config
    if cfg.lite and cfg.assign is not None:
        return tuple(q for q in cfg.assign if 0 <= q < cfg.topic_queues)
    ids = consumer_queue_ids(cfg.read_queues, cfg.perm)
    return ids + ((cfg.topic_queues,) if cfg.retry_queue and not cfg.lite else ())


def live(state: PullState, queue_id: int) -> bool:
    """The running consumer pulls the queue: it owns a process queue that is not dropped (lite: assigned)."""
    qs = state.queues[queue_id]
    return (
        state.running and qs.pq is not None and not qs.pq.dropped and (qs.assigned or not state.config.lite)
    )


def searched_offset(state: PullState, queue_id: int) -> int:
    """SEARCH_OFFSET_BY_TIMESTAMP of the consumer's consumeTimestamp (PULL-30)."""
    store = state.queues[queue_id].store
    return offset_by_time(store.times, store.cq_from, store.min_offset, store.data_from,
                          state.config.consume_timestamp)


def earliest_time(state: PullState, queue_id: int) -> int:
    """GET_EARLIEST_MSG_STORETIME: the store time of the queue's message at its min offset, -1 when the queue is
    empty or that message's consume-queue file or commit-log data is gone (PULL-43).

    pre: 0 <= queue_id < len(state.queues)
    post: __return__ == -1 or __return__ in state.queues[queue_id].store.times
    """
    store = state.queues[queue_id].store
    low = store.min_offset
    if not 0 <= low < min(store.max_offset, len(store.times)) or low < store.data_from or low < store.cq_from:
        return -1
    return store.times[low]


def computed_start(state: PullState, queue_id: int, last: int) -> int:
    """computePullFromWhere after ``readOffset`` answered ``last`` (PULL-28)."""
    cfg, store = state.config, state.queues[queue_id].store
    return start_offset(cfg.from_where, last, retry=cfg.is_retry(queue_id), max_offset=store.max_offset,
                        searched=searched_offset(state, queue_id))


def broker_answer(state: PullState, queue_id: int) -> int:
    """QUERY_CONSUMER_OFFSET's answer as readOffset(READ_FROM_STORE) gives it (PULL-29)."""
    qs = state.queues[queue_id]
    return stored_offset(qs.broker_offset, qs.store.min_offset)


def rebalance_start(state: PullState, queue_id: int) -> int:
    """Where a rebalance starts a queue it adds: the broker's answer, else consumeFromWhere (PULL-24, PULL-28)."""
    return computed_start(state, queue_id, broker_answer(state, queue_id))


def next_pull_offset(state: PullState, queue_id: int) -> int:
    """The offset the consumer's next pull of the queue asks for: the push PullRequest's; the lite pull task's seek,
    pull offset, else computePullFromWhere reading the offset store's memory first (PULL-31)."""
    qs = state.queues[queue_id]
    if not state.config.lite:
        assert qs.pull_offset is not None
        return qs.pull_offset
    if qs.seek is not None:
        return qs.seek
    if qs.pull_offset is not None:
        return qs.pull_offset
    last = qs.memory_offset if qs.memory_offset is not None else broker_answer(state, queue_id)
    return computed_start(state, queue_id, last)


def pull_exact(state: PullState, qs: QueueState) -> bool:
    """Whether the queue's scheduled pull goes out at exactly its time (a lite pull that must first compute its
    offset asks the broker first, which takes a round trip)."""
    if qs.pull_in is None or not state.running or qs.pq is None or qs.pq.dropped:
        return False
    if qs.late or qs.paused or state.suspended:
        return False  # the pull loop's next 1 s look sends it (PULL-40)
    return not state.config.lite or qs.pull_offset is not None or qs.seek is not None


def first_request(qs: QueueState, offset: int, phase: Phase, wakeable: bool = False) -> int | None:
    """The index of the queue's earliest request at ``offset`` in ``phase`` (and wakeable), or None."""
    for i, r in enumerate(qs.requests):
        if r.offset == offset and r.phase is phase and (not wakeable or r.wake_by is not None):
            return i
    return None


def replaced(qs: QueueState, index: int, request: Request | None) -> tuple[Request, ...]:
    rest = list(qs.requests)
    if request is None:
        del rest[index]
    else:
        rest[index] = request
    return tuple(rest)


def quiet(state: PullState) -> bool:
    """No pull of the consumer is on the wire (every one is held by the broker, or none is out)."""
    return all(r.phase is Phase.HELD for qs in state.queues for r in qs.requests)


def recovered(store: Store, file_entries: int) -> Store:
    """A consume queue after a restart (PULL-38): the files all of whose entries lost their data are gone (never the
    last), and the min offset is its first file's first entry whose data is there, else 0 (correctMinOffset from a
    fresh minLogicOffset; 4.9.8's CleanConsumeQueueService deletes those files on its first run after the start)."""
    cq_from = store.cq_from
    while store.max_offset and cq_from + file_entries <= store.data_from and \
            cq_from < last_file_start(store, file_entries):
        cq_from += file_entries
    first = max(cq_from, store.data_from)
    low = first if store.max_offset and first < min(cq_from + file_entries, store.max_offset) else 0
    return attrs.evolve(store, cq_from=cq_from, min_offset=low)


def last_file_start(store: Store, file_entries: int) -> int:
    return ((store.max_offset - 1) // file_entries) * file_entries


def corrected_min(state: PullState, queue_id: int) -> int:
    store, f = state.queues[queue_id].store, state.config.cq_file_entries
    first = max(store.cq_from, store.data_from)
    if first < min(store.cq_from + f, store.max_offset):
        return first
    return store.min_offset




def queue_exists(state: PullState, queue_id: int) -> bool:
    return 0 <= queue_id < state.config.queue_count
