"""Transaction check: the values the machine's state is made of, and one run of the check pass's walk.

The walk is ``TransactionalMessageServiceImpl.check`` over half queue 0, written with the area's oracles: it reads op
batches (:func:`fill_op_remove_map`), decides at each half offset (:func:`check_decision`) and, at its end, commits
both offsets (:func:`advance_op_offset`). It runs until the walk ends, or until it must wait for more op messages
(TXN-26): then it is suspended, with what it has read so far, until it can go on.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

import attrs

from rocketspec.spec.protocol import Property, TransactionState
from rocketspec.spec.transaction_check.oracles import (
    STOPS,
    CheckDecision,
    OpScan,
    advance_op_offset,
    check_decision,
    check_immunity_ms,
    fill_op_remove_map,
    next_check_times,
    walk_resumes_at,
)
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

PRODUCER_GROUP = "TXN_PRODUCER_GROUP"
FOREIGN_GROUP = "OTHER_PRODUCER_GROUP"
REAL_TOPIC = "TopicTest"
#: The explorer's clock: a check interval of TICK_MS, everything else at EVENT_OFFSET_MS into an interval (so a
#: message's age at a pass is never a whole number of intervals and the timeout comparisons never tie).
TICK_MS = 1000
EVENT_OFFSET_MS = TICK_MS // 2


@attrs.frozen
class Config:
    """The broker's settings (times in ms), the producers and the bounds of the environment's races.

    ``producers`` gives each producer's group (a producer is named by its index); ``immunity`` each message's
    CHECK_IMMUNITY_TIME_IN_SECONDS for the explorer's sends (None: absent). ``duplicates`` bounds how many
    END_TRANSACTIONs the network may duplicate and ``forged`` how many requests a producer may send that the broker
    must refuse (another group's, or naming the wrong offsets). Unless ``stale_checks``, a check still in flight
    when the next check of the same message goes out is lost (a bound of the explorer: RocketMQ may deliver it late,
    which is the same race as a late END_TRANSACTION from the sender). ``start_ms`` is when the broker started.
    """

    messages: int = 2
    check_max: int = 2
    timeout_ms: int = TICK_MS
    interval_ms: int = TICK_MS
    immunity: tuple[int | None, ...] = (None, None)
    op_batch: int = 32
    producers: tuple[str, ...] = (PRODUCER_GROUP,)
    duplicates: int = 1
    forged: int = 0
    stale_checks: bool = False
    start_ms: int = 0
    profile: VersionProfile = DEFAULT_PROFILE


@attrs.frozen(cache_hash=True)
class HalfEntry:
    """One entry of the half queue (the original half message or a re-appended copy); times in ms.

    ``group`` is its PGROUP, ``immunity`` its CHECK_IMMUNITY_TIME_IN_SECONDS (None: absent).
    """

    msg: int
    born: int
    stored: int
    check_times: int | None
    prepared_offset: int | None
    real_topic: str
    real_queue_id: str
    sys_flag: int
    group: str = PRODUCER_GROUP
    immunity: int | None = None


@attrs.frozen(order=True, cache_hash=True)
class OpEntry:
    """An op message: the half offset its body names, and when the broker wrote it (its born time)."""

    half_offset: int
    born: int


@attrs.frozen(order=True, cache_hash=True)
class EndTxnRequest:
    """An END_TRANSACTION in flight. In the model a half entry's commit-log offset is its half queue offset (-1:
    an offset where no message is); ``forged``: one the environment made up (the broker must refuse it)."""

    group: str
    commit_or_rollback: int
    tran_state_table_offset: int
    commit_log_offset: int
    from_check: bool
    forged: bool = False


@attrs.frozen(order=True, cache_hash=True)
class CheckRequest:
    """A CHECK_TRANSACTION_STATE in flight to ``producer``, naming the re-appended copy ``entry``."""

    msg: int
    entry: int
    producer: int = 0


@attrs.frozen(order=True, cache_hash=True)
class RealMessage:
    """A message stored in its real topic by a COMMIT: ``properties`` its property map once the broker cleared
    REAL_TOPIC and REAL_QID (:func:`restore_real_message`), ``stored_properties`` the properties written (TXN-8:
    the half message's)."""

    msg: int
    topic: str
    queue_id: int
    sys_flag: int
    properties: tuple[tuple[str, str], ...]
    stored_properties: tuple[tuple[str, str], ...] = ()


class Phase(enum.IntEnum):
    """Where the original sender is with one message."""

    IDLE = 0
    EXECUTING = 1  # half message stored, local transaction running
    RETURNED = 2  # executeLocalTransaction returned and its END_TRANSACTION went out


@attrs.frozen(cache_hash=True)
class Walk:
    """A pass suspended at half offset ``offset``, waiting for more op messages (TXN-26): when it began, what it
    has read (the remove map and done ops, the next op offset; the last batch read was empty) and when the clock
    lets it go on (``wake``)."""

    start: int
    offset: int
    scan: OpScan
    op_next: int
    wake: int


@attrs.frozen
class Outcome:
    """What one run of the walk did: the half queue and discards after it, the checks it made as (message, copy,
    group), the done ops and where it stopped, or the walk it left waiting."""

    half: tuple[HalfEntry, ...]
    discarded: tuple[int, ...]
    checks: tuple[tuple[int, int, str], ...]
    offset: int
    scan: OpScan
    op_next: int
    waiting: Walk | None


def half_properties(entry: HalfEntry) -> tuple[tuple[str, str], ...]:
    """The properties of a half entry the model knows of, as stored."""
    props = [
        (Property.TRANSACTION_PREPARED, "true"),
        (Property.PRODUCER_GROUP, entry.group),
        (Property.REAL_TOPIC, entry.real_topic),
        (Property.REAL_QUEUE_ID, entry.real_queue_id),
    ]
    if entry.check_times is not None:
        props.append((Property.TRANSACTION_CHECK_TIMES, str(entry.check_times)))
    if entry.immunity is not None:
        props.append((Property.CHECK_IMMUNITY_TIME_IN_SECONDS, str(entry.immunity)))
    if entry.prepared_offset is not None:
        props.append((Property.TRANSACTION_PREPARED_QUEUE_OFFSET, str(entry.prepared_offset)))
    return tuple(props)


def answer_allowed(local: TransactionState | None, state: TransactionState | None, raised: bool) -> bool:
    """Whether a checker may answer ``state`` (or raise) while the local transaction stands at ``local``: once
    decided it answers the decision, before it answers UNKNOW, nothing (null) or raises."""
    if local is not None:
        return state is local and not raised
    return raised or state in (None, TransactionState.UNKNOW)


def read_ops(ops: Sequence[OpEntry], scan: OpScan, op_from: int, mini_offset: int, batch_size: int
             ) -> tuple[OpScan, int, tuple[OpEntry, ...] | None]:
    """fillOpRemoveMap over one batch from ``op_from`` (TXN-13): the new scan, the next op offset and the batch
    (None when it was empty: NO_NEW_MSG, the next begin offset stays where it was)."""
    batch = tuple(ops[op_from:op_from + batch_size])
    if not batch:
        return scan, op_from, None
    pairs = tuple((op_from + k, op.half_offset) for k, op in enumerate(batch))
    return fill_op_remove_map(scan, pairs, mini_offset), op_from + len(batch), batch


def _take_done(scan: OpScan, half_offset: int, count_done: bool) -> OpScan:
    remove = dict(scan.remove)
    op_offset = remove.pop(half_offset)
    done = tuple(sorted((*scan.done, op_offset))) if count_done else scan.done
    return OpScan(tuple(sorted(remove.items())), done)


def run_walk(cfg: Config, now: int, half: tuple[HalfEntry, ...], ops: tuple[OpEntry, ...], half_offset: int,
             op_offset: int, discarded: tuple[int, ...], walk: Walk | None) -> Outcome:
    """One run of the walk at ``now``: a new pass (``walk`` None) or the suspended one going on, until the walk ends
    or must wait (TXN-13..TXN-19, TXN-26). A waiting walk goes on by reading the next op batch."""
    entries = list(half)
    gone = list(discarded)
    made: list[tuple[int, int, str]] = []
    if walk is None:
        start, i = now, half_offset
        scan, op_next, batch = read_ops(ops, OpScan(), op_offset, half_offset, cfg.op_batch)
    else:
        start, i = walk.start, walk.offset
        scan, op_next, batch = read_ops(ops, walk.scan, walk.op_next, half_offset, cfg.op_batch)
    while i < len(entries):  # past the end: NO_NEW_MSG ends the walk
        entry = entries[i]
        remove = dict(scan.remove)
        decision = check_decision(
            now=now, pass_start=start, born=entry.born, stored=entry.stored, in_remove_map=i in remove,
            check_times=entry.check_times, immunity_seconds=entry.immunity, prepared_offset=entry.prepared_offset,
            prepared_in_remove_map=entry.prepared_offset in remove, ops_empty=batch is None,
            last_op_born=batch[-1].born if batch else 0, check_max=cfg.check_max, transaction_timeout=cfg.timeout_ms,
        )
        if decision in STOPS:
            break
        if decision is CheckDecision.FETCH_MORE_OPS:
            if batch is None:
                wake = walk_resumes_at(entry.born, check_immunity_ms(entry.immunity, cfg.timeout_ms), start)
                waiting = Walk(start, i, scan, op_next, wake)
                return Outcome(tuple(entries), tuple(gone), tuple(made), i, scan, op_next, waiting)
            scan, op_next, batch = read_ops(ops, scan, op_next, half_offset, cfg.op_batch)
            continue
        if decision is CheckDecision.SKIP_DONE:
            scan = _take_done(scan, i, cfg.profile.at_least("4.6.0"))
        elif decision is CheckDecision.IMMUNITY_DONE:
            assert entry.prepared_offset is not None
            scan = _take_done(scan, entry.prepared_offset, True)
        elif decision is CheckDecision.DISCARD:
            gone.append(i)
        else:
            # CHECK or IMMUNITY_PUT_BACK (RETRY needs a failing store, which the model does not have).
            prepared = entry.prepared_offset
            if decision is CheckDecision.IMMUNITY_PUT_BACK and prepared is None:
                prepared = i
            entries.append(attrs.evolve(
                entry, stored=now, check_times=next_check_times(entry.check_times, cfg.check_max),
                prepared_offset=prepared,
            ))
            if decision is CheckDecision.CHECK:
                made.append((entry.msg, len(entries) - 1, entry.group))
        i += 1
    return Outcome(tuple(entries), tuple(gone), tuple(made), i, scan, op_next, None)


def committed_op_offset(op_offset: int, scan: OpScan) -> int:
    """The op offset a pass that started at ``op_offset`` commits (TXN-20)."""
    return advance_op_offset(op_offset, scan.done)
