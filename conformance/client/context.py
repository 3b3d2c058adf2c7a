"""What a client case works with: a reference cluster served for it, the client processes, the frames they sent.

A :class:`ClientContext` is made per case. :func:`client_case` serves a fresh ``ServedCluster`` on loopback (two
brokers unless the case asks otherwise, with short broker timers) before the case body runs and stops the client
processes cleanly after it. Every frame between a client and the served name server or brokers is observed: kept
whole for the case's checks (:meth:`ClientContext.requests`, :meth:`ClientContext.response_to`) and recorded for the
report (minus the periodic route and heartbeat traffic). Faults come from the served cluster (``ctx.faults``), or
from :meth:`ClientContext.answer`, which makes a broker answer a chosen request with a crafted response.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from rocketspec.conformance import requests
from rocketspec.conformance.checks import CaseChecks
from rocketspec.conformance.cleanup import RUN_TAG, run_name
from rocketspec.conformance.client.driver import START_TIMEOUT_S, DriverError, DriverProcess
from rocketspec.conformance.context import Sent, answer_text
from rocketspec.conformance.model import Case, CaseFailed
from rocketspec.conformance.wire import Recorder, WireClient
from rocketspec.refimpl.faults import Faults
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.served import ServedCluster
from rocketspec.refimpl.tcp import WireFrame
from rocketspec.spec.protocol import (
    DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED,
    RequestCode,
    ResponseCode,
)

T = TypeVar("T")
_serial = itertools.count(1)

# The served brokers' timers, short so that retries, delay levels and check-backs come within a case's patience.
SERVED_OPTIONS: dict[str, Any] = {
    "message_delay_level": " ".join(["1s"] * 18),
    "transaction_timeout_ms": 1000,
    "transaction_check_interval_ms": 1000,
    "transaction_check_max": 3,
}
# Periodic traffic the report leaves out (the checks still see it).
_QUIET_CODES = frozenset({RequestCode.HEART_BEAT, RequestCode.GET_ROUTEINFO_BY_TOPIC,
                          RequestCode.GET_CONSUMER_LIST_BY_GROUP})
SEND_CODES = frozenset({RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE})
_V2_NAMES = {"a": "producerGroup", "b": "topic", "e": "queueId", "f": "sysFlag", "i": "properties",
             "j": "reconsumeTimes", "l": "maxReconsumeTimes"}
# What a driver is given unless the case says otherwise (the contract's defaults).
# sendMsgTimeout for every case but the budget's own: a client on a loaded machine must not spend RocketMQ's 3 s
# default before its first attempt reaches the wire.
SUITE_SEND_TIMEOUT_MS = 10_000
# mqClientApiTimeout (route lookups, heartbeats at start) likewise: a client started on a loaded machine must not fail
# its start on RocketMQ's 3 s default.
SUITE_API_TIMEOUT_MS = 10_000
DEFAULT_ENV = {
    "SEND_MODE": "sync", "SEND_TIMEOUT_MS": str(SUITE_SEND_TIMEOUT_MS), "API_TIMEOUT_MS": str(SUITE_API_TIMEOUT_MS),
    "RETRIES": str(DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED), "LATENCY_FAULT": "false", "SUBSCRIPTION": "*",
    "MESSAGE_MODEL": "CLUSTERING", "ORDERLY": "false", "CONSUME_FROM": "first", "CONSUME_RESULT": "success",
    "TX_LOCAL": "commit", "TX_CHECK": "commit",
}


@attrs.frozen
class Frame:
    """One frame a client exchanged with the served cluster, ``at_s`` seconds into the case."""

    at_s: float
    connection: int
    node: str
    client_addr: str
    from_client: bool
    command: RemotingCommand = attrs.field(repr=False)

    @property
    def code(self) -> int:
        return self.command.code

    @property
    def opaque(self) -> int:
        return self.command.opaque

    def field(self, name: str, default: str | None = None) -> str | None:
        """A header field; the one-letter names of SEND_MESSAGE_V2 are read under their v1 names too."""
        fields = self.command.ext_fields
        if name in fields:
            return fields[name]
        for short, long in _V2_NAMES.items():
            if long == name and short in fields:
                return fields[short]
        return default

    def int_field(self, name: str, default: int = -1) -> int:
        value = self.field(name)
        try:
            return int(value) if value is not None else default
        except ValueError:
            return default


class ClientContext(CaseChecks):
    """The served cluster, client processes, observed frames and checks of one client case."""

    def __init__(self, case: Case, budget_s: float, command: Sequence[str], *, workdir: Path | None = None) -> None:
        self.case = case
        self.command = list(command)
        self.workdir = workdir
        self.recorder = Recorder(limit=600)
        self.started = time.monotonic()
        self.deadline = self.started + budget_s
        self.served: ServedCluster | None = None
        self.drivers: list[DriverProcess] = []
        self.aborted = False
        # Set when a driver never got as far as {"event":"started"}: the suite does not try the next cases.
        self.driver_broken: str | None = None
        self._lock = threading.Lock()
        self._frames: list[Frame] = []
        self._quiet: set[tuple[int, int]] = set()
        self._suite_addrs: set[str] = set()
        self._clients: list[WireClient] = []
        self._hooks: list[_AnswerHook] = []

    # ------------------------------------------------------------------------------------------------- serving
    def serve(self, brokers: int = 2) -> ServedCluster:
        self.served = ServedCluster(brokers=brokers, observer=self._observe, **SERVED_OPTIONS)
        return self.served

    @property
    def cluster(self) -> ServedCluster:
        if self.served is None:
            raise RuntimeError("the case has no served cluster")
        return self.served

    @property
    def faults(self) -> Faults:
        return self.cluster.faults

    @property
    def broker_names(self) -> list[str]:
        return list(self.cluster.broker_addrs)

    def _observe(self, wire: WireFrame) -> None:
        if wire.client_addr in self._suite_addrs:
            return
        # A request counts from when it came in, not from when its executor ran it: the order a client sent in.
        seen = wire.received_at if wire.received_at is not None else time.monotonic()
        frame = Frame(round(seen - self.started, 3), wire.connection, wire.node, wire.client_addr,
                      wire.from_client, wire.command)
        key = (wire.connection, wire.command.opaque)
        with self._lock:
            bisect.insort_right(self._frames, frame, key=_seen_at)
            if wire.from_client and not wire.command.is_response and wire.command.code in _QUIET_CODES:
                self._quiet.add(key)
                return
            if not wire.from_client and wire.command.is_response and key in self._quiet:
                self._quiet.discard(key)
                return
        peer = f"{wire.node}/{wire.client_addr}"
        self.recorder.record("<" if wire.from_client else ">", peer, wire.command)

    # ---------------------------------------------------------------------------------------------------- names
    def name(self, kind: str) -> str:
        return run_name(kind, next(_serial))

    def topic(self, queues: int, *, brokers: Iterable[str] | None = None, order: bool = False) -> str:
        """A new topic with ``queues`` queues on the named brokers (all by default), routed at once."""
        topic = self.name("topic")
        self.cluster.create_topic(topic, queues, brokers=list(brokers) if brokers is not None else None, order=order)
        return topic

    def group(self) -> str:
        return self.name("group")

    # -------------------------------------------------------------------------------------------------- drivers
    def start(self, role: str, *, topic: str, group: str, count: int = 0, wait_started: bool = True,
              **options: object) -> DriverProcess:
        """Start one client process playing ``role``; ``options`` are contract variables without the prefix
        (``send_mode="async"``, ``consume_result="later"``)."""
        if count < 0:
            raise ValueError(f"ROCKETSPEC_COUNT is a count of messages or deliveries (0: no limit), not {count}")
        self.check_aborted()
        index = len(self.drivers) + 1
        values = {**DEFAULT_ENV, **{k.upper(): _env_text(v) for k, v in options.items()}}
        env = {
            "ROCKETSPEC_NAMESRV": self.cluster.namesrv_addr,
            "ROCKETSPEC_CASE": self.case.id,
            "ROCKETSPEC_ROLE": role,
            "ROCKETSPEC_TOPIC": topic,
            "ROCKETSPEC_GROUP": group,
            "ROCKETSPEC_COUNT": str(count),
            "ROCKETSPEC_INSTANCE": f"rscf-{RUN_TAG}-{next(_serial)}",
            **{f"ROCKETSPEC_{k}": v for k, v in values.items()},
        }
        driver = DriverProcess(self.command, env, label=f"{role} #{index}", started_at=self.started,
                               workdir=self.workdir)
        self.drivers.append(driver)
        if wait_started:
            try:
                # Within the case's budget, leaving it a second to say why.
                driver.wait_started(min(START_TIMEOUT_S, max(0.5, self.remaining() - 1.0)))
            except DriverError as error:
                self.driver_broken = str(error)
                raise
        return driver

    def finish(self) -> None:
        """Stop every client process as the case ends (SIGTERM, at most 10 s each): a driver that does not stop,
        or exits with an error, makes the case an error."""
        first: BaseException | None = None
        for driver in self.drivers:
            try:
                driver.stop()
            except BaseException as error:
                first = first or error
        if first is not None:
            raise first

    # --------------------------------------------------------------------------------------------------- frames
    def frames(self) -> list[Frame]:
        with self._lock:
            return list(self._frames)

    def requests(self, codes: int | Iterable[int], *, node: str | None = None, since: float = 0.0,
                 where: Callable[[Frame], bool] | None = None) -> list[Frame]:
        """Requests the clients sent with one of ``codes`` (to ``node``, at or after ``since``), in order."""
        wanted = {codes} if isinstance(codes, int) else set(codes)
        return [f for f in self.frames() if f.from_client and not f.command.is_response and f.code in wanted
                and (node is None or f.node == node) and f.at_s >= since and (where is None or where(f))]

    def response_to(self, request: Frame) -> Frame | None:
        for frame in self.frames():
            if (not frame.from_client and frame.command.is_response and frame.connection == request.connection
                    and frame.opaque == request.opaque):
                return frame
        return None

    def server_requests(self, code: int) -> list[Frame]:
        """Requests the served cluster sent to clients (CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED)."""
        return [f for f in self.frames() if not f.from_client and not f.command.is_response and f.code == code]

    def wait_requests(self, codes: int | Iterable[int], count: int, timeout: float, *, what: str,
                      node: str | None = None, since: float = 0.0,
                      where: Callable[[Frame], bool] | None = None) -> list[Frame]:
        """Wait until the clients sent ``count`` such requests; the case fails saying ``what`` otherwise."""
        found: list[Frame] = []

        def enough() -> bool:
            found[:] = self.requests(codes, node=node, since=since, where=where)
            return len(found) >= count

        if not self.poll(enough, timeout):
            raise CaseFailed(f"{what} within {timeout:g} s", f"{len(found)} of {count} seen")
        return found

    # ----------------------------------------------------------------------------------------------- the suite's
    def suite_client(self, node: str) -> WireClient:
        """A connection of the suite's own to ``node`` (a broker name or ``namesrv``); its frames are not the
        client's and are left out of the checks."""
        addr = self.cluster.namesrv_addr if node == "namesrv" else self.cluster.broker_addrs[node]
        client = WireClient(addr, timeout=5.0)
        host, port = client.sock.getsockname()[:2]
        self._suite_addrs.add(f"{host}:{port}")
        self._clients.append(client)
        return client

    def put_messages(self, topic: str, node: str, queue_id: int, count: int, *, tags: str | None = None) -> list[Sent]:
        """Store ``count`` messages in one queue before the client starts (set-up, not a check)."""
        client = self.suite_client(node)
        sent = []
        for index in range(count):
            body = f"rocketspec set-up {index}".encode()
            answer = client.request(requests.send_v2("rscf_setup_producer", topic, body, queue_id,
                                                     requests.message_properties(tags)))
            if answer.code != ResponseCode.SUCCESS:
                raise CaseFailed(f"the set-up send to {topic}:{queue_id} answered SUCCESS", answer_text(answer))
            sent.append(Sent(answer.require("msgId"), int(answer.require("queueId")),
                             int(answer.require("queueOffset")), answer))
        return sent

    def consumer_ids(self, group: str, node: str | None = None) -> list[str]:
        """The client ids the broker lists for ``group`` (GET_CONSUMER_LIST_BY_GROUP), what consumers allocate by."""
        client = self.suite_client(node or self.broker_names[0])
        answer = client.request(requests.consumer_list(group))
        if answer.code != ResponseCode.SUCCESS:
            return []
        body = requests.json_body(answer) or {}
        return [str(i) for i in body.get("consumerIdList", [])]

    def stored_offset(self, group: str, topic: str, node: str, queue_id: int) -> int:
        """The broker's committed offset of a queue for ``group`` (QUERY_CONSUMER_OFFSET), -1 when none."""
        client = self.suite_client(node)
        answer = client.request(requests.query_consumer_offset(group, topic, queue_id))
        if answer.code != ResponseCode.SUCCESS:
            return -1
        return int(answer.require("offset"))

    def answer(self, node: str, code: int, respond: Callable[[RemotingCommand], RemotingCommand | None],
               times: int = 1) -> _AnswerHook:
        """Make broker ``node`` answer its next ``times`` requests with ``code`` by ``respond(request)`` (None:
        handle normally), instead of processing them: the crafted answers a fault plan cannot express."""
        hook = _AnswerHook(self.cluster, node, code, respond, times)
        self._hooks.append(hook)
        return hook

    # --------------------------------------------------------------------------------------------------- checks
    def now(self) -> float:
        return round(time.monotonic() - self.started, 3)

    def sleep(self, seconds: float) -> None:
        """Let the clients run for ``seconds`` (never past the budget)."""
        end = min(time.monotonic() + seconds, self.deadline)
        while time.monotonic() < end:
            self.check_aborted()
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))

    # ------------------------------------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        for driver in self.drivers:
            driver.close()
        for hook in self._hooks:
            hook.remove()
        for client in self._clients:
            client.close()
        if self.served is not None:
            self.served.close()

    def abort(self) -> None:
        self.aborted = True
        self.close()


def _seen_at(frame: Frame) -> float:
    return frame.at_s


def _env_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _AnswerHook:
    """Answers chosen requests of one broker with a crafted response (the broker's ``handle`` is wrapped)."""

    def __init__(self, served: ServedCluster, node: str, code: int,
                 respond: Callable[[RemotingCommand], RemotingCommand | None], times: int) -> None:
        cluster = served.cluster
        assert cluster is not None
        self.broker = cluster.brokers[node]
        self.code = code
        self.respond = respond
        self.left = times
        self.answered: list[RemotingCommand] = []
        self._original = self.broker.handle
        self.broker.handle = self._handle  # type: ignore[method-assign]

    def _handle(self, request: RemotingCommand, channel: Any) -> RemotingCommand | None:
        if self.left > 0 and request.code == self.code:
            crafted = self.respond(request)
            if crafted is not None:
                self.left -= 1
                self.answered.append(request)
                return crafted
        return self._original(request, channel)

    def remove(self) -> None:
        self.left = 0


def client_case(brokers: int = 2) -> Callable[[Callable[[ClientContext], None]], Callable[[ClientContext], None]]:
    """Wrap a client case body: serve a fresh cluster with ``brokers`` brokers first, stop the clients after."""

    def wrap(body: Callable[[ClientContext], None]) -> Callable[[ClientContext], None]:
        @functools.wraps(body)
        def run(ctx: ClientContext) -> None:
            ctx.serve(brokers)
            body(ctx)
            ctx.finish()

        return run

    return wrap
