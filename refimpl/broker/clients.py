"""Who is connected to a broker: consumer groups and producer groups (``ConsumerManager``, ``ConsumerGroupInfo``,
``ProducerManager``, ``ClientChannelInfo``) and the heartbeat body they are registered from (``HeartbeatData``).

Consumers and producers are keyed by their connection (channel). A heartbeat refreshes a channel's timestamp; the
housekeeping scan (every 10 s) drops channels silent for more than 120 s and closes them; a closed channel is removed
everywhere. When a consumer group's client set or subscriptions change the broker tells every consumer of the group
(NOTIFY_CONSUMER_IDS_CHANGED, ``DefaultConsumerIdsChangeListener``) so they rebalance at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Any, TypeVar

import attrs

from rocketspec.refimpl.message import java_string_hash
from rocketspec.refimpl.remoting import Channel
from rocketspec.spec.java import trim
from rocketspec.spec.protocol import (
    CONSUME_FROM_WHERE_ORDINALS,
    CONSUME_TYPE_ORDINALS,
    EXPRESSION_TYPE_TAG,
    MESSAGE_MODEL_ORDINALS,
    SUB_ALL,
    ConsumeFromWhere,
    ConsumeType,
    LanguageCode,
    MessageModel,
)

E = TypeVar("E", bound=Enum)


def is_tag_type(expression_type: str | None) -> bool:
    """``ExpressionType.isTagType``: no type, an empty one or TAG."""
    return expression_type is None or expression_type == "" or expression_type == EXPRESSION_TYPE_TAG


@attrs.frozen
class SubscriptionData:
    """``SubscriptionData``: a consumer's filter on one topic (tag expression ``A || B`` or ``*``)."""

    topic: str
    sub_string: str = SUB_ALL
    tags_set: frozenset[str] = frozenset()
    code_set: frozenset[int] = frozenset()
    sub_version: int = 0
    expression_type: str = EXPRESSION_TYPE_TAG
    class_filter_mode: bool = False

    def matches(self, tags_code: int | None) -> bool:
        """``ExpressionMessageFilter.isMatchedByConsumeQueue`` for tag subscriptions: ``*`` or an unknown code
        matches everything, otherwise the message's tag code must be one of the subscribed tags' hash codes."""
        if self.class_filter_mode or not is_tag_type(self.expression_type):
            return True
        if tags_code is None or self.sub_string == SUB_ALL:
            return True
        # Tag codes are stored as int64; the hash set holds the int32 hash (Long.intValue()).
        code = tags_code & 0xFFFFFFFF
        code = code - (1 << 32) if code & 0x80000000 else code
        return code in self.code_set

    @classmethod
    def build(cls, topic: str, sub_string: str | None, expression_type: str | None = None,
              sub_version: int = 0) -> SubscriptionData:
        """``FilterAPI.build``: ``*``/empty subscribes to all, else ``||``-separated tags (trimmed, empties skipped).

        Raises ``ValueError`` for an empty non-tag expression or a tag expression of ``||`` separators only (the
        broker answers SUBSCRIPTION_PARSE_FAILED).
        """
        if not is_tag_type(expression_type):
            if not sub_string:
                raise ValueError(f"Expression can't be null! {expression_type}")
            return cls(topic, sub_string, sub_version=sub_version, expression_type=str(expression_type))
        if sub_string is None or sub_string == SUB_ALL or sub_string == "":
            return cls(topic, SUB_ALL, sub_version=sub_version)
        pieces = sub_string.split("||")
        if not any(pieces):
            # Java's split drops trailing empty pieces: a string of separators only gives none ("subString split
            # error").
            raise ValueError("subString split error")
        tags = [trim(t) for t in pieces if trim(t)]  # String.trim, not Python's strip
        return cls(topic, sub_string, frozenset(tags), frozenset(java_string_hash(t) for t in tags), sub_version)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SubscriptionData:
        """A heartbeat's ``subscriptionDataSet`` entry; codes are recomputed from the tags when absent."""
        topic = data.get("topic")
        if not isinstance(topic, str) or not topic:
            raise ValueError("subscription data without a topic")
        tags = frozenset(str(t) for t in (data.get("tagsSet") or ()))
        codes_raw = data.get("codeSet")
        codes = frozenset(int(c) for c in codes_raw) if codes_raw else frozenset(java_string_hash(t) for t in tags)
        sub_string = data.get("subString")
        return cls(
            topic=topic,
            sub_string=SUB_ALL if sub_string is None else str(sub_string),
            tags_set=tags,
            code_set=codes,
            sub_version=int(data.get("subVersion") or 0),
            expression_type=str(data.get("expressionType") or EXPRESSION_TYPE_TAG),
            class_filter_mode=bool(data.get("classFilterMode", False)),
        )


def subscription_json(sub: SubscriptionData) -> dict[str, Any]:
    """``SubscriptionData`` as fastjson writes it (``filterClassSource`` is not serialized)."""
    return {"classFilterMode": sub.class_filter_mode, "codeSet": sorted(sub.code_set),
            "expressionType": sub.expression_type, "subString": sub.sub_string, "subVersion": sub.sub_version,
            "tagsSet": sorted(sub.tags_set), "topic": sub.topic}


def parse_enum(enum_type: type[E], value: Any, ordinals: tuple[str, ...], default: E) -> E | str:
    """A Java enum sent as its name or its ordinal; names the Python enum lacks (deprecated values) stay text."""
    if value is None:
        return default
    name: str
    if isinstance(value, bool):
        raise ValueError(f"bad {enum_type.__name__} value {value!r}")
    if isinstance(value, int) or (isinstance(value, str) and value.lstrip("-").isdigit()):
        index = int(value)
        if not 0 <= index < len(ordinals):
            raise ValueError(f"bad {enum_type.__name__} ordinal {value!r}")
        name = ordinals[index]
    elif isinstance(value, str):
        name = value
    else:
        raise ValueError(f"bad {enum_type.__name__} value {value!r}")
    try:
        return enum_type[name]
    except KeyError:
        if name in ordinals:
            return name
        raise ValueError(f"bad {enum_type.__name__} value {value!r}") from None


@attrs.define
class ConsumerData:
    """One ``consumerDataSet`` entry of a heartbeat."""

    group_name: str
    consume_type: ConsumeType | str
    message_model: MessageModel | str
    consume_from_where: ConsumeFromWhere | str
    subscriptions: list[SubscriptionData]
    unit_mode: bool = False


@attrs.define
class HeartbeatData:
    """``HeartbeatData``: the client id, its producer groups and its consumer groups."""

    client_id: str
    producer_groups: list[str]
    consumers: list[ConsumerData]

    @classmethod
    def decode(cls, body: bytes | None) -> HeartbeatData:
        """Parse the JSON body; raises ``ValueError`` on anything malformed."""
        if not body:
            raise ValueError("heartbeat body is empty")
        data = json.loads(body.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("heartbeat body is not a JSON object")
        client_id = data.get("clientID")
        if not isinstance(client_id, str) or not client_id:
            raise ValueError("heartbeat without clientID")
        producers = []
        for entry in data.get("producerDataSet") or ():
            if not isinstance(entry, dict) or not isinstance(entry.get("groupName"), str):
                raise ValueError("bad producerDataSet entry")
            producers.append(entry["groupName"])
        consumers = []
        for entry in data.get("consumerDataSet") or ():
            if not isinstance(entry, dict) or not isinstance(entry.get("groupName"), str):
                raise ValueError("bad consumerDataSet entry")
            subs_raw = entry.get("subscriptionDataSet") or ()
            if not all(isinstance(s, dict) for s in subs_raw):
                raise ValueError("bad subscriptionDataSet entry")
            consumers.append(ConsumerData(
                group_name=entry["groupName"],
                consume_type=parse_enum(ConsumeType, entry.get("consumeType"), CONSUME_TYPE_ORDINALS,
                                        ConsumeType.CONSUME_PASSIVELY),
                message_model=parse_enum(MessageModel, entry.get("messageModel"), MESSAGE_MODEL_ORDINALS,
                                         MessageModel.CLUSTERING),
                consume_from_where=parse_enum(ConsumeFromWhere, entry.get("consumeFromWhere"),
                                              CONSUME_FROM_WHERE_ORDINALS, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET),
                subscriptions=[SubscriptionData.from_json(s) for s in subs_raw],
                unit_mode=bool(entry.get("unitMode", False)),
            ))
        return cls(client_id, producers, consumers)


@attrs.define(eq=False)
class ClientChannelInfo:
    """``ClientChannelInfo``: a connection, the client id behind it, its language/version and last heartbeat."""

    channel: Channel
    client_id: str
    language: int = LanguageCode.JAVA
    version: int = 0
    last_update: int = 0


class ConsumerGroupInfo:
    """``ConsumerGroupInfo``: the channels and subscriptions of one consumer group."""

    def __init__(self, group: str, consume_type: ConsumeType | str, message_model: MessageModel | str,
                 consume_from_where: ConsumeFromWhere | str, now_ms: int) -> None:
        self.group = group
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.channels: dict[Channel, ClientChannelInfo] = {}
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.last_update = now_ms

    def client_ids(self) -> list[str]:
        return [info.client_id for info in self.channels.values()]

    def all_channels(self) -> list[Channel]:
        return list(self.channels)

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        return next((info for info in self.channels.values() if info.client_id == client_id), None)

    def find_subscription(self, topic: str) -> SubscriptionData | None:
        return self.subscriptions.get(topic)

    def update_channel(self, info: ClientChannelInfo, consume_type: ConsumeType | str,
                       message_model: MessageModel | str, consume_from_where: ConsumeFromWhere | str,
                       now_ms: int) -> bool:
        """``updateChannel``: True when the channel is new to the group; refreshes its heartbeat time."""
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        updated = False
        old = self.channels.get(info.channel)
        if old is None:
            self.channels[info.channel] = info
            old = info
            updated = True
        elif old.client_id != info.client_id:
            # RocketMQ logs this as a bug and replaces the entry without counting it as a change.
            self.channels[info.channel] = info
        self.last_update = now_ms
        old.last_update = now_ms
        return updated

    def update_subscriptions(self, subscriptions: list[SubscriptionData], now_ms: int) -> bool:
        """``updateSubscription``: True when a topic is added or removed (a newer subVersion replaces silently)."""
        updated = False
        topics = set()
        for sub in subscriptions:
            topics.add(sub.topic)
            old = self.subscriptions.get(sub.topic)
            if old is None:
                self.subscriptions[sub.topic] = sub
                updated = True
            elif sub.sub_version > old.sub_version:
                self.subscriptions[sub.topic] = sub
        for topic in [t for t in self.subscriptions if t not in topics]:
            del self.subscriptions[topic]
            updated = True
        self.last_update = now_ms
        return updated


class ConsumerManager:
    """``ConsumerManager``: consumer groups by name; ``on_change(group, channels)`` is the CHANGE listener."""

    def __init__(self, on_change: Callable[[str, list[Channel]], None]) -> None:
        self._on_change = on_change
        self.table: dict[str, ConsumerGroupInfo] = {}

    def get(self, group: str) -> ConsumerGroupInfo | None:
        return self.table.get(group)

    def groups(self) -> Iterator[ConsumerGroupInfo]:
        return iter(list(self.table.values()))

    def find_subscription(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.table.get(group)
        return info.find_subscription(topic) if info is not None else None

    def register(self, group: str, info: ClientChannelInfo, consume_type: ConsumeType | str,
                 message_model: MessageModel | str, consume_from_where: ConsumeFromWhere | str,
                 subscriptions: list[SubscriptionData], notify: bool, now_ms: int) -> bool:
        """``registerConsumer``: returns whether the client set or the subscribed topics changed; on a change the
        group's consumers are notified when the group's notify flag is on."""
        group_info = self.table.get(group)
        if group_info is None:
            group_info = ConsumerGroupInfo(group, consume_type, message_model, consume_from_where, now_ms)
            self.table[group] = group_info
        r1 = group_info.update_channel(info, consume_type, message_model, consume_from_where, now_ms)
        r2 = group_info.update_subscriptions(subscriptions, now_ms)
        if (r1 or r2) and notify:
            self._on_change(group, group_info.all_channels())
        return r1 or r2

    def unregister(self, group: str, channel: Channel, notify: bool) -> None:
        """``unregisterConsumer``: remove the channel (and the group when empty), then notify the rest."""
        group_info = self.table.get(group)
        if group_info is None:
            return
        group_info.channels.pop(channel, None)
        if not group_info.channels:
            self.table.pop(group, None)
        if notify:
            self._on_change(group, group_info.all_channels())

    def channel_closed(self, channel: Channel) -> list[str]:
        """``doChannelCloseEvent``: drop the channel from every group and notify those groups (regardless of their
        notify flag, as RocketMQ does); returns the groups it left."""
        left = []
        for group, group_info in list(self.table.items()):
            if group_info.channels.pop(channel, None) is None:
                continue
            left.append(group)
            if not group_info.channels:
                self.table.pop(group, None)
            self._on_change(group, group_info.all_channels())
        return left

    def scan_not_active(self, now_ms: int, expired_ms: int) -> list[Channel]:
        """``scanNotActiveChannel``: remove channels silent for more than ``expired_ms`` (no notification: the
        channel is already gone when its close event arrives); returns them for the caller to close."""
        expired: list[Channel] = []
        for group, group_info in list(self.table.items()):
            for channel, info in list(group_info.channels.items()):
                if now_ms - info.last_update > expired_ms:
                    del group_info.channels[channel]
                    expired.append(channel)
            if not group_info.channels:
                del self.table[group]
        return expired


class ProducerManager:
    """``ProducerManager``: producer groups → channels, for transaction check-backs."""

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock
        self.table: dict[str, dict[Channel, ClientChannelInfo]] = {}
        self._client_channels: dict[str, Channel] = {}
        self._counter = 0

    def register(self, group: str, channel: Channel, client_id: str, *, language: int = LanguageCode.JAVA,
                 version: int = 0) -> None:
        """``registerProducer``: add the channel, or refresh its heartbeat time."""
        channels = self.table.setdefault(group, {})
        found = channels.get(channel)
        if found is None:
            channels[channel] = ClientChannelInfo(channel, client_id, language, version, self._clock())
            self._client_channels[client_id] = channel
        else:
            found.last_update = self._clock()

    def unregister(self, group: str, channel: Channel, client_id: str) -> None:
        """``unregisterProducer``."""
        channels = self.table.get(group)
        if not channels:
            return
        channels.pop(channel, None)
        self._client_channels.pop(client_id, None)
        if not channels:
            del self.table[group]

    def channels(self, group: str) -> list[tuple[Channel, str]]:
        return [(channel, info.client_id) for channel, info in self.table.get(group, {}).items()]

    def any_channel(self, group: str | None) -> Channel | None:
        """``getAvailableChannel``: round robin from a counter, up to 3 more tries for an active channel, else the
        last active one seen."""
        if group is None:
            return None
        channel_list = list(self.table.get(group, {}))
        if not channel_list:
            return None
        self._counter = (self._counter + 1) & 0x7FFFFFFF
        index = self._counter % len(channel_list)
        # Channels here are always writable, so "active but not writable" (RocketMQ's last resort) never occurs.
        for _ in range(3):
            channel = channel_list[index]
            if channel.active:
                return channel
            index = (index + 1) % len(channel_list)
        return None

    def find_channel(self, client_id: str) -> Channel | None:
        return self._client_channels.get(client_id)

    def channel_closed(self, channel: Channel) -> None:
        """``doChannelCloseEvent``: the channel leaves every producer group (empty groups stay, as in RocketMQ)."""
        for channels in self.table.values():
            info = channels.pop(channel, None)
            if info is not None:
                self._client_channels.pop(info.client_id, None)

    def scan_not_active(self, now_ms: int, expired_ms: int) -> list[Channel]:
        """``scanNotActiveChannel``: remove channels silent for more than ``expired_ms``; returns them to close."""
        expired: list[Channel] = []
        for channels in self.table.values():
            for channel, info in list(channels.items()):
                if now_ms - info.last_update > expired_ms:
                    del channels[channel]
                    self._client_channels.pop(info.client_id, None)
                    expired.append(channel)
        return expired
