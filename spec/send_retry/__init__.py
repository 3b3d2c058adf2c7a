"""Producer send retry: attempts, the timeout budget, which failures retry, and queue selection.

One ``send`` of a producer (``DefaultMQProducerImpl.sendDefaultImpl``) makes up to a mode-dependent number of
attempts within one ``sendMsgTimeout`` budget. Each attempt first selects a queue
(``MQFaultStrategy.selectOneMessageQueue``): plain round robin over the topic's writable queues, avoiding the
broker of the previous attempt (``TopicPublishInfo.selectOneMessageQueue``), or, with
``sendLatencyFaultEnable``, the first queue whose broker is not in its "not available" window
(``LatencyFaultToleranceImpl``), falling back to the least bad broker. ASYNC retries happen in the response
callback (``MQClientAPIImpl.sendMessageAsync`` / ``onExceptionImpl``).

The round-robin counter is ``ThreadLocalIndex`` (one per topic and thread, starting at a random value); the
fault table belongs to the producer. Both survive from one send to the next; the previous broker does not.

Version profile notes. The module describes 4.9.0-4.9.8, and the 4.3.1 behaviour that seeds 000 and 003 quote
where it differs (``VersionProfile.of("4.3.1")``): the counter's arithmetic (SEND-11), how often the counter
advances while avoiding the previous broker (SEND-13), the previous-broker filter of the fault-tolerant loop
(SEND-17), which queue data give a fallback broker's queue count and whether the fallback rewrites the topic's
queue list (SEND-19), and the ASYNC retry paths (SEND-7). Java ``int`` arithmetic (wrap-around,
``Math.abs(Integer.MIN_VALUE) < 0``, truncating ``%``) is followed exactly.

A producer with a client namespace wraps its group and each message's topic (``namespace%topic``) before its checks
and sends, and unwraps the SendResult's topic (SEND-25, SEND-26: ``namespace``).

The area is a package: ``clauses``, ``oracles``, ``namespace``, ``machine``, ``invariants`` (see
``docs/spec-authoring.md``); every public name is importable from here."""

from __future__ import annotations

from rocketspec.spec.send_retry.clauses import (
    CLAUSES,
)
from rocketspec.spec.send_retry.invariants import (
    INVARIANTS,
    STEP_INVARIANTS,
    model,
)
from rocketspec.spec.send_retry.machine import (
    PENDING,
    TRANSITIONS,
    Action,
    AttemptAnswered,
    AttemptFailed,
    Bounds,
    BrokerErrorResponse,
    Config,
    MessageRefused,
    MessageShape,
    NewSend,
    NoRoute,
    Outcome,
    OutcomeKind,
    SelectQueue,
    SendState,
    Target,
    TimePasses,
    enabled,
    refusal,
    result_topic,
    selections,
    step,
    wire_topic,
)
from rocketspec.spec.send_retry.namespace import (
    without_namespace,
    wrap_namespace,
)
from rocketspec.spec.send_retry.oracles import (
    ATTEMPT_FAILURES,
    BATCH_FAILED,
    SELECTOR_NULL,
    SELECTOR_THREW,
    TOPIC_NOT_EQUAL,
    BatchEntry,
    Failure,
    FaultItem,
    FaultTable,
    Pick,
    QueueData,
    Selection,
    attempt_limit,
    attempt_within_budget,
    batch_body_len,
    batch_refusal,
    broker_available,
    direct_send_refusal,
    failure_retried,
    fault_table,
    hash_selection,
    message_refusal,
    next_index,
    not_available_duration,
    pick_one_at_least,
    publish_queues,
    queue_count_for_fallback,
    record_fault,
    response_code_retried,
    select_queue_latency,
    select_queue_plain,
    send_status_of,
    status_retried,
)

__all__ = [
    "ATTEMPT_FAILURES",
    "BATCH_FAILED",
    "CLAUSES",
    "INVARIANTS",
    "PENDING",
    "SELECTOR_NULL",
    "SELECTOR_THREW",
    "STEP_INVARIANTS",
    "TOPIC_NOT_EQUAL",
    "TRANSITIONS",
    "Action",
    "AttemptAnswered",
    "AttemptFailed",
    "BatchEntry",
    "Bounds",
    "BrokerErrorResponse",
    "Config",
    "Failure",
    "FaultItem",
    "FaultTable",
    "MessageRefused",
    "MessageShape",
    "NewSend",
    "NoRoute",
    "Outcome",
    "OutcomeKind",
    "Pick",
    "QueueData",
    "SelectQueue",
    "Selection",
    "SendState",
    "Target",
    "TimePasses",
    "attempt_limit",
    "attempt_within_budget",
    "batch_body_len",
    "batch_refusal",
    "broker_available",
    "direct_send_refusal",
    "enabled",
    "failure_retried",
    "fault_table",
    "hash_selection",
    "message_refusal",
    "model",
    "next_index",
    "not_available_duration",
    "pick_one_at_least",
    "publish_queues",
    "queue_count_for_fallback",
    "record_fault",
    "refusal",
    "response_code_retried",
    "result_topic",
    "select_queue_latency",
    "select_queue_plain",
    "selections",
    "send_status_of",
    "status_retried",
    "step",
    "wire_topic",
    "without_namespace",
    "wrap_namespace",
]
