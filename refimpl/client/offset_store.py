"""Consume offset stores: on the brokers for clustering, in a local file for broadcasting.

``RemoteBrokerOffsetStore`` (clustering) keeps the group's offsets in memory and sends them to the master of each
queue's broker: every 5 s for the assigned queues (``persistAll``, oneway UPDATE_CONSUMER_OFFSET), and for one queue
when the rebalance gives it up (``persist``). ``readOffset``: from memory → the value or -1; from the store → the
broker's answer (cached), -1 when the broker answers an error (QUERY_NOT_FOUND: nothing committed), -2 when the
request fails (no broker address, a transport error).

``LocalFileOffsetStore`` (broadcasting) writes ``<dir>/<clientId>/<group>/offsets.json`` the way
``MixAll.string2File`` does (a ``.tmp`` file, the previous content kept in ``.bak``, then the rename) and reads the
``.bak`` when the main file is missing or unreadable. Without a directory the "files" live in memory, per runtime.

Every change of an in-memory offset emits ``OffsetUpdate``. The stores also remember what they last persisted, so
a consumer can tell the runtime that a persist is still owed (``dirty``).

The broker's requests about a consumer's offsets are answered here too (``ClientRemotingProcessor``):
RESET_CONSUMER_CLIENT_OFFSET (``reset_offset_request``: ``MQClientInstance.resetOffset``) and
GET_CONSUMER_STATUS_FROM_CLIENT (``consumer_status_request``: ``MQClientInstance.getConsumerStatus``).
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from rocketspec.refimpl.events import OffsetUpdate
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.route import RawJson, dumps_java
from rocketspec.refimpl.runtime import Future, Runtime
from rocketspec.spec import fastjson
from rocketspec.spec.protocol import (
    MASTER_ID,
    RESET_OFFSET_CLIENT_WAIT_MS,
    ReadOffsetType,
    RequestCode,
    ResponseCode,
)
from rocketspec.spec.queues import MessageQueue

QUERY_OFFSET_TIMEOUT_MS = 5_000
OFFSET_FILE = "offsets.json"


def done_future(value: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future


class OffsetStore(Protocol):
    def load(self) -> None: ...

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None: ...

    def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> Future[int]: ...

    def memory_offset(self, mq: MessageQueue) -> int: ...

    def persist_all(self, mqs: Iterable[MessageQueue]) -> None: ...

    def persist(self, mq: MessageQueue) -> None: ...

    def remove_offset(self, mq: MessageQueue) -> None: ...

    def clone_offset_table(self, topic: str | None = None) -> dict[MessageQueue, int]: ...

    def dirty(self, mqs: Iterable[MessageQueue]) -> bool: ...


class _MemoryOffsetTable:
    """The in-memory offset table both stores share (``offsetTable`` with ``updateOffset`` / ``removeOffset``)."""

    def __init__(self, instance: Any, group: str) -> None:
        self.instance = instance
        self.group = group
        self.table: dict[MessageQueue, int] = {}
        self.persisted: dict[MessageQueue, int] = {}

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        """``updateOffset``: set, or with ``increase_only`` only raise (``MixAll.compareAndIncreaseOnly``)."""
        if mq is None:
            return
        old = self.table.get(mq)
        if old is None:
            new = offset
        elif increase_only:
            new = offset if offset > old else old
        else:
            new = offset
        if old == new:
            return
        self.table[mq] = new
        self.instance.events.emit(OffsetUpdate(
            node=self.instance.client_id, group=self.group, topic=mq.topic, broker=mq.broker_name,
            queue_id=mq.queue_id, offset=new, increase_only=increase_only))

    def memory_offset(self, mq: MessageQueue) -> int:
        return self.table.get(mq, -1)

    def remove_offset(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)
        self.persisted.pop(mq, None)

    def clone_offset_table(self, topic: str | None = None) -> dict[MessageQueue, int]:
        return {mq: off for mq, off in self.table.items() if not topic or mq.topic == topic}

    def dirty(self, mqs: Iterable[MessageQueue]) -> bool:
        """True when an offset of these queues changed since it was last persisted."""
        return any(mq in self.table and self.table[mq] >= 0 and self.persisted.get(mq) != self.table[mq]
                   for mq in mqs)


class RemoteBrokerOffsetStore(_MemoryOffsetTable):
    """``RemoteBrokerOffsetStore``: a clustering group's offsets, committed to the queue's master broker."""

    def load(self) -> None:
        """Nothing to load: the brokers hold the offsets."""

    def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> Future[int]:
        if read_type in (ReadOffsetType.READ_FROM_MEMORY, ReadOffsetType.MEMORY_FIRST_THEN_STORE):
            offset = self.table.get(mq)
            if offset is not None:
                return done_future(offset)
            if read_type is ReadOffsetType.READ_FROM_MEMORY:
                return done_future(-1)
        result: Future[int] = Future()

        def fetched(f: Future[int]) -> None:
            error = f.exception()
            if error is None:
                offset = f.result()
                self.update_offset(mq, offset, False)
                self.persisted[mq] = offset  # the broker has it: nothing to persist
                result.set_result(offset)
            elif isinstance(error, _BrokerAnswer):
                result.set_result(-1)  # the broker answered an error (no offset stored): -1
            else:
                result.set_result(-2)  # no broker, transport failure: -2

        self._fetch_from_broker(mq).add_done_callback(fetched)
        return result

    def _master_addr(self, mq: MessageQueue) -> Future[str | None]:
        """``findBrokerAddressInSubscribe(master, onlyThisBroker)``; unknown broker: refresh the route, take any."""
        addr = self.instance.find_broker_addr(mq.broker_name, MASTER_ID)
        if addr is not None:
            return done_future(addr)
        result: Future[str | None] = Future()

        def refreshed(_f: Future[Any]) -> None:
            result.set_result(self.instance.find_broker_addr_any(mq.broker_name))

        self.instance.update_topic_route(mq.topic).add_done_callback(refreshed)
        return result

    def _fetch_from_broker(self, mq: MessageQueue) -> Future[int]:
        result: Future[int] = Future()

        def with_addr(f: Future[str | None]) -> None:
            addr = f.result() if f.exception() is None else None
            if addr is None:
                result.set_exception(LookupError(f"The broker[{mq.broker_name}] not exist"))
                return
            request = RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, {
                "consumerGroup": self.group, "topic": mq.topic, "queueId": mq.queue_id, "bname": mq.broker_name})

            def answered(rf: Future[RemotingCommand]) -> None:
                error = rf.exception()
                if error is not None:
                    result.set_exception(error)
                    return
                response = rf.result()
                if response.code == ResponseCode.SUCCESS:
                    try:
                        result.set_result(response.require_int("offset"))
                    except Exception as bad:  # a malformed answer is a client-side failure (-2)
                        result.set_exception(bad)
                else:
                    result.set_exception(_BrokerAnswer(response.code, response.remark))

            self.instance.invoke(addr, request, QUERY_OFFSET_TIMEOUT_MS).add_done_callback(answered)

        self._master_addr(mq).add_done_callback(with_addr)
        return result

    def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        """``persistAll``: send the offsets of ``mqs``; forget table entries of queues no longer assigned."""
        mqs = set(mqs)
        if not mqs:
            return
        for mq, offset in list(self.table.items()):
            if mq in mqs:
                if offset >= 0:
                    self.update_consume_offset_to_broker(mq, offset, oneway=True)
            else:
                self.remove_offset(mq)

    def persist(self, mq: MessageQueue) -> None:
        offset = self.table.get(mq)
        if offset is not None and offset >= 0:
            self.update_consume_offset_to_broker(mq, offset, oneway=True)

    def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool = True
                                        ) -> Future[RemotingCommand | None]:
        """UPDATE_CONSUMER_OFFSET to the queue's master (oneway by default, as persistAll sends it)."""
        self.persisted[mq] = offset
        result: Future[RemotingCommand | None] = Future()

        def with_addr(f: Future[str | None]) -> None:
            addr = f.result() if f.exception() is None else None
            if addr is None:
                result.set_exception(LookupError(f"The broker[{mq.broker_name}] not exist"))
                return
            request = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
                "consumerGroup": self.group, "topic": mq.topic, "queueId": mq.queue_id, "commitOffset": offset,
                "bname": mq.broker_name}, oneway=oneway)
            if oneway:
                self.instance.invoke_oneway(addr, request)
                result.set_result(None)
            else:
                self.instance.invoke(addr, request, QUERY_OFFSET_TIMEOUT_MS).add_done_callback(
                    lambda rf: result.set_exception(rf.exception()) if rf.exception() is not None
                    else result.set_result(rf.result()))

        self._master_addr(mq).add_done_callback(with_addr)
        return result


class _BrokerAnswer(Exception):
    """The broker answered QUERY_CONSUMER_OFFSET with an error code (MQBrokerException in Java)."""

    def __init__(self, code: int, remark: str | None) -> None:
        super().__init__(f"CODE: {code} DESC: {remark}")
        self.code = code


# In-memory offset "files" of broadcasting consumers without a directory, per runtime (one simulated world).
_MEMORY_FILES: weakref.WeakKeyDictionary[Runtime, dict[str, str]] = weakref.WeakKeyDictionary()


class _Files:
    """Where LocalFileOffsetStore's text files live: a directory, or a per-runtime dict."""

    def __init__(self, runtime: Runtime, root: str | None, relative: str) -> None:
        self._root = Path(root) if root is not None else None
        self._relative = relative
        self._memory = None if root is not None else _MEMORY_FILES.setdefault(runtime, {})

    def path(self, suffix: str = "") -> str:
        base = self._relative + suffix
        return str(self._root / base) if self._root is not None else base

    def read(self, suffix: str = "") -> str | None:
        if self._memory is not None:
            return self._memory.get(self.path(suffix))
        try:
            return Path(self.path(suffix)).read_text(encoding="utf-8")
        except OSError:
            return None

    def write_safely(self, text: str) -> None:
        """``MixAll.string2File``: write ``.tmp``, copy the previous content to ``.bak``, rename ``.tmp``."""
        if self._memory is not None:
            previous = self._memory.get(self.path())
            if previous is not None:
                self._memory[self.path(".bak")] = previous
            self._memory[self.path()] = text
            return
        main = Path(self.path())
        main.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(self.path(".tmp"))
        tmp.write_text(text, encoding="utf-8")
        previous = self.read()
        if previous is not None:
            Path(self.path(".bak")).write_text(previous, encoding="utf-8")
        os.replace(tmp, main)


def encode_offsets(table: dict[MessageQueue, int]) -> str:
    """``OffsetSerializeWrapper`` as standard JSON: ``{"offsetTable": [{topic, brokerName, queueId, offset}]}``."""
    entries = [{"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": off}
               for mq, off in sorted(table.items())]
    return json.dumps({"offsetTable": entries}, indent=2)


def decode_offsets(text: str) -> dict[MessageQueue, int]:
    data = json.loads(text)
    table: dict[MessageQueue, int] = {}
    for entry in data["offsetTable"]:
        table[MessageQueue(str(entry["topic"]), str(entry["brokerName"]), int(entry["queueId"]))] = int(
            entry["offset"])
    return table


class LocalFileOffsetStore(_MemoryOffsetTable):
    """``LocalFileOffsetStore``: a broadcasting consumer's own offsets, in ``<dir>/<clientId>/<group>/offsets.json``."""

    def __init__(self, instance: Any, group: str, directory: str | None) -> None:
        super().__init__(instance, group)
        relative = os.path.join(instance.client_id, group, OFFSET_FILE)
        self.files = _Files(instance.runtime, directory, relative)

    @property
    def store_path(self) -> str:
        return self.files.path()

    def _read_local(self) -> dict[MessageQueue, int] | None:
        """``readLocalOffset``: the main file, else (missing, empty or unreadable) the ``.bak``."""
        content = self.files.read()
        if content:
            try:
                return decode_offsets(content)
            except (ValueError, KeyError, TypeError):
                pass
        backup = self.files.read(".bak")
        if backup:
            try:
                return decode_offsets(backup)
            except (ValueError, KeyError, TypeError):
                return None
        return None

    def load(self) -> None:
        """``load``: the persisted offsets become the in-memory table."""
        stored = self._read_local()
        if stored:
            for mq, offset in stored.items():
                self.update_offset(mq, offset, False)
                self.persisted[mq] = offset

    def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> Future[int]:
        if read_type in (ReadOffsetType.READ_FROM_MEMORY, ReadOffsetType.MEMORY_FIRST_THEN_STORE):
            offset = self.table.get(mq)
            if offset is not None:
                return done_future(offset)
            if read_type is ReadOffsetType.READ_FROM_MEMORY:
                return done_future(-1)
        stored = self._read_local()
        if stored is not None and mq in stored:
            self.update_offset(mq, stored[mq], False)
            self.persisted[mq] = stored[mq]
            return done_future(stored[mq])
        return done_future(-1)

    def _write(self, updates: dict[MessageQueue, int]) -> None:
        stored = self._read_local() or {}
        stored.update(updates)
        self.files.write_safely(encode_offsets(stored))
        self.persisted.update(updates)

    def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        mqs = set(mqs)
        if not mqs:
            return
        self._write({mq: off for mq, off in self.table.items() if mq in mqs})

    def persist(self, mq: MessageQueue) -> None:
        offset = self.table.get(mq)
        if offset is not None:
            self._write({mq: offset})

    def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool = True) -> Future[None]:
        """Broadcasting offsets never go to a broker."""
        return done_future(None)


# --------------------------------------------------------------------------------------------- broker requests

def _queue_of(fields: Any) -> MessageQueue:
    items = dict(fields)
    return MessageQueue(str(items["topic"]), str(items["brokerName"]), int(items["queueId"]))


def decode_offset_table(body: bytes | None) -> dict[MessageQueue, int]:
    """``ResetOffsetBody.offsetTable``: a map keyed by MessageQueue, or (``ResetOffsetBodyForC``) a list of
    {topic, brokerName, queueId, offset}."""
    if not body:
        return {}
    table = fastjson.loads(body).get("offsetTable") or {}
    if isinstance(table, list):
        return {_queue_of(entry): int(entry["offset"]) for entry in table}
    return {_queue_of(key): int(offset) for key, offset in table.items()}


def encode_offset_table(table: dict[MessageQueue, int]) -> dict[RawJson, int]:
    """A MessageQueue-keyed offset map as fastjson writes it (keys ``{"brokerName":..,"queueId":..,"topic":..}``)."""
    return {RawJson(dumps_java({"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic})
                    .decode("utf-8")): offset for mq, offset in table.items()}


def reset_offset_request(instance: Any, request: RemotingCommand) -> None:
    """RESET_CONSUMER_CLIENT_OFFSET (``ClientRemotingProcessor.resetOffset``, a oneway request): the group's push
    consumer resets the listed queues of the topic (``reset_offset``)."""
    try:
        offsets = decode_offset_table(request.body)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    topic, group = request.field("topic"), request.field("group")
    consumer = instance.consumers.get(group) if group is not None else None
    if topic is None or consumer is None or getattr(consumer, "role", "") != "push_consumer":
        return None  # "[reset-offset] consumer dose not exist"
    reset_offset(consumer, topic, offsets)
    return None


def reset_offset(consumer: Any, topic: str, offsets: dict[MessageQueue, int]) -> None:
    """``MQClientInstance.resetOffset``, synchronized on the client instance: a reset waits for the one under way
    (``begin_reset``, then ``apply_reset`` ``RESET_OFFSET_CLIENT_WAIT_MS`` later)."""
    resets = _RESETS.setdefault(consumer.instance, [])
    resets.append((consumer, topic, offsets))
    if len(resets) == 1:
        begin_reset(resets)


# The resets a client instance has received and not yet applied, the first one under way (per instance).
Reset = tuple[Any, str, dict[MessageQueue, int]]
_RESETS: weakref.WeakKeyDictionary[Any, list[Reset]] = weakref.WeakKeyDictionary()


def begin_reset(resets: list[Reset]) -> None:
    """The first reset of ``resets`` starts: suspend the consumer, mark the listed ProcessQueues of the topic
    dropped and clear them."""
    consumer, topic, offsets = resets[0]
    consumer.pause = True
    for mq, pq in consumer.rebalance.process_queue_table.items():
        if mq.topic == topic and mq in offsets:
            pq.dropped = True
            pq.clear()
    consumer.runtime.call_later(RESET_OFFSET_CLIENT_WAIT_MS, lambda: apply_reset(resets))


def apply_reset(resets: list[Reset]) -> None:
    """The first reset of ``resets`` ends: each listed queue still in processQueueTable gets its offset
    (``updateConsumeOffset``: not increase-only) and leaves the table (``removeUnnecessaryMessageQueue``: persist,
    removeOffset); the consumer resumes (and rebalances); the next reset starts."""
    consumer, topic, offsets = resets[0]
    table = consumer.rebalance.process_queue_table
    try:
        if consumer.alive():
            for mq in [m for m in table if m.topic == topic and m in offsets]:
                consumer.offset_store.update_offset(mq, offsets[mq], False)
                consumer.rebalance.remove_unnecessary_message_queue(mq, table[mq])
                del table[mq]
    finally:
        resets.pop(0)
        consumer.pause = False
        consumer.do_rebalance()
        if resets:
            begin_reset(resets)


def consumer_status_request(instance: Any, request: RemotingCommand) -> RemotingCommand:
    """GET_CONSUMER_STATUS_FROM_CLIENT (``ClientRemotingProcessor.getConsumeStatus``): the group's memory offsets
    of the topic (``cloneOffsetTable``; a push consumer's only, as 4.9.8's ``getConsumerStatus`` gives a lite pull
    consumer's as empty) in a ``GetConsumerStatusBody``."""
    topic, group = request.field("topic"), request.field("group")
    consumer = instance.consumers.get(group) if group is not None else None
    table: dict[MessageQueue, int] = {}
    if consumer is not None and getattr(consumer, "role", "") == "push_consumer" and consumer.offset_store:
        table = consumer.offset_store.clone_offset_table(topic)
    body = {"consumerTable": {}, "messageQueueTable": encode_offset_table(table)}
    return request.response(ResponseCode.SUCCESS, body=dumps_java(body))


__all__ = [
    "LocalFileOffsetStore",
    "OffsetStore",
    "RemoteBrokerOffsetStore",
    "apply_reset",
    "begin_reset",
    "consumer_status_request",
    "decode_offset_table",
    "decode_offsets",
    "encode_offset_table",
    "encode_offsets",
    "reset_offset",
    "reset_offset_request",
]
