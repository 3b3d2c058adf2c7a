"""The name server: broker registration, topic routes, cluster info, KV config and broker expiry.

The area covers what clients and brokers observe of 4.9.8 name servers (``NamesrvController``,
``DefaultRequestProcessor``, ``RouteInfoManager``, ``KVConfigManager``) and of the brokers that register with them
(``BrokerController.registerBrokerAll``):

* REGISTER_BROKER / UNREGISTER_BROKER and a closed broker channel build and tear down the route tables: topic ->
  broker name -> queue data, broker name -> broker data (addresses by broker id), cluster -> broker names, the
  live table (address -> data version, last update, haServerAddr) and the filter servers;
* GET_ROUTEINFO_BY_TOPIC (in both JSON forms), GET_BROKER_CLUSTER_INFO and the topic lists read them;
  DELETE_TOPIC_IN_NAMESRV, WIPE_WRITE_PERM_OF_BROKER, ADD_WRITE_PERM_OF_BROKER and QUERY_DATA_VERSION change them;
* the KV config (PUT/GET/DELETE_KV_CONFIG, GET_KVLIST_BY_NAMESPACE) and its ORDER_TOPIC_CONFIG namespace, which
  becomes a route's ``orderTopicConf`` when ``NamesrvConfig.orderMessageEnable`` is on; GET/UPDATE_NAMESRV_CONFIG;
* the scan that drops brokers not registered again within 120 s, and a name server's restart;
* the brokers' side: each registers with every name server at start and every 30 s, a master with its topic table
  (TBW102 with autoCreateTopicEnable); a client reads a route's readable queues;
* request codes the name server does not serve (no answer at all).

The state (``state``) holds each name server's tables and, for a cluster (the lockstep machine's), its brokers.
The explorer's model is one name server with one cluster of two broker names (``a`` with a master and a slave,
``b`` with a master) whose masters register one of two topic-config versions; time passes in 80 s ticks.

Versions: read in ``rocketmq-all-4.9.8``; the route tables and these requests are the same in every 4.9.x (4.9.4
changed the route body's JSON form, NS-11). 5.x moved liveness to ``BrokerHousekeepingService`` and an optional
controller; not described here.

The area is a package: ``clauses``, ``oracles``, ``state``, ``actions``, ``machine``, ``invariants`` (see
``docs/spec-authoring.md``); every public name is importable from here."""

from __future__ import annotations

from rocketspec.spec.name_server.actions import (
    Action,
    BrokerCutOff,
    BrokerStarts,
    BrokerStops,
    ChannelClosed,
    DeleteKV,
    DeleteTopic,
    NamesrvStarts,
    NamesrvStops,
    PutKV,
    QueryDataVersion,
    RegisterBroker,
    Request,
    ScanNotActiveBrokers,
    TimePasses,
    TopicCreated,
    UnregisterBroker,
    UpdateConfig,
    WritePerm,
    registration_addr,
    registration_topics,
)
from rocketspec.spec.name_server.clauses import CLAUSES
from rocketspec.spec.name_server.invariants import INVARIANTS, STEP_INVARIANTS, model
from rocketspec.spec.name_server.machine import (
    TRANSITIONS,
    Bounds,
    answer,
    broker_side,
    enabled,
    new_broker,
    step,
)
from rocketspec.spec.name_server.oracles import (
    NAMESRV_REQUEST_CODES,
    UnitList,
    auto_create_topic_conf,
    broker_expired,
    config_black_list,
    data_version_changed,
    filter_servers_after,
    kv_get,
    namesrv_answers,
    namesrv_config_update,
    order_topic_conf,
    registration_overdue,
    registration_rewrites_topics,
    route_body_standard,
    route_code,
    route_not_found_remark,
    subscribe_queue_ids,
    unit_listed,
    write_perm_after,
)
from rocketspec.spec.name_server.state import (
    AGE_CAP_MS,
    BROKERS,
    CLUSTER,
    MAX_AGE_TICKS,
    ORDER_CONF,
    TICK_MS,
    TOPIC_CONFIGS,
    TOPICS,
    Answer,
    BrokerSide,
    NamesrvState,
    QueueData,
    RouteAnswer,
    Tables,
    TopicConf,
    boot_config,
    broker_addr,
    cluster_info,
    config_value,
    kv_namespace,
    kv_value,
    live_entry,
    names_with_addresses,
    namesrv_config,
    publish_queues,
    reachable_server,
    route,
    subscribe_queues,
    system_topics,
    topic_list,
    topics_by_cluster,
    unit_topics,
)

__all__ = [
    "AGE_CAP_MS",
    "BROKERS",
    "CLAUSES",
    "CLUSTER",
    "INVARIANTS",
    "MAX_AGE_TICKS",
    "NAMESRV_REQUEST_CODES",
    "ORDER_CONF",
    "STEP_INVARIANTS",
    "TICK_MS",
    "TOPICS",
    "TOPIC_CONFIGS",
    "TRANSITIONS",
    "Action",
    "Answer",
    "Bounds",
    "BrokerCutOff",
    "BrokerSide",
    "BrokerStarts",
    "BrokerStops",
    "ChannelClosed",
    "DeleteKV",
    "DeleteTopic",
    "NamesrvStarts",
    "NamesrvState",
    "NamesrvStops",
    "PutKV",
    "QueryDataVersion",
    "QueueData",
    "RegisterBroker",
    "Request",
    "RouteAnswer",
    "ScanNotActiveBrokers",
    "Tables",
    "TimePasses",
    "TopicConf",
    "TopicCreated",
    "UnitList",
    "UnregisterBroker",
    "UpdateConfig",
    "WritePerm",
    "answer",
    "auto_create_topic_conf",
    "boot_config",
    "broker_addr",
    "broker_expired",
    "broker_side",
    "cluster_info",
    "config_black_list",
    "config_value",
    "data_version_changed",
    "enabled",
    "filter_servers_after",
    "kv_get",
    "kv_namespace",
    "kv_value",
    "live_entry",
    "model",
    "names_with_addresses",
    "namesrv_answers",
    "namesrv_config",
    "namesrv_config_update",
    "new_broker",
    "order_topic_conf",
    "publish_queues",
    "reachable_server",
    "registration_addr",
    "registration_overdue",
    "registration_rewrites_topics",
    "registration_topics",
    "route",
    "route_body_standard",
    "route_code",
    "route_not_found_remark",
    "step",
    "subscribe_queue_ids",
    "subscribe_queues",
    "system_topics",
    "topic_list",
    "topics_by_cluster",
    "unit_listed",
    "unit_topics",
    "write_perm_after",
]
