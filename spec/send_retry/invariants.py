"""Send retry: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.protocol import (
    DEFAULT_SEND_MSG_TIMEOUT_MS,
    NOT_AVAILABLE_DURATION_MS,
    CommunicationMode,
    ResponseCode,
    SendStatus,
)
from rocketspec.spec.send_retry.machine import (
    TRANSITIONS,
    Action,
    AttemptAnswered,
    AttemptFailed,
    Bounds,
    BrokerErrorResponse,
    Config,
    MessageShape,
    NewSend,
    Outcome,
    OutcomeKind,
    SelectQueue,
    SendState,
    TimePasses,
    refusal,
)
from rocketspec.spec.send_retry.oracles import (
    Failure,
    FaultItem,
    FaultTable,
    QueueData,
    broker_available,
    fault_table,
    not_available_duration,
    publish_queues,
)
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

# ---------------------------------------------------------------------------------------------------------
# Invariants.


def _limit_respected(state: SendState) -> bool:
    return state.attempts <= state.limit and state.requests <= state.attempts


def _faults_only_when_enabled(state: SendState) -> bool:
    return state.config.fault_enabled or state.faults == ()


def _finished_idle(state: SendState) -> bool:
    return not state.done or state.in_flight is None


def _oneway_never_retried(state: SendState) -> bool:
    return state.config.mode is not CommunicationMode.ONEWAY or state.attempts <= 1


INVARIANTS: tuple[Invariant[SendState], ...] = (
    Invariant("attempts within the mode's limit", ("SEND-1",), _limit_respected),
    Invariant("ONEWAY makes one attempt", ("SEND-9",), _oneway_never_retried),
    Invariant("fault items only with sendLatencyFaultEnable", ("SEND-14",), _faults_only_when_enabled),
    Invariant("a finished send has nothing in flight", ("SEND-21",), _finished_idle),
)


def _new_request(before: SendState, after: SendState) -> bool:
    return after.requests > before.requests and after.sends == before.sends


def _no_request_over_budget(before: SendState, action: Action, after: SendState) -> bool:
    if not isinstance(action, SelectQueue):
        return True
    within = before.elapsed_ms <= before.config.timeout_ms
    return _new_request(before, after) == within


def _plain_retry_avoids_last_broker(before: SendState, action: Action, after: SendState) -> bool:
    if not isinstance(action, SelectQueue) or before.config.fault_enabled or before.last is None:
        return True
    if after.last is None or after.attempts == before.attempts:
        return True
    last = before.last.broker_name
    if all(q.broker_name == last for q in before.queues):
        return True
    return after.last.broker_name != last


def _latency_selection_prefers_available(before: SendState, action: Action, after: SendState) -> bool:
    if not isinstance(action, SelectQueue) or not before.config.fault_enabled:
        return True
    cfg = before.config
    last = before.last.broker_name if before.last is not None else None

    def eligible(broker: str) -> bool:
        if not broker_available(before.faults, broker, before.now_ms):
            return False
        return cfg.profile.at_least("4.9.0") or last is None or broker == last

    if not any(eligible(q.broker_name) for q in before.queues):
        return True
    return broker_available(before.faults, action.queue.broker_name, before.now_ms)


def _non_retried_code_ends(before: SendState, action: Action, after: SendState) -> bool:
    if not isinstance(action, BrokerErrorResponse):
        return True
    cfg = before.config
    if cfg.mode is CommunicationMode.SYNC and action.code in cfg.retry_codes:
        return True
    return after.done


def _retried_failure_retries(before: SendState, action: Action, after: SendState) -> bool:
    cfg = before.config
    if cfg.mode is not CommunicationMode.SYNC:
        return True
    if isinstance(action, AttemptFailed) and action.kind is not Failure.INTERRUPTED:
        pass
    elif isinstance(action, BrokerErrorResponse) and action.code in cfg.retry_codes:
        pass
    else:
        return True
    if after.attempts < 1 + cfg.retry_times:
        return not after.done
    return after.done


def _exhausted_after_all_attempts(before: SendState, action: Action, after: SendState) -> bool:
    out = after.outcome
    if before.done or not (out.kind is OutcomeKind.FAILED and out.exhausted):
        return True
    cfg = before.config
    expected = {
        CommunicationMode.SYNC: 1 + cfg.retry_times,
        CommunicationMode.ASYNC: 1 + cfg.async_retry_times,
        CommunicationMode.ONEWAY: 1,
    }[cfg.mode]
    ended_early = cfg.mode is CommunicationMode.ASYNC and out.failure is Failure.CLIENT
    return after.attempts == expected or ended_early


def _interrupt_thrown(before: SendState, action: Action, after: SendState) -> bool:
    if not isinstance(action, AttemptFailed) or action.kind is not Failure.INTERRUPTED:
        return True
    if before.config.mode is not CommunicationMode.SYNC:
        return True
    return after.outcome == Outcome(OutcomeKind.FAILED, failure=Failure.INTERRUPTED)


def _status_handling(before: SendState, action: Action, after: SendState) -> bool:
    if not isinstance(action, AttemptAnswered) or action.status is None:
        return True
    cfg = before.config
    if action.status is SendStatus.SEND_OK or cfg.mode is not CommunicationMode.SYNC or not cfg.retry_another:
        return after.outcome == Outcome(OutcomeKind.SENT, status=action.status)
    if after.attempts < cfg.limit:
        return not after.done and after.held is action.status
    return after.outcome == Outcome(OutcomeKind.SENT, status=action.status)


def _held_result_returned(before: SendState, action: Action, after: SendState) -> bool:
    if before.done or not after.done or before.held is None:
        return True
    if isinstance(action, AttemptFailed) and action.kind is Failure.INTERRUPTED:
        return True
    if isinstance(action, AttemptAnswered):
        return True
    return after.outcome == Outcome(OutcomeKind.SENT, status=before.held)


def _faults_recorded(before: SendState, action: Action, after: SendState) -> bool:
    cfg = before.config
    if not cfg.fault_enabled:
        return after.faults == before.faults
    if not isinstance(action, AttemptAnswered | BrokerErrorResponse | AttemptFailed):
        return True
    if isinstance(action, AttemptFailed) and action.kind is Failure.INTERRUPTED and after.done:
        return True
    assert before.in_flight is not None
    broker = before.in_flight.broker_name
    items = [i for i in after.faults if i.broker_name == broker]
    if len(items) != 1 or items[0].latency_ms != action.latency_ms:
        return False
    avoided = items[0].start_ms - after.now_ms
    if isinstance(action, AttemptAnswered):
        return avoided == not_available_duration(action.latency_ms)
    return avoided == NOT_AVAILABLE_DURATION_MS[-1]


def _finished_send_stays_finished(before: SendState, action: Action, after: SendState) -> bool:
    if not before.done or isinstance(action, NewSend):
        return True
    return (
        after.attempts == before.attempts
        and after.requests == before.requests
        and after.counter == before.counter
        and after.outcome == before.outcome
    )


def _counter_moves_only_on_selection(before: SendState, action: Action, after: SendState) -> bool:
    if isinstance(action, SelectQueue):
        return after.counter != before.counter
    return after.counter == before.counter and after.worst_counter == before.worst_counter


def _last_broker_scope(before: SendState, action: Action, after: SendState) -> bool:
    if isinstance(action, NewSend):
        return after.last is None and after.attempts == 0 and after.faults == before.faults
    return True


def _async_retry_keeps_queue_id(before: SendState, action: Action, after: SendState) -> bool:
    if before.config.mode is not CommunicationMode.ASYNC or not isinstance(action, SelectQueue):
        return True
    if before.attempts == 0 or after.last is None or after.attempts == before.attempts:
        return True
    return after.last.queue_id == before.first_queue_id and after.last.broker_name == action.queue.broker_name


def _no_route_no_attempt(before: SendState, action: Action, after: SendState) -> bool:
    if before.queues:
        return True
    return after.requests == 0 and (not after.done or after.outcome.failure is Failure.NO_ROUTE
                                    or isinstance(action, NewSend | TimePasses))


def _refused_no_attempt(before: SendState, action: Action, after: SendState) -> bool:
    if refusal(before) is None or before.done:
        return True
    return after.requests == 0 and (not after.done or after.outcome.failure is Failure.REFUSED)


def _queue_list_stable(before: SendState, action: Action, after: SendState) -> bool:
    if before.config.profile.at_least("4.9.8") or not before.config.fault_enabled:
        return after.queues == before.queues
    return len(after.queues) == len(before.queues)


STEP_INVARIANTS: tuple[StepInvariant[SendState, Action], ...] = (
    StepInvariant("no request after the budget is spent", ("SEND-2",), _no_request_over_budget),
    StepInvariant(
        "a plain retry avoids the last broker", ("SEND-13", "SEND-20"), _plain_retry_avoids_last_broker
    ),
    StepInvariant(
        "latency selection takes an available broker when there is one",
        ("SEND-16", "SEND-17"),
        _latency_selection_prefers_available,
    ),
    StepInvariant("a non-retried code ends the send", ("SEND-4", "SEND-7"), _non_retried_code_ends),
    StepInvariant(
        "a retried SYNC failure is retried while attempts remain", ("SEND-3", "SEND-4"),
        _retried_failure_retries,
    ),
    StepInvariant(
        "attempts run out only at the mode's limit", ("SEND-1", "SEND-10"), _exhausted_after_all_attempts
    ),
    StepInvariant("a SYNC interruption is thrown", ("SEND-3",), _interrupt_thrown),
    StepInvariant("SendStatus handling", ("SEND-6", "SEND-7"), _status_handling),
    StepInvariant("a held result is returned", ("SEND-6",), _held_result_returned),
    StepInvariant("fault items follow the latency table", ("SEND-14", "SEND-15"), _faults_recorded),
    StepInvariant("a finished send never attempts again", ("SEND-21",), _finished_send_stays_finished),
    StepInvariant(
        "the counters move only when selecting", ("SEND-11", "SEND-12"), _counter_moves_only_on_selection
    ),
    StepInvariant("a new send has no last broker", ("SEND-20",), _last_broker_scope),
    StepInvariant("an ASYNC retry keeps the first queue id", ("SEND-8",), _async_retry_keeps_queue_id),
    StepInvariant(
        "the queue list changes only by the old fallback", ("SEND-19", "SEND-22"), _queue_list_stable
    ),
    StepInvariant("a topic without queues fails with no attempt", ("SEND-23",), _no_route_no_attempt),
    StepInvariant("a refused message fails with no attempt", ("SEND-24",), _refused_no_attempt),
)


# ---------------------------------------------------------------------------------------------------------
# Model.

_TOPIC = "TopicTest"


def model(
    profile: VersionProfile = DEFAULT_PROFILE,
    brokers: tuple[str, ...] = ("broker-a", "broker-b"),
    queues_per_broker: int = 2,
    modes: tuple[CommunicationMode, ...] = tuple(CommunicationMode),
    max_sends: int = 2,
    counters: tuple[int, ...] = (0, 1),
    latencies: tuple[int, ...] = (0, DEFAULT_SEND_MSG_TIMEOUT_MS),
    statuses: tuple[SendStatus, ...] = (SendStatus.SEND_OK, SendStatus.FLUSH_DISK_TIMEOUT),
    codes: tuple[int, ...] = (ResponseCode.SYSTEM_ERROR, ResponseCode.SYSTEM_BUSY),
    timeout_ms: int = DEFAULT_SEND_MSG_TIMEOUT_MS,
    wait_ms: int = 60_000,
) -> Model[SendState, Action]:
    """Sends of one producer thread over ``brokers`` x ``queues_per_broker`` queues, in every mode, with
    sendLatencyFaultEnable off and on (and retryAnotherBrokerWhenNotStoreOK off and on for SYNC).

    Initial fault tables (when enabled): empty, the first broker avoided, every broker avoided with different
    latencies (the fallback) one of which expires when the budget is spent, and a tie with a broker no longer
    in the route. ``wait_ms`` > 0 lets that much time pass once between sends.
    """
    queue_datas = tuple(QueueData(b, queues_per_broker) for b in brokers)
    queues = publish_queues(_TOPIC, queue_datas, frozenset(brokers))
    tables: list[FaultTable] = [
        (),
        # The first broker avoided for the whole send.
        fault_table([FaultItem(brokers[0], 3000, 180_000)]),
        # Every broker avoided (the fallback picks the lowest latency); the first one is available again once
        # the budget is spent.
        fault_table([FaultItem(b, 1000 * (n + 1), timeout_ms + 60_000 * n) for n, b in enumerate(brokers)]),
        # A tie between all route brokers, and a broker that left the route, available and so picked first:
        # its item is removed (SEND-19) and the next fallback falls in the tie.
        fault_table([*(FaultItem(b, 3000, 600_000) for b in brokers), FaultItem("broker-gone", 0, 0)]),
    ]
    initial: list[SendState] = []
    for mode in modes:
        for enabled_ in (False, True):
            for retry_another in (False, True) if mode is CommunicationMode.SYNC else (False,):
                cfg = Config(
                    mode, enabled_, retry_another, timeout_ms=timeout_ms, queue_datas=queue_datas,
                    profile=profile,
                )
                for table in tables if enabled_ else [()]:
                    for counter in counters:
                        initial.append(SendState(cfg, queues, table, counter, counter))
        # A route whose queues are all read only: no queue to send to (SEND-23).
        read_only = tuple(QueueData(b, queues_per_broker, perm=4) for b in brokers)
        initial.append(SendState(Config(mode, False, queue_datas=read_only, profile=profile), (), (), 0, 0))
        # A message the producer refuses, to a topic it could send to (SEND-24).
        plain = Config(mode, False, queue_datas=queue_datas, profile=profile)
        initial.append(SendState(plain, queues, (), 0, 0, message=MessageShape(_TOPIC, 0)))

    bounds = Bounds(latencies, statuses, codes, wait_ms, max_sends)
    return TRANSITIONS.model(
        bounds,
        (
            f"{len(brokers)} brokers x {queues_per_broker} queues, modes {'/'.join(m.value for m in modes)}, "
            f"fault tolerance off/on, retryAnotherBroker off/on, {max_sends} sends, "
            f"latencies {latencies} ms, budget {timeout_ms} ms, wait {wait_ms} ms"
            f", counters {counters}, {profile}"
        ),
        initial,
        INVARIANTS,
        STEP_INVARIANTS,
    )
