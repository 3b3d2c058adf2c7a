"""Broker settings (``BrokerConfig`` and the parts of ``MessageStoreConfig`` a broker decides with).

Defaults are RocketMQ 4.9.8's. The role follows the broker id as in a Java deployment: id 0 (``MixAll.MASTER_ID``)
is the master, any other id a slave (``BrokerRole.SLAVE``).

``message_delay_level`` is ``MessageStoreConfig.messageDelayLevel``: the delay of each level, parsed as
``ScheduleMessageService.parseDelayLevel`` does (space-separated items, each a Java long and a unit ``s``, ``m``,
``h`` or ``d``; level ``i`` is item ``i``, the max level is the number of items). Java accepts any count and any
value, and a broker whose string does not parse fails to start; here a bad string raises ``ValueError`` when the
config is built, and the table must also have 1 to 18 levels (the 18 queues of ``SCHEDULE_TOPIC_XXXX`` and the
spec's ``delay_millis``), each delay positive and at most 2**62 ms.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Protocol

import attrs

from rocketspec.refimpl.store.message_store import DEFAULT_CQ_SEGMENT_ENTRIES
from rocketspec.spec.java import int64, parse_long
from rocketspec.spec.protocol import (
    BROKER_DEFAULT_TOPIC_QUEUE_NUMS,
    BROKER_REGISTER_INTERVAL_MS,
    CLIENT_CHANNEL_EXPIRED_MS,
    DEFAULT_BROKER_PORT,
    DEFAULT_CLUSTER_NAME,
    DEFAULT_PERM,
    DEFAULT_TRACE_REGION_ID,
    DELAY_LEVEL_NAMES,
    FILE_RESERVED_TIME_HOURS,
    MASTER_ID,
    MAX_DELAY_LEVEL,
    MAX_MESSAGE_SIZE,
    SHORT_POLLING_TIME_MS,
    TRANSACTION_CHECK_INTERVAL_MS,
    TRANSACTION_CHECK_MAX,
    TRANSACTION_TIMEOUT_MS,
    split_addr,
)

_FLUSH_MODES = ("async", "sync")
DEFAULT_MESSAGE_DELAY_LEVEL = " ".join(DELAY_LEVEL_NAMES)
# Longest delay accepted: store time + delay (the consume-queue tags code) must stay a Java long.
_MAX_DELAY_MS = 2**62
# parseDelayLevel's units.
_UNIT_MS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_message_delay_level(text: str) -> tuple[int, ...]:
    """The delay of each level in ms (index 0 is level 1) from a ``messageDelayLevel`` string.

    Read as ``ScheduleMessageService.parseDelayLevel`` reads it: items split on single spaces (trailing empty items
    dropped), each a Java long and a unit ``s``, ``m``, ``h`` or ``d`` (the product wraps like a long). The table
    must also have 1 to ``MAX_DELAY_LEVEL`` (18) levels, each delay in (0, 2**62] ms. Anything else raises
    ``ValueError``; the command line's ``--message-delay-level`` and the broker's setting both go through here.
    """
    if not isinstance(text, str):
        raise ValueError(f"message_delay_level must be a string like {DEFAULT_MESSAGE_DELAY_LEVEL!r}, not {text!r}")
    return _parse_delay_table(text)


@functools.lru_cache(maxsize=32)
def _parse_delay_table(text: str) -> tuple[int, ...]:
    # Cached: validation and every read of BrokerConfig.delay_level_millis parse the same few strings.
    def bad(problem: str) -> ValueError:
        return ValueError(f"message_delay_level {text!r}: {problem} (each item is a whole number followed by a unit "
                          "s, m, h or d, items separated by single spaces)")

    if text == "":
        raise bad("an empty string has one empty item")  # Java's "".split(" ") is [""]
    items = text.split(" ")
    while items and items[-1] == "":
        items.pop()  # String.split drops trailing empty strings
    table = []
    for item in items:
        if item[-1:] not in _UNIT_MS:
            raise bad(f"bad delay level item {item!r}")
        amount = parse_long(item[:-1])
        if amount is None:
            raise bad(f"not a Java long: {item[:-1]!r}")
        table.append(int64(amount * _UNIT_MS[item[-1]]))
    if not 1 <= len(table) <= MAX_DELAY_LEVEL:
        raise ValueError(f"message_delay_level {text!r} has {len(table)} levels; 1 to {MAX_DELAY_LEVEL} are "
                         f"supported (SCHEDULE_TOPIC_XXXX has {MAX_DELAY_LEVEL} queues)")
    for level, delay in enumerate(table, start=1):
        if not 0 < delay <= _MAX_DELAY_MS:
            raise ValueError(f"message_delay_level {text!r}: level {level} delay must be positive and at most "
                             f"2**62 ms (a delivery time is a Java long), not {delay} ms")
    return tuple(table)


def _check_addr(instance: BrokerConfig, attribute: attrs.Attribute[str], value: str) -> None:
    try:
        split_addr(value)
    except ValueError:
        raise ValueError(f"{attribute.name} must be 'host:port', not {value!r}") from None


def _check_name(instance: BrokerConfig, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{attribute.name} must be a non-empty string")


def _check_flush(instance: BrokerConfig, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in _FLUSH_MODES:
        raise ValueError(f"flush must be one of {', '.join(_FLUSH_MODES)}, not {value!r}")


def _check_delay_levels(instance: BrokerConfig, attribute: attrs.Attribute[str], value: str) -> None:
    parse_message_delay_level(value)


def _non_negative(instance: BrokerConfig, attribute: attrs.Attribute[int], value: int) -> None:
    if not isinstance(value, int) or value < 0:
        raise ValueError(f"{attribute.name} must be a non-negative integer, not {value!r}")


@attrs.define(kw_only=True)
class BrokerConfig:
    """One broker's configuration (``BrokerConfig.java`` / ``MessageStoreConfig.java`` names in snake case)."""

    broker_name: str = attrs.field(validator=_check_name)
    broker_id: int = attrs.field(default=MASTER_ID, validator=_non_negative)
    cluster_name: str = attrs.field(default=DEFAULT_CLUSTER_NAME, validator=_check_name)
    addr: str = attrs.field(default=f"127.0.0.1:{DEFAULT_BROKER_PORT}", validator=_check_addr)
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    default_topic_queue_nums: int = attrs.field(default=BROKER_DEFAULT_TOPIC_QUEUE_NUMS, validator=_non_negative)
    broker_permission: int = attrs.field(default=DEFAULT_PERM, validator=_non_negative)
    long_polling_enable: bool = True
    short_polling_time_ms: int = attrs.field(default=SHORT_POLLING_TIME_MS, validator=_non_negative)
    reject_transaction_message: bool = False
    transaction_timeout_ms: int = attrs.field(default=TRANSACTION_TIMEOUT_MS, validator=_non_negative)
    transaction_check_interval_ms: int = attrs.field(default=TRANSACTION_CHECK_INTERVAL_MS, validator=_non_negative)
    transaction_check_max: int = attrs.field(default=TRANSACTION_CHECK_MAX, validator=_non_negative)
    flush: str = attrs.field(default="async", validator=_check_flush)
    file_reserved_ms: int = attrs.field(default=FILE_RESERVED_TIME_HOURS * 3_600_000, validator=_non_negative)
    segment_bytes: int = attrs.field(default=1 << 20, validator=_non_negative)
    # MessageStoreConfig.mappedFileSizeConsumeQueue / 20: the entries of a consume-queue file (kept across restarts).
    cq_segment_entries: int = attrs.field(default=DEFAULT_CQ_SEGMENT_ENTRIES, validator=_non_negative)
    slave_read_enable: bool = False
    # enablePropertyFilter: serve SQL92 (MessageSelector.bySql) subscriptions; off by default, as in 4.9.8.
    enable_property_filter: bool = False
    offset_check_in_slave: bool = False
    max_message_size: int = attrs.field(default=MAX_MESSAGE_SIZE, validator=_non_negative)
    register_interval_ms: int = attrs.field(default=BROKER_REGISTER_INTERVAL_MS, validator=_non_negative)
    client_channel_expired_ms: int = attrs.field(default=CLIENT_CHANNEL_EXPIRED_MS, validator=_non_negative)
    message_delay_level: str = attrs.field(default=DEFAULT_MESSAGE_DELAY_LEVEL, validator=_check_delay_levels)
    # BrokerConfig switches kept at their defaults in practice, exposed for completeness.
    notify_consumer_ids_changed_enable: bool = True
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    trace_topic_enable: bool = False
    region_id: str = DEFAULT_TRACE_REGION_ID
    trace_on: bool = True
    # BrokerConfig.storeReplyMessageEnable; MessageStoreConfig.messageIndexEnable.
    store_reply_message_enable: bool = True
    message_index_enable: bool = True

    @property
    def host(self) -> str:
        return self.addr.rpartition(":")[0]

    @property
    def port(self) -> int:
        return int(self.addr.rpartition(":")[2])

    @property
    def ha_addr(self) -> str:
        """``brokerIP2:haListenPort``; the HA port defaults to the listen port + 1."""
        return f"{self.host}:{self.port + 1}"

    @property
    def is_master(self) -> bool:
        return self.broker_id == MASTER_ID

    @property
    def delay_level_millis(self) -> tuple[int, ...]:
        """``message_delay_level`` parsed: level ``i``'s delay in ms at index ``i - 1``; its length is the max level."""
        return parse_message_delay_level(self.message_delay_level)


class ConfigDisk(Protocol):
    """Where a broker keeps its config files (``store.MemoryDisk`` / ``store.FileDisk``)."""

    def write_file(self, path: str, data: bytes) -> None: ...

    def read_file(self, path: str) -> bytes | None: ...


# ConfigManager file names under the store root (BrokerPathConfigHelper).
TOPICS_FILE = "config/topics.json"
CONSUMER_OFFSETS_FILE = "config/consumerOffset.json"
SUBSCRIPTION_GROUPS_FILE = "config/subscriptionGroup.json"


def load_json(disk: ConfigDisk, path: str) -> dict[str, Any] | None:
    """A config file's JSON object, or None when absent or unreadable (ConfigManager.load falls back the same way)."""
    data = disk.read_file(path)
    if not data:
        return None
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def save_json(disk: ConfigDisk, path: str, value: dict[str, Any]) -> None:
    disk.write_file(path, json.dumps(value, separators=(",", ":")).encode("utf-8"))
