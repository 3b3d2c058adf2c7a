"""Faults of the simulated network, in one place: which requests fail, are dropped, delayed, duplicated or cut.

A ``Faults`` table belongs to the in-process ``Network`` (``refimpl.remoting``) and, through ``rocketspec serve
--faults``, to the TCP transport: each ``FaultRule`` picks requests by target node, request code and client, and an
action (``fail`` with a response code, ``drop``, ``drop_response``, ``delay``, ``duplicate``, ``disconnect``), with a
count, a probability and the time it applies from; every fault applied is recorded as a ``FaultInject`` event.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable

import attrs

from rocketspec.refimpl.events import EventLog, FaultInject
from rocketspec.refimpl.runtime import Runtime
from rocketspec.spec.protocol import RequestCode, ResponseCode


@attrs.define
class FaultRule:
    """One fault: ``action`` on requests to ``target`` (node name, or ``*``) with ``code`` (or any) from ``client``.

    Actions: ``fail`` (answer ``response_code`` without processing), ``drop`` (the request is lost), ``drop_response``
    (processed, the response is lost), ``delay`` (``delay_ms`` more each way), ``duplicate`` (delivered twice),
    ``disconnect`` (the connection breaks). ``times`` None means every matching request; ``probability`` draws from the
    runtime's seeded generator.
    """

    action: str
    target: str = "*"
    code: int | frozenset[int] | None = None
    client: str | None = None
    response_code: int = ResponseCode.SYSTEM_ERROR
    remark: str | None = None
    delay_ms: int = 0
    times: int | None = None
    probability: float = 1.0
    fired: int = 0

    ACTIONS = ("fail", "drop", "drop_response", "delay", "duplicate", "disconnect")

    def __attrs_post_init__(self) -> None:
        if self.action not in self.ACTIONS:
            raise ValueError(f"unknown fault action {self.action!r}; one of {', '.join(self.ACTIONS)}")
        if self.times is not None and self.times < 0:
            raise ValueError("times must be >= 0")
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError("probability must be within [0, 1]")

    def matches(self, target: str, code: int, client: str) -> bool:
        if self.times is not None and self.fired >= self.times:
            return False
        return (
            self.target in ("*", target)
            and (self.code is None or code == self.code or (isinstance(self.code, frozenset) and code in self.code))
            and (self.client is None or self.client == client)
        )


#: The actions of a request no rule matches.
NO_ACTIONS: frozenset[str] = frozenset()

# A fault named after a request family covers its variants: RocketMQ serves them with one processor, and clients pick
# the variant (the Java producer sends SEND_MESSAGE_V2, the C++ client SEND_MESSAGE, batches SEND_BATCH_MESSAGE).
REQUEST_FAMILIES: dict[str, frozenset[int]] = {
    "SEND_MESSAGE": frozenset({RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE}),
    "SEND_REPLY_MESSAGE": frozenset({RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2}),
}


def parse_request_code(code: int | str | None) -> int | frozenset[int] | None:
    """A request code by number or ``RequestCode`` name; ``SEND_MESSAGE`` covers the V2 and batch sends too."""
    if code is None or code == "*":
        return None
    if isinstance(code, int):
        return int(code)
    if code in REQUEST_FAMILIES:
        return REQUEST_FAMILIES[code]
    try:
        return int(RequestCode[code])
    except KeyError:
        if code.isdigit():
            return int(code)
        raise ValueError(f"unknown request code {code!r}") from None


def parse_response_code(code: int | str) -> int:
    if isinstance(code, int):
        return int(code)
    try:
        return int(ResponseCode[code])
    except KeyError:
        if code.isdigit():
            return int(code)
        raise ValueError(f"unknown response code {code!r}") from None


class Faults:
    """The fault table a transport consults for every request (in-process network or TCP server)."""

    def __init__(self, runtime: Runtime, events: EventLog | None = None) -> None:
        self._runtime = runtime
        self._events = events
        #: Every rule added and not removed, exhausted ones too (their ``fired`` counts stay readable).
        self.rules: list[FaultRule] = []
        # The rules that may still fire, by request code (None: any code), each as (order added, rule): a long run
        # adds thousands of rules of a few firings each, and every request would otherwise scan them all.
        self._armed: dict[int | None, list[tuple[int, FaultRule]]] = {}
        self._added = itertools.count()

    @property
    def armed(self) -> bool:
        """Whether any rule may still fire (the transports skip ``decide`` otherwise)."""
        return any(self._armed.values())

    def add(self, rule: FaultRule) -> FaultRule:
        self.rules.append(rule)
        if rule.times is None or rule.fired < rule.times:
            entry = (next(self._added), rule)
            codes: Iterable[int | None] = (
                [rule.code] if rule.code is None or isinstance(rule.code, int) else sorted(rule.code))
            for code in codes:
                self._armed.setdefault(code, []).append(entry)
        return rule

    def _disarm(self, gone: Callable[[FaultRule], bool]) -> None:
        for code, entries in list(self._armed.items()):
            kept = [entry for entry in entries if not gone(entry[1])]
            if kept:
                self._armed[code] = kept
            else:
                del self._armed[code]

    def fail(
        self,
        target: str,
        request: int | str | None = None,
        *,
        code: int | str = "SYSTEM_ERROR",
        remark: str | None = None,
        times: int | None = None,
        client: str | None = None,
        probability: float = 1.0,
    ) -> FaultRule:
        """Answer matching requests with the error ``code`` (a ResponseCode name or number) without processing them."""
        return self.add(FaultRule("fail", target, parse_request_code(request), client, parse_response_code(code),
                                  remark or "injected fault", 0, times, probability))

    def drop(self, target: str, request: int | str | None = None, *, times: int | None = None,
             client: str | None = None, probability: float = 1.0, response: bool = False) -> FaultRule:
        """Lose matching requests (or, with ``response=True``, their responses after processing)."""
        action = "drop_response" if response else "drop"
        return self.add(FaultRule(action, target, parse_request_code(request), client, times=times,
                                  probability=probability))

    def delay(self, target: str, request: int | str | None = None, *, ms: int, times: int | None = None,
              client: str | None = None, probability: float = 1.0) -> FaultRule:
        return self.add(FaultRule("delay", target, parse_request_code(request), client, delay_ms=ms, times=times,
                                  probability=probability))

    def duplicate(self, target: str, request: int | str | None = None, *, times: int | None = None,
                  client: str | None = None, probability: float = 1.0) -> FaultRule:
        return self.add(FaultRule("duplicate", target, parse_request_code(request), client, times=times,
                                  probability=probability))

    def disconnect(self, target: str, request: int | str | None = None, *, times: int | None = None,
                   client: str | None = None, probability: float = 1.0) -> FaultRule:
        return self.add(FaultRule("disconnect", target, parse_request_code(request), client, times=times,
                                  probability=probability))

    def remove(self, rule: FaultRule) -> None:
        if rule in self.rules:
            self.rules.remove(rule)
        self._disarm(lambda armed: armed is rule)

    def clear(self) -> None:
        self.rules.clear()
        self._armed.clear()

    def decide(self, target: str, code: int, client: str) -> list[FaultRule]:
        """The rules that fire for this request, counted as fired and reported as events (in the order added)."""
        specific, wild = self._armed.get(code), self._armed.get(None)
        if specific and wild:
            candidates = sorted([*specific, *wild], key=operator.itemgetter(0))
        else:
            candidates = specific or wild or []
        fired = []
        spent = False
        for _, rule in candidates:
            if not rule.matches(target, code, client):
                continue
            if rule.probability < 1.0 and self._runtime.random.random() >= rule.probability:
                continue
            rule.fired += 1
            fired.append(rule)
            spent = spent or (rule.times is not None and rule.fired >= rule.times)
            if self._events is not None:
                detail = ResponseCode(rule.response_code).name if rule.action == "fail" else ""
                if rule.action == "delay":
                    detail = f"{rule.delay_ms} ms"
                self._events.emit(FaultInject(node=client, target=target, code=code, action=rule.action,
                                              detail=detail))
        if spent:
            self._disarm(lambda rule: rule.times is not None and rule.fired >= rule.times)
        return fired
