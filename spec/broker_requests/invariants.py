"""Broker requests: the invariants the bounded explorer checks on every state and step, and the model."""

from __future__ import annotations

from collections.abc import Iterator

from rocketspec.spec.broker_requests.machine import (
    CLIENTS,
    CONNECTIONS,
    GROUP,
    MAX_MESSAGES,
    MAX_TIME,
    MODEL_REQUESTED_QUEUES,
    STORE,
    SUBSCRIPTIONS,
    Action,
    BrokerState,
    ConnectionClosed,
    CreateTopic,
    DeleteTopic,
    Heartbeat,
    Send,
    SendAnswer,
    SendBatch,
    Stored,
    TimePasses,
    UnregisterClient,
    _message_count,
    enabled,
    step,
)
from rocketspec.spec.broker_requests.oracles import (
    TopicConf,
    consumer_list_answer,
    queue_offsets,
    search_offset,
    tag_subscription_passes,
    tags_code,
)
from rocketspec.spec.explorer import Invariant, Model, StepInvariant
from rocketspec.spec.java import string_hash as java_string_hash
from rocketspec.spec.protocol import (
    BROKER_DEFAULT_TOPIC_QUEUE_NUMS,
    PERM_READ,
    PERM_WRITE,
    RANDOM_QUEUE_ID_BOUND,
    ResponseCode,
)


# ------------------------------------------------------------------------------------------------- invariants
def _store_times(queue: tuple[Stored, ...]) -> tuple[int, ...]:
    return tuple(m.store_time for m in queue)


def _offsets_answer_the_queues(state: BrokerState) -> bool:
    for queue in state.queues:
        low, high, earliest = queue_offsets(_store_times(queue))
        if (low, high) != (0, len(queue)) or earliest != (queue[0].store_time if queue else -1):
            return False
    return True


def _search_finds_nearest(state: BrokerState) -> bool:
    for queue in state.queues:
        times = _store_times(queue)
        for ts in range(-1, MAX_TIME + 2):
            found = search_offset(times, ts)
            if not times:
                if found != 0:
                    return False
                continue
            earlier = [i for i, t in enumerate(times) if t < ts]
            later = [i for i, t in enumerate(times) if t > ts]
            if ts in times:
                ok = times[found] == ts
            elif not earlier:
                ok = found == 0
            elif not later:
                ok = found == len(times) - 1
            else:
                before, after = earlier[-1], later[0]
                ok = found == (after if ts - times[before] > times[after] - ts else before)
            if not ok:
                return False
    return True


def _tags_pass_their_subscription(state: BrokerState) -> bool:
    for queue in state.queues:
        for message in queue:
            if message.tags and not tag_subscription_passes(message.tags, message.tags):
                return False
            if tags_code(message.tags) != (java_string_hash(message.tags) if message.tags else 0):
                return False
    return True


def _queues_match_topic(state: BrokerState) -> bool:
    if state.scenario != STORE:
        return True
    if state.topic is None:
        return state.queues == ()
    return len(state.queues) >= max(state.topic.read_queue_nums, state.topic.write_queue_nums)


def _send_answer_is_the_offset(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Send | SendBatch):
        return True
    answer = after.answer
    if answer is None:
        return False
    if answer.code is not ResponseCode.SUCCESS:
        return _message_count(after) == _message_count(before)
    count = 1 if isinstance(action, Send) else action.count
    before_queue = before.queues[answer.queue_id] if answer.queue_id < len(before.queues) else ()
    after_queue = after.queues[answer.queue_id]
    return (answer.queue_offset == len(before_queue) and answer.stored == count
            and after_queue[:answer.queue_offset] == before_queue and len(after_queue) == len(before_queue) + count
            and _message_count(after) == _message_count(before) + count)


def _queue_id_rules(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Send | SendBatch) or after.topic is None or after.answer is None:
        return True
    conf = after.topic
    if action.queue_id >= max(conf.read_queue_nums, conf.write_queue_nums):
        return after.answer.code is ResponseCode.SYSTEM_ERROR and _message_count(after) == _message_count(before)
    if action.queue_id < 0:
        return after.answer.queue_id == action.draw % conf.write_queue_nums  # type: ignore[union-attr]
    return after.answer.queue_id == action.queue_id


def _auto_create_from_default(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Send | SendBatch) or before.topic is not None:
        return True
    if not before.auto_create:
        return after.topic is None and after.answer == SendAnswer(ResponseCode.TOPIC_NOT_EXIST)
    queues = min(MODEL_REQUESTED_QUEUES, BROKER_DEFAULT_TOPIC_QUEUE_NUMS)
    return after.topic == TopicConf(queues, queues, PERM_READ | PERM_WRITE)


def _send_ignores_topic_perm(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Send) or before.topic is None or action.queue_id < 0:
        return True
    if action.queue_id >= max(before.topic.read_queue_nums, before.topic.write_queue_nums):
        return True
    return after.answer is not None and after.answer.code is ResponseCode.SUCCESS


def _admin_topic_requests(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if isinstance(action, DeleteTopic):
        return after.topic is None and after.queues == ()
    if isinstance(action, CreateTopic):
        return after.topic == TopicConf(action.queues, action.queues, action.perm) and after.queues[
            :len(before.queues)] == before.queues
    return True


def _heartbeat_registers(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Heartbeat):
        return True
    ids = tuple(sorted(after.connections))
    return (action.connection in after.connections and after.topics == action.topics and after.retry_topic
            and consumer_list_answer(ids, GROUP) == (ResponseCode.SUCCESS, ids))


def _notifications(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if isinstance(action, Heartbeat):
        changed = action.connection not in before.connections or action.topics != before.topics
        expected = sorted(after.connections) if changed and before.group_notify else []
    elif isinstance(action, UnregisterClient):
        expected = sorted(after.connections) if before.connections and before.group_notify else []
    elif isinstance(action, ConnectionClosed):
        expected = sorted(after.connections)
    else:
        return after.notified == ()
    return list(after.notified) == expected and set(after.notified) <= after.connections


def _unregister_removes(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, UnregisterClient | ConnectionClosed):
        return True
    if action.connection in after.connections or after.connections != before.connections - {action.connection}:
        return False
    code, _ = consumer_list_answer(tuple(sorted(after.connections)), GROUP)
    return bool(after.connections) or (after.topics == frozenset() and code is ResponseCode.SYSTEM_ERROR)


INVARIANTS: tuple[Invariant[BrokerState], ...] = (
    Invariant("min/max offsets and earliest store time follow the queue", ("BRK-10",), _offsets_answer_the_queues),
    Invariant("search by timestamp finds the exact or nearest message", ("BRK-11",), _search_finds_nearest),
    Invariant("a tagged message passes its own tag subscription", ("BRK-9",), _tags_pass_their_subscription),
    Invariant("the topic's queues exist while the topic does", ("BRK-2", "BRK-17"), _queues_match_topic),
)

STEP_INVARIANTS: tuple[StepInvariant[BrokerState, Action], ...] = (
    StepInvariant("a stored send answers its queue offset", ("BRK-6", "BRK-7"), _send_answer_is_the_offset),
    StepInvariant("queue ids: illegal refused, negative random", ("BRK-3",), _queue_id_rules),
    StepInvariant("a missing topic is created from TBW102 or refused", ("BRK-2",), _auto_create_from_default),
    StepInvariant("a send does not check the topic perm", ("BRK-4",), _send_ignores_topic_perm),
    StepInvariant("admin create/delete topic", ("BRK-17",), _admin_topic_requests),
    StepInvariant("a heartbeat registers the connection", ("BRK-13",), _heartbeat_registers),
    StepInvariant("NOTIFY_CONSUMER_IDS_CHANGED goes to the group after a change", ("BRK-14",), _notifications),
    StepInvariant("unregistering removes the connection", ("BRK-15",), _unregister_removes),
)


def model(max_messages: int = MAX_MESSAGES) -> Model[BrokerState, Action]:
    """The store scenario (auto creation on and off; single sends to queues -1, 0, 1, 2 with and without tags,
    batches of 2, topic creation with 1 queue read-only or 2 queues read|write, deletion, two clock ticks, at most
    ``max_messages`` messages) and the clients scenario (two connections, two subscription sets, group notify on
    and off)."""
    store_actions: tuple[Action, ...] = (
        Send(0, "A"), Send(1), Send(-1, None, RANDOM_QUEUE_ID_BOUND - 2), Send(MODEL_REQUESTED_QUEUES), SendBatch(0, 2),
        CreateTopic(1, PERM_READ), CreateTopic(2, PERM_READ | PERM_WRITE), DeleteTopic(), TimePasses(),
    )
    client_actions: tuple[Action, ...] = (
        *(Heartbeat(c, s) for c in CONNECTIONS for s in SUBSCRIPTIONS),
        *(UnregisterClient(c) for c in CONNECTIONS),
        *(ConnectionClosed(c) for c in CONNECTIONS),
    )

    def actions(state: BrokerState) -> Iterator[Action]:
        if state.scenario == STORE:
            if _message_count(state) > max_messages:
                return iter(())
            return iter(store_actions)
        return iter(client_actions)

    return Model(
        area="broker_requests",
        bounds=f"store: 1 topic, <= {max_messages} messages, {MAX_TIME} ticks, auto-create on/off; clients: "
               f"{len(CONNECTIONS)} connections x {len(SUBSCRIPTIONS)} subscriptions, group notify on/off",
        initial=(BrokerState(STORE, auto_create=True), BrokerState(STORE, auto_create=False),
                 BrokerState(CLIENTS, group_notify=True), BrokerState(CLIENTS, group_notify=False)),
        actions=actions,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )
