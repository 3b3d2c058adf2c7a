"""Offsets an administrator sets, told apart on the wire from a consumer's progress (the ``offset.reset`` kind).

RocketMQ 4.9.8's broker stores every UPDATE_CONSUMER_OFFSET it is sent (``ConsumerManageProcessor`` checks nothing
about the sender), so a commit of a client that is not a consumer of the group — mqadmin's ``resetOffsetByTime`` on
the old path (``resetOffsetConsumeOffset``), a test suite's deliberate backward commit — lands in the same table as a
consumer's. It is not consumer progress, and the rules about a consumer's commits must not judge it: it is recorded
as an ``offset.reset`` row (action ``update``), which the rules read as a disturbance of the group. The rule for
"registered": the connection sent a HEART_BEAT naming the group in its consumer data and no UNREGISTER_CLIENT of the
group since, as the broker's ``ConsumerManager`` keeps its channels. The admin reset proper,
INVOKE_BROKER_TO_RESET_OFFSET, does not touch the broker's table in 4.9.8 (``Broker2Client.resetOffset`` tells the
group's clients the offsets, and their next commits store them): its answer's offsets are ``offset.reset`` rows of
action ``reset`` (derived ``reset_answer``), so the clients' backward commits that follow are excused by it.

:class:`AdminCommits` is what a served run (whose brokers record their own commits) needs: the wire observer notes
the unregistered requests before the broker handles them, and the recorder rewrites the broker's commit of each
into an ``offset.reset`` (:meth:`AdminCommits.rewrite`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import ClassVar

import attrs

from rocketspec.refimpl.client.offset_store import decode_offset_table
from rocketspec.refimpl.events import Event, OffsetCommit
from rocketspec.traces.schema import RESET_ANSWER, RESET_INVOKED, RESET_UPDATE

#: (broker, group, topic, queue id, offset) of an unregistered UPDATE_CONSUMER_OFFSET.
CommitKey = tuple[str, str, str, int, int]


@attrs.frozen(kw_only=True)
class OffsetReset(Event):
    """A group's offset set by an administrator, not by a consumer's progress (``node`` = broker)."""

    kind: ClassVar[str] = "offset.reset"
    group: str
    topic: str
    broker: str
    queue_id: int
    offset: int
    action: str
    previous: int | None = None


class AdminCommits:
    """The unregistered UPDATE_CONSUMER_OFFSET requests seen, until the broker's commit of each is recorded (at most
    ``max_tracked``: a request a fault dropped is never committed, and the oldest go first)."""

    def __init__(self, max_tracked: int = 4096) -> None:
        self.max_tracked = max_tracked
        self._waiting: OrderedDict[CommitKey, int] = OrderedDict()

    def expect(self, key: CommitKey) -> None:
        """The broker will store this commit of a connection not registered as a consumer of the group."""
        self._waiting[key] = self._waiting.get(key, 0) + 1
        while len(self._waiting) > self.max_tracked:
            self._waiting.popitem(last=False)

    def rewrite(self, event: Event) -> Event:
        """``event`` as it is recorded: the broker's commit of an expected request becomes an ``offset.reset``."""
        if type(event) is not OffsetCommit or not self._waiting:
            return event
        key = (event.broker, event.group, event.topic, event.queue_id, event.offset)
        waiting = self._waiting.get(key)
        if not waiting:
            return event
        if waiting == 1:
            del self._waiting[key]
        else:
            self._waiting[key] = waiting - 1
        return OffsetReset(node=event.node, seq=event.seq, ts_ms=event.ts_ms, group=event.group, topic=event.topic,
                           broker=event.broker, queue_id=event.queue_id, offset=event.offset, action=RESET_UPDATE,
                           previous=event.previous)


def reset_answer_rows(broker: str, group: str, body: bytes | None) -> list[OffsetReset]:
    """The ``offset.reset`` rows of a SUCCESS answer to INVOKE_BROKER_TO_RESET_OFFSET sent to ``broker``: one per
    queue of its offset table (none when the body cannot be read)."""
    try:
        table = decode_offset_table(body)
    except (ValueError, KeyError, TypeError, AttributeError):
        return []
    return [OffsetReset(node=broker, group=group, topic=mq.topic, broker=mq.broker_name, queue_id=mq.queue_id,
                        offset=offset, action=RESET_INVOKED, derived=RESET_ANSWER)
            for mq, offset in sorted(table.items(), key=lambda item: (item[0].broker_name, item[0].queue_id))]


__all__ = ["AdminCommits", "OffsetReset", "reset_answer_rows"]
