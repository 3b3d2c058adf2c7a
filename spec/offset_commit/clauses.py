"""Offset commit: the clause table: every rule of the area with its ID, statement and sources."""

from __future__ import annotations

from rocketspec.spec.clauses import Clause, ClauseTable
from rocketspec.spec.protocol import (
    BROKER_FLUSH_CONSUMER_OFFSET_INTERVAL_MS,
    BROKER_REGISTER_INITIAL_DELAY_MS,
    CONSUME_TIMESTAMP_DEFAULT_LAG_MS,
    FLUSH_INTERVAL_COMMITLOG_MS,
    OFFSET_ILLEGAL_REMOVE_DELAY_MS,
    PERSIST_CONSUMER_OFFSET_INTERVAL_MS,
    RESET_OFFSET_CLIENT_WAIT_MS,
    SEND_BACK_LOCAL_RETRY_DELAY_MS,
)

_PERSIST_S = PERSIST_CONSUMER_OFFSET_INTERVAL_MS // 1000
_SEND_BACK_RETRY_S = SEND_BACK_LOCAL_RETRY_DELAY_MS // 1000
_BROKER_PERSIST_S = BROKER_FLUSH_CONSUMER_OFFSET_INTERVAL_MS // 1000
_BROKER_PERSIST_FIRST_S = BROKER_REGISTER_INITIAL_DELAY_MS // 1000
_ILLEGAL_S = OFFSET_ILLEGAL_REMOVE_DELAY_MS // 1000
_RESET_WAIT_S = RESET_OFFSET_CLIENT_WAIT_MS // 1000
_TIMESTAMP_LAG_MIN = CONSUME_TIMESTAMP_DEFAULT_LAG_MS // 60_000

CLAUSES = ClauseTable(
    area="offset_commit",
    prefix="OFF",
    clauses=(
        Clause(
            "OFF-1",
            "putMessage caches each message under its queue offset; an offset already cached is replaced "
            "without being counted, and queueOffsetMax becomes the offset of the last newly cached message.",
            "ProcessQueue.putMessage",
        ),
        Clause(
            "OFF-2",
            "putMessage returns dispatchToConsume true exactly when msgTreeMap is non-empty afterwards and "
            "the queue was not consuming, and then marks it consuming; only an orderly takeMessages finding "
            "nothing clears the mark (concurrent consumption ignores the flag).",
            "ProcessQueue.putMessage, ProcessQueue.takeMessages, DefaultMQPushConsumerImpl.pullMessage",
        ),
        Clause(
            "OFF-3",
            "removeMessage returns -1 when msgTreeMap was empty before the call; otherwise it removes the "
            "batch and returns the smallest offset still cached, or queueOffsetMax + 1 when none is left.",
            "ProcessQueue.removeMessage; seed 001 §1.3, §6.1",
        ),
        Clause(
            "OFF-4",
            "After a concurrent consume request, clustering keeps cached the messages whose "
            f"CONSUMER_SEND_MSG_BACK failed and resubmits them {_SEND_BACK_RETRY_S} s later, broadcasting "
            "drops failures; the rest is removed and the removeMessage result, when >= 0 and the "
            "ProcessQueue is not dropped, is written with updateOffset(increaseOnly=true).",
            "ConsumeMessageConcurrentlyService.processConsumeResult, ConsumeRequest.run; "
            "seed 001 §6.1, §6.2",
        ),
        Clause(
            "OFF-5",
            "updateOffset creates an absent entry with the value; otherwise increaseOnly raises the entry "
            "only to a larger value (compareAndIncreaseOnly), and without it the value overwrites the entry.",
            "RemoteBrokerOffsetStore.updateOffset, LocalFileOffsetStore.updateOffset, "
            "MixAll.compareAndIncreaseOnly",
        ),
        Clause(
            "OFF-6",
            "readOffset: READ_FROM_MEMORY gives the entry or -1; MEMORY_FIRST_THEN_STORE gives the entry "
            "when present, else reads the store; a store read gives the stored offset and caches it by "
            "overwrite, -1 when there is none, and -2 when a remote read fails other than by a broker "
            "response.",
            "RemoteBrokerOffsetStore.readOffset, LocalFileOffsetStore.readOffset, "
            "MQClientAPIImpl.queryConsumerOffset",
        ),
        Clause(
            "OFF-7",
            "QUERY_CONSUMER_OFFSET answers the stored offset when it is >= 0; with none, it answers 0 when "
            "the queue's min offset is <= 0 and offset 0 is not on disk, and QUERY_NOT_FOUND otherwise.",
            "ConsumerManageProcessor.queryConsumerOffset",
        ),
        Clause(
            "OFF-8",
            "ConsumerOffsetManager.commitOffset overwrites the stored topic@group queue offset with the "
            "committed value, also a lower one (only logged); UPDATE_CONSUMER_OFFSET commits "
            "unconditionally.",
            "ConsumerOffsetManager.commitOffset, ConsumerManageProcessor.updateConsumerOffset",
        ),
        Clause(
            "OFF-9",
            "A push pull carries commitOffset = readOffset(READ_FROM_MEMORY) (-1 when absent) with the "
            "commit bit only when that is > 0 in clustering, commitOffset 0 and no bit in broadcasting, "
            "always the suspend bit; the client clears the commit bit for a pull sent to a slave.",
            "DefaultMQPushConsumerImpl.pullMessage, PullSysFlag.buildSysFlag, "
            "PullAPIWrapper.pullKernelImpl; seed 001 §4.3.1",
        ),
        Clause(
            "OFF-10",
            "The broker commits a pull's commitOffset (as OFF-8) only when the request passed the "
            "permission, topic and subscription checks, is processed for the first time "
            "(brokerAllowSuspend: not the re-run after a long-poll wake-up), has the commit bit, and the "
            "broker is not a SLAVE; whatever the status.",
            "PullMessageProcessor.processRequest, PullMessageProcessor.executeRequestWhenWakeup; "
            "seed 001 §4.3.2",
        ),
        Clause(
            "OFF-11",
            f"persistAll runs every {_PERSIST_S} s over the queues in processQueueTable and does nothing "
            "when there are "
            "none; the remote store sends each held queue's memory entry as a oneway UPDATE_CONSUMER_OFFSET "
            "and forgets the entries of queues no longer held.",
            "MQClientInstance.persistAllConsumerOffset, RemoteBrokerOffsetStore.persistAll; seed 001 §1.3",
            versions="4.9.0-4.9.2: sent to the address findBrokerAddressInAdmin picks; 4.9.3+: to the master",
        ),
        Clause(
            "OFF-12",
            "A queue leaving the consumer (rebalance, or pull idle too long) has its ProcessQueue marked "
            "dropped, then persist(mq), then removeOffset(mq); a dropped ProcessQueue's results are not "
            "written, save by a consume thread that passed the isDropped check just before (not atomic), and "
            "by a NO_NEW_MSG / NO_MATCHED_MSG answer to a pull of the dropped ProcessQueue, whose "
            "correctTagsOffset writes the next offset with increaseOnly when its msgCount is 0 (no isDropped "
            "check).",
            "RebalanceImpl.updateProcessQueueTableInRebalance, "
            "RebalancePushImpl.removeUnnecessaryMessageQueue, DefaultMQPushConsumerImpl.correctTagsOffset",
        ),
        Clause(
            "OFF-13",
            "A queue added to a consumer (rebalance, restart) gets removeDirtyOffset(mq), then "
            "readOffset(READ_FROM_STORE): an offset >= 0 is where pulling starts (and is cached), -1 falls "
            "back to consumeFromWhere, -2 leaves the queue out until the next rebalance.",
            "RebalanceImpl.updateProcessQueueTableInRebalance, "
            "RebalancePushImpl.computePullFromWhereWithException",
        ),
        Clause(
            "OFF-14",
            "On NO_NEW_MSG or NO_MATCHED_MSG the next pull offset becomes nextBeginOffset and, when the "
            "ProcessQueue's msgCount is 0, the memory entry gets updateOffset(nextBeginOffset, "
            "increaseOnly=true).",
            "DefaultMQPushConsumerImpl.pullMessage, DefaultMQPushConsumerImpl.correctTagsOffset",
        ),
        Clause(
            "OFF-15",
            "Orderly: takeMessages moves the smallest cached offsets (up to the batch size) to "
            "consumingMsgOrderlyTreeMap; commit empties it and returns its largest offset + 1, written with "
            "updateOffset(increaseOnly=false) unless dropped; makeMessageToConsumeAgain/rollback move them "
            "back.",
            "ProcessQueue.takeMessages/commit/makeMessageToConsumeAgain/rollback, "
            "ConsumeMessageOrderlyService.processConsumeResult",
        ),
        Clause(
            "OFF-16",
            "Broadcasting keeps offsets in ~/.rocketmq_offsets/<clientId>/<group>/offsets.json, where "
            "persistAll writes the held queues' memory entries; persist(mq) and removeOffset(mq) act from "
            "4.9.8 only.",
            "LocalFileOffsetStore.persistAll/persist/removeOffset; seed 001 §6.3.1",
            versions="4.9.0-4.9.7: persistAll rewrites the file with the held queues only, persist(mq) and "
            "removeOffset(mq) do nothing; 4.9.8: persistAll merges into the file, persist(mq) writes one "
            "queue, removeOffset(mq) forgets its memory entry",
        ),
        Clause(
            "OFF-17",
            "At-least-once: every offset below the stored offset (broker, or local file when broadcasting) "
            "or the memory entry was consumed successfully or handed to the retry topic (broadcasting: "
            "consumed).",
            "seed 001 §1.3, §6.3; ConsumeMessageConcurrentlyService.processConsumeResult",
        ),
        Clause(
            "OFF-18",
            "While a queue is held, no removeMessage result waiting to be written passes a message still "
            "cached or being consumed, nor does the memory entry unless a late write of OFF-12 raised it.",
            "ProcessQueue.removeMessage, ConsumeMessageConcurrentlyService.processConsumeResult; "
            "seed 001 §1.3",
            versions="clustering: 4.9.x; broadcasting: 4.9.8 only (before, removeOffset is a no-op and a "
            "queue added back with no file entry keeps the memory entry of its previous ProcessQueue)",
        ),
        Clause(
            "OFF-19",
            "No loss: while a queue is held every unhandled message below the pull offset is cached and due "
            "to be consumed; a queue added back starts at or before its first unhandled message, in "
            "clustering exactly at the broker offset.",
            "RebalancePushImpl.computePullFromWhereWithException, ProcessQueue; seed 001 §1.3, §6.3",
        ),
        Clause(
            "OFF-20",
            "A queue whose readOffset(READ_FROM_STORE) answers -1 starts by consumeFromWhere: FIRST at 0; LAST at 0 "
            "for a retry topic, else at the queue's max offset; TIMESTAMP at the max offset for a retry topic, else "
            f"at searchOffset(consumeTimestamp) (default: {_TIMESTAMP_LAG_MIN} minutes before the consumer "
            "started).",
            "RebalancePushImpl.computePullFromWhereWithException, DefaultMQPushConsumer.consumeTimestamp",
        ),
        Clause(
            "OFF-21",
            "searchOffset (getOffsetInQueueByTime) binary-searches the queue's store times: an entry stored exactly "
            "at the time when the search meets one, else the nearer of the last entry before and the first after "
            "(the earlier on a tie); the first entry when all are later, the last entry (max offset - 1) when all "
            "are earlier, 0 for an empty queue.",
            "ConsumeQueue.getOffsetInQueueByTime, DefaultMessageStore.getOffsetInQueueByTime",
        ),
        Clause(
            "OFF-22",
            "A stored message takes the queue's max offset and the broker's store time. The broker persists its "
            f"offset table every {_BROKER_PERSIST_S} s (first {_BROKER_PERSIST_FIRST_S} s after start) and on a clean "
            "shutdown, and a crash-restart reloads the last persisted table; SYNC_FLUSH keeps every acknowledged "
            "message across a crash, ASYNC_FLUSH keeps a prefix of each queue holding at least what was stored "
            f"{FLUSH_INTERVAL_COMMITLOG_MS} ms before it. A restart forgets the broker's consumer connections.",
            "BrokerController.initialize, ConsumerOffsetManager.persist/load, CommitLog.handleDiskFlush, "
            "FlushRealTimeService, DefaultMessageStore.recover",
        ),
        Clause(
            "OFF-23",
            "A pull answered OFFSET_ILLEGAL marks its ProcessQueue dropped (it stays in processQueueTable) with "
            f"nextBeginOffset as the pull offset; {_ILLEGAL_S} s later updateOffset(nextBeginOffset, false), "
            "persist(mq) and removeProcessQueue (persist, removeOffset); a rebalance adds the queue back (OFF-13).",
            "DefaultMQPushConsumerImpl.pullMessage (OFFSET_ILLEGAL), RebalanceImpl.removeProcessQueue",
        ),
        Clause(
            "OFF-24",
            "A consumer starting loads its store (broadcasting: the file's entries into memory); a clean shutdown "
            "runs persistAll over processQueueTable, unregisters and drops every ProcessQueue without a per-queue "
            "persist; a crash persists nothing; either way the memory entries go with the process.",
            "DefaultMQPushConsumerImpl.start/shutdown, LocalFileOffsetStore.load, RebalanceImpl.destroy",
        ),
        Clause(
            "OFF-25",
            "INVOKE_BROKER_TO_RESET_OFFSET takes per write queue the offset at the timestamp (-1: the max offset; "
            "below 0: 0), the committed offset instead unless isForce or lower; SYSTEM_ERROR for a topic without "
            "config or a queue the group never committed, CONSUMER_NOT_ONLINE without a connected client, else "
            "RESET_CONSUMER_CLIENT_OFFSET to every connected client and SUCCESS with the offsets.",
            "Broker2Client.resetOffset, AdminBrokerProcessor.resetOffset",
        ),
        Clause(
            "OFF-26",
            "A client told to reset suspends pulling, marks the listed ProcessQueues dropped and clears them; "
            f"{_RESET_WAIT_S} s later each gets updateOffset(offset, false), then removeUnnecessaryMessageQueue "
            "(persist, removeOffset) and leaves processQueueTable; then the consumer resumes and rebalances.",
            "ClientRemotingProcessor.resetOffset, MQClientInstance.resetOffset",
        ),
        Clause(
            "OFF-27",
            "GET_CONSUME_STATS reports, for the topic asked (else each topic of the group's offsets) that has config "
            "and that an online group with subscriptions subscribes to, per read queue the max offset, the committed "
            "offset (both at least 0) and the store time of the message before the committed offset (0 when none); "
            "GET_BROKER_CONSUME_STATS the same per group over write queues with their total lag, "
            "GET_ALL_CONSUMER_OFFSET the table itself.",
            "AdminBrokerProcessor.getConsumeStats/fetchAllConsumeStatsInBroker/getAllConsumerOffset",
        ),
        Clause(
            "OFF-28",
            "QUERY_CONSUME_TIME_SPAN reports per write queue the store times of the first and the last message, of "
            "the message before the committed offset (the first when nothing is committed) and, when the committed "
            "offset is below the max offset, now minus the store time of the message at it.",
            "AdminBrokerProcessor.queryConsumeTimeSpan",
        ),
        Clause(
            "OFF-29",
            "A client is online at a broker from its heartbeat until it shuts down or crashes or the broker "
            "restarts; a heartbeat, a pull (also a held one's re-run) or an unregister makes the broker create a "
            "missing subscription group. GET_CONSUMER_CONNECTION_LIST lists the online clients with the group's "
            "message model and consumeFromWhere (CONSUMER_NOT_ONLINE when none); "
            "INVOKE_BROKER_TO_GET_CONSUMER_STATUS gathers each online client's memory entries of the topic "
            "(cloneOffsetTable).",
            "ClientManageProcessor.heartBeat, AdminBrokerProcessor.getConsumerConnectionList, "
            "Broker2Client.getConsumeStatus, MQClientInstance.getConsumerStatus",
        ),
        Clause(
            "OFF-30",
            "An admin UPDATE_CONSUMER_OFFSET commits as OFF-8; CLONE_GROUP_OFFSET copies the source group's "
            "offsets of the topic asked to the destination group; DELETE_SUBSCRIPTIONGROUP with removeOffset "
            "forgets the group's offsets on that broker. A message sent back in clustering reaches the group's "
            "retry queue on the same broker later, as a new message.",
            "AdminBrokerProcessor.cloneGroupOffset/deleteSubscriptionGroup, ConsumerOffsetManager.cloneOffset/"
            "removeOffset, SendMessageProcessor.consumerSendMsgBack",
        ),
        Clause(
            "OFF-31",
            "An orderly consumer's first pull of a ProcessQueue, once it is locked, reads the offset again "
            "(readOffset(READ_FROM_STORE), cached when found, no removeDirtyOffset) and pulls from where that read "
            "starts (OFF-20); pulls wait for that read.",
            "DefaultMQPushConsumerImpl.pullMessage (isPreviouslyLocked), "
            "RebalancePushImpl.computePullFromWhereWithException",
        ),
    ),
)
