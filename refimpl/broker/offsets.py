"""Consumer offsets a broker keeps for clustering groups (``ConsumerOffsetManager``).

The table maps ``"topic@group"`` to ``{queueId: offset}``. A commit overwrites (RocketMQ only logs a warning when the
new offset is lower). The broker persists the table to ``config/consumerOffset.json`` every 5 s and on a clean
shutdown, so a crash loses the commits of the last few seconds.
"""

from __future__ import annotations

from typing import Any

from rocketspec.refimpl.broker.config import CONSUMER_OFFSETS_FILE, ConfigDisk, load_json, save_json
from rocketspec.refimpl.events import EventLog, OffsetCommit

TOPIC_GROUP_SEPARATOR = "@"


def offset_key(topic: str, group: str) -> str:
    return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"


class ConsumerOffsetManager:
    """``ConsumerOffsetManager``: commit, query, persist and load group offsets."""

    def __init__(self, broker_name: str, disk: ConfigDisk, events: EventLog) -> None:
        self._broker_name = broker_name
        self._disk = disk
        self._events = events
        self.table: dict[str, dict[int, int]] = {}

    def commit(self, client_host: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        """``commitOffset``: store ``offset`` for the queue (``client_host`` is who committed, for the record)."""
        queues = self.table.setdefault(offset_key(topic, group), {})
        previous = queues.get(queue_id)
        queues[queue_id] = offset
        self._events.emit(OffsetCommit(node=self._broker_name, group=group, topic=topic, broker=self._broker_name,
                                       queue_id=queue_id, offset=offset, previous=previous))

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """``queryOffset``: the committed offset, or -1 when none is stored."""
        return self.table.get(offset_key(topic, group), {}).get(queue_id, -1)

    def offsets(self, group: str, topic: str) -> dict[int, int]:
        """Every committed offset of ``group`` on ``topic``, by queue id."""
        return dict(self.table.get(offset_key(topic, group), {}))

    def groups_of_topic(self, topic: str) -> set[str]:
        """``whichGroupByTopic``."""
        prefix = topic + TOPIC_GROUP_SEPARATOR
        return {key[len(prefix):] for key in self.table if key.startswith(prefix)}

    def topics_of_group(self, group: str) -> set[str]:
        """``whichTopicByConsumer``."""
        return {key.rpartition(TOPIC_GROUP_SEPARATOR)[0] for key in self.table
                if key.rpartition(TOPIC_GROUP_SEPARATOR)[2] == group}

    def remove_group(self, group: str) -> None:
        """``removeOffset``: forget every offset of the group."""
        for key in [k for k in self.table if k.rpartition(TOPIC_GROUP_SEPARATOR)[2] == group]:
            del self.table[key]

    def clone(self, src_group: str, dest_group: str, topic: str) -> None:
        """``cloneOffset``: the destination group gets a copy of the source group's offsets on the topic (when the
        source has any)."""
        offsets = self.table.get(offset_key(topic, src_group))
        if offsets is not None:
            self.table[offset_key(topic, dest_group)] = dict(offsets)

    def encode(self) -> dict[str, Any]:
        return {"offsetTable": {key: {str(q): o for q, o in queues.items()} for key, queues in self.table.items()}}

    def persist(self) -> None:
        save_json(self._disk, CONSUMER_OFFSETS_FILE, self.encode())

    def load(self) -> None:
        """Replace the table with the persisted one (``decode``); unreadable entries are skipped."""
        data = load_json(self._disk, CONSUMER_OFFSETS_FILE)
        if data is None:
            return
        table = data.get("offsetTable")
        if not isinstance(table, dict):
            return
        loaded: dict[str, dict[int, int]] = {}
        for key, queues in table.items():
            if not isinstance(queues, dict):
                continue
            entries: dict[int, int] = {}
            for qid, offset in queues.items():
                try:
                    entries[int(qid)] = int(offset)
                except (TypeError, ValueError):
                    continue
            loaded[str(key)] = entries
        self.table = loaded
