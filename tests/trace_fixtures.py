"""Small hand-made traces for the invariant checkers: one healthy run, and for every invariant variants that break it.

:func:`healthy` is one settled run of two brokers, a producer and a clustering group of two consumers in which every
invariant of :mod:`rocketspec.traces.invariants` scans rows and holds: a send retried on the other broker after an
injected error (SEND-13), pulls whose broker- and client-side answers come from the pull-correction oracles
(PULL-1..PULL-10, PULL-19), a rebalance when the second consumer joins (AVG, REB-3), a RECONSUME_LATER whose copy
is stored in ``%RETRY%G`` after the delay the level gives and then consumed (RETRY-8), a message dead-lettered at
``max_reconsume_times`` (RETRY-7), a duplicate after a consumer crash (OFF-17), a committed and a rolled-back
transaction, a check-back within the max (TXN-22), offset commits, a deletion, a broker restart and an
administrator's reset of another group's offset. A ``sendback`` row is written by the broker that makes the copy
(node = broker = that broker) and describes the copy: its reconsume_times (the stored count + 1) and the level it is
delayed by (0 for a dead letter), as ``consumer_send_back`` gives them.

:data:`VIOLATIONS` maps ``"<invariant>/<what>"`` to a builder of a variant of that run that breaks exactly that
invariant, once; :data:`ALLOWED` maps names to variants that look suspicious but break nothing (a duplicate after a
rebalance, a regression after an OFFSET_ILLEGAL, a TXN-11 double commit after two END_TRANSACTIONs or a duplicated
one, an unsettled run with an undelivered message, ...), with the tallies a checker must count in
:data:`ALLOWED_COUNTS` (named by the constants of :mod:`rocketspec.traces.invariants`). Every variant has its own
``trace_id``, so all of them can share one trace directory.

Every row is built by :class:`TraceBuilder` (checked with :func:`rocketspec.traces.schema.check_row`); the expected
pull answers, allocations and sendback targets are computed by calling the spec's oracles, never written by hand.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rocketspec.spec.consume_retry import consumer_send_back, delay_millis
from rocketspec.spec.protocol import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, GetMessageStatus, ResponseCode
from rocketspec.spec.pull_correction import bounds_decision, full_batch, pull_status, response_code
from rocketspec.spec.queues import MessageQueue
from rocketspec.spec.rebalance import allocate
from rocketspec.traces import schema
from rocketspec.traces.invariants import (
    CAUSES,
    DUPLICATE_FAULT,
    EXEMPT_DELETED,
    SKIPPED,
    TXN_ALLOWED,
    TXN_COMMITTED,
    TXN_ROLLED_BACK,
)
from rocketspec.traces.schema import PULL_ANSWER

Row = dict[str, Any]

#: The cause names allowed duplicates and regressions are counted under (invariants.CAUSES, in its order).
STORED_TWICE, REBALANCE, CLIENT, OFFSET_ILLEGAL, RESET, BROKER_RESTART, FAULT, DELETION, SHARED_QUEUE = CAUSES

# The cast of the healthy run.
GROUP = "G"
PRODUCER_GROUP = "PG"
TOPIC = "TopicTest"
OTHER_TOPIC = "TopicOther"  # a user topic no group subscribes to
RETRY_TOPIC = RETRY_GROUP_TOPIC_PREFIX + GROUP
DLQ_TOPIC = DLQ_GROUP_TOPIC_PREFIX + GROUP
BROKER_A = "broker-a"
BROKER_B = "broker-b"
PRODUCER = "producer-1"
C1 = "c1"
C2 = "c2"
C3 = "c3"
OTHER_GROUP = "G2"
BROADCAST_GROUP = "GB"
RECORDER = "recorder"
QA = f"{BROKER_A}:0"
QB = f"{BROKER_B}:0"
#: The consumer's maxReconsumeTimes: small so that the second failure dead-letters (RETRY-7).
MAX_RECONSUME = 1
START_MS = 1_700_000_000_000
#: The status a client-side pull.response has when the code has no PullStatus (the client raises).
PULL_ERROR = "ERROR"


class TraceBuilder:
    """Appends valid rows of one trace with increasing ``seq`` and ``ts_ms``; one method per kind.

    The builder also plays the store: it numbers the offsets of ``store.put`` per queue and remembers which message
    sits at which offset, so pulls and deliveries read the queue's real bounds and contents. ``label=`` names a row
    so that variants can find it again (:class:`Draft`).
    """

    def __init__(self, trace_id: str, start_ms: int = START_MS, step_ms: int = 1) -> None:
        self.trace_id = trace_id
        self.now = start_ms
        self.step_ms = step_ms
        self.rows: list[Row] = []
        self.labels: dict[str, Row] = {}
        self.queues: dict[tuple[str, str, int], list[tuple[str, int]]] = {}  # (topic, broker, qid) -> (msg, rt)
        self.min_offsets: dict[tuple[str, str, int], int] = {}
        self.commit_log: dict[str, int] = {}
        self.commits: dict[tuple[str, str, str, int], int] = {}

    # -- plumbing ------------------------------------------------------------------------------------------------

    def advance(self, ms: int) -> None:
        """Move the clock ``ms`` forward (the next row is stamped after it)."""
        self.now += ms

    def emit(self, node: str, kind: str, label: str | None = None, **fields: Any) -> Row:
        """Append one row of ``kind`` by ``node``; null fields are left out."""
        row: Row = {"trace_id": self.trace_id, "seq": len(self.rows) + 1, "ts_ms": self.now, "node": node,
                    "kind": kind}
        row.update({k: v for k, v in fields.items() if v is not None})
        schema.check_row(row, f"{self.trace_id} row {row['seq']}")
        self.rows.append(row)
        if label is not None:
            if label in self.labels:
                raise ValueError(f"label {label!r} used twice")
            self.labels[label] = row
        self.now += self.step_ms
        return row

    def max_offset(self, topic: str, broker: str, queue_id: int) -> int:
        return len(self.queues.get((topic, broker, queue_id), []))

    def message_at(self, topic: str, broker: str, queue_id: int, offset: int) -> tuple[str, int]:
        """``(msg_id, reconsume_times)`` of the message stored at ``offset``."""
        return self.queues[(topic, broker, queue_id)][offset]

    # -- producer ------------------------------------------------------------------------------------------------

    def send(self, node: str, topic: str, broker: str, queue_id: int, msg_id: str, attempt: int, *,
             group: str = PRODUCER_GROUP, mode: str = "SYNC", retry_times: int | None = 2,
             retry_times_async: int | None = 2, timeout_ms: int | None = 3000, latency_fault: bool | None = False,
             label: str | None = None) -> Row:
        """``send.attempt``."""
        return self.emit(node, "send.attempt", label, group=group, topic=topic, broker=broker, queue_id=queue_id,
                         msg_id=msg_id, attempt=attempt, mode=mode, retry_times=retry_times,
                         retry_times_async=retry_times_async, timeout_ms=timeout_ms, latency_fault=latency_fault)

    def send_result(self, node: str, topic: str, broker: str, queue_id: int, msg_id: str, attempt: int,
                    status: str, *, final: bool, group: str = PRODUCER_GROUP, code: int | None = None,
                    offset: int | None = None, error: str | None = None, latency_ms: int | None = None,
                    label: str | None = None) -> Row:
        """``send.result``: SEND_OK and friends, or ERROR with a code or an error."""
        return self.emit(node, "send.result", label, group=group, topic=topic, broker=broker, queue_id=queue_id,
                         msg_id=msg_id, attempt=attempt, status=status, final=final, code=code, offset=offset,
                         error=error, latency_ms=latency_ms)

    def route_update(self, node: str, topic: str, queues: Sequence[str], label: str | None = None) -> Row:
        """``route.update``: ``queues`` as 'broker:queueId:perm'."""
        return self.emit(node, "route.update", label, topic=topic, queues=list(queues))

    # -- consumers -----------------------------------------------------------------------------------------------

    def assign(self, node: str, group: str, topic: str, consumers: Sequence[str], *,
               all_queues: Sequence[str] | None, queues: Sequence[str] | None = None, strategy: str = "AVG",
               expression: str | None = "*", basis: Sequence[str] | None = None, label: str | None = None) -> Row:
        """``rebalance.assign``; ``queues`` default to what :func:`rocketspec.spec.rebalance.allocate` gives on
        ``all_queues`` (or on ``basis`` when the row does not carry ``all_queues``)."""
        on = all_queues if all_queues is not None else basis
        if queues is None:
            if on is None:
                raise ValueError("rebalance.assign needs queues, all_queues or basis")
            mqs = [MessageQueue(topic, q.split(":")[0], int(q.split(":")[1])) for q in on]
            queues = [f"{m.broker_name}:{m.queue_id}" for m in allocate(strategy, node, mqs, list(consumers))]
        return self.emit(node, "rebalance.assign", label, group=group, topic=topic, strategy=strategy,
                         consumers=list(consumers), queues=list(queues),
                         all_queues=None if all_queues is None else list(all_queues), expression=expression)

    def lifecycle(self, node: str, group: str, role: str, action: str, label: str | None = None) -> Row:
        """``client.lifecycle``: start, shutdown or crash."""
        return self.emit(node, "client.lifecycle", label, group=group, role=role, action=action)

    def pull_request(self, node: str, group: str, topic: str, broker: str, queue_id: int, offset: int, *,
                     commit_offset: int | None = None, label: str | None = None) -> Row:
        return self.emit(node, "pull.request", label, group=group, topic=topic, broker=broker, queue_id=queue_id,
                         offset=offset, commit_offset=commit_offset)

    def pull_response_broker(self, group: str, topic: str, broker: str, queue_id: int, offset: int, status: str, *,
                             code: int | None, next_offset: int | None, min_offset: int | None,
                             max_offset: int | None, count: int | None = None, label: str | None = None) -> Row:
        """A broker-side ``pull.response`` (node = broker, GetMessageStatus)."""
        return self.emit(broker, "pull.response", label, group=group, topic=topic, broker=broker,
                         queue_id=queue_id, offset=offset, status=status, code=code, next_offset=next_offset,
                         min_offset=min_offset, max_offset=max_offset, count=count)

    def pull_response_client(self, node: str, group: str, topic: str, broker: str, queue_id: int, offset: int,
                             status: str, *, code: int | None, next_offset: int | None, count: int | None = None,
                             label: str | None = None) -> Row:
        """A client-side ``pull.response`` (node = client, PullStatus)."""
        return self.emit(node, "pull.response", label, group=group, topic=topic, broker=broker, queue_id=queue_id,
                         offset=offset, status=status, code=code, next_offset=next_offset, count=count)

    def pull(self, node: str, group: str, topic: str, broker: str, queue_id: int, offset: int, *,
             commit_offset: int | None = None, label: str | None = None) -> tuple[Row, Row]:
        """A whole pull as the oracles say it goes: the request, the broker's commit of ``commit_offset``
        (PULL-18), the store's decision on the queue's current bounds (``bounds_decision``, else a full batch of
        matching messages), the code without suspension (PULL-10) and the client's status (PULL-19).
        Returns the broker-side and client-side responses (labels ``<label>:broker`` and ``<label>:client``)."""
        self.pull_request(node, group, topic, broker, queue_id, offset, commit_offset=commit_offset,
                          label=None if label is None else f"{label}:request")
        if commit_offset is not None:
            self.commit(broker, group, topic, queue_id, commit_offset,
                        label=None if label is None else f"{label}:commit")
        key = (topic, broker, queue_id)
        low, high = self.min_offsets.get(key, 0), self.max_offset(*key)
        decision = bounds_decision(offset, low, high)
        if decision is None:
            scan = full_batch(offset, high)
            status, next_offset, count = scan.status, offset + scan.entries_scanned, scan.messages
        else:
            status, next_offset, count = decision.status, decision.next_begin_offset, decision.messages
        code = response_code(status, requested_offset=offset, suspend=False).code
        assert code is not None
        client_status = pull_status(code)
        assert client_status is not None
        broker_row = self.pull_response_broker(group, topic, broker, queue_id, offset, status.value, code=int(code),
                                               next_offset=next_offset, min_offset=low, max_offset=high,
                                               count=count, label=None if label is None else f"{label}:broker")
        client_row = self.pull_response_client(node, group, topic, broker, queue_id, offset, client_status.value,
                                               code=int(code), next_offset=next_offset, count=count,
                                               label=None if label is None else f"{label}:client")
        return broker_row, client_row

    def deliver(self, node: str, group: str, topic: str, broker: str, queue_id: int, offset: int, *,
                msg_id: str | None = None, reconsume_times: int | None = None, label: str | None = None) -> Row:
        """``consume.deliver`` of the message stored at ``offset`` (or the one named)."""
        if msg_id is None or reconsume_times is None:
            stored_id, stored_rt = self.message_at(topic, broker, queue_id, offset)
            msg_id = stored_id if msg_id is None else msg_id
            reconsume_times = stored_rt if reconsume_times is None else reconsume_times
        return self.emit(node, "consume.deliver", label, group=group, topic=topic, broker=broker,
                         queue_id=queue_id, offset=offset, msg_id=msg_id, reconsume_times=reconsume_times)

    def result(self, node: str, group: str, topic: str, broker: str, queue_id: int, offset: int, status: str, *,
               msg_id: str | None = None, label: str | None = None) -> Row:
        """``consume.result`` for the message stored at ``offset`` (or the one named)."""
        if msg_id is None:
            msg_id = self.message_at(topic, broker, queue_id, offset)[0]
        return self.emit(node, "consume.result", label, group=group, topic=topic, broker=broker,
                         queue_id=queue_id, offset=offset, msg_id=msg_id, status=status)

    def consume(self, node: str, group: str, topic: str, broker: str, queue_id: int, offset: int, status: str, *,
                label: str | None = None) -> tuple[Row, Row]:
        """Deliver and finish one message (labels ``<label>:deliver`` and ``<label>:result``)."""
        delivered = self.deliver(node, group, topic, broker, queue_id, offset,
                                 label=None if label is None else f"{label}:deliver")
        finished = self.result(node, group, topic, broker, queue_id, offset, status,
                               label=None if label is None else f"{label}:result")
        return delivered, finished

    def offset_update(self, node: str, group: str, topic: str, broker: str, queue_id: int, offset: int, *,
                      increase_only: bool = True, label: str | None = None) -> Row:
        return self.emit(node, "offset.update", label, group=group, topic=topic, broker=broker, queue_id=queue_id,
                         offset=offset, increase_only=increase_only)

    def commit(self, broker: str, group: str, topic: str, queue_id: int, offset: int, *,
               label: str | None = None) -> Row:
        """``offset.commit`` at the broker, ``previous`` being the offset it stored before."""
        key = (group, topic, broker, queue_id)
        row = self.emit(broker, "offset.commit", label, group=group, topic=topic, broker=broker, queue_id=queue_id,
                        offset=offset, previous=self.commits.get(key))
        self.commits[key] = offset
        return row

    def sendback(self, node: str, group: str, topic: str, msg_id: str, reconsume_times: int, target: str, *,
                 delay_level: int = 0, via: str = "broker", max_reconsume_times: int | None = MAX_RECONSUME,
                 broker: str | None = None, label: str | None = None) -> Row:
        """``sendback``: ``topic`` is where the message was consumed from; ``reconsume_times`` and
        ``delay_level`` describe the copy (the stored count + 1; the level it is delayed by, 0 for a dead
        letter); ``broker`` is set (to ``node``) on the row of the broker that made the copy."""
        return self.emit(node, "sendback", label, group=group, topic=topic, msg_id=msg_id,
                         reconsume_times=reconsume_times, delay_level=delay_level, target=target, via=via,
                         max_reconsume_times=max_reconsume_times, broker=broker)

    def broker_sendback(self, broker: str, topic: str, msg_id: str, reconsume_times: int, target: str, *,
                        delay_level: int, max_reconsume_times: int | None = MAX_RECONSUME,
                        label: str | None = None) -> Row:
        """The ``sendback`` row of the broker that made the copy of a CONSUMER_SEND_MSG_BACK of group G
        (node = broker = ``broker``, via broker): the row retry_delay_dlq reads."""
        return self.sendback(broker, GROUP, topic, msg_id, reconsume_times, target, delay_level=delay_level,
                             max_reconsume_times=max_reconsume_times, broker=broker, label=label)

    # -- brokers -------------------------------------------------------------------------------------------------

    def store_put(self, broker: str, topic: str, queue_id: int, msg_id: str, *, reconsume_times: int = 0,
                  tags: str | None = "tagA", label: str | None = None) -> Row:
        """``store.put`` at the queue's next offset."""
        key = (topic, broker, queue_id)
        offset = self.max_offset(*key)
        self.queues.setdefault(key, []).append((msg_id, reconsume_times))
        physical = self.commit_log.get(broker, 0)
        self.commit_log[broker] = physical + 256
        return self.emit(broker, "store.put", label, topic=topic, broker=broker, queue_id=queue_id, offset=offset,
                         msg_id=msg_id, commit_log_offset=physical, reconsume_times=reconsume_times, tags=tags)

    def store_delete(self, broker: str, topic: str, queue_id: int, offset: int, *, label: str | None = None) -> Row:
        """``store.delete``: the queue's min offset is now ``offset``."""
        self.min_offsets[(topic, broker, queue_id)] = offset
        return self.emit(broker, "store.delete", label, topic=topic, broker=broker, queue_id=queue_id, offset=offset)

    def txn_half(self, broker: str, topic: str, msg_id: str, transaction_id: str, offset: int, *,
                 group: str = PRODUCER_GROUP, label: str | None = None) -> Row:
        return self.emit(broker, "txn.half", label, group=group, topic=topic, msg_id=msg_id,
                         transaction_id=transaction_id, offset=offset)

    def txn_end(self, node: str, msg_id: str, transaction_id: str, state: str, *, from_check: bool,
                result: str | None = None, group: str = PRODUCER_GROUP, label: str | None = None) -> Row:
        """``txn.end``: by the producer (no result) or applied by the broker (``result`` set)."""
        return self.emit(node, "txn.end", label, group=group, msg_id=msg_id, transaction_id=transaction_id,
                         state=state, from_check=from_check, result=result)

    def txn_check(self, broker: str, msg_id: str, transaction_id: str, check_times: int, *, action: str = "check",
                  check_max: int | None = 15, group: str = PRODUCER_GROUP, label: str | None = None) -> Row:
        return self.emit(broker, "txn.check", label, group=group, msg_id=msg_id, transaction_id=transaction_id,
                         check_times=check_times, action=action, check_max=check_max)

    def broker_restart(self, broker: str, *, crashed: bool, label: str | None = None) -> Row:
        return self.emit(broker, "broker.restart", label, broker=broker, crashed=crashed)

    def fault(self, target: str, code: int, action: str, *, detail: str | None = None,
              label: str | None = None) -> Row:
        return self.emit(target, "fault.inject", label, target=target, code=code, action=action, detail=detail)

    def end(self, status: str = schema.SETTLED, label: str | None = "end") -> Row:
        return self.emit(RECORDER, "trace.end", label, status=status)


class Draft:
    """A copy of a built trace to mutate by label; :meth:`rows` renumbers ``seq`` and checks every row."""

    def __init__(self, built: TraceBuilder, trace_id: str) -> None:
        self.trace_id = trace_id
        self._rows = [dict(r) for r in built.rows]
        by_id = {id(orig): new for orig, new in zip(built.rows, self._rows, strict=True)}
        self._labels = {name: by_id[id(row)] for name, row in built.labels.items()}

    def row(self, label: str) -> Row:
        return self._labels[label]

    def set(self, label: str, **fields: Any) -> None:
        """Change columns of the labelled row (None removes a column)."""
        row = self._labels[label]
        for name, value in fields.items():
            if value is None:
                row.pop(name, None)
            else:
                row[name] = value

    def drop(self, *labels: str) -> None:
        for label in labels:
            row = self._labels.pop(label)
            self._rows = [r for r in self._rows if r is not row]

    def insert(self, label: str, kind: str, node: str, *, after: bool = True, **fields: Any) -> Row:
        """Insert a row of ``kind`` right after (or before) the labelled row, at the same ``ts_ms``."""
        anchor = self._labels[label]
        at = next(i for i, r in enumerate(self._rows) if r is anchor) + (1 if after else 0)
        row: Row = {"trace_id": self.trace_id, "seq": 0, "ts_ms": anchor["ts_ms"], "node": node, "kind": kind}
        row.update({k: v for k, v in fields.items() if v is not None})
        self._rows.insert(at, row)
        return row

    def rows(self) -> list[Row]:
        out = []
        for seq, row in enumerate(self._rows, start=1):
            row = dict(row, trace_id=self.trace_id, seq=seq)
            schema.check_row(row, f"{self.trace_id} row {seq}")
            out.append(row)
        return out


# ----------------------------------------------------------------------------------------------------------------
# The healthy run
# ----------------------------------------------------------------------------------------------------------------


def _produce(b: TraceBuilder, msg_id: str, broker: str, *, tags: str = "tagA", label: str | None = None) -> None:
    """One SYNC send that succeeds at the first attempt on ``broker``'s queue 0 (labels ``put:<msg>`` etc.)."""
    b.send(PRODUCER, TOPIC, broker, 0, msg_id, 1, label=f"attempt:{msg_id}:1")
    put = b.store_put(broker, TOPIC, 0, msg_id, tags=tags, label=f"put:{msg_id}")
    b.send_result(PRODUCER, TOPIC, broker, 0, msg_id, 1, "SEND_OK", final=True, code=int(ResponseCode.SUCCESS),
                  offset=put["offset"], latency_ms=1, label=f"result:{msg_id}:1")


def _send_back(b: TraceBuilder, broker: str, msg_id: str, topic: str, stored_times: int, *,
               label: str) -> tuple[str, int, int]:
    """A RECONSUME_LATER of a message stored with ``stored_times`` sent back through ``broker``, which makes the
    copy and writes the sendback row (node = broker = ``broker``); the copy's target, delay level and
    reconsume_times come from ``consumer_send_back`` (RETRY-7, RETRY-8, RETRY-9) and the row describes the copy.
    Returns ``(target topic, delay in ms, the copy's reconsume_times)``."""
    answer = consumer_send_back(stored_times, 0, header_max_reconsume_times=MAX_RECONSUME, group=GROUP)
    delay = delay_millis(answer.delay_level) if answer.delay_level > 0 else 0
    b.broker_sendback(broker, topic, msg_id, answer.reconsume_times, answer.topic, delay_level=answer.delay_level,
                      label=label)
    return answer.topic, delay, answer.reconsume_times


Tail = Callable[[TraceBuilder], None]


def _scenario(trace_id: str, *, takeover: bool = False, expression: str = "*", with_all_queues: bool = True,
              restart_queues: Sequence[str] | None = None, broadcasting: bool = False, tail: Tail | None = None,
              status: str = schema.SETTLED) -> TraceBuilder:
    """The healthy run; the knobs make the structural variants.

    ``takeover``: the crashed consumer c2 stays down and c1 takes its queue over (a rebalance) instead of c2
    restarting; ``expression``: the subscription; ``with_all_queues``: whether assignments carry all_queues;
    ``restart_queues``: the queues c2 lists after its restart; ``broadcasting``: a BROADCASTING group GB with
    consumer c3 subscribes before anything is stored; ``tail``: rows added before the closing rows (the retry-queue
    deletion, the broker restart and trace.end); ``status``: the trace.end status.
    """
    b = TraceBuilder(trace_id)
    everything = [QA, QB]

    def assign(node: str, consumers: Sequence[str], label: str, queues: Sequence[str] | None = None) -> None:
        b.assign(node, GROUP, TOPIC, consumers, all_queues=everything if with_all_queues else None,
                 basis=everything, queues=queues, expression=expression, label=label)

    b.lifecycle(PRODUCER, PRODUCER_GROUP, "producer", "start")
    b.route_update(PRODUCER, TOPIC, [f"{BROKER_A}:0:6", f"{BROKER_B}:0:6"], label="route")
    b.lifecycle(C1, GROUP, "push_consumer", "start")
    assign(C1, [C1], "assign:c1:first")
    if broadcasting:
        b.assign(C3, BROADCAST_GROUP, TOPIC, [C3], all_queues=everything, queues=everything, strategy="BROADCASTING",
                 label="assign:c3")

    # m1: broker-a answers an injected SERVICE_NOT_AVAILABLE; the retry avoids broker-a (SEND-13, SEND-21).
    b.fault(BROKER_A, int(ResponseCode.SERVICE_NOT_AVAILABLE), "error", detail="send to broker-a refused",
            label="fault")
    b.send(PRODUCER, TOPIC, BROKER_A, 0, "m1", 1, label="attempt:m1:1")
    b.advance(3)
    b.send_result(PRODUCER, TOPIC, BROKER_A, 0, "m1", 1, "ERROR", final=False,
                  code=int(ResponseCode.SERVICE_NOT_AVAILABLE), latency_ms=3, label="result:m1:1")
    b.send(PRODUCER, TOPIC, BROKER_B, 0, "m1", 2, label="attempt:m1:2")
    b.store_put(BROKER_B, TOPIC, 0, "m1", label="put:m1")
    b.send_result(PRODUCER, TOPIC, BROKER_B, 0, "m1", 2, "SEND_OK", final=True, code=int(ResponseCode.SUCCESS),
                  offset=0, latency_ms=1, label="result:m1:2")
    _produce(b, "m2", BROKER_A)
    _produce(b, "m3", BROKER_A)

    # c1 owns both queues: m2 succeeds, m3 is sent back (RECONSUME_LATER), m1 succeeds.
    b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 0, label="pull:a0:0")
    b.consume(C1, GROUP, TOPIC, BROKER_A, 0, 0, "CONSUME_SUCCESS", label="m2")
    b.consume(C1, GROUP, TOPIC, BROKER_A, 0, 1, "RECONSUME_LATER", label="m3")
    m3_target, m3_delay, m3_times = _send_back(b, BROKER_A, "m3", TOPIC, 0, label="sendback:m3")
    m3_sent_at = b.now - b.step_ms
    b.offset_update(C1, GROUP, TOPIC, BROKER_A, 0, 2)
    b.pull(C1, GROUP, TOPIC, BROKER_B, 0, 0, label="pull:b0:0")
    b.consume(C1, GROUP, TOPIC, BROKER_B, 0, 0, "CONSUME_SUCCESS", label="m1")
    b.offset_update(C1, GROUP, TOPIC, BROKER_B, 0, 1)
    b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 2, commit_offset=2, label="pull:a0:2")
    b.pull(C1, GROUP, TOPIC, BROKER_B, 0, 1, commit_offset=1, label="pull:b0:1")

    # c2 joins: AVG gives c1 broker-a:0 and c2 broker-b:0 (REB-3).
    b.lifecycle(C2, GROUP, "push_consumer", "start", label="start:c2")
    assign(C2, [C1, C2], "assign:c2:join")
    assign(C1, [C1, C2], "assign:c1:second")

    # m3's copy reaches %RETRY%G after level 3 + 0 = 10 s (RETRY-8) and is consumed.
    b.now = max(b.now, m3_sent_at + m3_delay)
    b.store_put(BROKER_A, m3_target, 0, "m3", reconsume_times=m3_times, label="put:m3:retry")
    b.pull(C1, GROUP, RETRY_TOPIC, BROKER_A, 0, 0, label="pull:retry:0")
    b.consume(C1, GROUP, RETRY_TOPIC, BROKER_A, 0, 0, "CONSUME_SUCCESS", label="m3:retry")

    # m4 is consumed by c2, which crashes before committing: it comes again (a duplicate, OFF-17).
    _produce(b, "m4", BROKER_B)
    _produce(b, "m5", BROKER_A)
    b.pull(C2, GROUP, TOPIC, BROKER_B, 0, 1, label="pull:b0:1:c2")
    b.consume(C2, GROUP, TOPIC, BROKER_B, 0, 1, "CONSUME_SUCCESS", label="m4")
    b.offset_update(C2, GROUP, TOPIC, BROKER_B, 0, 2)
    b.lifecycle(C2, GROUP, "push_consumer", "crash", label="crash:c2")
    if takeover:
        owner = C1
        assign(C1, [C1], "assign:c1:takeover")
    else:
        owner = C2
        b.lifecycle(C2, GROUP, "push_consumer", "start", label="restart:c2")
        assign(C2, [C1, C2], "assign:c2:restart", queues=restart_queues)
    b.pull(owner, GROUP, TOPIC, BROKER_B, 0, 1, label="pull:b0:1:again")
    b.consume(owner, GROUP, TOPIC, BROKER_B, 0, 1, "CONSUME_SUCCESS", label="m4:again")
    b.pull(owner, GROUP, TOPIC, BROKER_B, 0, 2, commit_offset=2, label="pull:b0:2")

    # m5 fails twice: the retry copy, then the DLQ at max_reconsume_times = 1 (RETRY-7).
    b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 2, label="pull:a0:2:m5")
    b.consume(C1, GROUP, TOPIC, BROKER_A, 0, 2, "RECONSUME_LATER", label="m5")
    m5_target, m5_delay, m5_times = _send_back(b, BROKER_A, "m5", TOPIC, 0, label="sendback:m5")
    b.advance(m5_delay)
    b.store_put(BROKER_A, m5_target, 0, "m5", reconsume_times=m5_times, label="put:m5:retry")
    b.pull(C1, GROUP, RETRY_TOPIC, BROKER_A, 0, 1, commit_offset=1, label="pull:retry:1")
    b.consume(C1, GROUP, RETRY_TOPIC, BROKER_A, 0, 1, "RECONSUME_LATER", label="m5:retry")
    dlq_target, _, dlq_times = _send_back(b, BROKER_A, "m5", RETRY_TOPIC, m5_times, label="sendback:m5:dlq")
    b.store_put(BROKER_A, dlq_target, 0, "m5", reconsume_times=dlq_times, label="put:m5:dlq")

    # Transaction t1 (m6) is committed and consumed (TXN-8).
    b.send(PRODUCER, TOPIC, BROKER_A, 0, "m6", 1, label="attempt:m6:1")
    b.txn_half(BROKER_A, TOPIC, "m6", "t1", 0, label="half:m6")
    b.send_result(PRODUCER, TOPIC, BROKER_A, 0, "m6", 1, "SEND_OK", final=True, code=int(ResponseCode.SUCCESS),
                  latency_ms=1)
    b.txn_end(PRODUCER, "m6", "t1", "COMMIT_MESSAGE", from_check=False, label="end:m6:producer")
    b.txn_end(BROKER_A, "m6", "t1", "COMMIT_MESSAGE", from_check=False, result=TXN_COMMITTED,
              label="end:m6:broker")
    b.store_put(BROKER_A, TOPIC, 0, "m6", label="put:m6")
    b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 3, commit_offset=3, label="pull:a0:3")
    b.consume(C1, GROUP, TOPIC, BROKER_A, 0, 3, "CONSUME_SUCCESS", label="m6")

    # Transaction t2 (m7) is unknown, checked back once (TXN-22) and rolled back (TXN-9).
    b.send(PRODUCER, TOPIC, BROKER_B, 0, "m7", 1, label="attempt:m7:1")
    b.txn_half(BROKER_B, TOPIC, "m7", "t2", 1, label="half:m7")
    b.send_result(PRODUCER, TOPIC, BROKER_B, 0, "m7", 1, "SEND_OK", final=True, code=int(ResponseCode.SUCCESS),
                  latency_ms=1)
    b.txn_end(PRODUCER, "m7", "t2", "UNKNOW", from_check=False)
    b.advance(6_000)
    b.txn_check(BROKER_B, "m7", "t2", 1, label="check:m7")
    b.txn_end(PRODUCER, "m7", "t2", "ROLLBACK_MESSAGE", from_check=True, label="end:m7:producer")
    b.txn_end(BROKER_B, "m7", "t2", "ROLLBACK_MESSAGE", from_check=True, result=TXN_ROLLED_BACK,
              label="end:m7:broker")

    # The last commits: every queue caught up.
    b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 4, commit_offset=4, label="pull:a0:4")
    b.pull(C1, GROUP, RETRY_TOPIC, BROKER_A, 0, 2, commit_offset=2, label="pull:retry:2")
    if tail is not None:
        tail(b)
    b.store_delete(BROKER_A, RETRY_TOPIC, 0, 2, label="delete:retry")
    b.broker_restart(BROKER_B, crashed=False, label="restart:broker-b")
    # An administrator sets another group's offset (an UPDATE_CONSUMER_OFFSET of no registered consumer).
    b.emit(BROKER_A, "offset.reset", "reset:G2", group=OTHER_GROUP, topic=OTHER_TOPIC, broker=BROKER_A, queue_id=0,
           offset=0, action=schema.RESET_UPDATE)
    b.end(status)
    return b


def healthy_built(trace_id: str = "healthy") -> TraceBuilder:
    """The healthy run with its labels (for variants)."""
    return _scenario(trace_id)


def healthy() -> list[Row]:
    """Rows of the healthy run: every invariant scans rows and holds."""
    return healthy_built().rows


# ----------------------------------------------------------------------------------------------------------------
# Variants
# ----------------------------------------------------------------------------------------------------------------


def trace_id_of(name: str) -> str:
    """The trace id of a variant: ``violates-<invariant>.<what>`` or ``allowed-<what>`` (no '/': it names a
    Hive partition directory)."""
    return name.replace("/", ".")


def _draft(name: str, built: TraceBuilder | None = None) -> Draft:
    tid = trace_id_of(name)
    return Draft(built if built is not None else _scenario(tid), tid)


def _undelivered_tail(tags: str = "tagA") -> Tail:
    """m8 is acknowledged and stored on broker-a:0, and nobody consumes it."""
    def tail(b: TraceBuilder) -> None:
        _produce(b, "m8", BROKER_A, tags=tags)
    return tail


def _rows_of(name: str, **knobs: Any) -> list[Row]:
    return _scenario(trace_id_of(name), **knobs).rows


# no_lost_message ------------------------------------------------------------------------------------------------

def _lost_ack_not_stored() -> list[Row]:
    """(a): m2's SEND_OK has no store.put (the broker acknowledged and lost it)."""
    d = _draft("violates-no_lost_message/ack_not_stored")
    d.drop("put:m2")
    return d.rows()


def _lost_ack_not_stored_cut() -> list[Row]:
    """(a) in a cut trace: m2's SEND_OK has no store.put; the run was cut, yet the put would have come first."""
    name = "violates-no_lost_message/ack_not_stored_cut"
    d = _draft(name, _scenario(trace_id_of(name), status=schema.CUT))
    d.drop("put:m2")
    return d.rows()


def _lost_not_delivered() -> list[Row]:
    """(b): a settled run ends with m8 stored in a subscribed queue and never consumed."""
    return _rows_of("violates-no_lost_message/not_delivered", tail=_undelivered_tail())


def _lost_consumed_never() -> list[Row]:
    """(b): m2 is pulled but never delivered to the listener."""
    d = _draft("violates-no_lost_message/consumed_never")
    d.drop("m2:deliver", "m2:result")
    return d.rows()


def _lost_dlq_copy_missing() -> list[Row]:
    """(b): m5 is sent back to the DLQ but no DLQ copy is stored, and it never succeeded."""
    d = _draft("violates-no_lost_message/dlq_copy_missing")
    d.drop("put:m5:dlq")
    return d.rows()


# duplicates_allowed ---------------------------------------------------------------------------------------------

def _duplicate_without_cause() -> list[Row]:
    """m2 is delivered and succeeds a second time with nothing in between that could explain it."""
    d = _draft("violates-duplicates_allowed/no_cause")
    m2 = d.row("m2:result")
    fields = {k: m2[k] for k in ("group", "topic", "broker", "queue_id", "offset", "msg_id")}
    # Inserted after m2:result, so they appear in the order deliver, result.
    d.insert("m2:result", "consume.result", C1, status="CONSUME_SUCCESS", **fields)
    d.insert("m2:result", "consume.deliver", C1, reconsume_times=0, **fields)
    return d.rows()


def _duplicate_other_group_disturbed() -> list[Row]:
    """m2 comes again in G while only group G2 starts and rebalances: another group's disturbance is no cause."""
    d = _draft("violates-duplicates_allowed/other_group_disturbed")
    m2 = d.row("m2:result")
    fields = {k: m2[k] for k in ("group", "topic", "broker", "queue_id", "offset", "msg_id")}
    d.insert("m2:result", "consume.result", C1, status="CONSUME_SUCCESS", **fields)
    d.insert("m2:result", "consume.deliver", C1, reconsume_times=0, **fields)
    # G2's consumer lists no queue, so nothing is due to G2 and its allocation is not checked (no all_queues).
    d.insert("m2:result", "rebalance.assign", C3, group=OTHER_GROUP, topic=TOPIC, strategy="AVG", consumers=[C3],
             queues=[], expression="*")
    d.insert("m2:result", "client.lifecycle", C3, group=OTHER_GROUP, role="push_consumer", action="start")
    return d.rows()


def _consumed_by_both(b: TraceBuilder) -> None:
    """m8 is stored on broker-a:0 and consumed successfully by c1, then by c2 (a duplicate)."""
    _produce(b, "m8", BROKER_A)
    offset = b.max_offset(TOPIC, BROKER_A, 0) - 1
    b.pull(C1, GROUP, TOPIC, BROKER_A, 0, offset, label="pull:a0:m8:c1")
    b.consume(C1, GROUP, TOPIC, BROKER_A, 0, offset, "CONSUME_SUCCESS", label="m8:c1")
    b.pull(C2, GROUP, TOPIC, BROKER_A, 0, offset, label="pull:a0:m8:c2")
    b.consume(C2, GROUP, TOPIC, BROKER_A, 0, offset, "CONSUME_SUCCESS", label="m8:c2")


def _disagreeing_c2(b: TraceBuilder) -> None:
    """c2's view disagrees (it sees itself alone, as after a heartbeat lost to a restarted broker): AVG gives it
    both queues while c1 keeps broker-a:0, so broker-a:0 is a shared queue of G."""
    b.assign(C2, GROUP, TOPIC, [C2], all_queues=[QA, QB], expression="*", label="assign:c2:alone")


def _duplicate_shared_before() -> list[Row]:
    """broker-a:0 is shared while c2's view disagrees, but c2 rebalances back to broker-b:0 before m8 is stored:
    when c2 consumes m8 again after c1's success, the queue is not shared any more and nothing disturbed G."""
    def tail(b: TraceBuilder) -> None:
        _disagreeing_c2(b)
        b.assign(C2, GROUP, TOPIC, [C1, C2], all_queues=[QA, QB], expression="*", label="assign:c2:agree")
        _consumed_by_both(b)
    return _rows_of("violates-duplicates_allowed/shared_before", tail=tail)


# offset_no_regression -------------------------------------------------------------------------------------------

def _regression_without_cause() -> list[Row]:
    """broker-a:0's committed offset goes 3, 4, 5, then back to 4 with no disturbance since it was last below 4
    (3) and the queue owned by c1 alone."""
    d = _draft("violates-offset_no_regression/back_without_cause")
    last = d.row("pull:a0:4:commit")
    # Inserted after the same row, so they appear in the order 5, 4.
    d.insert("pull:a0:4:client", "offset.commit", BROKER_A, group=GROUP, topic=TOPIC, broker=BROKER_A,
             queue_id=0, offset=4, previous=last["offset"] + 1)
    d.insert("pull:a0:4:client", "offset.commit", BROKER_A, group=GROUP, topic=TOPIC, broker=BROKER_A,
             queue_id=0, offset=5, previous=last["offset"])
    return d.rows()


def _regression_after_excused_ones() -> list[Row]:
    """G's committed offset of TopicOther on broker-a:0 goes 1, (a fault), 9, 5, 3, 6, 4. The falls to 5 and 3 are
    excused: 1, the latest commit below them, came before the fault. The fall to 4 is not: 3, the latest commit
    below 4, came after it (the window starts at the latest earlier commit strictly lower, not the first)."""
    def tail(b: TraceBuilder) -> None:
        b.commit(BROKER_A, GROUP, OTHER_TOPIC, 0, 1)
        b.fault(BROKER_A, int(ResponseCode.SYSTEM_ERROR), "error", detail="a request to broker-a fails")
        for offset in (9, 5, 3, 6, 4):
            b.commit(BROKER_A, GROUP, OTHER_TOPIC, 0, offset)
    return _rows_of("violates-offset_no_regression/back_past_an_excused_regression", tail=tail)


# offset_not_past_unconsumed -------------------------------------------------------------------------------------

def _commit_before_success() -> list[Row]:
    """Offset 1 is committed on broker-a:0 while m2 (offset 0) is being consumed."""
    d = _draft("violates-offset_not_past_unconsumed/commit_before_success")
    d.insert("m2:deliver", "offset.commit", BROKER_A, group=GROUP, topic=TOPIC, broker=BROKER_A, queue_id=0,
             offset=1)
    return d.rows()


def _commit_before_sendback() -> list[Row]:
    """Offset 2 is committed after m3 (offset 1) failed but before it is sent back."""
    d = _draft("violates-offset_not_past_unconsumed/commit_before_sendback")
    d.insert("m3:result", "offset.commit", BROKER_A, group=GROUP, topic=TOPIC, broker=BROKER_A, queue_id=0,
             offset=2)
    d.set("pull:a0:2:commit", previous=2)
    return d.rows()


def _derived_commit_before_sendback() -> list[Row]:
    """As a tap records it (the delivery read from m3's pull answer, its listener's result not on the wire): offset
    2 is committed before m3 (offset 1) is sent back."""
    d = _draft("violates-offset_not_past_unconsumed/derived_commit_before_sendback")
    d.set("m3:deliver", derived=PULL_ANSWER)
    d.drop("m3:result")
    d.insert("m3:deliver", "offset.commit", BROKER_A, group=GROUP, topic=TOPIC, broker=BROKER_A, queue_id=0,
             offset=2)
    d.set("pull:a0:2:commit", previous=2)
    return d.rows()


def _allowed_derived_delivery_committed() -> list[Row]:
    """m2's delivery is derived from a pull answer: whether its listener succeeded is not on the wire, so a commit
    passing it is not judged (it is never sent back)."""
    d = _draft("allowed-derived_delivery_committed")
    d.set("m2:deliver", derived=PULL_ANSWER)
    d.insert("m2:deliver", "offset.commit", BROKER_A, group=GROUP, topic=TOPIC, broker=BROKER_A, queue_id=0,
             offset=1)
    return d.rows()


def _allowed_derived_client_pull_status() -> list[Row]:
    """A client-side pull.response a tap inferred from the code is not judged, however it reads."""
    d = _draft("allowed-derived_client_pull_status")
    d.set("pull:b0:0:client", status="NO_NEW_MSG", derived=PULL_ANSWER)
    return d.rows()


# single_owner ---------------------------------------------------------------------------------------------------

def _owner_wrong_allocation() -> list[Row]:
    """(a): c1's assignment after c2 joins lists nothing, though AVG gives it broker-a:0."""
    d = _draft("violates-single_owner/allocation")
    d.set("assign:c1:second", queues=[])
    return d.rows()


def _owner_overlap() -> list[Row]:
    """(b): with views agreeing, c2 lists both queues after its restart while c1 keeps broker-a:0 (rows carry no
    all_queues, so only the overlap is wrong)."""
    return _rows_of("violates-single_owner/overlap", with_all_queues=False, restart_queues=[QA, QB])


# pull_oracle ----------------------------------------------------------------------------------------------------

def _pull_wrong_next() -> list[Row]:
    """An OFFSET_OVERFLOW_ONE answer at offset 2 says next 3 (PULL-4 says 2)."""
    d = _draft("violates-pull_oracle/overflow_one_next")
    assert d.row("pull:a0:2:broker")["status"] == GetMessageStatus.OFFSET_OVERFLOW_ONE.value
    d.set("pull:a0:2:broker", next_offset=3)
    return d.rows()


def _pull_next_beyond_max() -> list[Row]:
    """A FOUND answer's next offset is past the queue's max (PULL-25)."""
    d = _draft("violates-pull_oracle/found_next_beyond_max")
    row = d.row("pull:a0:0:broker")
    assert row["status"] == GetMessageStatus.FOUND.value
    d.set("pull:a0:0:broker", next_offset=row["max_offset"] + 1)
    return d.rows()


def _pull_wrong_code() -> list[Row]:
    """A FOUND answer carries PULL_NOT_FOUND (PULL-10)."""
    d = _draft("violates-pull_oracle/found_code")
    d.set("pull:b0:0:broker", code=int(ResponseCode.PULL_NOT_FOUND))
    return d.rows()


def _pull_client_error_with_status() -> list[Row]:
    """The client reports ERROR for SUCCESS: ERROR is the status only of codes without a PullStatus (PULL-19)."""
    d = _draft("violates-pull_oracle/client_error_with_status")
    code = d.row("pull:b0:0:client")["code"]
    assert pull_status(ResponseCode(code)) is not None
    d.set("pull:b0:0:client", status=PULL_ERROR)
    return d.rows()


def _pull_wrong_client_status() -> list[Row]:
    """The client turns SUCCESS into NO_NEW_MSG (PULL-19)."""
    d = _draft("violates-pull_oracle/client_status")
    assert d.row("pull:b0:0:client")["code"] == int(ResponseCode.SUCCESS)
    d.set("pull:b0:0:client", status="NO_NEW_MSG")
    return d.rows()


# send_retry -----------------------------------------------------------------------------------------------------

def _send_too_many_attempts() -> list[Row]:
    """(a): with retryTimesWhenSendFailed 0 a SYNC send may make one attempt; m1 makes two."""
    d = _draft("violates-send_retry/too_many_attempts")
    d.set("attempt:m1:1", retry_times=0)
    d.set("attempt:m1:2", retry_times=0)
    return d.rows()


def _send_too_many_async_attempts() -> list[Row]:
    """(a): an ASYNC send with retryTimesWhenSendAsyncFailed 0 (retryTimesWhenSendFailed 2) makes two attempts."""
    d = _draft("violates-send_retry/too_many_async_attempts")
    d.set("attempt:m1:1", mode="ASYNC", retry_times_async=0)
    d.set("attempt:m1:2", mode="ASYNC", retry_times_async=0)
    return d.rows()


def _send_attempt_gap() -> list[Row]:
    """(a): m1's retry is numbered 3 right after attempt 1: attempts are numbered without gaps."""
    d = _draft("violates-send_retry/attempt_gap")
    d.set("attempt:m1:2", attempt=3)
    return d.rows()


def _send_attempt_repeated() -> list[Row]:
    """(a): m1's attempt 2 is sent twice: attempts are numbered 1, 2, ... without gaps or repeats."""
    d = _draft("violates-send_retry/attempt_repeated")
    again = {k: v for k, v in d.row("attempt:m1:2").items() if k not in ("trace_id", "seq", "ts_ms", "node", "kind")}
    d.insert("attempt:m1:2", "send.attempt", d.row("attempt:m1:2")["node"], **again)
    return d.rows()


def _send_oneway_retried() -> list[Row]:
    """(a): a ONEWAY send makes exactly one attempt (SEND-9); m1 makes two."""
    d = _draft("violates-send_retry/oneway_retried")
    d.set("attempt:m1:1", mode="ONEWAY")
    d.set("attempt:m1:2", mode="ONEWAY")
    return d.rows()


def _send_retry_after_final() -> list[Row]:
    """(b): m1's first attempt ended the send (final), yet a second attempt follows (SEND-21)."""
    d = _draft("violates-send_retry/retry_after_final")
    d.set("result:m1:1", final=True)
    return d.rows()


def _send_over_budget() -> list[Row]:
    """(c): m1's second attempt starts after its 2 ms timeout budget is spent (SEND-2)."""
    d = _draft("violates-send_retry/over_budget")
    elapsed = d.row("attempt:m1:2")["ts_ms"] - d.row("attempt:m1:1")["ts_ms"]
    assert elapsed > 2
    d.set("attempt:m1:1", timeout_ms=2)
    d.set("attempt:m1:2", timeout_ms=2)
    return d.rows()


def _same_broker(name: str, latency_fault: bool, mode: str = "SYNC") -> list[Row]:
    """m1's first attempt fails on broker-b and the retry goes to broker-b again, in ``mode``."""
    d = _draft(name)
    d.set("attempt:m1:1", broker=BROKER_B, latency_fault=latency_fault, mode=mode)
    d.set("result:m1:1", broker=BROKER_B)
    d.set("attempt:m1:2", latency_fault=latency_fault, mode=mode)
    return d.rows()


def _send_same_broker() -> list[Row]:
    """(d): m1's retry goes back to broker-b, which just failed, though broker-a is writable (SEND-13)."""
    return _same_broker("violates-send_retry/same_broker", latency_fault=False)


def _send_same_broker_after_an_allowed_one() -> list[Row]:
    """(d): on TopicOther, whose route offers broker-a writable and broker-b read-only, m9's retry goes back to
    broker-a (allowed: no other broker is writable), then m10's retry back to broker-b (a violation: broker-a is
    writable). Each is judged against the route its send started with, not the send just before it."""
    def tail(b: TraceBuilder) -> None:
        b.route_update(PRODUCER, OTHER_TOPIC, [f"{BROKER_A}:0:6", f"{BROKER_B}:0:4"])
        for msg_id, broker in (("m9", BROKER_A), ("m10", BROKER_B)):
            b.send(PRODUCER, OTHER_TOPIC, broker, 0, msg_id, 1)
            b.advance(3)
            b.send_result(PRODUCER, OTHER_TOPIC, broker, 0, msg_id, 1, "ERROR", final=False,
                          code=int(ResponseCode.SYSTEM_ERROR), latency_ms=3)
        for msg_id, broker in (("m9", BROKER_A), ("m10", BROKER_B)):
            b.send(PRODUCER, OTHER_TOPIC, broker, 0, msg_id, 2)
            put = b.store_put(broker, OTHER_TOPIC, 0, msg_id)
            b.send_result(PRODUCER, OTHER_TOPIC, broker, 0, msg_id, 2, "SEND_OK", final=True,
                          code=int(ResponseCode.SUCCESS), offset=put["offset"], latency_ms=1)
    return _rows_of("violates-send_retry/same_broker_after_an_allowed_one", tail=tail)


# transaction ----------------------------------------------------------------------------------------------------

def _txn_rolled_back_stored() -> list[Row]:
    """(b): rolled-back m7 is stored in a user topic (no group subscribes to it, so nothing else notices)."""
    def tail(b: TraceBuilder) -> None:
        b.store_put(BROKER_B, OTHER_TOPIC, 0, "m7", label="put:m7")
    return _rows_of("violates-transaction/rolled_back_stored", tail=tail)


def _txn_rolled_back_delivered() -> list[Row]:
    """(b): rolled-back m7 is delivered to a listener."""
    def tail(b: TraceBuilder) -> None:
        b.deliver(C2, GROUP, TOPIC, BROKER_B, 0, 2, msg_id="m7", reconsume_times=0, label="deliver:m7")
    return _rows_of("violates-transaction/rolled_back_delivered", tail=tail)


def _txn_resolved_twice() -> list[Row]:
    """(a): the broker commits m6 a second time though the producer sent one END_TRANSACTION and no request was
    duplicated (TXN-11)."""
    def tail(b: TraceBuilder) -> None:
        b.txn_end(BROKER_A, "m6", "t1", "COMMIT_MESSAGE", from_check=False, result=TXN_COMMITTED,
                  label="end:m6:broker:again")
    return _rows_of("violates-transaction/resolved_twice", tail=tail)


def _txn_resolved_twice_after_unknown_answer() -> list[Row]:
    """(a): m6 is checked after its commit and the producer answers UNKNOW, which decides nothing; the broker
    still resolves m6 again, rolling it back: two resolutions from one deciding END_TRANSACTION."""
    def tail(b: TraceBuilder) -> None:
        b.txn_check(BROKER_A, "m6", "t1", 1, label="check:m6")
        b.txn_end(PRODUCER, "m6", "t1", "UNKNOW", from_check=True)
        b.txn_end(BROKER_A, "m6", "t1", "UNKNOW", from_check=True, result=TXN_ROLLED_BACK,
                  label="end:m6:broker:again")
    return _rows_of("violates-transaction/resolved_twice_after_unknown_answer", tail=tail)


def _txn_check_over_max() -> list[Row]:
    """(c): a second check of m7 with transactionCheckMax 1 (TXN-22)."""
    d = _draft("violates-transaction/check_over_max")
    d.set("check:m7", check_times=2, check_max=1)
    return d.rows()


def _txn_check_after_discard() -> list[Row]:
    """(c): broker-b checks m7 after broker-b itself discarded it (TXN-23)."""
    d = _draft("violates-transaction/check_after_discard")
    d.insert("check:m7", "txn.check", BROKER_B, after=False, group=PRODUCER_GROUP, msg_id="m7",
             transaction_id="t2", check_times=1, action="discard", check_max=15)
    return d.rows()


# retry_delay_dlq ------------------------------------------------------------------------------------------------

def _m3_fails_again() -> tuple[Any, int]:
    """m3's count-1 copy fails again (max 3): what consumer_send_back makes of it (a count-2 copy to %RETRY%G with a
    level) and that level's delay."""
    again = consumer_send_back(1, 0, header_max_reconsume_times=3, group=GROUP)
    assert again.topic == RETRY_TOPIC and again.delay_level >= 1
    return again, delay_millis(again.delay_level)


def _m3_sent_back_by_broker_a(b: TraceBuilder, again: Any, label: str) -> Row:
    return b.broker_sendback(BROKER_A, RETRY_TOPIC, "m3", again.reconsume_times, again.topic,
                             delay_level=again.delay_level, max_reconsume_times=3, label=label)


def _m3_copy_stored(b: TraceBuilder, again: Any, label: str | None = None) -> Row:
    return b.store_put(BROKER_A, RETRY_TOPIC, 0, "m3", reconsume_times=again.reconsume_times, label=label)


def _two_copies_of_m3(name: str, second_early_ms: int, *, first_by_client: bool = False) -> list[Row]:
    """Two count-2 copies of m3, both delayed by level 4 (30 s): the first stored when due, the second
    ``second_early_ms`` before its due time.

    By default c1 and then c2 consume m3's count-1 copy after a rebalance and both send it back: broker-a makes two
    copies 2 s apart; pairing the second sendback with the first put after it (the first copy, stored 2 s before
    the second's due time) would misjudge, so rule (b) pairs them k-th with k-th. With ``first_by_client``, c1's
    sendback request fails and c1 stores the first copy itself through the schedule topic (a via-client sendback
    row, RETRY-16); the request reaches broker-a anyway, 200 ms later, and broker-a makes the second: pairing
    broker-a's sendback with the first put would misjudge, so rule (b) pairs the copies in the order they are due."""
    def tail(b: TraceBuilder) -> None:
        again, delay = _m3_fails_again()
        if first_by_client:
            first = b.sendback(C1, GROUP, RETRY_TOPIC, "m3", again.reconsume_times, RETRY_TOPIC,
                               delay_level=again.delay_level, via="client", max_reconsume_times=3,
                               label="sendback:m3:c1")
            b.advance(200)
        else:
            first = _m3_sent_back_by_broker_a(b, again, "sendback:m3:c1")
            b.advance(2_000)
        second = _m3_sent_back_by_broker_a(b, again, "sendback:m3:c2")
        b.now = first["ts_ms"] + delay
        _m3_copy_stored(b, again, "put:m3:c1")
        b.now = second["ts_ms"] + delay - second_early_ms
        _m3_copy_stored(b, again, "put:m3:c2")
    return _rows_of(name, tail=tail)


def _retry_broker_copy_early_beside_client_copy() -> list[Row]:
    """(b): beside c1's own copy of m3 (stored when due), broker-a's copy is stored 1 ms before its delay; the
    violation names broker-a's sendback."""
    return _two_copies_of_m3("violates-retry_delay_dlq/broker_copy_early_beside_client_copy", 1,
                             first_by_client=True)


def _allowed_retry_copy_delivered_twice() -> list[Row]:
    """(b): broker-a's schedule service stores m3's count-2 copy twice (a put it made answered other than PUT_OK,
    so it delivered again), the second time before a later sendback's copy is due: with more puts than copies made
    the pairing is unknown, so the copy is not judged, counted as stored_twice."""
    def tail(b: TraceBuilder) -> None:
        again, delay = _m3_fails_again()
        first = _m3_sent_back_by_broker_a(b, again, "sendback:m3:c1")
        b.advance(10_000)
        second = _m3_sent_back_by_broker_a(b, again, "sendback:m3:c2")
        b.now = first["ts_ms"] + delay
        _m3_copy_stored(b, again)
        b.advance(5_000)
        _m3_copy_stored(b, again)
        b.now = second["ts_ms"] + delay
        _m3_copy_stored(b, again)
    return _rows_of("allowed-retry_copy_delivered_twice", tail=tail)


def _allowed_client_copy_due_first() -> list[Row]:
    """(b): c1's own copy of m3 and broker-a's, 200 ms apart, each stored when due."""
    return _two_copies_of_m3("allowed-client_copy_due_first", 0, first_by_client=True)


def _retry_second_copy_too_early() -> list[Row]:
    """(b): of two sendbacks of m3 with the same count, the second one's copy is stored 1 ms before its delay
    (RETRY-8); the violation names the second sendback."""
    return _two_copies_of_m3("violates-retry_delay_dlq/second_copy_too_early", 1)


def _retry_copy_early_beside_a_dead_letter() -> list[Row]:
    """(b): c1 and c2 both consume m3's count-1 copy after a rebalance. c1 asks for level -1, so broker-a
    dead-letters it undelayed (RETRY-7); c2's sendback makes a count-2 retry copy with a level, stored 1 ms before
    its delay. Only copies to the retry topic pair with its puts: pairing the dead letter (made first) with the
    retry put would leave the early copy unjudged."""
    def tail(b: TraceBuilder) -> None:
        again, delay = _m3_fails_again()
        b.broker_sendback(BROKER_A, RETRY_TOPIC, "m3", again.reconsume_times, DLQ_TOPIC, delay_level=0,
                          max_reconsume_times=3, label="sendback:m3:dlq")
        b.store_put(BROKER_A, DLQ_TOPIC, 0, "m3", reconsume_times=again.reconsume_times, label="put:m3:dlq")
        b.advance(2_000)
        second = _m3_sent_back_by_broker_a(b, again, "sendback:m3:c2")
        b.now = second["ts_ms"] + delay - 1
        _m3_copy_stored(b, again, "put:m3:c2")
    return _rows_of("violates-retry_delay_dlq/copy_early_beside_a_dead_letter", tail=tail)


def _dlq_below_limit(name: str, copy_level: int) -> list[Row]:
    """m5's second failure (stored count 1) goes to the DLQ with max_reconsume_times unset (16), the copy delayed
    by ``copy_level``."""
    d = _draft(name)
    row = d.row("sendback:m5:dlq")
    assert row["target"] == DLQ_TOPIC and row["reconsume_times"] == 2 and row["delay_level"] == 0
    below = consumer_send_back(row["reconsume_times"] - 1, 0, header_max_reconsume_times=None, group=GROUP)
    assert below.topic == RETRY_TOPIC  # the default limit does not dead-letter it: only a request level < 0 does
    d.set("sendback:m5:dlq", max_reconsume_times=None, delay_level=copy_level)
    return d.rows()


def _retry_dlq_before_default_limit() -> list[Row]:
    """(a): without max_reconsume_times the limit is 16, so m5's second failure (r = 1) may go to the DLQ only
    undelayed (a request level < 0); this copy claims level 4."""
    return _dlq_below_limit("violates-retry_delay_dlq/dlq_before_default_limit", 4)


def _retry_wrong_target() -> list[Row]:
    """(a): m3's first failure (r = 0 < max 1) goes to the DLQ with the retry copy's level 3: below the max, a DLQ
    copy has level 0 (RETRY-7), a delayed one belongs in %RETRY%G."""
    d = _draft("violates-retry_delay_dlq/wrong_target")
    assert d.row("sendback:m3")["delay_level"] == 3
    d.set("sendback:m3", target=DLQ_TOPIC)
    return d.rows()


def _retry_past_limit() -> list[Row]:
    """(a): m5's second failure (r = 1 >= max 1) goes to %RETRY%G delayed by level 4 instead of the DLQ."""
    d = _draft("violates-retry_delay_dlq/retry_past_limit")
    row = d.row("sendback:m5:dlq")
    again = consumer_send_back(row["reconsume_times"] - 1, 0, header_max_reconsume_times=None, group=GROUP)
    d.set("sendback:m5:dlq", target=RETRY_TOPIC, delay_level=again.delay_level)
    return d.rows()


def _retry_too_early() -> list[Row]:
    """(b): m3's copy is delayed by level 4 (30 s) but is stored 10 s after the sendback (RETRY-8)."""
    d = _draft("violates-retry_delay_dlq/too_early")
    waited = d.row("put:m3:retry")["ts_ms"] - d.row("sendback:m3")["ts_ms"]
    assert delay_millis(3) <= waited < delay_millis(4)
    d.set("sendback:m3", delay_level=4)
    return d.rows()


def _retry_dlq_consumed() -> list[Row]:
    """(c): the DLQ copy of m5 is delivered to the group (RETRY-27)."""
    def tail(b: TraceBuilder) -> None:
        b.deliver(C1, GROUP, DLQ_TOPIC, BROKER_A, 0, 0, label="deliver:m5:dlq")
    return _rows_of("violates-retry_delay_dlq/dlq_consumed", tail=tail)


# allowed --------------------------------------------------------------------------------------------------------

def _allowed_retry_copy_matched_by_count() -> list[Row]:
    """(b) waits for the copy with the sendback's reconsume_times: m3 fails again in %RETRY%G and is sent back as
    count 2 delayed by level 4; copies of m3 with counts 1 (a late duplicate) and 3 are stored at once, the count 2
    copy after the 30 s the level gives (RETRY-8)."""
    def tail(b: TraceBuilder) -> None:
        again = consumer_send_back(1, 0, header_max_reconsume_times=3, group=GROUP)
        assert again.topic == RETRY_TOPIC
        b.broker_sendback(BROKER_A, RETRY_TOPIC, "m3", again.reconsume_times, again.topic,
                          delay_level=again.delay_level, max_reconsume_times=3, label="sendback:m3:again")
        for other in (again.reconsume_times - 1, again.reconsume_times + 1):
            b.store_put(BROKER_A, RETRY_TOPIC, 0, "m3", reconsume_times=other)
        b.advance(delay_millis(again.delay_level))
        b.store_put(BROKER_A, RETRY_TOPIC, 0, "m3", reconsume_times=again.reconsume_times, label="put:m3:retry:2")
    return _rows_of("allowed-retry_copy_matched_by_count", tail=tail)


def _allowed_two_send_backs_same_count() -> list[Row]:
    """(b) pairs the k-th sendback of (m3, count 2) with the k-th put: both copies are stored on time."""
    return _two_copies_of_m3("allowed-two_send_backs_same_count", 0)


def _allowed_retry_put_before_send_back() -> list[Row]:
    """m3 is sent back with count 2 first by c1's fallback send (via client: the client's producer stores the copy
    at once), then by c2 through broker-a, whose copy is delayed by level 4 (30 s): the put before the broker's
    sendback is not paired with it (rule (b) pairs the puts after the first broker-side sendback)."""
    def tail(b: TraceBuilder) -> None:
        again = consumer_send_back(1, 0, header_max_reconsume_times=3, group=GROUP)
        b.sendback(C1, GROUP, RETRY_TOPIC, "m3", again.reconsume_times, RETRY_TOPIC, delay_level=again.delay_level,
                   via="client", max_reconsume_times=3)
        b.store_put(BROKER_A, RETRY_TOPIC, 0, "m3", reconsume_times=again.reconsume_times, label="put:m3:client")
        sent = b.broker_sendback(BROKER_A, RETRY_TOPIC, "m3", again.reconsume_times, again.topic,
                                 delay_level=again.delay_level, max_reconsume_times=3, label="sendback:m3:broker")
        b.now = sent["ts_ms"] + delay_millis(again.delay_level)
        b.store_put(BROKER_A, RETRY_TOPIC, 0, "m3", reconsume_times=again.reconsume_times, label="put:m3:broker")
    return _rows_of("allowed-retry_put_before_send_back", tail=tail)


def _allowed_client_send_back_reports() -> list[Row]:
    """Each consumer also reports its successful CONSUMER_SEND_MSG_BACK (via broker, node = the client, no broker
    column) a moment after the broker's row, with the request's delay level 0: retry_delay_dlq reads only the
    broker's row (a client report of a %RETRY% copy with level 0 would break (a) if it were read)."""
    d = _draft("allowed-client_send_back_reports")
    for label in ("sendback:m3", "sendback:m5", "sendback:m5:dlq"):
        broker_row = d.row(label)
        assert broker_row["node"] == broker_row["broker"]
        report = d.insert(label, "sendback", C1, group=GROUP, topic=broker_row["topic"], msg_id=broker_row["msg_id"],
                          reconsume_times=broker_row["reconsume_times"], delay_level=0, target=broker_row["target"],
                          via="broker", max_reconsume_times=broker_row.get("max_reconsume_times"))
        report["ts_ms"] += 1
    assert d.row("sendback:m3")["target"] == RETRY_TOPIC
    return d.rows()


def _allowed_check_after_other_broker_discard() -> list[Row]:
    """m7's transactional send was retried from broker-a to broker-b, leaving a half on each: broker-a discards its
    half, and broker-b still checks its own (TXN-23 is per broker)."""
    d = _draft("allowed-check_after_other_broker_discard")
    half = d.row("half:m7")
    d.insert("half:m7", "txn.half", BROKER_A, after=False, group=half["group"], topic=half["topic"], msg_id="m7",
             transaction_id=half["transaction_id"], offset=1)
    d.insert("check:m7", "txn.check", BROKER_A, after=False, group=PRODUCER_GROUP, msg_id="m7",
             transaction_id=half["transaction_id"], check_times=1, action="discard", check_max=15)
    return d.rows()


def _allowed_dlq_requested_below_max() -> list[Row]:
    """m5's second failure goes to the DLQ undelayed below the default limit 16: the consumer asked for a level
    < 0 (RETRY-7)."""
    return _dlq_below_limit("allowed-dlq_requested_below_max", 0)


def _allowed_duplicate_after_rebalance() -> list[Row]:
    """c2 crashes and c1 takes broker-b:0 over: m4 comes again after a rebalance (REB-20)."""
    return _rows_of("allowed-duplicate_after_rebalance", takeover=True)


def _allowed_duplicate_stored_twice() -> list[Row]:
    """m9's first attempt times out after the store and the retry stores it again on broker-b: both copies are
    consumed (SEND-3)."""
    def tail(b: TraceBuilder) -> None:
        b.send(PRODUCER, TOPIC, BROKER_A, 0, "m9", 1, label="attempt:m9:1")
        b.store_put(BROKER_A, TOPIC, 0, "m9", label="put:m9:a")
        b.advance(3)
        b.send_result(PRODUCER, TOPIC, BROKER_A, 0, "m9", 1, "ERROR", final=False, error="RemotingTimeoutException")
        b.send(PRODUCER, TOPIC, BROKER_B, 0, "m9", 2, label="attempt:m9:2")
        b.store_put(BROKER_B, TOPIC, 0, "m9", label="put:m9:b")
        b.send_result(PRODUCER, TOPIC, BROKER_B, 0, "m9", 2, "SEND_OK", final=True, code=0, offset=2)
        b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 4, label="pull:a0:4:m9")
        b.consume(C1, GROUP, TOPIC, BROKER_A, 0, 4, "CONSUME_SUCCESS", label="m9:a")
        b.pull(C2, GROUP, TOPIC, BROKER_B, 0, 2, label="pull:b0:2:m9")
        b.consume(C2, GROUP, TOPIC, BROKER_B, 0, 2, "CONSUME_SUCCESS", label="m9:b")
    return _rows_of("allowed-duplicate_stored_twice", tail=tail)


def _allowed_regression_after_offset_illegal() -> list[Row]:
    """c1 commits a stale offset 7 beyond broker-a:0's max 4; the pull there answers OFFSET_OVERFLOW_BADLY
    (PULL-5), the client OFFSET_ILLEGAL, and the commit of the corrected 4 moves back (PULL-22)."""
    def tail(b: TraceBuilder) -> None:
        b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 7, commit_offset=7, label="pull:a0:7")
        b.offset_update(C1, GROUP, TOPIC, BROKER_A, 0, 4, increase_only=False)
        b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 4, commit_offset=4, label="pull:a0:4:fixed")
    return _rows_of("allowed-regression_after_offset_illegal", tail=tail)


def _allowed_duplicate_shared_queue() -> list[Row]:
    """c2's view disagrees before m8 is stored, so c1 and c2 both list broker-a:0 and both consume m8: a duplicate
    with no disturbance since m8's store.put, put down to the shared queue."""
    def tail(b: TraceBuilder) -> None:
        _disagreeing_c2(b)
        _consumed_by_both(b)
    return _rows_of("allowed-duplicate_shared_queue", tail=tail)


def _allowed_regression_wider_window() -> list[Row]:
    """broker-a:0's committed offset is 3, then 4; an injected fault; m8 stored, 4 again, m8 consumed and 5; then a
    stale 4 lands (an old owner's late persist). Since the last 4 nothing happened, but since the offset was last
    below 4 (3) the fault did: allowed."""
    def tail(b: TraceBuilder) -> None:
        b.fault(BROKER_A, int(ResponseCode.SYSTEM_ERROR), "error", detail="a request to broker-a fails",
                label="fault:late")
        _produce(b, "m8", BROKER_A)
        b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 4, commit_offset=4, label="pull:a0:4:again")
        b.consume(C1, GROUP, TOPIC, BROKER_A, 0, 4, "CONSUME_SUCCESS", label="m8")
        b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 5, commit_offset=5, label="pull:a0:5")
        b.commit(BROKER_A, GROUP, TOPIC, 0, 4, label="commit:a0:4:stale")
    return _rows_of("allowed-regression_wider_window", tail=tail)


def _allowed_txn_double_commit() -> list[Row]:
    """t1 is checked after its commit and the answer commits it again: two END_TRANSACTIONs, two resolutions and
    two copies of m6 (TXN-11); the second copy is consumed again (a duplicate stored twice)."""
    def tail(b: TraceBuilder) -> None:
        b.txn_check(BROKER_A, "m6", "t1", 1, label="check:m6")
        b.txn_end(PRODUCER, "m6", "t1", "COMMIT_MESSAGE", from_check=True)
        b.txn_end(BROKER_A, "m6", "t1", "COMMIT_MESSAGE", from_check=True, result=TXN_COMMITTED)
        b.store_put(BROKER_A, TOPIC, 0, "m6", label="put:m6:again")
        b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 4, label="pull:a0:4:m6")
        b.consume(C1, GROUP, TOPIC, BROKER_A, 0, 4, "CONSUME_SUCCESS", label="m6:again")
    return _rows_of("allowed-txn_double_commit", tail=tail)


def _allowed_txn_duplicated_end() -> list[Row]:
    """The producer's one END_TRANSACTION for m6 is duplicated by an injected fault: the broker commits m6 twice
    and stores it twice; the group consumes both copies (TXN-11, TXN-25; a duplicate stored twice)."""
    def tail(b: TraceBuilder) -> None:
        b.fault(BROKER_A, int(ResponseCode.SUCCESS), DUPLICATE_FAULT, detail="END_TRANSACTION of t1 sent twice")
        b.txn_end(BROKER_A, "m6", "t1", "COMMIT_MESSAGE", from_check=False, result=TXN_COMMITTED)
        b.store_put(BROKER_A, TOPIC, 0, "m6", label="put:m6:again")
        b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 4, label="pull:a0:4:m6")
        b.consume(C1, GROUP, TOPIC, BROKER_A, 0, 4, "CONSUME_SUCCESS", label="m6:again")
    return _rows_of("allowed-txn_duplicated_end", tail=tail)


def _allowed_unsettled_undelivered() -> list[Row]:
    """The run is cut with m8 not yet consumed: no_lost_message skips the trace."""
    return _rows_of("allowed-unsettled_undelivered", tail=_undelivered_tail(), status=schema.CUT)


def _allowed_tag_not_subscribed() -> list[Row]:
    """The group subscribes to tagA; m8 has tagB and is never consumed."""
    return _rows_of("allowed-tag_not_subscribed", tail=_undelivered_tail("tagB"), expression="tagA")


def _allowed_deleted_before_delivery() -> list[Row]:
    """m8 is deleted from the store (min offset past it) before anybody consumed it."""
    def tail(b: TraceBuilder) -> None:
        _produce(b, "m8", BROKER_A)
        b.store_delete(BROKER_A, TOPIC, 0, 5, label="delete:a0")
    return _rows_of("allowed-deleted_before_delivery", tail=tail)


def _lost_deleted_up_to_the_copy() -> list[Row]:
    """(b): the queue's data is deleted up to m8's offset (min offset == m8's): m8 itself is still there, due to G,
    and never consumed (only a min offset past the copy exempts it)."""
    def tail(b: TraceBuilder) -> None:
        _produce(b, "m8", BROKER_A)
        b.store_delete(BROKER_A, TOPIC, 0, b.labels["put:m8"]["offset"], label="delete:a0")
    return _rows_of("violates-no_lost_message/deleted_up_to_the_copy", tail=tail)


def _allowed_retry_level_one() -> list[Row]:
    """A broker sends m3's retry copy with delay level 1 (a consumer's explicit level): any level >= 1 is a retry."""
    d = _draft("allowed-retry_level_one")
    d.set("sendback:m3", delay_level=1)
    return d.rows()


def _allowed_late_group() -> list[Row]:
    """Group G2 subscribes after every message was stored and consumes nothing: nothing was due to it."""
    def tail(b: TraceBuilder) -> None:
        b.lifecycle(C3, OTHER_GROUP, "push_consumer", "start")
        b.assign(C3, OTHER_GROUP, TOPIC, [C3], all_queues=[QA, QB])
    return _rows_of("allowed-late_group", tail=tail)


def _allowed_undelivered_group_gone() -> list[Row]:
    """m8 is stored, then every consumer of G shuts down: with no live consumer nothing is due to G."""
    def tail(b: TraceBuilder) -> None:
        _produce(b, "m8", BROKER_A)
        b.lifecycle(C1, GROUP, "push_consumer", "shutdown")
        b.lifecycle(C2, GROUP, "push_consumer", "shutdown")
    return _rows_of("allowed-undelivered_group_gone", tail=tail)


def _allowed_duplicate_retry_copy_stored_twice() -> list[Row]:
    """m3's retry copy is stored twice with the same reconsume_times and both are consumed (RETRY-18)."""
    def tail(b: TraceBuilder) -> None:
        b.store_put(BROKER_A, RETRY_TOPIC, 0, "m3", reconsume_times=1, label="put:m3:retry:again")
        b.pull(C1, GROUP, RETRY_TOPIC, BROKER_A, 0, 2, label="pull:retry:2:again")
        b.consume(C1, GROUP, RETRY_TOPIC, BROKER_A, 0, 2, "CONSUME_SUCCESS", label="m3:retry:again")
    return _rows_of("allowed-duplicate_retry_copy_stored_twice", tail=tail)


def _commit_past(name: str, kind: str, node: str, **fields: Any) -> list[Row]:
    """Offset 1 is committed while m2 (offset 0) is in the listener, just after a row that excuses it."""
    d = _draft(name)
    d.insert("m2:deliver", "offset.commit", BROKER_A, group=GROUP, topic=TOPIC, broker=BROKER_A, queue_id=0,
             offset=1)
    d.insert("m2:deliver", kind, node, topic=TOPIC, broker=BROKER_A, queue_id=0, **fields)
    return d.rows()


def _allowed_commit_past_after_offset_illegal() -> list[Row]:
    """The commit passes m2 after the client saw OFFSET_ILLEGAL for the queue (OFF-18, PULL-22)."""
    return _commit_past("allowed-commit_past_after_offset_illegal", "pull.response", C1, group=GROUP, offset=0,
                        status="OFFSET_ILLEGAL", code=int(ResponseCode.PULL_OFFSET_MOVED), next_offset=1)


def _allowed_regression_after_admin_reset() -> list[Row]:
    """G's committed offset of TopicOther on broker-a:0 goes 1, 9, then an administrator sets it to 2 (an
    UPDATE_CONSUMER_OFFSET of no registered consumer: offset.reset) and the consumer commits 5: back from 9,
    excused by the reset (cause reset); the reset itself is no commit, so it is not judged."""
    def tail(b: TraceBuilder) -> None:
        for offset in (1, 9):
            b.commit(BROKER_A, GROUP, OTHER_TOPIC, 0, offset)
        b.emit(BROKER_A, "offset.reset", group=GROUP, topic=OTHER_TOPIC, broker=BROKER_A, queue_id=0, offset=2,
               action=schema.RESET_UPDATE)
        b.commit(BROKER_A, GROUP, OTHER_TOPIC, 0, 5)
    return _rows_of("allowed-regression_after_admin_reset", tail=tail)


def _allowed_commit_past_after_reset() -> list[Row]:
    """The commit passes m2 after an administrator reset the key past it (INVOKE_BROKER_TO_RESET_OFFSET)."""
    return _commit_past("allowed-commit_past_after_reset", "offset.reset", BROKER_A, group=GROUP, offset=1,
                        action=schema.RESET_INVOKED, derived=schema.RESET_ANSWER)


def _allowed_commit_past_after_deletion() -> list[Row]:
    """The commit passes m2 after the store deleted it (min offset 1)."""
    return _commit_past("allowed-commit_past_after_deletion", "store.delete", BROKER_A, offset=1)


def _allowed_same_broker_no_other_writable() -> list[Row]:
    """m1's retry goes to the same broker because broker-a's queue is read-only in the producer's route."""
    d = _draft("allowed-same_broker_no_other_writable")
    d.set("route", queues=[f"{BROKER_A}:0:4", f"{BROKER_B}:0:6"])
    d.set("attempt:m1:1", broker=BROKER_B)
    d.set("result:m1:1", broker=BROKER_B)
    return d.rows()


def _allowed_route_arrived_during_send() -> list[Row]:
    """m1 starts when the route offers only broker-b for writing; broker-a becomes writable while attempt 1 is in
    flight, and the retry goes to broker-b again: a send selects from the publish info it started with."""
    d = _draft("allowed-route_arrived_during_send")
    d.set("route", queues=[f"{BROKER_A}:0:4", f"{BROKER_B}:0:6"])
    d.set("attempt:m1:1", broker=BROKER_B)
    d.set("result:m1:1", broker=BROKER_B)
    d.insert("attempt:m1:1", "route.update", PRODUCER, topic=TOPIC, queues=[f"{BROKER_A}:0:6", f"{BROKER_B}:0:6"])
    return d.rows()


def _allowed_check_max_zero() -> list[Row]:
    """transactionCheckMax 0 still allows the first check (max(check_max, 1))."""
    d = _draft("allowed-check_max_zero")
    d.set("check:m7", check_max=0)
    return d.rows()


def _allowed_broadcasting_duplicate() -> list[Row]:
    """A BROADCASTING group consumes m2 twice with no cause and most messages never: its delivery is not checked."""
    def tail(b: TraceBuilder) -> None:
        b.pull(C3, BROADCAST_GROUP, TOPIC, BROKER_A, 0, 0)
        b.consume(C3, BROADCAST_GROUP, TOPIC, BROKER_A, 0, 0, "CONSUME_SUCCESS")
        b.consume(C3, BROADCAST_GROUP, TOPIC, BROKER_A, 0, 0, "CONSUME_SUCCESS")
    return _rows_of("allowed-broadcasting_duplicate", broadcasting=True, tail=tail)


def _allowed_broadcasting_then_clustering_duplicate() -> list[Row]:
    """A BROADCASTING group's duplicate of m2 (not checked), then c1 of the clustering group G consumes m2 again:
    that later duplicate is still judged, and allowed by the rebalance since m2 was stored (c2 joining)."""
    def tail(b: TraceBuilder) -> None:
        b.pull(C3, BROADCAST_GROUP, TOPIC, BROKER_A, 0, 0)
        b.consume(C3, BROADCAST_GROUP, TOPIC, BROKER_A, 0, 0, "CONSUME_SUCCESS")
        b.consume(C3, BROADCAST_GROUP, TOPIC, BROKER_A, 0, 0, "CONSUME_SUCCESS")
        b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 0)
        b.consume(C1, GROUP, TOPIC, BROKER_A, 0, 0, "CONSUME_SUCCESS")
    return _rows_of("allowed-broadcasting_then_clustering_duplicate", broadcasting=True, tail=tail)


def _allowed_same_broker_async() -> list[Row]:
    """m1's ASYNC retry goes back to broker-b, which just failed: (d) holds for SYNC sends only (an ASYNC retry of a
    selector send keeps its broker)."""
    return _same_broker("allowed-same_broker_async", latency_fault=False, mode="ASYNC")


def _allowed_pull_error_without_status() -> list[Row]:
    """broker-a answers a pull with SYSTEM_ERROR, a code with no PullStatus: the client reports ERROR (it raises
    MQBrokerException, PULL-19)."""
    code = ResponseCode.SYSTEM_ERROR
    assert pull_status(code) is None

    def tail(b: TraceBuilder) -> None:
        b.pull_request(C1, GROUP, TOPIC, BROKER_A, 0, 4, label="pull:a0:4:error:request")
        b.pull_response_client(C1, GROUP, TOPIC, BROKER_A, 0, 4, PULL_ERROR, code=int(code), next_offset=None,
                               label="pull:a0:4:error:client")
    return _rows_of("allowed-pull_error_without_status", tail=tail)


def _allowed_recommit_after_regression() -> list[Row]:
    """After the allowed regression (7 back to 4, after OFFSET_ILLEGAL), 4 is committed again with nothing in
    between: re-committing the same value is no regression (OFF-8)."""
    def tail(b: TraceBuilder) -> None:
        b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 7, commit_offset=7, label="pull:a0:7")
        b.offset_update(C1, GROUP, TOPIC, BROKER_A, 0, 4, increase_only=False)
        b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 4, commit_offset=4, label="pull:a0:4:fixed")
        b.pull(C1, GROUP, TOPIC, BROKER_A, 0, 4, commit_offset=4, label="pull:a0:4:again")
    return _rows_of("allowed-recommit_after_regression", tail=tail)


def _allowed_same_broker_latency_fault() -> list[Row]:
    """m1's retry goes to the same broker, as sendLatencyFaultEnable allows."""
    return _same_broker("allowed-same_broker_latency_fault", latency_fault=True)


#: Variants that violate exactly the invariant named before the '/', exactly once.
VIOLATIONS: dict[str, Callable[[], list[Row]]] = {
    "no_lost_message/ack_not_stored": _lost_ack_not_stored,
    "no_lost_message/ack_not_stored_cut": _lost_ack_not_stored_cut,
    "no_lost_message/not_delivered": _lost_not_delivered,
    "no_lost_message/consumed_never": _lost_consumed_never,
    "no_lost_message/dlq_copy_missing": _lost_dlq_copy_missing,
    "duplicates_allowed/no_cause": _duplicate_without_cause,
    "duplicates_allowed/other_group_disturbed": _duplicate_other_group_disturbed,
    "duplicates_allowed/shared_before": _duplicate_shared_before,
    "offset_no_regression/back_without_cause": _regression_without_cause,
    "offset_no_regression/back_past_an_excused_regression": _regression_after_excused_ones,
    "offset_not_past_unconsumed/commit_before_success": _commit_before_success,
    "offset_not_past_unconsumed/commit_before_sendback": _commit_before_sendback,
    "single_owner/allocation": _owner_wrong_allocation,
    "single_owner/overlap": _owner_overlap,
    "pull_oracle/overflow_one_next": _pull_wrong_next,
    "pull_oracle/found_next_beyond_max": _pull_next_beyond_max,
    "pull_oracle/found_code": _pull_wrong_code,
    "pull_oracle/client_status": _pull_wrong_client_status,
    "pull_oracle/client_error_with_status": _pull_client_error_with_status,
    "send_retry/too_many_attempts": _send_too_many_attempts,
    "send_retry/too_many_async_attempts": _send_too_many_async_attempts,
    "send_retry/oneway_retried": _send_oneway_retried,
    "send_retry/attempt_gap": _send_attempt_gap,
    "send_retry/attempt_repeated": _send_attempt_repeated,
    "no_lost_message/deleted_up_to_the_copy": _lost_deleted_up_to_the_copy,
    "send_retry/retry_after_final": _send_retry_after_final,
    "send_retry/over_budget": _send_over_budget,
    "send_retry/same_broker": _send_same_broker,
    "send_retry/same_broker_after_an_allowed_one": _send_same_broker_after_an_allowed_one,
    "transaction/resolved_twice": _txn_resolved_twice,
    "transaction/resolved_twice_after_unknown_answer": _txn_resolved_twice_after_unknown_answer,
    "transaction/rolled_back_stored": _txn_rolled_back_stored,
    "transaction/rolled_back_delivered": _txn_rolled_back_delivered,
    "transaction/check_over_max": _txn_check_over_max,
    "transaction/check_after_discard": _txn_check_after_discard,
    "offset_not_past_unconsumed/derived_commit_before_sendback": _derived_commit_before_sendback,
    "retry_delay_dlq/wrong_target": _retry_wrong_target,
    "retry_delay_dlq/too_early": _retry_too_early,
    "retry_delay_dlq/dlq_consumed": _retry_dlq_consumed,
    "retry_delay_dlq/dlq_before_default_limit": _retry_dlq_before_default_limit,
    "retry_delay_dlq/retry_past_limit": _retry_past_limit,
    "retry_delay_dlq/second_copy_too_early": _retry_second_copy_too_early,
    "retry_delay_dlq/broker_copy_early_beside_client_copy": _retry_broker_copy_early_beside_client_copy,
    "retry_delay_dlq/copy_early_beside_a_dead_letter": _retry_copy_early_beside_a_dead_letter,
}

#: Variants that look suspicious but violate nothing.
ALLOWED: dict[str, Callable[[], list[Row]]] = {
    "route_arrived_during_send": _allowed_route_arrived_during_send,
    "duplicate_after_rebalance": _allowed_duplicate_after_rebalance,
    "duplicate_stored_twice": _allowed_duplicate_stored_twice,
    "regression_after_offset_illegal": _allowed_regression_after_offset_illegal,
    "txn_double_commit": _allowed_txn_double_commit,
    "txn_duplicated_end": _allowed_txn_duplicated_end,
    "unsettled_undelivered": _allowed_unsettled_undelivered,
    "tag_not_subscribed": _allowed_tag_not_subscribed,
    "deleted_before_delivery": _allowed_deleted_before_delivery,
    "same_broker_latency_fault": _allowed_same_broker_latency_fault,
    "same_broker_no_other_writable": _allowed_same_broker_no_other_writable,
    "late_group": _allowed_late_group,
    "undelivered_group_gone": _allowed_undelivered_group_gone,
    "duplicate_retry_copy_stored_twice": _allowed_duplicate_retry_copy_stored_twice,
    "commit_past_after_offset_illegal": _allowed_commit_past_after_offset_illegal,
    "commit_past_after_deletion": _allowed_commit_past_after_deletion,
    "regression_after_admin_reset": _allowed_regression_after_admin_reset,
    "commit_past_after_reset": _allowed_commit_past_after_reset,
    "check_max_zero": _allowed_check_max_zero,
    "broadcasting_duplicate": _allowed_broadcasting_duplicate,
    "broadcasting_then_clustering_duplicate": _allowed_broadcasting_then_clustering_duplicate,
    "same_broker_async": _allowed_same_broker_async,
    "pull_error_without_status": _allowed_pull_error_without_status,
    "recommit_after_regression": _allowed_recommit_after_regression,
    "retry_copy_matched_by_count": _allowed_retry_copy_matched_by_count,
    "dlq_requested_below_max": _allowed_dlq_requested_below_max,
    "two_send_backs_same_count": _allowed_two_send_backs_same_count,
    "retry_put_before_send_back": _allowed_retry_put_before_send_back,
    "client_copy_due_first": _allowed_client_copy_due_first,
    "retry_copy_delivered_twice": _allowed_retry_copy_delivered_twice,
    "client_send_back_reports": _allowed_client_send_back_reports,
    "check_after_other_broker_discard": _allowed_check_after_other_broker_discard,
    "duplicate_shared_queue": _allowed_duplicate_shared_queue,
    "regression_wider_window": _allowed_regression_wider_window,
    "derived_delivery_committed": _allowed_derived_delivery_committed,
    "derived_client_pull_status": _allowed_derived_client_pull_status,
    "retry_level_one": _allowed_retry_level_one,
}

#: The allowed tallies of the healthy run: its one duplicate, after c2's crash and restart.
HEALTHY_COUNTS: dict[str, dict[str, int]] = {"duplicates_allowed": {CLIENT: 1}}

#: Per allowed variant, the counts that differ from the healthy run's (invariant -> tally -> value).
ALLOWED_COUNTS: dict[str, dict[str, dict[str, int]]] = {
    "duplicate_after_rebalance": {"duplicates_allowed": {REBALANCE: 1}},
    "duplicate_stored_twice": {"duplicates_allowed": {CLIENT: 1, STORED_TWICE: 1}},
    "retry_copy_delivered_twice": {"retry_delay_dlq": {STORED_TWICE: 1}},
    "retry_copy_matched_by_count": {"retry_delay_dlq": {STORED_TWICE: 1}},
    "regression_after_offset_illegal": {"offset_no_regression": {OFFSET_ILLEGAL: 1}},
    "regression_after_admin_reset": {"offset_no_regression": {RESET: 1}},
    "recommit_after_regression": {"offset_no_regression": {OFFSET_ILLEGAL: 1}},
    "txn_double_commit": {"duplicates_allowed": {CLIENT: 1, STORED_TWICE: 1}, "transaction": {TXN_ALLOWED: 1}},
    "txn_duplicated_end": {"duplicates_allowed": {CLIENT: 1, STORED_TWICE: 1}, "transaction": {TXN_ALLOWED: 1}},
    "unsettled_undelivered": {"no_lost_message": {SKIPPED: 1}},
    "deleted_before_delivery": {"no_lost_message": {EXEMPT_DELETED: 1}},
    "duplicate_retry_copy_stored_twice": {"duplicates_allowed": {CLIENT: 1, STORED_TWICE: 1},
                                          "retry_delay_dlq": {STORED_TWICE: 1}},
    "duplicate_shared_queue": {"duplicates_allowed": {CLIENT: 1, SHARED_QUEUE: 1}},
    "regression_wider_window": {"offset_no_regression": {FAULT: 1}},
    "broadcasting_then_clustering_duplicate": {"duplicates_allowed": {CLIENT: 1, REBALANCE: 1}},
}

#: Per violating variant, the allowed counts that differ from the healthy run's: c2's restart assignment changes
#: its queue set there, so m4's duplicate is put down to that rebalance (the first cause in CAUSES order).
VIOLATION_COUNTS: dict[str, dict[str, dict[str, int]]] = {
    "single_owner/overlap": {"duplicates_allowed": {REBALANCE: 1}},
    "no_lost_message/ack_not_stored_cut": {"no_lost_message": {SKIPPED: 1}},
    "offset_no_regression/back_past_an_excused_regression": {"offset_no_regression": {FAULT: 2}},
}


def _at(kind: str, nth: int | None = None, **fields: Any) -> Callable[[Sequence[Row]], set[int]]:
    """The seqs of rows of ``kind`` with ``fields`` (only the ``nth`` of them when given)."""
    def find(rows: Sequence[Row]) -> set[int]:
        found = [r["seq"] for r in rows if r["kind"] == kind and all(r.get(k) == v for k, v in fields.items())]
        return set(found) if nth is None else {found[nth]}
    return find


#: Per violating variant, where the violation is: the seq(s) a checker may report it at (the row the rule names; a
#: variant listing several finders would accept any of their rows).
VIOLATING_ROWS: dict[str, tuple[Callable[[Sequence[Row]], set[int]], ...]] = {
    "no_lost_message/ack_not_stored": (_at("send.result", msg_id="m2"),),
    "no_lost_message/ack_not_stored_cut": (_at("send.result", msg_id="m2"),),
    "no_lost_message/not_delivered": (_at("store.put", msg_id="m8"),),
    "no_lost_message/consumed_never": (_at("store.put", msg_id="m2", topic=TOPIC),),
    "no_lost_message/dlq_copy_missing": (_at("store.put", msg_id="m5", topic=TOPIC),),
    "duplicates_allowed/no_cause": (_at("consume.result", -1, msg_id="m2"),),
    "duplicates_allowed/other_group_disturbed": (_at("consume.result", -1, msg_id="m2"),),
    "duplicates_allowed/shared_before": (_at("consume.result", -1, msg_id="m8"),),
    "offset_no_regression/back_without_cause": (_at("offset.commit", -1, topic=TOPIC, broker=BROKER_A, offset=4),),
    "offset_no_regression/back_past_an_excused_regression": (_at("offset.commit", topic=OTHER_TOPIC, offset=4),),
    "offset_not_past_unconsumed/commit_before_success": (_at("offset.commit", topic=TOPIC, broker=BROKER_A,
                                                             offset=1),),
    "offset_not_past_unconsumed/commit_before_sendback": (_at("offset.commit", 0, topic=TOPIC, broker=BROKER_A,
                                                              offset=2),),
    "offset_not_past_unconsumed/derived_commit_before_sendback": (
        _at("offset.commit", 0, topic=TOPIC, broker=BROKER_A, offset=2),),
    "single_owner/allocation": (_at("rebalance.assign", 1, node=C1),),
    "single_owner/overlap": (_at("rebalance.assign", -1, node=C2),),
    "pull_oracle/overflow_one_next": (_at("pull.response", node=BROKER_A, topic=TOPIC, offset=2,
                                          status="OFFSET_OVERFLOW_ONE"),),
    "pull_oracle/found_next_beyond_max": (_at("pull.response", node=BROKER_A, topic=TOPIC, offset=0),),
    "pull_oracle/found_code": (_at("pull.response", node=BROKER_B, topic=TOPIC, offset=0),),
    "pull_oracle/client_status": (_at("pull.response", node=C1, broker=BROKER_B, topic=TOPIC, offset=0),),
    "pull_oracle/client_error_with_status": (_at("pull.response", node=C1, broker=BROKER_B, topic=TOPIC,
                                                 offset=0),),
    "send_retry/too_many_attempts": (_at("send.attempt", msg_id="m1", attempt=2),),
    "send_retry/too_many_async_attempts": (_at("send.attempt", msg_id="m1", attempt=2),),
    "send_retry/oneway_retried": (_at("send.attempt", msg_id="m1", attempt=2),),
    "send_retry/attempt_gap": (_at("send.attempt", msg_id="m1", attempt=3),),
    "send_retry/attempt_repeated": (_at("send.attempt", 1, msg_id="m1", attempt=2),),
    "no_lost_message/deleted_up_to_the_copy": (_at("store.put", msg_id="m8"),),
    "send_retry/retry_after_final": (_at("send.attempt", msg_id="m1", attempt=2),),
    "send_retry/over_budget": (_at("send.attempt", msg_id="m1", attempt=2),),
    "send_retry/same_broker": (_at("send.attempt", msg_id="m1", attempt=2),),
    "send_retry/same_broker_after_an_allowed_one": (_at("send.attempt", msg_id="m10", attempt=2),),
    # (a) names the second resolution.
    "transaction/resolved_twice": (_at("txn.end", 1, msg_id="m6", result=TXN_COMMITTED),),
    "transaction/resolved_twice_after_unknown_answer": (_at("txn.end", msg_id="m6", result=TXN_ROLLED_BACK),),
    "transaction/rolled_back_stored": (_at("store.put", msg_id="m7"),),
    "transaction/rolled_back_delivered": (_at("consume.deliver", msg_id="m7"),),
    "transaction/check_over_max": (_at("txn.check", msg_id="m7", action="check"),),
    "transaction/check_after_discard": (_at("txn.check", msg_id="m7", action="check"),),
    "retry_delay_dlq/wrong_target": (_at("sendback", msg_id="m3"),),
    "retry_delay_dlq/too_early": (_at("sendback", msg_id="m3"),),
    "retry_delay_dlq/dlq_consumed": (_at("consume.deliver", topic=DLQ_TOPIC),),
    "retry_delay_dlq/dlq_before_default_limit": (_at("sendback", msg_id="m5", target=DLQ_TOPIC),),
    "retry_delay_dlq/retry_past_limit": (_at("sendback", msg_id="m5", topic=RETRY_TOPIC),),
    "retry_delay_dlq/second_copy_too_early": (_at("sendback", 1, msg_id="m3", topic=RETRY_TOPIC),),
    "retry_delay_dlq/broker_copy_early_beside_client_copy": (
        _at("sendback", msg_id="m3", topic=RETRY_TOPIC, via="broker", reconsume_times=2),),
    "retry_delay_dlq/copy_early_beside_a_dead_letter": (_at("sendback", msg_id="m3", target=RETRY_TOPIC,
                                                            reconsume_times=2),),
}


def violating_seqs(name: str, rows: Sequence[Row]) -> set[int]:
    """The seqs at which a checker may report the violation of variant ``name``."""
    return set().union(*(find(rows) for find in VIOLATING_ROWS[name]))


def violation_trace_id(name: str) -> str:
    return trace_id_of("violates-" + name)


def allowed_trace_id(name: str) -> str:
    return trace_id_of("allowed-" + name)


def all_fixtures() -> dict[str, list[Row]]:
    """Every fixture by trace id: the healthy run, the violations and the allowed variants."""
    out = {"healthy": healthy()}
    out.update({violation_trace_id(n): f() for n, f in VIOLATIONS.items()})
    out.update({allowed_trace_id(n): f() for n, f in ALLOWED.items()})
    return out


# ----------------------------------------------------------------------------------------------------------------
# Writing trace directories
# ----------------------------------------------------------------------------------------------------------------


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: str | Path) -> Path:
    """Write ``rows`` as JSON Lines (nulls left out) to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n")
    return path


def _arrow_type(type_name: str) -> Any:
    import pyarrow as pa

    return {
        schema.STRING: pa.string(),
        schema.INT: pa.int32(),
        schema.LONG: pa.int64(),
        schema.BOOL: pa.bool_(),
        schema.STRINGS: pa.list_(pa.string()),
    }[type_name]


def arrow_schema(*, with_trace_id: bool = True) -> Any:
    """The Arrow schema of a trace file, from :data:`rocketspec.traces.schema.COLUMNS`."""
    import pyarrow as pa

    return pa.schema([pa.field(c.name, _arrow_type(c.type)) for c in schema.COLUMNS
                      if with_trace_id or c.name != "trace_id"])


def write_parquet(rows: Iterable[Mapping[str, Any]], directory: str | Path) -> Path:
    """Write ``rows`` as Parquet, Hive partitioned by trace: ``DIR/trace_id=<id>/part-0.parquet`` (the files leave
    the trace_id column out; readers restore it from the directory name)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory = Path(directory)
    by_trace: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_trace.setdefault(str(row["trace_id"]), []).append(row)
    file_schema = arrow_schema(with_trace_id=False)
    for trace_id, trace_rows in by_trace.items():
        columns = {f.name: [r.get(f.name) for r in trace_rows] for f in file_schema}
        table = pa.Table.from_pydict(columns, schema=file_schema)
        part = directory / f"trace_id={trace_id}"
        part.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, part / "part-0.parquet")
    return directory


def write_trace_dir(traces: Mapping[str, Sequence[Mapping[str, Any]]], directory: str | Path, fmt: str) -> Path:
    """Write several traces into one trace directory (``fmt`` ``jsonl``: one file per trace; ``parquet``: one
    partition per trace) with its ``_trace.json`` manifest."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        for trace_id, rows in traces.items():
            write_jsonl(rows, directory / f"{trace_id}.jsonl")
    elif fmt == "parquet":
        write_parquet([r for rows in traces.values() for r in rows], directory)
    else:
        raise ValueError(f"unknown format {fmt!r}; use jsonl or parquet")
    manifest = {"schema_version": schema.SCHEMA_VERSION, "format": fmt,
                "events": sum(len(rows) for rows in traces.values()), "traces": len(traces),
                "generator": {"name": "tests/trace_fixtures.py"}}
    (directory / schema.MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return directory

