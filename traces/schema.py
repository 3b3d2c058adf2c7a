"""The trace event schema, version 1: one row per event, the columns every kind may use.

A trace is the ordered record of one run: the reference implementation, another implementation through the wire tap,
or a recorder of your own. Every implementation that writes rows with these columns can be checked by
``rocketspec traces check``. ``docs/traces.md`` is the prose reference; this module is the single source of the
column names, their types and which kinds need which columns (the checker, the recorder, the generator and the docs
all read it).

Rules for a row:

- ``seq``, ``ts_ms``, ``trace_id``, ``node`` and ``kind`` are always set; ``seq`` is a total order within a trace
  (unique, increasing in the order things happened), ``ts_ms`` the time in milliseconds on the run's clock.
- ``kind`` is one of :data:`KINDS`; the columns listed as required for the kind are set (not null), the optional ones
  may be null, every other column is null or absent.
- Unknown columns are ignored, so producers may add their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from rocketspec.spec.protocol import MAX_DELAY_LEVEL

SCHEMA_VERSION = 1

#: The name of the manifest a trace directory carries (``{"schema_version": 1, ...}``).
MANIFEST = "_trace.json"
#: The optional manifest field giving a trace's delay levels: ``{"<trace_id>": [ms of level 1, ms of level 2, ...]}``
#: (1 to 18 positive whole numbers; the broker's ``messageDelayLevel``). A trace it does not list ran with the
#: default 18 levels (``spec.protocol.DELAY_LEVEL_MILLIS``). retry_delay_dlq judges retry delays by it.
MANIFEST_DELAY_LEVELS = "delay_levels_ms"

# Column types, by the names Spark's DDL uses.
STRING = "string"
INT = "int"
LONG = "bigint"
BOOL = "boolean"
STRINGS = "array<string>"


@attrs.frozen
class Column:
    name: str
    type: str
    doc: str


#: Every column, in the order rows are written.
COLUMNS: tuple[Column, ...] = (
    Column("trace_id", STRING, "the run the event belongs to; a trace directory may hold many runs"),
    Column("seq", LONG, "total order of events within the trace (unique, increasing)"),
    Column("ts_ms", LONG, "time on the run's clock, milliseconds"),
    Column("node", STRING, "who made the event: a client id, or a broker name for broker-side events"),
    Column("kind", STRING, "the event kind (see KINDS)"),
    Column("group", STRING, "producer or consumer group"),
    Column("topic", STRING, "topic (for sendback: the topic the message was consumed from)"),
    Column("broker", STRING, "the broker name of the queue concerned"),
    Column("queue_id", INT, "queue id within the broker"),
    Column("offset", LONG, "queue offset (logical), or the offset a client or broker stores"),
    Column("msg_id", STRING, "the message's unique client id (UNIQ_KEY), kept across retries and retry copies"),
    Column("code", INT, "remoting response code"),
    Column("status", STRING, "an enum name: SendStatus, GetMessageStatus, PullStatus, ConsumeStatus, trace status"),
    Column("error", STRING, "the failure of a send attempt without a response (exception class or text)"),
    Column("attempt", INT, "send attempt number, from 1"),
    Column("mode", STRING, "CommunicationMode of a send: SYNC, ASYNC, ONEWAY (null: not known, e.g. read off the "
           "wire, where SYNC and ASYNC look alike)"),
    Column("final", BOOL, "send.result: whether this attempt ended the send"),
    Column("retry_times", INT, "the producer's retryTimesWhenSendFailed"),
    Column("retry_times_async", INT, "the producer's retryTimesWhenSendAsyncFailed"),
    Column("timeout_ms", LONG, "the send's timeout budget (sendMsgTimeout)"),
    Column("latency_fault", BOOL, "whether the producer runs with sendLatencyFaultEnable"),
    Column("latency_ms", LONG, "send.result: the attempt's latency as the producer measured it"),
    Column("queues", STRINGS, "route.update: 'broker:queueId:perm' per queue; rebalance.assign: 'broker:queueId'"),
    Column("all_queues", STRINGS, "rebalance.assign: the topic's queues the allocation ran on, 'broker:queueId'"),
    Column("consumers", STRINGS, "rebalance.assign: the consumer ids the allocation ran on"),
    Column("strategy", STRING, "rebalance.assign: allocation strategy (AVG, AVG_BY_CIRCLE, ..., BROADCASTING)"),
    Column("expression", STRING, "rebalance.assign: the subscription expression ('*' or 'tagA || tagB')"),
    Column("tags", STRING, "store.put: the message's TAGS"),
    Column("commit_offset", LONG, "pull.request: the commit offset it carries (null: no commit bit)"),
    Column("next_offset", LONG, "pull.response: nextBeginOffset"),
    Column("min_offset", LONG, "pull.response: the queue's min offset"),
    Column("max_offset", LONG, "pull.response: the queue's max offset"),
    Column("count", INT, "pull.response: messages found"),
    Column("increase_only", BOOL, "offset.update: whether the update was increaseOnly"),
    Column("previous", LONG, "offset.commit, offset.reset: the offset stored before (null: none or not known)"),
    Column("commit_log_offset", LONG, "store.put: physical offset"),
    Column("reconsume_times", INT, "reconsumeTimes shown (consume.deliver), stored (store.put), the copy's (sendback)"),
    Column("max_reconsume_times", INT, "sendback: the max reconsume times the consumer sends"),
    Column("delay_level", INT, "sendback: the level the copy is delayed by (0: not delayed, e.g. a dead letter)"),
    Column("target", STRING, "sendback: the topic the copy went to; fault.inject: the node"),
    Column("via", STRING, "sendback: broker (CONSUMER_SEND_MSG_BACK), client (fallback send) or local (again)"),
    Column("transaction_id", STRING, "transaction id"),
    Column("state", STRING, "txn.end: COMMIT_MESSAGE, ROLLBACK_MESSAGE or UNKNOW"),
    Column("from_check", BOOL, "txn.end: sent as the answer to a check"),
    Column("result", STRING, "txn.end at the broker: what happened (COMMITTED, ROLLED_BACK, IGNORED, ...)"),
    Column("check_times", INT, "txn.check: the check count of this check"),
    Column("check_max", INT, "txn.check: the broker's transactionCheckMax"),
    Column("action", STRING, "txn.check: check or discard; fault.inject: the fault; client.lifecycle: start, ...; "
           "offset.reset: update (UPDATE_CONSUMER_OFFSET of no registered consumer) or reset "
           "(INVOKE_BROKER_TO_RESET_OFFSET)"),
    Column("crashed", BOOL, "broker.restart: a crash (no clean shutdown)"),
    Column("role", STRING, "client.lifecycle: producer, push_consumer, lite_pull_consumer, ..."),
    Column("detail", STRING, "free text"),
    Column("derived", STRING, "set when the row was inferred from the wire, not seen happen: what it was read from "
           "(a tap's broker-side rows: send_answer, pull_answer, commit_request, check_request; its client-side "
           "pull.response and consume.deliver rows: pull_answer; offset.reset rows of an admin reset: reset_answer)"),
)

#: The ``derived`` values: what on the wire a row was read from (a send's answer, a pull's answer, a commit request,
#: a check-back request).
SEND_ANSWER = "send_answer"
PULL_ANSWER = "pull_answer"
COMMIT_REQUEST = "commit_request"
CHECK_REQUEST = "check_request"
RESET_ANSWER = "reset_answer"
#: offset.reset ``action`` values: an UPDATE_CONSUMER_OFFSET from a connection not registered as a consumer of the
#: group (an administrator's write, e.g. mqadmin's resetOffsetByTime on old brokers), and the offsets an
#: INVOKE_BROKER_TO_RESET_OFFSET answer gives (the admin reset the broker tells the group's clients to apply).
RESET_UPDATE = "update"
RESET_INVOKED = "reset"

COLUMN_TYPES: dict[str, str] = {c.name: c.type for c in COLUMNS}
CORE: tuple[str, ...] = ("trace_id", "seq", "ts_ms", "node", "kind")


@attrs.frozen
class Kind:
    name: str
    doc: str
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()


#: Every event kind: the columns it needs (besides CORE) and those it may set.
KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind("send.attempt", "a producer sends one attempt of a message to a queue",
             ("group", "topic", "broker", "queue_id", "msg_id", "attempt"),
             ("mode", "retry_times", "retry_times_async", "timeout_ms", "latency_fault")),
        Kind("send.result", "the outcome of one attempt: a SendStatus name, or ERROR with code or error",
             ("group", "topic", "broker", "queue_id", "msg_id", "attempt", "status", "final"),
             ("code", "offset", "error", "latency_ms")),
        Kind("route.update", "a client's route of a topic changed (queues: 'broker:queueId:perm', write side)",
             ("topic", "queues")),
        Kind("rebalance.assign", "a client's queue set of a topic after a rebalance",
             ("group", "topic", "strategy", "consumers", "queues"), ("all_queues", "expression")),
        Kind("pull.request", "a consumer sends a pull", ("group", "topic", "broker", "queue_id", "offset"),
             ("commit_offset",)),
        Kind("pull.response", "a pull answer: broker side (node = broker, GetMessageStatus) or client side "
             "(node = client, PullStatus)", ("group", "topic", "broker", "queue_id", "offset", "status"),
             ("code", "next_offset", "min_offset", "max_offset", "count", "derived")),
        Kind("consume.deliver", "a message is handed to the listener (derived pull_answer: a tap saw it in a pull "
             "answer to the consumer)",
             ("group", "topic", "broker", "queue_id", "offset", "msg_id", "reconsume_times"), ("derived",)),
        Kind("consume.result", "the listener's result for a message (ConsumeStatus or orderly status)",
             ("group", "topic", "broker", "queue_id", "offset", "msg_id", "status")),
        Kind("offset.update", "a client's in-memory consume offset changes",
             ("group", "topic", "broker", "queue_id", "offset", "increase_only")),
        Kind("offset.commit", "a broker stores a group's offset (node = broker)",
             ("group", "topic", "broker", "queue_id", "offset"), ("previous", "derived")),
        Kind("offset.reset", "a group's offset set by an administrator, not by a consumer's progress (node = broker): "
             "action update (an UPDATE_CONSUMER_OFFSET from a connection not registered as a consumer of the group) "
             "or reset (an INVOKE_BROKER_TO_RESET_OFFSET answer's offsets)",
             ("group", "topic", "broker", "queue_id", "offset", "action"), ("previous", "derived")),
        Kind("store.put", "a broker appended a message to a consume queue (node = broker)",
             ("topic", "broker", "queue_id", "offset", "msg_id"),
             ("commit_log_offset", "reconsume_times", "tags", "derived")),
        Kind("store.delete", "a broker deleted old data: the queue's min offset is now offset (node = broker)",
             ("topic", "broker", "queue_id", "offset")),
        Kind("sendback", "a consumed message goes back for retry; target is the retry or DLQ topic; the row of the "
             "broker that made the copy has broker = node",
             ("group", "topic", "msg_id", "reconsume_times", "via"),
             ("delay_level", "target", "max_reconsume_times", "broker")),
        Kind("txn.half", "a broker stored a half message (node = broker)",
             ("group", "topic", "msg_id", "transaction_id", "offset"), ("derived",)),
        Kind("txn.end", "a transaction outcome: sent by the producer, or applied by the broker (with result)",
             ("group", "msg_id", "transaction_id", "state", "from_check"), ("result",)),
        Kind("txn.check", "the broker checks back (action check) or gives up (action discard) on a half message",
             ("group", "msg_id", "transaction_id", "check_times", "action"), ("check_max", "derived")),
        Kind("broker.restart", "a broker restarted (node = broker)", ("broker", "crashed")),
        Kind("fault.inject", "an injected fault hit a request", ("target", "code", "action"), ("detail",)),
        Kind("client.lifecycle", "a client starts, shuts down or crashes", ("group", "role", "action")),
        Kind("trace.end", "the run ended: status SETTLED (every consumer caught up, nothing in flight) or CUT",
             ("status",)),
    )
}

#: The workload fault profiles a manifest can name (``traces generate --faults``; ``traces/workload.py``).
FAULT_PROFILES = ("none", "light", "heavy")

#: trace.end statuses.
SETTLED = "SETTLED"
CUT = "CUT"


class SchemaError(ValueError):
    """A row or a set of columns does not follow the schema; the message says where and how."""


_PY_TYPES: dict[str, tuple[type, ...]] = {STRING: (str,), INT: (int,), LONG: (int,), BOOL: (bool,), STRINGS: (list,
                                                                                                              tuple)}


def check_columns(present: Iterable[str], types: Mapping[str, str] | None = None) -> None:
    """Raise :class:`SchemaError` if a core column is missing or a known column has the wrong type.

    ``types`` maps column names to Spark DDL type names as the reader found them (integer widths may differ:
    an ``int`` column read as ``bigint`` is accepted).
    """
    names = set(present)
    missing = [c for c in CORE if c not in names]
    if missing:
        raise SchemaError(f"missing column(s) {', '.join(missing)}; every trace row needs {', '.join(CORE)}")
    for name, found in (types or {}).items():
        want = COLUMN_TYPES.get(name)
        if want is None or found == want or (want in (INT, LONG) and found in ("int", "bigint", "smallint")):
            continue
        if found == "void":  # a column that is null in every row
            continue
        raise SchemaError(f"column {name!r} has type {found}, the schema says {want}")


def check_row(row: Mapping[str, Any], where: str = "") -> None:
    """Raise :class:`SchemaError` unless ``row`` is a valid event row (kind known, required set, types right)."""
    at = f"{where}: " if where else ""
    for name in CORE:
        if row.get(name) is None:
            raise SchemaError(f"{at}missing {name!r}")
    kind = KINDS.get(row["kind"])
    if kind is None:
        raise SchemaError(f"{at}unknown kind {row['kind']!r}; kinds are: {', '.join(KINDS)}")
    for name in kind.required:
        if row.get(name) is None:
            raise SchemaError(f"{at}{kind.name} needs {name!r}")
    for name, value in row.items():
        want = COLUMN_TYPES.get(name)
        if want is None or value is None:
            continue
        ok = isinstance(value, _PY_TYPES[want]) and not (want != BOOL and isinstance(value, bool))
        if ok and want == STRINGS:
            ok = all(isinstance(v, str) for v in value)
        if not ok:
            raise SchemaError(f"{at}{name!r} must be {want}, not {type(value).__name__} {value!r}")


def check_delay_levels(value: Any, where: str = "") -> tuple[int, ...]:
    """A delay table (one entry of :data:`MANIFEST_DELAY_LEVELS`) as a tuple; :class:`SchemaError` unless it is a
    list of 1 to ``MAX_DELAY_LEVEL`` (18) positive whole numbers of milliseconds."""
    at = f"{where}: " if where else ""
    if not isinstance(value, (list, tuple)) or not 1 <= len(value) <= MAX_DELAY_LEVEL:
        raise SchemaError(f"{at}a delay table must be a list of 1 to {MAX_DELAY_LEVEL} delays in ms, not {value!r}")
    for level, delay in enumerate(value, start=1):
        if not isinstance(delay, int) or isinstance(delay, bool) or delay <= 0:
            raise SchemaError(f"{at}level {level} delay must be a positive whole number of ms, not {delay!r}")
    return tuple(value)


def check_delay_tables(value: Any, where: str = "") -> dict[str, tuple[int, ...]]:
    """The :data:`MANIFEST_DELAY_LEVELS` field of a manifest as ``{trace_id: table}``; :class:`SchemaError` unless
    it maps trace ids (strings) to delay tables (:func:`check_delay_levels`)."""
    at = f"{where}: " if where else ""
    if not isinstance(value, Mapping):
        raise SchemaError(f"{at}{MANIFEST_DELAY_LEVELS} must map trace ids to delay tables, not {value!r}")
    tables = {}
    for trace_id, table in value.items():
        if not isinstance(trace_id, str) or not trace_id:
            raise SchemaError(f"{at}{MANIFEST_DELAY_LEVELS}: a trace id must be a non-empty string, not {trace_id!r}")
        tables[trace_id] = check_delay_levels(table, f"{at}{MANIFEST_DELAY_LEVELS}[{trace_id!r}]")
    return tables


def spark_ddl() -> str:
    """The schema as a Spark DDL string (for reading JSON Lines with a fixed schema)."""
    return ", ".join(f"`{c.name}` {c.type}" for c in COLUMNS)


def empty_row() -> dict[str, Any]:
    return dict.fromkeys(COLUMN_TYPES)
