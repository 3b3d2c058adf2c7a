"""Consume retry: the state machine: frozen state, actions, ``enabled`` and ``step``."""

from __future__ import annotations

import enum

import attrs

from rocketspec.spec.consume_retry.clauses import CLAUSES
from rocketspec.spec.consume_retry.oracles import (
    ACK_INDEX_DEFAULT,
    SendBackResult,
    Target,
    after_listener,
    client_retry_message,
    consumer_send_back,
    delay_millis,
    retry_topic_send,
    schedule_due,
)
from rocketspec.spec.explorer import require_enabled
from rocketspec.spec.protocol import (
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
    VERSION_V3_4_9,
    ConsumeStatus,
    MessageModel,
    ResponseCode,
)

# ------------------------------------------------------------------------------------------------------------
# State machine: one message of one group through its retry chain
# ------------------------------------------------------------------------------------------------------------

GROUP = "G"
TOPIC = "T"


class Phase(enum.Enum):
    """Where the message is."""

    READY = "READY"  # stored in a topic the group consumes (the original or %RETRY%), not yet pulled
    CONSUMING = "CONSUMING"  # handed to the listener
    SENDING_BACK = "SENDING_BACK"  # CONSUMER_SEND_MSG_BACK in flight
    FALLBACK = "FALLBACK"  # the consumer's own send to %RETRY%<group> in flight
    LOCAL_WAIT = "LOCAL_WAIT"  # both failed: consumed again locally when due
    SCHEDULED = "SCHEDULED"  # a copy in SCHEDULE_TOPIC_XXXX until due
    CONSUMED = "CONSUMED"
    DEAD = "DEAD"  # in %DLQ%<group>
    DISCARDED = "DISCARDED"  # dropped: broadcasting failure, or retryQueueNums <= 0

    @property
    def final(self) -> bool:
        return self in (Phase.CONSUMED, Phase.DEAD, Phase.DISCARDED)


class Path(enum.Enum):
    """Who made a copy: the broker (CONSUMER_SEND_MSG_BACK) or the client (fallback send)."""

    BROKER = "BROKER"
    CLIENT = "CLIENT"


@attrs.frozen
class Delivery:
    """A hand-over to the listener: the reconsumeTimes it showed, when, and if it was a local re-consume."""

    reconsume_times: int
    at_ms: int
    local: bool


@attrs.frozen
class Copy:
    """A new stored message of the chain: dead letter or retry, its reconsumeTimes, when and how it was made.

    ``context_level`` is the delayLevel the listener asked for; ``deliveries_before`` the deliveries so far;
    ``retried``: stored by a retried attempt of the client's send (RETRY-16), made from the consumer's count
    ``made_from``.
    """

    dead: bool
    reconsume_times: int
    stored_at_ms: int
    path: Path
    context_level: int
    deliveries_before: int
    retried: bool = False
    made_from: int = 0


@attrs.frozen
class RetryState:
    """One message of group ``GROUP`` (topic ``TOPIC``) and its consumer.

    ``consumer_max``: the consumer's max (sent in requests); ``client_version``: its request version;
    ``group_max``/``retry_queue_nums``: the group's broker config. ``stored_times``: reconsumeTimes of the
    stored message the consumer holds or will pull (``start_times`` at first); ``local_times``: what the
    consumer shows. ``due_ms`` belongs to SCHEDULED and LOCAL_WAIT, ``scheduled_level`` and ``stored_at_ms``
    to SCHEDULED; ``faults_left`` bounds the RPC failures still to be injected.
    """

    message_model: MessageModel
    client_version: int
    consumer_max: int
    group_max: int
    retry_queue_nums: int
    start_times: int
    phase: Phase = Phase.READY
    now_ms: int = 0
    stored_times: int = 0
    local_times: int = 0
    context_level: int = 0
    stored_at_ms: int = 0
    scheduled_level: int = 0
    due_ms: int = 0
    faults_left: int = 0
    copies: tuple[Copy, ...] = ()
    deliveries: tuple[Delivery, ...] = ()


@attrs.frozen
class Pull:
    """The consumer pulls the stored message and hands it to the listener."""


@attrs.frozen
class ListenerReturns:
    """The listener returns ``status`` (None: it threw), having set ``ack_index`` and the ``delay_level``."""

    status: ConsumeStatus | None
    ack_index: int = ACK_INDEX_DEFAULT
    delay_level: int = 0


@attrs.frozen
class BrokerAnswers:
    """The broker handles CONSUMER_SEND_MSG_BACK and answers."""


@attrs.frozen
class SendBackFails:
    """CONSUMER_SEND_MSG_BACK times out or fails on the wire (an injected fault)."""


@attrs.frozen
class FallbackStored:
    """The consumer's own send to %RETRY%<group> reaches the broker, which stores it.

    ``retried``: its first attempt failed (an injected fault) and the producer's retry stored it (RETRY-16).
    """

    retried: bool = False


@attrs.frozen
class FallbackFails:
    """The consumer's own send fails too (an injected fault)."""


@attrs.frozen
class TimePasses:
    """The clock moves to the next due time."""


@attrs.frozen
class ScheduleDelivers:
    """The schedule service moves the due copy to its real topic."""


@attrs.frozen
class LocalReconsume:
    """The consumer's 5 s timer fires: the message is consumed again."""


Action = (
    Pull | ListenerReturns | BrokerAnswers | SendBackFails | FallbackStored | FallbackFails | TimePasses
    | ScheduleDelivers | LocalReconsume
)


def _broker_max(state: RetryState) -> int:
    return state.consumer_max if state.client_version >= VERSION_V3_4_9 else state.group_max


@CLAUSES.oracle("RETRY-3", "RETRY-17", "RETRY-27")
def enabled(state: RetryState, action: Action) -> bool:
    """Whether ``action`` can happen in ``state``.

    Nothing happens once the message is consumed, dead-lettered (RETRY-27) or dropped. A scheduled copy moves
    only when due (RETRY-3); a local re-consume only after its 5 s (RETRY-17); injected faults only while the
    budget lasts.
    """
    phase = state.phase
    match action:
        case Pull():
            return phase is Phase.READY
        case ListenerReturns():
            return phase is Phase.CONSUMING
        case BrokerAnswers():
            return phase is Phase.SENDING_BACK
        case SendBackFails():
            return phase is Phase.SENDING_BACK and state.faults_left > 0
        case FallbackStored(retried=retried):
            return phase is Phase.FALLBACK and (not retried or state.faults_left > 0)
        case FallbackFails():
            return phase is Phase.FALLBACK and state.faults_left > 0
        case TimePasses():
            return phase in (Phase.SCHEDULED, Phase.LOCAL_WAIT) and state.now_ms < state.due_ms
        case ScheduleDelivers():
            return phase is Phase.SCHEDULED and schedule_due(
                state.stored_at_ms, state.scheduled_level, state.now_ms
            )
        case LocalReconsume():
            return phase is Phase.LOCAL_WAIT and state.now_ms >= state.due_ms
    return False


def _store_copy(state: RetryState, result: SendBackResult, path: Path, retried: bool = False) -> RetryState:
    dead = result.target is Target.DLQ
    copy = Copy(dead, result.reconsume_times, state.now_ms, path, state.context_level, len(state.deliveries),
                retried, state.local_times)
    base = attrs.evolve(
        state, stored_times=result.reconsume_times, local_times=result.reconsume_times,
        stored_at_ms=state.now_ms, copies=(*state.copies, copy),
    )
    if result.delay_level > 0:
        return attrs.evolve(
            base, phase=Phase.SCHEDULED, scheduled_level=result.delay_level,
            due_ms=state.now_ms + delay_millis(result.delay_level),
        )
    return attrs.evolve(
        base, phase=Phase.DEAD if dead else Phase.READY, scheduled_level=0, due_ms=state.now_ms
    )


@CLAUSES.oracle("RETRY-5", "RETRY-13", "RETRY-14", "RETRY-15", "RETRY-16", "RETRY-17", "RETRY-18")
def step(state: RetryState, action: Action) -> RetryState:
    """The state after ``action`` (which must be enabled).

    The listener result is handled by :func:`after_listener` (RETRY-13, RETRY-14); a failure in clustering
    mode is sent back (RETRY-15) and answered by :func:`consumer_send_back`, which reads the stored
    reconsumeTimes (RETRY-18) and may drop the message (RETRY-5); a failed send back makes the consumer send
    :func:`client_retry_message` itself (a retried attempt without its count), handled by
    :func:`retry_topic_send` (RETRY-16); when that fails too
    the message is re-consumed locally with reconsumeTimes + 1 after 5000 ms (RETRY-17).
    """
    require_enabled(enabled, state, action, Action)
    match action:
        case Pull():
            delivery = Delivery(state.stored_times, state.now_ms, local=False)
            return attrs.evolve(
                state, phase=Phase.CONSUMING, local_times=state.stored_times,
                deliveries=(*state.deliveries, delivery),
            )
        case ListenerReturns(status=status, ack_index=ack_index, delay_level=level):
            outcome = after_listener(status, 1, state.message_model, ack_index)
            if outcome.succeeded:
                return attrs.evolve(state, phase=Phase.CONSUMED)
            if outcome.dropped:
                return attrs.evolve(state, phase=Phase.DISCARDED)
            return attrs.evolve(state, phase=Phase.SENDING_BACK, context_level=level)
        case BrokerAnswers():
            result = consumer_send_back(
                state.stored_times, state.context_level, state.consumer_max, state.client_version, GROUP,
                retry_queue_nums=state.retry_queue_nums, group_retry_max_times=state.group_max,
            )
            if result.target is Target.DROPPED:
                return attrs.evolve(state, phase=Phase.DISCARDED)
            if result.code != ResponseCode.SUCCESS:
                return attrs.evolve(state, phase=Phase.FALLBACK)
            return _store_copy(state, result, Path.BROKER)
        case SendBackFails():
            return attrs.evolve(state, phase=Phase.FALLBACK, faults_left=state.faults_left - 1)
        case FallbackStored(retried=retried):
            message = client_retry_message(TOPIC, state.local_times, state.consumer_max, GROUP, retried=retried)
            result = retry_topic_send(
                message.header_reconsume_times, message.delay_level, message.header_max_reconsume_times,
                state.client_version, GROUP, group_retry_max_times=state.group_max,
            )
            if retried:
                state = attrs.evolve(state, faults_left=state.faults_left - 1)
            return _store_copy(state, result, Path.CLIENT, retried)
        case FallbackFails():
            return attrs.evolve(
                state, phase=Phase.LOCAL_WAIT, local_times=state.local_times + 1,
                due_ms=state.now_ms + SEND_BACK_LOCAL_RETRY_DELAY_MS, faults_left=state.faults_left - 1,
            )
        case TimePasses():
            return attrs.evolve(state, now_ms=state.due_ms)
        case ScheduleDelivers():
            dead = bool(state.copies) and state.copies[-1].dead
            return attrs.evolve(state, phase=Phase.DEAD if dead else Phase.READY)
        case LocalReconsume():
            delivery = Delivery(state.local_times, state.now_ms, local=True)
            return attrs.evolve(state, phase=Phase.CONSUMING, deliveries=(*state.deliveries, delivery))
    raise ValueError(f"unknown action {action!r}")
