"""The name server: broker registration, topic routes, cluster info, KV config and broker expiry.

The area covers what clients and brokers observe of a 4.9.8 name server (``NamesrvController``,
``DefaultRequestProcessor``, ``RouteInfoManager``, ``KVConfigManager``):

* REGISTER_BROKER / UNREGISTER_BROKER and a closed broker channel build and tear down the route tables: topic ->
  broker name -> queue data, broker name -> broker data (addresses by broker id), cluster -> broker names, and the
  live table (address -> data version, last update);
* GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO and GET_ALL_TOPIC_LIST_FROM_NAMESERVER read them;
  DELETE_TOPIC_IN_NAMESRV, WIPE_WRITE_PERM_OF_BROKER and ADD_WRITE_PERM_OF_BROKER change them;
* the KV config (PUT/GET/DELETE_KV_CONFIG) and its ORDER_TOPIC_CONFIG namespace, which becomes a route's
  ``orderTopicConf`` when ``NamesrvConfig.orderMessageEnable`` is on;
* the scan that drops brokers not registered again within 120 s;
* request codes the name server does not serve (no answer at all).

The state machine is one name server with one cluster of two broker names (``a`` with a master and a slave, ``b``
with a master) whose masters register one of two topic-config versions; time passes in 60 s ticks.

Versions: read in ``rocketmq-all-4.9.8``; the route tables and these requests are the same in every 4.9.x (4.9.4
changed only the route body's JSON form, which this area does not model). 5.x moved liveness to
``BrokerHousekeepingService`` and an optional controller; not described here.

The area is a package: ``clauses``, ``oracles``, ``machine``, ``invariants`` (see ``docs/spec-authoring.md``);
every public name is importable from here."""

from __future__ import annotations

from rocketspec.spec.name_server.clauses import (
    CLAUSES,
)
from rocketspec.spec.name_server.invariants import (
    INVARIANTS,
    STEP_INVARIANTS,
    model,
)
from rocketspec.spec.name_server.machine import (
    BROKERS,
    CLUSTER,
    MAX_AGE_TICKS,
    ORDER_CONF,
    TICK_MS,
    TOPIC_CONFIGS,
    TOPICS,
    Action,
    ChannelClosed,
    DeleteKV,
    DeleteTopic,
    NamesrvState,
    PutKV,
    QueueData,
    RegisterBroker,
    RouteAnswer,
    ScanNotActiveBrokers,
    TimePasses,
    UnregisterBroker,
    WritePerm,
    broker_addr,
    cluster_info,
    enabled,
    names_with_addresses,
    route,
    step,
    topic_list,
)
from rocketspec.spec.name_server.oracles import (
    NAMESRV_REQUEST_CODES,
    broker_expired,
    kv_get,
    namesrv_answers,
    order_topic_conf,
    registration_rewrites_topics,
    route_code,
    route_not_found_remark,
    write_perm_after,
)

__all__ = [
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
    "Action",
    "ChannelClosed",
    "DeleteKV",
    "DeleteTopic",
    "NamesrvState",
    "PutKV",
    "QueueData",
    "RegisterBroker",
    "RouteAnswer",
    "ScanNotActiveBrokers",
    "TimePasses",
    "UnregisterBroker",
    "WritePerm",
    "broker_addr",
    "broker_expired",
    "cluster_info",
    "enabled",
    "kv_get",
    "model",
    "names_with_addresses",
    "namesrv_answers",
    "order_topic_conf",
    "registration_rewrites_topics",
    "route",
    "route_code",
    "route_not_found_remark",
    "step",
    "topic_list",
    "write_perm_after",
]
