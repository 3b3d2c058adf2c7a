"""The spec's oracles as both trace checkers call them: memoised on hashable arguments (values repeat a lot in a
trace), with an oracle's exception on a row's values turned into :class:`Refused` (a finding about the row, not a
crash of the checker). The Python checker calls them per row; the Spark checker builds its decision tables with
them on the driver."""

from __future__ import annotations

import functools
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from rocketspec.spec import MessageQueue, send_retry
from rocketspec.spec.consume_retry import Target, consumer_send_back, delay_millis
from rocketspec.spec.protocol import CommunicationMode, GetMessageStatus, ResponseCode
from rocketspec.spec.pull_correction import bounds_decision, pull_status, response_code
from rocketspec.spec.rebalance import allocate
from rocketspec.traces.schema import SchemaError

_CACHE = 1 << 16


# Memoised oracles: the spec's functions on hashable arguments (values repeat a lot in a trace).


class Refused(str):
    """An oracle's refusal of a row's values (the exception it raised, as text): reported as a violation."""


def oracle(maxsize: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Memoise an oracle call and turn the oracle's exceptions into :class:`Refused` (bad values in a row are a
    finding about the row, not a crash of the checker)."""

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        @lru_cache(maxsize=maxsize)
        @functools.wraps(function)
        def call(*args: Any) -> Any:
            try:
                return function(*args)
            except SchemaError:
                raise
            except Exception as refused:  # whatever the oracle raises on these values
                return Refused(f"{function.__name__.lstrip('_')}{args} refuses: {refused!r}")

        return call

    return wrap


@oracle(_CACHE)
def bounds(offset: int, min_offset: int, max_offset: int) -> tuple[str, int] | None:
    """PULL-1..5: the store's (status, next begin offset) when the offset cannot be read, else None."""
    decision = bounds_decision(offset, min_offset, max_offset)
    return None if decision is None else (decision.status.name, decision.next_begin_offset)


@oracle(_CACHE)
def pull_codes(status: str, offset: int) -> frozenset[int] | None:
    """PULL-10: the codes the broker answers ``status`` with, with or without suspension (None: not a store
    status)."""
    store_status = GetMessageStatus.__members__.get(status)
    if store_status is None:
        return None
    answers = (response_code(store_status, requested_offset=offset, suspend=s) for s in (True, False))
    return frozenset(int(a.code) for a in answers if a.code is not None)


@oracle(256)
def client_pull_status(code: int) -> str | None:
    """PULL-19: the client's PullStatus name for a response code (None: the client raises)."""
    try:
        response = ResponseCode(code)
    except ValueError:
        return None
    status = pull_status(response)
    return None if status is None else status.name


@oracle(_CACHE)
def allocation(strategy: str, node: str, topic: str, all_queues: tuple[str, ...],
                consumers: tuple[str, ...]) -> frozenset[str]:
    """REB-3/4/5: the 'broker:queueId' set rebalance.allocate gives ``node``."""
    chosen = allocate(strategy, node, message_queues(topic, all_queues), consumers)
    return frozenset(f"{mq.broker_name}:{mq.queue_id}" for mq in chosen)


@lru_cache(maxsize=4096)
def message_queues(topic: str, queues: tuple[str, ...]) -> tuple[MessageQueue, ...]:
    return tuple(message_queue(topic, q) for q in queues)


def message_queue(topic: str, queue: str) -> MessageQueue:
    broker, _, queue_id = queue.rpartition(":")
    if not broker or not queue_id.lstrip("-").isdigit():
        raise SchemaError(f"queue {queue!r} of topic {topic!r} is not 'broker:queueId'")
    return MessageQueue(topic, broker, int(queue_id))


@oracle(256)
def attempt_limit(mode: str, retry_times: int, retry_times_async: int) -> int | None:
    """SEND-1/9: the most attempts of a send (None: not a CommunicationMode)."""
    comm = CommunicationMode.__members__.get(mode)
    return None if comm is None else send_retry.attempt_limit(comm, retry_times, retry_times_async)


@oracle(_CACHE)
def within_budget(elapsed_ms: int, timeout_ms: int) -> bool:
    return send_retry.attempt_within_budget(elapsed_ms, timeout_ms)


@oracle(4096)
def send_back_target(reconsume_times: int, delay_level: int, max_reconsume_times: int) -> str:
    """RETRY-7/8: where the broker puts a sent-back message: 'DLQ', 'RETRY' (or another Target name)."""
    target = consumer_send_back(reconsume_times, delay_level, max_reconsume_times).target
    return target.name if isinstance(target, Target) else str(target)


@oracle(256)
def delay_ms(level: int, table: tuple[int, ...]) -> int:
    """RETRY-1/2: the delay of ``level`` in the trace's delay table."""
    return delay_millis(level, table)
