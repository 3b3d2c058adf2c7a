"""Pulling messages and asking brokers about queue offsets (``PullAPIWrapper``, ``MQClientAPIImpl``, ``MQAdminImpl``).

``PullAPIWrapper.pull_kernel`` builds PULL_MESSAGE (REFERENCE §A), sends it to the broker the last answer suggested
(the master at first), waits ``timeout_ms`` for a held (long-polling) answer and maps the response code to a
``PullStatus``: SUCCESS → FOUND, PULL_NOT_FOUND → NO_NEW_MSG, PULL_RETRY_IMMEDIATELY → NO_MATCHED_MSG,
PULL_OFFSET_MOVED → OFFSET_ILLEGAL, anything else → ``MQBrokerError``. ``process_pull_result`` decodes the body,
filters again by tags (the broker filtered by tag hash codes only) and stamps MIN_OFFSET / MAX_OFFSET on each
message. ``MQAdmin`` asks the master of a queue's broker for its max / min offset or the offset of a timestamp.
"""

from __future__ import annotations

from typing import Any

import attrs

from rocketspec.refimpl.client.consumer_config import SubscriptionData
from rocketspec.refimpl.client.errors import MQBrokerError, MQClientError
from rocketspec.refimpl.events import PullRequestEvent, PullResponseEvent
from rocketspec.refimpl.message import MessageExt, decode_stored_messages
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.runtime import Future
from rocketspec.spec.protocol import (
    MASTER_ID,
    PULL_FLAG_CLASS_FILTER,
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_LITE_PULL,
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    Property,
    PullStatus,
    RequestCode,
    ResponseCode,
)
from rocketspec.spec.queues import MessageQueue

# MQAdminImpl.timeoutMillis.
ADMIN_TIMEOUT_MS = 6_000

_STATUS_BY_CODE: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


def build_sys_flag(commit_offset: bool, suspend: bool, subscription: bool, class_filter: bool,
                   lite_pull: bool = False) -> int:
    """``PullSysFlag.buildSysFlag``."""
    flag = 0
    if commit_offset:
        flag |= PULL_FLAG_COMMIT_OFFSET
    if suspend:
        flag |= PULL_FLAG_SUSPEND
    if subscription:
        flag |= PULL_FLAG_SUBSCRIPTION
    if class_filter:
        flag |= PULL_FLAG_CLASS_FILTER
    if lite_pull:
        flag |= PULL_FLAG_LITE_PULL
    return flag


@attrs.define
class PullResult:
    """``PullResultExt``: the status, the offsets the broker reported and (after processing) the messages."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int = MASTER_ID
    message_binary: bytes | None = None
    msg_found_list: list[MessageExt] = attrs.Factory(list)
    code: int = ResponseCode.SUCCESS


def _chain(source: Future[Any], target: Future[Any], fn: Any) -> None:
    """Complete ``target`` with ``fn(result)`` when ``source`` succeeds, or with its error."""

    def done(f: Future[Any]) -> None:
        error = f.exception()
        if error is not None:
            target.set_exception(error)
            return
        try:
            target.set_result(fn(f.result()))
        except Exception as failure:  # a malformed answer fails the call, as a decode error does in Java
            target.set_exception(failure)

    source.add_done_callback(done)


class PullAPIWrapper:
    """``PullAPIWrapper`` of one consumer group."""

    def __init__(self, instance: Any, group: str, unit_mode: bool = False) -> None:
        self.instance = instance
        self.group = group
        self.unit_mode = unit_mode
        self.pull_from_which_node: dict[MessageQueue, int] = {}
        self.last_pull_sent_ms: dict[MessageQueue, int] = {}

    def recalculate_pull_from_which_node(self, mq: MessageQueue) -> int:
        return self.pull_from_which_node.get(mq, MASTER_ID)

    def _find_broker(self, mq: MessageQueue) -> tuple[str, bool] | None:
        """``findBrokerAddressInSubscribe(brokerName, suggested id, onlyThisBroker=false)``: (address, is slave)."""
        broker_id = self.recalculate_pull_from_which_node(mq)
        addr = self.instance.find_broker_addr(mq.broker_name, broker_id)
        if addr is not None:
            return addr, broker_id != MASTER_ID
        addr = self.instance.find_broker_addr_any(mq.broker_name)
        if addr is None:
            return None
        return addr, addr != self.instance.find_broker_addr(mq.broker_name, MASTER_ID)

    def pull_kernel(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        expression_type: str,
        sub_version: int,
        offset: int,
        max_nums: int,
        sys_flag: int,
        commit_offset: int,
        broker_suspend_max_ms: int,
        timeout_ms: int,
    ) -> Future[PullResult]:
        """``pullKernelImpl`` (async): send PULL_MESSAGE; the future gets the unprocessed ``PullResult``."""
        result: Future[PullResult] = Future()
        found = self._find_broker(mq)
        if found is not None:
            self._send_pull(mq, found, sub_expression, expression_type, sub_version, offset, max_nums, sys_flag,
                            commit_offset, broker_suspend_max_ms, timeout_ms, result)
            return result

        def refreshed(_f: Future[Any]) -> None:
            again = self._find_broker(mq)
            if again is None:
                error = MQClientError(f"The broker[{mq.broker_name}] not exist")
                self._emit_error(mq, offset, None, error)
                result.set_exception(error)
                return
            self._send_pull(mq, again, sub_expression, expression_type, sub_version, offset, max_nums, sys_flag,
                            commit_offset, broker_suspend_max_ms, timeout_ms, result)

        self.instance.update_topic_route(mq.topic).add_done_callback(refreshed)
        return result

    def _send_pull(self, mq: MessageQueue, found: tuple[str, bool], sub_expression: str | None,
                   expression_type: str, sub_version: int, offset: int, max_nums: int, sys_flag: int,
                   commit_offset: int, broker_suspend_max_ms: int, timeout_ms: int,
                   result: Future[PullResult]) -> None:
        addr, slave = found
        if slave:
            sys_flag &= ~PULL_FLAG_COMMIT_OFFSET  # a slave never takes the commit (clearCommitOffsetFlag)
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, {
            "consumerGroup": self.group,
            "topic": mq.topic,
            "queueId": mq.queue_id,
            "queueOffset": offset,
            "maxMsgNums": max_nums,
            "sysFlag": sys_flag,
            "commitOffset": commit_offset,
            "suspendTimeoutMillis": broker_suspend_max_ms,
            "subscription": sub_expression,
            "subVersion": sub_version,
            "expressionType": expression_type,
            "bname": mq.broker_name,
        })
        self.instance.events.emit(PullRequestEvent(
            node=self.instance.client_id, group=self.group, topic=mq.topic, broker=mq.broker_name,
            queue_id=mq.queue_id, offset=offset,
            commit_offset=commit_offset if sys_flag & PULL_FLAG_COMMIT_OFFSET else None))
        # A long-polling wait is housekeeping: the held pull must not keep a simulation busy.
        suspended = bool(sys_flag & PULL_FLAG_SUSPEND)
        self.last_pull_sent_ms[mq] = self.instance.runtime.now_ms()
        response = self.instance.invoke(addr, request, timeout_ms, daemon=suspended)

        def answered(f: Future[RemotingCommand]) -> None:
            error = f.exception()
            if error is not None:
                self._emit_error(mq, offset, None, error)
                result.set_exception(error)
                return
            cmd = f.result()
            status = _STATUS_BY_CODE.get(cmd.code)
            if status is None:
                failure = MQBrokerError(cmd.code, cmd.remark, addr)
                self._emit_error(mq, offset, cmd.code, failure)
                result.set_exception(failure)
                return
            try:
                pull = PullResult(
                    status=status,
                    next_begin_offset=cmd.require_int("nextBeginOffset"),
                    min_offset=cmd.require_int("minOffset"),
                    max_offset=cmd.require_int("maxOffset"),
                    suggest_which_broker_id=cmd.int_field("suggestWhichBrokerId", MASTER_ID) or MASTER_ID,
                    message_binary=cmd.body,
                    code=cmd.code,
                )
            except Exception as bad:  # RemotingCommandException: the header could not be decoded
                self._emit_error(mq, offset, cmd.code, bad)
                result.set_exception(bad)
                return
            result.set_result(pull)

        response.add_done_callback(answered)

    def _emit_error(self, mq: MessageQueue, offset: int, code: int | None, error: BaseException) -> None:
        self.instance.events.emit(PullResponseEvent(
            node=self.instance.client_id, group=self.group, topic=mq.topic, broker=mq.broker_name,
            queue_id=mq.queue_id, offset=offset, code=code, status="ERROR"))

    def process_pull_result(self, mq: MessageQueue, pull: PullResult, subscription: SubscriptionData,
                            requested_offset: int) -> PullResult:
        """``processPullResult``: remember the suggested broker; on FOUND decode, re-filter by tags, stamp offsets."""
        self.pull_from_which_node[mq] = pull.suggest_which_broker_id
        if pull.status is PullStatus.FOUND:
            msgs = decode_stored_messages(pull.message_binary or b"", mq.broker_name)
            if subscription.tags_set and not subscription.class_filter_mode:
                msgs = [m for m in msgs if m.tags is not None and m.tags in subscription.tags_set]
            stamped = []
            for msg in msgs:
                props = dict(msg.properties)
                props[Property.MIN_OFFSET] = str(pull.min_offset)
                props[Property.MAX_OFFSET] = str(pull.max_offset)
                stamped.append(attrs.evolve(msg, properties=props, broker_name=mq.broker_name))
            pull.msg_found_list = stamped
        pull.message_binary = None
        self.instance.events.emit(PullResponseEvent(
            node=self.instance.client_id, group=self.group, topic=mq.topic, broker=mq.broker_name,
            queue_id=mq.queue_id, offset=requested_offset, code=pull.code, status=pull.status.name,
            next_offset=pull.next_begin_offset, min_offset=pull.min_offset, max_offset=pull.max_offset,
            count=len(pull.msg_found_list)))
        return pull


def first_answer_grace_ms(instance: Any) -> int:
    """How long after sending a pull its request may still be on its way to the broker: one network latency on the
    simulated network; on the real clock a generous 100 ms. Past that, an unanswered long-polling pull is held by
    the broker, which means the queue had no message to give."""
    if instance.runtime.simulated:
        return int(getattr(instance.network, "latency_ms", 0))
    return 100


class MQAdmin:
    """``MQAdminImpl`` offset queries, sent to the master of the queue's broker (``findBrokerAddressInPublish``)."""

    def __init__(self, instance: Any) -> None:
        self.instance = instance

    def _master(self, mq: MessageQueue) -> Future[str]:
        result: Future[str] = Future()
        addr = self.instance.find_broker_addr(mq.broker_name, MASTER_ID)
        if addr is not None:
            result.set_result(addr)
            return result

        def refreshed(_f: Future[Any]) -> None:
            again = self.instance.find_broker_addr(mq.broker_name, MASTER_ID)
            if again is None:
                result.set_exception(MQClientError(f"The broker[{mq.broker_name}] not exist"))
            else:
                result.set_result(again)

        self.instance.update_topic_route(mq.topic).add_done_callback(refreshed)
        return result

    def _offset_query(self, mq: MessageQueue, code: int, extra: dict[str, object]) -> Future[int]:
        result: Future[int] = Future()

        def with_addr(f: Future[str]) -> None:
            error = f.exception()
            if error is not None:
                result.set_exception(error)
                return
            addr = f.result()
            fields: dict[str, object] = {"topic": mq.topic, "queueId": mq.queue_id, **extra, "bname": mq.broker_name}
            request = RemotingCommand.request(code, fields)

            def answer(cmd: RemotingCommand) -> int:
                if cmd.code != ResponseCode.SUCCESS:
                    raise MQClientError(f"Invoke Broker[{addr}] exception",
                                        cause=MQBrokerError(cmd.code, cmd.remark, addr))
                return cmd.require_int("offset")

            inner: Future[int] = Future()
            _chain(self.instance.invoke(addr, request, ADMIN_TIMEOUT_MS), inner, answer)

            def wrap(g: Future[int]) -> None:
                problem = g.exception()
                if problem is None:
                    result.set_result(g.result())
                elif isinstance(problem, MQClientError):
                    result.set_exception(problem)
                else:
                    result.set_exception(MQClientError(f"Invoke Broker[{addr}] exception", cause=problem))

            inner.add_done_callback(wrap)

        self._master(mq).add_done_callback(with_addr)
        return result

    def max_offset(self, mq: MessageQueue) -> Future[int]:
        """GET_MAX_OFFSET: the offset after the last message of the queue."""
        return self._offset_query(mq, RequestCode.GET_MAX_OFFSET, {})

    def min_offset(self, mq: MessageQueue) -> Future[int]:
        """GET_MIN_OFFSET: the first offset still stored."""
        return self._offset_query(mq, RequestCode.GET_MIN_OFFSET, {})

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> Future[int]:
        """SEARCH_OFFSET_BY_TIMESTAMP: the first offset stored at or after ``timestamp_ms``."""
        return self._offset_query(mq, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {"timestamp": timestamp_ms})
