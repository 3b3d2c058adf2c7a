"""Message queues and the order RocketMQ puts them (and client ids) in."""

from __future__ import annotations

import functools

import attrs


def java_string_key(s: str) -> bytes:
    """A sort key that orders strings as Java's ``String.compareTo`` does (by UTF-16 code unit).

    Python compares code points; the two orders differ only for characters outside the BMP, which
    sort after U+E000..U+FFFF in Python but before them in Java.
    """
    return s.encode("utf-16-be", "surrogatepass")


@functools.total_ordering
@attrs.frozen(eq=True, order=False)
class MessageQueue:
    """A queue of a topic on one broker, ordered as ``MessageQueue.compareTo``: topic, broker name, queue id."""

    topic: str = attrs.field(validator=attrs.validators.instance_of(str))
    broker_name: str = attrs.field(validator=attrs.validators.instance_of(str))
    queue_id: int = attrs.field(validator=attrs.validators.instance_of(int))

    # Sorting compares each queue many times: its key is computed once (not part of equality or hashing).
    _sort_key: tuple[bytes, bytes, int] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_sort_key",
                           (java_string_key(self.topic), java_string_key(self.broker_name), self.queue_id))

    def _key(self) -> tuple[bytes, bytes, int]:
        return self._sort_key

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, MessageQueue):
            return NotImplemented
        return self._key() < other._key()

    def __str__(self) -> str:
        # The text RocketMQ's toString gives; CONSISTENT_HASH hashes exactly this.
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"


def sorted_queues(queues: object) -> list[MessageQueue]:
    """Queues in RocketMQ order, duplicates removed (RebalanceImpl works on a set)."""
    return sorted(set(queues))  # type: ignore[call-overload]


def sorted_ids(ids: object) -> list[str]:
    """Client ids in Java string order, duplicates removed."""
    return sorted(set(ids), key=java_string_key)  # type: ignore[call-overload]
