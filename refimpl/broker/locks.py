"""Queue locks for orderly consumers (``RebalanceLockManager``, LOCK_BATCH_MQ / UNLOCK_BATCH_MQ bodies).

Per consumer group, a queue is held by one client id; the lock lives 60 s from its last lock request (clients renew
every 20 s). A lock request renews the caller's own live locks, takes free or expired ones and leaves queues held by
another live client out of the answer. Unlocking only releases the caller's own locks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from rocketspec.spec.protocol import BROKER_LOCK_EXPIRY_MS
from rocketspec.spec.queues import MessageQueue


@attrs.define
class LockEntry:
    client_id: str
    last_update: int

    def expired(self, now_ms: int, expiry_ms: int) -> bool:
        return now_ms - self.last_update > expiry_ms

    def locked_by(self, client_id: str, now_ms: int, expiry_ms: int) -> bool:
        return self.client_id == client_id and not self.expired(now_ms, expiry_ms)


@attrs.define
class LockBatchRequest:
    """``LockBatchRequestBody`` / ``UnlockBatchRequestBody``."""

    consumer_group: str
    client_id: str
    mq_set: list[MessageQueue]

    @classmethod
    def decode(cls, body: bytes | None) -> LockBatchRequest:
        """Parse the JSON body; raises ``ValueError`` when it is malformed."""
        if not body:
            raise ValueError("lock request body is empty")
        data = json.loads(body.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("lock request body is not a JSON object")
        group, client_id = data.get("consumerGroup"), data.get("clientId")
        if not isinstance(group, str) or not isinstance(client_id, str):
            raise ValueError("lock request without consumerGroup or clientId")
        return cls(group, client_id, [mq_from_json(raw) for raw in data.get("mqSet") or ()])


def mq_from_json(raw: Any) -> MessageQueue:
    if not isinstance(raw, dict):
        raise ValueError(f"bad message queue {raw!r}")
    topic, broker, queue_id = raw.get("topic"), raw.get("brokerName"), raw.get("queueId")
    if not isinstance(topic, str) or not isinstance(broker, str) or isinstance(queue_id, bool):
        raise ValueError(f"bad message queue {raw!r}")
    try:
        return MessageQueue(topic, broker, int(queue_id))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"bad message queue {raw!r}") from None


def mq_to_json(mq: MessageQueue) -> dict[str, Any]:
    return {"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic}


def encode_lock_response(locked: Iterable[MessageQueue]) -> bytes:
    """``LockBatchResponseBody``: ``{"lockOKMQSet": [...]}``."""
    return json.dumps({"lockOKMQSet": [mq_to_json(mq) for mq in sorted(set(locked))]}).encode("utf-8")


class RebalanceLockManager:
    """``RebalanceLockManager``: group → queue → (client id, last lock time)."""

    def __init__(self, clock: Callable[[], int], expiry_ms: int = BROKER_LOCK_EXPIRY_MS) -> None:
        self._clock = clock
        self.expiry_ms = expiry_ms
        self.table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def try_lock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> set[MessageQueue]:
        """``tryLockBatch``: the queues this client holds after the request."""
        now = self._clock()
        queues = self.table.setdefault(group, {})
        locked: set[MessageQueue] = set()
        for mq in mqs:
            entry = queues.get(mq)
            if entry is None:
                queues[mq] = LockEntry(client_id, now)
                locked.add(mq)
            elif entry.client_id == client_id or entry.expired(now, self.expiry_ms):
                # Our own lock (live or lapsed) is renewed; another client's lapsed lock is taken over.
                entry.client_id = client_id
                entry.last_update = now
                locked.add(mq)
        return locked

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> None:
        """``unlockBatch``: release the queues this client holds (expired or not); others' locks stay."""
        queues = self.table.get(group)
        if queues is None:
            return
        for mq in mqs:
            entry = queues.get(mq)
            if entry is not None and entry.client_id == client_id:
                del queues[mq]

    def is_locked(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        entry = self.table.get(group, {}).get(mq)
        return entry is not None and entry.locked_by(client_id, self._clock(), self.expiry_ms)

    def holder(self, group: str, mq: MessageQueue) -> str | None:
        """The client id holding a live lock on the queue, if any."""
        entry = self.table.get(group, {}).get(mq)
        if entry is None or entry.expired(self._clock(), self.expiry_ms):
            return None
        return entry.client_id
