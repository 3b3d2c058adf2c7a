"""Offset commit: the oracle functions: the normative decisions, with their contracts (checked by CrossHair)."""

from __future__ import annotations

import enum
import itertools

import attrs

from rocketspec.spec.offset_commit.clauses import CLAUSES
from rocketspec.spec.protocol import (
    PULL_FLAG_CLASS_FILTER,
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    ConsumeFromWhere,
    MessageModel,
    ReadOffsetType,
    ResponseCode,
)
from rocketspec.spec.versions import (
    DEFAULT_PROFILE,
    V4_9_3,  # noqa: F401  (contracts name it: CrossHair evaluates them here)
    V4_9_8,
    VersionProfile,
)

# What readOffset answers, and what the oracles and the machine hold, when a queue has no offset.
NO_OFFSET = -1


def _ascending(values: tuple[int, ...]) -> bool:
    """Strictly ascending and non-negative: how TreeMap keys (queue offsets) come out."""
    return all(v >= 0 for v in values) and all(a < b for a, b in itertools.pairwise(values))


# --- Oracles: the ProcessQueue (OFF-1 .. OFF-4, OFF-15) -----------------------------------------------------


@attrs.frozen(cache_hash=True)
class ProcessQueueState:
    """What of a ``ProcessQueue`` the offsets depend on.

    ``cached`` are the keys of msgTreeMap and ``taken`` of consumingMsgOrderlyTreeMap (orderly only), both
    ascending; ``consuming`` is the dispatch mark of OFF-2. msgCount is ``len(cached) + len(taken)``: taken
    messages count until the orderly commit.
    """

    cached: tuple[int, ...] = ()
    taken: tuple[int, ...] = ()
    queue_offset_max: int = 0
    consuming: bool = False

    @property
    def msg_count(self) -> int:
        return len(self.cached) + len(self.taken)


def _fresh_run(cached: tuple[int, ...], offsets: tuple[int, ...]) -> bool:
    """A non-empty, ascending list of offsets none of which is cached: what a pull normally delivers."""
    return bool(offsets) and _ascending(offsets) and not set(offsets) & set(cached)


def _without(pq: ProcessQueueState, offsets: tuple[int, ...]) -> tuple[ProcessQueueState, int]:
    if not pq.cached:
        return pq, -1
    remaining = tuple(o for o in pq.cached if o not in offsets)
    result = remaining[0] if remaining else pq.queue_offset_max + 1
    return ProcessQueueState(remaining, pq.taken, pq.queue_offset_max, pq.consuming), result


def _back(pq: ProcessQueueState, offsets: tuple[int, ...]) -> ProcessQueueState:
    cached = list(pq.cached)
    for offset in offsets:
        if offset not in cached:
            cached.append(offset)
    taken = tuple(o for o in pq.taken if o not in offsets)
    return ProcessQueueState(tuple(sorted(cached)), taken, pq.queue_offset_max, pq.consuming)


@CLAUSES.oracle("OFF-1", "OFF-2")
def put_messages(pq: ProcessQueueState, offsets: tuple[int, ...]) -> tuple[ProcessQueueState, bool]:
    """Cache a pulled list of messages; return the queue and dispatchToConsume (OFF-1, OFF-2).

    pre: len(pq.cached) <= 1 and pq.taken == () and len(offsets) <= 2 and pq.queue_offset_max >= 0
    pre: _ascending(pq.cached) and all(o >= 0 for o in offsets)
    post: set(__return__[0].cached) == set(pq.cached) | set(offsets) and _ascending(__return__[0].cached)
    post: __return__[0].taken == pq.taken
    post: __return__[1] == (not pq.consuming and len(__return__[0].cached) > 0)
    post: __return__[0].consuming == (pq.consuming or __return__[1])
    post: any(o not in pq.cached for o in offsets) or __return__[0].queue_offset_max == pq.queue_offset_max
    post: all(o in pq.cached for o in offsets) or __return__[0].queue_offset_max not in pq.cached
    post: all(o in pq.cached for o in offsets) or __return__[0].queue_offset_max in offsets
    post: not _fresh_run(pq.cached, offsets) or __return__[0].queue_offset_max == offsets[-1]
    """
    cached = list(pq.cached)
    offset_max = pq.queue_offset_max
    for offset in offsets:
        # TreeMap.put returning null makes a message new: only then it counts and moves queueOffsetMax.
        if offset not in cached:
            cached.append(offset)
            offset_max = offset
    dispatch = bool(cached) and not pq.consuming
    after = ProcessQueueState(tuple(sorted(cached)), pq.taken, offset_max, pq.consuming or dispatch)
    return after, dispatch


@CLAUSES.oracle("OFF-3")
def remove_messages(pq: ProcessQueueState, offsets: tuple[int, ...]) -> tuple[ProcessQueueState, int]:
    """Remove a consumed batch; return the queue and the offset to write (OFF-3).

    The result is -1 when nothing was cached, else the smallest offset still cached, else queueOffsetMax + 1:
    it never passes a message still waiting (seed 001 §1.3: when msg3 finishes before msg1 and msg2, the
    offset written stays at msg1).

    pre: len(pq.cached) <= 3 and len(offsets) <= 2 and pq.taken == () and pq.queue_offset_max >= 0
    pre: _ascending(pq.cached)
    post: set(__return__[0].cached) == set(pq.cached) - set(offsets) and _ascending(__return__[0].cached)
    post: __return__[0].queue_offset_max == pq.queue_offset_max and __return__[0].consuming == pq.consuming
    post: (__return__[1] == -1) == (len(pq.cached) == 0)
    post: all(__return__[1] <= o for o in __return__[0].cached)
    post: not __return__[0].cached or __return__[1] in __return__[0].cached
    post: __return__[0].cached or not pq.cached or __return__[1] == pq.queue_offset_max + 1
    """
    return _without(pq, offsets)


@CLAUSES.oracle("OFF-4")
def concurrent_consume_result(
    pq: ProcessQueueState,
    batch: tuple[int, ...],
    send_back_failed: tuple[bool, ...],
    message_model: MessageModel,
    dropped: bool = False,
) -> tuple[ProcessQueueState, int, tuple[int, ...]]:
    """A finished concurrent consume request (OFF-4): the queue afterwards, the offset then written with
    updateOffset(increaseOnly=true) (NO_OFFSET: nothing is written) and the messages resubmitted for a local
    retry.

    ``send_back_failed[i]`` says that ``batch[i]`` was to be sent back (RECONSUME_LATER, or past ackIndex)
    and CONSUMER_SEND_MSG_BACK failed; broadcasting sends nothing back and drops failed messages.

    pre: len(pq.cached) <= 2 and pq.taken == () and pq.queue_offset_max >= 0 and _ascending(pq.cached)
    pre: 1 <= len(batch) <= 2 and len(send_back_failed) == len(batch) and all(o in pq.cached for o in batch)
    post: message_model == MessageModel.CLUSTERING or __return__[2] == ()
    post: message_model != MessageModel.CLUSTERING or len(__return__[2]) == send_back_failed.count(True)
    post: all(o in __return__[0].cached for o in __return__[2])
    post: all(o not in __return__[0].cached for o in batch if o not in __return__[2])
    post: all(__return__[1] <= o for o in __return__[0].cached)
    post: (__return__[1] == NO_OFFSET) == dropped
    """
    retried: tuple[int, ...] = ()
    if message_model == MessageModel.CLUSTERING:
        retried = tuple(o for o, failed in zip(batch, send_back_failed, strict=True) if failed)
    after, offset = _without(pq, tuple(o for o in batch if o not in retried))
    return after, (offset if offset >= 0 and not dropped else NO_OFFSET), retried


@CLAUSES.oracle("OFF-15", "OFF-2")
def take_messages(pq: ProcessQueueState, batch_size: int) -> tuple[ProcessQueueState, tuple[int, ...]]:
    """Orderly takeMessages: move the smallest cached offsets to the consuming map (OFF-15, OFF-2).

    pre: len(pq.cached) <= 3 and len(pq.taken) <= 1 and 1 <= batch_size <= 2
    pre: _ascending(pq.cached) and _ascending(pq.taken) and all(t < c for t in pq.taken for c in pq.cached)
    post: __return__[1] == pq.cached[:batch_size]
    post: __return__[0].cached == pq.cached[len(__return__[1]):]
    post: __return__[0].taken == pq.taken + __return__[1]
    post: __return__[0].consuming == (pq.consuming and len(__return__[1]) > 0)
    post: __return__[0].msg_count == pq.msg_count
    """
    taken_now = pq.cached[:batch_size]
    consuming = pq.consuming and bool(taken_now)
    after = ProcessQueueState(pq.cached[len(taken_now):], pq.taken + taken_now, pq.queue_offset_max,
                              consuming)
    return after, taken_now


@CLAUSES.oracle("OFF-15")
def orderly_commit(pq: ProcessQueueState) -> tuple[ProcessQueueState, int]:
    """Orderly commit: forget the taken messages; the offset to write is the largest taken + 1 (OFF-15).

    Taken messages are the smallest ones, so the result never passes a message still cached.

    pre: len(pq.cached) <= 3 and 1 <= len(pq.taken) <= 2
    pre: _ascending(pq.cached) and _ascending(pq.taken) and all(t < c for t in pq.taken for c in pq.cached)
    post: __return__[1] == max(pq.taken) + 1
    post: __return__[0].taken == () and __return__[0].cached == pq.cached
    post: all(__return__[1] <= o for o in pq.cached)
    """
    return ProcessQueueState(pq.cached, (), pq.queue_offset_max, pq.consuming), pq.taken[-1] + 1


@CLAUSES.oracle("OFF-15")
def make_message_to_consume_again(pq: ProcessQueueState, offsets: tuple[int, ...]) -> ProcessQueueState:
    """Orderly suspend: move ``offsets`` from the consuming map back to msgTreeMap (OFF-15).

    pre: len(pq.cached) <= 1 and len(pq.taken) <= 2 and len(offsets) <= 2
    pre: _ascending(pq.cached) and _ascending(pq.taken) and all(o in pq.taken for o in offsets)
    post: set(__return__.cached) == set(pq.cached) | set(offsets) and _ascending(__return__.cached)
    post: all(o not in __return__.taken for o in offsets)
    post: all(o in offsets or o in __return__.taken for o in pq.taken)
    post: len(__return__.taken) <= len(pq.taken)
    """
    return _back(pq, offsets)


@CLAUSES.oracle("OFF-15")
def rollback(pq: ProcessQueueState) -> ProcessQueueState:
    """Orderly rollback (manual commit mode): every taken message goes back to msgTreeMap (OFF-15).

    pre: len(pq.cached) <= 1 and len(pq.taken) <= 2 and _ascending(pq.cached) and _ascending(pq.taken)
    post: set(__return__.cached) == set(pq.cached) | set(pq.taken) and __return__.taken == ()
    """
    return _back(pq, pq.taken)


# --- Oracles: the client offset stores (OFF-5, OFF-6, OFF-11, OFF-12, OFF-16) ------------------------------


@CLAUSES.oracle("OFF-5")
def update_offset(current: int, offset: int, increase_only: bool) -> int:
    """The memory entry after updateOffset(offset, increaseOnly) (OFF-5); ``current`` NO_OFFSET: no entry.

    pre: current >= NO_OFFSET and offset >= 0
    post: __return__ in (offset, current)
    post: __return__ >= offset or not increase_only
    post: __return__ >= current or not increase_only
    post: increase_only or __return__ == offset
    post: current != NO_OFFSET or __return__ == offset
    """
    if current == NO_OFFSET or not increase_only:
        return offset
    return max(current, offset)


class StoreRead(enum.Enum):
    """How reading the backing store (the broker, or the local file) went, for :func:`read_offset`."""

    FOUND = "FOUND"  # broker SUCCESS, or an entry in the file
    NOT_FOUND = "NOT_FOUND"  # a broker error response (QUERY_NOT_FOUND...), or no entry / unreadable file
    FAILED = "FAILED"  # remote only: timeout, no route, any other exception


@CLAUSES.oracle("OFF-6")
def read_offset(
    read_type: ReadOffsetType,
    memory: int,
    store: StoreRead,
    store_offset: int = 0,
    remote: bool = True,
) -> tuple[int, int]:
    """readOffset (OFF-6): the answer and the memory entry afterwards (NO_OFFSET: none); ``store_offset``
    counts when the store has an offset (FOUND).

    pre: store_offset >= 0 and memory >= NO_OFFSET
    post: read_type != ReadOffsetType.READ_FROM_MEMORY or __return__ == (memory, memory)
    post: read_type == ReadOffsetType.READ_FROM_STORE or memory == NO_OFFSET or __return__ == (memory, memory)
    post: __return__[0] != -2 or (remote and store == StoreRead.FAILED)
    post: __return__[0] >= -2 and (__return__[0] < 0 or __return__[1] == __return__[0])
    post: __return__[0] >= 0 or __return__[1] == memory
    post: __return__[0] == store_offset or store != StoreRead.FOUND or read_type.name != "READ_FROM_STORE"
    """
    if read_type != ReadOffsetType.READ_FROM_STORE and memory != NO_OFFSET:
        return memory, memory
    if read_type == ReadOffsetType.READ_FROM_MEMORY:
        return NO_OFFSET, memory
    if store == StoreRead.FOUND:
        # Cached with updateOffset(increaseOnly=false): the store wins over whatever memory held.
        return store_offset, store_offset
    if store == StoreRead.FAILED and remote:
        return -2, memory
    return NO_OFFSET, memory


@CLAUSES.oracle("OFF-11")
def remote_persist_all(
    memory: tuple[int, ...], held: tuple[bool, ...]
) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """RemoteBrokerOffsetStore.persistAll over queues 0..n-1 (OFF-11): the memory entries afterwards and the
    (queue, offset) pairs sent as oneway UPDATE_CONSUMER_OFFSET.

    ``memory[q]`` is queue q's entry (NO_OFFSET: none) and ``held[q]`` whether q is in processQueueTable.

    pre: len(memory) == len(held) <= 3 and all(m >= NO_OFFSET for m in memory)
    post: any(held) or __return__ == (memory, ())
    post: not any(held) or all(__return__[0][q] == memory[q] for q in range(len(held)) if held[q])
    post: not any(held) or all(__return__[0][q] == NO_OFFSET for q in range(len(held)) if not held[q])
    post: all(m >= 0 and memory[q] == m and held[q] for q, m in __return__[1])
    post: not any(held) or len(__return__[1]) == len([m for m, h in zip(memory, held) if h and m >= 0])
    post: len({q for q, _ in __return__[1]}) == len(__return__[1])
    """
    if not any(held):
        return memory, ()
    sent = tuple((q, m) for q, m in enumerate(memory) if m != NO_OFFSET and held[q])
    return tuple(m if h else NO_OFFSET for m, h in zip(memory, held, strict=True)), sent


@CLAUSES.oracle("OFF-16")
def local_persist_all(
    file: tuple[int, ...],
    memory: tuple[int, ...],
    held: tuple[bool, ...],
    profile: VersionProfile = DEFAULT_PROFILE,
) -> tuple[int, ...]:
    """LocalFileOffsetStore.persistAll: the file's entry per queue afterwards (OFF-16).

    pre: len(file) == len(memory) == len(held) <= 2 and profile in (V4_9_3, V4_9_8)
    pre: all(v >= NO_OFFSET for v in file + memory)
    post: any(held) or __return__ == file
    post: all(__return__[q] == memory[q] for q in range(len(held)) if held[q] and memory[q] >= 0)
    post: not any(held) or profile < V4_9_8 or all(__return__[q] == file[q] for q in _kept(memory, held))
    post: not any(held) or profile >= V4_9_8 or all(__return__[q] == NO_OFFSET for q in _kept(memory, held))
    """
    if not any(held):
        return file
    merge = profile >= V4_9_8
    return tuple(
        m if (h and m != NO_OFFSET) else (f if merge else NO_OFFSET)
        for f, m, h in zip(file, memory, held, strict=True)
    )


def _kept(memory: tuple[int, ...], held: tuple[bool, ...]) -> list[int]:
    """Queues whose file entry persistAll does not write: not held, or with no memory entry."""
    return [q for q in range(len(held)) if not held[q] or memory[q] == NO_OFFSET]


@CLAUSES.oracle("OFF-16")
def local_persist(
    file: tuple[int, ...],
    memory: tuple[int, ...],
    queue_id: int,
    profile: VersionProfile = DEFAULT_PROFILE,
) -> tuple[int, ...]:
    """LocalFileOffsetStore.persist(mq): one queue's memory entry into the file, from 4.9.8 (OFF-16).

    pre: len(file) == len(memory) <= 2 and 0 <= queue_id < len(file) and profile in (V4_9_3, V4_9_8)
    post: profile >= V4_9_8 or __return__ == file
    post: memory[queue_id] != NO_OFFSET or __return__ == file
    post: all(__return__[q] == file[q] for q in range(len(file)) if q != queue_id)
    post: profile < V4_9_8 or __return__[queue_id] in (memory[queue_id], file[queue_id])
    post: profile < V4_9_8 or memory[queue_id] == NO_OFFSET or __return__[queue_id] == memory[queue_id]
    """
    if profile < V4_9_8 or memory[queue_id] == NO_OFFSET:
        return file
    return (*file[:queue_id], memory[queue_id], *file[queue_id + 1:])


@CLAUSES.oracle("OFF-12", "OFF-16")
def remove_offset(
    memory: tuple[int, ...],
    queue_id: int,
    local: bool = False,
    profile: VersionProfile = DEFAULT_PROFILE,
) -> tuple[int, ...]:
    """removeOffset(mq), also used as removeDirtyOffset: forget a queue's memory entry (OFF-12); the local
    store does so only from 4.9.8 (OFF-16).

    pre: len(memory) <= 2 and 0 <= queue_id < len(memory) and profile in (V4_9_3, V4_9_8)
    post: all(__return__[q] == memory[q] for q in range(len(memory)) if q != queue_id)
    post: (local and profile < V4_9_8) or __return__[queue_id] == NO_OFFSET
    post: not local or profile >= V4_9_8 or __return__ == memory
    """
    if local and profile < V4_9_8:
        return memory
    return (*memory[:queue_id], NO_OFFSET, *memory[queue_id + 1:])


# --- Oracles: the broker and the pull (OFF-7 .. OFF-10) ----------------------------------------------------


@CLAUSES.oracle("OFF-7")
def broker_query_offset(stored: int, min_offset: int, offset_zero_on_disk: bool) -> tuple[ResponseCode, int]:
    """QUERY_CONSUMER_OFFSET's response code and offset (OFF-7); ``stored`` is -1 when the group has none.

    post: __return__[0] in (ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND)
    post: stored < 0 or __return__ == (ResponseCode.SUCCESS, stored)
    post: __return__[0] == ResponseCode.SUCCESS or __return__[1] == -1
    post: stored >= 0 or __return__[0] != ResponseCode.SUCCESS or __return__[1] == 0
    post: __return__[0] == ResponseCode.SUCCESS or stored < 0 and (min_offset > 0 or offset_zero_on_disk)
    post: __return__[0] != ResponseCode.SUCCESS or stored >= 0 or min_offset <= 0 and not offset_zero_on_disk
    """
    if stored >= 0:
        return ResponseCode.SUCCESS, stored
    if min_offset <= 0 and not offset_zero_on_disk:
        return ResponseCode.SUCCESS, 0
    return ResponseCode.QUERY_NOT_FOUND, -1


@CLAUSES.oracle("OFF-8")
def broker_commit(stored: int, offset: int) -> tuple[int, bool]:
    """ConsumerOffsetManager.commitOffset (OFF-8): the stored offset afterwards (``stored`` NO_OFFSET: none
    yet), and whether a commit lower than the stored one was logged.

    pre: stored >= NO_OFFSET and offset >= 0
    post: __return__[0] == offset
    post: __return__[1] == (offset < stored)
    """
    return offset, offset < stored


@CLAUSES.oracle("OFF-9")
def pull_commit_request(
    message_model: MessageModel,
    memory: int,
    to_slave: bool = False,
    post_subscription: bool = False,
    class_filter: bool = False,
) -> tuple[int, int]:
    """The (commitOffset, sysFlag) of a push consumer's pull (OFF-9); ``memory`` NO_OFFSET: no entry.

    pre: memory >= NO_OFFSET
    post: __return__[1] & PULL_FLAG_SUSPEND
    post: message_model == MessageModel.CLUSTERING or __return__[0] == 0
    post: message_model != MessageModel.CLUSTERING or __return__[0] == memory
    post: not __return__[1] & PULL_FLAG_COMMIT_OFFSET or message_model == MessageModel.CLUSTERING
    post: bool(__return__[1] & PULL_FLAG_COMMIT_OFFSET) == (__return__[0] > 0 and not to_slave)
    post: bool(__return__[1] & PULL_FLAG_SUBSCRIPTION) == (post_subscription and not class_filter)
    post: bool(__return__[1] & PULL_FLAG_CLASS_FILTER) == class_filter
    """
    # readOffset(READ_FROM_MEMORY) already answers NO_OFFSET for a queue with no entry.
    commit_value = memory if message_model == MessageModel.CLUSTERING else 0
    flag = PULL_FLAG_SUSPEND
    # Offset 0 is never committed by a pull: "commitOffsetValue > 0" in DefaultMQPushConsumerImpl.pullMessage.
    if commit_value > 0 and not to_slave:
        flag |= PULL_FLAG_COMMIT_OFFSET
    if post_subscription and not class_filter:
        flag |= PULL_FLAG_SUBSCRIPTION
    if class_filter:
        flag |= PULL_FLAG_CLASS_FILTER
    return commit_value, flag


@CLAUSES.oracle("OFF-10")
def broker_stores_pull_commit(
    sys_flag: int, first_processing: bool, is_slave: bool, passed_checks: bool
) -> bool:
    """Whether the broker commits a pull's commitOffset (OFF-10).

    pre: 0 <= sys_flag < 32
    post: __return__ == (passed_checks and first_processing and not is_slave and sys_flag % 2 == 1)
    """
    return passed_checks and first_processing and not is_slave and bool(sys_flag & PULL_FLAG_COMMIT_OFFSET)


# --- Oracles: where a newly added queue starts (OFF-20) --------------------------------------------------------


@CLAUSES.oracle("OFF-20", "OFF-13")
def pull_start(where: ConsumeFromWhere, answer: int, retry: bool, max_offset: int, by_time: int) -> int:
    """Where a queue added to a consumer starts pulling (OFF-13, OFF-20); -1: the queue is left out this round.

    ``answer`` is readOffset(READ_FROM_STORE) (the stored offset, -1 for none, -2 for a failed read); ``retry``
    whether the queue is of a retry topic; ``max_offset`` and ``by_time`` the broker's maxOffset and
    searchOffset(consumeTimestamp) answers, asked only when ``answer`` is -1.

    pre: answer >= -2 and max_offset >= 0 and by_time >= 0
    post: answer < 0 or __return__ == answer
    post: answer != -2 or __return__ == -1
    post: answer != -1 or __return__ >= 0
    post: answer != -1 or where != ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET or __return__ == 0
    post: answer != -1 or where == ConsumeFromWhere.CONSUME_FROM_TIMESTAMP or not retry or __return__ == 0
    post: answer != -1 or where != ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET or retry or __return__ == max_offset
    post: answer != -1 or where != ConsumeFromWhere.CONSUME_FROM_TIMESTAMP or not retry or __return__ == max_offset
    post: answer != -1 or where != ConsumeFromWhere.CONSUME_FROM_TIMESTAMP or retry or __return__ == by_time
    """
    if answer >= 0:
        return answer
    if answer != -1:
        return -1
    if where == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
        return 0
    if where == ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
        return max_offset if retry else by_time
    return 0 if retry else max_offset
