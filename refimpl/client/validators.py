"""What a client checks before it sends (``Validators`` of 4.9.8) and the hash queue selector
(``SelectMessageQueueByHash``)."""

from __future__ import annotations

import string

from rocketspec.refimpl.client.errors import MQClientError
from rocketspec.refimpl.client.latency import int32, java_rem
from rocketspec.refimpl.message import Message, java_length, java_string_hash
from rocketspec.spec.java import is_blank
from rocketspec.spec.protocol import GROUP_MAX_LENGTH, NOT_ALLOWED_SEND_TOPICS, TOPIC_MAX_LENGTH, ResponseCode
from rocketspec.spec.queues import MessageQueue

# Validators.VALID_CHAR_BIT_MAP: a name is legal when every character is one of these (a trailing newline is not).
_NAME_CHARACTERS = frozenset("%|-_" + string.ascii_letters + string.digits)


def _legal(name: str) -> bool:
    return all(ch in _NAME_CHARACTERS for ch in name)


def check_group(group: str) -> None:
    """``Validators.checkGroup``."""
    if not isinstance(group, str) or is_blank(group):
        raise MQClientError("the specified group is blank")
    if java_length(group) > GROUP_MAX_LENGTH:
        raise MQClientError(f"the specified group is longer than group max length {GROUP_MAX_LENGTH}.")
    if not _legal(group):
        raise MQClientError(f"the specified group[{group}] contains illegal characters, allowing only "
                            "^[%|a-zA-Z0-9_-]+$")


def check_topic(topic: str) -> None:
    """``Validators.checkTopic``: blank by ``UtilAll.isBlank`` (Java's whitespace: a no-break space is not), the length
    in UTF-16 units, then every character from the legal set."""
    if not isinstance(topic, str) or is_blank(topic):
        raise MQClientError("The specified topic is blank")
    if java_length(topic) > TOPIC_MAX_LENGTH:
        raise MQClientError(f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}.")
    if not _legal(topic):
        raise MQClientError(f"The specified topic[{topic}] contains illegal characters, allowing only "
                            "^[%|a-zA-Z0-9_-]+$")


def check_message(msg: Message | None, max_message_size: int, body: bytes | None = None) -> None:
    """``Validators.checkMessage``: topic, a non-empty body no larger than ``maxMessageSize``."""
    if msg is None:
        raise MQClientError("the message is null", code=ResponseCode.MESSAGE_ILLEGAL)
    check_topic(msg.topic)
    if msg.topic in NOT_ALLOWED_SEND_TOPICS:
        raise MQClientError(f"Sending message to topic[{msg.topic}] is forbidden.")
    body = msg.body if body is None else body
    if body is None:
        raise MQClientError("the message body is null", code=ResponseCode.MESSAGE_ILLEGAL)
    if len(body) == 0:
        raise MQClientError("the message body length is zero", code=ResponseCode.MESSAGE_ILLEGAL)
    if len(body) > max_message_size:
        raise MQClientError(f"the message body size over max value, MAX: {max_message_size}",
                            code=ResponseCode.MESSAGE_ILLEGAL)


def java_hash_code(value: object) -> int:
    """``Object.hashCode`` of the usual selector arguments (String, Integer, Long, Boolean)."""
    if isinstance(value, bool):
        return 1231 if value else 1237
    if isinstance(value, str):
        return java_string_hash(value)
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return value
        v = value & 0xFFFFFFFFFFFFFFFF
        return int32(v ^ (v >> 32))
    return int32(hash(value))


def select_by_hash(queues: list[MessageQueue], msg: Message, arg: object) -> MessageQueue:
    """``SelectMessageQueueByHash``: ``arg.hashCode() % n``, made non-negative with ``Math.abs``."""
    return queues[abs(java_rem(java_hash_code(arg), len(queues)))]
