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

The area is a package: ``clauses``, ``oracles``, ``machine``, ``invariants`` (see ``docs/spec-authoring.md``);
every public name is importable from here."""

from __future__ import annotations

from rocketspec.spec.offset_commit.clauses import (
    CLAUSES,
)
from rocketspec.spec.offset_commit.invariants import (
    INVARIANTS,
    STEP_INVARIANTS,
    at_least_once,
    broker_overwrites,
    default_variants,
    first_unhandled,
    memory_only_rises,
    memory_within_process_queue,
    model,
    no_message_lost,
    pull_commits_memory,
    resumes_at_stored_offset,
)
from rocketspec.spec.offset_commit.machine import (
    Action,
    CommitArrives,
    Config,
    ConsumeFinished,
    ConsumerCrashed,
    ConsumeRequest,
    Held,
    LateOffsetWrite,
    OffsetState,
    OffsetUpdated,
    OrderlyConsumed,
    PersistAll,
    PullFound,
    PullNoNewMessage,
    QueueAssigned,
    QueueDropped,
    TakeMessages,
    enabled,
    step,
)
from rocketspec.spec.offset_commit.oracles import (
    NO_OFFSET,
    ProcessQueueState,
    StoreRead,
    broker_commit,
    broker_query_offset,
    broker_stores_pull_commit,
    concurrent_consume_result,
    local_persist,
    local_persist_all,
    make_message_to_consume_again,
    orderly_commit,
    pull_commit_request,
    put_messages,
    read_offset,
    remote_persist_all,
    remove_messages,
    remove_offset,
    rollback,
    take_messages,
    update_offset,
)

__all__ = [
    "CLAUSES",
    "INVARIANTS",
    "NO_OFFSET",
    "STEP_INVARIANTS",
    "Action",
    "CommitArrives",
    "Config",
    "ConsumeFinished",
    "ConsumeRequest",
    "ConsumerCrashed",
    "Held",
    "LateOffsetWrite",
    "OffsetState",
    "OffsetUpdated",
    "OrderlyConsumed",
    "PersistAll",
    "ProcessQueueState",
    "PullFound",
    "PullNoNewMessage",
    "QueueAssigned",
    "QueueDropped",
    "StoreRead",
    "TakeMessages",
    "at_least_once",
    "broker_commit",
    "broker_overwrites",
    "broker_query_offset",
    "broker_stores_pull_commit",
    "concurrent_consume_result",
    "default_variants",
    "enabled",
    "first_unhandled",
    "local_persist",
    "local_persist_all",
    "make_message_to_consume_again",
    "memory_only_rises",
    "memory_within_process_queue",
    "model",
    "no_message_lost",
    "orderly_commit",
    "pull_commit_request",
    "pull_commits_memory",
    "put_messages",
    "read_offset",
    "remote_persist_all",
    "remove_messages",
    "remove_offset",
    "resumes_at_stored_offset",
    "rollback",
    "step",
    "take_messages",
    "update_offset",
]
