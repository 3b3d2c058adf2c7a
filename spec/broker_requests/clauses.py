"""Broker requests: the clause table: every rule of the area with its ID, statement and sources."""

from __future__ import annotations

from rocketspec.spec.clauses import Clause, ClauseTable

CLAUSES = ClauseTable(
    area="broker_requests",
    prefix="BRK",
    clauses=(
        Clause(
            "BRK-1",
            "A send is checked in this order, the first failure answering: a broker without write permission "
            "refuses a topic configured as an order topic (NO_PERMISSION 'the broker[<ip>] sending message is "
            "forbidden'); a blank topic, one with a character outside [%|a-zA-Z0-9_-] or one longer than 127 "
            "characters is SYSTEM_ERROR with TopicValidator's remark; SCHEDULE_TOPIC_XXXX, the transaction half and "
            "op topics, TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC and OFFSET_MOVED_EVENT are NO_PERMISSION "
            "'Sending message to topic[<t>] is forbidden.'; then BRK-2 and BRK-3.",
            "AbstractSendMessageProcessor.msgCheck; TopicValidator.validateTopic, isNotAllowedSendTopic",
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
    ),
)
