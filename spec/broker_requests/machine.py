"""Broker requests: the state machine as a transition table: for every request kind its guard, effect and candidate
generator (the effects of the send path here, the admin, registry and query requests in ``effects``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from rocketspec.spec.broker_requests.actions import (
    MODEL_REQUESTED_QUEUES,
    Action,
    CommitOffset,
    ConnectionClosed,
    ConsumedBy,
    ConsumerConnections,
    ConsumerList,
    ConsumeStats,
    CorrectionOffset,
    CreateGroup,
    CreateTopic,
    DeleteGroup,
    DeleteTopic,
    GetBrokerConfig,
    GetGroups,
    GetSystemTopics,
    GetTopicConfig,
    GetTopicStats,
    Heartbeat,
    LockBatch,
    Maintenance,
    Malformed,
    OffsetQuery,
    OrderTopicConfig,
    ProducerConnections,
    ProducerInfo,
    QueryConsumeQueue,
    QueryMessage,
    QueryOffset,
    ResumeHalf,
    RuntimeInfo,
    Send,
    SendBatch,
    SendReply,
    TimePasses,
    UnlockBatch,
    UnregisterClient,
    UpdateBrokerConfig,
    ViewMessage,
    ViewStats,
)
from rocketspec.spec.broker_requests.admin import (
    admin_topic_check,
    broker_system_topics,
    client_sys_flag,
    created_topic_sys_flag,
    malformed_answer,
    reply_answer,
    reply_topic,
)
from rocketspec.spec.broker_requests.clauses import CLAUSES
from rocketspec.spec.broker_requests.effects import (
    connection_closed,
    consume_stats,
    consumed_by,
    consumer_connections,
    consumer_list,
    count_put,
    create_group,
    create_topic,
    delete_group,
    delete_topic,
    find_group,
    get_groups,
    get_system_topics,
    get_topic_config,
    get_topic_stats,
    heartbeat,
    lock_batch,
    offset_query,
    producer_connections,
    producer_info,
    put_topic,
    query_consume_queue,
    send_answer,
    store,
    unlock_batch,
    unregister_client,
)
from rocketspec.spec.broker_requests.oracles import (
    TopicConf,
    batch_body_length,
    batch_refused,
    batch_stored_properties_length,
    illegal_message_remark,
    illegal_queue_remark,
    message_illegal,
    offset_msg_id,
    properties_length,
    send_check,
    send_queue_id,
    stored_properties,
    topic_created_on_send,
    topic_not_exist_remark,
)
from rocketspec.spec.broker_requests.queries import (
    commit_offset,
    correction_offset,
    get_broker_config,
    maintenance,
    malformed,
    order_topic_config,
    query_message,
    query_offset,
    resume_half,
    runtime_info,
    time_passes,
    update_broker_config,
    view_message,
    view_stats,
)
from rocketspec.spec.broker_requests.state import (
    BROKER_NAME,
    CLUSTER,
    STORE_ADDR,
    STORE_IP,
    STORE_PORT,
    UNDECIDED,
    BrokerState,
)
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    DEFAULT_PERM,
    NAME_VALUE_SEPARATOR,
    PERM_WRITE,
    PROPERTY_SEPARATOR,
    RANDOM_QUEUE_ID_BOUND,
    RETRY_GROUP_TOPIC_PREFIX,
    SYSFLAG_MULTI_TAGS,
    Property,
    ResponseCode,
    suggest_todo,
)
from rocketspec.spec.transitions import Transition, TransitionTable

STORE, CLIENTS, ADMIN, QUERY, MISC, TABLES, ALL = "store", "clients", "admin", "query", "misc", "tables", "all"
MAX_MESSAGES = 3
MAX_TIME = 2
CONNECTIONS = ("c1", "c2")
SUBSCRIPTIONS: tuple[frozenset[str], ...] = (frozenset({"T"}), frozenset({"T", "U"}))
#: The DELAY level a batch with ``delay`` carries.
BATCH_DELAY_LEVEL = 1


# ------------------------------------------------------------------------------------------------------ sends
def _sent_properties(a: Send) -> tuple[tuple[str, str], ...]:
    """The properties a send's header carries (its TAGS, KEYS, UNIQ_KEY, WAIT)."""
    props = [(Property.TAGS, a.tags), (Property.KEYS, a.keys), (Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, a.uniq_key),
             (Property.WAIT_STORE_MSG_OK, "true" if a.wait else None)]
    return tuple((k, v) for k, v in props if v is not None)


def _send_guard(state: BrokerState, a: Send) -> bool:
    """A producer's send carries the sysFlag of its compression rule and its unitMode (BRK-22, BRK-23); a request
    built by hand may carry anything; the random draw is the broker's."""
    if not 0 <= a.draw < RANDOM_QUEUE_ID_BOUND:
        return False
    if not a.client:
        return a.original is None
    length = len(a.original if a.original is not None else a.body)
    flag = client_sys_flag(length, state.settings.compress_over, batch=False)
    return a.sys_flag == flag and (a.original is not None) == bool(flag) and a.unit_mode == state.settings.unit_mode


def _send_target(state: BrokerState, topic: str, default_topic: str, default_queues: int, unit_mode: bool
                 ) -> tuple[BrokerState, TopicConf | None]:
    """msgCheck's topic lookup: the topic, else one created from the default topic (TBW102, which loses its inherit
    bit for good once a send finds autoCreateTopicEnable off) or, for a %RETRY% topic, with one queue (BRK-2,
    BRK-23)."""
    conf = state.topic(topic)
    if conf is not None:
        return state, conf
    default = state.topic(default_topic)
    is_key = default_topic == AUTO_CREATE_TOPIC_KEY
    if default is not None and is_key and not state.settings.auto_create_topic and default.perm != DEFAULT_PERM:
        # TopicConfigManager sets TBW102's perm in place: no new DataVersion, and it stays so.
        default = attrs.evolve(default, perm=DEFAULT_PERM)
        state = attrs.evolve(state, topics=tuple((n, default if n == default_topic else c) for n, c in state.topics))
    created = topic_created_on_send(topic, default, is_key, state.settings.auto_create_topic, default_queues,
                                    created_topic_sys_flag(unit_mode, topic))
    if created is None:
        return state, None
    return put_topic(state, topic, created), created


def _check(state: BrokerState, topic: str, queue_id: int, draw: int, default_topic: str, default_queues: int,
           unit_mode: bool, producer: str) -> tuple[BrokerState, TopicConf | None, int]:
    """msgCheck (BRK-1, BRK-2, BRK-3): the state (a topic may have been created) with the answer set on a refusal,
    the topic and the queue."""
    conf = state.topic(topic)
    refused = send_check(topic, bool(state.settings.broker_perm & PERM_WRITE), conf is not None and conf.order,
                         STORE_ADDR.rpartition(":")[0])
    if refused is not None:
        return send_answer(state, refused[0], refused[1]), None, -1
    state, conf = _send_target(state, topic, default_topic, default_queues, unit_mode)
    if conf is None:
        return send_answer(state, ResponseCode.TOPIC_NOT_EXIST, topic_not_exist_remark(topic)), None, -1
    if queue_id < 0 and conf.write_queue_nums <= 0:
        return send_answer(state, ResponseCode.SYSTEM_ERROR, UNDECIDED), None, -1
    chosen = send_queue_id(queue_id, conf.read_queue_nums, max(conf.write_queue_nums, 1), draw)
    if chosen is None:
        remark = illegal_queue_remark(queue_id, topic, conf, producer)
        return send_answer(state, ResponseCode.SYSTEM_ERROR, remark), None, -1
    return state, conf, chosen


def _send(state: BrokerState, a: Send) -> BrokerState:
    """A send: msgCheck (the first failure answers: forbidden and invalid topics, BRK-1; a missing topic created
    from the default topic or refused, BRK-2, its sysFlag from the header's unitMode, BRK-23; the queue id, BRK-3;
    the perm is not checked, BRK-4), then a %RETRY% topic's group must exist or be auto-created (BRK-20), then the
    store's checks (BRK-5: the body as sent, compressed or not, BRK-22). A stored message keeps body, flag,
    sysFlag (+MULTI_TAGS on a MULTI_TAG topic) and the sent properties without WAIT, plus CLUSTER (BRK-8), is
    indexed (BRK-12), counted (BRK-27) and answered with its offset msgId and queue offset (BRK-6)."""
    state, conf, queue_id = _check(state, a.topic, a.queue_id, a.draw, a.default_topic, a.default_queues,
                                   a.unit_mode, a.producer_addr)
    if conf is None:
        return state
    if a.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        group = a.topic[len(RETRY_GROUP_TOPIC_PREFIX):]
        state, group_conf = find_group(state, group)
        if group_conf is None:
            return send_answer(state, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                          f"subscription group not exist, {group} {suggest_todo()}")
    props = stored_properties(_sent_properties(a), CLUSTER)
    sys_flag = a.sys_flag | (SYSFLAG_MULTI_TAGS if conf.multi_tag else 0)
    text = PROPERTY_SEPARATOR.join(f"{k}{NAME_VALUE_SEPARATOR}{v}" for k, v in props)
    if message_illegal(len(a.body), a.topic, text, state.settings.max_message_size, sys_flag):
        return send_answer(state, ResponseCode.MESSAGE_ILLEGAL, illegal_message_remark(state.settings.max_message_size))
    state, (message,) = store(state, a.topic, queue_id, ((a.body, props, a.original),), sys_flag)
    state = count_put(state, a.topic, 1, message.size)
    return send_answer(state, ResponseCode.SUCCESS, queue_id=queue_id, queue_offset=message.queue_offset, stored=1,
                  msg_id=offset_msg_id(STORE_IP, STORE_PORT, message.commit_log_offset))


def _batch_guard(state: BrokerState, a: SendBatch) -> bool:
    return a.count >= 1 and 0 <= a.draw < RANDOM_QUEUE_ID_BOUND


def _send_batch(state: BrokerState, a: SendBatch) -> BrokerState:
    """A batch: msgCheck as for a send (BRK-1, BRK-2, BRK-3), then MESSAGE_ILLEGAL for a DELAY level (or a
    transaction type) and for a body over maxMessageSize (BRK-5, BRK-7); the messages are stored in order at
    consecutive offsets of one queue, each with its own properties and the batch's (the header's, WAIT kept, and
    CLUSTER) appended (BRK-8), and the answer carries the comma-joined msgIds and the first offset (BRK-7)."""
    state, conf, queue_id = _check(state, a.topic, a.queue_id, a.draw, a.default_topic, a.default_queues,
                                   a.unit_mode, a.producer_addr)
    if conf is None:
        return state
    header = [(Property.WAIT_STORE_MSG_OK, "true")] if a.wait else []
    if a.delay:
        header.append((Property.DELAY_TIME_LEVEL, str(BATCH_DELAY_LEVEL)))
    batch_props = tuple(sorted((*header, (Property.CLUSTER, CLUSTER))))
    entries = []
    for i in range(a.count):
        own = ((Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, f"{a.uniq}{i}"),) if a.uniq is not None else ()
        entries.append((a.body + str(i).encode(), own))
    body_len = batch_body_length(tuple((len(b), properties_length(own)) for b, own in entries))
    sys_flag = SYSFLAG_MULTI_TAGS if conf.multi_tag else 0
    if batch_refused(sys_flag, BATCH_DELAY_LEVEL if a.delay else 0) or body_len > state.settings.max_message_size:
        return send_answer(state, ResponseCode.MESSAGE_ILLEGAL, illegal_message_remark(state.settings.max_message_size))
    stored_entries = []
    for body, own in entries:
        merged = dict(own)
        merged.update(batch_props)
        length = batch_stored_properties_length(properties_length(own), properties_length(batch_props))
        stored_entries.append((body, tuple(sorted(merged.items())), None, length))
    state, messages = store(state, a.topic, queue_id, tuple(e[:3] for e in stored_entries), sys_flag,
                            tuple(e[3] for e in stored_entries))
    state = count_put(state, a.topic, len(messages), sum(m.size for m in messages))
    ids = ",".join(offset_msg_id(STORE_IP, STORE_PORT, m.commit_log_offset) for m in messages)
    return send_answer(state, ResponseCode.SUCCESS, queue_id=queue_id, queue_offset=messages[0].queue_offset,
                  stored=len(messages), msg_id=ids)


def _reply(state: BrokerState, a: SendReply) -> BrokerState:
    """A reply: msgCheck (BRK-1, BRK-2, BRK-3), the push to the connection the producer manager holds for the
    REPLY_TO_CLIENT id (BRK-28, BRK-29), then, with storeReplyMessageEnable, the reply stored as sent (its
    properties string as sent, sysFlag 0; BRK-28) once the push is decided (``rtt`` later when it went out), its
    offset msgId and queue offset in the answer."""
    topic = a.topic or reply_topic(CLUSTER)
    state, conf, queue_id = _check(state, topic, a.queue_id, a.draw, AUTO_CREATE_TOPIC_KEY,
                                   MODEL_REQUESTED_QUEUES, False, a.producer_addr)
    if conf is None:
        return state
    target = None if a.reply_to is None else dict(state.client_channels).get(a.reply_to)
    code, remark = reply_answer(a.reply_to, target is not None, a.push_ok)
    pushed = ((target, a.correlation),) if target is not None else ()
    msg_id, queue_offset = ("0", 0) if code is ResponseCode.SUCCESS else (None, -1)
    if state.settings.store_reply:
        props = [(Property.CORRELATION_ID, a.correlation)]
        if a.reply_to is not None:
            props.append((Property.MESSAGE_REPLY_TO_CLIENT, a.reply_to))
        at = state.now + (a.rtt if target is not None else 0)
        stored_state = attrs.evolve(state, now=at)
        stored_state, (message,) = store(stored_state, topic, queue_id, ((a.body, tuple(sorted(props)), None),), 0)
        state = attrs.evolve(count_put(stored_state, topic, 1, message.size), now=state.now)
        msg_id = offset_msg_id(STORE_IP, STORE_PORT, message.commit_log_offset)
        queue_offset = message.queue_offset
    state = send_answer(state, code, remark, queue_id=queue_id if msg_id is not None else -1, queue_offset=queue_offset,
                   msg_id=msg_id)
    return attrs.evolve(state, pushed=pushed)


# ------------------------------------------------------------------------------------------------------ guards
def _always(state: BrokerState, action: Any) -> bool:
    return True


def _registered(state: BrokerState, a: ConnectionClosed) -> bool:
    """A connection closes only while the broker has it registered (BRK-13, BRK-29)."""
    return any(a.connection in g.connections for _, g in state.consumers) or \
        any(a.connection == c for _, members in state.producers for c, _ in members)


def _heartbeat_guard(state: BrokerState, a: Heartbeat) -> bool:
    """A client's heartbeat carries its unitMode in its consumer data (BRK-23)."""
    return not a.client or a.group is None or a.unit_mode == state.settings.unit_mode


def _reply_guard(state: BrokerState, a: SendReply) -> bool:
    return a.rtt >= 0 and 0 <= a.draw < RANDOM_QUEUE_ID_BOUND


def _time_guard(state: BrokerState, a: TimePasses) -> bool:
    return a.ms > 0


def _malformed_guard(state: BrokerState, a: Malformed) -> bool:
    """The model says what a request missing this field gets (BRK-32)."""
    return malformed_answer(a.code, a.missing, admin_topic_check(a.topic, broker_system_topics(CLUSTER, BROKER_NAME))
                            is None) is not None


def _offset_query_guard(state: BrokerState, a: OffsetQuery) -> bool:
    return a.kind in ("min", "max", "earliest", "search")


# ------------------------------------------------------------------------------------------------ candidates
@attrs.frozen
class Bounds:
    """What a model tries: per scenario the candidate requests (``actions``: scenario -> actions), the most
    messages stored and the last clock tick."""

    actions: tuple[tuple[str, tuple[Action, ...]], ...] = ()
    max_messages: int = MAX_MESSAGES
    max_time: int = MAX_TIME
    max_changes: int = 2


def _changes(state: BrokerState) -> int:
    """How many times the topic, group and configuration tables changed (their DataVersion counters)."""
    return state.topics_version[0] + state.groups_version[0] + state.config_version[0]


def _within(state: BrokerState, action: Action, bounds: Bounds) -> bool:
    if isinstance(action, Send | SendReply | ResumeHalf):
        return len(state.log) < bounds.max_messages
    if isinstance(action, SendBatch):
        return len(state.log) + action.count <= bounds.max_messages
    if isinstance(action, TimePasses):
        return state.now + action.ms <= bounds.max_time
    return True


@functools.lru_cache(maxsize=512)
def _by_kind(bounds: Bounds, scenario: str, kind: str) -> tuple[Action, ...]:
    return tuple(a for s, actions in bounds.actions if s == scenario for a in actions if type(a).__name__ == kind)


def candidates_of(kind: type[Any]) -> Callable[[BrokerState, Bounds], Iterator[Any]]:
    """The candidate generator of ``kind``: the scenario's actions of that kind the bounds allow (none once the
    model's messages or table changes are used up)."""

    def candidates(state: BrokerState, bounds: Bounds) -> Iterator[Any]:
        actions = _by_kind(bounds, state.scenario, kind.__name__)
        if not actions or len(state.log) > bounds.max_messages or _changes(state) > bounds.max_changes:
            return
        yield from (a for a in actions if _within(state, a, bounds))

    candidates.__name__ = f"_{kind.__name__}_candidates"
    return candidates


def _t(kind: type[Any], guard: Callable[[BrokerState, Any], bool], effect: Callable[[BrokerState, Any], BrokerState],
       *clauses: str) -> Transition[BrokerState, Bounds]:
    return Transition(kind, guard, effect, candidates_of(kind), clauses)


# -------------------------------------------------------------------------------------------------- the machine
TRANSITIONS: TransitionTable[BrokerState, Action, Bounds] = TransitionTable("broker_requests", CLAUSES, (
    _t(Send, _send_guard, _send, "BRK-1", "BRK-2", "BRK-3", "BRK-4", "BRK-5", "BRK-6", "BRK-8", "BRK-12", "BRK-20",
       "BRK-22", "BRK-23", "BRK-27"),
    _t(SendBatch, _batch_guard, _send_batch, "BRK-1", "BRK-2", "BRK-3", "BRK-5", "BRK-7", "BRK-8"),
    _t(SendReply, _reply_guard, _reply, "BRK-1", "BRK-2", "BRK-3", "BRK-28", "BRK-29"),
    _t(CreateTopic, _always, create_topic, "BRK-1", "BRK-17", "BRK-21"),
    _t(DeleteTopic, _always, delete_topic, "BRK-17", "BRK-21"),
    _t(GetTopicConfig, _always, get_topic_config, "BRK-17", "BRK-21"),
    _t(GetSystemTopics, _always, get_system_topics, "BRK-21"),
    _t(GetTopicStats, _always, get_topic_stats, "BRK-25"),
    _t(OffsetQuery, _offset_query_guard, offset_query, "BRK-10", "BRK-11"),
    _t(QueryConsumeQueue, _always, query_consume_queue, "BRK-9", "BRK-13", "BRK-25"),
    _t(ConsumedBy, _always, consumed_by, "BRK-13", "BRK-30"),
    _t(CreateGroup, _always, create_group, "BRK-20", "BRK-21"),
    _t(DeleteGroup, _always, delete_group, "BRK-20", "BRK-21"),
    _t(GetGroups, _always, get_groups, "BRK-20", "BRK-21"),
    _t(Heartbeat, _heartbeat_guard, heartbeat, "BRK-13", "BRK-14", "BRK-20", "BRK-23", "BRK-29"),
    _t(UnregisterClient, _always, unregister_client, "BRK-14", "BRK-15", "BRK-20", "BRK-29"),
    _t(ConnectionClosed, _registered, connection_closed, "BRK-13", "BRK-14", "BRK-15", "BRK-29"),
    _t(ConsumerList, _always, consumer_list, "BRK-13"),
    _t(ConsumerConnections, _always, consumer_connections, "BRK-13"),
    _t(ConsumeStats, _always, consume_stats, "BRK-13", "BRK-30"),
    _t(ProducerConnections, _always, producer_connections, "BRK-29"),
    _t(ProducerInfo, _always, producer_info, "BRK-29"),
    _t(LockBatch, _always, lock_batch, "BRK-16"),
    _t(UnlockBatch, _always, unlock_batch, "BRK-16"),
    _t(CommitOffset, _always, commit_offset, "BRK-30"),
    _t(QueryOffset, _always, query_offset, "BRK-30"),
    _t(CorrectionOffset, _always, correction_offset, "BRK-30"),
    _t(GetBrokerConfig, _always, get_broker_config, "BRK-18", "BRK-24"),
    _t(UpdateBrokerConfig, _always, update_broker_config, "BRK-21", "BRK-24"),
    _t(RuntimeInfo, _always, runtime_info, "BRK-18", "BRK-26"),
    _t(ViewStats, _always, view_stats, "BRK-27"),
    _t(QueryMessage, _always, query_message, "BRK-12", "BRK-22"),
    _t(ViewMessage, _always, view_message, "BRK-12", "BRK-22"),
    _t(ResumeHalf, _always, resume_half, "BRK-5", "BRK-31"),
    _t(Maintenance, _always, maintenance, "BRK-19", "BRK-31"),
    _t(Malformed, _malformed_guard, malformed, "BRK-32"),
    _t(OrderTopicConfig, _always, order_topic_config, "BRK-1"),
    _t(TimePasses, _time_guard, time_passes, "BRK-1", "BRK-10", "BRK-11", "BRK-27"),
))

#: Whether an action can happen in a state (its transition's guard).
enabled = TRANSITIONS.enabled
#: The state after an enabled action (its transition's effect).
step = TRANSITIONS.step
