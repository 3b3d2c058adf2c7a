"""Send retry: the state machine: frozen state, actions, ``enabled`` and ``step``."""

from __future__ import annotations

import enum

import attrs

from rocketspec.spec.protocol import (
    DEFAULT_RETRY_ANOTHER_BROKER_WHEN_NOT_STORE_OK,
    DEFAULT_RETRY_RESPONSE_CODES,
    DEFAULT_RETRY_TIMES_WHEN_SEND_ASYNC_FAILED,
    DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED,
    DEFAULT_SEND_MSG_TIMEOUT_MS,
    MAX_MESSAGE_SIZE,
    CommunicationMode,
    ResponseCode,
    SendStatus,
)
from rocketspec.spec.queues import MessageQueue
from rocketspec.spec.send_retry.clauses import CLAUSES
from rocketspec.spec.send_retry.namespace import unwrapped, wrap
from rocketspec.spec.send_retry.oracles import (
    ATTEMPT_FAILURES,
    BatchEntry,
    Failure,
    FaultTable,
    QueueData,
    Selection,
    attempt_limit,
    attempt_within_budget,
    batch_body_len,
    batch_refusal,
    direct_send_refusal,
    failure_retried,
    message_refusal,
    record_fault,
    response_code_retried,
    select_queue_latency,
    select_queue_plain,
    send_status_of,
    status_retried,
)
from rocketspec.spec.transitions import Transition, TransitionTable
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

# ---------------------------------------------------------------------------------------------------------
# State machine: the sends of one producer thread to one topic.


class OutcomeKind(enum.Enum):
    PENDING = "PENDING"
    SENT = "SENT"
    FAILED = "FAILED"


@attrs.frozen
class Outcome:
    """How the current send stands: pending, sent (with the SendStatus; None for ONEWAY), or failed.

    A failure names its kind, the broker code for ``Failure.BROKER``, and whether attempts ran out
    (``exhausted``, SEND-10) rather than a failure ending the send at once.
    """

    kind: OutcomeKind
    status: SendStatus | None = None
    failure: Failure | None = None
    code: int | None = None
    exhausted: bool = False


PENDING = Outcome(OutcomeKind.PENDING)


@attrs.frozen
class MessageShape:
    """What the producer's checks read of a message (SEND-24): its topic and its body's length (None: no body); for a
    batch (``send(Collection)``, SEND-29) its messages, the topic and body then being the batch's."""

    topic: str | None
    body_len: int | None
    batch: tuple[BatchEntry, ...] | None = None


@attrs.frozen
class Target:
    """Where a send without the retry loop goes (SEND-27): the queue the user names (``send(msg, mq)``) or the one
    its selector returns (``by_selector``: ``sendSelectImpl``; None: it returned null; ``threw``: it threw), named
    outside the namespace as the user sees it."""

    queue: MessageQueue | None
    by_selector: bool = False
    threw: bool = False


@attrs.frozen
class Config:
    """The producer settings and the topic route a model runs with."""

    mode: CommunicationMode
    fault_enabled: bool
    retry_another: bool = DEFAULT_RETRY_ANOTHER_BROKER_WHEN_NOT_STORE_OK
    timeout_ms: int = DEFAULT_SEND_MSG_TIMEOUT_MS
    retry_times: int = DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED
    async_retry_times: int = DEFAULT_RETRY_TIMES_WHEN_SEND_ASYNC_FAILED
    retry_codes: frozenset[int] = DEFAULT_RETRY_RESPONSE_CODES
    queue_datas: tuple[QueueData, ...] = ()
    profile: VersionProfile = DEFAULT_PROFILE
    max_message_size: int = MAX_MESSAGE_SIZE
    namespace: str | None = None  # ClientConfig.namespace (SEND-26); the queues then carry the wrapped topic

    @property
    def limit(self) -> int:
        return attempt_limit(self.mode, self.retry_times, self.async_retry_times)


@attrs.frozen
class SendState:
    """A producer thread sending messages one after another.

    ``attempts`` counts the attempts of the current send (``times``), ``requests`` those that put a request
    on the wire; ``last`` is the queue of the previous attempt (its broker is the last broker, SEND-20);
    ``first_queue_id`` the queue id of the first request (ASYNC retries reuse it, SEND-8); ``held`` the
    non-OK SendResult a SYNC send keeps (SEND-6).
    """

    config: Config
    queues: tuple[MessageQueue, ...]
    faults: FaultTable
    counter: int
    worst_counter: int
    now_ms: int = 0
    sends: int = 1
    started_ms: int = 0
    attempts: int = 0
    requests: int = 0
    last: MessageQueue | None = None
    first_queue_id: int | None = None
    in_flight: MessageQueue | None = None
    held: SendStatus | None = None
    outcome: Outcome = PENDING
    waited: bool = False
    message: MessageShape | None = None  # None: a message the producer's checks pass (SEND-24)
    target: Target | None = None  # a send to a chosen queue (SEND-27); None: the retry loop of sendDefaultImpl

    @property
    def done(self) -> bool:
        return self.outcome.kind is not OutcomeKind.PENDING

    @property
    def elapsed_ms(self) -> int:
        return self.now_ms - self.started_ms

    @property
    def limit(self) -> int:
        """The attempts the current send may make: SEND-1, or for a send to a chosen queue one, the ASYNC callback
        still retrying (SEND-27)."""
        cfg = self.config
        if self.target is not None:
            return attempt_limit(cfg.mode, 0, cfg.async_retry_times)
        return cfg.limit

    @property
    def kernel_only(self) -> bool:
        """A SYNC or ONEWAY send to a chosen queue: sendKernelImpl alone, no retry, no fault item (SEND-27)."""
        return self.target is not None and self.config.mode is not CommunicationMode.ASYNC


@attrs.frozen
class NewSend:
    """The thread starts sending the next message (``message``: its shape, None for one the checks pass), to the
    queue ``target`` names (SEND-27) or, None, through the retry loop."""

    message: MessageShape | None = None
    target: Target | None = None


@attrs.frozen
class SelectQueue:
    """A queue is selected for the next attempt (and the attempt starts if the budget allows)."""

    queue: MessageQueue


@attrs.frozen
class AttemptAnswered:
    """The attempt in flight got a SendStatus after ``latency_ms`` (ONEWAY: written, status None)."""

    latency_ms: int
    status: SendStatus | None


@attrs.frozen
class BrokerErrorResponse:
    """The attempt in flight got an error response ``code`` after ``latency_ms``."""

    latency_ms: int
    code: int


@attrs.frozen
class AttemptFailed:
    """The attempt in flight failed with an exception (no response) after ``latency_ms``."""

    latency_ms: int
    kind: Failure


@attrs.frozen
class TimePasses:
    """Time passes between two sends."""

    ms: int


@attrs.frozen
class NoRoute:
    """The send finds the topic's queue list empty and fails before any attempt."""


@attrs.frozen
class MessageRefused:
    """The producer's checks refuse the message before any attempt."""


Action = (
    NewSend | SelectQueue | AttemptAnswered | BrokerErrorResponse | AttemptFailed | TimePasses | NoRoute
    | MessageRefused
)


def selections(state: SendState) -> frozenset[Selection]:
    """Every selection the producer may make for the next attempt of ``state``'s send (SEND-13, SEND-17)."""
    cfg = state.config
    target = _target_queue(state)
    if target is not None:
        # The chosen queue, the counters untouched; an ASYNC retry goes to its broker again (SEND-27).
        return frozenset({Selection(target, state.counter, state.worst_counter, state.queues, state.faults)})
    if not state.queues:
        return frozenset()  # no queue to select: the send has no route (SEND-23)
    last = state.last.broker_name if state.last is not None else None
    if cfg.fault_enabled:
        return select_queue_latency(
            state.queues, cfg.queue_datas, state.faults, state.now_ms, state.counter, state.worst_counter,
            last, cfg.profile,
        )
    queue, counter = select_queue_plain(state.queues, state.counter, last, cfg.profile)
    return frozenset({Selection(queue, counter, state.worst_counter, state.queues, state.faults)})


def _selection_for(state: SendState, queue: MessageQueue) -> Selection | None:
    for selection in selections(state):
        if selection.queue == queue:
            return selection
    return None


@CLAUSES.oracle("SEND-26")
def wire_topic(config: Config, topic: str | None) -> str | None:
    """The topic a producer of ``config`` checks, routes and sends a message of ``topic`` with (SEND-26): the topic
    wrapped in the namespace (SEND-25); the topic itself without one.

    pre: topic is None or len(topic) <= 8
    pre: config.namespace is None or len(config.namespace) <= 3
    post: config.namespace or __return__ == topic
    post: __return__ is None or topic is None or __return__.endswith(topic) or topic.startswith("%")
    """
    return wrap(config.namespace, topic)


@CLAUSES.oracle("SEND-26")
def result_topic(state: SendState) -> str | None:
    """The topic the SendResult of ``state``'s send names (SEND-26): its attempts' topic unwrapped again (SEND-25);
    None before an attempt.

    pre: state.last is None or len(state.last.topic) <= 8
    post: (__return__ is None) == (state.last is None)
    post: state.last is None or state.config.namespace or __return__ == state.last.topic
    """
    if state.last is None:
        return None
    return unwrapped(state.last.topic, state.config.namespace)


def _target_queue(state: SendState) -> MessageQueue | None:
    """The queue a send to a chosen queue goes to, its topic wrapped in the namespace (SEND-26, SEND-27)."""
    target = state.target
    if target is None or target.queue is None:
        return None
    queue = target.queue
    return MessageQueue(wire_topic(state.config, queue.topic) or "", queue.broker_name, queue.queue_id)


def refusal(state: SendState) -> tuple[int, str] | None:
    """Why the producer refuses the current send's message before any attempt: a batch it cannot build (SEND-29), the
    checks (SEND-24; they see the topic wrapped in the namespace, SEND-26), then for a send to a chosen queue a queue
    of another topic or a selector that failed (SEND-27, once the route is found). None when it does not refuse it."""
    shape, cfg = state.message, state.config
    topic = None
    if shape is not None:
        if shape.batch is not None:
            reason = batch_refusal(shape.batch, cfg.max_message_size)
            if reason is not None:
                return reason
            topic = shape.batch[0].topic
            reason = message_refusal(wire_topic(cfg, topic), batch_body_len(shape.batch), cfg.max_message_size)
        else:
            topic = shape.topic
            reason = message_refusal(wire_topic(cfg, topic), shape.body_len, cfg.max_message_size)
        if reason is not None:
            return reason
    target = state.target
    if target is None or (target.by_selector and not state.queues):
        return None
    queue = _target_queue(state)
    queue_topic = queue.topic if queue is not None else None
    message_topic = wire_topic(cfg, topic) if shape is not None else queue_topic
    return direct_send_refusal(message_topic, queue_topic, target.by_selector, target.threw, cfg.namespace)


def _awaiting_selection(state: SendState) -> bool:
    return not state.done and state.in_flight is None and (state.message is None or refusal(state) is None)


def _new_send_enabled(state: SendState, action: NewSend) -> bool:
    return state.done


def _time_passes_enabled(state: SendState, action: TimePasses) -> bool:
    return state.done and not state.waited and action.ms > 0


def _select_enabled(state: SendState, action: SelectQueue) -> bool:
    return (bool(state.queues) or state.target is not None) and _awaiting_selection(state) \
        and _selection_for(state, action.queue) is not None


def _refused_enabled(state: SendState, action: MessageRefused) -> bool:
    return not state.done and state.attempts == 0 and refusal(state) is not None


def _no_route_enabled(state: SendState, action: NoRoute) -> bool:
    # send(msg, mq) looks no route up (SEND-27).
    return not state.queues and _awaiting_selection(state) and state.attempts == 0 \
        and (state.target is None or state.target.by_selector)


def _in_flight(state: SendState) -> bool:
    return not state.done and state.in_flight is not None


def _answered_enabled(state: SendState, action: AttemptAnswered) -> bool:
    return _in_flight(state) and (action.status is None) == (state.config.mode is CommunicationMode.ONEWAY)


def _broker_error_enabled(state: SendState, action: BrokerErrorResponse) -> bool:
    return (
        _in_flight(state) and state.config.mode is not CommunicationMode.ONEWAY
        and send_status_of(action.code) is None
    )


def _failed_enabled(state: SendState, action: AttemptFailed) -> bool:
    if not _in_flight(state) or action.kind not in ATTEMPT_FAILURES:
        return False
    # In ASYNC mode only the first attempt goes through sendKernelImpl, where an unknown broker address
    # shows; the callback's retries cannot fail that way.
    first = state.requests == 1
    return action.kind is not Failure.CLIENT or state.config.mode is not CommunicationMode.ASYNC or first


def _record(state: SendState, broker_name: str, latency_ms: int, now_ms: int, isolation: bool) -> FaultTable:
    if state.kernel_only:
        return state.faults  # sendKernelImpl records no fault item (SEND-27)
    return record_fault(state.faults, broker_name, latency_ms, now_ms, isolation, state.config.fault_enabled)


def _end(state: SendState, outcome: Outcome) -> SendState:
    return attrs.evolve(state, outcome=outcome, in_flight=None)


def _ran_out(state: SendState, failure: Failure, code: int | None) -> SendState:
    """Attempts are used up after a retried failure (SEND-10)."""
    if state.held is not None:
        return _end(state, Outcome(OutcomeKind.SENT, status=state.held))
    return _end(state, Outcome(OutcomeKind.FAILED, failure=failure, code=code, exhausted=True))


def _retry_or_end(state: SendState, failure: Failure, code: int | None) -> SendState:
    if state.attempts < state.limit:
        return attrs.evolve(state, in_flight=None)
    return _ran_out(state, failure, code)


def _select(state: SendState, action: SelectQueue) -> SendState:
    """A queue the selector can give is chosen while the send is pending with nothing in flight (SEND-21).

    The selector's result is applied, then the budget check (SEND-2): over budget a SYNC send ends (with a held
    result if any, SEND-6) and an ASYNC retry fails without a request (SEND-7); otherwise the request goes out,
    an ASYNC retry keeping the first queue id (SEND-8), the first ASYNC dispatch recorded as a quick call (SEND-14).
    """
    cfg = state.config
    queue = action.queue
    selection = _selection_for(state, queue)
    assert selection is not None
    state = attrs.evolve(
        state, counter=selection.counter, worst_counter=selection.worst_counter, queues=selection.queues,
        faults=selection.faults,
    )
    retry = state.attempts > 0
    if cfg.mode is CommunicationMode.ASYNC and retry:
        # The callback resends the first request: only the broker is new (SEND-8).
        assert state.first_queue_id is not None
        queue = MessageQueue(queue.topic, queue.broker_name, state.first_queue_id)
    if not attempt_within_budget(state.elapsed_ms, cfg.timeout_ms):
        if cfg.mode is CommunicationMode.ASYNC and retry:
            if not cfg.profile.at_least("4.9.3"):
                return _end(state, Outcome(OutcomeKind.FAILED, failure=Failure.TIMEOUT))
            # invokeAsync throws before writing; the callback path counts it as a failed attempt (SEND-7).
            state = attrs.evolve(
                state, attempts=state.attempts + 1, last=queue,
                faults=_record(state, queue.broker_name, 0, state.now_ms, isolation=True),
            )
            return _retry_or_end(state, Failure.TIMEOUT, None)
        if state.held is not None:
            return _end(state, Outcome(OutcomeKind.SENT, status=state.held))
        return _end(state, Outcome(OutcomeKind.FAILED, failure=Failure.TIMEOUT))
    state = attrs.evolve(
        state, attempts=state.attempts + 1, requests=state.requests + 1, last=queue, in_flight=queue,
        first_queue_id=queue.queue_id if state.first_queue_id is None else state.first_queue_id,
    )
    if cfg.mode is CommunicationMode.ASYNC and not retry and state.target is None:
        # sendDefaultImpl records the dispatch of the first ASYNC request as a quick call (SEND-14).
        state = attrs.evolve(
            state, faults=_record(state, queue.broker_name, 0, state.now_ms, isolation=False)
        )
    return state


def _answered(state: SendState, action: AttemptAnswered) -> SendState:
    """The attempt in flight got a SendStatus (ONEWAY: was written, and gets none, SEND-9).

    The latency is recorded (SEND-14); a non-OK status is held and retried on another broker when
    retryAnotherBrokerWhenNotStoreOK is on and attempts remain (SEND-6); otherwise the send ends with it.
    """
    cfg = state.config
    assert state.in_flight is not None
    now = state.now_ms + action.latency_ms
    faults = _record(state, state.in_flight.broker_name, action.latency_ms, now, isolation=False)
    state = attrs.evolve(state, now_ms=now, faults=faults)
    if action.status is not None and state.target is None and status_retried(action.status, cfg.mode,
                                                                              cfg.retry_another):
        return _retry_or_end(attrs.evolve(state, held=action.status), Failure.BROKER, None)
    return _end(state, Outcome(OutcomeKind.SENT, status=action.status))


def _broker_error(state: SendState, action: BrokerErrorResponse) -> SendState:
    """The attempt in flight got an error code (never in ONEWAY mode): recorded with isolation (SEND-14).

    A code of retryResponseCodes in SYNC mode is retried while attempts remain (SEND-4, SEND-10); any other
    code, and every code in ASYNC mode, ends the send, with the held result if there is one (SEND-6, SEND-7).
    """
    cfg = state.config
    assert state.in_flight is not None
    now = state.now_ms + action.latency_ms
    faults = _record(state, state.in_flight.broker_name, action.latency_ms, now, isolation=True)
    state = attrs.evolve(state, now_ms=now, faults=faults)
    if state.target is None and response_code_retried(action.code, cfg.mode, cfg.retry_codes):
        return _retry_or_end(state, Failure.BROKER, action.code)
    if state.held is not None:
        return _end(state, Outcome(OutcomeKind.SENT, status=state.held))
    return _end(state, Outcome(OutcomeKind.FAILED, failure=Failure.BROKER, code=action.code))


def _failed(state: SendState, action: AttemptFailed) -> SendState:
    """The attempt in flight failed without a response (SEND-3, SEND-7).

    A SYNC interruption is thrown at once; a retried failure is recorded with isolation (SEND-14) and retried
    while attempts remain (SEND-3, SEND-10); in ASYNC mode an unknown broker address fails only the first attempt
    (the guard: the callback's retries cannot fail that way, SEND-7).
    """
    cfg = state.config
    assert state.in_flight is not None
    broker = state.in_flight.broker_name
    now = state.now_ms + action.latency_ms
    interrupted = action.kind is Failure.INTERRUPTED
    if state.kernel_only or (state.target is not None and state.requests == 1 and action.kind is Failure.CLIENT):
        # Without the retry loop the attempt's exception reaches the caller as it is (SEND-27).
        now_state = attrs.evolve(state, now_ms=now)
        return _end(now_state, Outcome(OutcomeKind.FAILED, failure=action.kind))
    retried = failure_retried(action.kind, cfg.mode, cfg.profile)
    if interrupted and not retried:
        # sendDefaultImpl records an interruption without isolation; the pre-4.9.3 ASYNC retry path records
        # nothing (the first ASYNC attempt's interruption still goes through sendDefaultImpl).
        record = cfg.mode is not CommunicationMode.ASYNC or state.requests == 1
        faults = _record(state, broker, action.latency_ms, now, isolation=False) if record else state.faults
        return _end(
            attrs.evolve(state, now_ms=now, faults=faults),
            Outcome(OutcomeKind.FAILED, failure=Failure.INTERRUPTED),
        )
    faults = _record(state, broker, action.latency_ms, now, isolation=True)
    state = attrs.evolve(state, now_ms=now, faults=faults)
    if retried:
        return _retry_or_end(state, action.kind, None)
    # Not retried but not thrown either: sendDefaultImpl's loop ends after its single ASYNC/ONEWAY attempt.
    return _ran_out(state, action.kind, None)


def _new_send(state: SendState, action: NewSend) -> SendState:
    """Between sends the thread starts the next one: the previous broker is forgotten, the round-robin counters
    and the fault table are kept (SEND-20); nothing else moves a finished send (SEND-21)."""
    return attrs.evolve(
        state, sends=state.sends + 1, started_ms=state.now_ms, attempts=0, requests=0, last=None,
        first_queue_id=None, in_flight=None, held=None, outcome=PENDING, waited=False, message=action.message,
        target=action.target,
    )


def _refused(state: SendState, action: MessageRefused) -> SendState:
    """The producer refuses the message before looking for a route: no attempt (SEND-24); its checks saw the topic in
    the namespace (SEND-26)."""
    reason = refusal(state)
    assert reason is not None
    return _end(state, Outcome(OutcomeKind.FAILED, failure=Failure.REFUSED, code=reason[0]))


def _no_route(state: SendState, action: NoRoute) -> SendState:
    """A send to a topic whose queue list is empty fails at once, with no attempt (SEND-23)."""
    return _end(state, Outcome(OutcomeKind.FAILED, failure=Failure.NO_ROUTE))


def _time_passes(state: SendState, action: TimePasses) -> SendState:
    """Time passes once between two sends: fault items may expire before the next one (SEND-16, SEND-21)."""
    return attrs.evolve(state, now_ms=state.now_ms + action.ms, waited=True)


# ---------------------------------------------------------------------------------------------------------
# Candidates: the actions worth trying under a model's bounds.


@attrs.frozen
class Bounds:
    """What a model tries: the latencies of an answer, the statuses and error codes a broker answers, the time
    that may pass between sends (0: none) and how many sends a producer thread makes."""

    latencies: tuple[int, ...] = (0, DEFAULT_SEND_MSG_TIMEOUT_MS)
    statuses: tuple[SendStatus, ...] = (SendStatus.SEND_OK, SendStatus.FLUSH_DISK_TIMEOUT)
    codes: tuple[int, ...] = (int(ResponseCode.SYSTEM_ERROR), int(ResponseCode.SYSTEM_BUSY))
    wait_ms: int = 60_000
    max_sends: int = 2
    direct: bool = False  # also sends to a chosen queue (SEND-27; the invariants assume the retry loop)


def _new_send_candidates(state: SendState, bounds: Bounds) -> tuple[NewSend, ...]:
    if state.sends >= bounds.max_sends:
        return ()
    if not bounds.direct or not state.queues:
        return (NewSend(),)
    first = state.queues[0]
    # A send to the first queue, as the user names it (SEND-27).
    named = MessageQueue(unwrapped(first.topic, state.config.namespace) or "", first.broker_name, first.queue_id)
    return NewSend(), NewSend(target=Target(named))


def _time_passes_candidates(state: SendState, bounds: Bounds) -> tuple[TimePasses, ...]:
    # Time between sends matters only to fault items.
    return (TimePasses(bounds.wait_ms),) if bounds.wait_ms > 0 and state.faults and state.sends < bounds.max_sends \
        else ()


def _refused_candidates(state: SendState, bounds: Bounds) -> tuple[MessageRefused, ...]:
    return (MessageRefused(),) if state.message is not None else ()


def _no_route_candidates(state: SendState, bounds: Bounds) -> tuple[NoRoute, ...]:
    return (NoRoute(),) if not state.queues else ()


def _select_candidates(state: SendState, bounds: Bounds) -> list[SelectQueue]:
    return [SelectQueue(s.queue) for s in sorted(selections(state), key=lambda s: s.queue)] \
        if _awaiting_selection(state) else []


def _answered_candidates(state: SendState, bounds: Bounds) -> list[AttemptAnswered]:
    return [AttemptAnswered(latency, status) for latency in bounds.latencies for status in (None, *bounds.statuses)]


def _broker_error_candidates(state: SendState, bounds: Bounds) -> list[BrokerErrorResponse]:
    return [BrokerErrorResponse(latency, code) for latency in bounds.latencies for code in bounds.codes]


def _failed_candidates(state: SendState, bounds: Bounds) -> list[AttemptFailed]:
    return [AttemptFailed(latency, kind) for latency in bounds.latencies for kind in ATTEMPT_FAILURES]


# ---------------------------------------------------------------------------------------------------------
# The machine.

TRANSITIONS: TransitionTable[SendState, Action, Bounds] = TransitionTable("send_retry", CLAUSES, (
    Transition(NewSend, _new_send_enabled, _new_send, _new_send_candidates, ("SEND-20", "SEND-21")),
    Transition(TimePasses, _time_passes_enabled, _time_passes, _time_passes_candidates, ("SEND-16", "SEND-21")),
    Transition(MessageRefused, _refused_enabled, _refused, _refused_candidates, ("SEND-24", "SEND-26")),
    Transition(NoRoute, _no_route_enabled, _no_route, _no_route_candidates, ("SEND-23",)),
    Transition(SelectQueue, _select_enabled, _select, _select_candidates,
               ("SEND-2", "SEND-6", "SEND-7", "SEND-8", "SEND-14", "SEND-21")),
    Transition(AttemptAnswered, _answered_enabled, _answered, _answered_candidates, ("SEND-6", "SEND-9", "SEND-14")),
    Transition(BrokerErrorResponse, _broker_error_enabled, _broker_error, _broker_error_candidates,
               ("SEND-4", "SEND-6", "SEND-7", "SEND-10", "SEND-14")),
    Transition(AttemptFailed, _failed_enabled, _failed, _failed_candidates,
               ("SEND-3", "SEND-7", "SEND-10", "SEND-14")),
))

#: Whether an action can happen in a state (its transition's guard).
enabled = TRANSITIONS.enabled
#: The state after an enabled action (its transition's effect).
step = TRANSITIONS.step
