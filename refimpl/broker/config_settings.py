"""The 4.9.8 broker properties the reference broker has, by their Java names: the one table GET_BROKER_CONFIG,
UPDATE_BROKER_CONFIG (``admin_runtime``) and a broker configuration file (``config_file``) share.

Each entry names the ``BrokerConfig`` attribute, the Java field's type (``MixAll.properties2Object`` parses a value by
it), whether UPDATE_BROKER_CONFIG changes the setting at once (``live``; the others a 4.9.8 broker reads once, at
start-up), and how a Java value becomes the attribute and the attribute is printed back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import attrs

from rocketspec.refimpl.broker.config import parse_message_delay_level
from rocketspec.refimpl.properties import JAVA_BOOLEAN, JAVA_INT, JAVA_LONG, JAVA_STRING
from rocketspec.spec.java import parse_long

_HOUR_MS = 3_600_000
# ConsumeQueue.CQ_STORE_UNIT_SIZE: a consume-queue file holds mappedFileSizeConsumeQueue / 20 entries (rounded up).
_CQ_UNIT = 20
# FlushDiskType.valueOf (exact names) and the attribute's values.
_FLUSH = {"ASYNC_FLUSH": "async", "SYNC_FLUSH": "sync"}


def _same(value: Any) -> Any:
    return value


def _show(value: Any) -> str:
    """A value as Java's ``String.valueOf`` prints it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _flush(text: Any) -> str:
    if text not in _FLUSH:
        raise ValueError(f"expected one of {', '.join(_FLUSH)} (FlushDiskType.valueOf)")
    return _FLUSH[text]


def _delay_levels(text: Any) -> str:
    parse_message_delay_level(text)
    return str(text)


@attrs.frozen
class BrokerSetting:
    """One broker property (see the module docstring): ``to_attr`` turns the parsed Java value into the attribute's
    (raising ``ValueError`` with what is expected), ``show`` prints the attribute as the Java property."""

    attr: str
    java_type: str
    live: bool = False
    to_attr: Callable[[Any], Any] = _same
    show: Callable[[Any], str] = _show


def _live(attr: str, java_type: str, **kw: Any) -> BrokerSetting:
    return BrokerSetting(attr, java_type, True, **kw)


BROKER_SETTINGS: dict[str, BrokerSetting] = {
    "autoCreateTopicEnable": _live("auto_create_topic_enable", JAVA_BOOLEAN),
    "autoCreateSubscriptionGroup": _live("auto_create_subscription_group", JAVA_BOOLEAN),
    "defaultTopicQueueNums": _live("default_topic_queue_nums", JAVA_INT),
    "brokerPermission": _live("broker_permission", JAVA_INT),
    "longPollingEnable": _live("long_polling_enable", JAVA_BOOLEAN),
    "shortPollingTimeMills": _live("short_polling_time_ms", JAVA_LONG),
    "rejectTransactionMessage": _live("reject_transaction_message", JAVA_BOOLEAN),
    "transactionTimeOut": _live("transaction_timeout_ms", JAVA_LONG),
    "transactionCheckInterval": _live("transaction_check_interval_ms", JAVA_LONG),
    "transactionCheckMax": _live("transaction_check_max", JAVA_INT),
    "slaveReadEnable": _live("slave_read_enable", JAVA_BOOLEAN),
    "offsetCheckInSlave": _live("offset_check_in_slave", JAVA_BOOLEAN),
    "maxMessageSize": _live("max_message_size", JAVA_INT),
    "notifyConsumerIdsChangedEnable": _live("notify_consumer_ids_changed_enable", JAVA_BOOLEAN),
    "traceOn": _live("trace_on", JAVA_BOOLEAN),
    "regionId": _live("region_id", JAVA_STRING),
    "storeReplyMessageEnable": _live("store_reply_message_enable", JAVA_BOOLEAN),
    "messageIndexEnable": _live("message_index_enable", JAVA_BOOLEAN),
    "enablePropertyFilter": _live("enable_property_filter", JAVA_BOOLEAN),
    # MessageStoreConfig.fileReservedTime (hours): the cleaner reads it on every run (CleanCommitLogService).
    "fileReservedTime": _live("file_reserved_ms", JAVA_INT, to_attr=lambda hours: hours * _HOUR_MS,
                              show=lambda ms: str(ms // _HOUR_MS)),
    # Read once at start-up by a 4.9.8 broker (an update is only reported back).
    "brokerClusterName": BrokerSetting("cluster_name", JAVA_STRING),
    "messageDelayLevel": BrokerSetting("message_delay_level", JAVA_STRING, to_attr=_delay_levels),
    "flushDiskType": BrokerSetting("flush", JAVA_STRING, to_attr=_flush,
                                   show=lambda flush: "SYNC_FLUSH" if flush == "sync" else "ASYNC_FLUSH"),
    "mappedFileSizeCommitLog": BrokerSetting("segment_bytes", JAVA_INT),
    "mappedFileSizeConsumeQueue": BrokerSetting("cq_segment_entries", JAVA_INT,
                                                to_attr=lambda size: math.ceil(size / _CQ_UNIT),
                                                show=lambda entries: str(entries * _CQ_UNIT)),
    "registerNameServerPeriod": BrokerSetting("register_interval_ms", JAVA_INT),
    "clusterTopicEnable": BrokerSetting("cluster_topic_enable", JAVA_BOOLEAN),
    "brokerTopicEnable": BrokerSetting("broker_topic_enable", JAVA_BOOLEAN),
    "traceTopicEnable": BrokerSetting("trace_topic_enable", JAVA_BOOLEAN),
}


def update_value(setting: BrokerSetting, text: str) -> Any:
    """The attribute's new value for UPDATE_BROKER_CONFIG's ``text``, as ``properties2Object`` reads it:
    ``Boolean.parseBoolean`` (``true`` in any case, else false), ``Integer.parseInt`` / ``Long.parseLong`` (a
    ``ValueError`` where Java throws, and the setting is then left as it was), a ``String`` as given."""
    value: Any = text
    if setting.java_type == JAVA_BOOLEAN:
        value = text.lower() == "true"
    elif setting.java_type in (JAVA_INT, JAVA_LONG):
        value = parse_long(text, 32 if setting.java_type == JAVA_INT else 64)
        if value is None:
            raise ValueError(text)
    return setting.to_attr(value)


#: The settings UPDATE_BROKER_CONFIG changes at once: Java name -> (attribute, parse the Java text, print).
LIVE_SETTINGS: dict[str, tuple[str, Callable[[str], Any], Callable[[Any], str]]] = {
    key: (setting.attr, lambda text, setting=setting: update_value(setting, text), setting.show)  # type: ignore[misc]
    for key, setting in BROKER_SETTINGS.items() if setting.live
}
