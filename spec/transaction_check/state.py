"""Transaction check: the machine's state and actions, and what the guards and effects read of a state."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TypeVar

import attrs

from rocketspec.spec.protocol import TRANSACTION_COMMIT_TYPE, SendStatus, TransactionState
from rocketspec.spec.transaction_check.walk import (
    FOREIGN_GROUP,
    CheckRequest,
    Config,
    EndTxnRequest,
    HalfEntry,
    OpEntry,
    Outcome,
    Phase,
    RealMessage,
    Walk,
    run_walk,
)


@attrs.frozen(cache_hash=True)
class TxnState:
    """Broker, producers and network, plus ghost counters the invariants read.

    ``next_pass`` is when the next pass begins (no pass under way) and ``walk`` the pass waiting for op messages;
    ``ops`` the op messages in op-queue order; ``discarded`` the half offsets moved to TRANS_CHECK_MAX_TIME_TOPIC;
    ``real`` the real topic's messages in the order stored, ``consumed`` the ones the consumer received (indices
    into ``real``); ``live`` the producers registered with the broker. Ghosts: ``checks_sent`` (checks made, a
    producer found or not) and ``accepted`` (END_TRANSACTIONs answered SUCCESS) per message, and ``racy``, the
    messages one of whose END_TRANSACTIONs was duplicated, landed during a pass or named an entry that a
    later copy had superseded when it was accepted (TXN-25).
    """

    cfg: Config
    now: int = 0
    next_pass: int = 0
    walk: Walk | None = None
    phase: tuple[Phase, ...] = ()
    local: tuple[TransactionState | None, ...] = ()
    half: tuple[HalfEntry, ...] = ()
    ops: tuple[OpEntry, ...] = ()
    half_offset: int = 0
    op_offset: int = 0
    real: tuple[RealMessage, ...] = ()
    consumed: frozenset[int] = frozenset()
    discarded: tuple[int, ...] = ()
    checks: tuple[CheckRequest, ...] = ()
    requests: tuple[EndTxnRequest, ...] = ()
    live: frozenset[int] = frozenset()
    duplicates_left: int = 0
    forged_left: int = 0
    checks_sent: tuple[int, ...] = ()
    accepted: tuple[int, ...] = ()
    racy: frozenset[int] = frozenset()


@attrs.frozen
class SendHalf:
    """``producer`` sends message ``msg`` to queue ``queue_id`` of the real topic as a half message, stored now; it
    was born ``transit_ms`` earlier by the producer's clock. ``immunity``: its CHECK_IMMUNITY_TIME_IN_SECONDS."""

    msg: int
    producer: int = 0
    queue_id: int = 0
    transit_ms: int = 0
    immunity: int | None = None


@attrs.frozen
class LocalTransactionEnds:
    """executeLocalTransaction returns ``state`` for ``msg`` (None: null; ``raised``: it threw) and the sender's
    END_TRANSACTION goes out. A COMMIT or ROLLBACK is final; after anything else the local transaction decides later
    (:class:`LocalDecides`). A half message stored with a ``status`` other than SEND_OK is rolled back without the
    local transaction running (``state`` None)."""

    msg: int
    state: TransactionState | None
    raised: bool = False
    status: SendStatus = SendStatus.SEND_OK


@attrs.frozen
class LocalDecides:
    """A local transaction that returned no decision commits or rolls back; its state never changes again."""

    msg: int
    state: TransactionState


@attrs.frozen
class TimePasses:
    """``ms`` pass on the broker's clock (never past the moment a pass begins or a waiting walk goes on)."""

    ms: int


@attrs.frozen
class CheckPass:
    """The check service's walk runs now: a pass begins, or the waiting one goes on. ``targets`` names, for each
    check the walk makes in order, the producer CHECK_TRANSACTION_STATE goes to (None: its group has none)."""

    targets: tuple[int | None, ...] = ()


@attrs.frozen
class ProducerAnswers:
    """``check`` reaches its producer, whose checker answers ``state`` (None: null; ``raised``: it threw); an answer
    that maps to a commitOrRollback goes out as an END_TRANSACTION."""

    check: CheckRequest
    state: TransactionState | None = TransactionState.UNKNOW
    raised: bool = False


@attrs.frozen
class CheckLost:
    """``check`` is lost: its producer left before it arrived."""

    check: CheckRequest


@attrs.frozen
class EndTransactionDelivered:
    """The broker processes ``request`` (one copy of it; a delayed request is delivered later)."""

    request: EndTxnRequest


@attrs.frozen
class EndTransactionLost:
    """The network loses ``request``."""

    request: EndTxnRequest


@attrs.frozen
class EndTransactionDuplicated:
    """The network duplicates ``request``: one more copy of it is in flight."""

    request: EndTxnRequest


@attrs.frozen
class ForgedEndTransaction:
    """A producer sends a ``commit_or_rollback`` of group ``group`` naming commit-log offset ``entry`` (-1: none)
    and queue offset ``queue_offset`` (None: ``entry``); the broker must refuse it (another group's, or the wrong
    offsets)."""

    entry: int
    group: str = FOREIGN_GROUP
    commit_or_rollback: int = TRANSACTION_COMMIT_TYPE
    queue_offset: int | None = None

    @property
    def request(self) -> EndTxnRequest:
        queue_offset = self.entry if self.queue_offset is None else self.queue_offset
        return EndTxnRequest(self.group, self.commit_or_rollback, queue_offset, self.entry, False, forged=True)


@attrs.frozen
class ProducerRegisters:
    """``producer``'s heartbeat registers it with the broker (its group's channel table)."""

    producer: int


@attrs.frozen
class ProducerLeaves:
    """``producer`` leaves the broker's table (unregistered, or its connection closed)."""

    producer: int


@attrs.frozen
class ConsumerReceives:
    """The consumer of the real topic receives ``real[index]``."""

    index: int


Action = (
    SendHalf
    | LocalTransactionEnds
    | LocalDecides
    | TimePasses
    | CheckPass
    | ProducerAnswers
    | CheckLost
    | EndTransactionDelivered
    | EndTransactionLost
    | EndTransactionDuplicated
    | ForgedEndTransaction
    | ProducerRegisters
    | ProducerLeaves
    | ConsumerReceives
)


def initial_state(cfg: Config, live: Iterable[int] | None = None) -> TxnState:
    """Nothing sent yet; the broker started at ``cfg.start_ms`` with the producers ``live`` (default: all)."""
    n = cfg.messages
    return TxnState(
        cfg=cfg,
        now=cfg.start_ms,
        next_pass=cfg.start_ms + cfg.interval_ms,
        phase=(Phase.IDLE,) * n,
        local=(None,) * n,
        live=frozenset(range(len(cfg.producers)) if live is None else live),
        duplicates_left=cfg.duplicates,
        forged_left=cfg.forged,
        checks_sent=(0,) * n,
        accepted=(0,) * n,
    )


T = TypeVar("T")


def set_at(t: tuple[T, ...], i: int, v: T) -> tuple[T, ...]:
    return (*t[:i], v, *t[i + 1:])


def remove_one(t: tuple[T, ...], item: T) -> tuple[T, ...]:
    i = t.index(item)
    return (*t[:i], *t[i + 1:])


def add_sorted(t: tuple[T, ...], item: T) -> tuple[T, ...]:
    return tuple(sorted((*t, item)))  # type: ignore[type-var]


def entries_of(state: TxnState, msg: int) -> list[int]:
    """The half offsets of ``msg``'s entries (the half message and its copies), in order."""
    return [q for q, e in enumerate(state.half) if e.msg == msg]


def resolved(state: TxnState, msg: int) -> bool:
    """Whether an op names one of ``msg``'s entries."""
    entries = set(entries_of(state, msg))
    return any(op.half_offset in entries for op in state.ops)


def live_of(state: TxnState, group: str) -> list[int]:
    """The registered producers of ``group``."""
    return sorted(p for p in state.live if state.cfg.producers[p] == group)


def walk_due(state: TxnState) -> bool:
    """Whether the check service's walk runs now: a pass is due, or the waiting walk can go on (TXN-12, TXN-26)."""
    if state.walk is None:
        return state.now == state.next_pass
    return state.now >= state.walk.wake or len(state.ops) > state.walk.op_next


@functools.lru_cache(maxsize=4096)
def pending_walk(state: TxnState) -> Outcome:
    """What the walk would do if it ran now (a pure function of the state, so remembered for the last states)."""
    return run_walk(state.cfg, state.now, state.half, state.ops, state.half_offset, state.op_offset,
                    state.discarded, state.walk)


def targets_fit(state: TxnState, outcome: Outcome, targets: tuple[int | None, ...]) -> bool:
    if len(targets) != len(outcome.checks):
        return False
    for (_msg, _entry, group), target in zip(outcome.checks, targets, strict=True):
        live = live_of(state, group)
        if (target is None) != (not live) or (target is not None and target not in live):
            return False
    return True
