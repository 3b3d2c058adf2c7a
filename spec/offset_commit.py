"""Consume offsets: ProcessQueue, client offset stores, the broker's offset table, commits carried by pulls.

A push consumer caches the messages it pulls from a queue in a ``ProcessQueue`` keyed by queue offset.
Consume threads finish messages in any order; after each consume request the client removes the batch and
writes into its in-memory offset table the smallest offset still cached (never the offset of the message just
finished), with ``increaseOnly`` so that a late writer cannot move it back. The memory offset reaches the
broker periodically (``persistAll``, oneway ``UPDATE_CONSUMER_OFFSET``), when the queue is dropped
(``persist``) and on every pull (``commitOffset`` with the commit bit). The broker overwrites. Broadcasting
keeps offsets in a local file instead. Together this gives at-least-once delivery: after a crash, or when the
queue moves to another consumer, consumption resumes from the stored offset, which never passes a message
that was not handled.

Follows ``ProcessQueue``, ``ConsumeMessageConcurrentlyService.processConsumeResult``,
``ConsumeMessageOrderlyService.processConsumeResult``, ``RemoteBrokerOffsetStore``, ``LocalFileOffsetStore``,
``DefaultMQPushConsumerImpl.pullMessage``/``correctTagsOffset``, ``PullAPIWrapper.pullKernelImpl``,
``RebalanceImpl``/``RebalancePushImpl`` (dropping and adding a queue) and, on the broker,
``ConsumerOffsetManager``, ``ConsumerManageProcessor`` and ``PullMessageProcessor`` of ``rocketmq-all-4.9.8``.

Version notes: ``LocalFileOffsetStore`` changed in 4.9.8: ``persistAll`` merges into the file and
``persist(mq)``/``removeOffset(mq)`` act; before, ``persistAll`` rewrote the file with the given queues only
and the other two did nothing (OFF-16, and the broadcasting case of OFF-18). ``RemoteBrokerOffsetStore`` sends
offsets explicitly to the master from 4.9.3 (OFF-11). Everything else here is the same across 4.9.x.

The state machine follows one queue of ``messages`` messages (offsets 0..N-1, all stored before the consumer
starts) and one consumer that pulls, consumes in any interleaving, persists, crashes, loses the queue and gets
it back. Threads and timers become interleavings. Commits travelling to the broker (oneway persists and the
commits carried by pulls) arrive in any order and at any time, also after the client crashed; a pull's commit
may even arrive after its response (a superset of the real orders). Consume requests of a dropped or crashed
ProcessQueue vanish with it (whether their listeners still ran only adds duplicates), except that after a drop
the thread holding the largest removeMessage result may still write it (OFF-12), at any later time.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable, Iterator

import attrs

from rocketspec.spec.clauses import Clause, ClauseTable
from rocketspec.spec.explorer import Invariant, Model, StepInvariant, require_enabled
from rocketspec.spec.protocol import (
    PERSIST_CONSUMER_OFFSET_INTERVAL_MS,
    PULL_FLAG_CLASS_FILTER,
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
    MessageModel,
    ReadOffsetType,
    ResponseCode,
)
from rocketspec.spec.versions import DEFAULT_PROFILE, V4_9_3, V4_9_8, VersionProfile

# What readOffset answers, and what the oracles and the machine hold, when a queue has no offset.
NO_OFFSET = -1
_PERSIST_S = PERSIST_CONSUMER_OFFSET_INTERVAL_MS // 1000
_SEND_BACK_RETRY_S = SEND_BACK_LOCAL_RETRY_DELAY_MS // 1000

CLAUSES = ClauseTable(
    area="offset_commit",
    prefix="OFF",
    clauses=(
        Clause(
            "OFF-1",
            "putMessage caches each message under its queue offset; an offset already cached is replaced "
            "without being counted, and queueOffsetMax becomes the offset of the last newly cached message.",
            "ProcessQueue.putMessage",
        ),
        Clause(
            "OFF-2",
            "putMessage returns dispatchToConsume true exactly when msgTreeMap is non-empty afterwards and "
            "the queue was not consuming, and then marks it consuming; only an orderly takeMessages finding "
            "nothing clears the mark (concurrent consumption ignores the flag).",
            "ProcessQueue.putMessage, ProcessQueue.takeMessages, DefaultMQPushConsumerImpl.pullMessage",
        ),
        Clause(
            "OFF-3",
            "removeMessage returns -1 when msgTreeMap was empty before the call; otherwise it removes the "
            "batch and returns the smallest offset still cached, or queueOffsetMax + 1 when none is left.",
            "ProcessQueue.removeMessage; seed 001 §1.3, §6.1",
        ),
        Clause(
            "OFF-4",
            "After a concurrent consume request, clustering keeps cached the messages whose "
            f"CONSUMER_SEND_MSG_BACK failed and resubmits them {_SEND_BACK_RETRY_S} s later, broadcasting "
            "drops failures; the rest is removed and the removeMessage result, when >= 0 and the "
            "ProcessQueue is not dropped, is written with updateOffset(increaseOnly=true).",
            "ConsumeMessageConcurrentlyService.processConsumeResult, ConsumeRequest.run; "
            "seed 001 §6.1, §6.2",
        ),
        Clause(
            "OFF-5",
            "updateOffset creates an absent entry with the value; otherwise increaseOnly raises the entry "
            "only to a larger value (compareAndIncreaseOnly), and without it the value overwrites the entry.",
            "RemoteBrokerOffsetStore.updateOffset, LocalFileOffsetStore.updateOffset, "
            "MixAll.compareAndIncreaseOnly",
        ),
        Clause(
            "OFF-6",
            "readOffset: READ_FROM_MEMORY gives the entry or -1; MEMORY_FIRST_THEN_STORE gives the entry "
            "when present, else reads the store; a store read gives the stored offset and caches it by "
            "overwrite, -1 when there is none, and -2 when a remote read fails other than by a broker "
            "response.",
            "RemoteBrokerOffsetStore.readOffset, LocalFileOffsetStore.readOffset, "
            "MQClientAPIImpl.queryConsumerOffset",
        ),
        Clause(
            "OFF-7",
            "QUERY_CONSUMER_OFFSET answers the stored offset when it is >= 0; with none, it answers 0 when "
            "the queue's min offset is <= 0 and offset 0 is not on disk, and QUERY_NOT_FOUND otherwise.",
            "ConsumerManageProcessor.queryConsumerOffset",
        ),
        Clause(
            "OFF-8",
            "ConsumerOffsetManager.commitOffset overwrites the stored topic@group queue offset with the "
            "committed value, also a lower one (only logged); UPDATE_CONSUMER_OFFSET commits "
            "unconditionally.",
            "ConsumerOffsetManager.commitOffset, ConsumerManageProcessor.updateConsumerOffset",
        ),
        Clause(
            "OFF-9",
            "A push pull carries commitOffset = readOffset(READ_FROM_MEMORY) (-1 when absent) with the "
            "commit bit only when that is > 0 in clustering, commitOffset 0 and no bit in broadcasting, "
            "always the suspend bit; the client clears the commit bit for a pull sent to a slave.",
            "DefaultMQPushConsumerImpl.pullMessage, PullSysFlag.buildSysFlag, "
            "PullAPIWrapper.pullKernelImpl; seed 001 §4.3.1",
        ),
        Clause(
            "OFF-10",
            "The broker commits a pull's commitOffset (as OFF-8) only when the request passed the "
            "permission, topic and subscription checks, is processed for the first time "
            "(brokerAllowSuspend: not the re-run after a long-poll wake-up), has the commit bit, and the "
            "broker is not a SLAVE; whatever the status.",
            "PullMessageProcessor.processRequest, PullMessageProcessor.executeRequestWhenWakeup; "
            "seed 001 §4.3.2",
        ),
        Clause(
            "OFF-11",
            f"persistAll runs every {_PERSIST_S} s over the queues in processQueueTable and does nothing "
            "when there are "
            "none; the remote store sends each held queue's memory entry as a oneway UPDATE_CONSUMER_OFFSET "
            "and forgets the entries of queues no longer held.",
            "MQClientInstance.persistAllConsumerOffset, RemoteBrokerOffsetStore.persistAll; seed 001 §1.3",
            versions="4.9.0-4.9.2: sent to the address findBrokerAddressInAdmin picks; 4.9.3+: to the master",
        ),
        Clause(
            "OFF-12",
            "A queue leaving the consumer (rebalance, or pull idle too long) has its ProcessQueue marked "
            "dropped, then persist(mq), then removeOffset(mq); a dropped ProcessQueue's results are not "
            "written, save by a consume thread that passed the isDropped check just before (not atomic), and "
            "by a NO_NEW_MSG / NO_MATCHED_MSG answer to a pull of the dropped ProcessQueue, whose "
            "correctTagsOffset writes the next offset with increaseOnly when its msgCount is 0 (no isDropped "
            "check).",
            "RebalanceImpl.updateProcessQueueTableInRebalance, "
            "RebalancePushImpl.removeUnnecessaryMessageQueue, DefaultMQPushConsumerImpl.correctTagsOffset",
        ),
        Clause(
            "OFF-13",
            "A queue added to a consumer (rebalance, restart) gets removeDirtyOffset(mq), then "
            "readOffset(READ_FROM_STORE): an offset >= 0 is where pulling starts (and is cached), -1 falls "
            "back to consumeFromWhere, -2 leaves the queue out until the next rebalance.",
            "RebalanceImpl.updateProcessQueueTableInRebalance, "
            "RebalancePushImpl.computePullFromWhereWithException",
        ),
        Clause(
            "OFF-14",
            "On NO_NEW_MSG or NO_MATCHED_MSG the next pull offset becomes nextBeginOffset and, when the "
            "ProcessQueue's msgCount is 0, the memory entry gets updateOffset(nextBeginOffset, "
            "increaseOnly=true).",
            "DefaultMQPushConsumerImpl.pullMessage, DefaultMQPushConsumerImpl.correctTagsOffset",
        ),
        Clause(
            "OFF-15",
            "Orderly: takeMessages moves the smallest cached offsets (up to the batch size) to "
            "consumingMsgOrderlyTreeMap; commit empties it and returns its largest offset + 1, written with "
            "updateOffset(increaseOnly=false) unless dropped; makeMessageToConsumeAgain/rollback move them "
            "back.",
            "ProcessQueue.takeMessages/commit/makeMessageToConsumeAgain/rollback, "
            "ConsumeMessageOrderlyService.processConsumeResult",
        ),
        Clause(
            "OFF-16",
            "Broadcasting keeps offsets in ~/.rocketmq_offsets/<clientId>/<group>/offsets.json, where "
            "persistAll writes the held queues' memory entries; persist(mq) and removeOffset(mq) act from "
            "4.9.8 only.",
            "LocalFileOffsetStore.persistAll/persist/removeOffset; seed 001 §6.3.1",
            versions="4.9.0-4.9.7: persistAll rewrites the file with the held queues only, persist(mq) and "
            "removeOffset(mq) do nothing; 4.9.8: persistAll merges into the file, persist(mq) writes one "
            "queue, removeOffset(mq) forgets its memory entry",
        ),
        Clause(
            "OFF-17",
            "At-least-once: every offset below the stored offset (broker, or local file when broadcasting) "
            "or the memory entry was consumed successfully or handed to the retry topic (broadcasting: "
            "consumed).",
            "seed 001 §1.3, §6.3; ConsumeMessageConcurrentlyService.processConsumeResult",
        ),
        Clause(
            "OFF-18",
            "While a queue is held, no removeMessage result waiting to be written passes a message still "
            "cached or being consumed, nor does the memory entry unless a late write of OFF-12 raised it.",
            "ProcessQueue.removeMessage, ConsumeMessageConcurrentlyService.processConsumeResult; "
            "seed 001 §1.3",
            versions="clustering: 4.9.x; broadcasting: 4.9.8 only (before, removeOffset is a no-op and a "
            "queue added back with no file entry keeps the memory entry of its previous ProcessQueue)",
        ),
        Clause(
            "OFF-19",
            "No loss: while a queue is held every unhandled message below the pull offset is cached and due "
            "to be consumed; a queue added back starts at or before its first unhandled message, in "
            "clustering exactly at the broker offset.",
            "RebalancePushImpl.computePullFromWhereWithException, ProcessQueue; seed 001 §1.3, §6.3",
        ),
    ),
)


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


# --- State machine ------------------------------------------------------------------------------------------


@attrs.frozen(cache_hash=True)
class Config:
    """A machine's fixed parameters: message model, orderly or concurrent, release, sizes (the queue's
    messages, the pull batch, consumeMessageBatchMaxSize), how many send-backs may fail, and whether a
    dropped ProcessQueue's consume thread may write late (OFF-12)."""

    message_model: MessageModel = MessageModel.CLUSTERING
    orderly: bool = False
    profile: VersionProfile = DEFAULT_PROFILE
    messages: int = 3
    pull_batch: int = 2
    consume_batch: int = 1
    max_send_back_failures: int = 0
    late_writes: bool = False

    @property
    def clustering(self) -> bool:
        return self.message_model == MessageModel.CLUSTERING

    @property
    def forgets(self) -> bool:
        """Whether persist(mq) and removeOffset(mq) act: remote store always, local from 4.9.8 (OFF-16)."""
        return self.clustering or self.profile >= V4_9_8


@attrs.frozen(cache_hash=True)
class ConsumeRequest:
    """A concurrent consume request: its messages and, once its listener returned, the removeMessage result
    still to be written into the memory entry (``removed``; None while the listener runs)."""

    offsets: tuple[int, ...]
    removed: int | None = None


@attrs.frozen(cache_hash=True)
class Held:
    """The queue while the consumer holds it: its ProcessQueue, the next pull offset, the consume requests,
    and whether a consume thread of an earlier, dropped ProcessQueue wrote into the memory entry since the
    queue was added (``late_write``, OFF-18)."""

    pq: ProcessQueueState
    next_offset: int
    requests: tuple[ConsumeRequest, ...] = ()
    late_write: bool = False


@attrs.frozen(cache_hash=True)
class OffsetState:
    """One queue's offsets: ``stored`` (broker table, or the local file when broadcasting), the commits
    travelling to the broker (``in_flight``, sorted), the client's ``memory`` entry (both NO_OFFSET when
    there is none), the queue while held (None before, after a drop, after a crash), the removeMessage
    results of dropped ProcessQueues whose consume threads passed the isDropped check and may still write
    (``late``, sorted), the offsets handled so far (``done``, OFF-17), and counters of crashes, drops and
    failed send-backs."""

    config: Config
    stored: int = NO_OFFSET
    in_flight: tuple[int, ...] = ()
    memory: int = NO_OFFSET
    held: Held | None = None
    late: tuple[int, ...] = ()
    done: frozenset[int] = frozenset()
    crashes: int = 0
    drops: int = 0
    send_back_failures: int = 0

    def but(self, **changes: object) -> OffsetState:
        """A copy with ``changes``: attrs.evolve without its introspection, since it runs on every step."""
        fields = {
            "config": self.config,
            "stored": self.stored,
            "in_flight": self.in_flight,
            "memory": self.memory,
            "held": self.held,
            "late": self.late,
            "done": self.done,
            "crashes": self.crashes,
            "drops": self.drops,
            "send_back_failures": self.send_back_failures,
        }
        fields.update(changes)
        return OffsetState(**fields)  # type: ignore[arg-type]


@attrs.frozen
class PullFound:
    """A pull returns FOUND with the next batch; it carried the commit of OFF-9."""


@attrs.frozen
class PullNoNewMessage:
    """A pull at the end of the queue returns NO_NEW_MSG; it carried the commit of OFF-9."""


@attrs.frozen
class ConsumeFinished:
    """A concurrent listener returned for ``request``; sending ``send_back_failed`` back failed (OFF-4)."""

    request: ConsumeRequest
    send_back_failed: tuple[int, ...] = ()


@attrs.frozen
class OffsetUpdated:
    """The consume thread of ``request`` writes its removeMessage result into the memory entry."""

    request: ConsumeRequest


@attrs.frozen
class TakeMessages:
    """Orderly: the consume thread takes the next batch."""


@attrs.frozen
class OrderlyConsumed:
    """Orderly: the listener returned SUCCESS (``success``) or SUSPEND_CURRENT_QUEUE_A_MOMENT."""

    success: bool


@attrs.frozen
class PersistAll:
    """The periodic persist task runs."""


@attrs.frozen
class CommitArrives:
    """A travelling commit of ``offset`` (a persist, or carried by a pull) reaches the broker."""

    offset: int


@attrs.frozen
class ConsumerCrashed:
    """The consumer process dies: memory entry, ProcessQueue and consume threads are gone."""


@attrs.frozen
class QueueDropped:
    """Rebalance (or pull idling) takes the queue away from the consumer."""


@attrs.frozen
class QueueAssigned:
    """The queue is assigned to the consumer again, or the restarted consumer takes it."""


@attrs.frozen
class LateOffsetWrite:
    """A consume thread of a dropped ProcessQueue, which passed the isDropped check before the drop, writes
    its removeMessage result ``offset`` only now (OFF-12: the check and the write are not atomic); or a pull
    of the dropped ProcessQueue, with nothing cached, is answered NO_NEW_MSG and correctTagsOffset writes its
    next offset (OFF-12: the pull callback does not check isDropped)."""

    offset: int


Action = (
    PullFound | PullNoNewMessage | ConsumeFinished | OffsetUpdated | TakeMessages | OrderlyConsumed
    | PersistAll | CommitArrives | ConsumerCrashed | QueueDropped | QueueAssigned | LateOffsetWrite
)


def _pull_commit(state: OffsetState) -> tuple[int, ...]:
    """The commit a pull sends now, if any (OFF-9 on the client, OFF-10 on a master broker)."""
    commit_offset, flag = pull_commit_request(state.config.message_model, state.memory)
    if broker_stores_pull_commit(flag, first_processing=True, is_slave=False, passed_checks=True):
        return (commit_offset,)
    return ()


def _plus(values: tuple[int, ...], *more: int) -> tuple[int, ...]:
    return tuple(sorted((*values, *more)))


def _without_one(values: tuple[int, ...], value: int) -> tuple[int, ...]:
    index = values.index(value)
    return values[:index] + values[index + 1:]


def _requests(requests: Iterable[ConsumeRequest]) -> tuple[ConsumeRequest, ...]:
    """Consume requests in a canonical order: they run in any order, the order only identifies states."""
    return tuple(sorted(requests, key=lambda r: (r.offsets, r.removed is not None, r.removed or 0)))


@CLAUSES.oracle("OFF-4", "OFF-9", "OFF-12", "OFF-13", "OFF-14", "OFF-15")
def enabled(state: OffsetState, action: Action) -> bool:
    """Whether ``action`` can happen in ``state`` (OFF-4, OFF-9, OFF-12, OFF-13, OFF-14, OFF-15).

    Consume results exist only for requests of the held ProcessQueue; of a dropped one, only a late write
    may remain (OFF-12).
    """
    held = state.held
    config = state.config
    if isinstance(action, QueueAssigned):
        return held is None
    if isinstance(action, CommitArrives):
        return action.offset in state.in_flight
    if isinstance(action, LateOffsetWrite):
        return action.offset in state.late
    if isinstance(action, ConsumerCrashed):
        return True
    if held is None:
        return False
    if isinstance(action, (QueueDropped, PersistAll)):
        return True
    if isinstance(action, PullFound):
        return held.next_offset < config.messages
    if isinstance(action, PullNoNewMessage):
        return held.next_offset >= config.messages
    if isinstance(action, ConsumeFinished):
        return (
            not config.orderly
            and action.request in held.requests
            and action.request.removed is None
            and set(action.send_back_failed) <= set(action.request.offsets)
            and (config.clustering or not action.send_back_failed)
        )
    if isinstance(action, OffsetUpdated):
        return action.request in held.requests and action.request.removed is not None
    if isinstance(action, TakeMessages):
        return config.orderly and not held.pq.taken and bool(held.pq.cached)
    if isinstance(action, OrderlyConsumed):
        return config.orderly and bool(held.pq.taken)
    return False


@CLAUSES.oracle("OFF-4", "OFF-9", "OFF-11", "OFF-12", "OFF-13", "OFF-14", "OFF-15", "OFF-16")
def step(state: OffsetState, action: Action) -> OffsetState:
    """The state after the enabled ``action``.

    Pulls and their commits (OFF-9), consume results (OFF-4, OFF-15), persists (OFF-11, OFF-16), drops
    (OFF-12), assignment (OFF-13), NO_NEW_MSG (OFF-14).
    """
    require_enabled(enabled, state, action, Action)
    config = state.config
    held = state.held
    if isinstance(action, CommitArrives):
        stored, _lower_logged = broker_commit(state.stored, action.offset)
        return state.but(stored=stored, in_flight=_without_one(state.in_flight, action.offset))
    if isinstance(action, ConsumerCrashed):
        return state.but(memory=NO_OFFSET, held=None, late=(), crashes=state.crashes + 1)
    if isinstance(action, LateOffsetWrite):
        memory = update_offset(state.memory, action.offset, True)
        late_held = None if held is None else Held(held.pq, held.next_offset, held.requests, True)
        return state.but(memory=memory, held=late_held, late=_without_one(state.late, action.offset))
    if isinstance(action, QueueAssigned):
        return _assigned(state)
    if held is None:
        raise ValueError(f"{action!r} needs the queue held")
    if isinstance(action, QueueDropped):
        return _dropped(state)
    if isinstance(action, PersistAll):
        if state.memory == NO_OFFSET:
            return state
        if config.clustering:
            return state.but(in_flight=_plus(state.in_flight, state.memory))
        file = local_persist_all((state.stored,), (state.memory,), (True,), config.profile)
        return state.but(stored=file[0])
    if isinstance(action, PullFound):
        end = min(held.next_offset + config.pull_batch, config.messages)
        batch = tuple(range(held.next_offset, end))
        pq, _dispatch = put_messages(held.pq, batch)
        requests = held.requests
        if not config.orderly:
            # submitConsumeRequest cuts the pulled list into requests of consumeMessageBatchMaxSize.
            size = config.consume_batch
            chunks = (ConsumeRequest(batch[i:i + size]) for i in range(0, len(batch), size))
            requests = _requests((*requests, *chunks))
        pulled = Held(pq, end, requests, held.late_write)
        return state.but(in_flight=_plus(state.in_flight, *_pull_commit(state)), held=pulled)
    if isinstance(action, PullNoNewMessage):
        memory = state.memory
        if held.pq.msg_count == 0:
            memory = update_offset(memory, held.next_offset, True)
        return state.but(in_flight=_plus(state.in_flight, *_pull_commit(state)), memory=memory)
    if isinstance(action, ConsumeFinished):
        request = action.request
        failed = tuple(o in action.send_back_failed for o in request.offsets)
        pq, commit, retried = concurrent_consume_result(held.pq, request.offsets, failed,
                                                        config.message_model)
        requests = list(held.requests)
        requests.remove(request)
        if commit != NO_OFFSET:
            requests.append(ConsumeRequest(request.offsets, commit))
        if retried:
            requests.append(ConsumeRequest(retried))
        return state.but(
            done=state.done | (set(request.offsets) - set(retried)),
            held=Held(pq, held.next_offset, _requests(requests), held.late_write),
            send_back_failures=state.send_back_failures + (1 if retried else 0),
        )
    if isinstance(action, OffsetUpdated):
        requests = list(held.requests)
        requests.remove(action.request)
        written = action.request.removed
        if written is None:
            raise ValueError(f"{action!r}: the listener has not returned")
        memory = update_offset(state.memory, written, True)
        unwritten = Held(held.pq, held.next_offset, tuple(requests), held.late_write)
        return state.but(memory=memory, held=unwritten)
    if isinstance(action, TakeMessages):
        pq, _taken = take_messages(held.pq, config.consume_batch)
        return state.but(held=Held(pq, held.next_offset, held.requests, held.late_write))
    if isinstance(action, OrderlyConsumed):
        if not action.success:
            again = make_message_to_consume_again(held.pq, held.pq.taken)
            return state.but(held=Held(again, held.next_offset, held.requests, held.late_write))
        pq, commit = orderly_commit(held.pq)
        return state.but(
            memory=update_offset(state.memory, commit, False),
            done=state.done | set(held.pq.taken),
            held=Held(pq, held.next_offset, held.requests, held.late_write),
        )
    raise ValueError(f"not an offset_commit action: {action!r}")


def _dropped(state: OffsetState) -> OffsetState:
    """OFF-12: marked dropped, persist(mq), removeOffset(mq). The dropped ProcessQueue's consume requests go
    with it, except that a thread whose removeMessage result is ready may have passed the isDropped check
    already and write it later (``late``); so may a pull in flight when nothing is cached: a NO_NEW_MSG
    answer makes correctTagsOffset write the pull offset."""
    config = state.config
    assert state.held is not None
    # Of the results ready, the largest is the one a late write can do most with (increaseOnly): the
    # machine keeps that one.
    ready = [r.removed for r in state.held.requests if r.removed is not None]
    if state.held.pq.msg_count == 0:
        ready.append(state.held.next_offset)
    late = _plus(state.late, max(ready)) if ready and config.late_writes else state.late
    in_flight, stored = state.in_flight, state.stored
    if config.clustering:
        if state.memory != NO_OFFSET:
            in_flight = _plus(in_flight, state.memory)
    else:
        stored = local_persist((stored,), (state.memory,), 0, config.profile)[0]
    memory = remove_offset((state.memory,), 0, local=not config.clustering, profile=config.profile)[0]
    return state.but(
        in_flight=in_flight, stored=stored, memory=memory, held=None, late=late, drops=state.drops + 1
    )


def _assigned(state: OffsetState) -> OffsetState:
    """OFF-13: removeDirtyOffset, readOffset(READ_FROM_STORE), pull from there (from 0 when there is none)."""
    config = state.config
    memory = remove_offset((state.memory,), 0, local=not config.clustering, profile=config.profile)[0]
    if config.clustering:
        # The whole queue is still in memory, so a group with no offset is answered 0 (OFF-7).
        code, offset = broker_query_offset(state.stored, 0, False)
        found = StoreRead.FOUND if code == ResponseCode.SUCCESS else StoreRead.NOT_FOUND
    else:
        offset = state.stored
        found = StoreRead.NOT_FOUND if state.stored == NO_OFFSET else StoreRead.FOUND
    answer, memory = read_offset(ReadOffsetType.READ_FROM_STORE, memory, found, max(offset, 0),
                                 config.clustering)
    # -1 goes to consumeFromWhere: this consumer starts at the first message (CONSUME_FROM_FIRST_OFFSET).
    start = answer if answer >= 0 else 0
    return state.but(memory=memory, held=Held(ProcessQueueState(), start))


# --- Invariants ---------------------------------------------------------------------------------------------


def first_unhandled(state: OffsetState) -> int:
    """The smallest offset not yet handled (OFF-17)."""
    offset = 0
    while offset in state.done:
        offset += 1
    return offset


def at_least_once(state: OffsetState) -> bool:
    """OFF-17: neither the stored offset nor the memory entry passes a message never handled."""
    gap = first_unhandled(state)
    return state.stored <= gap and state.memory <= gap


def memory_within_process_queue(state: OffsetState) -> bool:
    """OFF-18, OFF-3, OFF-14, OFF-15: while held, every removeMessage result waiting to be written and the
    memory entry are at most the smallest message still cached or taken, and the memory entry at most the
    pull offset. The memory part does not apply after a late write (OFF-12), nor to broadcasting before
    4.9.8 (OFF-18's versions)."""
    held = state.held
    if held is None:
        return True
    floor = min((*held.pq.cached, *held.pq.taken), default=held.next_offset)
    if any(r.removed is not None and r.removed > floor for r in held.requests):
        return False
    if state.memory == NO_OFFSET or not state.config.forgets or held.late_write:
        return True
    return state.memory <= floor and state.memory <= held.next_offset


def no_message_lost(state: OffsetState) -> bool:
    """OFF-19, OFF-1, OFF-4: while held, every unhandled message below the pull offset is cached or taken, and
    (concurrent) exactly the cached messages are in consume requests whose listener has not returned."""
    held = state.held
    if held is None:
        return True
    waiting = set(held.pq.cached) | set(held.pq.taken)
    if any(o not in state.done and o not in waiting for o in range(held.next_offset)):
        return False
    if state.config.orderly:
        return True
    due = {o for r in held.requests if r.removed is None for o in r.offsets}
    return set(held.pq.cached) == due


def memory_only_rises(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-5, OFF-4: while the queue stays held, the memory entry never moves back (increaseOnly; the orderly
    commit overwrites, but with ever larger values)."""
    if before.held is None or after.held is None:
        return True
    return after.memory >= before.memory


def broker_overwrites(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-8: after a commit arrives the stored offset is exactly its value, lower or not."""
    if not isinstance(action, CommitArrives):
        return True
    return after.stored == action.offset


def pull_commits_memory(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-9, OFF-10: a clustering pull sends at most one commit, the memory entry, and only when it is > 0;
    a broadcasting pull commits nothing."""
    if not isinstance(action, (PullFound, PullNoNewMessage)):
        return True
    sent = list(after.in_flight)
    for value in before.in_flight:
        sent.remove(value)
    if not before.config.clustering or before.memory <= 0:
        return sent == []
    return sent == [before.memory]


def resumes_at_stored_offset(before: OffsetState, action: Action, after: OffsetState) -> bool:
    """OFF-13, OFF-19, OFF-6, OFF-7: a queue added back starts no later than its first unhandled message; in
    clustering exactly at the broker offset (0 when there is none), which the memory entry then holds."""
    if not isinstance(action, QueueAssigned) or after.held is None:
        return True
    start = after.held.next_offset
    if start > first_unhandled(before):
        return False
    if not before.config.clustering:
        return True
    expected = max(before.stored, 0)
    return start == expected and after.memory == expected


INVARIANTS: tuple[Invariant[OffsetState], ...] = (
    Invariant("at_least_once", ("OFF-17", "OFF-8", "OFF-11", "OFF-16"), at_least_once),
    Invariant(
        "memory_within_process_queue", ("OFF-18", "OFF-3", "OFF-14", "OFF-15"), memory_within_process_queue
    ),
    Invariant("no_message_lost", ("OFF-19", "OFF-1", "OFF-4", "OFF-12"), no_message_lost),
)

STEP_INVARIANTS: tuple[StepInvariant[OffsetState, Action], ...] = (
    StepInvariant("memory_only_rises", ("OFF-5", "OFF-4"), memory_only_rises),
    StepInvariant("broker_overwrites", ("OFF-8",), broker_overwrites),
    StepInvariant("pull_commits_memory", ("OFF-9", "OFF-10"), pull_commits_memory),
    StepInvariant(
        "resumes_at_stored_offset", ("OFF-13", "OFF-19", "OFF-6", "OFF-7"), resumes_at_stored_offset
    ),
)


def default_variants(messages: int = 3, pull_batch: int = 2) -> tuple[Config, ...]:
    """The machines :func:`model` explores by default: clustering concurrent with one message per consume
    request (RocketMQ's default), with two plus one failing send-back (OFF-4), and with a late write after a
    drop (OFF-12, on one message fewer to stay small); clustering orderly; broadcasting under 4.9.8 and 4.9.3
    (OFF-16, OFF-18)."""
    clustering, broadcasting = MessageModel.CLUSTERING, MessageModel.BROADCASTING
    return (
        Config(clustering, False, DEFAULT_PROFILE, messages, pull_batch, 1),
        Config(clustering, False, DEFAULT_PROFILE, max(messages - 1, 1), pull_batch, 1, late_writes=True),
        Config(clustering, False, DEFAULT_PROFILE, messages, pull_batch, 2, max_send_back_failures=1),
        Config(clustering, True, DEFAULT_PROFILE, messages, pull_batch, 1),
        Config(broadcasting, False, DEFAULT_PROFILE, messages, pull_batch, 1),
        Config(broadcasting, False, V4_9_3, messages, pull_batch, 1),
    )


def _subsets(offsets: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    for size in range(len(offsets) + 1):
        yield from itertools.combinations(offsets, size)


def model(
    messages: int = 3,
    pull_batch: int = 2,
    max_crashes: int = 1,
    max_drops: int = 1,
    max_in_flight: int = 2,
    variants: tuple[Config, ...] | None = None,
) -> Model[OffsetState, Action]:
    """One queue of ``messages`` messages pulled ``pull_batch`` at a time, with up to ``max_crashes`` crashes,
    ``max_drops`` drops and ``max_in_flight`` commits travelling at once, for each of ``variants`` (by
    default :func:`default_variants`)."""
    machines = default_variants(messages, pull_batch) if variants is None else variants

    def actions(state: OffsetState) -> Iterator[Action]:
        config = state.config
        for offset in sorted(set(state.in_flight)):
            yield CommitArrives(offset)
        for offset in sorted(set(state.late)):
            yield LateOffsetWrite(offset)
        if state.crashes < max_crashes:
            yield ConsumerCrashed()
        held = state.held
        if held is None:
            yield QueueAssigned()
            return
        # Bounds, not rules: a commit is sent only while fewer than max_in_flight travel, and a persist only
        # when its value is not travelling already (a second copy reaches no new broker value).
        room = len(state.in_flight) < max_in_flight
        sends = config.clustering and state.memory != NO_OFFSET
        if state.memory != NO_OFFSET and (room or not sends) and state.memory not in state.in_flight:
            yield PersistAll()
        if (room or not sends) and state.drops < max_drops:
            yield QueueDropped()
        if room or not _pull_commit(state):
            yield PullFound()
            yield PullNoNewMessage()
        retries = config.clustering and state.send_back_failures < config.max_send_back_failures
        for request in held.requests:
            if request.removed is not None:
                yield OffsetUpdated(request)
                continue
            for failed in _subsets(request.offsets) if retries else [()]:
                yield ConsumeFinished(request, failed)
        if config.orderly:
            yield TakeMessages()
            yield OrderlyConsumed(True)
            yield OrderlyConsumed(False)

    bounds = (
        f"1 queue x {messages} messages, pull batch {pull_batch}, <= {max_crashes} crash(es), "
        f"<= {max_drops} drop(s), <= {max_in_flight} commits in flight; {len(machines)} variant(s)"
    )
    return Model(
        area="offset_commit",
        bounds=bounds,
        initial=tuple(OffsetState(config) for config in machines),
        actions=actions,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )
