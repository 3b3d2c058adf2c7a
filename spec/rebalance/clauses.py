"""Rebalance: the clause table: every rule of the area with its ID, statement and sources."""

from __future__ import annotations

from rocketspec.spec.clauses import Clause, ClauseTable

CLAUSES = ClauseTable(
    area="rebalance",
    prefix="REB",
    clauses=(
        Clause(
            "REB-1",
            "Clustering allocation runs on the topic's queues sorted by (topic, brokerName, queueId) and the client "
            "ids sorted in Java string order, so consumers with equal views compute one consistent assignment.",
            "RebalanceImpl.rebalanceByTopic; seed 001 §五 第二步",
        ),
        Clause(
            "REB-2",
            "Strategies other than CONFIG reject an empty current id, queue list or id list (IllegalArgumentException)"
            " and give nothing to a consumer whose id is not in the id list.",
            "AbstractAllocateMessageQueueStrategy.check",
            versions="up to 4.9.2: MACHINE_ROOM checks nothing (a missing id still gets nothing); 4.9.3: MACHINE_ROOM "
            "also rejects a blank (whitespace) id; 4.9.4+: all strategies share check(), which rejects empty ids",
        ),
        Clause(
            "REB-3",
            "AVG: with m queues, n ids and index i, consumer i takes m//n queues plus one if i < m%n, the consecutive "
            "run that starts at i*(m//n) + min(i, m%n).",
            "AllocateMessageQueueAveragely.allocate; seed 001 §1.1 (8 queues, 3 consumers: 3, 3, 2)",
        ),
        Clause(
            "REB-4",
            "AVG_BY_CIRCLE: consumer i takes the queues at the sorted positions j with j % n == i.",
            "AllocateMessageQueueAveragelyByCircle.allocate; seed 001 §1.1",
        ),
        Clause(
            "REB-5",
            "CONSISTENT_HASH: each sorted id puts virtual nodes '<id>-<k>' (k < virtualNodeCnt, default 10) on a ring "
            "keyed by the first 4 MD5 bytes (big-endian, unsigned; a later node replaces an equal key); a queue goes "
            "to the first node at or after the hash of its toString, wrapping; a negative count is an error.",
            "AllocateMessageQueueConsistentHash; ConsistentHashRouter; VirtualNode.getKey; MD5Hash.hash",
        ),
        Clause(
            "REB-6",
            "CONFIG returns the configured queue list whatever the ids or queues (no argument check).",
            "AllocateMessageQueueByConfig.allocate",
        ),
        Clause(
            "REB-7",
            "MACHINE_ROOM keeps the sorted queues whose broker name splits on '@' into exactly two parts with the "
            "first in the configured rooms; of those p, consumer i takes [i*(p//n), (i+1)*(p//n)) plus i + (p//n)*n "
            "if i < p%n.",
            "AllocateMessageQueueByMachineRoom.allocate",
        ),
        Clause(
            "REB-8",
            "Broadcasting does not allocate: every consumer takes every queue of its cached route.",
            "RebalanceImpl.rebalanceByTopic (BROADCASTING); seed 001 §1.1",
        ),
        Clause(
            "REB-9",
            "A rebalance of a topic changes nothing when the route is not cached, the id list cannot be fetched, "
            "or the strategy throws (for example on an empty queue or id list).",
            "RebalanceImpl.rebalanceByTopic",
        ),
        Clause(
            "REB-10",
            "A table queue of the topic that is no longer allocated is marked dropped, its offset persisted to the "
            "broker and removed from the offset store, then the queue leaves the table (unless REB-14 keeps it).",
            "RebalanceImpl.updateProcessQueueTableInRebalance; RebalancePushImpl.removeUnnecessaryMessageQueue; "
            "seed 001 §五 第三步",
        ),
        Clause(
            "REB-11",
            "A push consumer (CONSUME_PASSIVELY) also drops and removes an allocated queue not pulled for more than "
            "120 s, which the same pass then adds back; pull consumers (CONSUME_ACTIVELY) ignore pull expiry.",
            "RebalanceImpl.updateProcessQueueTableInRebalance; ProcessQueue.isPullExpired",
        ),
        Clause(
            "REB-12",
            "An allocated queue not in the table is added after the removals: orderly consumers first take the broker "
            "lock (skip on refusal); then the in-memory offset is cleared, the start offset computed, and a "
            "ProcessQueue with a pull request created if it is >= 0; a queue still in the table, even dropped, is "
            "not re-added.",
            "RebalanceImpl.updateProcessQueueTableInRebalance; seed 001 §五 第四步",
        ),
        Clause(
            "REB-13",
            "computePullFromWhere: a stored offset >= 0 is used; none (-1): LAST_OFFSET -> 0 for %RETRY% topics else "
            "the broker max offset, FIRST_OFFSET -> 0, TIMESTAMP -> the max offset for %RETRY% topics else the offset "
            "searched by consumeTimestamp; a failed read (-2) or a failed broker query skips the queue this round.",
            "RebalancePushImpl.computePullFromWhereWithException; RemoteBrokerOffsetStore.readOffset; "
            "seed 001 §6.3.2",
        ),
        Clause(
            "REB-14",
            "Orderly clustering removal needs the ProcessQueue consume lock within 1 s: if a batch holds it the queue "
            "stays in the table, dropped, until a later pass; otherwise the broker lock is released by a oneway "
            "unlock, sent 20 s later when messages are still cached.",
            "RebalancePushImpl.removeUnnecessaryMessageQueue; RebalancePushImpl.unlockDelay",
        ),
        Clause(
            "REB-15",
            "The lock flag of a new ProcessQueue: unlocked until the next lockAll, or locked at creation.",
            "RebalanceImpl.updateProcessQueueTableInRebalance (pq.setLocked); apache/rocketmq#2621",
            versions="up to 4.9.4: created unlocked (orderly consumption waits up to 20 s for lockAll); "
            "4.9.5+: created locked",
        ),
        Clause(
            "REB-16",
            "An orderly batch starts only on a queue that is not dropped and, in clustering, whose ProcessQueue is "
            "locked with the last lock at most 30 s old; the result of a batch on a dropped queue commits no offset.",
            "ConsumeMessageOrderlyService.ConsumeRequest.run; processConsumeResult; ProcessQueue.isLockExpired",
        ),
        Clause(
            "REB-17",
            "The broker keeps one lock holder per (group, queue): tryLock grants it when free, expired (60 s without "
            "renewal) or already the caller's; unlock frees only the caller's; lockAll (every 20 s) renews and sets "
            "each ProcessQueue's lock flag to the answer.",
            "RebalanceLockManager.tryLockBatch/unlockBatch; RebalanceImpl.lockAll; ConsumeMessageOrderlyService",
        ),
        Clause(
            "REB-18",
            "The client lock lifetime (30 s) is shorter than the broker's (60 s) and both are renewed together, so a "
            "broker lock lapses only after its holder stopped believing in it; a fresh client lock is backed.",
            "ProcessQueue.REBALANCE_LOCK_MAX_LIVE_TIME; RebalanceLockManager.REBALANCE_LOCK_MAX_LIVE_TIME",
        ),
        Clause(
            "REB-19",
            "A delayed unlock frees the broker lock even if its sender took the queue again meanwhile; that consumer "
            "then holds an unbacked lock flag until its next lockAll (a 4.x race the model keeps).",
            "RebalancePushImpl.unlockDelay; RebalanceLockManager.unlockBatch",
        ),
        Clause(
            "REB-20",
            "When every live consumer rebalanced from the same queue list and the id list of exactly the live "
            "consumers and applied its allocation fully, each queue has exactly one owner (AVG, AVG_BY_CIRCLE, "
            "CONSISTENT_HASH; MACHINE_ROOM: each queue of a configured room).",
            "RebalanceImpl.rebalanceByTopic; seed 001 §五 (同一个消费队列不会被多个消费者分配)",
        ),
        Clause(
            "REB-21",
            "AVG and AVG_BY_CIRCLE give consumers of one id list allocation sizes that differ by at most one.",
            "AllocateMessageQueueAveragely; AllocateMessageQueueAveragelyByCircle; seed 001 §1.1",
        ),
        Clause(
            "REB-22",
            "Queues of topics no longer subscribed are dropped and removed without persisting their offsets.",
            "RebalanceImpl.truncateMessageQueueNotMyTopic",
        ),
        Clause(
            "REB-23",
            "A shutdown persists every offset, releases its orderly broker locks and unregisters; a crash persists "
            "nothing and leaves its registration until the broker evicts it and its locks until they expire.",
            "DefaultMQPushConsumerImpl.shutdown; ConsumeMessageOrderlyService.shutdown; ClientHousekeepingService",
        ),
        Clause(
            "REB-24",
            "A broker restart loses its lock table (kept in memory only): each lock flag on its queues is then "
            "unbacked, and orderly batches go on under it (a batch checks only the ProcessQueue), until the holder's "
            "next lockAll, which takes the lock again unless another consumer took it first (REB-17).",
            "RebalanceLockManager.mqLockTable; BrokerController; ConsumeMessageOrderlyService.ConsumeRequest.run",
        ),
        Clause(
            "REB-25",
            "A clustering push consumer's pull request carries its in-memory offset of the queue when it is > 0 (the "
            "commit bit) and the master stores it as the group's offset; broadcasting pulls commit nothing.",
            "DefaultMQPushConsumerImpl.pullMessage (commitOffsetEnable); PullMessageProcessor.processRequest "
            "(storeOffsetEnable)",
        ),
        Clause(
            "REB-26",
            "A broadcasting consumer keeps its offsets in a local store of its own: a removal, the periodic persist "
            "and a shutdown write it, a new queue starts from it (REB-13), and nothing reaches the broker.",
            "DefaultMQPushConsumerImpl.start; LocalFileOffsetStore.persist, persistAll, readOffset",
        ),
        Clause(
            "REB-27",
            "An orderly broadcasting consumer takes the broker lock to add a queue (skip on refusal, REB-12) but never "
            "renews or releases it (lockAll, the removal unlock and unlockAll run in clustering only), and its "
            "batches need no lock flag.",
            "RebalanceImpl.updateProcessQueueTableInRebalance; ConsumeMessageOrderlyService.start/shutdown; "
            "RebalancePushImpl.removeUnnecessaryMessageQueue; ConsumeMessageOrderlyService.ConsumeRequest.run",
        ),
        Clause(
            "REB-28",
            "Consumers allocate the read queues of the route: queue ids below readQueueNums of each broker's queue "
            "data with read permission; writeQueueNums plays no part.",
            "MQClientInstance.topicRouteData2TopicSubscribeInfo; PermName.isReadable",
        ),
    ),
)
