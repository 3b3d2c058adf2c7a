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
            "name or id is new or the DataVersion differs from the one last registered from that address; it answers "
            "SUCCESS, with masterAddr and haServerAddr for a slave whose master is registered.",
            "DefaultRequestProcessor.registerBrokerWithFilterServer; RouteInfoManager.registerBroker",
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
            "UNREGISTER_BROKER removes the address from the live table and the broker id from its broker name, and a "
            "closed channel does the same for the address registered through it; a broker name left without "
            "addresses loses its broker data, its place in its cluster (an empty cluster goes) and its queue data in "
            "every topic, and a topic left without queue data has no route. (4.9.8's onChannelDestroy clears only "
            "the first broker name and cluster listing the address: one address registered under several names "
            "leaves the others behind; rocketspec's name server clears them all, which this model, one address per "
            "broker, does not tell apart.)",
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
            "them); GET_KV_CONFIG answers it in the value field, or QUERY_NOT_FOUND 'No config item, Namespace: <ns> "
            "Key: <key>'; DELETE_KV_CONFIG removes it and answers SUCCESS; with orderMessageEnable a topic's "
            "ORDER_TOPIC_CONFIG entry is its route's orderTopicConf, and every REGISTER_BROKER answer carries that "
            "namespace as a KVTable body.",
            "DefaultRequestProcessor.putKVConfig, getKVConfig, deleteKVConfig, getRouteInfoByTopic; KVConfigManager",
        ),
        Clause(
            "NS-8",
            "Every 10 s (first after 5 s) the name server drops each broker whose last registration (or unchanged "
            "QUERY_DATA_VERSION) is more than 120 s old (BROKER_CHANNEL_EXPIRED_TIME), closing its channel and "
            "removing it as NS-4 says.",
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
    ),
)
