"""Consume retry: the oracles of pulls and batches, committed offsets, the property map a consumer's own send shares,
when a suspended orderly batch comes back, and when the schedule service moves a parked message (also after a broker
restart)."""

from __future__ import annotations

from rocketspec.spec.consume_retry.clauses import CLAUSES
from rocketspec.spec.consume_retry.oracles import RETRY_BASE_DELAY_LEVEL
from rocketspec.spec.java import is_blank
from rocketspec.spec.protocol import PULL_BATCH_SIZE, SCHEDULE_TICK_MS, Property

#: A due copy is moved at the schedule service's next tick: no later than this after it is due (or after the
#: level's first run, RETRY-32).
SCHEDULE_SLACK_MS = 2 * SCHEDULE_TICK_MS


@CLAUSES.oracle("RETRY-31")
def pull_sizes(available: int) -> tuple[int, ...]:
    """How many messages a pull of a queue may find when ``available`` are stored past where the last pull ended
    (RETRY-31): at least one, at most pullBatchSize (the broker may answer before later ones arrive). None when
    nothing is available.

    pre: 0 <= available <= 64
    post: all(1 <= n <= min(available, PULL_BATCH_SIZE) for n in __return__)
    post: (__return__ == ()) == (available == 0)
    post: len(__return__) == min(available, PULL_BATCH_SIZE)
    """
    return tuple(range(1, min(available, PULL_BATCH_SIZE) + 1))


@CLAUSES.oracle("RETRY-28")
def consume_requests(pulled: int, batch_max: int) -> tuple[int, ...]:
    """The sizes of the consume requests a concurrent consumer cuts ``pulled`` messages into, in order (RETRY-28):
    consumeMessageBatchMaxSize each, the last one shorter.

    pre: 0 <= pulled <= 64 and 1 <= batch_max <= 64
    post: sum(__return__) == pulled
    post: all(1 <= n <= batch_max for n in __return__)
    post: all(n == batch_max for n in __return__[:-1])
    """
    return tuple(min(batch_max, pulled - start) for start in range(0, pulled, batch_max))


@CLAUSES.oracle("RETRY-28")
def concurrent_commit_offset(unfinished: tuple[int, ...], frontier: int, committed: int) -> int:
    """The offset a concurrent consumer holds committed for a queue after a batch was handled (RETRY-28).

    ``unfinished``: the offsets still in the process queue (being consumed, sent back, waiting for a local
    re-consume); ``frontier``: one past the last offset pulled; ``committed``: the offset held so far. The
    process queue's answer is its smallest offset, else ``frontier``; the store only increases.

    pre: len(unfinished) <= 4 and 0 <= frontier <= 64 and -1 <= committed <= frontier
    pre: all(0 <= o < frontier for o in unfinished)
    post: committed <= __return__ <= frontier
    post: __return__ == committed or all(__return__ <= o for o in unfinished)
    post: unfinished != () or __return__ == frontier
    """
    return max(committed, min((*unfinished, frontier)))


@CLAUSES.oracle("RETRY-29")
def orderly_batch_size(pending: int, batch_max: int) -> int:
    """How many messages an orderly consumer's next batch of a queue takes (RETRY-29).

    ``pending``: the queue's pulled messages from the first unfinished one (a suspended batch put back first);
    the batch takes as many as it may: consumeMessageBatchMaxSize, or all when fewer. 0 when nothing is pending.

    pre: 0 <= pending <= 64 and 1 <= batch_max <= 64
    post: 0 <= __return__ <= pending and __return__ <= batch_max
    post: __return__ == pending or __return__ == batch_max
    """
    return min(pending, batch_max)


@CLAUSES.oracle("RETRY-3", "RETRY-32")
def latest_move_ms(due_ms: int, first_run_ms: int = 0) -> int:
    """The latest time a parked message due at ``due_ms`` is moved to its real topic (RETRY-3): within the slack of
    schedule ticks after it is due, or, when it was due before the schedule service's tasks first run after a broker
    (re)start at ``first_run_ms``, after that run (RETRY-32).

    pre: 0 <= due_ms <= 10**13 and 0 <= first_run_ms <= 10**13
    post: __return__ >= due_ms + SCHEDULE_TICK_MS and __return__ > first_run_ms
    post: __return__ - SCHEDULE_SLACK_MS in (due_ms, first_run_ms)
    """
    return max(due_ms, first_run_ms) + SCHEDULE_SLACK_MS


@CLAUSES.oracle("RETRY-24", "RETRY-33")
def resumption_deadline(due_ms: int, lock_held: bool = True) -> int | None:
    """The latest time a suspended orderly batch due at ``due_ms`` comes back: its suspension's end (RETRY-24),
    while the consumer holds its queue's lock; none once its lock requests were refused or failed: it waits for the
    lock (RETRY-33).

    pre: 0 <= due_ms <= 10**13
    post: (__return__ is None) == (not lock_held)
    post: __return__ is None or __return__ == due_ms
    """
    return due_ms if lock_held else None


@CLAUSES.oracle("RETRY-30")
def properties_after_own_send(
    properties: tuple[tuple[str, str], ...],
    real_topic: str,
    reconsume_times: int,
    message_id: str = "",
    orderly: bool = False,
) -> tuple[tuple[str, str], ...]:
    """The properties a consumed message shows after the consumer sent it to ``%RETRY%<group>`` itself (RETRY-30).

    The new message takes the consumed message's own map (``MessageAccessor.setProperties``), so what the send
    sets stays on the consumed message: RETRY_TOPIC = ``real_topic``, DELAY = 3 + ``reconsume_times``, TRAN_MSG
    removed, and (orderly, where it is set after the map is taken) ORIGIN_MESSAGE_ID kept unless blank, else
    ``message_id``; RECONSUME_TIME and MAX_RECONSUME_TIMES, set too, are moved into the request header by the
    producer's first attempt, which removes them from the map; every other property stays. Sorted by name.

    pre: len(properties) <= 2 and 0 <= reconsume_times <= 40 and len(real_topic) <= 2
    post: dict(__return__)[Property.RETRY_TOPIC] == real_topic
    post: dict(__return__)[Property.DELAY_TIME_LEVEL] == str(RETRY_BASE_DELAY_LEVEL + reconsume_times)
    post: Property.RECONSUME_TIME not in dict(__return__) and Property.MAX_RECONSUME_TIMES not in dict(__return__)
    post: Property.TRANSACTION_PREPARED not in dict(__return__)
    post: orderly or dict(__return__).get(Property.ORIGIN_MESSAGE_ID) == dict(properties).get(Property.ORIGIN_MESSAGE_ID)
    post: all(k in dict(__return__) for k, _ in properties if k not in (Property.TRANSACTION_PREPARED, Property.RECONSUME_TIME, Property.MAX_RECONSUME_TIMES))
    post: len(dict(__return__)) == len(__return__)
    """  # noqa: E501
    props = dict(properties)
    if orderly:
        origin = props.get(Property.ORIGIN_MESSAGE_ID)
        props[Property.ORIGIN_MESSAGE_ID] = message_id if origin is None or is_blank(origin) else origin
    props[Property.RETRY_TOPIC] = real_topic
    for name in (Property.TRANSACTION_PREPARED, Property.RECONSUME_TIME, Property.MAX_RECONSUME_TIMES):
        props.pop(name, None)
    props[Property.DELAY_TIME_LEVEL] = str(RETRY_BASE_DELAY_LEVEL + reconsume_times)
    return tuple(sorted(props.items()))
