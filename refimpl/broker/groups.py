"""Consumer group settings of one broker (``SubscriptionGroupManager``, ``SubscriptionGroupConfig``).

A group that pulls, heartbeats or sends messages back is looked up with ``find_or_create``: with
``autoCreateSubscriptionGroup`` (default on) or a ``CID_RMQ_SYS_`` name an unknown group gets the default settings,
which are persisted in ``config/subscriptionGroup.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from rocketspec.refimpl.broker.config import SUBSCRIPTION_GROUPS_FILE, BrokerConfig, ConfigDisk, load_json, save_json
from rocketspec.refimpl.broker.topics import DataVersion
from rocketspec.refimpl.route import dumps_java
from rocketspec.spec.protocol import (
    BUILTIN_SUBSCRIPTION_GROUPS,
    DEFAULT_MAX_RECONSUME_TIMES,
    DEFAULT_RETRY_QUEUE_NUMS,
    MASTER_ID,
    SYS_CONSUMER_GROUP_PREFIX,
    WHICH_BROKER_WHEN_CONSUME_SLOWLY,
)

_JSON_NAMES = {
    "group_name": "groupName",
    "consume_enable": "consumeEnable",
    "consume_from_min_enable": "consumeFromMinEnable",
    "consume_broadcast_enable": "consumeBroadcastEnable",
    "retry_queue_nums": "retryQueueNums",
    "retry_max_times": "retryMaxTimes",
    "broker_id": "brokerId",
    "which_broker_when_consume_slowly": "whichBrokerWhenConsumeSlowly",
    "notify_consumer_ids_changed_enable": "notifyConsumerIdsChangedEnable",
}


@attrs.define
class SubscriptionGroupConfig:
    """``SubscriptionGroupConfig`` with its defaults."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = DEFAULT_RETRY_QUEUE_NUMS
    retry_max_times: int = DEFAULT_MAX_RECONSUME_TIMES
    broker_id: int = MASTER_ID
    which_broker_when_consume_slowly: int = WHICH_BROKER_WHEN_CONSUME_SLOWLY
    notify_consumer_ids_changed_enable: bool = True

    def to_json(self) -> dict[str, Any]:
        return {java: getattr(self, name) for name, java in _JSON_NAMES.items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SubscriptionGroupConfig:
        defaults = cls(str(data["groupName"]))
        values: dict[str, Any] = {}
        for name, java in _JSON_NAMES.items():
            default = getattr(defaults, name)
            raw = data.get(java, default)
            if isinstance(default, bool):
                values[name] = bool(raw)
            else:
                values[name] = str(raw) if isinstance(default, str) else int(raw)
        return cls(**values)


def is_sys_consumer_group(group: str) -> bool:
    """``MixAll.isSysConsumerGroup``."""
    return group.startswith(SYS_CONSUMER_GROUP_PREFIX)


class SubscriptionGroupManager:
    """``SubscriptionGroupManager``: the group table (built-in groups first), auto-creation and persistence."""

    def __init__(self, config: BrokerConfig, clock: Callable[[], int], disk: ConfigDisk) -> None:
        self._config = config
        self._clock = clock
        self._disk = disk
        self.table: dict[str, SubscriptionGroupConfig] = {}
        self._unsaved = False
        self._wrapper: tuple[tuple[int, int, int], bytes] | None = None
        self.data_version = DataVersion(clock())
        for name in BUILTIN_SUBSCRIPTION_GROUPS:
            self.table[name] = SubscriptionGroupConfig(name)

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's settings if it is known (no auto-creation)."""
        return self.table.get(group)

    def find_or_create(self, group: str) -> SubscriptionGroupConfig | None:
        """``findSubscriptionGroupConfig``: unknown groups are created when auto creation is on or the name is a
        system group; otherwise None (the caller answers SUBSCRIPTION_GROUP_NOT_EXIST)."""
        found = self.table.get(group)
        if found is not None:
            return found
        if not (self._config.auto_create_subscription_group or is_sys_consumer_group(group)):
            return None
        created = SubscriptionGroupConfig(group)
        self.table[group] = created
        self.data_version.next_version(self._clock())
        # 4.9.8 writes the whole table for every group a pull or heartbeat creates; a client naming new groups
        # without end would make each creation cost the whole table. An auto-created group is written with the
        # consumer offsets (``persist_if_changed``, every 5 s) instead: lost in a crash, the next request that
        # names it creates it again, as if it had never been written.
        self._unsaved = True
        return created

    def update(self, group: SubscriptionGroupConfig) -> None:
        """``updateSubscriptionGroupConfig``."""
        self.table[group.group_name] = group
        self.data_version.next_version(self._clock())
        self.persist()

    def delete(self, group: str) -> SubscriptionGroupConfig | None:
        """``deleteSubscriptionGroupConfig``: remove, new version, persist; the removed settings or None."""
        removed = self.table.pop(group, None)
        if removed is not None:
            self.data_version.next_version(self._clock())
            self.persist()
        return removed

    def wrapper_body(self) -> bytes:
        """``SubscriptionGroupWrapper`` as GET_ALL_SUBSCRIPTIONGROUP_CONFIG answers it. Every change of the table
        takes a new data version, so the encoding is kept until the version moves (a broker with many groups is
        asked for all of them by every console and admin tool)."""
        key = (self.data_version.timestamp, self.data_version.counter, len(self.table))
        if self._wrapper is None or self._wrapper[0] != key:
            body = {"dataVersion": self.data_version.to_json(),
                    "subscriptionGroupTable": {name: group.to_json() for name, group in self.table.items()}}
            self._wrapper = (key, dumps_java(body))
        return self._wrapper[1]

    def persist_if_changed(self) -> None:
        """Write the table if a group was auto-created since it was last written."""
        if self._unsaved:
            self.persist()

    def persist(self) -> None:
        self._unsaved = False
        save_json(self._disk, SUBSCRIPTION_GROUPS_FILE, {
            "subscriptionGroupTable": {name: group.to_json() for name, group in self.table.items()},
            "dataVersion": self.data_version.to_json(),
        })

    def load(self) -> None:
        data = load_json(self._disk, SUBSCRIPTION_GROUPS_FILE)
        if data is None:
            return
        table = data.get("subscriptionGroupTable")
        if isinstance(table, dict):
            for name, raw in table.items():
                if isinstance(raw, dict) and "groupName" in raw:
                    self.table[str(name)] = SubscriptionGroupConfig.from_json(raw)
        self.data_version = DataVersion.from_json(data.get("dataVersion"), self._clock())
