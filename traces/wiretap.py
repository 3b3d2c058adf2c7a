"""Trace events read off the remoting wire: what clients and servers say to each other, as refimpl events.

``WireEvents`` is a ``WireObserver`` (``refimpl.tcp``): called with every ``WireFrame`` (one command seen on one
connection, either way), it pairs requests with their responses by (connection, who asked, opaque) and emits the
events the wire proves into an ``EventLog``, where a ``TraceRecorder`` turns them into trace rows
(``traces/schema.py``). It serves two setups:

- ``server_events=True`` (``rocketspec serve --trace``): the reference brokers record their own events in the same
  log, so only what the clients alone know is read off the wire;
- ``server_events=False`` (``rocketspec tap``): the servers are another implementation, so the broker-side events the
  wire proves are emitted too.

The rule is that a row is written only when the wire fills every required column of its kind honestly. Per kind:

====================  ===========  =====================================================================================
kind                  written by   what the wire tells, and when nothing is written
====================  ===========  =====================================================================================
route.update          client       a GET_ROUTEINFO_BY_TOPIC answer whose write queues differ from the last one that
                                   connection got; ``node`` is the name-server connection's address (clients give no
                                   id there), so send_retry's broker-avoidance rule finds no route for a producer
client.lifecycle      client       ``start`` on the first HEART_BEAT naming a group for a client id, ``shutdown`` on
                                   UNREGISTER_CLIENT, ``disconnect`` when a connection that carried the client's
                                   heartbeat closes (the wire cannot tell a crash from a lost connection). Roles:
                                   producer, push_consumer (CONSUME_PASSIVELY), pull_consumer (CONSUME_ACTIVELY)
send.attempt/.result  client       every request and its answer, for messages with a UNIQ_KEY (ali-ons sends none: a
                                   failed attempt would have no id). ``mode``: ONEWAY from the oneway flag, else the
                                   mode the operator declares (``send_mode``), else null: SYNC and ASYNC look alike on
                                   the wire, so send_retry judges such sends by the rules that need no mode.
                                   Attempts are numbered per (producer group, UNIQ_KEY): a request that could not be a
                                   retry (after a final result, past the attempt limit — the larger of SYNC's and
                                   ASYNC's when the mode is null — or a SYNC attempt past the 3000 ms default
                                   budget) starts a new send. ``final`` follows the spec's retry rules with the
                                   default producer settings (with the mode null: final only when it is final in both
                                   modes); retry_times, timeout_ms and latency_fault stay null. An attempt left
                                   unanswered when the next one comes (the client timed out) gets an ERROR result then
pull.request          client       every PULL_MESSAGE (commit_offset when the commit bit is set)
pull.response         client       every answer (status = the client's PullStatus for the code, else ERROR; ERROR
                                   without a code when the connection closes first). Broker side (tap only): when the
                                   remark is a GetMessageStatus name (the broker's store status) and the broker is the
                                   master in the routes seen, so pull_oracle judges a real broker
sendback              client       CONSUMER_SEND_MSG_BACK answered SUCCESS, for a message this observer saw in a pull
                                   answer (its topic, id and stored reconsume times) when the maximum is on the wire
                                   (maxReconsumeTimes with request version >= V3_4_9); target and delay level follow
                                   the broker's rule (``consume_retry.consumer_send_back``) with a retry queue. Not
                                   written otherwise (the C++ client sends version 63: the group's maximum decides)
txn.end               client       every END_TRANSACTION as sent (result null); the broker's outcome is not on the
                                   wire (oneway)
offset.commit         broker/tap   UPDATE_CONSUMER_OFFSET as received (previous null) on a connection registered as a
                                   consumer of the group (HEART_BEAT, no UNREGISTER_CLIENT since). Commits a pull
                                   makes with its commit bit are not written: the broker commits only past its early
                                   checks, before the (possibly held) answer, so neither their happening nor their
                                   order is certain
offset.reset          broker/both  action update: UPDATE_CONSUMER_OFFSET on a connection not registered as a consumer
                                   of the group (an administrator's write, not consumer progress; served, the broker's
                                   own commit row is rewritten so); action reset: each queue of a SUCCESS answer to
                                   INVOKE_BROKER_TO_RESET_OFFSET (derived reset_answer)
store.put             broker/tap   a send answered with a stored status, for plain messages (no DELAY, not a half
                                   message, not to a %RETRY% topic: those land elsewhere than the answer says)
txn.half              broker/tap   a half message (TRAN_MSG) answered SUCCESS: the answer's queue offset is in the
                                   half topic
txn.check             broker/tap   CHECK_TRANSACTION_STATE whose body carries PGROUP and TRANSACTION_CHECK_TIMES
                                   (check_max null: the checker assumes 15)
====================  ===========  =====================================================================================

Never written from the wire: rebalance.assign (allocation is inside the client), consume.deliver / consume.result
(listener calls), offset.update (a client's memory), store.delete, broker.restart, fault.inject, broker-side txn.end
and sendback (their outcome is not answered in full). QUERY_CONSUMER_OFFSET, LOCK_BATCH_MQ and the rest are paired
but write nothing. Malformed headers or bodies are skipped silently: the servers answer them; the observer only
records what it can read.
"""

from __future__ import annotations

import logging
import struct
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypedDict

import attrs

from rocketspec.refimpl.broker.pull import PullMessageHeader
from rocketspec.refimpl.broker.send import SendMessageHeader
from rocketspec.refimpl.broker.sendback import SendBackHeader
from rocketspec.refimpl.broker.transaction import EndTransactionHeader
from rocketspec.refimpl.events import (
    ClientLifecycle,
    ConsumeDeliver,
    Event,
    EventLog,
    MessageStored,
    OffsetCommit,
    PullRequestEvent,
    PullResponseEvent,
    RouteUpdate,
    SendAttempt,
    SendBack,
    SendResultEvent,
    TxnCheck,
    TxnEnd,
    TxnHalf,
)
from rocketspec.refimpl.message import (
    MessageExt,
    decode_batch,
    decode_offset_message_id,
    decode_properties,
    decode_stored_message,
)
from rocketspec.refimpl.remoting import HeaderError, RemotingCommand
from rocketspec.refimpl.route import BrokerData, TopicRouteData, loads_lenient
from rocketspec.refimpl.tcp import WireFrame
from rocketspec.spec.protocol import (
    CLIENT_INNER_PRODUCER_GROUP,
    DEFAULT_SEND_MSG_TIMEOUT_MS,
    MASTER_ID,
    PULL_FLAG_COMMIT_OFFSET,
    RETRY_GROUP_TOPIC_PREFIX,
    SYSFLAG_TRANSACTION_MASK,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    VERSION_V3_4_9,
    CommunicationMode,
    GetMessageStatus,
    Property,
    RequestCode,
    ResponseCode,
    SendStatus,
    TransactionState,
)
from rocketspec.spec.pull_correction import pull_status
from rocketspec.spec.send_retry import (
    Failure,
    attempt_limit,
    failure_retried,
    response_code_retried,
    send_status_of,
    status_retried,
)
from rocketspec.traces.invariants import tag_matches
from rocketspec.traces.schema import CHECK_REQUEST, COMMIT_REQUEST, PULL_ANSWER, RESET_UPDATE, SEND_ANSWER
from rocketspec.traces.wireoffsets import AdminCommits, OffsetReset, reset_answer_rows

log = logging.getLogger("rocketspec.wiretap")

SEND_CODES = frozenset({RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE})
#: Requests whose answer this observer reads (others are not kept waiting for one).
_ANSWERED = SEND_CODES | {RequestCode.PULL_MESSAGE, RequestCode.CONSUMER_SEND_MSG_BACK,
                          RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_BROKER_CLUSTER_INFO,
                          RequestCode.INVOKE_BROKER_TO_RESET_OFFSET}
_PULL_CODES = frozenset({ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY,
                         ResponseCode.PULL_OFFSET_MOVED})
_STORE_STATUSES = frozenset(s.name for s in GetMessageStatus)
_STATE_NAMES = {
    TRANSACTION_NOT_TYPE: TransactionState.UNKNOW.value,
    TRANSACTION_COMMIT_TYPE: TransactionState.COMMIT_MESSAGE.value,
    TRANSACTION_ROLLBACK_TYPE: TransactionState.ROLLBACK_MESSAGE.value,
}
_CONSUME_ROLES = {"CONSUME_PASSIVELY": "push_consumer", "1": "push_consumer",
                  "CONSUME_ACTIVELY": "pull_consumer", "0": "pull_consumer"}
#: Requests awaiting an answer per connection; the oldest go first past this (a client that writes oneway requests
#: without the oneway flag, as the C++ client does, never gets answers to them).
MAX_PENDING_PER_CONNECTION = 4096


@attrs.define
class _Pending:
    """A request awaiting its answer: the request, the client node when it was sent and what handling it needs."""

    frame: WireFrame
    node: str
    data: Any = None


@attrs.define
class _Connection:
    client_addr: str
    client_id: str | None = None
    # The groups this connection registered as a consumer of (HEART_BEAT, until UNREGISTER_CLIENT), as the broker's
    # ConsumerManager keeps channels: group -> (since, until) in arrival time (``WireFrame.received_at``; 0 and None
    # where frames come in arrival order). A commit of a group it is not registered for is not consumer progress.
    consumer_groups: dict[str, tuple[float, float | None]] = attrs.Factory(dict)
    pending: OrderedDict[tuple[bool, int], _Pending] = attrs.Factory(OrderedDict)

    def registered(self, group: str, at: float | None) -> bool:
        """Whether the connection was registered as a consumer of ``group`` when a request that arrived ``at`` came.
        A served broker's executors take requests out of arrival order (a shutdown's last commits after its
        UNREGISTER_CLIENT), so the arrival time decides, not the order the observer sees them in."""
        span = self.consumer_groups.get(group)
        if span is None:
            return False
        since, until = span
        if at is None:
            return until is None
        return since <= at and (until is None or at < until)


@attrs.define
class _Send:
    """One outgoing message (or batch) of a producer group, keyed by its UNIQ_KEY(s): its current send."""

    node: str
    mode: CommunicationMode | None  # None: SYNC or ASYNC, the wire cannot tell
    attempt: int
    first_ms: int
    final: bool = False
    waiting: tuple[int, int] | None = None  # (connection, opaque) of the attempt awaiting its answer


@attrs.frozen
class _SendInfo:
    group: str
    topic: str
    queue_id: int
    broker: str
    keys: tuple[str | None, ...]
    tags: tuple[str | None, ...]
    reconsume_times: int
    half: bool
    plain: bool  # stored where the answer says (no delay, not a half message, not to a retry topic)
    producer_group: str
    send: tuple[str, str] | None = None  # the (group, key) of its send when send rows are written


@attrs.frozen
class _Pulled:
    """What a pull answer showed of a stored message (for a later CONSUMER_SEND_MSG_BACK naming it)."""

    topic: str
    msg_id: str
    reconsume_times: int


class _PullCommon(TypedDict):
    """The fields every pull.response row of one answer shares."""

    group: str
    topic: str
    broker: str
    queue_id: int
    offset: int
    code: int


class _PullOffsets(TypedDict):
    """The offsets a pull answer's header gives."""

    next_offset: int | None
    min_offset: int | None
    max_offset: int | None


def _int(fields: Mapping[str, str], name: str) -> int | None:
    value = fields.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        return None


class WireEvents:
    """Remoting traffic as trace events in ``events`` (see the module docs for what is written and when).

    ``server_events``: the servers emit their own events into the same log (the served reference cluster), so only
    client-side kinds are read off the wire; otherwise (a tap in front of another implementation) the broker-side
    kinds the wire proves are written too. ``send_mode``: the CommunicationMode (``SYNC``, ``ASYNC``) producers use,
    when the operator knows it; without it sends not flagged oneway are written with mode null. ``max_tracked``
    bounds the sends and pulled messages remembered. ``events`` None: it is an ``EventSink`` too, given the run's
    log when the run starts (``ServedCluster(observer=wire_events, sinks=[recorder, wire_events])``); frames before
    that are ignored.
    """

    def __init__(self, events: EventLog | None, *, server_events: bool = False, send_mode: str | None = None,
                 max_tracked: int = 65_536) -> None:
        if send_mode is not None and send_mode not in CommunicationMode.__members__:
            raise ValueError(f"send_mode must be one of {', '.join(CommunicationMode.__members__)}, not {send_mode!r}")
        self.events: EventLog | None = events
        self.server_events = server_events
        self.send_mode = CommunicationMode[send_mode] if send_mode is not None else None
        self.max_tracked = max_tracked
        self._connections: dict[int, _Connection] = {}
        self._started: dict[tuple[str, str], str] = {}  # (client id, group) -> role, between start and shutdown
        self._sends: OrderedDict[tuple[str, str], _Send] = OrderedDict()
        self._pulled: OrderedDict[tuple[str, int], _Pulled] = OrderedDict()
        self._routes: dict[tuple[str, str], tuple[str, ...]] = {}
        self._broker_ids: dict[str, int] = {}  # broker address -> broker id, from the routes and cluster info seen
        # Served: the unregistered commits the brokers are about to record, for the recorder's rewrite of them.
        self.admin_commits = AdminCommits()
        self.frames = 0

    def attach(self, log: EventLog, delay_level_millis: object = None) -> None:
        """``EventSink``: write into the run's ``log`` from now on."""
        self.events = log

    def close(self) -> None:
        """``EventSink``: nothing is held back."""

    # ------------------------------------------------------------------------------------------------------ entry
    def __call__(self, frame: WireFrame) -> None:
        """Take one frame (the transport calls this for every command, in the order it saw them)."""
        if self.events is None:
            return
        self.frames += 1
        conn = self._connections.get(frame.connection)
        if conn is None:
            conn = self._connections[frame.connection] = _Connection(frame.client_addr)
        command = frame.command
        if command.is_response:
            pending = conn.pending.pop((not frame.from_client, command.opaque), None)
            if pending is not None and not frame.from_client:
                self._answered(conn, pending, frame)
            return
        if frame.from_client:
            self._client_request(conn, frame)
        elif command.code == RequestCode.CHECK_TRANSACTION_STATE and not self.server_events:
            self._check(frame)

    def connection_closed(self, connection: int, ts_ms: int | None = None) -> None:
        """The connection is gone (at ``ts_ms``, default the time of each request): its unanswered sends and pulls
        failed, its client lost a connection."""
        conn = self._connections.pop(connection, None)
        if conn is None:
            return
        for (asked_by_client, opaque), pending in conn.pending.items():
            if not asked_by_client:
                continue
            code = pending.frame.command.code
            if code in SEND_CODES:
                self._send_failed(connection, opaque, pending, "connection closed before the response",
                                  now_ms=pending.frame.ts_ms if ts_ms is None else ts_ms)
            elif code == RequestCode.PULL_MESSAGE and pending.data is not None:
                header: PullMessageHeader = pending.data
                self._emit(PullResponseEvent(node=pending.node, group=header.consumer_group, topic=header.topic,
                                             broker=pending.frame.node, queue_id=header.queue_id,
                                             offset=header.queue_offset, code=None, status="ERROR"))
        conn.pending.clear()
        if conn.client_id is None:
            for key in [k for k in self._routes if k[0] == conn.client_addr]:
                del self._routes[key]
        else:
            for (client, group), role in list(self._started.items()):
                if client == conn.client_id:
                    self._emit(ClientLifecycle(node=client, group=group, role=role, action="disconnect"))

    def waiting(self, connection: int) -> int:
        """Requests on ``connection`` whose answer is awaited."""
        conn = self._connections.get(connection)
        return len(conn.pending) if conn is not None else 0

    def learn_brokers(self, brokers: Iterable[BrokerData]) -> None:
        """Remember broker ids by address (the master is id 0), as routes and cluster info tell them."""
        for data in brokers:
            for broker_id, addr in data.broker_addrs.items():
                self._broker_ids[addr] = broker_id

    # ------------------------------------------------------------------------------------------------- internals
    def _emit(self, event: Event) -> None:
        if self.events is not None:
            self.events.emit(event)

    @staticmethod
    def _node(conn: _Connection) -> str:
        return conn.client_id or conn.client_addr

    def _client_request(self, conn: _Connection, frame: WireFrame) -> None:
        command = frame.command
        code = command.code
        data: Any = None
        if code in SEND_CODES:
            data = self._send_request(conn, frame)
        elif code == RequestCode.PULL_MESSAGE:
            data = self._pull_request(conn, frame)
        elif code == RequestCode.HEART_BEAT:
            self._heartbeat(conn, frame)
        elif code == RequestCode.UNREGISTER_CLIENT:
            self._unregister(conn, frame)
        elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
            self._offset_commit(conn, frame)
        elif code == RequestCode.END_TRANSACTION:
            self._end_transaction(conn, command)
        elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
            data = _parsed(SendBackHeader.parse, command)
        if code in _ANSWERED and not command.is_oneway:
            pending = conn.pending
            pending[(True, command.opaque)] = _Pending(frame, self._node(conn), data)
            while len(pending) > MAX_PENDING_PER_CONNECTION:
                pending.popitem(last=False)

    def _answered(self, conn: _Connection, pending: _Pending, frame: WireFrame) -> None:
        code = pending.frame.command.code
        if code in SEND_CODES:
            self._send_answered(pending, frame)
        elif code == RequestCode.PULL_MESSAGE:
            self._pull_answered(pending, frame)
        elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
            self._sendback_answered(pending, frame)
        elif code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            self._route_answered(conn, pending, frame)
        elif code == RequestCode.GET_BROKER_CLUSTER_INFO:
            self._cluster_answered(frame)
        elif code == RequestCode.INVOKE_BROKER_TO_RESET_OFFSET:
            group = pending.frame.command.field("group")
            if frame.command.code == ResponseCode.SUCCESS and group:
                for row in reset_answer_rows(frame.node, group, frame.command.body):
                    self._emit(row)

    # ---------------------------------------------------------------------------------------------- lifecycle
    def _heartbeat(self, conn: _Connection, frame: WireFrame) -> None:
        command = frame.command
        body = _json_body(command)
        if not isinstance(body, dict) or not isinstance(body.get("clientID"), str) or not body["clientID"]:
            return
        client = conn.client_id = body["clientID"]
        groups: list[tuple[str, str]] = []
        for data in _dicts(body.get("producerDataSet")):
            group = data.get("groupName")
            if isinstance(group, str) and group and group != CLIENT_INNER_PRODUCER_GROUP:
                groups.append((group, "producer"))
        for data in _dicts(body.get("consumerDataSet")):
            group = data.get("groupName")
            if isinstance(group, str) and group:
                groups.append((group, _CONSUME_ROLES.get(str(data.get("consumeType")), "consumer")))
                span = conn.consumer_groups.get(group)
                if span is None or span[1] is not None:  # a periodic heartbeat keeps the registration's start
                    conn.consumer_groups[group] = (frame.received_at or 0.0, None)
        for group, role in groups:
            if (client, group) not in self._started:
                self._started[(client, group)] = role
                self._emit(ClientLifecycle(node=client, group=group, role=role, action="start"))

    def _unregister(self, conn: _Connection, frame: WireFrame) -> None:
        command = frame.command
        consumer_group = command.field("consumerGroup") or ""
        span = conn.consumer_groups.get(consumer_group)
        if span is not None and span[1] is None:
            conn.consumer_groups[consumer_group] = (span[0], frame.received_at or 0.0)
        client = command.field("clientID") or conn.client_id
        if not client:
            return
        for name in ("producerGroup", "consumerGroup"):
            group = command.field(name)
            role = self._started.pop((client, group), None) if group else None
            if group and role is not None:
                self._emit(ClientLifecycle(node=client, group=group, role=role, action="shutdown"))

    # ---------------------------------------------------------------------------------------------------- sends
    def _send_request(self, conn: _Connection, frame: WireFrame) -> _SendInfo | None:
        command = frame.command
        header = _parsed(SendMessageHeader.parse, command)
        if header is None:
            return None
        props = decode_properties(header.properties or "")
        if header.batch or command.code == RequestCode.SEND_BATCH_MESSAGE:
            try:
                entries = decode_batch(command.body or b"")
            except ValueError:
                return None
            # As the broker stores them: each message's properties, overridden by the batch's.
            merged = [{**e.properties, **props} for e in entries]
            keys = tuple(p.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) for p in merged)
            tags = tuple(p.get(Property.TAGS) for p in merged)
            delayed = any(_int(p, Property.DELAY_TIME_LEVEL) for p in merged)
        else:
            keys = (props.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX),)
            tags = (props.get(Property.TAGS),)
            delayed = bool(_int(props, Property.DELAY_TIME_LEVEL))
        if not keys:
            return None
        half = (header.sys_flag & SYSFLAG_TRANSACTION_MASK) == TRANSACTION_PREPARED_TYPE or \
            props.get(Property.TRANSACTION_PREPARED, "").lower() == "true"
        info = _SendInfo(
            group=header.producer_group, topic=header.topic, queue_id=header.queue_id, broker=frame.node,
            keys=keys, tags=tags, reconsume_times=header.reconsume_times or 0, half=half,
            plain=not (half or delayed or header.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)),
            producer_group=props.get(Property.PRODUCER_GROUP) or header.producer_group,
        )
        mode = CommunicationMode.ONEWAY if command.is_oneway else self.send_mode
        if not all(keys):
            return info
        msg_id = ",".join(k for k in keys if k)
        key = (header.producer_group, msg_id)
        send = self._next_attempt(key, mode, conn, frame)
        info = attrs.evolve(info, send=key)
        self._emit(SendAttempt(node=send.node, group=info.group, topic=info.topic, broker=info.broker,
                               queue_id=info.queue_id, msg_id=msg_id, attempt=send.attempt,
                               mode=None if mode is None else mode.value))  # type: ignore[arg-type]
        if mode is CommunicationMode.ONEWAY:
            send.final = True
            self._emit(SendResultEvent(node=send.node, group=info.group, topic=info.topic, broker=info.broker,
                                       queue_id=info.queue_id, msg_id=msg_id, attempt=send.attempt,
                                       status="ONEWAY", final=True))
        else:
            send.waiting = (frame.connection, command.opaque)
        return info

    def _next_attempt(self, key: tuple[str, str], mode: CommunicationMode | None, conn: _Connection,
                      frame: WireFrame) -> _Send:
        """The send this request is an attempt of: the current one when it can be its retry, else a new one."""
        send = self._sends.get(key)
        now = frame.ts_ms
        if send is not None and not send.final and send.mode is mode and send.attempt < _limit(mode) and \
                not (mode is CommunicationMode.SYNC and now - send.first_ms > DEFAULT_SEND_MSG_TIMEOUT_MS):
            if send.waiting is not None:
                # The client gave up waiting for the previous attempt's answer before retrying.
                connection, opaque = send.waiting
                waiting = self._connections.get(connection)
                pending = waiting.pending.pop((True, opaque), None) if waiting is not None else None
                if pending is not None:
                    self._send_failed(connection, opaque, pending, "no response before the next attempt",
                                      now_ms=now, final=False)
            send.attempt += 1
            send.final, send.waiting = False, None
            self._sends.move_to_end(key)
            return send
        send = _Send(node=self._node(conn), mode=mode, attempt=1, first_ms=now)
        self._sends[key] = send
        self._sends.move_to_end(key)
        while len(self._sends) > self.max_tracked:
            self._sends.popitem(last=False)
        return send

    def _send_result(self, info: _SendInfo, attempt: tuple[int, int], *, status: str, final_if_attempts_left: bool,
                     code: int | None = None, offset: int | None = None, error: str | None = None) -> None:
        """The result of the attempt sent as ``attempt`` (connection, opaque), if it is its send's current one."""
        send = self._sends.get(info.send) if info.send is not None else None
        if send is None or send.waiting != attempt:
            return
        assert info.send is not None  # the key the send was found by
        final = final_if_attempts_left or send.attempt >= _limit(send.mode)
        send.final, send.waiting = final, None
        self._emit(SendResultEvent(node=send.node, group=info.group, topic=info.topic, broker=info.broker,
                                   queue_id=info.queue_id, msg_id=info.send[1], attempt=send.attempt, status=status,
                                   code=code, offset=offset, error=error, final=final))

    def _send_failed(self, connection: int, opaque: int, pending: _Pending, error: str, *, now_ms: int,
                     final: bool | None = None) -> None:
        """An attempt that will get no answer: final unless the producer retries such failures (with attempts and,
        in SYNC, the default budget left at ``now_ms``)."""
        info: _SendInfo | None = pending.data
        send = self._sends.get(info.send) if info is not None and info.send is not None else None
        if info is None or send is None:
            return
        if final is None:
            late = send.mode is CommunicationMode.SYNC and now_ms - send.first_ms > DEFAULT_SEND_MSG_TIMEOUT_MS
            final = late or not _may_retry(lambda m: failure_retried(Failure.REMOTING, m), send.mode)
        self._send_result(info, (connection, opaque), status="ERROR", final_if_attempts_left=final, error=error)

    def _send_answered(self, pending: _Pending, frame: WireFrame) -> None:
        info: _SendInfo | None = pending.data
        if info is None:
            return
        response = frame.command
        attempt = (frame.connection, response.opaque)
        status = send_status_of(response.code)
        fields = response.ext_fields
        queue_offset = _int(fields, "queueOffset")
        send = self._sends.get(info.send) if info.send is not None else None
        mode = send.mode if send is not None else CommunicationMode.SYNC
        if status is None:
            code = response.code
            self._send_result(info, attempt, status="ERROR", code=code,
                              final_if_attempts_left=not _may_retry(lambda m: response_code_retried(code, m), mode))
            return
        self._send_result(info, attempt, status=status.value, offset=queue_offset,
                          final_if_attempts_left=not _may_retry(lambda m: status_retried(status, m), mode))
        if self.server_events or queue_offset is None:
            return
        if info.half:
            if status is SendStatus.SEND_OK and info.keys[0]:
                self._emit(TxnHalf(node=frame.node, group=info.producer_group, topic=info.topic,
                                   msg_id=info.keys[0], transaction_id=fields.get("transactionId") or info.keys[0],
                                   offset=queue_offset, derived=SEND_ANSWER))
            return
        if not info.plain:
            return
        offset_ids = (fields.get("msgId") or "").split(",")
        if len(offset_ids) != len(info.keys):
            return
        queue_id = _int(fields, "queueId")
        for i, (key, tags, offset_id) in enumerate(zip(info.keys, info.tags, offset_ids, strict=True)):
            msg_id = key or offset_id
            if not msg_id:
                continue
            try:
                commit_log_offset: int | None = decode_offset_message_id(offset_id)[2]
            except ValueError:
                commit_log_offset = None
            self._emit(MessageStored(node=frame.node, topic=info.topic, broker=frame.node,
                                     queue_id=info.queue_id if queue_id is None else queue_id,
                                     offset=queue_offset + i, msg_id=msg_id,
                                     commit_log_offset=commit_log_offset,  # type: ignore[arg-type]
                                     reconsume_times=info.reconsume_times, tags=tags, derived=SEND_ANSWER))

    # ---------------------------------------------------------------------------------------------------- pulls
    def _pull_request(self, conn: _Connection, frame: WireFrame) -> PullMessageHeader | None:
        header = _parsed(PullMessageHeader.parse, frame.command)
        if header is None:
            return None
        self._emit(PullRequestEvent(
            node=self._node(conn), group=header.consumer_group, topic=header.topic, broker=frame.node,
            queue_id=header.queue_id, offset=header.queue_offset,
            commit_offset=header.commit_offset if header.sys_flag & PULL_FLAG_COMMIT_OFFSET else None))
        return header

    def _pull_answered(self, pending: _Pending, frame: WireFrame) -> None:
        header: PullMessageHeader | None = pending.data
        if header is None:
            return
        response = frame.command
        fields = response.ext_fields
        code = response.code
        messages = self._messages(frame.node, response.body) if code == ResponseCode.SUCCESS else []
        count = len(messages)
        try:
            client_status = pull_status(ResponseCode(code))
        except ValueError:
            client_status = None
        offsets: _PullOffsets = {"next_offset": _int(fields, "nextBeginOffset"),
                                 "min_offset": _int(fields, "minOffset"), "max_offset": _int(fields, "maxOffset")}
        common: _PullCommon = {"group": header.consumer_group, "topic": header.topic, "broker": pending.frame.node,
                               "queue_id": header.queue_id, "offset": header.queue_offset, "code": code}
        # The client's PullStatus is not on the wire: it is inferred from the code (derived).
        if client_status is None:
            self._emit(PullResponseEvent(node=pending.node, status="ERROR", **common, derived=PULL_ANSWER))
        else:
            self._emit(PullResponseEvent(node=pending.node, status=client_status.name, count=count, **common,
                                         **offsets, derived=PULL_ANSWER))
        if self.server_events:
            return
        self._received(pending.node, header, pending.frame.node, messages)
        if code not in _PULL_CODES or response.remark not in _STORE_STATUSES:
            return
        if self._broker_ids.get(frame.server_addr) != MASTER_ID:
            return
        self._emit(PullResponseEvent(node=frame.node, status=str(response.remark), count=count,
                                     **(common | {"broker": frame.node}), **offsets, derived=PULL_ANSWER))

    def _received(self, node: str, header: PullMessageHeader, broker: str, messages: list[MessageExt]) -> None:
        """consume.deliver rows derived from a pull answer: the messages the consumer received, less those its own
        tag check drops (PullAPIWrapper.processPullResult re-checks the tags a TAG subscription names; a request
        without its subscription leaves them unknown, and every message counts)."""
        expression = header.subscription if header.expression_type in (None, "TAG") else None
        for msg in messages:
            if not tag_matches(expression, msg.properties.get(Property.TAGS)):
                continue
            self._emit(ConsumeDeliver(node=node, group=header.consumer_group, topic=header.topic, broker=broker,
                                      queue_id=header.queue_id, offset=msg.queue_offset, msg_id=msg.msg_id,
                                      reconsume_times=msg.reconsume_times, derived=PULL_ANSWER))

    def _messages(self, broker: str, body: bytes | None) -> list[MessageExt]:
        """The messages of a pull answer's body; each is remembered by (broker, commit-log offset) for send-backs."""
        messages: list[MessageExt] = []
        pos = 0
        while body and pos < len(body):
            try:
                msg, size = decode_stored_message(body, pos, broker_name=broker, decompress=False)
            except (ValueError, IndexError, UnicodeDecodeError, struct.error):
                break
            pos += size
            messages.append(msg)
            self._pulled[(broker, msg.commit_log_offset)] = _Pulled(
                msg.properties.get(Property.RETRY_TOPIC) or msg.topic, msg.msg_id, msg.reconsume_times)
            self._pulled.move_to_end((broker, msg.commit_log_offset))
        while len(self._pulled) > self.max_tracked:
            self._pulled.popitem(last=False)
        return messages

    def _sendback_answered(self, pending: _Pending, frame: WireFrame) -> None:
        header: SendBackHeader | None = pending.data
        request = pending.frame.command
        if header is None or frame.command.code != ResponseCode.SUCCESS:
            return
        pulled = self._pulled.get((pending.frame.node, header.offset))
        if pulled is None:
            return
        # Where the copy went and with what delay the broker decides and does not answer: left unknown.
        max_times = header.max_reconsume_times if request.version >= VERSION_V3_4_9 else None
        self._emit(SendBack(node=pending.node, group=header.group, topic=pulled.topic, msg_id=pulled.msg_id,
                            reconsume_times=pulled.reconsume_times + 1, delay_level=None, target=None, via="broker",
                            max_reconsume_times=max_times))

    # -------------------------------------------------------------------------------------------- offsets, txns
    def _offset_commit(self, conn: _Connection, frame: WireFrame) -> None:
        """UPDATE_CONSUMER_OFFSET: a consumer's commit when its connection is registered as a consumer of the group,
        else an administrator's write (offset.reset, action update: ``traces.wireoffsets``). Served, the broker
        records the commit itself; the recorder rewrites the unregistered ones."""
        command = frame.command
        group, topic = command.field("consumerGroup"), command.field("topic")
        queue_id, offset = _int(command.ext_fields, "queueId"), _int(command.ext_fields, "commitOffset")
        if not group or not topic or queue_id is None or offset is None:
            return
        registered = conn.registered(group, frame.received_at)
        if self.server_events:
            if not registered:
                self.admin_commits.expect((frame.node, group, topic, queue_id, offset))
            return
        if registered:
            self._emit(OffsetCommit(node=frame.node, group=group, topic=topic, broker=frame.node, queue_id=queue_id,
                                    offset=offset, previous=None, derived=COMMIT_REQUEST))
        else:
            self._emit(OffsetReset(node=frame.node, group=group, topic=topic, broker=frame.node, queue_id=queue_id,
                                   offset=offset, action=RESET_UPDATE, derived=COMMIT_REQUEST))

    def _end_transaction(self, conn: _Connection, command: RemotingCommand) -> None:
        header = _parsed(EndTransactionHeader.parse, command)
        if header is None:
            return
        self._emit(TxnEnd(node=self._node(conn), group=header.producer_group, msg_id=header.msg_id,
                          transaction_id=header.transaction_id or "", state=_STATE_NAMES[header.commit_or_rollback],
                          from_check=header.from_transaction_check))

    def _check(self, frame: WireFrame) -> None:
        command = frame.command
        if not command.body:
            return
        try:
            msg, _ = decode_stored_message(command.body, 0, decompress=False)
        except (ValueError, IndexError, UnicodeDecodeError, struct.error):
            return
        props = msg.properties
        group = props.get(Property.PRODUCER_GROUP)
        times = _int(props, Property.TRANSACTION_CHECK_TIMES)
        msg_id = command.field("msgId") or props.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        transaction_id = command.field("transactionId") or props.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        if not group or times is None or not msg_id or not transaction_id:
            return
        self._emit(TxnCheck(node=frame.node, group=group, msg_id=msg_id, transaction_id=transaction_id,
                            check_times=times, action="check", derived=CHECK_REQUEST))

    # ---------------------------------------------------------------------------------------------------- routes
    def _route_answered(self, conn: _Connection, pending: _Pending, frame: WireFrame) -> None:
        response = frame.command
        topic = pending.frame.command.field("topic")
        if response.code != ResponseCode.SUCCESS or not response.body or not topic:
            return
        try:
            route = TopicRouteData.from_json(response.body)
        except (ValueError, TypeError, AttributeError, UnicodeDecodeError):
            return
        self.learn_brokers(route.broker_datas)
        queues = tuple(f"{qd.broker_name}:{i}:{qd.perm}"
                       for qd in sorted(route.queue_datas, key=lambda q: q.broker_name)
                       for i in range(qd.write_queue_nums))
        node = self._node(conn)
        if self._routes.get((node, topic)) != queues:
            self._routes[(node, topic)] = queues
            self._emit(RouteUpdate(node=node, topic=topic, queues=queues))

    def _cluster_answered(self, frame: WireFrame) -> None:
        response = frame.command
        if response.code != ResponseCode.SUCCESS or not response.body:
            return
        try:
            table = loads_lenient(response.body).get("brokerAddrTable") or {}
            self.learn_brokers(BrokerData.from_dict(data) for data in table.values())
        except (ValueError, TypeError, AttributeError, UnicodeDecodeError):
            return


#: What a send request without the oneway flag may be: the wire cannot tell SYNC from ASYNC.
_WIRE_MODES = (CommunicationMode.SYNC, CommunicationMode.ASYNC)


def _limit(mode: CommunicationMode | None) -> int:
    """The attempt limit of a send in ``mode`` with the default settings (None: the larger of SYNC's and ASYNC's)."""
    return attempt_limit(mode) if mode is not None else max(attempt_limit(m) for m in _WIRE_MODES)


def _may_retry(retried: Callable[[CommunicationMode], bool], mode: CommunicationMode | None) -> bool:
    """Whether the producer may retry after this outcome: in ``mode``, or in either mode when it is not known (a
    result is final only when it ends the send in every mode it may be, so that a retry never follows a final
    result the wire could not be sure of)."""
    return retried(mode) if mode is not None else any(retried(m) for m in _WIRE_MODES)


def _parsed(parse: Callable[[RemotingCommand], Any], command: RemotingCommand) -> Any:
    try:
        return parse(command)
    except (HeaderError, ValueError):
        return None


def _json_body(command: RemotingCommand) -> Any:
    if not command.body:
        return None
    try:
        return loads_lenient(command.body)
    except (ValueError, UnicodeDecodeError):
        return None


def _dicts(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


__all__ = ["SEND_CODES", "WireEvents"]
