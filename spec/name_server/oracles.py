"""Name server: the oracle functions: the normative decisions, with their contracts (checked by CrossHair)."""

from __future__ import annotations

from rocketspec.spec.name_server.clauses import CLAUSES
from rocketspec.spec.protocol import (
    BROKER_CHANNEL_EXPIRED_MS,
    MASTER_ID,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    PERM_INHERIT,  # noqa: F401  (a contract names it: CrossHair evaluates it here)
    PERM_READ,
    PERM_WRITE,
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
