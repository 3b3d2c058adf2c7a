"""Pull correction: the state machine: frozen state, actions, ``enabled`` and ``step``."""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from rocketspec.spec.explorer import require_enabled
from rocketspec.spec.protocol import GetMessageStatus, ResponseCode
from rocketspec.spec.pull_correction.clauses import CLAUSES
from rocketspec.spec.pull_correction.oracles import (
    CqEntry,
    HoldOutcome,
    OffsetUpdate,
    apply_offset_update,
    broker_commits,
    client_reaction,
    commit_flag,
    held_request_outcome,
    pull_status,
    response_code,
    roll_next_file,
    scan_queue,
    store_status,
)
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

# --------------------------------------------------------------------------------------------------------------
# The state machine
# --------------------------------------------------------------------------------------------------------------


@attrs.frozen
class Config:
    """Fixed parameters of one exploration: the broker serving the pulls and the bounds."""

    profile: VersionProfile = DEFAULT_PROFILE
    is_slave: bool = False
    offset_check_in_slave: bool = False
    max_messages: int = 3
    cq_file_entries: int = 2
    batch: int = 2
    filtered_messages: bool = True


@attrs.frozen
class Store:
    """One queue in the serving broker's store.

    Offsets ``[0, len(matches))`` were written; ``matches[i]`` says whether message ``i`` matches the consumer's
    subscription. Commit-log data exists from ``data_from``; consume-queue files exist from ``cq_from`` (a file
    start); ``min_offset`` is the consume queue's logical minimum, which lags behind deletions until corrected.
    """

    min_offset: int = 0
    cq_from: int = 0
    data_from: int = 0
    matches: tuple[bool, ...] = ()

    @property
    def max_offset(self) -> int:
        return len(self.matches)

    def readable(self, offset: int) -> bool:
        """Whether a pull could deliver the message at ``offset`` now."""
        return (
            self.min_offset <= offset < self.max_offset
            and offset >= self.cq_from
            and offset >= self.data_from
            and self.matches[offset]
        )


@attrs.frozen
class ProcessQueue:
    """The consumer's ProcessQueue: cached message offsets and the highest offset ever put (queueOffsetMax)."""

    dropped: bool = False
    cached: frozenset[int] = frozenset()
    offset_max: int = 0


@attrs.frozen
class PullState:
    """One store queue, one push consumer pulling it (clustering), the broker's stored offset.

    ``pq`` None: no process queue (before the first rebalance, or removed). ``held``: the offset of the pull
    the broker holds. ``memory_offset``: the consumer's offset store (None: no entry). ``fix``: the pending
    OFFSET_ILLEGAL fix, run 10 s after the answer.
    """

    config: Config
    store: Store
    broker_offset: int
    pq: ProcessQueue | None = None
    pull_offset: int = 0
    held: int | None = None
    memory_offset: int | None = None
    fix: OffsetUpdate | None = None


@attrs.frozen
class Answer:
    """A pull's outcome at the broker, with the queue bounds it was decided against."""

    requested: int
    status: GetMessageStatus
    code: ResponseCode | None
    next_offset: int
    min_offset: int
    max_offset: int
    delivered: tuple[int, ...] = ()


@attrs.frozen
class Append:
    """A message is written to the queue (``matches``: it matches the consumer's subscription)."""

    matches: bool


@attrs.frozen
class DeleteCommitLog:
    """The commit-log data of the oldest remaining message of the queue is deleted."""


@attrs.frozen
class DeleteConsumeQueueFile:
    """The first consume-queue file, all of whose messages are gone, is deleted (never the last file)."""


@attrs.frozen
class CorrectMinOffset:
    """correctMinOffset: min moves to the first entry of the first file whose data remains."""


@attrs.frozen
class Pull:
    """The consumer pulls at its next offset and the broker processes the request: ``answer`` (held if no code)."""

    answer: Answer


@attrs.frozen
class Wake:
    """The hold service finds the queue's max past a held request's offset and processes it again."""

    answer: Answer


@attrs.frozen
class HoldTimeout:
    """A held request's hold time is over: it is processed again."""

    answer: Answer


@attrs.frozen
class Consume:
    """The consume service finishes the cached message at ``offset`` and commits the process queue's progress."""

    offset: int


@attrs.frozen
class PersistAll:
    """The 5 s persistAll sends the memory offset of the queue (still in the process queue table) to the broker."""


@attrs.frozen
class DelayedFix:
    """10 s after OFFSET_ILLEGAL: updateOffset(next, false), persist, removeProcessQueue."""


@attrs.frozen
class Rebalance:
    """A rebalance finds the assigned queue without a process queue and adds it back."""


Action = (
    Append | DeleteCommitLog | DeleteConsumeQueueFile | CorrectMinOffset | Pull | Wake | HoldTimeout | Consume
    | PersistAll | DelayedFix | Rebalance
)


def _last_file_start(store: Store, file_entries: int) -> int:
    return ((store.max_offset - 1) // file_entries) * file_entries


def _can_delete_cq_file(state: PullState) -> bool:
    store, f = state.store, state.config.cq_file_entries
    # A file goes when its last entry's data is gone; the last file of a queue is never deleted.
    return (
        store.max_offset > 0
        and store.cq_from + f <= store.data_from
        and store.cq_from < _last_file_start(store, f)
    )


def _corrected_min(state: PullState) -> int:
    store, f = state.store, state.config.cq_file_entries
    first = max(store.cq_from, store.data_from)
    if first < min(store.cq_from + f, store.max_offset):
        return first
    return store.min_offset


def decide(state: PullState, offset: int, broker_allow_suspend: bool) -> Answer:
    """The broker's outcome for a pull at ``offset`` against ``state``'s store, through the oracles."""
    cfg, store = state.config, state.store
    readable = offset >= store.cq_from
    scan = None
    entries: tuple[CqEntry, ...] = ()
    if store.min_offset <= offset < store.max_offset and readable:
        end = min(store.max_offset, roll_next_file(offset, cfg.cq_file_entries))
        entries = tuple(
            (CqEntry.MATCH if store.matches[j] else CqEntry.NO_MATCH)
            if j >= store.data_from
            else (CqEntry.GONE_MATCH if store.matches[j] else CqEntry.GONE_NO_MATCH)
            for j in range(offset, end)
        )
        scan = scan_queue(entries, max_msg_nums=cfg.batch)
    decision = store_status(
        offset,
        store.min_offset,
        store.max_offset,
        entry_readable=readable,
        scan=scan,
        is_slave=cfg.is_slave,
        offset_check_in_slave=cfg.offset_check_in_slave,
        cq_file_entries=cfg.cq_file_entries,
        profile=cfg.profile,
    )
    answer = response_code(
        decision.status,
        requested_offset=offset,
        is_slave=cfg.is_slave,
        offset_check_in_slave=cfg.offset_check_in_slave,
        broker_allow_suspend=broker_allow_suspend,
    )
    delivered: tuple[int, ...] = ()
    if decision.status is GetMessageStatus.FOUND and scan is not None:
        delivered = tuple(offset + k for k in range(scan.entries_scanned) if entries[k] is CqEntry.MATCH)
    return Answer(
        offset,
        decision.status,
        answer.code,
        decision.next_begin_offset,
        store.min_offset,
        store.max_offset,
        delivered,
    )


def _live(state: PullState) -> bool:
    return state.pq is not None and not state.pq.dropped


@CLAUSES.oracle("PULL-13", "PULL-14", "PULL-22", "PULL-24")
def enabled(state: PullState, action: Action) -> bool:
    """Whether ``action`` can happen in ``state`` (PULL-13, PULL-14, PULL-22, PULL-24).

    A live process queue with no held request pulls; only a held request is woken (max past its offset) or
    times out; the OFFSET_ILLEGAL fix runs once; a rebalance re-adds the queue only when it has no process
    queue and no fix is pending. A pull's answer must be the broker's decision for the state.
    """
    store, cfg = state.store, state.config
    match action:
        case Append(matches=m):
            return store.max_offset < cfg.max_messages and (m or cfg.filtered_messages)
        case DeleteCommitLog():
            return store.data_from < store.max_offset
        case DeleteConsumeQueueFile():
            return _can_delete_cq_file(state)
        case CorrectMinOffset():
            return _corrected_min(state) != store.min_offset
        case Pull(answer=a):
            return _live(state) and state.held is None and a == decide(state, state.pull_offset, True)
        case Wake(answer=a):
            return (
                state.held is not None
                and held_request_outcome(store.max_offset, state.held) is HoldOutcome.WAKE
                and a == decide(state, state.held, False)
            )
        case HoldTimeout(answer=a):
            return state.held is not None and a == decide(state, state.held, False)
        case Consume(offset=o):
            return _live(state) and state.pq is not None and o in state.pq.cached
        case PersistAll():
            return (
                state.pq is not None
                and state.memory_offset is not None
                and state.memory_offset != state.broker_offset
            )
        case DelayedFix():
            return state.fix is not None
        case Rebalance():
            return state.pq is None and state.fix is None
    return False


def _react(state: PullState, answer: Answer) -> PullState:
    assert answer.code is not None and state.pq is not None
    status = pull_status(answer.code)
    pq = state.pq
    reaction = client_reaction(
        status,
        answer.next_offset,
        not pq.cached,
        request_offset=answer.requested,
        found_messages=len(answer.delivered),
        profile=state.config.profile,
    )
    memory = state.memory_offset
    if reaction.enqueue:
        pq = attrs.evolve(
            pq, cached=pq.cached | frozenset(answer.delivered), offset_max=max(pq.offset_max, *answer.delivered)
        )
    if reaction.update is not None:
        memory = apply_offset_update(memory, reaction.update)
    if reaction.drop:
        pq = attrs.evolve(pq, dropped=True)
    return attrs.evolve(
        state, pq=pq, pull_offset=reaction.next_offset, held=None, memory_offset=memory, fix=reaction.fix
    )


@CLAUSES.oracle("PULL-13", "PULL-14", "PULL-18", "PULL-20", "PULL-21", "PULL-22", "PULL-24")
def step(state: PullState, action: Action) -> PullState:
    """The state after an enabled ``action`` (PULL-13, PULL-14, PULL-18, PULL-20, PULL-21, PULL-22, PULL-24).

    A pull commits the memory offset on a master (PULL-18), then is held (PULL-13) or answered; a woken or
    timed-out request is answered without a commit (PULL-14); the consumer reacts (PULL-20, PULL-21, PULL-22); the fix
    stores, persists and removes (PULL-22); a rebalance resumes from the broker's offset (PULL-24).
    """
    require_enabled(enabled, state, action, Action)
    store, cfg = state.store, state.config
    match action:
        case Append(matches=m):
            return attrs.evolve(state, store=attrs.evolve(store, matches=(*store.matches, m)))
        case DeleteCommitLog():
            return attrs.evolve(state, store=attrs.evolve(store, data_from=store.data_from + 1))
        case DeleteConsumeQueueFile():
            return attrs.evolve(state, store=attrs.evolve(store, cq_from=store.cq_from + cfg.cq_file_entries))
        case CorrectMinOffset():
            return attrs.evolve(state, store=attrs.evolve(store, min_offset=_corrected_min(state)))
        case Pull(answer=a):
            broker_offset = state.broker_offset
            memory = -1 if state.memory_offset is None else state.memory_offset
            flag = commit_flag(clustering=True, memory_offset=memory)
            if broker_commits(broker_allow_suspend=True, has_commit_flag=flag, is_slave=cfg.is_slave):
                broker_offset = memory
            state = attrs.evolve(state, broker_offset=broker_offset)
            if a.code is None:
                return attrs.evolve(state, held=a.requested)
            return _react(state, a)
        case Wake(answer=a) | HoldTimeout(answer=a):
            return _react(state, a)
        case Consume(offset=o):
            assert state.pq is not None
            rest = state.pq.cached - {o}
            progress = min(rest) if rest else state.pq.offset_max + 1
            memory = apply_offset_update(state.memory_offset, OffsetUpdate(progress, True))
            return attrs.evolve(state, pq=attrs.evolve(state.pq, cached=rest), memory_offset=memory)
        case PersistAll():
            assert state.memory_offset is not None
            return attrs.evolve(state, broker_offset=state.memory_offset)
        case DelayedFix():
            assert state.fix is not None
            memory = apply_offset_update(state.memory_offset, state.fix)
            # persist, then removeProcessQueue: persist again and forget the memory offset.
            return attrs.evolve(state, broker_offset=memory, memory_offset=None, pq=None, fix=None)
        case Rebalance():
            # removeDirtyOffset, then computePullFromWhere reads the broker's offset into the offset store.
            offset = state.broker_offset
            return attrs.evolve(state, pq=ProcessQueue(), pull_offset=offset, memory_offset=offset)
    raise ValueError(f"unknown action {action!r}")


def _candidates(state: PullState) -> Iterator[Action]:
    yield Append(True)
    yield Append(False)
    yield DeleteCommitLog()
    yield DeleteConsumeQueueFile()
    yield CorrectMinOffset()
    if _live(state) and state.held is None:
        yield Pull(decide(state, state.pull_offset, True))
    if state.held is not None:
        rerun = decide(state, state.held, False)
        yield Wake(rerun)
        yield HoldTimeout(rerun)
    if state.pq is not None:
        for offset in sorted(state.pq.cached):
            yield Consume(offset)
    yield PersistAll()
    yield DelayedFix()
    yield Rebalance()
