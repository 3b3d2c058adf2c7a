"""Transactional messages on the broker (RocketMQ 4.9.8 ``TransactionalMessageBridge`` and
``EndTransactionProcessor``); the check service is :mod:`rocketspec.refimpl.broker.transaction_check`, whose names
are importable from here too.

Half messages (``TransactionalMessageBridge.parseHalfMessageInner``): a prepared message is stored in
``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with REAL_TOPIC / REAL_QID and its transaction sysFlag bits cleared, so no
consumer sees it.

END_TRANSACTION (``EndTransactionProcessor``): a slave answers SLAVE_NOT_AVAILABLE; state 0 (unknown) does nothing;
commit and rollback read the half message at ``commitLogOffset`` (SYSTEM_ERROR "Find prepared transaction message
failed"), check its PGROUP, queue offset and commit-log offset against the header (SYSTEM_ERROR "The producer group
wrong" / "The transaction state table offset wrong" / "The commit log offset wrong"); commit stores the real message
(``endMessageTransaction``: real topic and queue, commit sysFlag, preparedTransactionOffset = the half's commit-log
offset, the half's properties as stored) and, once stored, the op message; rollback stores only the op message. The
op message (``addRemoveTagInTransactionOp``) goes to ``RMQ_SYS_TRANS_OP_HALF_TOPIC``, the half's queue id, tag "d",
body = the half's queue offset in decimal. ``last_end_header`` is the header of the last END_TRANSACTION processed
(read-only, for observers).
"""

from __future__ import annotations

import attrs

from rocketspec.refimpl.broker.services import BrokerServices
from rocketspec.refimpl.broker.transaction_check import (
    CheckedMessage,
    PullResult,
    TransactionCheckService,
    calculate_op_offset,
    immunity_time_ms,
)
from rocketspec.refimpl.events import TxnEnd, TxnHalf
from rocketspec.refimpl.message import MessageExt
from rocketspec.refimpl.remoting import Channel, HeaderError, RemotingCommand
from rocketspec.refimpl.store import MessageToStore, PutResult
from rocketspec.spec.java import parse_long
from rocketspec.spec.protocol import (
    STORED_PUT_STATUSES,
    SYSFLAG_TRANSACTION_MASK,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_OP_REMOVE_TAG,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    Property,
    PutMessageStatus,
    ResponseCode,
    TransactionState,
)

__all__ = ["CheckedMessage", "EndTransactionHeader", "PullResult", "TransactionService", "calculate_op_offset",
           "immunity_time_ms"]

_STATE_NAMES = {
    TRANSACTION_NOT_TYPE: TransactionState.UNKNOW.value,
    TRANSACTION_COMMIT_TYPE: TransactionState.COMMIT_MESSAGE.value,
    TRANSACTION_ROLLBACK_TYPE: TransactionState.ROLLBACK_MESSAGE.value,
}

_ILLEGAL_REMARK = ("The message is illegal, maybe msg body or properties length not matched. msg body length limit "
                   "{}B, msg properties length limit 32KB.")
# sendFinalMessage: a store status that is not "stored" -> (response code, remark; {} is maxMessageSize).
_FINAL_PUT_FAILURES: dict[PutMessageStatus, tuple[int, str]] = {
    PutMessageStatus.CREATE_MAPEDFILE_FAILED: (ResponseCode.SYSTEM_ERROR, "Create mapped file failed."),
    PutMessageStatus.MESSAGE_ILLEGAL: (ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL_REMARK),
    PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: (ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL_REMARK),
    PutMessageStatus.SERVICE_NOT_AVAILABLE: (ResponseCode.SERVICE_NOT_AVAILABLE, "Service not available now."),
    PutMessageStatus.OS_PAGECACHE_BUSY: (ResponseCode.SYSTEM_ERROR, "OS page cache busy, please try another machine"),
    PutMessageStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}


@attrs.frozen
class EndTransactionHeader:
    """``EndTransactionRequestHeader`` (``checkFields``: commitOrRollback must be 0, 8 or 12)."""

    producer_group: str
    tran_state_table_offset: int
    commit_log_offset: int
    commit_or_rollback: int
    msg_id: str
    transaction_id: str | None = None
    from_transaction_check: bool = False

    @classmethod
    def parse(cls, request: RemotingCommand) -> EndTransactionHeader:
        header = cls(
            producer_group=request.require("producerGroup"),
            tran_state_table_offset=request.require_int("tranStateTableOffset"),
            commit_log_offset=request.require_int("commitLogOffset"),
            commit_or_rollback=request.require_int("commitOrRollback"),
            msg_id=request.require("msgId"),
            transaction_id=request.field("transactionId"),
            from_transaction_check=request.bool_field("fromTransactionCheck"),
        )
        if header.commit_or_rollback not in _STATE_NAMES:
            raise HeaderError("commitOrRollback field wrong")
        return header

class TransactionService(TransactionCheckService):
    """Half messages, END_TRANSACTION and (inherited) the transaction check service of one broker."""

    def __init__(self, broker: BrokerServices) -> None:
        super().__init__(broker)
        self.last_end_header: EndTransactionHeader | None = None

    # ----------------------------------------------------------------------------------------------- half messages
    def to_half_message(self, msg: MessageToStore) -> MessageToStore:
        """``parseHalfMessageInner``: REAL_TOPIC / REAL_QID recorded, transaction bits cleared, half topic queue 0."""
        props = dict(msg.properties)
        props[Property.REAL_TOPIC] = msg.topic
        props[Property.REAL_QUEUE_ID] = str(msg.queue_id)
        return attrs.evolve(
            msg,
            topic=TRANS_HALF_TOPIC,
            queue_id=0,
            properties=props,
            sys_flag=(msg.sys_flag & ~SYSFLAG_TRANSACTION_MASK) | TRANSACTION_NOT_TYPE,
            properties_text=None,  # re-encoded from the map: WAIT is written
        )

    def after_half_stored(self, msg: MessageToStore, result: PutResult) -> None:
        """Record a stored half message (``TxnHalf``); the send processor calls this after storing one."""
        if result.status not in STORED_PUT_STATUSES:
            return
        props = msg.properties
        unique_key = props.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        self.broker.events.emit(TxnHalf(
            node=self.broker.name,
            group=props.get(Property.PRODUCER_GROUP) or "",
            topic=props.get(Property.REAL_TOPIC) or msg.topic,
            msg_id=unique_key or result.offset_msg_id,
            transaction_id=unique_key or "",
            offset=result.queue_offset,
        ))

    # ----------------------------------------------------------------------------------------------- END_TRANSACTION
    def end_transaction(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        """END_TRANSACTION (clients send it oneway: then nothing is answered, but the outcome is applied)."""
        header = EndTransactionHeader.parse(request)
        self.last_end_header = header
        response, result = self._end(request, header)
        self.broker.events.emit(TxnEnd(
            node=self.broker.name,
            group=header.producer_group,
            msg_id=header.msg_id,
            transaction_id=header.transaction_id or "",
            state=_STATE_NAMES[header.commit_or_rollback],
            from_check=header.from_transaction_check,
            result=result,
        ))
        return None if request.is_oneway else response

    def _end(self, request: RemotingCommand, header: EndTransactionHeader) -> tuple[RemotingCommand | None, str]:
        """``EndTransactionProcessor.processRequest``: the response (None = no answer) and the outcome text."""
        if not self.broker.is_master():
            return request.response(ResponseCode.SLAVE_NOT_AVAILABLE), ResponseCode.SLAVE_NOT_AVAILABLE.name
        if header.commit_or_rollback == TRANSACTION_NOT_TYPE:
            return None, "IGNORED"
        half = self.broker.store.look_message(header.commit_log_offset)
        remark = self._check_prepare_message(half, header)
        if remark is not None:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=remark), _error_text(
                ResponseCode.SYSTEM_ERROR, remark)
        assert half is not None
        if header.commit_or_rollback == TRANSACTION_ROLLBACK_TYPE:
            self._delete_prepare_message(half)
            return request.response(ResponseCode.SUCCESS), "ROLLED_BACK"
        try:
            inner = self._end_message_transaction(half, header)
        except ValueError as error:  # a half message without a usable REAL_TOPIC / REAL_QID: Java throws
            remark = f"java.lang.NumberFormatException: {error}"
            return request.response(ResponseCode.SYSTEM_ERROR, remark=remark), _error_text(
                ResponseCode.SYSTEM_ERROR, remark)
        code, remark = self._send_final_message(inner)
        if code != ResponseCode.SUCCESS:
            return request.response(code, remark=remark), _error_text(code, remark)
        self._delete_prepare_message(half)
        return request.response(ResponseCode.SUCCESS), "COMMITTED"

    @staticmethod
    def _check_prepare_message(half: MessageExt | None, header: EndTransactionHeader) -> str | None:
        """``checkPrepareMessage``: the SYSTEM_ERROR remark when the half message does not match, else None."""
        if half is None:
            return "Find prepared transaction message failed"
        group = half.properties.get(Property.PRODUCER_GROUP)
        if group is None:
            # pgroupRead.equals(...) on a message without PGROUP: a NullPointerException becomes SYSTEM_ERROR.
            return "java.lang.NullPointerException"
        if group != header.producer_group:
            return "The producer group wrong"
        if half.queue_offset != header.tran_state_table_offset:
            return "The transaction state table offset wrong"
        if half.commit_log_offset != header.commit_log_offset:
            return "The commit log offset wrong"
        return None

    @staticmethod
    def _end_message_transaction(half: MessageExt, header: EndTransactionHeader) -> MessageToStore:
        """``endMessageTransaction``: the real message. Its stored properties are the half's as stored (RocketMQ
        clears REAL_TOPIC, REAL_QID and TRAN_MSG only after writing the properties string, so they stay)."""
        props = dict(half.properties)
        topic = props.get(Property.REAL_TOPIC)
        queue_id = parse_long(props.get(Property.REAL_QUEUE_ID), 32)
        if topic is None or queue_id is None:
            raise ValueError(f"For input string: \"{props.get(Property.REAL_QUEUE_ID)}\"")
        return MessageToStore(
            topic=topic,
            queue_id=queue_id,
            body=half.body,
            flag=half.flag,
            properties=props,
            sys_flag=(half.sys_flag & ~SYSFLAG_TRANSACTION_MASK) | TRANSACTION_COMMIT_TYPE,
            born_timestamp=half.born_timestamp,
            born_host=half.born_host,
            reconsume_times=half.reconsume_times,
            prepared_transaction_offset=header.commit_log_offset,
        )

    def _send_final_message(self, inner: MessageToStore) -> tuple[int, str | None]:
        """``sendFinalMessage``: the store's status as (response code, remark)."""
        status = self.broker.put_message(inner).status
        if status in STORED_PUT_STATUSES:
            return ResponseCode.SUCCESS, None
        code, remark = _FINAL_PUT_FAILURES.get(status, (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"))
        return code, remark.format(self.broker.config.max_message_size)

    def _delete_prepare_message(self, half: MessageExt) -> None:
        """``deletePrepareMessage`` → ``addRemoveTagInTransactionOp``: the op message for the half's queue offset.

        Its stored properties are ``Message(topic, "d", body)``'s: WAIT=true (in Java's HashMap order) and TAGS=d.
        """
        self.broker.put_message(MessageToStore(
            topic=TRANS_OP_HALF_TOPIC,
            queue_id=half.queue_id,
            body=str(half.queue_offset).encode("utf-8"),
            properties={Property.WAIT_STORE_MSG_OK: "true", Property.TAGS: TRANS_OP_REMOVE_TAG},
            born_timestamp=self.broker.runtime.now_ms(),
            born_host=self.broker.addr,
        ))
        self.op_written()


def _error_text(code: int, remark: str | None) -> str:
    return f"{ResponseCode(code).name}: {remark}" if remark else ResponseCode(code).name
