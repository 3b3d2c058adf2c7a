"""Broker requests: the state machine: frozen state, actions, ``enabled`` and ``step``."""

from __future__ import annotations

import attrs

from rocketspec.spec.broker_requests.clauses import CLAUSES
from rocketspec.spec.broker_requests.oracles import (
    GroupEvent,
    TopicConf,
    notify_targets,
    send_queue_id,
    topic_created_on_send,
)
from rocketspec.spec.explorer import require_enabled
from rocketspec.spec.protocol import BROKER_DEFAULT_TOPIC_QUEUE_NUMS, PERM_INHERIT, PERM_READ, PERM_WRITE, ResponseCode

# ------------------------------------------------------------------------------------------------ state machine
STORE, CLIENTS = "store", "clients"
TOPIC = "T"
# The defaultTopicQueueNums the model's producer asks for (a Java producer asks for 4; fewer keeps the model small).
MODEL_REQUESTED_QUEUES = 2
MAX_MESSAGES = 3
MAX_TIME = 2
CONNECTIONS = ("c1", "c2")
SUBSCRIPTIONS: tuple[frozenset[str], ...] = (frozenset({"T"}), frozenset({"T", "U"}))
GROUP = "G"


@attrs.frozen
class Stored:
    """A message in a consume queue: its tags and store time."""

    tags: str | None
    store_time: int


@attrs.frozen
class SendAnswer:
    """A send's answer: code, queue id and queue offset (SUCCESS), number of messages stored."""

    code: ResponseCode
    queue_id: int = -1
    queue_offset: int = -1
    stored: int = 0


@attrs.frozen
class BrokerState:
    """``scenario`` "store": TBW102 with ``auto_create`` (BROKER_DEFAULT_TOPIC_QUEUE_NUMS queues, inherit), the
    model topic's config and its consume queues (``queues[i]``: queue i), the clock, the last send answer.
    ``scenario`` "clients": one consumer group's connections, its subscribed topics, whether %RETRY% exists, the
    group config's notify switch and the connections notified by the last step."""

    scenario: str
    auto_create: bool = True
    topic: TopicConf | None = None
    queues: tuple[tuple[Stored, ...], ...] = ()
    now: int = 0
    answer: SendAnswer | None = None
    group_notify: bool = True
    connections: frozenset[str] = frozenset()
    topics: frozenset[str] = frozenset()
    retry_topic: bool = False
    notified: tuple[str, ...] = ()


@attrs.frozen
class Send:
    """A single send to the model topic (queue id -1: the broker picks with ``draw``)."""

    queue_id: int
    tags: str | None = None
    draw: int = 0


@attrs.frozen
class SendBatch:
    """A batch of ``count`` messages to one queue."""

    queue_id: int
    count: int


@attrs.frozen
class CreateTopic:
    """UPDATE_AND_CREATE_TOPIC for the model topic."""

    queues: int
    perm: int


@attrs.frozen
class DeleteTopic:
    """DELETE_TOPIC_IN_BROKER for the model topic."""


@attrs.frozen
class TimePasses:
    """The store clock advances one tick."""


@attrs.frozen
class Heartbeat:
    """A connection's heartbeat naming the group with these subscribed topics."""

    connection: str
    topics: frozenset[str]


@attrs.frozen
class UnregisterClient:
    """UNREGISTER_CLIENT naming the group, sent over the connection."""

    connection: str


@attrs.frozen
class ConnectionClosed:
    """A client connection closes."""

    connection: str


Action = Send | SendBatch | CreateTopic | DeleteTopic | TimePasses | Heartbeat | UnregisterClient | ConnectionClosed
_STORE_ACTIONS = (Send, SendBatch, CreateTopic, DeleteTopic, TimePasses)
_CLIENT_ACTIONS = (Heartbeat, UnregisterClient, ConnectionClosed)


def _message_count(state: BrokerState) -> int:
    return sum(len(q) for q in state.queues)


@CLAUSES.oracle("BRK-2", "BRK-13", "BRK-14", "BRK-15", "BRK-17")
def enabled(state: BrokerState, action: Action) -> bool:
    """Store requests in the store scenario, client registration in the clients scenario; sends while the model's
    message bound allows (BRK-2, BRK-17); a connection closes only while it is registered (BRK-13, BRK-14,
    BRK-15)."""
    if state.scenario == STORE:
        if not isinstance(action, _STORE_ACTIONS):
            return False
        if isinstance(action, Send):
            return _message_count(state) < MAX_MESSAGES
        if isinstance(action, SendBatch):
            return _message_count(state) + action.count <= MAX_MESSAGES
        if isinstance(action, TimePasses):
            return state.now < MAX_TIME
        return True
    if not isinstance(action, _CLIENT_ACTIONS):
        return False
    if isinstance(action, ConnectionClosed):
        return action.connection in state.connections
    return True


def _send_target(state: BrokerState) -> tuple[BrokerState, TopicConf | None]:
    """msgCheck's topic lookup: the model topic, created from TBW102 when it is missing (BRK-2)."""
    if state.topic is not None:
        return state, state.topic
    default = TopicConf(BROKER_DEFAULT_TOPIC_QUEUE_NUMS, BROKER_DEFAULT_TOPIC_QUEUE_NUMS,
                        PERM_INHERIT | PERM_READ | PERM_WRITE) if state.auto_create else None
    created = topic_created_on_send(TOPIC, default, True, state.auto_create, MODEL_REQUESTED_QUEUES)
    if created is None:
        return state, None
    queues: tuple[tuple[Stored, ...], ...] = ((),) * max(created.read_queue_nums, created.write_queue_nums)
    return attrs.evolve(state, topic=created, queues=queues), created


def _append(state: BrokerState, queue_id: int, messages: tuple[Stored, ...]) -> BrokerState:
    queues = list(state.queues)
    queues[queue_id] = queues[queue_id] + messages
    return attrs.evolve(state, queues=tuple(queues))


def _store_step(state: BrokerState, action: Action) -> BrokerState:
    if isinstance(action, TimePasses):
        return attrs.evolve(state, now=state.now + 1, answer=None)
    if isinstance(action, CreateTopic):
        created = TopicConf(action.queues, action.queues, action.perm)
        queues = state.queues + ((),) * (action.queues - len(state.queues))
        return attrs.evolve(state, topic=created, queues=queues, answer=None)
    if isinstance(action, DeleteTopic):
        return attrs.evolve(state, topic=None, queues=(), answer=None)
    assert isinstance(action, Send | SendBatch)
    state, conf = _send_target(state)
    if conf is None:
        return attrs.evolve(state, answer=SendAnswer(ResponseCode.TOPIC_NOT_EXIST))
    draw = action.draw if isinstance(action, Send) else 0
    queue_id = send_queue_id(action.queue_id, conf.read_queue_nums, conf.write_queue_nums, draw)
    if queue_id is None:
        return attrs.evolve(state, answer=SendAnswer(ResponseCode.SYSTEM_ERROR))
    if isinstance(action, Send):
        batch: tuple[Stored, ...] = (Stored(action.tags, state.now),)
    else:
        batch = tuple(Stored(None, state.now) for _ in range(action.count))
    offset = len(state.queues[queue_id])
    state = _append(state, queue_id, batch)
    return attrs.evolve(state, answer=SendAnswer(ResponseCode.SUCCESS, queue_id, offset, len(batch)))


def _clients_step(state: BrokerState, action: Action) -> BrokerState:
    if isinstance(action, Heartbeat):
        added = action.connection not in state.connections
        connections = state.connections | {action.connection}
        changed = added or action.topics != state.topics
        targets = notify_targets(GroupEvent.HEARTBEAT, changed, tuple(sorted(connections)), state.group_notify, True)
        # The group config exists (auto-created), so the heartbeat creates %RETRY%<group>.
        return attrs.evolve(state, connections=connections, topics=action.topics, retry_topic=True, notified=targets)
    if isinstance(action, UnregisterClient):
        known = bool(state.connections)
        connections = state.connections - {action.connection}
        topics = state.topics if connections else frozenset()
        targets = notify_targets(GroupEvent.UNREGISTER, known, tuple(sorted(connections)), state.group_notify, True)
        return attrs.evolve(state, connections=connections, topics=topics, notified=targets)
    assert isinstance(action, ConnectionClosed)
    connections = state.connections - {action.connection}
    topics = state.topics if connections else frozenset()
    targets = notify_targets(GroupEvent.CHANNEL_CLOSED, True, tuple(sorted(connections)), state.group_notify, True)
    return attrs.evolve(state, connections=connections, topics=topics, notified=targets)


@CLAUSES.oracle("BRK-2", "BRK-3", "BRK-6", "BRK-7", "BRK-13", "BRK-14", "BRK-15", "BRK-17")
def step(state: BrokerState, action: Action) -> BrokerState:
    """Apply a send, a batch, an admin topic request or time (BRK-2, BRK-3, BRK-6, BRK-7, BRK-17), or a
    heartbeat, an unregistration or a closed connection (BRK-13, BRK-14, BRK-15)."""
    require_enabled(enabled, state, action, Action)
    if state.scenario == STORE:
        return _store_step(state, action)
    return _clients_step(state, action)
