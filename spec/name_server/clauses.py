"""Name server: the clause table: every rule of the area with its ID, statement and sources."""

from __future__ import annotations

from rocketspec.spec.clauses import Clause, ClauseTable

CLAUSES = ClauseTable(
    area="name_server",
    prefix="NS",
    clauses=(
        Clause(
            "NS-1",
            "REGISTER_BROKER records cluster -> broker name and broker name -> (broker id -> address), an address "
            "registered under another id of that name moving to the new id; a master's (id 0) topic configs become "
            "the topics' queue data for its broker name (readQueueNums, writeQueueNums, perm, topicSysFlag) when the "
            "name or id is new or the DataVersion differs from the one last registered from that address (a body-less "
            "request registers DataVersion 0 and no topics, a compressed body's topic configs carry no topicSysFlag); "
            "it answers SUCCESS, with masterAddr and haServerAddr for "
            "a slave whose master is registered and live; a bodyCrc32 other than 0 that does not match the body is "
            "SYSTEM_ERROR 'crc32 not match' and changes nothing, as does a body that does not decode (SYSTEM_ERROR, "
            "the remark naming the failure to decode the RegisterBrokerBody).",
            "DefaultRequestProcessor.registerBrokerWithFilterServer, checksum; RouteInfoManager.registerBroker",
        ),
        Clause(
            "NS-2",
            "GET_ROUTEINFO_BY_TOPIC for a topic with queue data of a broker name that has broker data answers SUCCESS "
            "with TopicRouteData: every queue data of the topic (brokerName, readQueueNums, writeQueueNums, perm, "
            "topicSysFlag) and the broker data (cluster, brokerName, brokerAddrs by id) of those broker names.",
            "DefaultRequestProcessor.getRouteInfoByTopic; RouteInfoManager.pickupTopicRouteData",
        ),
        Clause(
            "NS-3",
            "GET_ROUTEINFO_BY_TOPIC for any other topic answers TOPIC_NOT_EXIST with remark 'No topic route info in "
            "name server for the topic: <topic>' followed by the FAQ suggestion.",
            "DefaultRequestProcessor.getRouteInfoByTopic; FAQUrl.suggestTodo",
        ),
        Clause(
            "NS-4",
            "UNREGISTER_BROKER removes the broker id from its broker name, and the address's live entry once no broker "
            "name lists it; a closed channel removes the address registered through it from the live table and from "
            "every broker name; a broker name left without addresses loses its broker data, its place in its cluster "
            "(an empty cluster goes) and its queue data in every topic, and a topic left without queue data has no "
            "route. (4.9.8 drops the live entry of an unregistered address at once even while another id or name still "
            "lists it, and its onChannelDestroy clears only the first broker name and cluster listing the address: "
            "both leave listings nothing expires; rocketspec's name server leaves nothing behind, which this model, "
            "one address per broker id and one cluster per broker name, does not tell apart.)",
            "RouteInfoManager.unregisterBroker, onChannelDestroy, removeTopicByBrokerName",
        ),
        Clause(
            "NS-5",
            "GET_BROKER_CLUSTER_INFO answers SUCCESS with ClusterInfo: brokerAddrTable (broker name -> cluster, "
            "broker name, addresses by broker id) and clusterAddrTable (cluster -> broker names), for every broker "
            "name that has an address.",
            "DefaultRequestProcessor.getBrokerClusterInfo; RouteInfoManager.getAllClusterInfo",
        ),
        Clause(
            "NS-6",
            "GET_ALL_TOPIC_LIST_FROM_NAMESERVER answers every topic with queue data; DELETE_TOPIC_IN_NAMESRV removes "
            "the topic's queue data (with a clusterName, only that cluster's broker names', the topic going when "
            "none is left) and answers SUCCESS; brokers keep the topic, and their next registration with a changed "
            "data version brings it back.",
            "RouteInfoManager.getAllTopicList, deleteTopic",
        ),
        Clause(
            "NS-7",
            "PUT_KV_CONFIG sets (namespace, key) to the value (SYSTEM_ERROR 'namespace or key is null' without "
            "them; without a value the namespace exists and the key reads as absent); GET_KV_CONFIG answers it in the "
            "value field, or QUERY_NOT_FOUND 'No config item, Namespace: <ns> Key: <key>'; DELETE_KV_CONFIG removes "
            "it and answers SUCCESS, the namespace staying; GET_KVLIST_BY_NAMESPACE answers a namespace that exists "
            "as a KVTable, else QUERY_NOT_FOUND 'No config item, Namespace: <ns>'; with orderMessageEnable a topic's "
            "ORDER_TOPIC_CONFIG entry is its route's orderTopicConf, and every REGISTER_BROKER answer carries that "
            "namespace as a KVTable body (none while it does not exist).",
            "DefaultRequestProcessor.putKVConfig, getKVConfig, deleteKVConfig, getKVListByNamespace, "
            "getRouteInfoByTopic; KVConfigManager",
        ),
        Clause(
            "NS-8",
            "Every 10 s, the first 5 s after the name server starts, it drops each broker whose last registration (or "
            "unchanged QUERY_DATA_VERSION) is more than 120 s old (BROKER_CHANNEL_EXPIRED_TIME), closing its channel "
            "and removing it as NS-4 says.",
            "RouteInfoManager.scanNotActiveBroker; NamesrvController.initialize",
        ),
        Clause(
            "NS-9",
            "WIPE_WRITE_PERM_OF_BROKER clears the write bit of the broker name's queue data in every topic and "
            "answers wipeTopicCount, the number of topics with queue data of that name; ADD_WRITE_PERM_OF_BROKER sets "
            "that perm to read|write (6, whatever it was) and answers addTopicCount; a later registration with a "
            "changed data version writes the brokers' own perms again.",
            "RouteInfoManager.operateWritePermOfBroker; DefaultRequestProcessor.wipeWritePermOfBroker",
        ),
        Clause(
            "NS-10",
            "A request code the name server's DefaultRequestProcessor does not serve gets no response at all (the "
            "processor returns null; a broker answers REQUEST_CODE_NOT_SUPPORTED instead, BRK-19).",
            "DefaultRequestProcessor.processRequest; NettyRemotingAbstract.processRequestCommand",
        ),
        Clause(
            "NS-11",
            "A route body is standard JSON (quoted map keys, non-ASCII escaped) when the request's version is V4_9_4 "
            "or later or it sets acceptStandardJsonOnly, else fastjson's own form with the broker ids of brokerAddrs "
            "as bare numbers; both carry the same route.",
            "DefaultRequestProcessor.getRouteInfoByTopic; TopicRouteData.encode",
            versions="4.9.0-4.9.3: every route body in fastjson's own form; 4.9.4+: as stated",
        ),
        Clause(
            "NS-12",
            "A registration's filterServerList replaces the address's filter servers (an empty list removes them, a "
            "null list, as brokers before V3_0_11 send, leaves them); a route's filterServerTable lists the filter "
            "servers of its broker data's addresses that have some; an address's filter servers go with its live "
            "entry.",
            "RouteInfoManager.registerBroker, pickupTopicRouteData, onChannelDestroy",
        ),
        Clause(
            "NS-13",
            "QUERY_DATA_VERSION answers changed=true unless the address is live with that DataVersion, in which case "
            "its last update is now (it stays live as after a registration); the body is the DataVersion the name "
            "server holds for the address, none when it is not live; a body that does not decode is SYSTEM_ERROR.",
            "DefaultRequestProcessor.queryBrokerTopicConfig; RouteInfoManager.isBrokerTopicConfigChanged",
        ),
        Clause(
            "NS-14",
            "GET_TOPICS_BY_CLUSTER answers the topics with queue data of a broker name of the cluster (none for an "
            "unknown cluster); GET_SYSTEM_TOPIC_LIST_FROM_NS answers every cluster name and broker name, with the "
            "address of some broker name in brokerAddr; GET_UNIT_TOPIC_LIST, GET_HAS_UNIT_SUB_TOPIC_LIST and "
            "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST answer the topics whose queue data has the unit flag, the unit-sub "
            "flag, and the unit-sub flag without the unit flag (4.9.8 reads one queue data per topic).",
            "RouteInfoManager.getTopicsByCluster, getSystemTopicList, topicQueueTableIter; TopicSysFlag",
        ),
        Clause(
            "NS-15",
            "GET_NAMESRV_CONFIG answers every NamesrvConfig and NettyServerConfig property as key=value lines; "
            "UPDATE_NAMESRV_CONFIG refuses a body naming configBlackList, configStorePath, kvConfigPath, rocketmqHome "
            "or a key of configBlackList with NO_PERMISSION 'Can not update config in black list.', and otherwise "
            "sets each known key (a boolean true when its text is 'true' in any case, an integer only when its text "
            "parses) and ignores unknown ones; orderMessageEnable takes effect on the next route answer.",
            "DefaultRequestProcessor.updateConfig, getConfig, initConfigBlackList; Configuration.update; "
            "MixAll.properties2Object",
        ),
        Clause(
            "NS-16",
            "A client reads a topic from the queue data of its route: queue ids 0..readQueueNums-1 of each readable "
            "queue data (publishing: SEND-22); it takes a route for a new one when its queue data or broker data "
            "(each sorted by broker name), orderTopicConf or filter servers differ from the last route's.",
            "MQClientInstance.topicRouteData2TopicSubscribeInfo, topicRouteDataIsChange",
        ),
        Clause(
            "NS-17",
            "A broker registers with every name server of its namesrvAddr when it starts and every "
            "registerNameServerPeriod (30 s) while it runs, a master with its topic table: TBW102 (readQueueNums and "
            "writeQueueNums defaultTopicQueueNums, perm inherit|read|write) only with autoCreateTopicEnable, and each "
            "topic created on it with its queue counts and perm, under a new DataVersion after each change; a clean "
            "stop unregisters from every name server, and a stop or a crash closes the broker's connections.",
            "BrokerController.start, registerBrokerAll, unregisterBrokerAll; TopicConfigManager.TopicConfigManager",
        ),
        Clause(
            "NS-18",
            "A name server keeps its route tables in memory: a restarted one starts with none, its configuration "
            "back to what it started with, and its KV config as it was (kvConfig.json); while it is stopped, "
            "requests to it fail to connect and a client reads routes from another name server of its list.",
            "NamesrvController.initialize, shutdown; KVConfigManager.load; "
            "NettyRemotingClient.getAndCreateNameserverChannel",
        ),
    ),
)
