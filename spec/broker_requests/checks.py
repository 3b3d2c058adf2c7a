"""Broker requests: the invariants' checks, on every state and on every step (their tuples and the model are in
``invariants``)."""

from __future__ import annotations

import functools

import attrs

from rocketspec.spec.broker_requests.actions import (
    Action,
    CommitOffset,
    ConnectionClosed,
    CorrectionOffset,
    CreateGroup,
    CreateTopic,
    DeleteGroup,
    DeleteTopic,
    GetBrokerConfig,
    GetGroups,
    GetTopicConfig,
    GetTopicStats,
    Heartbeat,
    LockBatch,
    Maintenance,
    Malformed,
    OffsetQuery,
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
    CONFIG_BLACK_LIST,
    GroupConf,
    broker_system_topics,
    builtin_topics,
    consumer_list_answer,
    is_system_topic,
    reply_topic,
)
from rocketspec.spec.broker_requests.machine import (
    MAX_TIME,
)
from rocketspec.spec.broker_requests.oracles import (
    TopicConf,
    queue_offsets,
    search_offset,
    tag_subscription_passes,
    tags_code,
)
from rocketspec.spec.broker_requests.state import (
    BROKER_NAME,
    CLUSTER,
    Answer,
    BrokerState,
    Stored,
    table_get,
)
from rocketspec.spec.java import string_hash as java_string_hash
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    BROKER_DEFAULT_TOPIC_QUEUE_NUMS,
    BROKER_LOCK_EXPIRY_MS,
    PERM_READ,
    PERM_WRITE,
    STATS_TOPIC_PUT_NUMS,
    SYSFLAG_MULTI_TAGS,
    TOPIC_SYS_FLAG_UNIT,
    TOPIC_SYS_FLAG_UNIT_SUB,
    TRANS_HALF_TOPIC,
    Property,
    RequestCode,
    ResponseCode,
    retry_topic,
)

RW = PERM_READ | PERM_WRITE
REPLY = reply_topic(CLUSTER)


# ------------------------------------------------------------------------------------------------- invariants
def store_times(queue: tuple[Stored, ...]) -> tuple[int, ...]:
    return tuple(m.store_time for m in queue)


def offsets_answer_the_queues(state: BrokerState) -> bool:
    for _key, queue in state.queues:
        low, high, earliest = queue_offsets(store_times(queue))
        if (low, high) != (0, len(queue)) or earliest != (queue[0].store_time if queue else -1):
            return False
    return True


def search_finds_nearest(state: BrokerState) -> bool:
    for _key, queue in state.queues:
        times = store_times(queue)
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


def tags_pass_their_subscription(state: BrokerState) -> bool:
    for _key, queue in state.queues:
        for message in queue:
            if message.tags and not tag_subscription_passes(message.tags, message.tags):
                return False
            if tags_code(message.tags) != (java_string_hash(message.tags) if message.tags else 0):
                return False
    return True


def queues_are_the_log(state: BrokerState) -> bool:
    """Each consume queue holds its messages at offsets 0, 1, ..., all of them in the commit log, which runs without
    gaps (each message starts where the one before ended) to its end."""
    logged = set(state.log)
    for (topic, queue_id), queue in state.queues:
        for offset, message in enumerate(queue):
            if (message.topic, message.queue_id, message.queue_offset) != (topic, queue_id, offset):
                return False
            if message not in logged:
                return False
    end = 0
    for message in state.log:
        if message.commit_log_offset != end or message.size <= 0:
            return False
        end += message.size
    return end == state.commit_log


@functools.lru_cache(maxsize=2)
def builtin_table(auto_create: bool) -> tuple[tuple[str, TopicConf], ...]:
    return builtin_topics(CLUSTER, BROKER_NAME, auto_create, BROKER_DEFAULT_TOPIC_QUEUE_NUMS)


def builtin_topics_stay(state: BrokerState) -> bool:
    """The built-in topics cannot be changed by a request (TBW102 only loses its inherit bit)."""
    table = dict(state.topics)
    for name, conf in builtin_table(state.auto_create):
        found = table.get(name)
        if found is None:
            return False
        if name == AUTO_CREATE_TOPIC_KEY:
            if found.perm not in (conf.perm, RW):
                return False
        elif found != conf:
            return False
    return (AUTO_CREATE_TOPIC_KEY in table) == state.auto_create


def puts_are_counted(state: BrokerState) -> bool:
    """Every stored send counts its messages under its topic (the half topic's copies are put by the broker)."""
    for topic in {m.topic for m in state.log} - {TRANS_HALF_TOPIC}:
        counted = sum(c.value for c in table_get(state.stats, (STATS_TOPIC_PUT_NUMS, topic), ()) or ())
        if counted != sum(1 for m in state.log if m.topic == topic):
            return False
    return True


def stored_with_the_cluster(state: BrokerState) -> bool:
    """Every message a client sent (and a half-message copy of one) carries CLUSTER, but a reply, stored with the
    properties as sent; a MULTI_TAG topic's carry the MULTI_TAGS sysFlag (BRK-8, BRK-28)."""
    for message in state.log:
        has_cluster = message.prop(Property.CLUSTER) == CLUSTER
        if has_cluster == (message.topic == REPLY):
            return False
    for (topic, _q), queue in state.queues:
        conf = state.topic(topic)
        if conf is not None and conf.multi_tag and any(not m.sys_flag & SYSFLAG_MULTI_TAGS for m in queue):
            return False
    return True


def answer_of(state: BrokerState) -> Answer:
    assert state.answer is not None
    return state.answer


def send_answer_is_the_offset(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Send | SendBatch):
        return True
    answer = after.answer
    if answer is None:
        return False
    if answer.code is not ResponseCode.SUCCESS:
        return after.message_count == before.message_count and after.log == before.log
    count = 1 if isinstance(action, Send) else action.count
    before_queue = before.queue(action.topic, answer.queue_id)
    after_queue = after.queue(action.topic, answer.queue_id)
    ids = (answer.msg_id or "").split(",")
    return (answer.queue_offset == len(before_queue) and answer.stored == count and len(ids) == count
            and after_queue[:answer.queue_offset] == before_queue and len(after_queue) == len(before_queue) + count
            and after.message_count == before.message_count + count
            and all(int(i[16:], 16) == m.commit_log_offset
                    for i, m in zip(ids, after_queue[answer.queue_offset:], strict=True)))


def queue_id_rules(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Send | SendBatch) or after.answer is None:
        return True
    conf = after.topic(action.topic)
    if conf is None or after.answer.code in (ResponseCode.NO_PERMISSION, ResponseCode.TOPIC_NOT_EXIST):
        return True
    if action.queue_id >= max(conf.read_queue_nums, conf.write_queue_nums):
        return after.answer.code is ResponseCode.SYSTEM_ERROR and after.message_count == before.message_count
    if after.answer.code is not ResponseCode.SUCCESS:
        return True
    if action.queue_id < 0:
        return after.answer.queue_id == action.draw % conf.write_queue_nums
    return after.answer.queue_id == action.queue_id


def auto_create_from_default(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Send | SendBatch) or before.topic(action.topic) is not None:
        return True
    if is_system_topic(action.topic) or action.topic.startswith("%"):
        return True
    created = after.topic(action.topic)
    default = before.topic(action.default_topic)
    inherits = default is not None and bool(default.perm & 1) and (
        action.default_topic != AUTO_CREATE_TOPIC_KEY or before.settings.auto_create_topic)
    if not inherits:
        return created is None and after.answer is not None and after.answer.code is ResponseCode.TOPIC_NOT_EXIST
    assert default is not None
    queues = max(0, min(action.default_queues, default.write_queue_nums))
    flag = TOPIC_SYS_FLAG_UNIT if action.unit_mode else 0
    return created == TopicConf(queues, queues, default.perm & ~1, default.multi_tag, flag)


def send_ignores_topic_perm(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Send) or action.queue_id < 0:
        return True
    conf = before.topic(action.topic)
    if conf is None or conf.perm & PERM_WRITE or action.queue_id >= max(conf.read_queue_nums, conf.write_queue_nums):
        return True
    if action.topic.startswith("%") or len(action.body) > before.settings.max_message_size:
        return True
    return after.answer is not None and after.answer.code is ResponseCode.SUCCESS


def unit_flags(before: BrokerState, action: Action, after: BrokerState) -> bool:
    """A topic a send or a heartbeat creates carries the unit flags of the request (BRK-23)."""
    if isinstance(action, Send | SendBatch) and before.topic(action.topic) is None:
        created = after.topic(action.topic)
        if created is None:
            return True
        wanted = 0 if not action.unit_mode else (
            TOPIC_SYS_FLAG_UNIT_SUB if action.topic.startswith("%RETRY%") else TOPIC_SYS_FLAG_UNIT)
        return created.sys_flag == wanted
    if isinstance(action, Heartbeat) and action.group is not None and before.topic(retry_topic(action.group)) is None:
        created = after.topic(retry_topic(action.group))
        return created is None or created.sys_flag == (TOPIC_SYS_FLAG_UNIT_SUB if action.unit_mode else 0)
    return True


def admin_topic_requests(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if isinstance(action, CreateTopic | DeleteTopic):
        system = is_system_topic(action.topic, broker_system_topics(CLUSTER, BROKER_NAME))
        if system:
            return answer_of(after).code is ResponseCode.SYSTEM_ERROR and after.topics == before.topics
    if isinstance(action, DeleteTopic):
        return after.topic(action.topic) is None and all(k[0] != action.topic for k, _ in after.queues)
    if isinstance(action, CreateTopic):
        write = action.queues if action.write_queues is None else action.write_queues
        conf = after.topic(action.topic)
        return (conf is not None and (conf.read_queue_nums, conf.write_queue_nums, conf.perm) == (
            action.queues, write, action.perm) and after.queues == before.queues
            and after.topics_version[0] - before.topics_version[0] in (1, 2))  # 2: the order flags changed too
    if isinstance(action, GetTopicConfig):
        return answer_of(after).body == (before.topics, before.topics_version)
    return True


def heartbeat_registers(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Heartbeat) or action.group is None:
        return True
    info = after.consumer_group(action.group)
    if info is None or action.connection not in info.connections or info.topics != action.topics:
        return False
    ids = info.client_ids
    conf = after.group(action.group)
    retry = after.topic(retry_topic(action.group))
    return (consumer_list_answer(ids, action.group) == (ResponseCode.SUCCESS, ids)
            and (conf is None or (retry is not None and retry.perm == RW)))


def notifications(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if isinstance(action, Heartbeat) and action.group is not None:
        old = before.consumer_group(action.group)
        conf = after.group(action.group)
        changed = old is None or action.connection not in old.connections or action.topics != old.topics
        switch = (conf is None or conf.notify) and before.settings.notify_enable
        info = after.consumer_group(action.group)
        assert info is not None
        expected = [(c, action.group) for c in sorted(info.connections)] if changed and switch else []
    elif isinstance(action, UnregisterClient) and action.group is not None:
        old = before.consumer_group(action.group)
        conf = after.group(action.group)
        switch = (conf is None or conf.notify) and before.settings.notify_enable
        left = sorted(old.connections - {action.connection}) if old is not None else []
        expected = [(c, action.group) for c in left] if old is not None and switch else []
    elif isinstance(action, ConnectionClosed):
        expected = sorted((c, g) for g, info in before.consumers if action.connection in info.connections
                          for c in info.connections - {action.connection}) if before.settings.notify_enable else []
    else:
        return after.notified == ()
    return list(after.notified) == expected


def unregister_removes(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if isinstance(action, ConnectionClosed):
        return all(action.connection not in info.connections for _, info in after.consumers) and all(
            action.connection != c for _, members in after.producers for c, _ in members)
    if not isinstance(action, UnregisterClient) or action.group is None:
        return True
    info = after.consumer_group(action.group)
    if info is None:
        code, _ = consumer_list_answer((), action.group)
        return code is ResponseCode.SYSTEM_ERROR
    return action.connection not in info.connections


def groups_auto_created(before: BrokerState, action: Action, after: BrokerState) -> bool:
    """A heartbeat, an unregistration or a %RETRY% send naming a group without config creates its config exactly
    when auto creation is on (BRK-20); the table's version moves with every change (BRK-21)."""
    if isinstance(action, Heartbeat | UnregisterClient):
        group = action.group
    elif isinstance(action, Send) and action.topic.startswith("%RETRY%") and answer_of(after).code in (
            ResponseCode.SUCCESS, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST):
        group = action.topic[len("%RETRY%"):]
    elif isinstance(action, CreateGroup):
        return after.group(action.group) is not None and after.groups_version[0] == before.groups_version[0] + 1
    elif isinstance(action, DeleteGroup):
        return after.group(action.group) is None
    elif isinstance(action, GetGroups):
        return answer_of(after).body == (before.groups, before.groups_version)
    else:
        return after.groups == before.groups
    if group is None or before.group(group) is not None:
        return after.groups == before.groups
    created = after.group(group) == GroupConf()
    return created == (before.settings.auto_create_group or group.startswith("CID_RMQ_SYS_")) and (
        created == (after.groups_version[0] == before.groups_version[0] + 1))


def config_updates(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if isinstance(action, UpdateBrokerConfig):
        if any(k in CONFIG_BLACK_LIST for k, _ in action.entries):
            return answer_of(after).code is ResponseCode.NO_PERMISSION and after.settings == before.settings and \
                after.config_version == before.config_version
        return answer_of(after).code is ResponseCode.SUCCESS and after.config_version[0] == before.config_version[0] + 1
    if isinstance(action, GetBrokerConfig):
        body = answer_of(after).body
        return isinstance(body, str) and f"maxMessageSize={before.settings.max_message_size}\n" in body
    return after.settings == before.settings


def reply_pushes(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, SendReply):
        return after.pushed == ()
    answer = answer_of(after)
    if answer.code in (ResponseCode.NO_PERMISSION, ResponseCode.TOPIC_NOT_EXIST) or (
            answer.code is ResponseCode.SYSTEM_ERROR and answer.remark and "illegal" in answer.remark):
        return after.pushed == ()
    found = action.reply_to is not None and action.reply_to in dict(before.client_channels)
    ok = (answer.code is ResponseCode.SUCCESS) == (found and action.push_ok)
    stored = after.message_count == before.message_count + (1 if before.settings.store_reply else 0)
    return ok and stored and (after.pushed != ()) == found


def queries_answer_the_log(before: BrokerState, action: Action, after: BrokerState) -> bool:
    """QUERY_MESSAGE finds only messages of the topic in the time range; VIEW_MESSAGE_BY_ID answers the message that
    starts at the offset (BRK-12); what a reader gets is the body as sent before compression (BRK-22)."""
    by_offset = {m.commit_log_offset: m for m in before.log}
    answer = after.answer
    if isinstance(action, QueryMessage):
        assert answer is not None
        if answer.code is not ResponseCode.SUCCESS:
            return answer.code is ResponseCode.QUERY_NOT_FOUND
        found = answer.body
        assert isinstance(found, tuple)
        return bool(found) and all(
            o in by_offset and by_offset[o].topic == action.topic and body == by_offset[o].read_body
            and by_offset[o].store_time >= action.begin for o, body in found)
    if isinstance(action, ViewMessage):
        assert answer is not None
        if action.offset not in by_offset:
            return answer.code is ResponseCode.SYSTEM_ERROR
        m = by_offset[action.offset]
        return answer.code is ResponseCode.SUCCESS and isinstance(answer.body, tuple) and answer.body[3] == (
            m.original if m.original is not None else m.body)
    if isinstance(action, ResumeHalf):
        assert answer is not None
        if action.offset not in by_offset:
            return answer.code is ResponseCode.SYSTEM_ERROR and after.log == before.log
        copy = after.log[-1]
        return answer.code is ResponseCode.SUCCESS and copy.topic == TRANS_HALF_TOPIC and copy.queue_id == 0 and \
            copy.prop(Property.TRANSACTION_CHECK_TIMES) == "0"
    return True


def store_answers(before: BrokerState, action: Action, after: BrokerState) -> bool:
    """GET_TOPIC_STATS_INFO, QUERY_CONSUME_QUEUE, the offset queries, the runtime info and the stats answer what the
    store holds (BRK-10, BRK-25, BRK-26, BRK-27)."""
    answer = after.answer
    if isinstance(action, GetTopicStats):
        assert answer is not None
        conf = before.topic(action.topic)
        if conf is None:
            return answer.code is ResponseCode.TOPIC_NOT_EXIST
        rows = answer.body
        assert isinstance(rows, tuple)
        return len(rows) == conf.write_queue_nums and all(
            row[2] == len(before.queue(action.topic, row[0])) for row in rows)
    if isinstance(action, QueryConsumeQueue):
        assert answer is not None
        queue = before.queue(action.topic, action.queue_id)
        if answer.body is None:
            return not 0 <= action.index < len(queue)
        body = answer.body
        assert isinstance(body, tuple)
        return body[1] == len(queue) and all(e[0] == queue[action.index + i].commit_log_offset
                                             for i, e in enumerate(body[2]))
    if isinstance(action, OffsetQuery) and action.kind == "max":
        assert answer is not None
        return answer.body == len(before.queue(action.topic, action.queue_id))
    if isinstance(action, RuntimeInfo):
        assert answer is not None
        assert isinstance(answer.body, tuple)
        values: dict[str, str] = dict(answer.body)
        return values["commitLogMaxOffset"] == str(before.commit_log)
    if isinstance(action, ViewStats):
        assert answer is not None
        if table_get(before.stats, (action.name, action.key)) is None:
            return answer.code is ResponseCode.SYSTEM_ERROR
        return answer.code is ResponseCode.SUCCESS
    return True


def offsets(before: BrokerState, action: Action, after: BrokerState) -> bool:
    answer = after.answer
    if isinstance(action, CommitOffset):
        return table_get(after.offsets, (action.group, action.topic, action.queue_id)) == action.offset
    if isinstance(action, QueryOffset):
        assert answer is not None
        committed = table_get(before.offsets, (action.group, action.topic, action.queue_id))
        return answer.body == (committed if committed is not None and committed >= 0 else 0)
    if isinstance(action, CorrectionOffset):
        return all(k[0] not in action.filter_groups for k, _ in after.offsets)
    return after.offsets == before.offsets


def maintenance_answers(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if not isinstance(action, Maintenance):
        return True
    if action.code == RequestCode.GET_BROKER_CLUSTER_ACL_INFO:
        return after.answer is None
    answer = answer_of(after)
    if action.code not in (RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, RequestCode.DELETE_EXPIRED_COMMITLOG,
                           RequestCode.CLEAN_UNUSED_TOPIC, RequestCode.GET_ALL_DELAY_OFFSET,
                           RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, RequestCode.DELETE_ACL_CONFIG,
                           RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG):
        return answer.code is ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    return answer.code is ResponseCode.SUCCESS or answer.code.name.endswith("_FAILED")


def producers(before: BrokerState, action: Action, after: BrokerState) -> bool:
    if isinstance(action, Heartbeat) and action.producer is not None:
        members = table_get(after.producers, action.producer, ()) or ()
        return any(c == action.connection for c, _ in members)
    if isinstance(action, ProducerInfo):
        body = answer_of(after).body
        assert isinstance(body, tuple)
        return {g for g, _ in body} == {g for g, m in before.producers if m}
    return True


def locks(before: BrokerState, action: Action, after: BrokerState) -> bool:
    """LOCK_BATCH_MQ grants exactly the requested queues free, the client's own or expired; UNLOCK_BATCH_MQ frees
    only the client's own (BRK-16)."""
    if isinstance(action, LockBatch) and not action.malformed:
        body = answer_of(after).body
        assert isinstance(body, tuple)
        for queue in set(action.queues):
            holder = table_get(before.locks, (action.group, action.topic, queue))
            free = holder is None or holder[0] == action.client_id or before.now - holder[1] > BROKER_LOCK_EXPIRY_MS
            if (queue in body) != free:
                return False
        return all(table_get(after.locks, (action.group, action.topic, q)) == (action.client_id, before.now)
                   for q in body)
    if isinstance(action, UnlockBatch):
        return all(v[0] != action.client_id or k[2] not in action.queues or k[:2] != (action.group, action.topic)
                   for k, v in after.locks) and len(after.locks) <= len(before.locks)
    return after.locks == before.locks


def bad_input_changes_nothing(before: BrokerState, action: Action, after: BrokerState) -> bool:
    """A request missing a header field, or with a body that is none, changes nothing (BRK-32)."""
    malformed = isinstance(action, Malformed) or getattr(action, "malformed", False)
    if not malformed:
        return True
    return answer_of(after).code is ResponseCode.SYSTEM_ERROR and attrs.evolve(
        after, answer=before.answer, notified=before.notified, pushed=before.pushed) == before


def order_topics(before: BrokerState, action: Action, after: BrokerState) -> bool:
    """Only a registration's answer (a topic creation, a periodic registration) changes the order flags, to what the
    name server says; a send to an order topic of a broker without write permission is refused (BRK-1)."""
    flags = {n: c.order for n, c in after.topics}
    if isinstance(action, CreateTopic | TimePasses) and before.namesrv_order is not None and \
            flags != {n: c.order for n, c in before.topics}:
        return all(order == (n in before.namesrv_order) for n, order in flags.items())
    if isinstance(action, Send):
        conf = before.topic(action.topic)
        if conf is not None and conf.order and not before.settings.broker_perm & PERM_WRITE:
            return answer_of(after).code is ResponseCode.NO_PERMISSION
    return all(flags.get(n, c.order) == c.order for n, c in before.topics) or isinstance(
        action, CreateTopic | TimePasses)
