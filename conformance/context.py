"""What a broker case works with: connections that record, names that do not collide, checks that explain.

A :class:`BrokerContext` is made per case. Its connections record every frame for the report and are closed when
the case ends (or is stopped at ``--timeout``). ``expect*`` raise :class:`CaseFailed` with ``Expected: … Actual: …``;
``skip`` raises :class:`CaseSkipped`; ``wait_until`` polls within the case's time budget.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

import attrs

from rocketspec.conformance import requests
from rocketspec.conformance.checks import CaseAborted, CaseChecks
from rocketspec.conformance.cleanup import run_name
from rocketspec.conformance.model import Case, CaseFailed
from rocketspec.conformance.target import Broker, Target
from rocketspec.conformance.wire import Recorder, WireClient
from rocketspec.refimpl.message import MessageExt, decode_stored_messages
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import DEFAULT_PERM, ResponseCode

T = TypeVar("T")
_serial = itertools.count(1)


@attrs.frozen
class Sent:
    """What a successful send answered: the message id, queue, queue offset, and (decoded) commit-log offset."""

    msg_id: str
    queue_id: int
    queue_offset: int
    response: RemotingCommand = attrs.field(eq=False, repr=False)

    @property
    def commit_log_offset(self) -> int:
        return int(self.msg_id[-16:], 16)


def code_name(code: int) -> str:
    try:
        return f"{ResponseCode(code).name} ({code})"
    except ValueError:
        return str(code)


def answer_text(answer: RemotingCommand) -> str:
    remark = f", remark {answer.remark!r}" if answer.remark else ""
    return f"{code_name(answer.code)}{remark}"


class BrokerContext(CaseChecks):
    """The connections, names, settings and checks of one broker case."""

    def __init__(self, target: Target, case: Case, budget_s: float) -> None:
        self.target = target
        self.case = case
        self.recorder = Recorder()
        self.started = time.monotonic()
        self.deadline = self.started + budget_s
        self.timeout = min(target.timeout_s, budget_s)
        self._clients: list[WireClient] = []
        self.aborted = False

    # ------------------------------------------------------------------------------------------------- connections
    @property
    def brokers(self) -> list[Broker]:
        return self.target.brokers

    def need_brokers(self, count: int) -> None:
        if len(self.brokers) < count:
            self.skip(f"needs {count} master brokers; the target has {len(self.brokers)}")

    def connect(self, addr: str, timeout: float | None = None) -> WireClient:
        if self.aborted:
            raise CaseAborted("the case was stopped")
        client = WireClient(addr, self.timeout if timeout is None else timeout, self.recorder)
        self._clients.append(client)
        return client

    def namesrv(self) -> WireClient:
        return self.connect(self.target.namesrv)

    def broker(self, index: int = 0) -> WireClient:
        return self.connect(self.brokers[index].addr)

    def close(self) -> None:
        for client in self._clients:
            client.close()

    def abort(self) -> None:
        self.aborted = True
        self.close()

    # --------------------------------------------------------------------------------------------------- settings
    def setting(self, name: str, broker: int = 0) -> str:
        return self.target.setting(name, broker)

    def setting_int(self, name: str, broker: int = 0) -> int:
        return self.target.setting_int(name, broker)

    def setting_bool(self, name: str, broker: int = 0) -> bool:
        return self.target.setting_bool(name, broker)

    def broker_where(self, wanted: str, lacks: Callable[[int], str | None]) -> int:
        """The first master with what the case needs: ``lacks(index)`` is None for it, else why it does not. With
        none, the case is skipped with every master's reason (``wanted`` names the need). A target whose brokers
        are configured differently runs cases that need opposite settings, each on the broker that has its own."""
        reasons = []
        for index, broker in enumerate(self.brokers):
            reason = lacks(index)
            if reason is None:
                return index
            reasons.append(reason if len(self.brokers) == 1 else f"{broker.name}: {reason}")
        self.skip(f"needs {wanted}; {'; '.join(reasons)}")

    # ------------------------------------------------------------------------------------------------------ names
    def name(self, kind: str) -> str:
        """A name no other case or run uses: ``rscf_<kind>_<run>_<n>`` (valid as a topic and a group)."""
        return run_name(kind, next(_serial))

    def topic(self, queues: int = 4, *, perm: int = DEFAULT_PERM, brokers: Iterable[int] | None = None,
              order: bool = False, wait_route: bool = True) -> str:
        """A new topic with ``queues`` queues on the chosen masters (all by default), visible in the name server's
        route unless ``wait_route`` is false."""
        topic = self.name("topic")
        chosen = list(range(len(self.brokers))) if brokers is None else list(brokers)
        self.target.created_topics.add(topic)
        for index in chosen:
            answer = self.broker(index).request(requests.create_topic(topic, queues, perm=perm, order=order))
            if answer.code != ResponseCode.SUCCESS:
                raise CaseFailed(f"UPDATE_AND_CREATE_TOPIC {topic} answered SUCCESS", answer_text(answer))
        if wait_route:
            names = {self.brokers[i].name for i in chosen}
            namesrv = self.namesrv()

            def routed() -> bool:
                answer = namesrv.request(requests.route(topic))
                if answer.code != ResponseCode.SUCCESS:
                    return False
                body = requests.json_body(answer) or {}
                return names <= {q.get("brokerName") for q in body.get("queueDatas", [])}

            self.wait_until(routed, 10.0, what=f"the name server to route {topic}")
        return topic

    def group(self, *, create: bool = True, **options: object) -> str:
        """A new consumer group, created on every master (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) unless not asked."""
        group = self.name("group")
        if create:
            self.target.created_groups.add(group)
            for index in range(len(self.brokers)):
                answer = self.broker(index).request(requests.create_group(group, **options))  # type: ignore[arg-type]
                if answer.code != ResponseCode.SUCCESS:
                    raise CaseFailed(f"UPDATE_AND_CREATE_SUBSCRIPTIONGROUP {group} answered SUCCESS",
                                     answer_text(answer))
        return group

    # ------------------------------------------------------------------------------------------------- messaging
    def send(self, client: WireClient, topic: str, body: bytes = b"x", queue_id: int = 0, *,
             properties: dict[str, str] | None = None, tags: str | None = None, keys: str | None = None,
             v2: bool = True, **options: object) -> Sent:
        """Send one message and require SUCCESS (anything else fails the case: it is set-up, not the check)."""
        props = properties if properties is not None else requests.message_properties(tags, keys)
        build = requests.send_v2 if v2 else requests.send_v1
        answer = client.request(build("rscf_producer", topic, body, queue_id, props, **options))
        if answer.code != ResponseCode.SUCCESS:
            raise CaseFailed(f"the set-up send to {topic}:{queue_id} answered SUCCESS", answer_text(answer))
        return Sent(answer.require("msgId"), int(answer.require("queueId")), int(answer.require("queueOffset")),
                    answer)

    def messages(self, answer: RemotingCommand, broker: int = 0) -> list[MessageExt]:
        """The messages in a pull (or query) answer's body."""
        if not answer.body:
            return []
        return decode_stored_messages(answer.body, self.brokers[broker].name)

    # ------------------------------------------------------------------------------------------------------ checks
    def expect_code(self, answer: RemotingCommand, code: int, what: str = "the answer") -> None:
        if answer.code != code:
            raise CaseFailed(f"{what}: {code_name(code)}", f"{what}: {answer_text(answer)}")
