"""Broker requests: the clause table: every rule of the area with its ID, statement and sources."""

from __future__ import annotations

from rocketspec.spec.clauses import Clause, ClauseTable

CLAUSES = ClauseTable(
    area="broker_requests",
    prefix="BRK",
    clauses=(
        Clause(
            "BRK-1",
            "A send is checked in this order, the first failure answering: a broker without write permission refuses "
            "a topic configured as an order topic (NO_PERMISSION 'the broker[<ip>] sending message is forbidden'; a "
            "topic's order flag is whether the name server's ORDER_TOPIC_CONFIG names it, as the answers of the "
            "broker's registrations tell it once that namespace exists); a blank topic, one with a character outside "
            "[%|a-zA-Z0-9_-] or one longer than 127 characters is SYSTEM_ERROR with TopicValidator's remark; "
            "SCHEDULE_TOPIC_XXXX, the transaction half and op topics, TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC and"
            " OFFSET_MOVED_EVENT are NO_PERMISSION 'Sending message to topic[<t>] is forbidden.'; then BRK-2 and "
            "BRK-3.",


            "AbstractSendMessageProcessor.msgCheck; TopicValidator.validateTopic, isNotAllowedSendTopic; "
            "TopicConfigManager.updateOrderTopicConfig; BrokerController.doRegisterBrokerAll",
        ),
        Clause(
            "BRK-2",
            "A topic the broker lacks is created from the request's default topic (TBW102) when that exists at the "
            "broker with the inherit bit (TBW102 loses it without autoCreateTopicEnable): min(defaultTopicQueueNums, "
            "its writeQueueNums) read and write queues (at least 0), its perm without inherit; failing that a "
            "%RETRY% topic gets 1 read|write queue; otherwise TOPIC_NOT_EXIST 'topic[<t>] not exist, apply first "
            "please!' with the FAQ suggestion.",
            "AbstractSendMessageProcessor.msgCheck; TopicConfigManager.createTopicInSendMessageMethod",
        ),
        Clause(
            "BRK-3",
            "A queueId at or above max(readQueueNums, writeQueueNums) is SYSTEM_ERROR 'request queueId[<id>] is "
            "illegal, <TopicConfig> Producer: <addr>'; a negative queueId becomes a random number modulo "
            "writeQueueNums.",
            "AbstractSendMessageProcessor.msgCheck; SendMessageProcessor.randomQueueId",
        ),
        Clause(
            "BRK-4",
            "The send path does not check the topic's perm (a 4.9.8 broker stores a message sent to a topic without "
            "the write bit; clients skip such queues in their routes); a pull of a topic whose perm lacks the read "
            "bit is NO_PERMISSION 'the topic[<t>] pulling message is forbidden'.",
            "AbstractSendMessageProcessor.msgCheck; PullMessageProcessor.processRequest",
        ),
        Clause(
            "BRK-5",
            "The store refuses with MESSAGE_ILLEGAL, storing nothing: a body over maxMessageSize, a stored message "
            "longer than maxMessageSize + 64 KiB, properties over 32767 characters or UTF-8 bytes, a topic over 127 "
            "characters, a batch body over maxMessageSize.",
            "DefaultMessageStore.checkMessage, checkMessages; CommitLog.MessageExtEncoder.encode; "
            "SendMessageProcessor.handlePutMessageResult",
        ),
        Clause(
            "BRK-6",
            "A stored send answers SUCCESS with msgId = the offset message id (store host IPv4 address and port, "
            "then the commit-log offset, as 32 upper-case hex digits), queueId, and queueOffset = the message's "
            "consume-queue index (0, 1, 2, ... per queue); every send answer carries MSG_REGION and TRACE_ON.",
            "SendMessageProcessor.preSend, handlePutMessageResult; CommitLog.DefaultAppendMessageCallback.doAppend",
        ),
        Clause(
            "BRK-7",
            "SEND_MESSAGE (long field names) and SEND_MESSAGE_V2 (fields a..n) are one request and the batch field, "
            "not the code, selects the batch path (SEND_BATCH_MESSAGE with batch=true from the Java client): the "
            "body's messages are stored in order at consecutive offsets of one queue and the answer carries the "
            "comma-joined msgIds and the first queueOffset; a batch with a transaction type or a DELAY property is "
            "MESSAGE_ILLEGAL (a %RETRY% batch is refused only by the client).",
            "AbstractSendMessageProcessor.parseRequestHeader; SendMessageProcessor.asyncSendBatchMessage; "
            "CommitLog.asyncPutMessages",
        ),
        Clause(
            "BRK-8",
            "A stored message keeps body, flag, sysFlag (MULTI_TAGS added for a MULTI_TAG topic), bornTimestamp, "
            "bornHost, reconsumeTimes and every sent property except WAIT, plus CLUSTER = the broker's cluster name; "
            "a pull returns it with queueId, queueOffset, commitLogOffset, storeTimestamp, storeHost and msgId set.",
            "SendMessageProcessor.asyncSendMessage; MessageDecoder.decode",
        ),
        Clause(
            "BRK-9",
            "The consume-queue tags code of a message is String.hashCode of its TAGS (0 without tags); the broker "
            "filters tag subscriptions by these codes, so a tag with the hash code of a subscribed one passes.",
            "MessageExtBrokerInner.tagsString2tagsCode; ExpressionMessageFilter.isMatchedByConsumeQueue",
        ),
        Clause(
            "BRK-10",
            "GET_MIN_OFFSET / GET_MAX_OFFSET answer the consume queue's min offset and max offset (one past the last "
            "entry), 0 and 0 for a queue never written (any topic and queue id); GET_EARLIEST_MSG_STORETIME answers "
            "the store time of the queue's first message, -1 when it has none.",
            "DefaultMessageStore.getMinOffsetInQueue, getMaxOffsetInQueue, getEarliestMessageTime",
        ),
        Clause(
            "BRK-11",
            "SEARCH_OFFSET_BY_TIMESTAMP binary-searches the queue by store time: a message stored exactly then "
            "(whichever the search meets), else the nearer of the last message before and the first after (the "
            "earlier on a tie); the first when all are later, the last (max offset - 1) when all are earlier, 0 for "
            "an empty queue.",
            "ConsumeQueue.getOffsetInQueueByTime",
        ),
        Clause(
            "BRK-12",
            "QUERY_MESSAGE answers, from the index, the topic's messages whose UNIQ_KEY or a KEYS word has the key's "
            "index hash (|hashCode| of 'topic#key') with an index time in [begin, end]: the newest min(maxNum, 64) "
            "(maxNum 32 with _UNIQUE_KEY_QUERY) in commit-log order, else QUERY_NOT_FOUND; VIEW_MESSAGE_BY_ID answers "
            "the message stored at a commit-log offset, SYSTEM_ERROR 'can not find message by the offset, <o>' when "
            "none is.",
            "QueryMessageProcessor.queryMessage, viewMessageById; DefaultMessageStore.queryMessage; IndexService",
        ),
        Clause(
            "BRK-13",
            "HEART_BEAT registers the connection, with its client id, in every producer and consumer group it names "
            "(a consumer group's subscriptions replace the group's table), creating %RETRY%<group> with retryQueueNums "
            "read|write queues for a group with a config; GET_CONSUMER_LIST_BY_GROUP answers the client ids of the "
            "group's connections, SYSTEM_ERROR 'no consumer for this group, <group>' when it has none.",
            "ClientManageProcessor.heartBeat; ConsumerGroupInfo.updateChannel, updateSubscription; "
            "ConsumerManageProcessor.getConsumerListByGroup",
        ),
        Clause(
            "BRK-14",
            "With the broker's notifyConsumerIdsChangedEnable on, NOTIFY_CONSUMER_IDS_CHANGED (oneway) goes to every "
            "connection of a consumer group after a heartbeat that adds a connection or changes its subscribed "
            "topics, or an UNREGISTER_CLIENT naming it (both only with the group's notifyConsumerIdsChangedEnable), "
            "or after one of its connections closes.",
            "ConsumerManager.registerConsumer, unregisterConsumer, doChannelCloseEvent; "
            "DefaultConsumerIdsChangeListener.handle",
        ),
        Clause(
            "BRK-15",
            "UNREGISTER_CLIENT removes the requesting connection (whatever client id it names) from the producer "
            "group and the consumer group in its header, a group left without connections being dropped, and "
            "answers SUCCESS.",
            "ClientManageProcessor.unregisterClient; ProducerManager.unregisterProducer; "
            "ConsumerManager.unregisterConsumer",
        ),
        Clause(
            "BRK-16",
            "LOCK_BATCH_MQ answers, in lockOKMQSet, the requested queues the client holds after the request (REB-17 "
            "decides each); UNLOCK_BATCH_MQ frees the requested queues the client holds and answers SUCCESS.",
            "AdminBrokerProcessor.lockBatchMQ, unlockBatchMQ; RebalanceLockManager.tryLockBatch, unlockBatch",
        ),
        Clause(
            "BRK-17",
            "UPDATE_AND_CREATE_TOPIC puts the topic config and registers it at the name servers; "
            "DELETE_TOPIC_IN_BROKER removes it and its consume queues (a topic created again starts at offset 0); "
            "both refuse an invalid name (SYSTEM_ERROR, BRK-1's remarks) and a system topic (SYSTEM_ERROR 'The "
            "topic[<t>] is conflict with system topic.'); GET_ALL_TOPIC_CONFIG answers the topic table.",
            "AdminBrokerProcessor.updateAndCreateTopic, deleteTopic, getAllTopicConfig; TopicValidator.isSystemTopic",
        ),
        Clause(
            "BRK-18",
            "GET_BROKER_CONFIG answers SUCCESS with the configuration as 'key=value\\n' lines and its DataVersion "
            "JSON in the version field; GET_BROKER_RUNTIME_INFO answers SUCCESS with a KVTable of runtime values "
            "(brokerVersion, brokerVersionDesc, commitLogMaxOffset, ...).",
            "AdminBrokerProcessor.getBrokerConfig, getBrokerRuntimeInfo; MixAll.properties2String",
        ),
        Clause(
            "BRK-19",
            "A request code the broker does not serve is answered REQUEST_CODE_NOT_SUPPORTED with remark ' request "
            "type <code> not supported' (a name server does not answer at all, NS-10).",
            "AdminBrokerProcessor.getUnknownCmdResponse; BrokerController.registerProcessor",
        ),
        Clause(
            "BRK-20",
            "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP puts the group config of the JSON body and DELETE_SUBSCRIPTIONGROUP "
            "removes it (SUCCESS); a group without a config gets the defaults on first use when "
            "autoCreateSubscriptionGroup (default true) or its name starts with CID_RMQ_SYS_, otherwise a pull, a "
            "send-back or a send to %RETRY%<group> is SUBSCRIPTION_GROUP_NOT_EXIST.",
            "SubscriptionGroupManager.findSubscriptionGroupConfig; AdminBrokerProcessor; PullMessageProcessor; "
            "SendMessageProcessor",
        ),
        Clause(
            "BRK-21",
            "A 4.9.8 broker starts with the topics SELF_TEST_TOPIC (1 queue), TBW102 (defaultTopicQueueNums queues, "
            "perm 7; only with autoCreateTopicEnable), BenchmarkTest (1024), its cluster name (16, perm 7), its broker "
            "name (1, perm 7), OFFSET_MOVED_EVENT (1), SCHEDULE_TOPIC_XXXX (18) and <cluster>_REPLY_TOPIC (1), perm 6 "
            "where not said, and the built-in subscription groups; every change of either table moves its DataVersion "
            "(counter + 1, timestamp now); GET_ALL_TOPIC_CONFIG and GET_ALL_SUBSCRIPTIONGROUP_CONFIG answer the table "
            "with it, GET_SYSTEM_TOPIC_LIST_FROM_BROKER the system topics (the built-in ones and those it added).",
            "TopicConfigManager.TopicConfigManager; SubscriptionGroupManager.init; DataVersion.nextVersion; "
            "AdminBrokerProcessor.getAllTopicConfig, getAllSubscriptionGroup, getSystemTopicListFromBroker",
        ),
        Clause(
            "BRK-22",
            "A producer compresses the body of a single message (never a batch) of at least "
            "compressMsgBodyOverHowmuch bytes with zlib and sends it with sysFlag COMPRESSED | the ZLIB type bits "
            "(0x301), 0 otherwise; the broker stores the body and sysFlag as sent (its size checks count the "
            "compressed bytes) and a reader (a consumer, VIEW_MESSAGE_BY_ID, QUERY_MESSAGE) inflates the body, "
            "sysFlag unchanged.",
            "DefaultMQProducerImpl.tryToCompressMessage, sendKernelImpl; MessageDecoder.decode",
        ),
        Clause(
            "BRK-23",
            "A client's unitMode is in every send header and heartbeat consumer data it sends; a send with unitMode "
            "that creates its topic gives it topicSysFlag UNIT (1), UNIT_SUB (2) for a %RETRY% topic; a heartbeat's "
            "consumer data with unitMode creates %RETRY%<group> with UNIT_SUB; an existing topic keeps its flag.",
            "DefaultMQProducerImpl.sendKernelImpl; AbstractSendMessageProcessor.msgCheck; "
            "ClientManageProcessor.heartBeat; TopicSysFlag.buildSysFlag",
        ),
        Clause(
            "BRK-24",
            "UPDATE_BROKER_CONFIG parses its body as Java properties: a black-listed key (configBlackList, "
            "brokerConfigPath, rocketmqHome) is NO_PERMISSION 'Can not update config in black list.' changing nothing; "
            "otherwise SUCCESS, every known key takes a value that parses as its Java type (Boolean.parseBoolean: "
            "anything but true is false; an int that does not parse is ignored), unknown keys are ignored, and the "
            "configuration's DataVersion moves (GET_BROKER_CONFIG's version field); maxMessageSize, "
            "autoCreateTopicEnable, autoCreateSubscriptionGroup and notifyConsumerIdsChangedEnable decide from the "
            "next request on.",
            "AdminBrokerProcessor.updateBrokerConfig; Configuration.update; MixAll.properties2Object; "
            "CommitLog.updateMaxMessageSize",
        ),
        Clause(
            "BRK-25",
            "GET_TOPIC_STATS_INFO answers, per write queue of the topic, its min and max offset and the store time of "
            "the last message (0 for an empty queue); a topic without config is TOPIC_NOT_EXIST 'topic[<t>] not "
            "exist'. QUERY_CONSUME_QUEUE answers up to count entries (commit-log offset, size, tags code) from index "
            "with the queue's min and max index, 'Index <i> of <q>@<t> is not exist!' (SUCCESS) outside them, and "
            "SYSTEM_ERROR '<q>@<t> is not exist!' for a queue never written (4.9.8's offset lookups also create it).",
            "AdminBrokerProcessor.getTopicStatsInfo, queryConsumeQueue; DefaultMessageStore.getConsumeQueue",
        ),
        Clause(
            "BRK-26",
            "GET_BROKER_RUNTIME_INFO reports brokerVersion 409 and brokerVersionDesc V4_9_8, commitLogMaxOffset (the "
            "bytes written), commitLogMinOffset (-1 before the first message, then 0), msgPutTotalTodayNow (messages "
            "stored) and earliestMessageTimeStamp (the first stored message's store time).",
            "AdminBrokerProcessor.prepareRuntimeInfo; DefaultMessageStore.getRuntimeInfo; CommitLog.getMinOffset",
        ),
        Clause(
            "BRK-27",
            "A stored send counts TOPIC_PUT_NUMS <topic> (its messages, times 1), TOPIC_PUT_SIZE <topic> (the bytes "
            "written, times 1) and BROKER_PUT_NUMS <cluster> (messages, times not counted); every 10 s, 10 min and "
            "1 h (from start) each item takes a sample (the first one preceded by a zero one period earlier; 7, 7 "
            "and 25 kept); VIEW_BROKER_STATS_DATA answers an item's minute, hour and day snapshots (sum = last value "
            "- first value, tps = sum * 1000 / the time between them, avgpt = sum / the times between them or 0), "
            "SYSTEM_ERROR 'The stats <name> <key> not exist' for an item never counted.",
            "SendMessageProcessor.handlePutMessageResult; BrokerStatsManager; StatsItem.samplingInSeconds, "
            "computeStatsData; AdminBrokerProcessor.ViewBrokerStatsData",
        ),
        Clause(
            "BRK-28",
            "SEND_REPLY_MESSAGE(_V2) runs msgCheck (BRK-1, BRK-2, BRK-3), then pushes PUSH_REPLY_MESSAGE_TO_CLIENT to "
            "the connection the producer manager holds for the REPLY_TO_CLIENT client id: SUCCESS (msgId '0', queue "
            "offset 0) when that client answers SUCCESS, else SYSTEM_ERROR 'reply message properties[REPLY_TO_CLIENT] "
            "is null', 'push reply message fail, channel of <id> not found.' or 'push reply message to <id>fail.'; "
            "with storeReplyMessageEnable the reply is then stored with the properties as sent (no CLUSTER, WAIT "
            "kept) and sysFlag 0, and a stored reply takes the store's msgId and queue offset in the answer.",
            "ReplyMessageProcessor.processReplyMessageRequest, pushReplyMessage, handlePushReplyResult, "
            "handlePutMessageResult; ProducerManager.findChannel",
        ),
        Clause(
            "BRK-29",
            "A producer group's heartbeat registers the connection under its client id, and a connection new to "
            "the group becomes the client id's in ProducerManager's client table; UNREGISTER_CLIENT removes the "
            "connection from the group (an emptied group goes) and the client id it names from that table; a closed "
            "connection leaves every producer group (an emptied group stays) and the table loses the client ids it "
            "had registered with; GET_ALL_PRODUCER_INFO answers each group with connections and their client ids, "
            "GET_PRODUCER_CONNECTION_LIST one group's (SYSTEM_ERROR 'the producer group[<g>] not exist' for a group "
            "never registered).",
            "ProducerManager.registerProducer, unregisterProducer, doChannelCloseEvent, getProducerTable; "
            "AdminBrokerProcessor.getAllProducerInfo, getProducerConnectionList",
        ),
        Clause(
            "BRK-30",
            "UPDATE_CONSUMER_OFFSET stores a group's offset of a queue; QUERY_CONSUMER_OFFSET answers it, for a queue"
            " never committed 0 when the queue's min offset is at most 0 and otherwise QUERY_NOT_FOUND; "
            "GET_CONSUME_STATS answers per read queue of the group's topics (the one asked, else those it has offsets"
            " on, but those an online group does not subscribe to) the max offset, the committed offset and the store"
            " time of the last message consumed; QUERY_CORRECTION_OFFSET answers per queue of the topic the least "
            "committed offset still in the queue, after removing the offsets of the filterGroups groups.",

            "ConsumerManageProcessor.updateConsumerOffset, queryConsumerOffset; "
            "ConsumerOffsetManager.queryMinOffsetInAllGroup; AdminBrokerProcessor.queryCorrectionOffset, "
            "getConsumeStats",
        ),
        Clause(
            "BRK-31",
            "The maintenance requests answer SUCCESS: CLEAN_EXPIRED_CONSUMEQUEUE and DELETE_EXPIRED_COMMITLOG (it only "
            "arms the cleaner) change nothing a client sees while the commit log keeps every message, "
            "CLEAN_UNUSED_TOPIC drops the consume queues of topics without config (but SCHEDULE_TOPIC_XXXX's and the "
            "transaction op topic's), as DELETE_TOPIC_IN_BROKER does; "
            "GET_ALL_DELAY_OFFSET answers the schedule offsets (none without delayed messages); the ACL requests of a "
            "broker without aclEnable fail with their own codes (UPDATE_AND_CREATE_ACL_CONFIG_FAILED, "
            "DELETE_ACL_CONFIG_FAILED, UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED) and GET_BROKER_CLUSTER_ACL_INFO is "
            "never answered; RESUME_CHECK_HALF_MESSAGE appends a copy of the message at the id's commit-log offset to "
            "RMQ_SYS_TRANS_HALF_TOPIC queue 0 with TRANSACTION_CHECK_TIMES=0, and answers SYSTEM_ERROR 'Exception was "
            "thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC.' when no message starts there.",
            "AdminBrokerProcessor.cleanExpiredConsumeQueue, deleteExpiredCommitLog, cleanUnusedTopic, "
            "getAllDelayOffset, updateAndCreateAccessConfig, deleteAccessConfig, updateGlobalWhiteAddrsConfig, "
            "getBrokerAclConfigVersion, resumeCheckHalfMessage",
        ),
        Clause(
            "BRK-32",
            "A request without a header field its handler unboxes or looks up (GET_TOPIC_STATS_INFO's topic, "
            "GET_EARLIEST_MSG_STORETIME's topic or queueId, QUERY_CONSUME_QUEUE's topic, UPDATE_AND_CREATE_TOPIC's "
            "queue counts or perm for a valid topic, QUERY_MESSAGE's maxNum, beginTimestamp or endTimestamp, "
            "VIEW_MESSAGE_BY_ID's offset) is SYSTEM_ERROR (the JVM's NullPointerException text) and changes nothing: "
            "4.9.8's header decoder leaves a missing field null.",
            "RemotingCommand.decodeCommandCustomHeader; AdminBrokerProcessor; QueryMessageProcessor",
        ),
    ),
)
