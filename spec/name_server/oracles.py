"""Name server: the oracle functions: the normative decisions, with their contracts (checked by CrossHair)."""

from __future__ import annotations

import enum

from rocketspec.spec.java import parse_long
from rocketspec.spec.name_server.clauses import CLAUSES
from rocketspec.spec.protocol import (
    BROKER_CHANNEL_EXPIRED_MS,
    BROKER_REGISTER_INTERVAL_MS,
    MASTER_ID,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    NAMESRV_CONFIG_ALWAYS_BLACK,
    NAMESRV_CONFIG_DEFAULTS,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    TOPIC_SYS_FLAG_UNIT,
    TOPIC_SYS_FLAG_UNIT_SUB,
    VERSION_V4_9_4,
    RequestCode,
    ResponseCode,
    suggest_todo,
)

# The request codes DefaultRequestProcessor.processRequest serves (4.9.8); anything else is left unanswered.
NAMESRV_REQUEST_CODES: frozenset[int] = frozenset({
    RequestCode.PUT_KV_CONFIG, RequestCode.GET_KV_CONFIG, RequestCode.DELETE_KV_CONFIG,
    RequestCode.QUERY_DATA_VERSION, RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER,
    RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_BROKER_CLUSTER_INFO, RequestCode.WIPE_WRITE_PERM_OF_BROKER,
    RequestCode.ADD_WRITE_PERM_OF_BROKER, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    RequestCode.DELETE_TOPIC_IN_NAMESRV, RequestCode.GET_KVLIST_BY_NAMESPACE, RequestCode.GET_TOPICS_BY_CLUSTER,
    RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS, RequestCode.GET_UNIT_TOPIC_LIST, RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
    RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, RequestCode.UPDATE_NAMESRV_CONFIG, RequestCode.GET_NAMESRV_CONFIG,
})


# ------------------------------------------------------------------------------------------------------- oracles
@CLAUSES.oracle("NS-1")
def registration_rewrites_topics(
    broker_id: int, name_known: bool, id_had_address: bool, last_version: int | None, version: int
) -> bool:
    """Whether a REGISTER_BROKER writes the broker's topic configs into the queue data (NS-1).

    ``name_known``: the broker name had broker data; ``id_had_address``: that name had an address under this id;
    ``last_version``: the data version last registered from this address (None: not in the live table).

    pre: -2 <= broker_id <= 2
    post: broker_id == MASTER_ID or not __return__
    post: broker_id != MASTER_ID or (last_version is not None and last_version == version and name_known and id_had_address) or __return__
    post: not __return__ or not name_known or not id_had_address or last_version != version
    """  # noqa: E501
    if broker_id != MASTER_ID:
        return False
    register_first = not name_known or not id_had_address
    return register_first or last_version is None or last_version != version


@CLAUSES.oracle("NS-2", "NS-3")
def route_code(queue_broker_names: tuple[str, ...], names_with_broker_data: tuple[str, ...]) -> ResponseCode:
    """The code of a GET_ROUTEINFO_BY_TOPIC answer for a topic with queue data of ``queue_broker_names`` (NS-2,
    NS-3): SUCCESS only when some of them still has broker data.

    pre: len(queue_broker_names) <= 3 and len(names_with_broker_data) <= 3
    post: __return__ in (ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST)
    post: queue_broker_names != () or __return__ is ResponseCode.TOPIC_NOT_EXIST
    post: (__return__ is ResponseCode.SUCCESS) == any(n in names_with_broker_data for n in queue_broker_names)
    """
    for name in queue_broker_names:
        if name in names_with_broker_data:
            return ResponseCode.SUCCESS
    return ResponseCode.TOPIC_NOT_EXIST


@CLAUSES.oracle("NS-3")
def route_not_found_remark(topic: str) -> str:
    """The remark of a TOPIC_NOT_EXIST route answer (NS-3).

    post: __return__.startswith("No topic route info in name server for the topic: ")
    post: __return__.endswith(" for further details.")
    post: topic in __return__
    """
    return f"No topic route info in name server for the topic: {topic}{suggest_todo()}"


@CLAUSES.oracle("NS-8")
def broker_expired(last_update_ms: int, now_ms: int) -> bool:
    """Whether the scan drops a broker last registered at ``last_update_ms`` (NS-8).

    pre: 0 <= last_update_ms <= now_ms
    post: __return__ == (now_ms - last_update_ms > BROKER_CHANNEL_EXPIRED_MS)
    post: now_ms - last_update_ms != BROKER_CHANNEL_EXPIRED_MS or not __return__
    """
    return last_update_ms + BROKER_CHANNEL_EXPIRED_MS < now_ms


@CLAUSES.oracle("NS-9")
def write_perm_after(perm: int, wipe: bool) -> int:
    """A queue data's perm after WIPE_WRITE_PERM_OF_BROKER (``wipe``) or ADD_WRITE_PERM_OF_BROKER (NS-9).

    pre: 0 <= perm <= 15
    post: not wipe or (__return__ & PERM_WRITE == 0 and __return__ | PERM_WRITE == perm | PERM_WRITE)
    post: wipe or __return__ == PERM_READ | PERM_WRITE
    post: wipe or __return__ & PERM_INHERIT == 0
    """
    if wipe:
        return perm & ~PERM_WRITE
    return PERM_READ | PERM_WRITE


@CLAUSES.oracle("NS-7")
def kv_get(
    entries: tuple[tuple[str, str, str], ...], namespace: str | None, key: str | None
) -> tuple[ResponseCode, str]:
    """GET_KV_CONFIG over ``entries`` (namespace, key, value): (SUCCESS, value) or (QUERY_NOT_FOUND, remark)
    (NS-7). A missing header field is Java's null, printed as ``null``.

    pre: len(entries) <= 2
    post: (__return__[0] is ResponseCode.SUCCESS) == any(e[0] == namespace and e[1] == key for e in entries)
    post: __return__[0] is ResponseCode.SUCCESS or __return__[1].startswith("No config item, Namespace: ")
    post: __return__[0] is not ResponseCode.SUCCESS or any(e[0] == namespace and e[1] == key and e[2] == __return__[1] for e in entries)
    """  # noqa: E501
    for ns, k, value in entries:
        if ns == namespace and k == key:
            return ResponseCode.SUCCESS, value
    shown_ns = "null" if namespace is None else namespace
    shown_key = "null" if key is None else key
    return ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {shown_ns} Key: {shown_key}"


@CLAUSES.oracle("NS-7")
def order_topic_conf(
    entries: tuple[tuple[str, str, str], ...], topic: str, order_message_enable: bool
) -> str | None:
    """A route's ``orderTopicConf``: the topic's ORDER_TOPIC_CONFIG entry when orderMessageEnable (NS-7).

    pre: len(entries) <= 2
    post: order_message_enable or __return__ is None
    post: __return__ is None or any(e[0] == NAMESPACE_ORDER_TOPIC_CONFIG and e[1] == topic and e[2] == __return__ for e in entries)
    post: not order_message_enable or __return__ is not None or not any(e[0] == NAMESPACE_ORDER_TOPIC_CONFIG and e[1] == topic for e in entries)
    """  # noqa: E501
    if not order_message_enable:
        return None
    code, value = kv_get(entries, NAMESPACE_ORDER_TOPIC_CONFIG, topic)
    return value if code is ResponseCode.SUCCESS else None


@CLAUSES.oracle("NS-10")
def namesrv_answers(code: int) -> bool:
    """Whether the name server answers a request with this code at all (NS-10).

    post: __return__ == (code in NAMESRV_REQUEST_CODES)
    post: code != RequestCode.SEND_MESSAGE or not __return__
    post: code != RequestCode.GET_ROUTEINFO_BY_TOPIC or __return__
    """
    return code in NAMESRV_REQUEST_CODES


@CLAUSES.oracle("NS-11")
def route_body_standard(version: int, accept_standard_json_only: bool | None) -> bool:
    """Whether a route body is standard JSON (quoted map keys) rather than fastjson's own form with bare numeric
    broker ids (NS-11): for requests of version V4_9_4 or later, or with ``acceptStandardJsonOnly`` true.

    post: version < VERSION_V4_9_4 or __return__
    post: accept_standard_json_only is not True or __return__
    post: not __return__ or version >= VERSION_V4_9_4 or accept_standard_json_only is True
    """
    if accept_standard_json_only:
        return True
    return version >= VERSION_V4_9_4


@CLAUSES.oracle("NS-12")
def filter_servers_after(current: tuple[str, ...], listed: tuple[str, ...] | None) -> tuple[str, ...]:
    """An address's filter servers after a registration whose body lists ``listed`` (None: the list is null, as
    brokers before V3_0_11 send); ``()`` is no entry (NS-12).

    pre: len(current) <= 2 and (listed is None or len(listed) <= 2)
    post: listed is not None or __return__ == current
    post: listed is None or __return__ == listed
    """
    return current if listed is None else listed


@CLAUSES.oracle("NS-13")
def data_version_changed(live_version: int | None, version: int) -> bool:
    """QUERY_DATA_VERSION's ``changed`` for an address whose live entry holds ``live_version`` (None: not live):
    unchanged only for a live address with that version, which the query then refreshes (NS-13).

    post: live_version is not None or __return__
    post: live_version is None or __return__ == (live_version != version)
    """
    return live_version is None or live_version != version


class UnitList(enum.Enum):
    """The name server's unit topic lists (NS-14)."""

    UNIT = "GET_UNIT_TOPIC_LIST"
    HAS_UNIT_SUB = "GET_HAS_UNIT_SUB_TOPIC_LIST"
    HAS_UNIT_SUB_UNUNIT = "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST"


@CLAUSES.oracle("NS-14")
def unit_listed(which: UnitList, topic_sys_flag: int) -> bool:
    """Whether a topic whose queue data has ``topic_sys_flag`` is in the unit topic list ``which`` (NS-14).

    pre: 0 <= topic_sys_flag <= 3
    post: which is not UnitList.UNIT or __return__ == (topic_sys_flag & TOPIC_SYS_FLAG_UNIT != 0)
    post: which is not UnitList.HAS_UNIT_SUB or __return__ == (topic_sys_flag & TOPIC_SYS_FLAG_UNIT_SUB != 0)
    post: which is not UnitList.HAS_UNIT_SUB_UNUNIT or __return__ == (topic_sys_flag == TOPIC_SYS_FLAG_UNIT_SUB)
    """
    unit = bool(topic_sys_flag & TOPIC_SYS_FLAG_UNIT)
    unit_sub = bool(topic_sys_flag & TOPIC_SYS_FLAG_UNIT_SUB)
    if which is UnitList.UNIT:
        return unit
    if which is UnitList.HAS_UNIT_SUB:
        return unit_sub
    return unit_sub and not unit


_CONFIG_DEFAULTS = dict(NAMESRV_CONFIG_DEFAULTS)


def _config_value(key: str, old: str, text: str) -> str:
    """The value ``properties2Object`` leaves in a property: by the type of its default (booleans by
    ``Boolean.parseBoolean``, integers only when ``Integer.parseInt`` reads them, strings as given)."""
    default = _CONFIG_DEFAULTS.get(key)
    if default in ("true", "false"):
        return "true" if text.lower() == "true" else "false"
    if default is not None and parse_long(default, 32) is not None:
        number = parse_long(text, 32)
        return old if number is None else str(number)
    return text


def config_black_list(config: tuple[tuple[str, str], ...]) -> frozenset[str]:
    """The keys UPDATE_NAMESRV_CONFIG refuses (NS-15): the four always refused and those of configBlackList."""
    listed = next((value for key, value in config if key == "configBlackList"), "")
    return frozenset(NAMESRV_CONFIG_ALWAYS_BLACK) | {k for k in listed.split(";") if k}


@CLAUSES.oracle("NS-15")
def namesrv_config_update(
    config: tuple[tuple[str, str], ...], props: tuple[tuple[str, str], ...]
) -> tuple[ResponseCode, tuple[tuple[str, str], ...]]:
    """UPDATE_NAMESRV_CONFIG with the properties ``props`` over the name server's ``config`` (NS-15): NO_PERMISSION
    and nothing changed when a key is black-listed; else SUCCESS with every known key set as its type reads it.

    pre: len(config) <= 3 and len(props) <= 2
    pre: len({k for k, _ in config}) == len(config)
    post: __return__[0] in (ResponseCode.SUCCESS, ResponseCode.NO_PERMISSION)
    post: (__return__[0] is ResponseCode.NO_PERMISSION) == any(k in NAMESRV_CONFIG_ALWAYS_BLACK or k in config_black_list(config) for k, _ in props)
    post: [k for k, _ in __return__[1]] == [k for k, _ in config]
    post: __return__[0] is ResponseCode.SUCCESS or __return__[1] == config
    post: all(v == dict(config)[k] for k, v in __return__[1] if k not in {p for p, _ in props})
    """  # noqa: E501
    black = config_black_list(config)
    if any(key in black for key, _ in props):
        return ResponseCode.NO_PERMISSION, config
    given = dict(props)
    return ResponseCode.SUCCESS, tuple(
        (key, _config_value(key, value, given[key]) if key in given else value) for key, value in config)


@CLAUSES.oracle("NS-16")
def subscribe_queue_ids(perm: int, read_queue_nums: int) -> tuple[int, ...]:
    """The queue ids a client reads of one queue data of a route (NS-16): 0..readQueueNums-1 when it is readable.

    pre: 0 <= perm <= 15 and 0 <= read_queue_nums <= 8
    post: (len(__return__) > 0) == (perm & PERM_READ != 0 and read_queue_nums > 0)
    post: all(0 <= i < read_queue_nums for i in __return__)
    post: len(set(__return__)) == len(__return__)
    post: not __return__ or len(__return__) == read_queue_nums
    """
    if not perm & PERM_READ:
        return ()
    return tuple(range(read_queue_nums))


@CLAUSES.oracle("NS-17")
def auto_create_topic_conf(auto_create_topic_enable: bool, default_topic_queue_nums: int
                           ) -> tuple[int, int, int] | None:
    """TBW102's (readQueueNums, writeQueueNums, perm) in a master's topic table, None when it has none (NS-17).

    pre: 0 <= default_topic_queue_nums <= 64
    post: auto_create_topic_enable == (__return__ is not None)
    post: __return__ is None or __return__[0] == __return__[1] == default_topic_queue_nums
    post: __return__ is None or __return__[2] == PERM_INHERIT | PERM_READ | PERM_WRITE
    """
    if not auto_create_topic_enable:
        return None
    return default_topic_queue_nums, default_topic_queue_nums, PERM_INHERIT | PERM_READ | PERM_WRITE


@CLAUSES.oracle("NS-17")
def registration_overdue(since_ms: int, grace_ms: int) -> bool:
    """Whether a running broker that reaches a name server is late to register with it ``since_ms`` after its
    last registration (or its start, or the name server's), allowing ``grace_ms`` for the transport (NS-17).

    pre: since_ms >= 0 and grace_ms >= 0
    post: __return__ == (since_ms - grace_ms > BROKER_REGISTER_INTERVAL_MS)
    post: since_ms > BROKER_REGISTER_INTERVAL_MS or not __return__
    """
    return since_ms > BROKER_REGISTER_INTERVAL_MS + grace_ms
