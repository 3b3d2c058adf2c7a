"""Broker requests: the effects of the offset, configuration, runtime, stats, query, maintenance and bad-input
requests, the name server's order topics and time passing."""

from __future__ import annotations

from typing import Any

import attrs

from rocketspec.spec.broker_requests.actions import (
    CommitOffset,
    CorrectionOffset,
    GetBrokerConfig,
    Maintenance,
    Malformed,
    OrderTopicConfig,
    QueryMessage,
    QueryOffset,
    ResumeHalf,
    RuntimeInfo,
    TimePasses,
    UpdateBrokerConfig,
    ViewMessage,
    ViewStats,
)
from rocketspec.spec.broker_requests.admin import (
    REPORTED_SETTINGS,
    acl_failure_code,
    admin_topic_check,
    broker_config_body,
    config_update_refused,
    consumer_offset_answer,
    correction_offsets,
    malformed_answer,
    parse_setting,
    reported_value,
    runtime_values,
    stats_samples,
    stats_snapshot,
    unsupported_answer,
)
from rocketspec.spec.broker_requests.effects import (
    CONFIG_KEYS,
    RESUME_FAILED_REMARK,
    RESUME_PUT_FAILED_REMARK,
    UNREADABLE,
    answer,
    apply_order_topics,
    drop_unused_queues,
    next_version,
    store,
    system_topics,
)
from rocketspec.spec.broker_requests.oracles import (
    IndexedMessage,
    index_time,
    message_illegal,
    query_by_key,
    view_message_answer,
)
from rocketspec.spec.broker_requests.state import (
    UNDECIDED,
    BrokerState,
    Settings,
    table_get,
    table_put,
)
from rocketspec.spec.protocol import (
    BROKER_REGISTER_INITIAL_DELAY_MS,
    BROKER_REGISTER_INTERVAL_MS,
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    STATS_SAMPLING,
    TRANS_HALF_TOPIC,
    Property,
    RequestCode,
    ResponseCode,
)


# -------------------------------------------------------------------------------------------------- offsets
def commit_offset(state: BrokerState, a: CommitOffset) -> BrokerState:
    """UPDATE_CONSUMER_OFFSET: the group's offset of the queue (BRK-30). SUCCESS."""
    offsets = table_put(state.offsets, (a.group, a.topic, a.queue_id), a.offset)
    return answer(attrs.evolve(state, offsets=offsets), ResponseCode.SUCCESS)


def query_offset(state: BrokerState, a: QueryOffset) -> BrokerState:
    """QUERY_CONSUMER_OFFSET (BRK-30): the committed offset; for a queue never committed (or committed negative) 0
    when its min offset is at most 0 (always, while the commit log keeps everything), else QUERY_NOT_FOUND."""
    committed = table_get(state.offsets, (a.group, a.topic, a.queue_id))
    code, offset = consumer_offset_answer(committed if committed is not None and committed >= 0 else None, 0)
    if code is ResponseCode.SUCCESS:
        return answer(state, code, body=offset)
    return answer(state, code, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")


def correction_offset(state: BrokerState, a: CorrectionOffset) -> BrokerState:
    """QUERY_CORRECTION_OFFSET: the offsets of the filter groups are removed (of every topic), then per queue of the
    topic the least committed offset still in the queue (BRK-30)."""
    kept = tuple((k, v) for k, v in state.offsets if k[0] not in a.filter_groups)
    mins = tuple(0 for _ in range(max((k[2] + 1 for k, _ in kept if k[1] == a.topic), default=0)))
    rows = correction_offsets(tuple((k[0], k[2], v) for k, v in kept if k[1] == a.topic), (), mins)
    return answer(attrs.evolve(state, offsets=kept), ResponseCode.SUCCESS, body=rows)


# --------------------------------------------------------------------------------------------- configuration
def get_broker_config(state: BrokerState, a: GetBrokerConfig) -> BrokerState:
    """GET_BROKER_CONFIG: the settings the model has as key=value lines (BRK-18) and the configuration's
    DataVersion (BRK-24)."""
    return answer(state, ResponseCode.SUCCESS, body=broker_config_body(config_lines(state.settings)), fields=(
        ("version", f'{{"counter":{state.config_version[0]},"timestamp":{state.config_version[1]}}}'),))


def config_lines(settings: Settings) -> tuple[tuple[str, str], ...]:
    """The GET_BROKER_CONFIG lines of the model's settings, by key."""
    lines = {key: _java_text(getattr(settings, field)) for key, field in CONFIG_KEYS}
    lines.update(settings.reported)
    return tuple(sorted(lines.items()))


def _java_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_SETTING_OF = dict(CONFIG_KEYS)
_REPORTED_TYPE = {key: java_type for key, java_type, _default in REPORTED_SETTINGS}


def update_broker_config(state: BrokerState, a: UpdateBrokerConfig) -> BrokerState:
    """UPDATE_BROKER_CONFIG (BRK-24): no body changes nothing; a black-listed key refuses it all (NO_PERMISSION);
    otherwise each key of the model's settings takes a value that parses (the last line of a key wins), the
    DataVersion moves and brokerPermission also moves the topic table's (BRK-21). SUCCESS."""
    if not a.entries:
        return answer(state, ResponseCode.SUCCESS)
    keys = tuple(k for k, _ in a.entries)
    if config_update_refused(keys):
        return answer(state, ResponseCode.NO_PERMISSION, "Can not update config in black list.")
    settings = state.settings
    reported = dict(settings.reported)
    for key, text in dict(a.entries).items():
        if key in _REPORTED_TYPE:
            reported[key] = reported_value(_REPORTED_TYPE[key], text, reported[key])
            continue
        value = parse_setting(key, text)
        if value is not None and key in _SETTING_OF:
            if key == "maxMessageSize" and isinstance(value, int) and not isinstance(value, bool) and value < 10:
                # CommitLog.updateMaxMessageSize keeps the encoder's limit below 10 (the model never sets one).
                value = settings.max_message_size
            changes: dict[str, Any] = {_SETTING_OF[key]: value}
            settings = attrs.evolve(settings, **changes)
    settings = attrs.evolve(settings, reported=tuple(sorted(reported.items())))
    state = attrs.evolve(state, settings=settings, config_version=next_version(state.config_version, state.now))
    if "brokerPermission" in keys:
        # The permission is registered at once, with a new topic-table DataVersion.
        state = attrs.evolve(state, topics_version=next_version(state.topics_version, state.now))
    return answer(state, ResponseCode.SUCCESS)


def runtime_info(state: BrokerState, a: RuntimeInfo) -> BrokerState:
    """GET_BROKER_RUNTIME_INFO: SUCCESS with the runtime KVTable (BRK-18); the store's values as the spec knows them
    (BRK-26)."""
    earliest = state.log[0].store_time if state.log else -1
    return answer(state, ResponseCode.SUCCESS, body=runtime_values(state.commit_log, len(state.log), earliest))


def view_stats(state: BrokerState, a: ViewStats) -> BrokerState:
    """VIEW_BROKER_STATS_DATA: the item's minute, hour and day snapshots, SYSTEM_ERROR for an item never counted
    (BRK-27)."""
    counts = table_get(state.stats, (a.name, a.key))
    if counts is None:
        return answer(state, ResponseCode.SYSTEM_ERROR, f"The stats <{a.name}> <{a.key}> not exist")
    raw = tuple((c.at, c.value, c.times) for c in counts)
    snapshots = tuple(stats_snapshot(stats_samples(raw, state.boot, state.now, period, keep))
                      for _name, period, keep in STATS_SAMPLING)
    return answer(state, ResponseCode.SUCCESS, body=snapshots)


# --------------------------------------------------------------------------------------------------- queries
def _index(state: BrokerState) -> tuple[IndexedMessage, ...]:
    indexed = [m for m in state.log if m.prop(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or m.prop(Property.KEYS)]
    if not indexed:
        return ()
    first = indexed[0].store_time
    return tuple(IndexedMessage(m.topic, m.prop(Property.KEYS), m.prop(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
                                index_time(first, m.store_time), m.commit_log_offset) for m in indexed)


def query_message(state: BrokerState, a: QueryMessage) -> BrokerState:
    """QUERY_MESSAGE: the indexed messages whose key hashes match in [begin, end] (BRK-12), as a reader gets them
    (inflated, BRK-22), with the index's last update (store time and offset of its newest entry); QUERY_NOT_FOUND
    (0 and 0) when none is; a negative maxNum is SYSTEM_ERROR unless the unique-key flag replaces it."""
    if a.max_num < 0 and not a.unique:
        return answer(state, ResponseCode.SYSTEM_ERROR, UNDECIDED)  # the result list's negative capacity
    index = _index(state)
    found = query_by_key(index, a.topic, a.key, a.max_num, a.begin, a.end, a.unique)
    if not found:
        return answer(state, ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct",
                      fields=(("indexLastUpdatePhyoffset", "0"), ("indexLastUpdateTimestamp", "0")))
    by_offset = {m.commit_log_offset: m for m in state.log}
    newest = by_offset[index[-1].commit_log_offset]
    return answer(state, ResponseCode.SUCCESS, body=tuple((o, by_offset[o].read_body) for o in found), fields=(
        ("indexLastUpdatePhyoffset", str(newest.commit_log_offset)),
        ("indexLastUpdateTimestamp", str(newest.store_time))))


def view_message(state: BrokerState, a: ViewMessage) -> BrokerState:
    """VIEW_MESSAGE_BY_ID: the message stored at the offset, as a reader gets it (BRK-12, BRK-22)."""
    if a.offset is None:
        return answer(state, ResponseCode.SYSTEM_ERROR, UNDECIDED)  # the header's null offset unboxed
    by_offset = {m.commit_log_offset: m for m in state.log}
    code, remark = view_message_answer(a.offset, tuple(by_offset))
    if code is not ResponseCode.SUCCESS:
        return answer(state, code, remark)
    m = by_offset[a.offset]
    if m.read_body is None:
        return answer(state, code, body=UNREADABLE)
    return answer(state, code, body=(m.topic, m.queue_id, m.queue_offset, m.read_body, m.sys_flag, m.properties))


def resume_half(state: BrokerState, a: ResumeHalf) -> BrokerState:
    """RESUME_CHECK_HALF_MESSAGE: a copy of the message at the id's offset (body as a reader gets it, sysFlag,
    properties with TRANSACTION_CHECK_TIMES=0) appended to the half topic's queue 0; SYSTEM_ERROR when no message
    starts there, its body does not inflate, or the store refuses the copy (BRK-5) (BRK-31)."""
    by_offset = {m.commit_log_offset: m for m in state.log}
    m = by_offset.get(a.offset) if a.offset is not None else None
    if m is None:
        return answer(state, ResponseCode.SYSTEM_ERROR, RESUME_FAILED_REMARK)
    props = tuple(sorted({**dict(m.properties), Property.TRANSACTION_CHECK_TIMES: "0"}.items()))
    body = m.read_body
    text = PROPERTY_SEPARATOR.join(f"{k}{NAME_VALUE_SEPARATOR}{v}" for k, v in props)
    if body is None or message_illegal(len(body), TRANS_HALF_TOPIC, text, state.settings.max_message_size,
                                       m.sys_flag):
        # The copy the store refuses (BRK-5), or a body the decoder cannot inflate (the exception's remark).
        return answer(state, ResponseCode.SYSTEM_ERROR, RESUME_PUT_FAILED_REMARK if body is not None else
                      RESUME_FAILED_REMARK)
    state, _ = store(state, TRANS_HALF_TOPIC, 0, ((body, props, None),), m.sys_flag)
    return answer(state, ResponseCode.SUCCESS)


def maintenance(state: BrokerState, a: Maintenance) -> BrokerState:
    """The maintenance requests (BRK-31): CLEAN_UNUSED_TOPIC drops the consume queues of topics without config, the
    others change nothing; GET_ALL_DELAY_OFFSET answers no offsets; the ACL updates fail with their codes, and
    GET_BROKER_CLUSTER_ACL_INFO gets no answer; a code the broker does not serve is REQUEST_CODE_NOT_SUPPORTED
    (BRK-19)."""
    unsupported = unsupported_answer(a.code)
    if unsupported is not None:
        return answer(state, unsupported[0], unsupported[1])
    failed = acl_failure_code(a.code)
    if failed is not None:
        # The remark is the JVM's NullPointerException text (no access validator): not the protocol's.
        return answer(state, failed, UNDECIDED)
    if a.code == RequestCode.GET_BROKER_CLUSTER_ACL_INFO:
        return attrs.evolve(state, answer=None, notified=(), pushed=())
    if a.code == RequestCode.CLEAN_UNUSED_TOPIC:
        state = drop_unused_queues(state)
    if a.code == RequestCode.GET_ALL_DELAY_OFFSET:
        return answer(state, ResponseCode.SUCCESS, body=())
    return answer(state, ResponseCode.SUCCESS)


def malformed(state: BrokerState, a: Malformed) -> BrokerState:
    """A request without a header field its handler needs: SYSTEM_ERROR, nothing changes (BRK-32)."""
    code = malformed_answer(a.code, a.missing, admin_topic_check(a.topic, system_topics(state)) is None)
    assert code is not None
    return answer(state, code, UNDECIDED)


def order_topic_config(state: BrokerState, a: OrderTopicConfig) -> BrokerState:
    """The name server's order-topic table changes; the broker learns it from its next registration's answer
    (BRK-1)."""
    names = state.namesrv_order
    if a.order:
        names = (names or frozenset()) | {a.topic}
    elif names is not None:
        names = names - {a.topic}
    return attrs.evolve(state, namesrv_order=names, answer=None, notified=(), pushed=())


def registration_answers(boot: int, start: int, end: int, rtt: int) -> tuple[int, ...]:
    """When the answers of the broker's periodic registrations (every 30 s after 10 s) arrive in (start, end]."""
    first = boot + BROKER_REGISTER_INITIAL_DELAY_MS + rtt
    k = max(0, -(-(start + 1 - first) // BROKER_REGISTER_INTERVAL_MS))
    times = []
    while first + k * BROKER_REGISTER_INTERVAL_MS <= end:
        times.append(first + k * BROKER_REGISTER_INTERVAL_MS)
        k += 1
    return tuple(times)


def time_passes(state: BrokerState, a: TimePasses) -> BrokerState:
    """The clock advances: store times (BRK-10, BRK-11) and the stats samples (BRK-27) move with it, and the answers
    of the periodic registrations set the topics' order flags (BRK-1)."""
    for at in registration_answers(state.boot, state.now, state.now + a.ms, state.settings.register_rtt):
        state = apply_order_topics(state, at)
    return attrs.evolve(state, now=state.now + a.ms, answer=None, notified=(), pushed=())

