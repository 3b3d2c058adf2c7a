"""Pull correction: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

import attrs

from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.protocol import (
    OFFSET_ILLEGAL_REMOVE_DELAY_MS,
    ConsumeFromWhere,
    GetMessageStatus,
    ResponseCode,
)
from rocketspec.spec.pull_correction.machine import TRANSITIONS, Bounds
from rocketspec.spec.pull_correction.oracles import V4_9_4
from rocketspec.spec.pull_correction.pulls import taken
from rocketspec.spec.pull_correction.state import (
    Action,
    Answer,
    Answered,
    BrokerRestart,
    Commit,
    Config,
    ConsumerKind,
    ConsumerStops,
    DelayedFix,
    HoldTimeout,
    Persist,
    PersistSent,
    Phase,
    Poll,
    Pull,
    PullSent,
    PullState,
    QueueDestroyed,
    QueueRemoved,
    RawPull,
    Rebalance,
    Seek,
    Subscription,
    Wake,
    initial_state,
)
from rocketspec.spec.pull_correction.views import CHECK_MS, consumer_queues, earliest_time, live, quiet
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

# --------------------------------------------------------------------------------------------------------------
# Invariants
# --------------------------------------------------------------------------------------------------------------


def _answer_of(action: Action) -> Answer | None:
    if isinstance(action, Pull | Wake | HoldTimeout | RawPull):
        return action.answer
    return None


def _queue_of(action: Action) -> int:
    return getattr(action, "queue_id", 0)


def _plain_slave(state: PullState) -> bool:
    return state.config.is_slave and not state.config.offset_check_in_slave


def _stored(state: PullState, action: Action) -> bool:
    """The answer of ``action`` came from the store (its checks passed)."""
    a = _answer_of(action)
    return a is not None and a.status is not None


def _next_within_queue(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is None or a.status is None:
        return True
    if _plain_slave(before) and a.next_offset == a.requested:
        return True
    return a.min_offset <= a.next_offset <= a.max_offset


def _found_advances(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.status is not GetMessageStatus.FOUND:
        return True
    return a.next_offset > a.requested and bool(a.delivered) and all(
        a.requested <= o < a.next_offset for o in a.delivered
    )


def _too_small_to_min(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.status is not GetMessageStatus.OFFSET_TOO_SMALL:
        return True
    return a.next_offset == (a.requested if _plain_slave(before) else a.min_offset)


def _overflow_badly_per_version(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.status is not GetMessageStatus.OFFSET_OVERFLOW_BADLY or _plain_slave(before):
        return True
    back_to_zero = a.min_offset == 0 and before.config.profile < V4_9_4
    return a.next_offset == (a.min_offset if back_to_zero else a.max_offset)


def _moved_only_outside(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is not ResponseCode.PULL_OFFSET_MOVED:
        return True
    return a.requested < a.min_offset or a.requested > a.max_offset


def _subscription(action: Action, state: PullState) -> Subscription:
    return action.subscription if isinstance(action, RawPull) else state.config.subscription_of(_queue_of(action))


def _no_skip(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is None or a.status is None:
        return True
    store = before.queues[_queue_of(action)].store
    sub = _subscription(action, before)
    return all(o in a.delivered for o in range(a.requested, a.next_offset) if store.readable(o, sub))


def _held_only_without_message(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_of(action)
    if a is None or a.code is not None:
        return True
    store = before.queues[_queue_of(action)].store
    return isinstance(action, Pull) and (
        a.requested == store.max_offset or store.min_offset <= a.requested < store.cq_from
        or (store.max_offset == 0 and a.requested == 0)
    )


def _answered_once(before: PullState, action: Action, after: PullState) -> bool:
    if not isinstance(action, Pull | Wake | HoldTimeout):
        return True
    q = action.queue_id
    phase = Phase.SENT if isinstance(action, Pull) else Phase.HELD
    count = sum(1 for r in before.queues[q].requests if r.offset == action.offset and r.phase is phase)
    after_count = sum(1 for r in after.queues[q].requests if r.offset == action.offset and r.phase is phase)
    answered = sum(1 for r in after.queues[q].requests if r.phase is Phase.ANSWERED) - sum(
        1 for r in before.queues[q].requests if r.phase is Phase.ANSWERED)
    return after_count == count - 1 and answered == (0 if action.answer.code is None else 1)


def _commits(before: PullState, action: Action, after: PullState) -> bool:
    if isinstance(action, Wake | HoldTimeout):
        return after.queues[action.queue_id].broker_offset == before.queues[action.queue_id].broker_offset
    if isinstance(action, Pull):
        q = action.queue_id
        request = next(r for r in before.queues[q].requests if r.offset == action.offset and r.phase is Phase.SENT)
        if before.config.is_slave or request.commit is None or action.answer.status is None:
            return after.queues[q].broker_offset == before.queues[q].broker_offset
        return after.queues[q].broker_offset == request.commit and request.commit > 0
    if isinstance(action, PullSent) and not before.config.lite:
        memory = before.queues[action.queue_id].memory_offset
        request = after.queues[action.queue_id].requests[-1]
        return request.commit == (memory if memory is not None and memory > 0 else None)
    return True


def _answer_reaching(before: PullState, action: Action) -> Answer | None:
    """The answer ``action`` hands the consumer's live request (None: not such an action)."""
    if not isinstance(action, Answered):
        return None
    qs = before.queues[action.queue_id]
    request = next(r for r in qs.requests if r.offset == action.offset and r.phase is Phase.ANSWERED)
    return request.answer if request.live else None


def _retry_increase_only(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_reaching(before, action)
    if a is None or before.config.lite or a.code not in (ResponseCode.PULL_NOT_FOUND,
                                                          ResponseCode.PULL_RETRY_IMMEDIATELY):
        return True
    q = _queue_of(action)
    pq, memory, now = before.queues[q].pq, before.queues[q].memory_offset, after.queues[q].memory_offset
    assert pq is not None
    if pq.cached:
        return now == memory
    return now == (a.next_offset if memory is None else max(memory, a.next_offset))


def _illegal_drops(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_reaching(before, action)
    if a is None or before.config.lite or a.code is not ResponseCode.PULL_OFFSET_MOVED:
        return True
    qs, was = after.queues[_queue_of(action)], before.queues[_queue_of(action)]
    return (
        qs.pq is not None and qs.pq.dropped and qs.fix is not None and qs.fix.offset == a.next_offset
        and not qs.fix.increase_only and qs.fix_in == OFFSET_ILLEGAL_REMOVE_DELAY_MS
        and qs.memory_offset == was.memory_offset and qs.pull_in is None
    )


def _lite_never_drops(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_reaching(before, action)
    if a is None or not before.config.lite:
        return True
    qs, was = after.queues[_queue_of(action)], before.queues[_queue_of(action)]
    ok = qs.pq is not None and not qs.pq.dropped and qs.fix is None and qs.memory_offset == was.memory_offset
    if a.code is None or (a.status is None and a.code not in (ResponseCode.PULL_OFFSET_MOVED,)):
        return ok and qs.pull_offset == was.pull_offset and qs.pull_in is not None and qs.pull_in > 0
    return ok and qs.pull_offset == a.next_offset and qs.pull_in == 0


def _fix_stores_correction(before: PullState, action: Action, after: PullState) -> bool:
    if isinstance(action, DelayedFix):
        fix = before.queues[action.queue_id].fix
        qs = after.queues[action.queue_id]
        return fix is not None and qs.memory_offset == fix.offset and qs.removing
    if isinstance(action, QueueRemoved):
        qs = after.queues[action.queue_id]
        return qs.pq is None and qs.memory_offset is None
    return True


def _rebalance_resumes(before: PullState, action: Action, after: PullState) -> bool:
    if not isinstance(action, Rebalance):
        return True
    was = before.queues[action.queue_id]
    qs = after.queues[action.queue_id]
    if was.broker_offset is not None and action.start != was.broker_offset:
        return False
    return before.config.lite or qs.pull_offset == action.start


def _start_per_where(before: PullState, action: Action, after: PullState) -> bool:
    """A queue new to its group starts at 0 while it never lost data, else where consumeFromWhere says."""
    if isinstance(action, Rebalance):
        start = action.start
    elif isinstance(action, PullSent) and before.config.lite:
        qs = before.queues[action.queue_id]
        if qs.seek is not None or qs.pull_offset is not None or qs.memory_offset is not None:
            return True
        start = action.offset
    else:
        return True
    qs = before.queues[_queue_of(action)]
    if qs.broker_offset is not None:
        return True
    store, cfg = qs.store, before.config
    if store.min_offset <= 0:
        return start == 0
    where = cfg.from_where
    if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
        return start == 0
    if where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET or cfg.is_retry(_queue_of(action)):
        return start == (0 if cfg.is_retry(_queue_of(action)) and where is not ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
                         else store.max_offset)
    readable = [o for o in range(store.first_readable, store.max_offset)]
    if not readable:
        return start <= max(store.cq_from, store.min_offset)
    if all(store.times[o] > cfg.consume_timestamp for o in readable):
        return start == readable[0]
    if all(store.times[o] < cfg.consume_timestamp for o in readable):
        return start == store.max_offset - 1
    return store.times[start] == cfg.consume_timestamp or readable[0] <= start < store.max_offset


def _found_enqueues(before: PullState, action: Action, after: PullState) -> bool:
    a = _answer_reaching(before, action)
    if a is None or a.code is not ResponseCode.SUCCESS:
        return True
    qs, was = after.queues[_queue_of(action)], before.queues[_queue_of(action)]
    assert qs.pq is not None
    cached = set(a.delivered) <= qs.pq.cached
    if before.config.lite:
        return cached and after.cache[-1] == (_queue_of(action), a.delivered) and qs.pull_offset == a.next_offset
    return cached and qs.pull_offset == a.next_offset and qs.memory_offset == was.memory_offset and qs.pull_in == 0


def _lite_pull_offset(before: PullState, action: Action, after: PullState) -> bool:
    """A lite pull asks for a pending seek first, then the pull offset (PULL-31); it never commits (PULL-33)."""
    if not isinstance(action, PullSent) or not before.config.lite:
        return True
    qs, now = before.queues[action.queue_id], after.queues[action.queue_id]
    if qs.seek is not None:
        return action.offset == qs.seek and now.consume_offset == qs.seek and now.seek is None
    if qs.pull_offset is not None:
        return action.offset == qs.pull_offset
    return now.requests[-1].commit is None


def _poll_takes_the_oldest(before: PullState, action: Action, after: PullState) -> bool:
    if not isinstance(action, Poll):
        return True
    head = taken(before)
    if head is None:
        return after.cache == ()
    q, offsets = head
    pq, was = after.queues[q].pq, before.queues[q].pq
    if pq is None or set(offsets) & pq.cached:
        return False
    consume_offset = after.queues[q].consume_offset
    if consume_offset is None:
        return min(offsets) <= 0
    # removeMessage answers -1 on an empty process queue (a queue written again delivered these offsets twice and
    # the first poll took them), else the smallest offset still cached (a rewritten queue's may be below the
    # request's), else queueOffsetMax + 1.
    if was is not None and not was.cached:
        return consume_offset == -1
    return consume_offset == (min(pq.cached) if pq.cached else pq.offset_max + 1)


def _commit_stores_consume_offsets(before: PullState, action: Action, after: PullState) -> bool:
    if not isinstance(action, Commit):
        return True
    if action.offsets is not None:
        return all(after.queues[q].memory_offset == o for q, o in action.offsets
                   if o != -1 and before.queues[q].assigned and live(before, q))
    return all(qs.memory_offset == qs.consume_offset for q, qs in enumerate(after.queues)
               if qs.assigned and qs.consume_offset is not None and live(after, q))


def _seek_restarts(before: PullState, action: Action, after: PullState) -> bool:
    if not isinstance(action, Seek):
        return True
    qs, store = after.queues[action.queue_id], before.queues[action.queue_id].store
    return (
        store.min_offset <= action.offset <= store.max_offset and qs.seek == action.offset
        and qs.pq is not None and not qs.pq.cached and all(q != action.queue_id for q, _ in after.cache)
        and all(not r.live for r in qs.requests) and qs.pull_in == 0
    )


def _earliest_time(state: PullState) -> bool:
    for q, qs in enumerate(state.queues):
        time = earliest_time(state, q)
        store = qs.store
        readable = store.first_readable == store.min_offset < store.max_offset
        if time != (store.times[store.min_offset] if readable else -1):
            return False
    return True


def _restart_forgets(before: PullState, action: Action, after: PullState) -> bool:
    if not isinstance(action, BrokerRestart):
        return True
    for was, qs in zip(before.queues, after.queues, strict=True):
        kept = was.store.durable if action.crash else was.store.max_offset
        offset = was.durable_offset if action.crash else was.broker_offset
        if qs.store.max_offset != kept or qs.broker_offset != offset or qs.store.tags != was.store.tags[:kept]:
            return False
    return not after.registered and all(
        r.phase is Phase.ANSWERED and r.answer is not None and r.answer.code is None
        for qs in after.queues for r in qs.requests) and all(not qs.in_transit for qs in after.queues)


def _stop_persists(before: PullState, action: Action, after: PullState) -> bool:
    if not isinstance(action, ConsumerStops):
        return True
    for was, qs in zip(before.queues, after.queues, strict=True):
        if qs.requests or qs.pq is not None:
            return False
        owed = not action.crash and was.pq is not None and was.memory_offset is not None
        kept = () if action.crash else was.in_transit
        if qs.in_transit != (*kept, *((was.memory_offset,) if owed else ())):
            return False
    return quiet(before)


def _paused_sends_nothing(before: PullState, action: Action, after: PullState) -> bool:
    if isinstance(action, PullSent):
        return not before.suspended and not before.queues[action.queue_id].paused
    return True


def _destroyed_restarts_at_zero(before: PullState, action: Action, after: PullState) -> bool:
    if not isinstance(action, QueueDestroyed):
        return True
    was, store = before.queues[action.queue_id].store, after.queues[action.queue_id].store
    return was.data_from == was.max_offset > 0 and store.max_offset == 0 and store.min_offset == 0


def _held_requires_live_queue(state: PullState) -> bool:
    return all(live(state, q) for q, qs in enumerate(state.queues)
               for r in qs.requests if r.live)


def _fix_only_when_dropped(state: PullState) -> bool:
    return all(qs.fix is None or (qs.pq is not None and qs.pq.dropped) for qs in state.queues)


def _store_bounds(state: PullState) -> bool:
    return all(s.min_offset <= s.max_offset and s.cq_from <= s.data_from <= s.max_offset and s.min_offset >= 0
               and s.durable <= s.max_offset and (s.durable == s.max_offset or not state.config.flush_sync)
               for s in (qs.store for qs in state.queues))


def _one_live_request(state: PullState) -> bool:
    return all(sum(1 for r in qs.requests if r.live) <= 1 for qs in state.queues)


def _owned_queues_are_given(state: PullState) -> bool:
    given = set(consumer_queues(state))
    return all(q in given for q, qs in enumerate(state.queues) if qs.pq is not None)


def _lite_caches_consume_requests(state: PullState) -> bool:
    if not state.config.lite:
        return not state.cache and all(r.commit is None or r.commit > 0 for qs in state.queues for r in qs.requests)
    # A queue's messages in the process queue are those of its consume requests still cached; not the reverse: a
    # queue wiped and written again delivers an offset twice, and polling the first request takes it out of the
    # process queue while the second still holds it.
    if not all(r.commit is None for qs in state.queues for r in qs.requests):
        return False
    if not all(state.queues[q].pq is not None for q, _ in state.cache):
        return False
    held: dict[int, set[int]] = {}
    for q, offsets in state.cache:
        held.setdefault(q, set()).update(offsets)
    return all(qs.pq is None or qs.pq.dropped or qs.pq.cached <= held.get(q, set())
               for q, qs in enumerate(state.queues))


def _lite_never_dropped(state: PullState) -> bool:
    return not state.config.lite or all(qs.pq is None or not qs.pq.dropped for qs in state.queues)


INVARIANTS: tuple[Invariant[PullState], ...] = (
    Invariant("a live request has a live process queue", ("PULL-13", "PULL-22"), _held_requires_live_queue),
    Invariant("pending fix only for a dropped queue", ("PULL-22",), _fix_only_when_dropped),
    Invariant("store bounds are ordered", ("PULL-3", "PULL-6", "PULL-42"), _store_bounds),
    Invariant("the earliest store time is the min offset's message's, or -1", ("PULL-43",), _earliest_time),
    Invariant("at most one live request per queue", ("PULL-14", "PULL-32"), _one_live_request),
    Invariant("the consumer owns only the queues it is given", ("PULL-37",), _owned_queues_are_given),
    Invariant("consume requests are cached; only push pulls commit", ("PULL-33", "PULL-34"),
              _lite_caches_consume_requests),
    Invariant("a lite pull consumer never drops a queue", ("PULL-32",), _lite_never_dropped),
)

STEP_INVARIANTS: tuple[StepInvariant[PullState, Action], ...] = (
    StepInvariant("answer's next offset within [min, max]", ("PULL-25", "PULL-7", "PULL-6"), _next_within_queue),
    StepInvariant("FOUND advances past the requested offset", ("PULL-25", "PULL-8", "PULL-9"), _found_advances),
    StepInvariant("OFFSET_TOO_SMALL corrects to min", ("PULL-3", "PULL-7"), _too_small_to_min),
    StepInvariant("OFFSET_OVERFLOW_BADLY correction per version", ("PULL-5",), _overflow_badly_per_version),
    StepInvariant("PULL_OFFSET_MOVED only outside [min, max]", ("PULL-26", "PULL-10", "PULL-2", "PULL-4"),
                  _moved_only_outside),
    StepInvariant("no readable matching message is skipped", ("PULL-27", "PULL-4", "PULL-9", "PULL-21"), _no_skip),
    StepInvariant("held only when no message at the offset", ("PULL-13", "PULL-4", "PULL-6"),
                  _held_only_without_message),
    StepInvariant("a held request is answered exactly once", ("PULL-14",), _answered_once),
    StepInvariant("only a first processing on a master commits", ("PULL-18",), _commits),
    StepInvariant("NO_NEW_MSG / NO_MATCHED_MSG store increase-only", ("PULL-21", "PULL-19"), _retry_increase_only),
    StepInvariant("OFFSET_ILLEGAL drops and schedules the fix", ("PULL-22", "PULL-19"), _illegal_drops),
    StepInvariant("the fix stores the correction as is", ("PULL-22",), _fix_stores_correction),
    StepInvariant("FOUND enqueues and moves on", ("PULL-20", "PULL-19", "PULL-32"), _found_enqueues),
    StepInvariant("rebalance resumes from the broker's offset", ("PULL-24",), _rebalance_resumes),
    StepInvariant("a new queue starts where consumeFromWhere says", ("PULL-28", "PULL-29", "PULL-30"),
                  _start_per_where),
    StepInvariant("a lite pull consumer only moves its pull offset", ("PULL-32",), _lite_never_drops),
    StepInvariant("a lite pull asks for the seek, then the pull offset", ("PULL-31", "PULL-33"), _lite_pull_offset),
    StepInvariant("poll returns the oldest consume request", ("PULL-34",), _poll_takes_the_oldest),
    StepInvariant("commit stores the consume offsets", ("PULL-35",), _commit_stores_consume_offsets),
    StepInvariant("seek restarts the queue from the offset", ("PULL-36",), _seek_restarts),
    StepInvariant("a broker restart fails what is on the wire; a crash keeps what was flushed",
                  ("PULL-38", "PULL-23", "PULL-42", "PULL-44"), _restart_forgets),
    StepInvariant("a shutdown persists, a crash does not", ("PULL-39",), _stop_persists),
    StepInvariant("a suspended consumer or paused queue does not pull", ("PULL-40",), _paused_sends_nothing),
    StepInvariant("a destroyed queue starts again at 0", ("PULL-41",), _destroyed_restarts_at_zero),
)


# --------------------------------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------------------------------


def model(
    *,
    profile: VersionProfile = DEFAULT_PROFILE,
    is_slave: bool = False,
    offset_check_in_slave: bool = False,
    max_messages: int = 3,
    cq_file_entries: int = 2,
    batch: int = 2,
    filtered_messages: bool = True,
    kinds: tuple[ConsumerKind, ...] = (ConsumerKind.PUSH, ConsumerKind.LITE_PULL),
    bounds: Bounds | None = None,
) -> Model[PullState, Action]:
    """One queue of up to ``max_messages`` messages (appended, deleted from the head, consume-queue files of
    ``cq_file_entries`` entries), pulled ``batch`` messages at a time, served by a master or a slave:

    - by a push consumer whose broker-stored offset is 0 or past the queue's end (some messages filtered out);
    - by a push consumer of a group new to the queue, consumeFromWhere CONSUME_FROM_LAST_OFFSET or
      CONSUME_FROM_TIMESTAMP (a timestamp between the messages; no message filtered out);
    - by a lite pull consumer (one message at a time, two at most) that polls, commits and seeks, subscribed, or
      assigned the queue with a stored offset past its end.

    The schedule delivers what is on the wire first (:func:`wire_first`) and lets time jump to the next deadline.
    """
    base = Config(profile, is_slave, offset_check_in_slave, max_messages, cq_file_entries, batch, filtered_messages)
    initial: list[PullState] = []
    if ConsumerKind.PUSH in kinds:
        for b in (0, max_messages + 1):
            initial.append(initial_state(base, (b,)))
        for where in (ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, ConsumeFromWhere.CONSUME_FROM_TIMESTAMP):
            fresh = attrs.evolve(base, from_where=where, consume_timestamp=1, filtered_messages=False)
            initial.append(initial_state(fresh, (None,)))
    if ConsumerKind.LITE_PULL in kinds:
        lite = attrs.evolve(base, consumer=ConsumerKind.LITE_PULL, batch=1, max_messages=min(max_messages, 2),
                            filtered_messages=False, pull_threshold_for_all=1)
        initial.append(initial_state(lite, (None,)))
        initial.append(initial_state(attrs.evolve(lite, assign=(0,)), (max_messages + 1,)))
    role = "master" if not is_slave else ("slave, offsetCheckInSlave" if offset_check_in_slave else "slave")
    description = (
        f"1 queue of <= {max_messages} messages ({'some' if filtered_messages else 'none'} filtered out), "
        f"consume-queue files of {cq_file_entries}, batch {batch}, {'/'.join(k.value for k in kinds)} consumer, "
        f"stored offset 0, {max_messages + 1} or none (last / timestamp), lite pull of <= 2, {role}, {profile}"
    )
    chosen = bounds or Bounds()
    return TRANSITIONS.model(chosen, description, initial, INVARIANTS, STEP_INVARIANTS,
                             actions=lambda state: wire_first(state, chosen))


#: What the network delivers: a request to the broker, an answer to the consumer, an offset update to the broker;
#: and a pull that is due goes out.
WIRE = (PullSent, Pull, Answered, Persist)


def _urgent(state: PullState, action: Action) -> bool:
    """What happens before anything else in a model's schedule: the wire's deliveries, a wake-up an arrival made
    due, the OFFSET_ILLEGAL fix once due and what follows it."""
    if isinstance(action, (*WIRE, DelayedFix, QueueRemoved)):
        return True
    if isinstance(action, Wake):
        return any(r.offset == action.offset and r.phase is Phase.HELD and r.wake_by == 0
                   for r in state.queues[action.queue_id].requests)
    if isinstance(action, HoldTimeout):
        return any(r.offset == action.offset and r.phase is Phase.HELD and r.hold_left <= -CHECK_MS
                   for r in state.queues[action.queue_id].requests)
    return isinstance(action, PersistSent) and state.queues[action.queue_id].removing


def wire_first(state: PullState, bounds: Bounds) -> list[Action]:
    """The candidates of ``state``, the urgent ones first: while a request, an answer or an offset update is on the
    wire (or a wake-up or fix is due), only those (a model's schedule: the wire is faster than anything else that
    happens; the lockstep machines step every interleaving the implementation takes)."""
    actions = list(TRANSITIONS.candidates(state, bounds))
    urgent = [a for a in actions if _urgent(state, a) and TRANSITIONS.enabled(state, a)]
    return urgent if urgent else actions
