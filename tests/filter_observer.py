"""What the message_filter lockstep machine reads off the reference implementation, in the order it happened.

:class:`BrokerObserver` is installed on a broker object and on the run's event log. It records, in one list, every
step of the implementation the spec's message_filter machine models: a message stored in the topic
(``MessageStored``), a CHECK_CLIENT_CONFIG answered, a heartbeat registered, a pull processed (on its first run
through the broker, and again when a held pull is woken), a consumer's rebalance of a topic (``RebalanceAssign``) and
a message handed to a listener (``ConsumeDeliver``). Each record is translated to the spec's action by the machine.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from rocketspec.refimpl.events import ConsumeDeliver, Event, EventLog, MessageStored, RebalanceAssign
from rocketspec.refimpl.message import decode_stored_messages
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec import message_filter as spec
from rocketspec.spec.protocol import PULL_FLAG_SUBSCRIPTION, PULL_FLAG_SUSPEND, RequestCode, ResponseCode


@attrs.frozen
class Seen:
    """One recorded step: its kind, the client (or broker), the spec's action, what the system answered and what
    else the request carried (a heartbeat's tag and code sets)."""

    kind: str
    node: str
    action: Any
    response: RemotingCommand | None = None
    extra: Any = None


def subscription_of(data: dict[str, Any]) -> spec.Subscription:
    """A ``SubscriptionData`` JSON object as the spec's value."""
    return spec.Subscription(str(data.get("topic")), str(data.get("expressionType")), str(data.get("subString")),
                             int(data.get("subVersion") or 0))


def pull_action(client_id: str, request: RemotingCommand, may_suspend: bool) -> spec.Pull:
    """The spec's Pull of a PULL_MESSAGE request as the broker processes it."""
    flags = int(request.field("sysFlag") or 0)
    posted = None
    if flags & PULL_FLAG_SUBSCRIPTION:
        posted = (str(request.field("expressionType")), str(request.field("subscription")))
    return spec.Pull(client_id, str(request.field("topic")), int(request.field("queueId") or 0),
                     int(request.field("queueOffset") or 0), int(request.field("subVersion") or 0), posted,
                     may_suspend and bool(flags & PULL_FLAG_SUSPEND), int(request.field("maxMsgNums") or 0))


def answer_of(response: RemotingCommand | None) -> tuple[int | None, tuple[int, ...], int | None]:
    """A pull response as (code, queue offsets returned, nextBeginOffset); None for a held pull."""
    if response is None:
        return (None, (), None)
    found: tuple[int, ...] = ()
    if response.code == ResponseCode.SUCCESS and response.body:
        found = tuple(m.queue_offset for m in decode_stored_messages(response.body, "broker-a"))
    begin = response.field("nextBeginOffset")
    return (int(response.code), found, None if begin is None else int(begin))


class BrokerObserver:
    """Records the steps of ``broker`` and of the run's consumers that the spec models (see the module)."""

    def __init__(self, broker: Any, events: EventLog, topic: str, group: str) -> None:
        self.broker = broker
        self.topic = topic
        self.group = group
        self.seen: list[Seen] = []
        self.original = broker.handle
        broker.handle = self
        processor = broker.puller
        self.process = processor.process
        processor.process = self.reprocess
        events.subscribe(self.on_event)

    def take(self) -> list[Seen]:
        seen, self.seen = self.seen, []
        return seen

    # The broker's requests.
    def __call__(self, request: RemotingCommand, channel: Any) -> RemotingCommand | None:
        response = self.original(request, channel)
        client = str(getattr(channel, "client_node", channel.remote_addr))
        if request.code == RequestCode.PULL_MESSAGE:
            self.seen.append(Seen("pull", client, pull_action(client, request, True), response))
        elif request.code == RequestCode.HEART_BEAT and response is not None and response.code == ResponseCode.SUCCESS:
            self._heartbeat(client, request)
        elif request.code == RequestCode.CHECK_CLIENT_CONFIG and response is not None:
            body = json.loads((request.body or b"{}").decode("utf-8"))
            sub = subscription_of(body.get("subscriptionData") or {})
            self.seen.append(Seen("check", client, spec.CheckClientConfig(client, sub), response))
        return response

    def reprocess(self, request: RemotingCommand, channel: Any, allow_suspend: bool = True) -> RemotingCommand | None:
        """A held pull run again (``executeRequestWhenWakeup``)."""
        response = self.process(request, channel, allow_suspend=allow_suspend)
        client = str(getattr(channel, "client_node", channel.remote_addr))
        self.seen.append(Seen("pull", client, pull_action(client, request, allow_suspend), response))
        return response

    def _heartbeat(self, client: str, request: RemotingCommand) -> None:
        data = json.loads((request.body or b"{}").decode("utf-8"))
        for consumer in data.get("consumerDataSet") or ():
            if consumer.get("groupName") == self.group:
                raw = consumer.get("subscriptionDataSet") or ()
                subs = tuple(sorted((subscription_of(s) for s in raw), key=lambda s: s.topic))
                sets = {str(s.get("topic")): (frozenset(s.get("tagsSet") or ()), frozenset(s.get("codeSet") or ()))
                        for s in raw}
                self.seen.append(Seen("heartbeat", client, spec.Heartbeat(client, subs), extra=sets))

    # The run's events.
    def on_event(self, event: Event) -> None:
        if isinstance(event, MessageStored) and event.topic == self.topic:
            stored = self.broker.store.look_message(event.commit_log_offset)
            props = tuple(sorted(stored.properties.items()))
            message = spec.Message(stored.body.decode("utf-8"), stored.tags, props)
            self.seen.append(Seen("store", event.node, (event.queue_id, event.offset, message)))
        elif isinstance(event, RebalanceAssign) and event.group == self.group:
            queue_ids = frozenset(int(label.rsplit(":", 1)[1]) for label in event.queues)
            self.seen.append(Seen("assign", event.node, spec.Rebalanced(event.node, event.topic, queue_ids)))
        elif isinstance(event, ConsumeDeliver) and event.group == self.group:
            self.seen.append(Seen("deliver", event.node, spec.Deliver(event.node, event.topic, event.queue_id,
                                                                    event.offset)))
