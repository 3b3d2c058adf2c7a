"""A cluster served over TCP: the reference name server and brokers as a test double for real RocketMQ clients.

```python
with ServedCluster(brokers=2) as served:                 # 127.0.0.1, ephemeral ports, wall clock
    served.create_topic("TopicTest", queues=4)
    producer = rocketmq.client.Producer("PG"); producer.set_name_server_address(served.namesrv_addr)
    served.faults.fail("broker-a", "SEND_MESSAGE", code="SYSTEM_BUSY", times=1)
```

The name server listens on ``port`` (9876 for ``rocketspec serve``; 0 picks a free port) and every broker on a port of
its own; a broker registers the address clients can reach (``advertise_host``, default the bound host, or this
machine's address when bound to all interfaces), which is what the name server hands out in routes. The in-process
``Cluster`` underneath (``served.cluster``) runs on a real clock, on the sockets' own loop (``WireRuntime``: a request
is read, run and answered on one thread), and can be used alongside: in-process clients,
inspection, broker stop and restart (connections to a stopped broker close; it serves again once restarted).

``acl=PATH`` (a ``plain_acl.yml``) turns plain ACL on at every broker, as ``aclEnable`` does, and guards the name
server's changing requests (rocketspec's extension, ``refimpl/acl.py``).

``limits=ServerLimits(...)`` bounds what clients can make the server do and hold (``refimpl/limits.py``): a bounded
queue per request kind answering SYSTEM_BUSY past it, backpressure, idle and slow connections closed, a byte budget;
``served.load()`` counts what they did.

``sinks=[...]`` (``Cluster``'s) hands the run's events to the caller's sinks and ``observer=`` shows it every frame:
``rocketspec.traces.served.TracedServer`` records a served run as a trace with both.
"""

from __future__ import annotations

import errno
import functools
import json
import logging
import socket
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from rocketspec.refimpl.acl import NamesrvAclGuard, PlainAccessValidator
from rocketspec.refimpl.cluster import Cluster, broker_name
from rocketspec.refimpl.connections import ConnectionGuard
from rocketspec.refimpl.faults import FaultRule, Faults, parse_request_code, parse_response_code
from rocketspec.refimpl.limits import ServerLimits
from rocketspec.refimpl.remoting import Server
from rocketspec.refimpl.tcp import (
    WILDCARD_HOSTS,
    TcpEndpoint,
    WireFrame,
    WireObserver,
    this_machine_host,
)
from rocketspec.refimpl.wireloop import WireLoop, WireRuntime
from rocketspec.refimpl.workqueue import WorkQueues
from rocketspec.spec.protocol import DEFAULT_NAMESRV_PORT, VIP_CHANNEL_PORT_OFFSET

NAMESRV_NODE = "namesrv"

log = logging.getLogger("rocketspec.served")


class FaultFileError(ValueError):
    """A fault file that cannot be read or has a rule that is not valid."""


# Ephemeral ports drawn for a broker before giving up on finding port - 2 free as well.
VIP_BIND_ATTEMPTS = 50
_RULE_KEYS = {"action", "target", "broker", "request", "code", "remark", "ms", "times", "client", "probability"}


def fault_rule(spec: Mapping[str, Any]) -> FaultRule:
    """A fault rule from its description (one entry of a fault file).

    ``{"action": "fail", "target": "broker-a", "request": "SEND_MESSAGE", "code": "SYSTEM_BUSY", "times": 1}``;
    actions ``fail`` (with ``code``, a ResponseCode name or number, and optional ``remark``), ``delay`` (with ``ms``),
    ``drop`` (the request is lost), ``drop_response`` (processed, the response is lost), ``duplicate``,
    ``disconnect``; ``target`` is ``namesrv``, a broker name or ``*`` (``broker`` is accepted as its alias);
    ``request`` a RequestCode name or number (``SEND_MESSAGE`` covers V2 and batch); ``client`` a client address.
    """
    if not isinstance(spec, Mapping):
        raise FaultFileError(f"a fault rule must be an object, not {type(spec).__name__}")
    unknown = sorted(set(spec) - _RULE_KEYS)
    if unknown:
        known = ", ".join(sorted(_RULE_KEYS))
        raise FaultFileError(f"unknown key(s) {', '.join(unknown)} in fault rule; known: {known}")
    action = spec.get("action")
    if action not in FaultRule.ACTIONS:
        raise FaultFileError(f"fault action must be one of {', '.join(FaultRule.ACTIONS)}, not {action!r}")
    target = spec.get("target", spec.get("broker", "*"))
    if not isinstance(target, str) or not target:
        raise FaultFileError(f"fault target must be a node name or '*', not {target!r}")
    for key in ("times", "ms"):
        value = spec.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise FaultFileError(f"{key} must be a non-negative integer, not {value!r}")
    if action == "delay" and not spec.get("ms"):
        raise FaultFileError("a delay fault needs ms > 0")
    probability = spec.get("probability", 1.0)
    if isinstance(probability, bool) or not isinstance(probability, (int, float)) or not 0 <= probability <= 1:
        raise FaultFileError(f"probability must be a number within [0, 1], not {probability!r}")
    client = spec.get("client")
    if client is not None and not isinstance(client, str):
        raise FaultFileError(f"client must be a client address, not {client!r}")
    try:
        request = spec.get("request")
        if request is not None and not isinstance(request, (int, str)):
            raise ValueError(f"request must be a RequestCode name or number, not {request!r}")
        code = spec.get("code", "SYSTEM_ERROR")
        if isinstance(code, bool) or not isinstance(code, (int, str)):
            raise ValueError(f"code must be a ResponseCode name or number, not {code!r}")
        return FaultRule(action, target, parse_request_code(request), client,
                         response_code=parse_response_code(code), remark=spec.get("remark") or "injected fault",
                         delay_ms=int(spec.get("ms") or 0), times=spec.get("times"), probability=float(probability))
    except ValueError as error:
        raise FaultFileError(str(error)) from None


def load_fault_file(path: str | Path) -> list[FaultRule]:
    """The rules of a fault file: a JSON list of rules, or an object with a ``faults`` list."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise FaultFileError(f"cannot read fault file {path}: {error.strerror or error}") from None
    except ValueError as error:
        raise FaultFileError(f"fault file {path} is not JSON: {error}") from None
    if isinstance(data, dict):
        data = data.get("faults")
    if not isinstance(data, list):
        raise FaultFileError(f"fault file {path} must hold a list of rules (or {{\"faults\": [...]}})")
    rules = []
    for index, spec in enumerate(data):
        try:
            rules.append(fault_rule(spec))
        except FaultFileError as error:
            raise FaultFileError(f"fault file {path}, rule {index + 1}: {error}") from None
    return rules


T = TypeVar("T")


def _advertised(host: str, advertise_host: str | None) -> str:
    """The IPv4 address brokers register: message ids carry it as 4 bytes, as Java's ``brokerIP1`` does. A host
    name is resolved; a wildcard bind advertises this machine's address."""
    name = advertise_host or host
    if name in WILDCARD_HOSTS:
        return this_machine_host()
    try:
        return socket.gethostbyname(name)
    except OSError as error:
        raise ValueError(f"cannot resolve {name!r} to an IPv4 address for brokers to advertise: "
                         f"{error.strerror or error}") from None


class ServedCluster:
    """A name server and ``brokers`` brokers served over TCP on ``host``; see the module docstring."""

    def __init__(
        self,
        brokers: int = 1,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        broker_ports: Iterable[int] | None = None,
        advertise_host: str | None = None,
        data_dir: str | Path | None = None,
        faults: str | Path | Iterable[FaultRule | Mapping[str, Any]] | None = None,
        observer: WireObserver | None = None,
        observers: Iterable[WireObserver] = (),
        limits: ServerLimits | None = None,
        **cluster_options: Any,
    ) -> None:
        if not isinstance(brokers, int) or isinstance(brokers, bool) or brokers < 1:
            raise ValueError("brokers must be a positive integer")
        if not isinstance(port, int) or not 0 <= port < 65536:
            raise ValueError(f"port must be within 0..65535, not {port!r}")
        ports = list(broker_ports) if broker_ports is not None else [0] * brokers
        if len(ports) != brokers:
            raise ValueError(f"broker_ports has {len(ports)} ports for {brokers} brokers")
        if limits is not None and not isinstance(limits, ServerLimits):
            raise ValueError(f"limits must be a ServerLimits, not {type(limits).__name__}")
        self.limits = limits or ServerLimits()
        rules = self._rules(faults)
        if cluster_options.setdefault("clock", "real") != "real":
            raise ValueError("a served cluster runs on the real clock")
        # A server may run for days: its events go to its sinks (if any), not into memory, unless asked for.
        cluster_options.setdefault("keep_events", False)
        self.host = host
        self.advertise_host = _advertised(host, advertise_host)
        self._closed = False
        self.wire = WireLoop()
        self.guard = ConnectionGuard(self.limits, self.wire.loop)
        self._endpoints: dict[str, TcpEndpoint] = {}
        self._observers: list[WireObserver] = [*([observer] if observer is not None else []), *observers]
        self.cluster: Cluster | None = None
        self._namesrv_guard: NamesrvAclGuard | None = None
        self.queues: WorkQueues | None = None
        try:
            self._start(brokers, port, ports, data_dir, rules, cluster_options)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _rules(faults: str | Path | Iterable[FaultRule | Mapping[str, Any]] | None) -> list[FaultRule]:
        if faults is None:
            return []
        if isinstance(faults, (str, Path)):
            return load_fault_file(faults)
        return [rule if isinstance(rule, FaultRule) else fault_rule(rule) for rule in faults]

    def _start(self, brokers: int, port: int, ports: list[int], data_dir: str | Path | None,
               rules: list[FaultRule], cluster_options: dict[str, Any]) -> None:
        names = [broker_name(i) for i in range(brokers)]
        # Sockets first (their ports are the addresses brokers register), serving only once the cluster exists.
        for node, wanted in [(NAMESRV_NODE, port), *zip(names, ports, strict=True)]:
            endpoint = TcpEndpoint(node, functools.partial(self._server_of, node), self.wire, guard=self.guard,
                                   namesrv=node == NAMESRV_NODE, observer=_Fanout(self))
            try:
                bound = self._bind_vip_pair(endpoint, wanted) if node != NAMESRV_NODE else endpoint.bind(
                    self.host, wanted)
            except OSError as error:
                raise OSError(error.errno, f"cannot listen on {self.host}:{wanted} for {node}: "
                                           f"{error.strerror or error}") from None
            endpoint.addr = f"{self.advertise_host}:{bound}"
            self._endpoints[node] = endpoint
        self.cluster = Cluster(
            brokers,
            runtime=WireRuntime(self.wire, cluster_options.get("seed", 0)),
            data_dir=data_dir,
            namesrv_addr=self._endpoints[NAMESRV_NODE].addr,
            broker_addrs=[self._endpoints[name].addr for name in names],
            **cluster_options,
        )
        for rule in rules:
            self.cluster.faults.add(rule)
        runtime = self.cluster.runtime
        self.queues = WorkQueues(runtime.call_soon, self.limits)
        self.wire.call(self.guard.start)
        for endpoint in self._endpoints.values():
            endpoint.serve(runtime, self.queues, self.cluster.faults)

    def _bind_vip_pair(self, endpoint: TcpEndpoint, wanted: int) -> int:
        """A broker listens on its port and, like ``BrokerController``'s fastRemotingServer, on port - 2: the VIP
        channel a Java client with ``vipChannelEnabled`` dials. An ephemeral port is drawn again until both fit."""
        failure = OSError(errno.EADDRINUSE, "no port pair")
        port = wanted
        for _ in range(VIP_BIND_ATTEMPTS if wanted == 0 else 1):
            port = endpoint.bind(self.host, wanted)
            if port > VIP_CHANNEL_PORT_OFFSET:
                try:
                    endpoint.bind_also(self.host, port - VIP_CHANNEL_PORT_OFFSET)
                    return port
                except OSError as error:
                    failure = error
            else:
                failure = OSError(errno.EADDRNOTAVAIL, f"no VIP channel port below {port}")
            endpoint.unbind()
        raise OSError(failure.errno, f"the VIP channel port {port - VIP_CHANNEL_PORT_OFFSET} is not free "
                                     f"({failure.strerror or failure})")

    def _observe(self, frame: WireFrame) -> None:
        for observer in self._observers:
            observer(frame)

    def _connection_closed(self, connection: int, ts_ms: int) -> None:
        for observer in self._observers:
            closed = getattr(observer, "connection_closed", None)
            if closed is not None:
                closed(connection, ts_ms)

    def _server_of(self, node: str) -> Server | None:
        cluster = self.cluster
        if cluster is None:
            return None
        if node == NAMESRV_NODE:
            if cluster.acl is not None:
                # rocketspec's name-server ACL (acl.py): only over TCP; the brokers register in-process, unchecked.
                if self._namesrv_guard is None:
                    self._namesrv_guard = NamesrvAclGuard(cluster.namesrv, PlainAccessValidator(cluster.acl))
                return self._namesrv_guard
            return cluster.namesrv
        return cluster.brokers.get(node)

    # ------------------------------------------------------------------------------------------------------ access
    @property
    def namesrv_addr(self) -> str:
        """``host:port`` of the name server, what clients are configured with."""
        return self._endpoints[NAMESRV_NODE].addr

    @property
    def broker_addrs(self) -> dict[str, str]:
        return {node: e.addr for node, e in self._endpoints.items() if node != NAMESRV_NODE}

    @property
    def faults(self) -> Faults:
        """Fault injection by node (``namesrv``, ``broker-a``, …), request code and client address, at run time."""
        return self._cluster.faults

    @property
    def _cluster(self) -> Cluster:
        if self.cluster is None or self._closed:
            raise RuntimeError("the served cluster is closed")
        return self.cluster

    def endpoint(self, node: str) -> TcpEndpoint:
        """The listener (and its connections) serving ``node``: ``namesrv`` or a broker's name."""
        return self._endpoints[node]

    def connections(self, node: str | None = None) -> int:
        """Open client connections (to one node, or in all)."""
        return sum(len(e.connections) for n, e in self._endpoints.items() if node in (None, n))

    def frame_errors(self) -> int:
        """Connections closed because they sent bytes that were not frames."""
        return sum(e.frame_errors for e in self._endpoints.values())

    def load(self) -> dict[str, int]:
        """What the limits did so far: requests refused or expired (answered SYSTEM_BUSY), connections refused or
        closed (idle, slow frame, answers unread), and what is held now (requests queued, their bytes)."""
        guard = self.guard
        return {
            "refused_requests": sum(e.refused for e in self._endpoints.values()),
            "expired_requests": sum(e.expired for e in self._endpoints.values()),
            "queued_requests": self.queues.queued if self.queues else 0,
            "queued_bytes": self.queues.queued_bytes if self.queues else 0,
            "refused_connections": guard.refused_connections,
            "closed_idle": guard.closed_idle,
            "closed_slow": guard.closed_slow,
            "closed_unread": guard.closed_unread,
            "connections": self.connections(),
        }

    def add_observer(self, observer: WireObserver) -> None:
        """Also show every frame to ``observer`` (called on the loop that serves the sockets: it must not block)."""
        self._observers.append(observer)

    def submit(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the loop that serves the sockets (where the cluster's state lives) and return its result."""
        return self._cluster.runtime.submit(fn)

    def create_topic(self, topic: str, queues: int = 4, **options: Any) -> None:
        """Create a topic on every broker (or ``brokers=[...]``) and register its route now (``Cluster``)."""
        self._cluster.create_topic(topic, queues, **options)

    def stop_broker(self, name: str, *, crash: bool = False) -> None:
        """Stop a broker; its clients' connections close and new ones are closed on their first request."""
        self._cluster.stop_broker(name, crash=crash)
        self._endpoints[name].drop_connections()

    def start_broker(self, name: str) -> None:
        self._cluster.start_broker(name)

    def restart_broker(self, name: str, *, crash: bool = False) -> None:
        self.stop_broker(name, crash=crash)
        self.start_broker(name)

    # ------------------------------------------------------------------------------------------------- lifecycle
    def __enter__(self) -> ServedCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close every connection and listener, then the cluster (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for endpoint in self._endpoints.values():
            try:
                endpoint.close()
            except Exception as error:  # closing what is left matters more than the first failure
                log.warning("closing %s: %s", endpoint.node, error)
        self.wire.call(self.guard.stop)
        if self.cluster is not None:
            self.cluster.close()
        self.wire.stop()

    def describe(self) -> str:
        """The addresses, one per line, as ``rocketspec serve`` prints them."""
        lines = [f"namesrv {self.namesrv_addr}"]
        lines += [f"{name} {addr}" for name, addr in self.broker_addrs.items()]
        return "\n".join(lines)


class _Fanout:
    """The one observer every endpoint calls: passes frames and closed connections on to the cluster's observers."""

    def __init__(self, owner: ServedCluster) -> None:
        self._owner = owner

    def __call__(self, frame: WireFrame) -> None:
        self._owner._observe(frame)

    def connection_closed(self, connection: int, ts_ms: int) -> None:
        self._owner._connection_closed(connection, ts_ms)


__all__ = ["DEFAULT_NAMESRV_PORT", "FaultFileError", "ServedCluster", "fault_rule", "load_fault_file"]
