"""Consume retry: a failed message goes back to ``%RETRY%<group>`` with growing delays, then ``%DLQ%<group>``.

Covers what happens to a message a push consumer failed to consume: the listener result and ``ackIndex``
(``ConsumeMessageConcurrentlyService.processConsumeResult``); the CONSUMER_SEND_MSG_BACK request and the
broker's decision (``SendMessageProcessor.asyncConsumerSendMsgBack``: group checks, ``retryQueueNums <= 0``
drops the message, the maximum from the group or the request, the dead-letter threshold, delay level
``3 + reconsumeTimes``, the new copy with ``reconsumeTimes + 1``); the client's fallback when that request
fails (``DefaultMQPushConsumerImpl.sendMessageBack``: a plain send to ``%RETRY%<group>``, which the broker
handles in ``SendMessageProcessor.handleRetryAndDLQ``); the local re-consume after 5 s when both fail; delayed
delivery (``CommitLog`` put with a delay level; ``ScheduleMessageService``: the level table, clamping, the due
time, the move back to ``REAL_TOPIC``); how a consumer shows a retried message (``resetRetryAndNamespace``);
the consume timeout (``ProcessQueue.cleanExpiredMsg``); and orderly consumption's suspend and dead-letter
path (``ConsumeMessageOrderlyService``).

The state machine (a transition table, ``TRANSITIONS``) follows one consumer of one group and the broker's stores:
the configuration drawn at the start (the broker's messageDelayLevel, maxReconsumeTimes, orderly or concurrent,
consumeMessageBatchMaxSize, ...), messages published, pulls into the process queue, batches handed to the listener
and its answers, send backs answered or failed, the consumer's own sends stored or failed, local re-consumes, orderly
suspensions and dead letters, the schedule service moving due copies, clean broker restarts, refused queue locks, the
offsets committed.

Version notes (4.9.0-4.9.8): a request that carries no maxReconsumeTimes from a client of version >= V3_4_9
made the broker fail (SYSTEM_ERROR) in 4.9.0 for CONSUMER_SEND_MSG_BACK and in 4.9.0-4.9.2 for a plain send to
a retry topic; the dead-letter topic was created write-only in 4.9.0-4.9.1 and read-write from 4.9.2; the
orderly consumer's dead-letter message lost ORIGIN_MESSAGE_ID before 4.9.4. Everything else here is the same
in 4.9.x.

The area is a package: ``clauses``, ``oracles``, ``batches`` (the oracles of pulls, batches, offsets, shared
properties and the schedule's restart), ``state`` (the state and actions), ``effects`` (what each action does),
``machine`` (the transition table: guards, effects, candidates), ``invariants`` (see ``docs/spec-authoring.md``);
every public name is importable from here."""

from __future__ import annotations

from rocketspec.spec.consume_retry.batches import (
    SCHEDULE_SLACK_MS,
    concurrent_commit_offset,
    consume_requests,
    latest_move_ms,
    orderly_batch_size,
    properties_after_own_send,
    pull_sizes,
    resumption_deadline,
)
from rocketspec.spec.consume_retry.clauses import (
    CLAUSES,
)
from rocketspec.spec.consume_retry.invariants import (
    INVARIANTS,
    STEP_INVARIANTS,
    model,
)
from rocketspec.spec.consume_retry.machine import (
    TRANSITIONS,
    Bounds,
    enabled,
    step,
)
from rocketspec.spec.consume_retry.oracles import (
    ACK_INDEX_DEFAULT,
    EXPIRED_SEND_BACK_DELAY_LEVEL,
    INTEGER_MAX_VALUE,
    PERM_RW,
    RETRY_BASE_DELAY_LEVEL,
    SUSPEND_MAX_MS,
    SUSPEND_MIN_MS,
    ClientRetryMessage,
    ConsumeOutcome,
    OrderlySuspend,
    SendBackResult,
    Target,
    after_listener,
    client_retry_message,
    consume_expired,
    consumer_send_back,
    delay_millis,
    effective_delay_level,
    effective_max_reconsume_times,
    orderly_suspend,
    parse_delay_levels,
    retry_topic_send,
    schedule_due,
    schedule_queue_id,
    send_back_properties,
    send_back_topic_config,
    suspend_millis,
    visible_topic,
)
from rocketspec.spec.consume_retry.state import (
    DLQ,
    GROUP,
    RETRY,
    SCHEDULE,
    TOPIC,
    TRACKED,
    Action,
    Batch,
    BrokerAnswers,
    BrokerRestarts,
    ChainHistory,
    Copy,
    DeadLetterOutcome,
    DeadLetterSent,
    Deliver,
    Delivery,
    FallbackFails,
    FallbackStored,
    Held,
    ListenerReturns,
    LocalReconsume,
    LocksRefused,
    Path,
    Publish,
    Pulled,
    RetryConfig,
    RetryState,
    ScheduleDelivers,
    SendBackFails,
    Stage,
    Stored,
    TimePasses,
    Waiting,
    offset_id,
    tracked,
    uniq_id,
)

__all__ = [
    "ACK_INDEX_DEFAULT",
    "CLAUSES",
    "DLQ",
    "EXPIRED_SEND_BACK_DELAY_LEVEL",
    "GROUP",
    "INTEGER_MAX_VALUE",
    "INVARIANTS",
    "PERM_RW",
    "RETRY",
    "RETRY_BASE_DELAY_LEVEL",
    "SCHEDULE",
    "SCHEDULE_SLACK_MS",
    "STEP_INVARIANTS",
    "SUSPEND_MAX_MS",
    "SUSPEND_MIN_MS",
    "TOPIC",
    "TRACKED",
    "TRANSITIONS",
    "Action",
    "Batch",
    "Bounds",
    "BrokerAnswers",
    "BrokerRestarts",
    "ChainHistory",
    "ClientRetryMessage",
    "ConsumeOutcome",
    "Copy",
    "DeadLetterOutcome",
    "DeadLetterSent",
    "Deliver",
    "Delivery",
    "FallbackFails",
    "FallbackStored",
    "Held",
    "ListenerReturns",
    "LocalReconsume",
    "LocksRefused",
    "OrderlySuspend",
    "Path",
    "Publish",
    "Pulled",
    "RetryConfig",
    "RetryState",
    "ScheduleDelivers",
    "SendBackFails",
    "SendBackResult",
    "Stage",
    "Stored",
    "Target",
    "TimePasses",
    "Waiting",
    "after_listener",
    "client_retry_message",
    "concurrent_commit_offset",
    "consume_expired",
    "consume_requests",
    "consumer_send_back",
    "delay_millis",
    "effective_delay_level",
    "effective_max_reconsume_times",
    "enabled",
    "latest_move_ms",
    "model",
    "offset_id",
    "orderly_batch_size",
    "orderly_suspend",
    "parse_delay_levels",
    "properties_after_own_send",
    "pull_sizes",
    "resumption_deadline",
    "retry_topic_send",
    "schedule_due",
    "schedule_queue_id",
    "send_back_properties",
    "send_back_topic_config",
    "step",
    "suspend_millis",
    "tracked",
    "uniq_id",
    "visible_topic",
]
