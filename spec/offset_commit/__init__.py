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

The state machine follows the queues of one consumer group (on one or more brokers, the group's retry queues
among them) and its consumer clients, each of which starts, pulls, consumes in any interleaving, persists, shuts
down or crashes, loses queues and gets them back; the brokers store messages, persist their offset tables and
restart (a crash keeps what ``flushDiskType`` flushed); admin requests report the offsets, change them and reset
them by time. Threads and timers become interleavings. Commits travelling to a broker (oneway persists, the
commits carried by pulls, an admin's) arrive in any order and at any time, also after the client crashed; a
pull's commit may even arrive after its response (a superset of the real orders). Consume requests of a dropped
or crashed ProcessQueue vanish with it (whether their listeners still ran only adds duplicates), except that after
a drop the thread holding the largest removeMessage result may still write it (OFF-12), at any later time, and a
pull in flight may still be answered (a stale pull, OFF-12). Where a newly added queue starts follows
``consumeFromWhere`` when no offset is stored (OFF-20, OFF-21).

The area is a package: ``clauses``, ``oracles`` (the client's decisions), ``broker`` (the broker's and the admin
answers), ``state`` (state and actions), ``steps`` and ``admin`` (guards and effects), ``machine`` (the transition
table), ``invariants`` (see ``docs/spec-authoring.md``); every public name is importable from here."""

from __future__ import annotations

from rocketspec.spec.offset_commit.broker import (
    NO_TIME,
    consume_stats_row,
    consume_time_span,
    crash_keeps,
    offset_after_restart,
    offset_by_time,
    reset_target,
    store_time,
)
from rocketspec.spec.offset_commit.clauses import (
    CLAUSES,
)
from rocketspec.spec.offset_commit.invariants import (
    INVARIANTS,
    STEP_INVARIANTS,
    admin_changes_apply,
    at_least_once,
    broker_overwrites,
    corrections_persist_and_forget,
    default_variants,
    extra_variants,
    first_unhandled,
    memory_only_rises,
    memory_within_process_queue,
    model,
    no_message_lost,
    pull_commits_memory,
    resumes_at_stored_offset,
    shutdown_persists,
    stopped_clients_hold_nothing,
)
from rocketspec.spec.offset_commit.machine import (
    TRANSITIONS,
    Bounds,
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
    pull_start,
    put_messages,
    read_offset,
    remote_persist_all,
    remove_messages,
    remove_offset,
    rollback,
    take_messages,
    update_offset,
)
from rocketspec.spec.offset_commit.state import (
    TOPIC,
    Action,
    AdminCommit,
    AllOffsetsAsked,
    Answer,
    BrokerConsumeStatsAsked,
    BrokerRestarted,
    Client,
    CommitArrives,
    Config,
    ConnectionsAsked,
    ConsumeFinished,
    ConsumerCrashed,
    ConsumeRequest,
    ConsumerShutdown,
    ConsumerStarted,
    ConsumerStatusAsked,
    ConsumeStatsAsked,
    GroupCreated,
    GroupDeleted,
    Heartbeat,
    Held,
    Lane,
    LateOffsetWrite,
    LockedRead,
    LockedStart,
    MessageStored,
    OffsetCorrected,
    OffsetQueried,
    OffsetRead,
    OffsetResetAsked,
    OffsetsCloned,
    OffsetsPersisted,
    OffsetState,
    OffsetUpdated,
    OrderlyConsumed,
    OtherGroupUpdated,
    PersistAll,
    PullFailed,
    PullFound,
    PullNoNewMessage,
    PullOffsetMoved,
    PullSent,
    QueueAssigned,
    QueueDropped,
    QueueState,
    ResetApplied,
    ResetReceived,
    StalePull,
    StalePullAnswered,
    TakeMessages,
    TimeSpanAsked,
    initial_state,
)
from rocketspec.spec.offset_commit.steps import allowed_starts, first_gap, pull_commit

__all__ = [
    "CLAUSES",
    "INVARIANTS",
    "NO_OFFSET",
    "NO_TIME",
    "STEP_INVARIANTS",
    "TOPIC",
    "TRANSITIONS",
    "Action",
    "AdminCommit",
    "AllOffsetsAsked",
    "Answer",
    "Bounds",
    "BrokerConsumeStatsAsked",
    "BrokerRestarted",
    "Client",
    "CommitArrives",
    "Config",
    "ConnectionsAsked",
    "ConsumeFinished",
    "ConsumeRequest",
    "ConsumeStatsAsked",
    "ConsumerCrashed",
    "ConsumerShutdown",
    "ConsumerStarted",
    "ConsumerStatusAsked",
    "GroupCreated",
    "GroupDeleted",
    "Heartbeat",
    "Held",
    "Lane",
    "LateOffsetWrite",
    "LockedRead",
    "LockedStart",
    "MessageStored",
    "OffsetCorrected",
    "OffsetQueried",
    "OffsetRead",
    "OffsetResetAsked",
    "OffsetState",
    "OffsetUpdated",
    "OffsetsCloned",
    "OffsetsPersisted",
    "OrderlyConsumed",
    "OtherGroupUpdated",
    "PersistAll",
    "ProcessQueueState",
    "PullFailed",
    "PullFound",
    "PullNoNewMessage",
    "PullOffsetMoved",
    "PullSent",
    "QueueAssigned",
    "QueueDropped",
    "QueueState",
    "ResetApplied",
    "ResetReceived",
    "StalePull",
    "StalePullAnswered",
    "StoreRead",
    "TakeMessages",
    "TimeSpanAsked",
    "admin_changes_apply",
    "allowed_starts",
    "at_least_once",
    "broker_commit",
    "broker_overwrites",
    "broker_query_offset",
    "broker_stores_pull_commit",
    "concurrent_consume_result",
    "consume_stats_row",
    "consume_time_span",
    "corrections_persist_and_forget",
    "crash_keeps",
    "default_variants",
    "enabled",
    "extra_variants",
    "first_gap",
    "first_unhandled",
    "initial_state",
    "local_persist",
    "local_persist_all",
    "make_message_to_consume_again",
    "memory_only_rises",
    "memory_within_process_queue",
    "model",
    "no_message_lost",
    "offset_after_restart",
    "offset_by_time",
    "orderly_commit",
    "pull_commit",
    "pull_commit_request",
    "pull_commits_memory",
    "pull_start",
    "put_messages",
    "read_offset",
    "remote_persist_all",
    "remove_messages",
    "remove_offset",
    "reset_target",
    "resumes_at_stored_offset",
    "rollback",
    "shutdown_persists",
    "step",
    "stopped_clients_hold_nothing",
    "store_time",
    "take_messages",
    "update_offset",
]
