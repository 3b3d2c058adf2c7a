"""Consume retry: the clause table: every rule of the area with its ID, statement and sources."""

from __future__ import annotations

from rocketspec.spec.clauses import Clause, ClauseTable

CLAUSES = ClauseTable(
    area="consume_retry",
    prefix="RETRY",
    clauses=(
        Clause(
            "RETRY-1",
            "Delay levels 1..n are the entries of messageDelayLevel (default 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m"
            " 7m 8m 9m 10m 20m 30m 1h 2h), each a Java long with unit s, m, h or d; the max level is n; a "
            "bad entry stops the store from loading.",
            "ScheduleMessageService.parseDelayLevel; MessageStoreConfig.messageDelayLevel",
        ),
        Clause(
            "RETRY-2",
            "A put with DELAY > 0 (non-transactional or committed) is stored in SCHEDULE_TOPIC_XXXX queue "
            "level-1 with REAL_TOPIC/REAL_QID, a level above the max being rewritten to the max; DELAY <= 0 "
            "is not delayed.",
            "CommitLog.asyncPutMessage; ScheduleMessageService.delayLevel2QueueId",
        ),
        Clause(
            "RETRY-3",
            "A delayed message is due at store time + delay(level) (a due time beyond now + delay counts as "
            "now) and is then re-put to REAL_TOPIC/REAL_QID, not delayed again, reconsumeTimes unchanged; its stored "
            "properties still show DELAY, REAL_TOPIC and REAL_QID (cleared from the map after the string is written).",
            "ScheduleMessageService.DeliverDelayedMessageTimerTask.executeOnTimeup/correctDeliverTimestamp, "
            "messageTimeup; CommitLog.checkMessageAndReturnSize",
        ),
        Clause(
            "RETRY-4",
            "CONSUMER_SEND_MSG_BACK checks in order: group unknown (autoCreateSubscriptionGroup off) -> "
            "SUBSCRIPTION_GROUP_NOT_EXIST, broker not writable -> NO_PERMISSION, retryQueueNums <= 0 -> "
            "SUCCESS, %RETRY% topic not writable -> NO_PERMISSION, no message at the offset -> SYSTEM_ERROR.",
            "SendMessageProcessor.asyncConsumerSendMsgBack; "
            "SubscriptionGroupManager.findSubscriptionGroupConfig; seed 001 §6.2",
        ),
        Clause(
            "RETRY-5",
            "With retryQueueNums <= 0 (default 1) the broker answers SUCCESS and stores nothing: the client "
            "counts the message as sent back and it is never delivered again.",
            "SendMessageProcessor.asyncConsumerSendMsgBack; SubscriptionGroupConfig; seed 001 §6.2",
        ),
        Clause(
            "RETRY-6",
            "The max reconsume times is the group's retryMaxTimes (default 16), replaced by the request's "
            "maxReconsumeTimes when the request version >= V3_4_9 (121) and the header carries it.",
            "SendMessageProcessor.asyncConsumerSendMsgBack",
            versions="4.9.0: a version >= 121 request without maxReconsumeTimes fails with SYSTEM_ERROR; "
            "4.9.1+: the group's value is used",
        ),
        Clause(
            "RETRY-7",
            "If the stored reconsumeTimes >= max or the request delayLevel < 0 the copy goes to %DLQ%<group>"
            " (1 queue, queue 0) without delay.",
            "SendMessageProcessor.asyncConsumerSendMsgBack; seed 001 §6.2",
        ),
        Clause(
            "RETRY-8",
            "Otherwise the copy goes to %RETRY%<group>, queue random in [0, retryQueueNums), delay level = "
            "the request delayLevel if > 0 else 3 + stored reconsumeTimes (then clamped by RETRY-2).",
            "SendMessageProcessor.asyncConsumerSendMsgBack; seed 001 §6.2",
        ),
        Clause(
            "RETRY-9",
            "The copy is a new message with reconsumeTimes = stored + 1, RETRY_TOPIC = the original topic "
            "unless set, ORIGIN_MESSAGE_ID kept unless blank else the stored message id; put OK -> SUCCESS "
            "else SYSTEM_ERROR.",
            "SendMessageProcessor.asyncConsumerSendMsgBack; seed 001 §6.2",
        ),
        Clause(
            "RETRY-10",
            "Missing topics are created on send back: %RETRY%<group> with retryQueueNums queues, perm RW; "
            "%DLQ%<group> with 1 queue.",
            "TopicConfigManager.createTopicInSendMessageBackMethod; SendMessageProcessor",
            versions="4.9.0-4.9.1: %DLQ% perm write-only (2); 4.9.2+: perm read-write (6) and the DLQ copy "
            "carries DELAY 0",
        ),
        Clause(
            "RETRY-11",
            "A plain send to %RETRY%<group>: unknown group -> SUBSCRIPTION_GROUP_NOT_EXIST; max as RETRY-6; "
            "header reconsumeTimes (absent: 0) >= max -> %DLQ%<group> queue 0; the stored reconsumeTimes is "
            "the header's.",
            "SendMessageProcessor.handleRetryAndDLQ/asyncSendMessage",
            versions="4.9.0-4.9.2: a version >= 121 request without maxReconsumeTimes fails with "
            "SYSTEM_ERROR; 4.9.3+: the group's value is used",
        ),
        Clause(
            "RETRY-12",
            "On that dead-letter path the request's properties are applied after the switch, so a DELAY > 0 "
            "still routes the copy through SCHEDULE_TOPIC_XXXX (REAL_TOPIC %DLQ%<group>) before it lands in "
            "the DLQ.",
            "SendMessageProcessor.asyncSendMessage (handleRetryAndDLQ before setProperties); CommitLog",
        ),
        Clause(
            "RETRY-13",
            "Listener result: exception or null -> RECONSUME_LATER; CONSUME_SUCCESS -> messages "
            "0..min(ackIndex, n-1) succeed (ackIndex default Integer.MAX_VALUE, >= -1) and the rest failed; "
            "RECONSUME_LATER -> all failed.",
            "ConsumeMessageConcurrentlyService.processConsumeResult/ConsumeRequest.run; "
            "ConsumeConcurrentlyContext; seed 001 §6.1",
        ),
        Clause(
            "RETRY-14",
            "Broadcasting: failed messages are logged and dropped, never sent back nor consumed again.",
            "ConsumeMessageConcurrentlyService.processConsumeResult; seed 001 §6.1",
        ),
        Clause(
            "RETRY-15",
            "Clustering: each failed message is sent back with CONSUMER_SEND_MSG_BACK: group, commit-log "
            "offset, delayLevel = context delayLevelWhenNextConsume (default 0), originMsgId, originTopic, "
            "max (-1 -> 16).",
            "ConsumeMessageConcurrentlyService.sendMessageBack; MQClientAPIImpl.consumerSendMessageBack; "
            "seed 001 §6.2",
        ),
        Clause(
            "RETRY-16",
            "If that fails the client sends %RETRY%<group> itself: the message's properties, RETRY_TOPIC, "
            "RECONSUME_TIME n+1, MAX_RECONSUME_TIMES, no TRAN_MSG, DELAY 3+n; header reconsumeTimes n+1 and "
            "max. The producer moves RECONSUME_TIME and MAX_RECONSUME_TIMES into the header and deletes them "
            "from the message, so a retried attempt of that send carries neither: header reconsumeTimes 0, no "
            "max (the broker uses the group's, RETRY-11).",
            "DefaultMQPushConsumerImpl.sendMessageBack; DefaultMQProducerImpl.sendDefaultImpl/sendKernelImpl",
        ),
        Clause(
            "RETRY-17",
            "If the fallback fails too the message's reconsumeTimes is raised by 1 locally and it is "
            "consumed again after 5000 ms; it stays in the process queue so the offset does not pass it.",
            "ConsumeMessageConcurrentlyService.processConsumeResult/submitConsumeRequestLater; "
            "seed 001 §6.1",
        ),
        Clause(
            "RETRY-18",
            "The broker builds its copy from the stored message found by offset, so local raises are lost "
            "when a later send back succeeds (copy = stored + 1), while the fallback uses the local count.",
            "SendMessageProcessor.asyncConsumerSendMsgBack (lookMessageByOffset); MQClientAPIImpl",
        ),
        Clause(
            "RETRY-19",
            "Clustering consumers subscribe %RETRY%<group> with *; a message pulled from %RETRY%<group> that"
            " has RETRY_TOPIC is shown with that topic.",
            "DefaultMQPushConsumerImpl.copySubscription/resetRetryAndNamespace; seed 001 §三",
        ),
        Clause(
            "RETRY-20",
            "A concurrently consumed message whose consumption started more than consumeTimeout (15) minutes"
            " ago is sent back with delay level 3 and removed from the process queue (not for orderly "
            "consumers).",
            "ProcessQueue.cleanExpiredMsg",
        ),
        Clause(
            "RETRY-21",
            "Orderly SUSPEND_CURRENT_QUEUE_A_MOMENT: a message at reconsumeTimes >= max is sent to the retry"
            " topic (dead letter); one under max or whose send failed gets +1 and suspends the batch for "
            "re-consumption.",
            "ConsumeMessageOrderlyService.processConsumeResult/checkReconsumeTimes",
        ),
        Clause(
            "RETRY-22",
            "maxReconsumeTimes -1 (the default) means 16 for concurrent consumers and Integer.MAX_VALUE for "
            "orderly ones; any other value is used as is.",
            "DefaultMQPushConsumerImpl.getMaxReconsumeTimes; "
            "ConsumeMessageOrderlyService.getMaxReconsumeTimes",
        ),
        Clause(
            "RETRY-23",
            "The orderly dead-letter message is a send to %RETRY%<group> like RETRY-16 but with "
            "RECONSUME_TIME n (so the broker dead-letters it).",
            "ConsumeMessageOrderlyService.sendMessageBack",
            versions="4.9.0-4.9.3: ORIGIN_MESSAGE_ID only if the message had one; 4.9.4+: kept or set to the"
            " message id",
        ),
        Clause(
            "RETRY-24",
            "An orderly suspension lasts the context suspendCurrentQueueTimeMillis (-1: the consumer's, "
            "default 1000) clamped to [10, 30000] ms.",
            "ConsumeMessageOrderlyService.submitConsumeRequestLater; ConsumeOrderlyContext",
        ),
        Clause(
            "RETRY-25",
            "Each delivery shows reconsumeTimes one more than the delivery before, except a broker copy made"
            " after local re-consumes, which shows the last stored value + 1, and a copy a retried fallback "
            "send stored, which shows 0 (RETRY-16).",
            "consequence of RETRY-9, RETRY-16, RETRY-17, RETRY-18",
        ),
        Clause(
            "RETRY-26",
            "A retry copy is delivered no earlier than delay(level) after it was stored (level: the "
            "send-back request's if > 0, else 3 + the count it was made from, clamped); a local re-consume "
            "no earlier than 5000 ms after the failure.",
            "consequence of RETRY-2, RETRY-3, RETRY-8, RETRY-16, RETRY-17",
        ),
        Clause(
            "RETRY-27",
            "A message in %DLQ%<group> is never delivered to the group again (nothing subscribes to it); its"
            " chain ends there.",
            "consequence of RETRY-7, RETRY-12, RETRY-19; seed 001 §6.2",
        ),
        Clause(
            "RETRY-28",
            "A concurrent consumer cuts each batch it pulls from a queue (and each group it consumes again locally) "
            "into consume requests of consumeMessageBatchMaxSize messages, the last one shorter, handed to the "
            "listener in that order; a message leaves the process queue once consumed, sent back or dropped, and the "
            "offset then committed (increase only) is the smallest offset still held, else one past the last pulled.",
            "ConsumeMessageConcurrentlyService.submitConsumeRequest/processConsumeResult; ProcessQueue.removeMessage",
        ),
        Clause(
            "RETRY-29",
            "An orderly consumer hands a queue's messages to the listener in offset order, one batch per queue at "
            "a time: the first min(consumeMessageBatchMaxSize, pulled and unfinished) messages from the first "
            "unfinished one, so a suspended batch comes back first and whole; a batch that does not suspend commits "
            "the offset one past it.",
            "ConsumeMessageOrderlyService.ConsumeRequest.run/processConsumeResult; "
            "ProcessQueue.takeMessages/commit/makeMessageToConsumeAgain",
        ),
        Clause(
            "RETRY-30",
            "The consumer's own send to %RETRY%<group> (the concurrent fallback, the orderly dead letter) shares the"
            " consumed message's property map: consumed again afterwards, the message shows RETRY_TOPIC, DELAY 3+n,"
            " no TRAN_MSG, (orderly) ORIGIN_MESSAGE_ID, and neither RECONSUME_TIME nor MAX_RECONSUME_TIMES (the "
            "producer moved them into the request header).",
            "DefaultMQPushConsumerImpl.sendMessageBack; ConsumeMessageOrderlyService.sendMessageBack/"
            "checkReconsumeTimes; MessageAccessor.setProperties; DefaultMQProducerImpl.sendKernelImpl",
        ),
        Clause(
            "RETRY-31",
            "A push consumer pulls each queue of T and %RETRY%<group> in offset order, each pull from where the "
            "last one ended (from the first offset with CONSUME_FROM_FIRST_OFFSET), at most pullBatchSize (32) "
            "messages; only pulled messages reach the listener.",
            "DefaultMQPushConsumerImpl.pullMessage; PullAPIWrapper.processPullResult; ProcessQueue.putMessage",
        ),
        Clause(
            "RETRY-32",
            "A clean broker restart keeps the stored messages and the schedule service's offset per level "
            "(persisted at shutdown, loaded and corrected at start): nothing parked is moved twice or lost; every "
            "level's task first runs 1000 ms after the start, so a copy due meanwhile is moved then.",
            "ScheduleMessageService.start/shutdown/load/persist/correctDelayOffset; BrokerController.shutdown",
        ),
        Clause(
            "RETRY-33",
            "An orderly clustering consumer starts a batch only while its queue lock is held and fresh (REB-16): "
            "once the broker refused or failed its lock requests, a suspended batch comes back no earlier than its "
            "suspension's end (RETRY-24) but possibly later, when the lock is held again.",
            "ConsumeMessageOrderlyService.ConsumeRequest.run/tryLockLaterAndReconsume; RebalanceImpl.lockAll; "
            "ProcessQueue.isLockExpired",
        ),
    ),
)
