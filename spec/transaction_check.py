"""Transactional messages: half and op topics, END_TRANSACTION, the broker's check pass and the producer's answer.

A transactional send stores a *half* message, which no consumer sees, in ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0. The
producer then runs its local transaction and ends it with a oneway END_TRANSACTION: COMMIT copies the half message
to its real topic and queue, ROLLBACK does not, and both write an *op* message (tag ``d``, body = the half queue
offset) to ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` so that the check pass knows the half message is done. Half messages
nothing resolved are walked by the check pass (every 60 s): older than the transaction timeout, each is re-appended
to the half queue with one more check count and the producer group is asked (CHECK_TRANSACTION_STATE); after
``transactionCheckMax`` checks the message is discarded to ``TRANS_CHECK_MAX_TIME_TOPIC``.

Follows ``rocketmq-all-4.9.8``: broker ``transaction/queue/TransactionalMessageServiceImpl`` (check,
fillOpRemoveMap, needDiscard, needSkip, checkPrepareQueueOffset, calculateOpOffset), ``TransactionalMessageBridge``
(parseHalfMessageInner, renew*HalfMessageInner, addRemoveTagInTransactionOp), ``TransactionalMessageCheckService``,
``AbstractTransactionalMessageCheckListener`` / ``DefaultTransactionalMessageCheckListener``,
``processor/EndTransactionProcessor``, store ``CommitLogDispatcherBuildConsumeQueue``, and client
``DefaultMQProducerImpl`` (sendMessageInTransaction, endTransaction, checkTransactionState). Seeds: 004 §事务消息
(a walk-through of the same 4.x classes) and 000 §DefaultMQProducer (any producer of the group may be asked).
Seed 002 §事物回查 describes the 3.x design (a tranStateTable file scanned by a timer), which 4.x replaced; this
module does not follow it.

Version profile: the whole of 4.9.x behaves the same here. Two older differences are kept in the clauses: before
4.6.0 an op matched during the walk was not counted done (the op offset advanced one pass later), and before 4.6.1
the committed message kept ``TRAN_MSG=true``.

What the broker does **not** guarantee (TXN-11): END_TRANSACTION is not idempotent and the op queue is keyed by
half queue *entry*, not by message, so a duplicated END_TRANSACTION, an END_TRANSACTION about an entry that a check
has since re-appended, or one that lands while a pass is walking, can commit a message twice. The state machine
models those races and checks "resolved at most once" for every message that did not suffer one (TXN-25). It also
shows one case RocketMQ gets wrong without any such race: an immunity message whose op lies beyond the op batches
a pass reads is re-appended and later checked again (``model(op_batch=1, immunity=...)`` finds it). Relatedly, the
TRAN_PREPARED_QUEUE_OFFSET lookup of TXN-18 never succeeds for copies the broker makes: the offset it names is
below the half offset by the next pass, so its op is filed as done, not in the remove map.

Times in the oracles are milliseconds; the state machine counts ticks of one check interval (``TICK_MS``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

import attrs

from rocketspec.spec.clauses import Clause, ClauseTable
from rocketspec.spec.explorer import Invariant, Model, StepInvariant, require_enabled
from rocketspec.spec.protocol import (
    FILE_RESERVED_TIME_HOURS,
    TRANS_CHECK_MAX_TIME_QUEUE_NUMS,
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_OP_REMOVE_TAG,
    TRANSACTION_CHECK_MAX,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_MAX_PROCESS_TIME_MS,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_OP_BATCH,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    TRANSACTION_TIMEOUT_MS,
    Property,
    PutMessageStatus,
    ResponseCode,
    SendStatus,
    TransactionState,
)
from rocketspec.spec.versions import DEFAULT_PROFILE, VersionProfile

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
    ),
)


# ---------------------------------------------------------------------------------------------------------------
# Oracles: the half message, END_TRANSACTION and the producer's answers.


class HalfSendPath(enum.Enum):
    """How a broker handles a sent message (TXN-1)."""

    NORMAL = "NORMAL"
    HALF = "HALF"
    REJECTED = "REJECTED"


def _java_parse_boolean(text: str | None) -> bool:
    # Boolean.parseBoolean is equalsIgnoreCase("true"); no character outside ASCII folds to t, r, u or e.
    if text is None or len(text) != 4:
        return False
    return all(c in pair for c, pair in zip(text, ("tT", "rR", "uU", "eE"), strict=True))


@CLAUSES.oracle("TXN-1")
def half_send_path(tran_msg: str | None, reject_transaction_message: bool = False) -> HalfSendPath:
    """Whether a sent message with TRAN_MSG ``tran_msg`` is stored as a half message (TXN-1).

    TRAN_MSG is read with ``Boolean.parseBoolean`` (``"true"`` in any case); a broker configured with
    ``rejectTransactionMessage`` answers such a send with NO_PERMISSION (REJECTED).

    pre: tran_msg is None or len(tran_msg) <= 5
    post: tran_msg not in ("true", "TRUE", "True", "tRuE") or __return__ != HalfSendPath.NORMAL
    post: __return__ == HalfSendPath.NORMAL or (tran_msg is not None and len(tran_msg) == 4)
    post: __return__ != HalfSendPath.REJECTED or reject_transaction_message
    post: __return__ != HalfSendPath.HALF or not reject_transaction_message
    """
    if not _java_parse_boolean(tran_msg):
        return HalfSendPath.NORMAL
    return HalfSendPath.REJECTED if reject_transaction_message else HalfSendPath.HALF


def transaction_value(sys_flag: int) -> int:
    """``MessageSysFlag.getTransactionValue``: the transaction bits (mask 0xC) of ``sys_flag``."""
    # flag & 0xC in arithmetic form (equal for every int), which the symbolic checker can reason about.
    return sys_flag // TRANSACTION_PREPARED_TYPE % 4 * TRANSACTION_PREPARED_TYPE


def reset_transaction_value(sys_flag: int, transaction_type: int) -> int:
    """``MessageSysFlag.resetTransactionValue``: set the transaction bits of ``sys_flag`` to ``transaction_type``."""
    return sys_flag - transaction_value(sys_flag) + transaction_type


@attrs.frozen
class HalfRewrite:
    """Where and how a half message is stored (TXN-2)."""

    topic: str
    queue_id: int
    sys_flag: int
    real_topic: str
    real_queue_id: str


@CLAUSES.oracle("TXN-2")
def half_message_rewrite(topic: str, queue_id: int, sys_flag: int) -> HalfRewrite:
    """How the broker stores a half message sent to ``topic``/``queue_id`` (TXN-2).

    The original topic and queue go to REAL_TOPIC/REAL_QID (the queue id as decimal text); the message goes to
    queue 0 of RMQ_SYS_TRANS_HALF_TOPIC with its transaction bits reset to NOT_TYPE, so that the store builds
    the half topic's consume queue (a PREPARED message would get none, TXN-3).

    pre: 0 <= queue_id < 1024
    pre: 0 <= sys_flag < 2 ** 31
    post: __return__.topic == TRANS_HALF_TOPIC and __return__.queue_id == 0
    post: (__return__.sys_flag // 4) % 4 == 0
    post: __return__.sys_flag - transaction_value(__return__.sys_flag) == sys_flag - transaction_value(sys_flag)
    post: __return__.real_topic == topic and int(__return__.real_queue_id) == queue_id
    """
    return HalfRewrite(
        topic=TRANS_HALF_TOPIC,
        queue_id=0,
        sys_flag=reset_transaction_value(sys_flag, TRANSACTION_NOT_TYPE),
        real_topic=topic,
        real_queue_id=str(queue_id),
    )


@CLAUSES.oracle("TXN-3")
def consumable(sys_flag: int) -> bool:
    """Whether a stored message with ``sys_flag`` gets a consume-queue entry (TXN-3).

    Only transaction bits NOT_TYPE (ordinary and half messages) and COMMIT_TYPE (committed transactional
    messages) are dispatched; PREPARED and ROLLBACK messages stay in the commit log only.

    pre: 0 <= sys_flag < 2 ** 31
    post: __return__ == ((sys_flag // 4) % 2 == 0)
    post: __return__ or transaction_value(sys_flag) in (TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE)
    """
    return transaction_value(sys_flag) in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE)


def _commit_or_rollback(state: TransactionState) -> int:
    if state is TransactionState.COMMIT_MESSAGE:
        return TRANSACTION_COMMIT_TYPE
    if state is TransactionState.ROLLBACK_MESSAGE:
        return TRANSACTION_ROLLBACK_TYPE
    return TRANSACTION_NOT_TYPE


@CLAUSES.oracle("TXN-4")
def first_end_transaction_type(
    send_status: SendStatus, local_state: TransactionState | None, raised: bool = False
) -> int:
    """commitOrRollback of the END_TRANSACTION the sender sends after the half message (TXN-4).

    SEND_OK: the local transaction runs; its state maps COMMIT -> 0x8, ROLLBACK -> 0xC, UNKNOW -> 0x0, and a null
    state or an exception (``raised``) counts as UNKNOW. Any other send status ends the transaction with
    ROLLBACK and the local transaction is never run.

    post: send_status == SendStatus.SEND_OK or __return__ == TRANSACTION_ROLLBACK_TYPE
    post: __return__ in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE)
    post: __return__ != TRANSACTION_COMMIT_TYPE or (local_state == TransactionState.COMMIT_MESSAGE and not raised)
    post: send_status != SendStatus.SEND_OK or not raised or __return__ == TRANSACTION_NOT_TYPE
    """
    if send_status is not SendStatus.SEND_OK:
        return TRANSACTION_ROLLBACK_TYPE
    if raised or local_state is None:
        return TRANSACTION_NOT_TYPE
    return _commit_or_rollback(local_state)


@CLAUSES.oracle("TXN-21")
def check_answer(state: TransactionState | None, raised: bool = False, has_listener: bool = True) -> int | None:
    """commitOrRollback the producer answers a CHECK_TRANSACTION_STATE with, or None if it sends nothing (TXN-21).

    The answer is a oneway END_TRANSACTION with fromTransactionCheck=true that names the check's own
    commitLogOffset and tranStateTableOffset (the re-appended copy). COMMIT -> 0x8, ROLLBACK -> 0xC, UNKNOW or
    an exception in the check listener -> 0x0. A listener returning null makes the check thread fail before
    sending (``switch`` on null), and with no listener at all nothing is sent either.

    post: __return__ != TRANSACTION_COMMIT_TYPE or (state == TransactionState.COMMIT_MESSAGE and not raised)
    post: __return__ != TRANSACTION_ROLLBACK_TYPE or (state == TransactionState.ROLLBACK_MESSAGE and not raised)
    post: (__return__ is None) == (not has_listener or (state is None and not raised))
    """
    if not has_listener:
        return None
    if raised:
        return TRANSACTION_NOT_TYPE
    if state is None:
        return None
    return _commit_or_rollback(state)


@attrs.frozen
class EndTransactionOutcome:
    """What the broker does with one END_TRANSACTION: its response (None: no response) and its writes."""

    response: ResponseCode | None
    stores_real: bool
    writes_op: bool


# PutMessageStatus -> END_TRANSACTION response (EndTransactionProcessor.sendFinalMessage).
_FINAL_PUT_RESPONSE: dict[PutMessageStatus, ResponseCode] = {
    PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.SUCCESS,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SUCCESS,
    PutMessageStatus.CREATE_MAPEDFILE_FAILED: ResponseCode.SYSTEM_ERROR,
    PutMessageStatus.MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
    PutMessageStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutMessageStatus.OS_PAGECACHE_BUSY: ResponseCode.SYSTEM_ERROR,
    PutMessageStatus.UNKNOWN_ERROR: ResponseCode.SYSTEM_ERROR,
    PutMessageStatus.LMQ_CONSUME_QUEUE_NUM_EXCEEDED: ResponseCode.SYSTEM_ERROR,
}

_NOTHING = EndTransactionOutcome(None, False, False)


@CLAUSES.oracle("TXN-5", "TXN-6", "TXN-7", "TXN-8", "TXN-9", "TXN-11")
def end_transaction(
    commit_or_rollback: int,
    producer_group: str,
    tran_state_table_offset: int,
    commit_log_offset: int,
    found: bool,
    stored_group: str,
    stored_queue_offset: int,
    stored_commit_log_offset: int,
    from_transaction_check: bool = False,
    slave: bool = False,
    put_status: PutMessageStatus = PutMessageStatus.PUT_OK,
) -> EndTransactionOutcome:
    """The broker's decision on one END_TRANSACTION (TXN-5..TXN-9) given the half message at its commit-log offset.

    ``found`` says whether a message was found at ``commit_log_offset``; ``stored_*`` are its PGROUP, queue
    offset and commit-log offset. A slave answers SLAVE_NOT_AVAILABLE (TXN-5); a commitOrRollback other than
    UNKNOW gets no response and any other value a SYSTEM_ERROR (TXN-6); a missing or mismatching half message is SYSTEM_ERROR (TXN-7);
    COMMIT stores the real message and, if that store succeeded (``put_status``), writes the op (TXN-8);
    ROLLBACK writes the op only (TXN-9). ``from_transaction_check`` changes nothing but logging, and nothing here
    remembers an earlier resolution: the same request accepted twice commits twice (TXN-11).

    pre: len(producer_group) <= 2 and len(stored_group) <= 2
    post: commit_or_rollback in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE) or __return__ == EndTransactionOutcome(ResponseCode.SYSTEM_ERROR, False, False)
    post: not slave or commit_or_rollback not in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE) or __return__ == EndTransactionOutcome(ResponseCode.SLAVE_NOT_AVAILABLE, False, False)
    post: slave or (__return__.response is None) == (commit_or_rollback == TRANSACTION_NOT_TYPE)
    post: not __return__.stores_real or (commit_or_rollback == TRANSACTION_COMMIT_TYPE and __return__.writes_op)
    post: not __return__.writes_op or (found and stored_group == producer_group and stored_queue_offset == tran_state_table_offset and stored_commit_log_offset == commit_log_offset)
    post: __return__.writes_op == (__return__.response == ResponseCode.SUCCESS) and (__return__.writes_op == __return__.stores_real or commit_or_rollback == TRANSACTION_ROLLBACK_TYPE)
    """  # noqa: E501
    if commit_or_rollback not in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
        # EndTransactionRequestHeader.checkFields throws while the header is decoded, before anything else.
        return EndTransactionOutcome(ResponseCode.SYSTEM_ERROR, False, False)
    if slave:
        return EndTransactionOutcome(ResponseCode.SLAVE_NOT_AVAILABLE, False, False)
    # fromTransactionCheck selects a log line only; the two switches accept the same values.
    del from_transaction_check
    if commit_or_rollback == TRANSACTION_NOT_TYPE:
        return _NOTHING
    if not found:
        return EndTransactionOutcome(ResponseCode.SYSTEM_ERROR, False, False)
    if (
        stored_group != producer_group
        or stored_queue_offset != tran_state_table_offset
        or stored_commit_log_offset != commit_log_offset
    ):
        return EndTransactionOutcome(ResponseCode.SYSTEM_ERROR, False, False)
    if commit_or_rollback == TRANSACTION_ROLLBACK_TYPE:
        return EndTransactionOutcome(ResponseCode.SUCCESS, False, True)
    response = _FINAL_PUT_RESPONSE[put_status]
    stored = response == ResponseCode.SUCCESS
    return EndTransactionOutcome(response, stored, stored)


@attrs.frozen
class RestoredMessage:
    """The real message a COMMIT stores (TXN-8)."""

    topic: str
    queue_id: int
    sys_flag: int
    properties: tuple[tuple[str, str], ...]


@CLAUSES.oracle("TXN-8")
def restore_real_message(
    properties: tuple[tuple[str, str], ...], sys_flag: int, profile: VersionProfile = DEFAULT_PROFILE
) -> RestoredMessage:
    """The message COMMIT stores, from the half message's ``properties`` and ``sys_flag`` (TXN-8).

    Topic and queue come from REAL_TOPIC and REAL_QID, which are then removed; the transaction bits become
    COMMIT; from 4.6.1 TRAN_MSG is removed as well (before, the committed message kept TRAN_MSG=true). Other
    properties (PGROUP, UNIQ_KEY, TRANSACTION_CHECK_TIMES, ...) are kept. ``properties`` are (name, value) pairs
    with distinct names, in the order returned.

    pre: 2 <= len(properties) <= 3
    pre: properties[0][0] == Property.REAL_TOPIC and properties[1] in ((Property.REAL_QUEUE_ID, "0"), (Property.REAL_QUEUE_ID, "15"))
    pre: len(properties) == 2 or properties[2][0] not in (Property.REAL_TOPIC, Property.REAL_QUEUE_ID)
    pre: 0 <= sys_flag < 2 ** 31
    post: transaction_value(__return__.sys_flag) == TRANSACTION_COMMIT_TYPE
    post: __return__.sys_flag - transaction_value(__return__.sys_flag) == sys_flag - transaction_value(sys_flag)
    post: (__return__.topic, str(__return__.queue_id)) == (properties[0][1], properties[1][1])
    post: all(k not in (Property.REAL_TOPIC, Property.REAL_QUEUE_ID) for k, _ in __return__.properties)
    post: len(__return__.properties) <= len(properties) - 2
    """  # noqa: E501
    dropped = (Property.REAL_TOPIC, Property.REAL_QUEUE_ID)
    if profile.at_least("4.6.1"):
        dropped = (*dropped, Property.TRANSACTION_PREPARED)
    topic = next(v for k, v in properties if k == Property.REAL_TOPIC)
    queue_id = next(v for k, v in properties if k == Property.REAL_QUEUE_ID)
    return RestoredMessage(
        topic=topic,
        queue_id=int(queue_id),
        sys_flag=reset_transaction_value(sys_flag, TRANSACTION_COMMIT_TYPE),
        properties=tuple((k, v) for k, v in properties if k not in dropped),
    )


@attrs.frozen
class OpMessage:
    """An op message (TXN-10)."""

    topic: str
    queue_id: int
    tag: str
    body: str


@CLAUSES.oracle("TXN-10")
def op_message(half_queue_id: int, half_queue_offset: int) -> OpMessage:
    """The op message that marks the half message at ``half_queue_offset`` resolved (TXN-10).

    pre: 0 <= half_queue_id < 1024
    pre: 0 <= half_queue_offset < 10 ** 5
    post: __return__.topic == TRANS_OP_HALF_TOPIC and __return__.tag == TRANS_OP_REMOVE_TAG
    post: __return__.queue_id == half_queue_id
    post: int(__return__.body) == half_queue_offset
    post: __return__.body[0] != "0" or __return__.body == "0"
    """
    return OpMessage(TRANS_OP_HALF_TOPIC, half_queue_id, TRANS_OP_REMOVE_TAG, str(half_queue_offset))


# ---------------------------------------------------------------------------------------------------------------
# Oracles: the check pass.


class CheckDecision(enum.Enum):
    """What one step of the check walk does with the half message at the current offset (TXN-14..TXN-19)."""

    STOP_TIME_LIMIT = "STOP_TIME_LIMIT"  # the pass ran past 60 s: stop here
    SKIP_DONE = "SKIP_DONE"  # its op is in the remove map: skip, op done
    DISCARD = "DISCARD"  # checked too often or too old: to TRANS_CHECK_MAX_TIME_TOPIC, move on
    STOP_FRESH = "STOP_FRESH"  # stored after the pass began: stop here
    STOP_NEW = "STOP_NEW"  # younger than the timeout: stop here
    IMMUNITY_DONE = "IMMUNITY_DONE"  # its TRAN_PREPARED_QUEUE_OFFSET is in the remove map: skip, op done
    IMMUNITY_PUT_BACK = "IMMUNITY_PUT_BACK"  # re-append with TRAN_PREPARED_QUEUE_OFFSET, move on, no check
    CHECK = "CHECK"  # re-append and ask the producer group, move on
    RETRY = "RETRY"  # the re-append failed: look at the same offset again
    FETCH_MORE_OPS = "FETCH_MORE_OPS"  # read the next op batch, look at the same offset again


#: Decisions after which the walk moves to the next offset.
ADVANCES = frozenset(
    {CheckDecision.SKIP_DONE, CheckDecision.DISCARD, CheckDecision.IMMUNITY_DONE, CheckDecision.IMMUNITY_PUT_BACK,
     CheckDecision.CHECK}
)
#: Decisions that end the walk.
STOPS = frozenset({CheckDecision.STOP_TIME_LIMIT, CheckDecision.STOP_FRESH, CheckDecision.STOP_NEW})


@CLAUSES.oracle("TXN-15", "TXN-23")
def next_check_times(check_times: int | None, check_max: int = TRANSACTION_CHECK_MAX) -> int | None:
    """The TRANSACTION_CHECK_TIMES a re-appended copy carries, or None if the message is discarded (TXN-15).

    Absent -> 1 (whatever ``check_max``); a value >= ``check_max`` -> discard; otherwise value + 1. So a
    message is re-appended at most max(check_max, 1) times (TXN-23). An unparsable value reads as -1.

    pre: -2 <= check_max <= 1000
    pre: check_times is None or -2 <= check_times <= 1000
    post: __return__ is None or __return__ <= max(check_max, 1)
    post: (__return__ is None) == (check_times is not None and check_times >= check_max)
    post: __return__ is None or check_times is None or __return__ == check_times + 1
    """
    if check_times is None:
        return 1
    if check_times >= check_max:
        return None
    return check_times + 1


@CLAUSES.oracle("TXN-18")
def check_immunity_ms(immunity_seconds: int | None, transaction_timeout: int = TRANSACTION_TIMEOUT_MS) -> int:
    """The immunity time (ms) of a half message with CHECK_IMMUNITY_TIME_IN_SECONDS ``immunity_seconds`` (TXN-18).

    No property -> the transaction timeout; -1 (also what an unparsable value reads as) -> the timeout;
    otherwise the value times 1000.

    pre: immunity_seconds is None or -10 ** 6 <= immunity_seconds <= 10 ** 6
    pre: 0 <= transaction_timeout <= 10 ** 9
    post: immunity_seconds in (None, -1) or __return__ == immunity_seconds * 1000
    post: immunity_seconds not in (None, -1) or __return__ == transaction_timeout
    """
    if immunity_seconds is None or immunity_seconds == -1:
        return transaction_timeout
    return immunity_seconds * 1000


@CLAUSES.oracle("TXN-12", "TXN-14", "TXN-15", "TXN-16", "TXN-17", "TXN-18", "TXN-19", "TXN-23")
def check_decision(
    now: int,
    pass_start: int,
    born: int,
    stored: int,
    in_remove_map: bool,
    check_times: int | None,
    immunity_seconds: int | None = None,
    prepared_offset: int | None = None,
    prepared_in_remove_map: bool = False,
    ops_empty: bool = True,
    last_op_born: int = 0,
    check_max: int = TRANSACTION_CHECK_MAX,
    transaction_timeout: int = TRANSACTION_TIMEOUT_MS,
    file_reserved_hours: int = FILE_RESERVED_TIME_HOURS,
    store_ok: bool = True,
) -> CheckDecision:
    """One step of the check walk at a half offset whose message was found (TXN-12, TXN-14..TXN-19).

    Times are ms: ``now`` (broker clock), ``pass_start``, the message's ``born`` (producer clock) and ``stored``
    timestamps; ``last_op_born`` is the born time of the last op message of the current batch (``ops_empty``:
    the last op read returned no messages). ``check_times``, ``immunity_seconds`` and ``prepared_offset`` are
    the TRANSACTION_CHECK_TIMES, CHECK_IMMUNITY_TIME_IN_SECONDS and TRAN_PREPARED_QUEUE_OFFSET properties
    (None: absent; -1: unparsable). ``store_ok`` is whether a re-append would succeed. Rules, in order: past
    ``TRANSACTION_MAX_PROCESS_TIME_MS`` stop (TXN-12); in the remove map skip (TXN-14); count or age -> discard
    (TXN-15, TXN-16); stored at or after the pass began -> stop (TXN-17); immunity (TXN-18); the check condition
    (TXN-19). A message that reached its maximum check count is never checked again (TXN-23).

    pre: 0 <= pass_start <= now
    post: not in_remove_map or __return__ in (CheckDecision.SKIP_DONE, CheckDecision.STOP_TIME_LIMIT)
    post: __return__ not in (CheckDecision.CHECK, CheckDecision.IMMUNITY_PUT_BACK) or ((check_times is None or check_times < check_max) and stored < pass_start and store_ok)
    post: __return__ != CheckDecision.DISCARD or (check_times is not None and check_times >= check_max) or now - born > file_reserved_hours * 3600 * 1000
    post: __return__ != CheckDecision.CHECK or not ops_empty or now - born <= -1 or now - born > (transaction_timeout if immunity_seconds in (None, -1) else immunity_seconds * 1000)
    post: __return__ != CheckDecision.STOP_NEW or (immunity_seconds is None and 0 <= now - born < transaction_timeout and stored < pass_start)
    post: __return__ != CheckDecision.IMMUNITY_PUT_BACK or now - born < (transaction_timeout if immunity_seconds in (None, -1) else immunity_seconds * 1000)
    """  # noqa: E501
    # The count and immunity rules are those of next_check_times and check_immunity_ms, written out so that
    # CrossHair can follow them (the tests check that the three agree).
    if now - pass_start > TRANSACTION_MAX_PROCESS_TIME_MS:
        return CheckDecision.STOP_TIME_LIMIT
    if in_remove_map:
        return CheckDecision.SKIP_DONE
    if check_times is not None and check_times >= check_max:
        return CheckDecision.DISCARD
    age = now - born
    if age > file_reserved_hours * 3600 * 1000:
        return CheckDecision.DISCARD
    if stored >= pass_start:
        return CheckDecision.STOP_FRESH
    if immunity_seconds is None or immunity_seconds == -1:
        immunity = transaction_timeout
    else:
        immunity = immunity_seconds * 1000
    if immunity_seconds is not None:
        if age < immunity:
            if prepared_offset is None:
                if store_ok:
                    return CheckDecision.IMMUNITY_PUT_BACK
            elif prepared_offset != -1:
                if prepared_in_remove_map:
                    return CheckDecision.IMMUNITY_DONE
                if store_ok:
                    return CheckDecision.IMMUNITY_PUT_BACK
            # -1, or the re-append failed: the check condition below decides.
    elif 0 <= age < transaction_timeout:
        return CheckDecision.STOP_NEW
    need_check = (
        (ops_empty and age > immunity)
        or (not ops_empty and last_op_born - pass_start > transaction_timeout)
        or age <= -1
    )
    if not need_check:
        return CheckDecision.FETCH_MORE_OPS
    return CheckDecision.CHECK if store_ok else CheckDecision.RETRY


@CLAUSES.oracle("TXN-16")
def discard_destination(random_value: int) -> tuple[str, int]:
    """Topic and queue a discarded half message is stored to, given the listener's random draw (TXN-16).

    ``DefaultTransactionalMessageCheckListener`` takes ``ThreadLocalRandom.nextInt(99999999)`` modulo the
    queue count of TRANS_CHECK_MAX_TIME_TOPIC, which it creates with one queue: always queue 0.

    pre: 0 <= random_value < 99999999
    post: __return__[0] == TRANS_CHECK_MAX_TIME_TOPIC
    post: __return__[1] == 0
    """
    return TRANS_CHECK_MAX_TIME_TOPIC, random_value % TRANS_CHECK_MAX_TIME_QUEUE_NUMS


@attrs.frozen
class OpScan:
    """The remove map (half offset -> op offset, sorted by half offset) and the done op offsets of a pass."""

    remove: tuple[tuple[int, int], ...] = ()
    done: tuple[int, ...] = ()


@CLAUSES.oracle("TXN-13")
def fill_op_remove_map(scan: OpScan, ops: tuple[tuple[int, int], ...], mini_offset: int) -> OpScan:
    """Add one batch of op messages to a pass's remove map and done list (TXN-13).

    ``ops`` are (op queue offset, half offset in the body) in op-queue order. An op naming a half offset below
    ``mini_offset`` (the half offset the pass started from) is done at once; any other is put in the remove
    map, where a later op for the same half offset replaces the earlier one (whose op offset is then in neither
    place, so the op offset cannot advance past it, TXN-20).

    pre: len(ops) <= 2 and len(scan.remove) <= 1 and len(scan.done) <= 1
    pre: all(h >= mini_offset for h, _ in scan.remove)
    pre: all(ops[k][0] == ops[0][0] + k for k in range(len(ops)))
    pre: not ops or (all(d < ops[0][0] for d in scan.done) and all(o < ops[0][0] for _, o in scan.remove))
    post: all(h >= mini_offset for h, _ in __return__.remove)
    post: all((o in __return__.done) == (h < mini_offset) for o, h in ops)
    post: all((h, o) in __return__.remove for n, (o, h) in enumerate(ops) if h >= mini_offset and all(h2 != h for _, h2 in ops[n + 1:]))
    """  # noqa: E501
    remove = list(scan.remove)
    done = list(scan.done)
    for op_offset, half_offset in ops:
        if half_offset < mini_offset:
            done.append(op_offset)
        else:
            # HashMap.put: a later op for the same half offset replaces the earlier one.
            remove = [(h, o) for h, o in remove if h != half_offset]
            remove.append((half_offset, op_offset))
    return OpScan(tuple(sorted(remove)), tuple(sorted(done)))


@CLAUSES.oracle("TXN-20")
def advance_op_offset(op_offset: int, done: tuple[int, ...]) -> int:
    """The op consume offset after a pass that started at ``op_offset`` and found ``done`` ops done (TXN-20).

    The done offsets are sorted and the offset advances while the next one equals it; the first gap (or a
    repeated offset) stops it, so an op not yet done is never passed.

    pre: len(done) <= 3
    pre: 0 <= op_offset <= 100 and all(op_offset <= d <= 100 for d in done)
    post: op_offset <= __return__ <= op_offset + len(done)
    post: all(o in done for o in range(op_offset, __return__))
    post: len(set(done)) != len(done) or __return__ not in done
    """
    new_offset = op_offset
    for d in sorted(done):
        if d != new_offset:
            break
        new_offset += 1
    return new_offset


# ---------------------------------------------------------------------------------------------------------------
# State machine: one broker, one producer group, a few transactional messages.
#
# Time runs in ticks of TICK_MS, one check interval each (RocketMQ: 60 s, with a 6 s timeout; the model scales
# the timeout and immunity times to its own interval): tick t begins with a check pass at t * TICK_MS, and
# everything else that happens in tick t happens at t * TICK_MS + EVENT_OFFSET_MS. So a message's age at a pass
# is never a whole number of ticks and the timeout and immunity comparisons never tie (a tie only delays the
# check by a millisecond in RocketMQ, see FETCH_MORE_OPS in _check_pass). A pass runs atomically: END_TRANSACTIONs
# land between passes, which makes every op a pass reads born before the pass began (so the last-op clause of
# TXN-19 is false), and a resolution that RocketMQ could see land mid-walk has the same effect here as one that
# lands just after the pass.

PRODUCER_GROUP = "TXN_PRODUCER_GROUP"
FOREIGN_GROUP = "OTHER_PRODUCER_GROUP"
REAL_TOPIC = "TopicTest"
TICK_MS = 1000
EVENT_OFFSET_MS = TICK_MS // 2


@attrs.frozen
class Config:
    """Model parameters: ``messages`` transactional sends, broker settings in ticks, race budgets.

    ``immunity`` gives each message's CHECK_IMMUNITY_TIME_IN_SECONDS (None: absent; with 1 s ticks a value
    is a number of ticks); ``duplicates`` bounds how many END_TRANSACTIONs the network may duplicate and
    ``forged`` how many COMMITs a producer of another group may send naming a half entry. Unless
    ``stale_checks``, a check still unanswered when the next check of the same message goes out is lost (a
    bound: RocketMQ may answer it late, which is the same race as a late END_TRANSACTION from the sender).
    """

    messages: int = 2
    check_max: int = 2
    timeout_ms: int = TICK_MS
    max_time: int = 4
    send_window: int = 1
    immunity: tuple[int | None, ...] = (None, None)
    op_batch: int = TRANSACTION_OP_BATCH
    duplicates: int = 1
    forged: int = 0
    stale_checks: bool = False
    profile: VersionProfile = DEFAULT_PROFILE


@attrs.frozen
class HalfEntry:
    """One entry of the half queue (the original half message or a re-appended copy); times in ms."""

    msg: int
    born: int
    stored: int
    check_times: int | None
    prepared_offset: int | None
    real_topic: str
    real_queue_id: str
    sys_flag: int


@attrs.frozen(order=True)
class EndTxnRequest:
    """An END_TRANSACTION in flight. In the model a half entry's commit-log offset is its half queue offset."""

    group: str
    commit_or_rollback: int
    tran_state_table_offset: int
    commit_log_offset: int
    from_check: bool


@attrs.frozen(order=True)
class CheckRequest:
    """A CHECK_TRANSACTION_STATE in flight to the producer group, naming the re-appended copy ``entry``."""

    msg: int
    entry: int


@attrs.frozen(order=True)
class RealMessage:
    """A message stored in its real topic by a COMMIT."""

    msg: int
    topic: str
    queue_id: int
    sys_flag: int
    properties: tuple[tuple[str, str], ...]


class Phase(enum.IntEnum):
    """Where the original sender is with one message."""

    IDLE = 0
    EXECUTING = 1  # half message stored, local transaction running
    RETURNED = 2  # executeLocalTransaction returned and its END_TRANSACTION went out


@attrs.frozen
class TxnState:
    """Broker, producer and network state, plus ghost counters the invariants read.

    ``ops`` are the half offsets named by the op messages, in op-queue order; ``discarded`` the half offsets
    moved to TRANS_CHECK_MAX_TIME_TOPIC. Ghosts: ``checks_sent`` and ``accepted`` (END_TRANSACTIONs answered
    SUCCESS) per message, and ``racy``, the messages one of whose END_TRANSACTIONs was duplicated or named an
    entry that a later copy had superseded when it was accepted (TXN-25).
    """

    cfg: Config
    now: int = 0
    phase: tuple[Phase, ...] = ()
    local: tuple[TransactionState | None, ...] = ()
    half: tuple[HalfEntry, ...] = ()
    ops: tuple[int, ...] = ()
    half_offset: int = 0
    op_offset: int = 0
    real: tuple[RealMessage, ...] = ()
    discarded: tuple[int, ...] = ()
    checks: tuple[CheckRequest, ...] = ()
    requests: tuple[EndTxnRequest, ...] = ()
    duplicates_left: int = 0
    forged_left: int = 0
    checks_sent: tuple[int, ...] = ()
    accepted: tuple[int, ...] = ()
    racy: frozenset[int] = frozenset()


@attrs.frozen
class SendHalf:
    """The producer sends message ``msg`` as a half message (stored at once)."""

    msg: int


@attrs.frozen
class LocalTransactionEnds:
    """executeLocalTransaction returns ``state`` for ``msg`` and the sender's END_TRANSACTION goes out.

    A COMMIT or ROLLBACK is final; after UNKNOW the local transaction decides later (:class:`LocalDecides`).
    A local commit that checks can see before the sender's END_TRANSACTION is sent is the same, for the
    broker, as that END_TRANSACTION being delivered late.
    """

    msg: int
    state: TransactionState


@attrs.frozen
class LocalDecides:
    """A local transaction that returned UNKNOW commits or rolls back; its state never changes again."""

    msg: int
    state: TransactionState


@attrs.frozen
class Tick:
    """A check interval passes: the clock moves to the next tick and the check service runs a pass."""


@attrs.frozen
class ProducerAnswers:
    """A producer of the group answers ``check`` from its local state and the broker processes the answer.

    Answering later is the same as answering at once and the END_TRANSACTION arriving late, since a local
    state only ever goes from undecided to final. ``twice``: the network duplicated the answer.
    """

    check: CheckRequest
    twice: bool = False


@attrs.frozen
class EndTransactionDelivered:
    """The broker processes ``request``; ``twice``: the network duplicated it and the copy follows at once.

    When the copy arrives does not matter to the broker: it finds the same half entry whenever it comes.
    """

    request: EndTxnRequest
    twice: bool = False


@attrs.frozen
class ForgedEndTransaction:
    """A producer of another group sends a COMMIT naming half entry ``entry``."""

    entry: int


Action = (
    SendHalf
    | LocalTransactionEnds
    | LocalDecides
    | Tick
    | ProducerAnswers
    | EndTransactionDelivered
    | ForgedEndTransaction
)


def initial_state(cfg: Config) -> TxnState:
    """Nothing sent yet."""
    n = cfg.messages
    return TxnState(
        cfg=cfg,
        phase=(Phase.IDLE,) * n,
        local=(None,) * n,
        duplicates_left=cfg.duplicates,
        forged_left=cfg.forged,
        checks_sent=(0,) * n,
        accepted=(0,) * n,
    )


def _set(t: tuple, i: int, v: object) -> tuple:
    return (*t[:i], v, *t[i + 1:])


def _remove_one(t: tuple, item: object) -> tuple:
    i = t.index(item)
    return (*t[:i], *t[i + 1:])


def _entries_of(state: TxnState, msg: int) -> list[int]:
    return [q for q, e in enumerate(state.half) if e.msg == msg]


def _resolved(state: TxnState, msg: int) -> bool:
    entries = set(_entries_of(state, msg))
    return any(q in entries for q in state.ops)


def _half_properties(entry: HalfEntry) -> tuple[tuple[str, str], ...]:
    props = [
        (Property.TRANSACTION_PREPARED, "true"),
        (Property.PRODUCER_GROUP, PRODUCER_GROUP),
        (Property.REAL_TOPIC, entry.real_topic),
        (Property.REAL_QUEUE_ID, entry.real_queue_id),
    ]
    if entry.check_times is not None:
        props.append((Property.TRANSACTION_CHECK_TIMES, str(entry.check_times)))
    return tuple(props)


@CLAUSES.oracle("TXN-4", "TXN-12", "TXN-21")
def enabled(state: TxnState, action: Action) -> bool:
    """Whether ``action`` can happen in ``state`` (TXN-4, TXN-12, TXN-21).

    Messages are sent in index order within the first ``send_window`` ticks; a local transaction returns once
    and decides at most once (TXN-4); time ends at ``max_time`` ticks, one check pass each (TXN-12); a producer
    answers only checks that were sent, in any order and as late as it likes (TXN-21).
    """
    match action:
        case SendHalf(msg=m):
            return (
                state.phase[m] == Phase.IDLE
                and all(p != Phase.IDLE for p in state.phase[:m])
                and state.now <= state.cfg.send_window
            )
        case LocalTransactionEnds(msg=m):
            return state.phase[m] == Phase.EXECUTING
        case LocalDecides(msg=m, state=s):
            return (
                state.phase[m] == Phase.RETURNED
                and state.local[m] is None
                and s in (TransactionState.COMMIT_MESSAGE, TransactionState.ROLLBACK_MESSAGE)
            )
        case Tick():
            return state.now < state.cfg.max_time
        case ProducerAnswers(check=c, twice=twice):
            return c in state.checks and (not twice or state.duplicates_left > 0)
        case EndTransactionDelivered(request=r, twice=twice):
            return r in state.requests and (not twice or state.duplicates_left > 0)
        case ForgedEndTransaction(entry=q):
            return state.forged_left > 0 and 0 <= q < len(state.half)
    return False


def _deliver(state: TxnState, request: EndTxnRequest) -> TxnState:
    q = request.commit_log_offset
    entry = state.half[q] if 0 <= q < len(state.half) else None
    outcome = end_transaction(
        request.commit_or_rollback,
        request.group,
        request.tran_state_table_offset,
        request.commit_log_offset,
        found=entry is not None,
        stored_group=PRODUCER_GROUP,
        stored_queue_offset=q,
        stored_commit_log_offset=q,
        from_transaction_check=request.from_check,
    )
    if entry is None or outcome.response != ResponseCode.SUCCESS:
        return state
    m = entry.msg
    if outcome.stores_real:
        restored = restore_real_message(_half_properties(entry), entry.sys_flag, state.cfg.profile)
        real = RealMessage(m, restored.topic, restored.queue_id, restored.sys_flag, restored.properties)
        state = attrs.evolve(state, real=tuple(sorted((*state.real, real))))
    if outcome.writes_op:
        state = attrs.evolve(state, ops=(*state.ops, int(op_message(0, q).body)))
    superseded = q != _entries_of(state, m)[-1]
    return attrs.evolve(
        state,
        accepted=_set(state.accepted, m, state.accepted[m] + 1),
        racy=state.racy | {m} if superseded else state.racy,
    )


def _deliver_maybe_twice(state: TxnState, request: EndTxnRequest, twice: bool) -> TxnState:
    state = _deliver(state, request)
    if not twice:
        return state
    state = _deliver(state, request)
    q = request.commit_log_offset
    racy = state.racy | {state.half[q].msg} if 0 <= q < len(state.half) else state.racy
    return attrs.evolve(state, duplicates_left=state.duplicates_left - 1, racy=racy)


def _read_ops(state: TxnState, scan: OpScan, op_from: int, mini_offset: int) -> tuple[OpScan, int, bool]:
    """fillOpRemoveMap over one batch from ``op_from``: the new scan, the next op offset, whether it was empty."""
    batch = state.ops[op_from:op_from + state.cfg.op_batch]
    if not batch:
        # NO_NEW_MSG: no message list, and the next begin offset stays where it was.
        return scan, op_from, True
    pairs = tuple((op_from + k, q) for k, q in enumerate(batch))
    return fill_op_remove_map(scan, pairs, mini_offset), op_from + len(batch), False


def _take_done(scan: OpScan, half_offset: int, count_done: bool) -> OpScan:
    remove = dict(scan.remove)
    op_offset = remove.pop(half_offset)
    done = tuple(sorted((*scan.done, op_offset))) if count_done else scan.done
    return OpScan(tuple(sorted(remove.items())), done)


def _check_pass(state: TxnState) -> TxnState:
    """One pass of TransactionalMessageServiceImpl.check over the half queue, at the start of the current tick."""
    cfg = state.cfg
    start = state.now * TICK_MS
    now_ms = start
    half = list(state.half)
    discarded = list(state.discarded)
    checks = list(state.checks)
    checks_sent = list(state.checks_sent)
    scan, op_next, ops_empty = _read_ops(state, OpScan(), state.op_offset, state.half_offset)
    i = state.half_offset
    while i < len(half):  # past the end: NO_NEW_MSG ends the walk
        entry = half[i]
        remove = dict(scan.remove)
        decision = check_decision(
            now=now_ms,
            pass_start=start,
            born=entry.born,
            stored=entry.stored,
            in_remove_map=i in remove,
            check_times=entry.check_times,
            immunity_seconds=cfg.immunity[entry.msg],
            prepared_offset=entry.prepared_offset,
            prepared_in_remove_map=entry.prepared_offset in remove,
            ops_empty=ops_empty,
            # Every op was born before this atomic pass began, so any such value gives the same decision.
            last_op_born=start,
            check_max=cfg.check_max,
            transaction_timeout=cfg.timeout_ms,
        )
        if decision in STOPS:
            break
        if decision is CheckDecision.FETCH_MORE_OPS:
            was_empty, op_before = ops_empty, op_next
            scan, op_next, ops_empty = _read_ops(state, scan, op_next, state.half_offset)
            if was_empty and ops_empty and op_next == op_before:
                # Nothing new to read: RocketMQ spins on this offset until the clock moves on.
                now_ms += 1
            continue
        if decision is CheckDecision.SKIP_DONE:
            scan = _take_done(scan, i, cfg.profile.at_least("4.6.0"))
        elif decision is CheckDecision.IMMUNITY_DONE:
            assert entry.prepared_offset is not None
            scan = _take_done(scan, entry.prepared_offset, True)
        elif decision is CheckDecision.DISCARD:
            discarded.append(i)
        else:
            # CHECK or IMMUNITY_PUT_BACK (RETRY needs a failing store, which the model does not have).
            prepared = entry.prepared_offset
            if decision is CheckDecision.IMMUNITY_PUT_BACK and prepared is None:
                prepared = i
            half.append(attrs.evolve(
                entry, stored=now_ms, check_times=next_check_times(entry.check_times, cfg.check_max),
                prepared_offset=prepared,
            ))
            if decision is CheckDecision.CHECK:
                if not cfg.stale_checks:
                    checks = [c for c in checks if c.msg != entry.msg]
                checks.append(CheckRequest(entry.msg, len(half) - 1))
                checks_sent[entry.msg] += 1
        i += 1
    return attrs.evolve(
        state,
        half=tuple(half),
        discarded=tuple(discarded),
        checks=tuple(sorted(checks)),
        checks_sent=tuple(checks_sent),
        half_offset=i,
        op_offset=advance_op_offset(state.op_offset, scan.done),
    )


@CLAUSES.oracle(
    "TXN-2", "TXN-4", "TXN-8", "TXN-9", "TXN-10", "TXN-11", "TXN-13", "TXN-14", "TXN-17", "TXN-19", "TXN-20",
    "TXN-21",
)
def step(state: TxnState, action: Action) -> TxnState:
    """The state after ``action`` (enabled in ``state``).

    Sending stores the rewritten half message (TXN-2); the sender's END_TRANSACTION names the original entry
    (TXN-4); delivery applies :func:`end_transaction`, storing the restored real message (TXN-8) and the op
    (TXN-9, TXN-10), with no memory of earlier resolutions (TXN-11); a pass reads op batches (TXN-13), walks
    the half queue with :func:`check_decision` (TXN-14, TXN-17, TXN-19) and commits both offsets (TXN-20);
    the producer answers a check about the copy it names (TXN-21).
    """
    require_enabled(enabled, state, action, Action)
    match action:
        case SendHalf(msg=m):
            rewrite = half_message_rewrite(REAL_TOPIC, m, TRANSACTION_PREPARED_TYPE)
            now_ms = state.now * TICK_MS + EVENT_OFFSET_MS
            entry = HalfEntry(
                m, now_ms, now_ms, None, None, rewrite.real_topic, rewrite.real_queue_id, rewrite.sys_flag
            )
            return attrs.evolve(state, half=(*state.half, entry), phase=_set(state.phase, m, Phase.EXECUTING))
        case LocalTransactionEnds(msg=m, state=s):
            kind = first_end_transaction_type(SendStatus.SEND_OK, s)
            local = None if s is TransactionState.UNKNOW else s
            state = attrs.evolve(state, phase=_set(state.phase, m, Phase.RETURNED), local=_set(state.local, m, local))
            if kind == TRANSACTION_NOT_TYPE:
                # The broker ignores UNKNOW (TXN-6): sending it or not leaves the same state.
                return state
            q = _entries_of(state, m)[0]
            request = EndTxnRequest(PRODUCER_GROUP, kind, q, q, False)
            return attrs.evolve(state, requests=tuple(sorted((*state.requests, request))))
        case LocalDecides(msg=m, state=s):
            return attrs.evolve(state, local=_set(state.local, m, s))
        case Tick():
            return _check_pass(attrs.evolve(state, now=state.now + 1))
        case ProducerAnswers(check=c, twice=twice):
            state = attrs.evolve(state, checks=_remove_one(state.checks, c))
            kind = check_answer(state.local[c.msg] or TransactionState.UNKNOW)
            if kind not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
                return state
            return _deliver_maybe_twice(state, EndTxnRequest(PRODUCER_GROUP, kind, c.entry, c.entry, True), twice)
        case EndTransactionDelivered(request=r, twice=twice):
            return _deliver_maybe_twice(attrs.evolve(state, requests=_remove_one(state.requests, r)), r, twice)
        case ForgedEndTransaction(entry=q):
            request = EndTxnRequest(FOREIGN_GROUP, TRANSACTION_COMMIT_TYPE, q, q, False)
            return attrs.evolve(
                state, requests=tuple(sorted((*state.requests, request))), forged_left=state.forged_left - 1
            )
    raise ValueError(f"unknown action {action!r}")


def candidate_actions(state: TxnState) -> Iterable[Action]:
    """Every action that may be enabled in ``state``."""
    for m in range(state.cfg.messages):
        yield SendHalf(m)
        for s in TransactionState:
            yield LocalTransactionEnds(m, s)
        yield LocalDecides(m, TransactionState.COMMIT_MESSAGE)
        yield LocalDecides(m, TransactionState.ROLLBACK_MESSAGE)
    yield Tick()
    for c in sorted(set(state.checks)):
        yield ProducerAnswers(c)
        yield ProducerAnswers(c, twice=True)
    for r in sorted(set(state.requests)):
        yield EndTransactionDelivered(r)
        yield EndTransactionDelivered(r, twice=True)
    for q in range(len(state.half)):
        yield ForgedEndTransaction(q)


# ---------------------------------------------------------------------------------------------------------------
# Invariants.


def _only_committed_reach_real_topic(state: TxnState) -> bool:
    return all(
        state.local[r.msg] is TransactionState.COMMIT_MESSAGE and consumable(r.sys_flag) for r in state.real
    )


def _real_messages_faithful(state: TxnState) -> bool:
    keeps_tran_msg = not state.cfg.profile.at_least("4.6.1")
    for r in state.real:
        names = {k for k, _ in r.properties}
        if (r.topic, r.queue_id) != (REAL_TOPIC, r.msg):
            return False
        if transaction_value(r.sys_flag) != TRANSACTION_COMMIT_TYPE:
            return False
        if Property.REAL_TOPIC in names or Property.REAL_QUEUE_ID in names:
            return False
        if (Property.TRANSACTION_PREPARED in names) != keeps_tran_msg:
            return False
    return True


def _checks_bounded(state: TxnState) -> bool:
    bound = max(state.cfg.check_max, 1)
    if any(n > bound for n in state.checks_sent):
        return False
    return all(e.check_times is None or e.check_times <= bound for e in state.half)


def _discarded_message_not_re_appended(state: TxnState) -> bool:
    return all(_entries_of(state, state.half[q].msg)[-1] == q for q in state.discarded)


def _half_offset_safe(state: TxnState) -> bool:
    discarded = {state.half[q].msg for q in state.discarded}
    for m in range(state.cfg.messages):
        entries = _entries_of(state, m)
        if not entries or m in discarded or _resolved(state, m):
            continue
        if entries[-1] < state.half_offset:
            return False
    return True


def _op_offset_safe(state: TxnState) -> bool:
    if not 0 <= state.op_offset <= len(state.ops):
        return False
    return all(q < state.half_offset for q in state.ops[:state.op_offset])


def _resolved_at_most_once(state: TxnState) -> bool:
    for m in range(state.cfg.messages):
        if m in state.racy:
            continue
        if state.accepted[m] > 1 or sum(1 for r in state.real if r.msg == m) > 1:
            return False
    return True


INVARIANTS: tuple[Invariant[TxnState], ...] = (
    Invariant("only committed messages reach the real topic", ("TXN-22", "TXN-3", "TXN-7", "TXN-9", "TXN-21"),
              _only_committed_reach_real_topic),
    Invariant("real messages keep the original topic and queue", ("TXN-8", "TXN-2"), _real_messages_faithful),
    Invariant("checks per message are bounded", ("TXN-23", "TXN-15"), _checks_bounded),
    Invariant("a discarded message is not re-appended", ("TXN-23", "TXN-16"), _discarded_message_not_re_appended),
    Invariant("the half offset never skips an unresolved message", ("TXN-24", "TXN-17", "TXN-18", "TXN-19"),
              _half_offset_safe),
    Invariant("the op offset never passes a pending op", ("TXN-20", "TXN-13", "TXN-14"), _op_offset_safe),
    Invariant("race-free messages are resolved at most once", ("TXN-25", "TXN-11", "TXN-13", "TXN-14"),
              _resolved_at_most_once),
)


def _delivered(before: TxnState, action: Action) -> tuple[EndTxnRequest | None, int]:
    """The END_TRANSACTION ``action`` makes the broker process, and how many times."""
    match action:
        case EndTransactionDelivered(request=r, twice=twice):
            return r, 2 if twice else 1
        case ProducerAnswers(check=c, twice=twice):
            kind = check_answer(before.local[c.msg] or TransactionState.UNKNOW)
            if kind in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
                return EndTxnRequest(PRODUCER_GROUP, kind, c.entry, c.entry, True), 2 if twice else 1
    return None, 0


def _real_only_from_accepted_commit(before: TxnState, action: Action, after: TxnState) -> bool:
    grown = len(after.real) - len(before.real)
    if grown == 0:
        return True
    request, times = _delivered(before, action)
    return (
        request is not None
        and grown == times
        and request.commit_or_rollback == TRANSACTION_COMMIT_TYPE
        and request.group == PRODUCER_GROUP
        and len(after.ops) == len(before.ops) + times
    )


def _op_names_resolved_entry(before: TxnState, action: Action, after: TxnState) -> bool:
    grown = len(after.ops) - len(before.ops)
    if grown == 0:
        return True
    request, times = _delivered(before, action)
    return (
        request is not None
        and grown == times
        and all(q == request.tran_state_table_offset for q in after.ops[-grown:])
        and request.commit_or_rollback in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE)
    )


def _offsets_monotone(before: TxnState, action: Action, after: TxnState) -> bool:
    return after.half_offset >= before.half_offset and after.op_offset >= before.op_offset


def _checks_name_new_copies(before: TxnState, action: Action, after: TxnState) -> bool:
    sent = sum(after.checks_sent) - sum(before.checks_sent)
    if sent == 0:
        return True
    if not isinstance(action, Tick):
        return False
    new = [c for c in after.checks if c.entry >= len(before.half)]
    if len(new) != sent:
        return False
    for c in new:
        copy = after.half[c.entry]
        sources = [e for e in after.half[:c.entry] if e.msg == c.msg]
        source = sources[-1]
        if copy.msg != c.msg or copy.born != source.born:
            return False
        if copy.check_times != next_check_times(source.check_times, before.cfg.check_max):
            return False
    return True


STEP_INVARIANTS: tuple[StepInvariant[TxnState, Action], ...] = (
    StepInvariant("only an accepted COMMIT stores a real message", ("TXN-8", "TXN-9", "TXN-11", "TXN-7"),
                  _real_only_from_accepted_commit),
    StepInvariant("an op names the resolved entry", ("TXN-10", "TXN-9"), _op_names_resolved_entry),
    StepInvariant("half and op offsets never go back", ("TXN-20",), _offsets_monotone),
    StepInvariant("a check names a fresh copy with the next count", ("TXN-19", "TXN-15", "TXN-21"),
                  _checks_name_new_copies),
)


def model(
    messages: int = 2,
    check_max: int = 2,
    timeout_ms: int = TICK_MS,
    max_time: int = 4,
    send_window: int = 1,
    immunity: tuple[int | None, ...] | None = None,
    op_batch: int = TRANSACTION_OP_BATCH,
    duplicates: int = 1,
    forged: int = 0,
    stale_checks: bool = False,
    profile: VersionProfile = DEFAULT_PROFILE,
) -> Model[TxnState, Action]:
    """The transaction machine at small bounds (defaults: 2 messages, checkMax 2, timeout 1 tick, 4 ticks)."""
    if immunity is None:
        immunity = (None,) * messages
    cfg = Config(
        messages, check_max, timeout_ms, max_time, send_window, immunity, op_batch, duplicates, forged,
        stale_checks, profile,
    )
    return Model(
        area="transaction_check",
        bounds=(
            f"{messages} messages sent by tick {send_window}, checkMax {check_max}, timeout {timeout_ms} ms, "
            f"{max_time} ticks of {TICK_MS} ms, "
            f"immunity {immunity}, op batch {op_batch}, {duplicates} duplicate(s), {forged} forged COMMIT(s), "
            f"{'stale' if stale_checks else 'no stale'} check answers, RocketMQ {profile}"
        ),
        initial=(initial_state(cfg),),
        actions=candidate_actions,
        enabled=enabled,
        step=step,
        invariants=INVARIANTS,
        step_invariants=STEP_INVARIANTS,
    )
