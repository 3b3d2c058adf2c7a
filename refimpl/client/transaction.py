"""The transactional producer (``TransactionMQProducer``; ``DefaultMQProducerImpl.sendMessageInTransaction``,
``endTransaction``, ``checkTransactionState`` of 4.9.8).

``send_in_transaction``: the delay level is dropped (transactions ignore it), the message is checked, marked
``TRAN_MSG=true`` and ``PGROUP=<group>``, and sent SYNC as a half message (sysFlag 0x4). SEND_OK → the local
transaction runs (user code, ``runtime.run_user``); it returning None or raising counts as UNKNOW. A
FLUSH_DISK_TIMEOUT / FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE half message is rolled back. Then END_TRANSACTION goes
oneway to the master of the half message's broker: producerGroup, tranStateTableOffset = the half message's queue
offset, commitLogOffset decoded from the offset message id, msgId = the UNIQ_KEY, transactionId from the send
result, commitOrRollback 8 / 12 / 0, fromTransactionCheck=false. A failing END_TRANSACTION is only logged.

A broker's CHECK_TRANSACTION_STATE runs the checker (user code) on the half message and answers END_TRANSACTION
oneway with the offsets of the check request, msgId = the message's UNIQ_KEY (else its msg id), the request's
transactionId and fromTransactionCheck=true; a raising checker answers UNKNOW with the exception in the remark, a
checker returning None answers nothing (Java's switch on a null state throws).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs

from rocketspec.refimpl.client.config import ProducerConfig
from rocketspec.refimpl.client.errors import MQClientError
from rocketspec.refimpl.client.instance import ClientInstance
from rocketspec.refimpl.client.producer import Producer, SendResult
from rocketspec.refimpl.client.sending import _Outgoing, _Send
from rocketspec.refimpl.client.validators import check_message
from rocketspec.refimpl.events import TxnEnd
from rocketspec.refimpl.message import Message, MessageExt, decode_offset_message_id
from rocketspec.refimpl.remoting import HeaderError, RemotingCommand
from rocketspec.refimpl.runtime import Future
from rocketspec.spec.protocol import (
    PROPERTY_TRANSACTION_ID,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    CommunicationMode,
    Property,
    RequestCode,
    SendStatus,
    TransactionState,
)

Executor = Callable[[Message, object], "TransactionState | None"]
Checker = Callable[[MessageExt], "TransactionState | None"]

_COMMIT_OR_ROLLBACK = {
    TransactionState.COMMIT_MESSAGE: TRANSACTION_COMMIT_TYPE,
    TransactionState.ROLLBACK_MESSAGE: TRANSACTION_ROLLBACK_TYPE,
    TransactionState.UNKNOW: TRANSACTION_NOT_TYPE,
}


@attrs.frozen
class TransactionSendResult(SendResult):
    """``TransactionSendResult``: the half message's send result and the local transaction's state."""

    local_transaction_state: TransactionState = TransactionState.UNKNOW


def _exception_simple_desc(error: BaseException) -> str:
    """``RemotingHelper.exceptionSimpleDesc``-like: the exception and where it was raised."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = f", {tb.tb_frame.f_code.co_name}:{tb.tb_lineno}" if tb is not None else ""
    return f"{type(error).__name__}: {error}{where}"


class TransactionProducer(Producer):
    """A producer that sends half messages and resolves them with a local transaction executor and checker."""

    role = "transaction_producer"

    def __init__(self, instance: ClientInstance, config: ProducerConfig, executor: Executor, checker: Checker
                 ) -> None:
        super().__init__(instance, config)
        self.executor = executor
        self.checker = checker

    # sendMessageInTransaction ---------------------------------------------------------------------------------------
    def send_in_transaction(self, msg: Message, arg: object = None) -> TransactionSendResult:
        return self.runtime.wait(self.runtime.submit(lambda: self._send_in_transaction(msg, arg)))

    def _send_in_transaction(self, msg: Message, arg: object) -> Future[TransactionSendResult]:
        outcome: Future[TransactionSendResult] = Future()
        if self.executor is None:
            outcome.set_exception(MQClientError("tranExecutor is null"))
            return outcome
        try:
            if msg is None or not isinstance(msg, Message):
                raise MQClientError("the message is null")
            msg.remove_property(Property.DELAY_TIME_LEVEL)  # "ignore DelayTimeLevel parameter"
            check_message(msg, self.config.max_message_size)
        except MQClientError as error:
            outcome.set_exception(error)
            return outcome
        msg.put_property(Property.TRANSACTION_PREPARED, "true")
        msg.put_property(Property.PRODUCER_GROUP, self.group)
        half: Future[SendResult | None] = Future()
        _Send(self, _Outgoing.of(msg), CommunicationMode.SYNC, self.config.send_msg_timeout_ms, half, msg).default()

        def sent(f: Future[SendResult | None]) -> None:
            error = f.exception()
            if error is not None:
                outcome.set_exception(MQClientError("send message Exception", cause=error))
                return
            result = f.result()
            assert result is not None
            if result.status is SendStatus.SEND_OK:
                if result.transaction_id is not None:
                    msg.put_property(PROPERTY_TRANSACTION_ID, result.transaction_id)

                def executed(state: TransactionState | None, failure: BaseException | None) -> None:
                    if failure is not None or state is None:
                        state = TransactionState.UNKNOW
                    self._finish(msg, result, state, failure, outcome)

                self.runtime.run_user(lambda: self.executor(msg, arg), executed)
            else:
                self._finish(msg, result, TransactionState.ROLLBACK_MESSAGE, None, outcome)

        half.add_done_callback(sent)
        return outcome

    def _finish(self, msg: Message, result: SendResult, state: TransactionState, failure: BaseException | None,
                outcome: Future[TransactionSendResult]) -> None:
        remark = f"executeLocalTransactionBranch exception: {failure!r}" if failure is not None else None
        self._end_transaction(result, state, remark)
        outcome.set_result(TransactionSendResult(
            status=result.status, msg_id=result.msg_id, offset_msg_id=result.offset_msg_id, queue=result.queue,
            queue_offset=result.queue_offset, transaction_id=result.transaction_id, region_id=result.region_id,
            trace_on=result.trace_on, local_transaction_state=state,
        ))

    def _end_transaction(self, result: SendResult, state: TransactionState, remark: str | None) -> None:
        """``DefaultMQProducerImpl.endTransaction``: END_TRANSACTION oneway; a failure is only logged."""
        offset_id = result.offset_msg_id if result.offset_msg_id is not None else result.msg_id
        try:
            _host, _port, commit_log_offset = decode_offset_message_id(offset_id)
        except ValueError:
            return  # Java: UnknownHostException from decodeMessageId, logged by sendMessageInTransaction
        broker_name = result.queue.broker_name
        addr = self.instance.find_broker_addr(broker_name)
        fields = {
            "producerGroup": self.group,
            "tranStateTableOffset": result.queue_offset,
            "commitLogOffset": commit_log_offset,
            "commitOrRollback": _COMMIT_OR_ROLLBACK[state],
            "fromTransactionCheck": False,
            "msgId": result.msg_id,
            "transactionId": result.transaction_id,
            "bname": broker_name,
        }
        self._send_end_transaction(addr, fields, remark)
        self.events.emit(TxnEnd(node=self.client_id, group=self.group, msg_id=result.msg_id,
                                transaction_id=result.transaction_id or "", state=state.value, from_check=False))

    def _send_end_transaction(self, addr: str | None, fields: Mapping[str, object], remark: str | None) -> None:
        cfg = self.instance.config
        request = RemotingCommand.request(RequestCode.END_TRANSACTION, fields, oneway=True, language=cfg.language,
                                          version=cfg.version)
        if remark is not None:
            request = attrs.evolve(request, remark=remark)
        self.instance.invoke_oneway(addr, request)

    # checkTransactionState ------------------------------------------------------------------------------------------
    def check_transaction_state(self, broker_addr: str, message: MessageExt, request: RemotingCommand) -> None:
        """The broker asks about a half message: run the checker, answer END_TRANSACTION (from check)."""
        try:
            tran_state_table_offset = request.int_field("tranStateTableOffset")
            commit_log_offset = request.int_field("commitLogOffset")
        except HeaderError:
            return  # Java: RemotingCommandException decoding the header, nothing answered

        def checked(state: TransactionState | None, failure: BaseException | None) -> None:
            if failure is not None:
                state = TransactionState.UNKNOW
            if state is None:
                return
            unique_key = message.properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or message.msg_id
            transaction_id = request.field("transactionId")
            fields = {
                "producerGroup": self.group,
                "tranStateTableOffset": tran_state_table_offset,
                "commitLogOffset": commit_log_offset,
                "commitOrRollback": _COMMIT_OR_ROLLBACK[state],
                "fromTransactionCheck": True,
                "msgId": unique_key,
                "transactionId": transaction_id,
                "bname": request.field("bname"),
            }
            remark = None
            if failure is not None:
                remark = "checkLocalTransactionState Exception: " + _exception_simple_desc(failure)
            self._send_end_transaction(broker_addr, fields, remark)
            self.events.emit(TxnEnd(node=self.client_id, group=self.group, msg_id=unique_key,
                                    transaction_id=transaction_id or "", state=state.value, from_check=True))

        self.runtime.run_user(lambda: self.checker(message), checked)
