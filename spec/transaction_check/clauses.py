"""Transaction check: the clause table: every rule of the area with its ID, statement and sources."""

from __future__ import annotations

from rocketspec.spec.clauses import Clause, ClauseTable

CLAUSES = ClauseTable(
    area="transaction_check",
    prefix="TXN",
    clauses=(
        Clause(
            "TXN-1",
            "A send is transactional when its TRAN_MSG property parses as true (Boolean.parseBoolean, any case); "
            "the producer sets TRAN_MSG=true, PGROUP=its group and sysFlag PREPARED (0x4); a broker with "
            "rejectTransactionMessage answers NO_PERMISSION.",
            "DefaultMQProducerImpl.sendMessageInTransaction/sendKernelImpl, SendMessageProcessor.asyncSendMessage; "
            "seed 004 §事务消息",
        ),
        Clause(
            "TXN-2",
            "The broker stores a half message in RMQ_SYS_TRANS_HALF_TOPIC queue 0 with REAL_TOPIC/REAL_QID set to "
            "the original topic/queue and its transaction bits reset to NOT_TYPE (so the half consume queue is "
            "built).",
            "TransactionalMessageBridge.parseHalfMessageInner; seed 004 §开始事务",
        ),
        Clause(
            "TXN-3",
            "Only a stored message whose transaction bits are NOT_TYPE or COMMIT_TYPE gets a consume-queue entry; "
            "PREPARED and ROLLBACK messages never become consumable.",
            "DefaultMessageStore.CommitLogDispatcherBuildConsumeQueue, CommitLog.DefaultAppendMessageCallback",
        ),
        Clause(
            "TXN-4",
            "After SEND_OK the producer runs the local transaction and sends one oneway END_TRANSACTION "
            "(fromTransactionCheck=false, commitLogOffset of the offsetMsgId, tranStateTableOffset = the send "
            "result's queue offset): COMMIT 0x8, ROLLBACK 0xC, UNKNOW/null/exception 0x0; FLUSH_DISK_TIMEOUT, "
            "FLUSH_SLAVE_TIMEOUT and SLAVE_NOT_AVAILABLE send ROLLBACK without running it.",
            "DefaultMQProducerImpl.sendMessageInTransaction/endTransaction",
        ),
        Clause(
            "TXN-5",
            "A slave answers END_TRANSACTION with SLAVE_NOT_AVAILABLE and does nothing else.",
            "EndTransactionProcessor.processRequest",
        ),
        Clause(
            "TXN-6",
            "END_TRANSACTION with commitOrRollback UNKNOW (0) gets no response and has no effect; any value other "
            "than UNKNOW, COMMIT or ROLLBACK fails the header check (SYSTEM_ERROR 'commitOrRollback field wrong') "
            "and has no effect; fromTransactionCheck only changes what is logged.",
            "EndTransactionProcessor.processRequest; EndTransactionRequestHeader.checkFields",
        ),
        Clause(
            "TXN-7",
            "COMMIT and ROLLBACK look the half message up by commitLogOffset; if none is found, or its PGROUP "
            "differs from the header's producerGroup, or its queue offset differs from tranStateTableOffset, or "
            "its commit-log offset differs from the header's, the answer is SYSTEM_ERROR and nothing is written.",
            "EndTransactionProcessor.checkPrepareMessage, TransactionalMessageServiceImpl.getHalfMessageByOffset",
        ),
        Clause(
            "TXN-8",
            "COMMIT stores the message to REAL_TOPIC/REAL_QID with transaction bits COMMIT and the half message's "
            "stored properties (REAL_TOPIC, REAL_QID, TRAN_MSG and PGROUP stay: they are cleared from the property "
            "map after the properties string is written), then, only if that store succeeded (PUT_OK, flush or "
            "slave timeouts), writes the op message; a failed store answers its error code and writes nothing else.",
            "EndTransactionProcessor.endMessageTransaction/sendFinalMessage; seed 004 §事务提交",
            versions="4.9.x (seen on 4.9.8): the committed message's stored properties keep REAL_TOPIC, REAL_QID, "
                     "TRAN_MSG",
        ),
        Clause(
            "TXN-9",
            "ROLLBACK writes only the op message and answers SUCCESS; nothing is stored in the real topic.",
            "EndTransactionProcessor.processRequest; seed 004 §事务回滚",
        ),
        Clause(
            "TXN-10",
            "The op message goes to RMQ_SYS_TRANS_OP_HALF_TOPIC, same queue id as the half queue, tag \"d\", body "
            "= the resolved half message's queue offset in decimal.",
            "TransactionalMessageBridge.addRemoveTagInTransactionOp/writeOp",
        ),
        Clause(
            "TXN-11",
            "END_TRANSACTION is not idempotent and ops name half-queue entries, not messages: every accepted "
            "COMMIT stores one more real message, so a duplicated request, or one naming an entry a check has "
            "re-appended since, can commit a message twice.",
            "EndTransactionProcessor.processRequest, TransactionalMessageServiceImpl.check",
        ),
        Clause(
            "TXN-12",
            "The check service runs a pass every transactionCheckInterval (60 s) with transactionTimeOut (6 s) "
            "and transactionCheckMax (15); a pass stops walking a queue once it has run more than 60 s.",
            "TransactionalMessageCheckService.onWaitEnd, TransactionalMessageServiceImpl.MAX_PROCESS_TIME_LIMIT",
        ),
        Clause(
            "TXN-13",
            "A pass reads the half and op offsets of group CID_RMQ_SYS_TRANS and op messages from the op offset in "
            "batches of 32: an op naming a half offset below the half offset is done, any other goes into the "
            "remove map (half offset -> op offset; a later op for the same half offset replaces the earlier).",
            "TransactionalMessageServiceImpl.fillOpRemoveMap, TransactionalMessageBridge.fetchConsumeOffset; "
            "seed 004 §事务消息是如何处理回查的",
        ),
        Clause(
            "TXN-14",
            "The walk goes from the half offset to the end of the half queue; an offset in the remove map is "
            "skipped and its op counted done.",
            "TransactionalMessageServiceImpl.check",
            versions="4.3.0-4.5.2: the matched op is not counted done (counted on the next pass); 4.6.0+: counted",
        ),
        Clause(
            "TXN-15",
            "Check count: TRANSACTION_CHECK_TIMES absent -> 1; a value >= transactionCheckMax -> discard; else "
            "value + 1 (the re-appended copy carries the new count).",
            "TransactionalMessageServiceImpl.needDiscard",
        ),
        Clause(
            "TXN-16",
            "A half message born more than fileReservedTime (72 h) ago is discarded too; a discarded message is "
            "stored to TRANS_CHECK_MAX_TIME_TOPIC (1 queue) and the walk moves on.",
            "TransactionalMessageServiceImpl.needSkip, DefaultTransactionalMessageCheckListener.resolveDiscardMsg",
        ),
        Clause(
            "TXN-17",
            "A half message stored at or after the moment the pass began stops the walk (it waits for the next "
            "pass); this is tested after the discard rules.",
            "TransactionalMessageServiceImpl.check",
        ),
        Clause(
            "TXN-18",
            "With CHECK_IMMUNITY_TIME_IN_SECONDS (x1000 ms, -1 -> transactionTimeOut) and age < immunity: a "
            "TRAN_PREPARED_QUEUE_OFFSET in the remove map is done; else the message is re-appended with that "
            "property (kept, or its own offset) and skipped; -1 falls through; no property and 0 <= age < "
            "transactionTimeOut stops the walk.",
            "TransactionalMessageServiceImpl.check/checkPrepareQueueOffset/getImmunityTime, "
            "TransactionalMessageBridge.renewImmunityHalfMessageInner",
        ),
        Clause(
            "TXN-19",
            "A check is needed when (no op batch and age > immunity) or (the batch's last op was born more than "
            "transactionTimeOut after the pass began) or age <= -1: the message is re-appended (new count, same "
            "born time) and CHECK_TRANSACTION_STATE for the new copy goes to one connected producer of PGROUP "
            "(none: no check, the count is spent all the same); else the next op batch is read and the same "
            "offset looked at again.",
            "TransactionalMessageServiceImpl.check/putBackHalfMsgQueue, "
            "AbstractTransactionalMessageCheckListener.sendCheckMessage; seed 004 §事务反查; "
            "seed 000 §DefaultMQProducer.producerGroup",
        ),
        Clause(
            "TXN-20",
            "After the walk the half offset becomes the first offset not passed, and the op offset advances over "
            "the sorted done op offsets while they continue the old op offset one by one.",
            "TransactionalMessageServiceImpl.check/calculateOpOffset",
        ),
        Clause(
            "TXN-21",
            "The producer answers a check with a oneway END_TRANSACTION (fromTransactionCheck=true, the check's "
            "commitLogOffset and tranStateTableOffset, its own group): COMMIT 0x8, ROLLBACK 0xC, UNKNOW or an "
            "exception 0x0; a null state or no listener sends nothing.",
            "DefaultMQProducerImpl.checkTransactionState, ClientRemotingProcessor.checkTransactionState",
        ),
        Clause(
            "TXN-22",
            "A message reaches its real topic only through an accepted COMMIT, so a message whose producer rolled "
            "it back (or never decided) is never consumable.",
            "EndTransactionProcessor.processRequest; seed 004 §事务消息总的执行流程",
        ),
        Clause(
            "TXN-23",
            "A message is checked at most max(transactionCheckMax, 1) times; after that it is discarded and never "
            "checked again.",
            "TransactionalMessageServiceImpl.needDiscard/check",
        ),
        Clause(
            "TXN-24",
            "The half offset never passes an entry of a message nobody resolved or discarded unless a later copy "
            "of it sits at or beyond the offset.",
            "TransactionalMessageServiceImpl.check",
        ),
        Clause(
            "TXN-25",
            "A message none of whose END_TRANSACTIONs was duplicated, named a superseded entry or landed during a "
            "pass is resolved (and committed) at most once, provided its op is within the op batches a pass reads.",
            "TransactionalMessageServiceImpl.check/fillOpRemoveMap/checkPrepareQueueOffset, "
            "EndTransactionProcessor.processRequest",
        ),
        Clause(
            "TXN-26",
            "A walk that must read more op messages and finds none waits at that half message (Java's check thread "
            "spins re-reading the op queue): it goes on as soon as a new op message is there, once the message is "
            "older than its immunity time, or once the pass has run more than 60 s, whichever comes first; the next "
            "pass begins transactionCheckInterval after this one ended.",
            "TransactionalMessageServiceImpl.check (the isNeedCheck else branch), ServiceThread.waitForRunning, "
            "TransactionalMessageCheckService.onWaitEnd",
        ),
    ),
)
