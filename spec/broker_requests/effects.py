"""Broker requests: the store's helpers and the effects of the topic, group and client requests (the send path's are
in ``machine``, the other requests' in ``queries``)."""

from __future__ import annotations

from typing import Any

import attrs

from rocketspec.spec.broker_requests.actions import (
    ConnectionClosed,
    ConsumedBy,
    ConsumerConnections,
    ConsumerList,
    ConsumeStats,
    CreateGroup,
    CreateTopic,
    DeleteGroup,
    DeleteTopic,
    GetGroups,
    GetSystemTopics,
    GetTopicConfig,
    GetTopicStats,
    Heartbeat,
    LockBatch,
    OffsetQuery,
    ProducerConnections,
    ProducerInfo,
    QueryConsumeQueue,
    UnlockBatch,
    UnregisterClient,
)
from rocketspec.spec.broker_requests.admin import (
    REPORTED_SETTINGS,
    GroupConf,
    GroupEvent,
    admin_topic_check,
    broker_system_topics,
    consume_queue_answer,
    consumer_list_answer,
    group_config_exists,
    lock_batch_answer,
    notify_targets,
    retry_topic_sys_flag,
    topic_stats,
)
from rocketspec.spec.broker_requests.oracles import (
    TopicConf,
    properties_length,
    queue_offsets,
    search_offset,
    stored_message_length,
    tags_code,
)
from rocketspec.spec.broker_requests.state import (
    BROKER_NAME,
    CLUSTER,
    UNDECIDED,
    Answer,
    BrokerState,
    ConsumerGroup,
    StatsCount,
    Stored,
    Table,
    table_drop,
    table_get,
    table_put,
)
from rocketspec.spec.protocol import (
    DEFAULT_TRACE_REGION_ID,
    PERM_READ,
    PERM_WRITE,
    PROPERTY_MSG_REGION,
    PROPERTY_TRACE_SWITCH,
    SCHEDULE_TOPIC,
    STATS_BROKER_PUT_NUMS,
    STATS_TOPIC_PUT_NUMS,
    STATS_TOPIC_PUT_SIZE,
    SYSTEM_TOPICS,
    TRANS_OP_HALF_TOPIC,
    Property,
    ResponseCode,
    retry_topic,
)

#: The ext fields every answer of the send path carries (a broker with the default regionId and traceOn).
SEND_FIELDS: tuple[tuple[str, str], ...] = ((PROPERTY_MSG_REGION, DEFAULT_TRACE_REGION_ID),
                                            (PROPERTY_TRACE_SWITCH, "true"))
#: The remark UPDATE_AND_CREATE_TOPIC's SUCCESS keeps (``createResponseCommand(null)``'s, never reset).
NOT_SET_REMARK = "not set any response code"
RESUME_FAILED_REMARK = "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."
RESUME_PUT_FAILED_REMARK = "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed."
#: What VIEW_MESSAGE_BY_ID gives a reader of a message whose body it cannot inflate.
UNREADABLE = "unreadable"
#: GET_BROKER_CONFIG lines the model decides: the Java key and the setting.
CONFIG_KEYS: tuple[tuple[str, str], ...] = (
    ("autoCreateSubscriptionGroup", "auto_create_group"), ("autoCreateTopicEnable", "auto_create_topic"),
    ("brokerPermission", "broker_perm"), ("defaultTopicQueueNums", "default_topic_queue_nums"),
    ("maxMessageSize", "max_message_size"), ("notifyConsumerIdsChangedEnable", "notify_enable"),
    ("storeReplyMessageEnable", "store_reply"),
)
#: Every GET_BROKER_CONFIG key the model decides, in the order the spec lists them.
MODELLED_CONFIG_KEYS: tuple[str, ...] = tuple(sorted([k for k, _ in CONFIG_KEYS]
                                                     + [k for k, _, _ in REPORTED_SETTINGS]))


# ------------------------------------------------------------------------------------------------- helpers
def answer(state: BrokerState, code: ResponseCode, remark: str | None = None, **fields: Any) -> BrokerState:
    """The state with the request's answer; the last step's notifications and pushes are over."""
    return attrs.evolve(state, answer=Answer(code, remark, **fields), notified=(), pushed=())


def send_answer(state: BrokerState, code: ResponseCode, remark: str | None = None, **fields: Any) -> BrokerState:
    """An answer of the send path: it carries MSG_REGION and TRACE_ON whatever happened (BRK-6)."""
    return answer(state, code, remark, fields=SEND_FIELDS, **fields)


def next_version(version: tuple[int, int], now: int) -> tuple[int, int]:
    return version[0] + 1, now


def put_topic(state: BrokerState, name: str, conf: TopicConf) -> BrokerState:
    """A topic put in the table: a new DataVersion (BRK-21)."""
    return attrs.evolve(state, topics=table_put(state.topics, name, conf),
                        topics_version=next_version(state.topics_version, state.now))


def put_group(state: BrokerState, name: str, conf: GroupConf) -> BrokerState:
    return attrs.evolve(state, groups=table_put(state.groups, name, conf),
                        groups_version=next_version(state.groups_version, state.now))


def find_group(state: BrokerState, group: str) -> tuple[BrokerState, GroupConf | None]:
    """``findSubscriptionGroupConfig``: the group's settings, the defaults put in the table when auto creation
    allows (BRK-20), or None."""
    conf = state.group(group)
    if conf is not None:
        return state, conf
    if not group_config_exists(group, False, state.settings.auto_create_group):
        return state, None
    return put_group(state, group, GroupConf()), GroupConf()


def store(state: BrokerState, topic: str, queue_id: int,
          entries: tuple[tuple[bytes, tuple[tuple[str, str], ...], bytes | None], ...], sys_flag: int,
          properties_lengths: tuple[int, ...] | None = None) -> tuple[BrokerState, tuple[Stored, ...]]:
    """Append messages (body, properties, body before compression) to the commit log and one consume queue, now."""
    queue = state.queue(topic, queue_id)
    log = list(state.log)
    end = state.commit_log
    stored = []
    for i, (body, props, original) in enumerate(entries):
        props_len = properties_lengths[i] if properties_lengths is not None else properties_length(props)
        size = stored_message_length(len(body), len(topic.encode("utf-8")), props_len, sys_flag)
        message = Stored(dict(props).get(Property.TAGS), state.now, topic, queue_id, len(queue) + i, body,
                         tuple(sorted(props)), sys_flag, 0, 0, end, size, original)
        stored.append(message)
        log.append(message)
        end += size
    queues = table_put(state.queues, (topic, queue_id), queue + tuple(stored))
    return attrs.evolve(state, queues=queues, log=tuple(log), commit_log=end), tuple(stored)


def _count(stats: Table[tuple[str, str], tuple[StatsCount, ...]], now: int, name: str, key: str, value: int,
           times: int) -> Table[tuple[str, str], tuple[StatsCount, ...]]:
    counts = table_get(stats, (name, key), ()) or ()
    return table_put(stats, (name, key), (*counts, StatsCount(now, value, times)))


def count_put(state: BrokerState, topic: str, messages: int, size: int) -> BrokerState:
    """A stored send's stats: TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, BROKER_PUT_NUMS (BRK-27)."""
    stats = _count(state.stats, state.now, STATS_TOPIC_PUT_NUMS, topic, messages, 1)
    stats = _count(stats, state.now, STATS_TOPIC_PUT_SIZE, topic, size, 1)
    return attrs.evolve(state, stats=_count(stats, state.now, STATS_BROKER_PUT_NUMS, CLUSTER, messages, 0))


def apply_order_topics(state: BrokerState, at: int) -> BrokerState:
    """A registration answer with the name server's ORDER_TOPIC_CONFIG table (none while it is empty): every topic's
    order flag becomes whether the table names it (an emptied table clears them all); a change is a new
    DataVersion, at ``at`` (BRK-1, BRK-21)."""
    order = state.namesrv_order
    if order is None:
        return state
    topics = tuple((n, attrs.evolve(c, order=n in order)) for n, c in state.topics)
    if topics == state.topics:
        return state
    return attrs.evolve(state, topics=topics, topics_version=next_version(state.topics_version, at))


def drop_unused_queues(state: BrokerState) -> BrokerState:
    """``cleanUnusedTopic``: the consume queues of topics without config go (SCHEDULE_TOPIC_XXXX and the
    transaction op topic stay); the commit log keeps their messages."""
    names = {name for name, _ in state.topics} | {SCHEDULE_TOPIC, TRANS_OP_HALF_TOPIC}
    return attrs.evolve(state, queues=tuple((k, q) for k, q in state.queues if k[0] in names))


def system_topics(state: BrokerState) -> tuple[str, ...]:
    return broker_system_topics(CLUSTER, BROKER_NAME)


# -------------------------------------------------------------------------------------------------- topics
def create_topic(state: BrokerState, a: CreateTopic) -> BrokerState:
    """UPDATE_AND_CREATE_TOPIC: a filter type that is not one is SYSTEM_ERROR, then an invalid or system topic
    (BRK-17); otherwise its new config (a new
    DataVersion, BRK-21) registered with the name server, whose answer sets every topic's order flag (BRK-1), SUCCESS
    with the remark 'not set any response code'. The consume queues stay."""
    if not a.filter_ok:
        # CreateTopicRequestHeader.checkFields throws while the header is decoded: nothing else is looked at.
        return answer(state, ResponseCode.SYSTEM_ERROR, UNDECIDED)
    refused = admin_topic_check(a.topic, system_topics(state))
    if refused is not None:
        return answer(state, refused[0], refused[1])
    write = a.queues if a.write_queues is None else a.write_queues
    state = put_topic(state, a.topic, TopicConf(a.queues, write, a.perm, a.multi_tag, a.sys_flag))
    # registerIncrementBrokerData: the answer of the registration brings the name server's order topics.
    state = apply_order_topics(state, state.now + state.settings.register_rtt)
    return answer(state, ResponseCode.SUCCESS, NOT_SET_REMARK)


def delete_topic(state: BrokerState, a: DeleteTopic) -> BrokerState:
    """DELETE_TOPIC_IN_BROKER: refused as a creation is (BRK-17); the config goes (a new DataVersion when there was
    one, BRK-21) and so do the consume queues of every topic without config: a topic created again starts at offset
    0, the commit log keeps the messages (BRK-17)."""
    refused = admin_topic_check(a.topic, system_topics(state))
    if refused is not None:
        return answer(state, refused[0], refused[1])
    if state.topic(a.topic) is not None:
        state = attrs.evolve(state, topics=table_drop(state.topics, a.topic),
                             topics_version=next_version(state.topics_version, state.now))
    return answer(drop_unused_queues(state), ResponseCode.SUCCESS)


def get_topic_config(state: BrokerState, a: GetTopicConfig) -> BrokerState:
    """GET_ALL_TOPIC_CONFIG: the topic table and its DataVersion (BRK-17, BRK-21)."""
    return answer(state, ResponseCode.SUCCESS, body=(state.topics, state.topics_version))


def get_system_topics(state: BrokerState, a: GetSystemTopics) -> BrokerState:
    """GET_SYSTEM_TOPIC_LIST_FROM_BROKER: the built-in system topics and the broker's own (BRK-21)."""
    return answer(state, ResponseCode.SUCCESS, body=tuple(sorted(SYSTEM_TOPICS | set(system_topics(state)))))


def get_topic_stats(state: BrokerState, a: GetTopicStats) -> BrokerState:
    """GET_TOPIC_STATS_INFO: per write queue (queue id, min, max, last store time), TOPIC_NOT_EXIST for a topic
    without config (BRK-25)."""
    conf = state.topic(a.topic)
    if conf is None:
        return answer(state, ResponseCode.TOPIC_NOT_EXIST, f"topic[{a.topic}] not exist")
    times = tuple(tuple(m.store_time for m in state.queue(a.topic, q)) for q in range(conf.write_queue_nums))
    rows = topic_stats(conf.write_queue_nums, times)
    return answer(state, ResponseCode.SUCCESS, body=tuple((q, *row) for q, row in enumerate(rows)))


def offset_query(state: BrokerState, a: OffsetQuery) -> BrokerState:
    """GET_MIN_OFFSET, GET_MAX_OFFSET, GET_EARLIEST_MSG_STORETIME (BRK-10) and SEARCH_OFFSET_BY_TIMESTAMP (BRK-11)
    of any queue (0, 0, -1 and 0 for one never written)."""
    times = tuple(m.store_time for m in state.queue(a.topic, a.queue_id))
    low, high, earliest = queue_offsets(times)
    value = {"min": low, "max": high, "earliest": earliest}.get(a.kind)
    if value is None:
        value = search_offset(times, a.timestamp)
    return answer(state, ResponseCode.SUCCESS, body=value)


def query_consume_queue(state: BrokerState, a: QueryConsumeQueue) -> BrokerState:
    """QUERY_CONSUME_QUEUE: the entries (commit-log offset, size, tags code: BRK-9) from the index, the queue's min
    and max index and, for a group, its subscription expression or that it is not online; or the remarks of a queue
    never written or an index outside it (BRK-25); the subscription is the group's online one (BRK-13)."""
    queue = state.queue(a.topic, a.queue_id)
    written = table_get(state.queues, (a.topic, a.queue_id)) is not None
    code, remark, offsets = consume_queue_answer(written, len(queue), a.index, a.count)
    if remark is not None:
        remark = remark.format(index=a.index, queue=f"{a.queue_id}@{a.topic}")
    subscription: Any = None
    if a.group is not None:
        info = state.consumer_group(a.group)
        subscription = ("*",) if info is not None and a.topic in info.topics else f"{a.group}@{a.topic} is not online!"
    body = None if offsets is None else (0, len(queue), tuple(
        (queue[o].commit_log_offset, queue[o].size, tags_code(queue[o].tags)) for o in offsets), subscription)
    return answer(state, code, remark, body=body)


def consumed_by(state: BrokerState, a: ConsumedBy) -> BrokerState:
    """QUERY_TOPIC_CONSUME_BY_WHO: the online groups subscribed to the topic (BRK-13) and the groups with offsets
    on it (BRK-30)."""
    groups = {g for g, info in state.consumers if a.topic in info.topics}
    groups |= {k[0] for k, _ in state.offsets if k[1] == a.topic}
    return answer(state, ResponseCode.SUCCESS, body=tuple(sorted(groups)))


# -------------------------------------------------------------------------------------------------- groups
def create_group(state: BrokerState, a: CreateGroup) -> BrokerState:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: the body's settings replace the group's (BRK-20), a new DataVersion
    (BRK-21)."""
    conf = GroupConf(a.retry_queue_nums, a.retry_max_times, a.notify, a.consume_enable)
    return answer(put_group(state, a.group, conf), ResponseCode.SUCCESS)


def delete_group(state: BrokerState, a: DeleteGroup) -> BrokerState:
    """DELETE_SUBSCRIPTIONGROUP: the settings go (BRK-20), a new DataVersion when there were some (BRK-21); SUCCESS
    for an unknown group too."""
    if state.group(a.group) is not None:
        state = attrs.evolve(state, groups=table_drop(state.groups, a.group),
                             groups_version=next_version(state.groups_version, state.now))
    return answer(state, ResponseCode.SUCCESS)


def get_groups(state: BrokerState, a: GetGroups) -> BrokerState:
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG: the group table (auto-created groups too, BRK-20) and its DataVersion
    (BRK-21)."""
    return answer(state, ResponseCode.SUCCESS, body=(state.groups, state.groups_version))


# -------------------------------------------------------------------------------------------------- clients
def _members_without(members: tuple[tuple[str, str], ...], connection: str) -> tuple[tuple[str, str], ...]:
    return tuple(m for m in members if m[0] != connection)


def _own(a: Heartbeat | UnregisterClient) -> str:
    return a.client_id or a.connection


def heartbeat(state: BrokerState, a: Heartbeat) -> BrokerState:
    """HEART_BEAT: the consumer group's config is found or auto-created (BRK-20), creating %RETRY%<group> with its
    retryQueueNums read|write queues and the unit-sub flag of the consumer data's unitMode (BRK-13, BRK-23); the
    connection joins the group with its client id and the group's subscriptions become the heartbeat's (BRK-13);
    a new connection or changed topics notify the group's connections, if the group's and the broker's switches
    allow (BRK-14); a producer group registers the connection, and the client id's connection unless it has one
    (BRK-29). SUCCESS; a body that is not a HeartbeatData is SYSTEM_ERROR (BRK-13)."""
    if a.malformed:
        return answer(state, ResponseCode.SYSTEM_ERROR, UNDECIDED)
    notified: tuple[tuple[str, str], ...] = ()
    cid = _own(a)
    if a.group is not None:
        state, conf = find_group(state, a.group)
        notify = conf.notify if conf is not None else True
        if conf is not None and state.topic(retry_topic(a.group)) is None:
            state = put_topic(state, retry_topic(a.group), TopicConf(
                conf.retry_queue_nums, conf.retry_queue_nums, PERM_READ | PERM_WRITE,
                sys_flag=retry_topic_sys_flag(a.unit_mode)))
        info = state.consumer_group(a.group) or ConsumerGroup()
        added = a.connection not in info.connections
        members = tuple(sorted((*_members_without(info.members, a.connection), (a.connection, cid))))
        changed = added or a.topics != info.topics
        after = ConsumerGroup(members, a.topics)
        state = attrs.evolve(state, consumers=table_put(state.consumers, a.group, after))
        targets = notify_targets(GroupEvent.HEARTBEAT, changed, tuple(sorted(after.connections)), notify,
                                 state.settings.notify_enable)
        notified = tuple((c, a.group) for c in targets)
    if a.producer is not None:
        members = table_get(state.producers, a.producer, ()) or ()
        if all(c != a.connection for c, _ in members):
            state = attrs.evolve(state, producers=table_put(state.producers, a.producer,
                                                            tuple(sorted((*members, (a.connection, cid))))),
                                 client_channels=table_put(state.client_channels, cid, a.connection))
    return attrs.evolve(answer(state, ResponseCode.SUCCESS), notified=notified)


def unregister_client(state: BrokerState, a: UnregisterClient) -> BrokerState:
    """UNREGISTER_CLIENT: the connection leaves the producer group (a group left empty goes) and the client id it
    names leaves the producer manager's client table (BRK-29); the consumer group's config is found or auto-created
    (BRK-20) and the connection leaves the group (an emptied group goes), which notifies the group's remaining
    connections when the group's and the broker's switches allow (BRK-14, BRK-15). SUCCESS."""
    notified: tuple[tuple[str, str], ...] = ()
    if a.producer is not None:
        members = table_get(state.producers, a.producer)
        if members:
            left = _members_without(members, a.connection)
            producers = table_put(state.producers, a.producer, left) if left else table_drop(state.producers,
                                                                                                a.producer)
            state = attrs.evolve(state, producers=producers,
                                 client_channels=table_drop(state.client_channels, _own(a)))
    if a.group is not None:
        state, conf = find_group(state, a.group)
        notify = conf.notify if conf is not None else True
        info = state.consumer_group(a.group)
        if info is not None:
            members = _members_without(info.members, a.connection)
            consumers = table_put(state.consumers, a.group, ConsumerGroup(members, info.topics)) if members else \
                table_drop(state.consumers, a.group)
            state = attrs.evolve(state, consumers=consumers)
            remaining = tuple(sorted(c for c, _ in members))
            notified = tuple((c, a.group) for c in notify_targets(GroupEvent.UNREGISTER, True, remaining, notify,
                                                                  state.settings.notify_enable))
    return attrs.evolve(answer(state, ResponseCode.SUCCESS), notified=notified)


def connection_closed(state: BrokerState, a: ConnectionClosed) -> BrokerState:
    """A closed connection leaves every consumer group (an emptied one goes) and each group's remaining connections
    are notified whatever the group's switch (BRK-13, BRK-14, BRK-15); it leaves every producer group (the group
    stays) and the producer manager's client table (BRK-29)."""
    consumers = []
    notified: list[tuple[str, str]] = []
    for group, info in state.consumers:
        if a.connection not in info.connections:
            consumers.append((group, info))
            continue
        members = _members_without(info.members, a.connection)
        if members:
            consumers.append((group, ConsumerGroup(members, info.topics)))
        remaining = tuple(sorted(c for c, _ in members))
        conf = state.group(group)
        notified += [(c, group) for c in notify_targets(GroupEvent.CHANNEL_CLOSED, True, remaining,
                                                        conf.notify if conf is not None else True,
                                                        state.settings.notify_enable)]
    gone = {cid for _, members in state.producers for c, cid in members if c == a.connection}
    producers = tuple((g, _members_without(members, a.connection)) for g, members in state.producers)
    channels = tuple((cid, c) for cid, c in state.client_channels if cid not in gone)
    state = attrs.evolve(state, consumers=tuple(consumers), producers=producers, client_channels=channels)
    return attrs.evolve(state, answer=None, notified=tuple(sorted(notified)), pushed=())


def consumer_list(state: BrokerState, a: ConsumerList) -> BrokerState:
    """GET_CONSUMER_LIST_BY_GROUP: the client ids of the group's connections (BRK-13)."""
    info = state.consumer_group(a.group)
    code, result = consumer_list_answer(info.client_ids if info is not None else (), a.group)
    if code is ResponseCode.SUCCESS:
        return answer(state, code, body=result)
    assert isinstance(result, str)
    return answer(state, code, result)


def consumer_connections(state: BrokerState, a: ConsumerConnections) -> BrokerState:
    """GET_CONSUMER_CONNECTION_LIST: the group's client ids and subscribed topics; CONSUMER_NOT_ONLINE for a group
    without connections (BRK-13)."""
    info = state.consumer_group(a.group)
    if info is None:
        return answer(state, ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{a.group}] not online")
    return answer(state, ResponseCode.SUCCESS, body=(info.client_ids, tuple(sorted(info.topics))))


def consume_stats(state: BrokerState, a: ConsumeStats) -> BrokerState:
    """GET_CONSUME_STATS: for the topic (or every topic the group has offsets on) with a config here, unless the
    group is online with subscriptions none of which is to it, per read queue the max offset, the committed offset
    (at least 0) and the store time of the last message consumed (0 when none); no pulls: a consume TPS of 0 (BRK-30,
    BRK-13)."""
    topics = {a.topic} if a.topic else {k[1] for k, _ in state.offsets if k[0] == a.group}
    info = state.consumer_group(a.group)
    rows = []
    for topic in sorted(topics):
        conf = state.topic(topic)
        if conf is None or (info is not None and info.topics and topic not in info.topics):
            continue
        for queue_id in range(conf.read_queue_nums):
            queue = state.queue(topic, queue_id)
            committed = max(0, table_get(state.offsets, (a.group, topic, queue_id), 0) or 0)
            last = queue[committed - 1].store_time if 0 < committed <= len(queue) else 0
            rows.append((topic, queue_id, len(queue), committed, last))
    return answer(state, ResponseCode.SUCCESS, body=(0.0, tuple(rows)))


def _producer_ids(members: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """The client ids of a producer group's connections, each as it registered."""
    return tuple(sorted(cid for _, cid in members))


def producer_connections(state: BrokerState, a: ProducerConnections) -> BrokerState:
    """GET_PRODUCER_CONNECTION_LIST: the group's connections (none once they closed: the group stays), SYSTEM_ERROR
    for a group never registered (BRK-29)."""
    members = table_get(state.producers, a.group)
    if members is None:
        return answer(state, ResponseCode.SYSTEM_ERROR, f"the producer group[{a.group}] not exist")
    return answer(state, ResponseCode.SUCCESS, body=_producer_ids(members))


def producer_info(state: BrokerState, a: ProducerInfo) -> BrokerState:
    """GET_ALL_PRODUCER_INFO: each producer group with connections, and their client ids (BRK-29)."""
    body = tuple((g, _producer_ids(members)) for g, members in state.producers if members)
    return answer(state, ResponseCode.SUCCESS, body=body)


def lock_batch(state: BrokerState, a: LockBatch) -> BrokerState:
    """LOCK_BATCH_MQ: the requested queues the client holds after the request, each free, its own or expired lock
    taken or renewed now; a body that is not a LockBatchRequestBody is SYSTEM_ERROR (BRK-16)."""
    if a.malformed:
        return answer(state, ResponseCode.SYSTEM_ERROR, UNDECIDED)
    holders = tuple((k[2], v[0], state.now - v[1]) for k, v in state.locks if k[:2] == (a.group, a.topic))
    granted = lock_batch_answer(a.queues, holders, a.client_id)
    locks = state.locks
    for queue in granted:
        locks = table_put(locks, (a.group, a.topic, queue), (a.client_id, state.now))
    return answer(attrs.evolve(state, locks=locks), ResponseCode.SUCCESS, body=tuple(sorted(granted)))


def unlock_batch(state: BrokerState, a: UnlockBatch) -> BrokerState:
    """UNLOCK_BATCH_MQ: the requested queues the client holds are freed, others' locks stay (BRK-16). SUCCESS; a body
    that is not an UnlockBatchRequestBody is SYSTEM_ERROR."""
    if a.malformed:
        return answer(state, ResponseCode.SYSTEM_ERROR, UNDECIDED)
    locks = tuple((k, v) for k, v in state.locks
                  if not (k[:2] == (a.group, a.topic) and k[2] in a.queues and v[0] == a.client_id))
    return answer(attrs.evolve(state, locks=locks), ResponseCode.SUCCESS)
