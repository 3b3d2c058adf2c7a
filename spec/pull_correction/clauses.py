"""Pull correction: the clause table: every rule of the area with its ID, statement and sources."""

from __future__ import annotations

from rocketspec.spec.clauses import Clause, ClauseTable

CLAUSES = ClauseTable(
    area="pull_correction",
    prefix="PULL",
    clauses=(
        Clause(
            "PULL-1",
            "With no consume queue for the topic and queue id the store answers NO_MATCHED_LOGIC_QUEUE, next "
            "= correction(offset, 0), min = max = 0 (findConsumeQueue creates queues on demand, so 4.9 stores "
            "do not reach it in practice).",
            "DefaultMessageStore.getMessage",
        ),
        Clause(
            "PULL-2",
            "A consume queue whose max offset is 0 answers NO_MESSAGE_IN_QUEUE with next = correction(offset, "
            "0), checked before any comparison with min.",
            "DefaultMessageStore.getMessage; seed 001 §4.3.2 第四步",
        ),
        Clause(
            "PULL-3",
            "An offset below the queue's min offset answers OFFSET_TOO_SMALL with next = correction(offset, "
            "min).",
            "DefaultMessageStore.getMessage; seed 001 §4.3.2 第四步",
        ),
        Clause(
            "PULL-4",
            "An offset equal to the queue's max offset answers OFFSET_OVERFLOW_ONE with next = offset (the "
            "consumer waits there for the next message).",
            "DefaultMessageStore.getMessage; seed 001 §4.3.2 第四步",
        ),
        Clause(
            "PULL-5",
            "An offset above the queue's max offset answers OFFSET_OVERFLOW_BADLY with next = correction(offset,"
            " max) (4.9.4+); 4.9.0-4.9.3 use correction(offset, min) when min == 0, else correction(offset, max).",
            "DefaultMessageStore.getMessage (ISSUE #4215); seed 001 §4.3.2 第四步",
            versions="4.9.0-4.9.3: min if min == 0 else max; 4.9.4+: max",
        ),
        Clause(
            "PULL-6",
            "An offset in [min, max) whose consume-queue file is gone (deleted, min not yet corrected) answers "
            "OFFSET_FOUND_NULL with next = correction(offset, start of the next consume-queue file).",
            "DefaultMessageStore.getMessage; ConsumeQueue.getIndexBuffer, rollNextFile",
        ),
        Clause(
            "PULL-7",
            "correction(old, new) is new on a master or on a slave with offsetCheckInSlave (default false), "
            "else old: a plain slave never moves the consumer.",
            "DefaultMessageStore.nextOffsetCorrection; seed 001 §4.3.2 第四步",
        ),
        Clause(
            "PULL-8",
            "Otherwise the store scans entries from offset to the end of the offset's consume-queue file or "
            "max, at most max(800, maxMsgNums), stopping before an entry once the batch is full; next = offset + "
            "entries scanned, uncorrected.",
            "DefaultMessageStore.getMessage, isTheBatchFull",
        ),
        Clause(
            "PULL-9",
            "A scan that takes a message is FOUND; otherwise its status is that of the last entry examined: "
            "filtered out gives NO_MATCHED_MESSAGE, commit-log data gone gives MESSAGE_WAS_REMOVING.",
            "DefaultMessageStore.getMessage",
        ),
        Clause(
            "PULL-10",
            "Status to code: FOUND → SUCCESS; NO_MATCHED_MESSAGE, MESSAGE_WAS_REMOVING → PULL_RETRY_IMMEDIATELY; "
            "OFFSET_FOUND_NULL, OFFSET_OVERFLOW_ONE → PULL_NOT_FOUND; OFFSET_TOO_SMALL, OFFSET_OVERFLOW_BADLY → "
            "PULL_OFFSET_MOVED; NO_MATCHED_LOGIC_QUEUE, NO_MESSAGE_IN_QUEUE → PULL_OFFSET_MOVED if the requested "
            "offset is not 0, else PULL_NOT_FOUND.",
            "PullMessageProcessor.processRequest; seed 001 §4.3.2 第八步",
        ),
        Clause(
            "PULL-11",
            "On a slave without offsetCheckInSlave PULL_OFFSET_MOVED becomes PULL_RETRY_IMMEDIATELY (suggesting "
            "the group's brokerId, no OffsetMovedEvent); slaveReadEnable does not change the code.",
            "PullMessageProcessor.processRequest",
        ),
        Clause(
            "PULL-12",
            "The suggested broker id is, with slaveReadEnable, whichBrokerWhenConsumeSlowly (1) if the store "
            "suggests pulling from a slave else the group's brokerId (0), and without it the master (0).",
            "PullMessageProcessor.processRequest; SubscriptionGroupConfig",
        ),
        Clause(
            "PULL-13",
            "PULL_NOT_FOUND on a first processing of a request with the suspend flag is held, not answered, for "
            "suspendTimeoutMillis (15000 from a push consumer) with long polling, else shortPollingTimeMills.",
            "PullMessageProcessor.processRequest; seed 001 §4.3.4",
        ),
        Clause(
            "PULL-14",
            "A held request is processed again, without suspension, when the queue's max offset passes its "
            "offset and the arrival matches, or when its hold time is over; it is answered exactly once.",
            "PullRequestHoldService.notifyMessageArriving, checkHoldRequest; seed 001 §4.3.4",
        ),
        Clause(
            "PULL-15",
            "A message arrival wakes held requests only on a master with long polling; the periodic check runs "
            "every 5 s with long polling, else every shortPollingTimeMills.",
            "DefaultMessageStore.ReputMessageService.doReput; PullRequestHoldService.run",
        ),
        Clause(
            "PULL-16",
            "Checks before the store, first failure wins: broker not readable, group missing, group consume "
            "disabled, topic missing, topic not readable, queueId outside [0, readQueueNums).",
            "PullMessageProcessor.processRequest",
        ),
        Clause(
            "PULL-17",
            "Then subscription checks (parse, group info, broadcast, subscription, version, filter data), a "
            "non-tag expression with the property filter off, and a store that refuses the read.",
            "PullMessageProcessor.processRequest",
        ),
        Clause(
            "PULL-18",
            "The broker commits the request's commitOffset iff it is a first processing, the commit flag is set "
            "and it is not a slave, whatever the store's result (a check before the store that fails answers "
            "first, without a commit); a push consumer sets the flag iff clustering and its memory offset > 0.",
            "PullMessageProcessor.processRequest; DefaultMQPushConsumerImpl.pullMessage; seed 001 §4.3.2 第九步",
        ),
        Clause(
            "PULL-19",
            "The client maps SUCCESS → FOUND, PULL_NOT_FOUND → NO_NEW_MSG, PULL_RETRY_IMMEDIATELY → NO_MATCHED_MSG,"
            " PULL_OFFSET_MOVED → OFFSET_ILLEGAL; any other code is an MQBrokerException.",
            "MQClientAPIImpl.processPullResponse",
        ),
        Clause(
            "PULL-20",
            "FOUND: next = nextBeginOffset, the re-filtered messages go to the process queue and the consume "
            "service, pull again at once (after pullInterval if > 0 and messages remain); no offset update.",
            "DefaultMQPushConsumerImpl.pullMessage PullCallback; PullAPIWrapper.processPullResult; seed 001 §4.3.3",
        ),
        Clause(
            "PULL-21",
            "NO_NEW_MSG and NO_MATCHED_MSG: next = nextBeginOffset, updateOffset(next, increaseOnly=true) if the "
            "process queue holds no message, pull again at once.",
            "DefaultMQPushConsumerImpl.pullMessage PullCallback, correctTagsOffset; seed 001 §4.3.3",
        ),
        Clause(
            "PULL-22",
            "OFFSET_ILLEGAL: next = nextBeginOffset, the process queue is dropped at once, and 10 s later "
            "updateOffset(next, increaseOnly=false), persist and removeProcessQueue; no pull again.",
            "DefaultMQPushConsumerImpl.pullMessage PullCallback; RebalanceImpl.removeProcessQueue",
        ),
        Clause(
            "PULL-23",
            "A pull error keeps the request's offset and pulls again after pullTimeDelayMillsWhenException (1000"
            " ms: ClientConfig's value, which the push consumer copies over its own 3000); since 4.9.5 FLOW_CONTROL"
            " after 20 ms.",
            "DefaultMQPushConsumerImpl.pullMessage PullCallback.onException; ClientConfig",
            versions="4.9.0-4.9.4: every error 1000 ms; 4.9.5+: FLOW_CONTROL 20 ms, others 1000 ms",
        ),
        Clause(
            "PULL-24",
            "A rebalance that finds an assigned queue without a process queue drops the memory offset and "
            "resumes from computePullFromWhere, i.e. the broker's stored offset when there is one.",
            "RebalanceImpl.updateProcessQueueTableInRebalance; RebalancePushImpl.computePullFromWhereWithException",
        ),
        Clause(
            "PULL-25",
            "Property: every answer of a master (or a slave with offsetCheckInSlave) puts the next offset within"
            " [min, max] of the queue at response time; a FOUND answer's next offset exceeds the requested one.",
            "consequence of PULL-1 to PULL-10",
        ),
        Clause(
            "PULL-26",
            "Property: PULL_OFFSET_MOVED is answered only for a requested offset outside [min, max] of the "
            "queue, so a consumer at a valid offset is never dropped.",
            "consequence of PULL-2 to PULL-5 and PULL-10",
        ),
        Clause(
            "PULL-27",
            "Property: no answer moves the consumer past a readable message that matches its subscription "
            "without delivering it.",
            "consequence of PULL-3 to PULL-9 and PULL-20 to PULL-22",
        ),
        Clause(
            "PULL-28",
            "computePullFromWhere: the offset readOffset gives when it is >= 0; with none (-1), "
            "CONSUME_FROM_FIRST_OFFSET starts at 0, CONSUME_FROM_LAST_OFFSET at the queue's max offset (0 for a "
            "%RETRY% topic), CONSUME_FROM_TIMESTAMP at SEARCH_OFFSET_BY_TIMESTAMP of consumeTimestamp (the max offset "
            "for a %RETRY% topic); a push consumer reads the broker (READ_FROM_STORE), which its offset store keeps.",
            "RebalancePushImpl.computePullFromWhereWithException; RemoteBrokerOffsetStore.readOffset",
        ),
        Clause(
            "PULL-29",
            "QUERY_CONSUMER_OFFSET answers the group's committed offset; with none, 0 when the queue's min offset is"
            " <= 0 and offset 0 is not on disk only (a group new to a queue that never lost data starts at 0, "
            "whatever consumeFromWhere says), else QUERY_NOT_FOUND, which readOffset turns into -1.",
            "ConsumerManageProcessor.queryConsumerOffset; RemoteBrokerOffsetStore.fetchConsumeOffsetFromBroker",
        ),
        Clause(
            "PULL-30",
            "SEARCH_OFFSET_BY_TIMESTAMP binary-searches the queue's entries from max(minOffset, the first file) by "
            "store time (an entry whose commit-log data is gone counts as earlier): an entry stored at the "
            "timestamp if the search meets one, else the nearer of the last entry before and the first after (the "
            "earlier on a tie), the first readable entry when all are later, the last entry (max - 1) when all "
            "are earlier, the file's first offset - 1 (0 at least) when every entry's data is gone, 0 for an empty "
            "queue.",
            "ConsumeQueue.getOffsetInQueueByTime; DefaultMessageStore.getOffsetInQueueByTime",
            versions="4.9.8 searches the one consume-queue file modified at or after the timestamp (else the last);"
            " the spec's queue is that file",
        ),
        Clause(
            "PULL-31",
            "A lite pull consumer's pull task takes, in order, a pending seek offset (which also becomes the consume"
            " offset), the queue's pull offset, else computePullFromWhere reading its offset store's memory first "
            "(MEMORY_FIRST_THEN_STORE); its pull offset is set only by an answer.",
            "DefaultLitePullConsumerImpl.nextPullOffset; RebalanceLitePullImpl.computePullFromWhereWithException",
        ),
        Clause(
            "PULL-32",
            "A lite pull consumer's answer: FOUND with messages and no seek pending caches them and appends one "
            "consume request; for every status, OFFSET_ILLEGAL included, the pull offset becomes nextBeginOffset "
            "unless a seek is pending and the task pulls again at once; nothing is dropped and no offset stored; an "
            "error pulls again after pullTimeDelayMillsWhenException (1000 ms), FLOW_CONTROL after 20 ms; the answer"
            " of a pull sent before a seek is ignored; while the consume requests cached times pullBatchSize exceed"
            " pullThresholdForAll the task sends no pull and tries again after 50 ms.",
            "DefaultLitePullConsumerImpl.PullTaskImpl.run, updatePullOffset",
        ),
        Clause(
            "PULL-33",
            "A lite pull carries the suspend, subscription and lite-pull flags and never the commit flag; a push "
            "pull carries the suspend flag, no subscription (postSubscriptionWhenPull false), and the commit flag "
            "as PULL-18 says; each suspends for its consumer's brokerSuspendMaxTimeMillis (lite 20 s, push 15 s).",
            "DefaultLitePullConsumerImpl.pullSyncImpl; DefaultMQPushConsumerImpl.pullMessage; DefaultLitePullConsumer",
        ),
        Clause(
            "PULL-34",
            "poll: with autoCommit, first commitAll if autoCommitIntervalMillis passed since the last auto commit "
            "(the first poll always); then the oldest consume request of a live process queue is returned, its "
            "messages leave the process queue and the queue's consume offset becomes removeMessage's answer: the "
            "smallest offset still cached, else queueOffsetMax + 1.",
            "DefaultLitePullConsumerImpl.poll, maybeAutoCommit; ProcessQueue.removeMessage",
        ),
        Clause(
            "PULL-35",
            "commitAll stores, for each assigned queue with a consume offset and a live process queue, "
            "updateOffset(consumeOffset, increaseOnly=false); persisting sends the assigned queues' offsets to the "
            "broker (UPDATE_CONSUMER_OFFSET).",
            "DefaultLitePullConsumerImpl.commitAll, commit; RemoteBrokerOffsetStore.persistAll",
        ),
        Clause(
            "PULL-36",
            "seek(mq, offset) is refused unless mq is assigned and min <= offset <= max (GET_MIN_OFFSET, "
            "GET_MAX_OFFSET); else the queue's cached messages and consume requests are cleared and its pull task "
            "restarts at once from offset.",
            "DefaultLitePullConsumerImpl.seek, clearMessageQueueInCache",
        ),
        Clause(
            "PULL-37",
            "A consumer is given the read queue ids [0, readQueueNums) of a topic whose permission is readable, none"
            " of an unreadable one; a clustering push consumer also its group's %RETRY% queue; a queue assigned by "
            "hand past readQueueNums is pulled and answered SYSTEM_ERROR.",
            "MQClientInstance.topicRouteData2TopicSubscribeInfo; DefaultMQPushConsumerImpl.copySubscription",
        ),
        Clause(
            "PULL-38",
            "A broker restart forgets held pulls and the groups' registrations (until the next heartbeat), fails "
            "the pulls and offset updates on the wire (their connections close: PULL-23), keeps the messages and the"
            " committed offsets, deletes the consume-queue files whose data is all gone (never the last) and "
            "recomputes each min offset from the first file: its first entry at or above the commit log's min "
            "offset, else 0.",
            "BrokerController.shutdown, start; DefaultMessageStore.recoverTopicQueueTable; "
            "ConsumeQueue.correctMinOffset; CleanConsumeQueueService (its first run after a start)",
        ),
        Clause(
            "PULL-39",
            "A consumer's shutdown persists the offsets of its queues and unregisters it; a crash persists nothing"
            " and loses the offset updates it had on the wire; the broker forgets the held pulls of a closed "
            "connection and the group once no channel is left.",
            "DefaultMQPushConsumerImpl.shutdown; PullRequestHoldService; ConsumerManager.doChannelCloseEvent",
        ),
        Clause(
            "PULL-40",
            "A suspended push consumer (a lite pull consumer's paused queue) sends no pull: its pull loop looks "
            "again every 1 s and pulls at such a look once resumed; a suspended push consumer starts no rebalance (one"
            " under way completes).",
            "DefaultMQPushConsumerImpl.pullMessage, suspend, resume; DefaultLitePullConsumerImpl.PullTaskImpl.run, "
            "pause, resume",
        ),
        Clause(
            "PULL-41",
            "CLEAN_EXPIRED_CONSUMEQUEUE destroys every consume queue (not SCHEDULE_TOPIC_XXXX's) whose messages all "
            "left the commit log: the queue starts again empty, at offset 0.",
            "DefaultMessageStore.cleanExpiredConsumerQueue; AdminBrokerProcessor.cleanExpiredConsumeQueue",
        ),
        Clause(
            "PULL-42",
            "A broker crash keeps the messages its store flushed (SYNC_FLUSH: each before its put is answered; "
            "ASYNC_FLUSH: those before the last periodic flush, every 500 ms, or the one before old data is "
            "deleted) and the committed offsets it last persisted (every 5 s, and at shutdown); the rest is lost and"
            " the restart is otherwise as PULL-38 says.",
            "CommitLog.handleDiskFlush, FlushRealTimeService; BrokerController (persistAllConsumerOffset every 5 s);"
            " DefaultMessageStore.recover",
        ),
        Clause(
            "PULL-43",
            "GET_EARLIEST_MSG_STORETIME answers the store time of the queue's message at its min offset: -1 when "
            "the queue is empty or that message's consume-queue entry or commit-log data is gone.",
            "AdminBrokerProcessor.getEarliestMsgStoretime; DefaultMessageStore.getEarliestMessageTime(topic, "
            "queueId)",
        ),
        Clause(
            "PULL-44",
            "What a crash leaves past the flushed bytes is dropped by the recovery, which leaves the store as "
            "PULL-42 says: a commit-log record cut short or failing its CRC ends the commit log there, consume-queue"
            " bytes short of an entry, an entry of zeros and the entries pointing at or past the commit log's end "
            "are cut, and the entries of the records after the checkpoint are dispatched again.",
            "CommitLog.recoverAbnormally, checkMessageAndReturnSize (checkCRCOnRecover); ConsumeQueue.recover, "
            "truncateDirtyLogicFiles; DefaultMessageStore.recover (ReputMessageService from the checkpoint)",
        ),
    ),
)
