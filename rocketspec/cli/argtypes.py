"""argparse value types of the command line's options: a bad value is a one-line usage error (exit status 2).

Each value type is defined once here and used by every command that takes such a value; the rules behind them have
one owner each in the library (HOST:PORT: ``spec.protocol.split_addr``; topic names:
``refimpl.broker.topics.validate_topic``; delay levels: ``refimpl.broker.config.parse_message_delay_level``).
"""

from __future__ import annotations

import argparse
import math

from rocketspec.refimpl.broker.config import parse_message_delay_level
from rocketspec.refimpl.broker.topics import validate_topic
from rocketspec.spec.protocol import split_addr

#: Queues of a topic named without ``:QUEUES`` (as RocketMQ's ``defaultTopicQueueNums``).
DEFAULT_TOPIC_QUEUES = 4


def _number(text: str, kind: type, what: str) -> int | float:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None


def positive_float(text: str) -> float:
    value = float(_number(text, float, "a number"))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def positive_int(text: str) -> int:
    value = int(_number(text, int, "a whole number"))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def non_negative_int(text: str) -> int:
    value = int(_number(text, int, "a whole number"))
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return value


def non_negative_float(text: str) -> float:
    value = float(_number(text, float, "a number"))
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0: {text}")
    return value


def port_number(text: str) -> int:
    """A TCP port, 0 to 65535 (0: the system picks a free one)."""
    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a port: {text}")
    return value


def host_port(text: str) -> str:
    """A ``HOST:PORT`` address (``[v6]:PORT`` too), returned as given."""
    try:
        split_addr(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def topic_spec(text: str) -> tuple[str, int]:
    """``NAME`` or ``NAME:QUEUES`` (:data:`DEFAULT_TOPIC_QUEUES` queues by default)."""
    name, _, queues = text.partition(":")
    if not name:
        raise argparse.ArgumentTypeError(f"a topic needs a name: {text!r}")
    problem = validate_topic(name)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{problem}: {name!r}")
    if not queues:
        return name, DEFAULT_TOPIC_QUEUES
    return name, positive_int(queues)


def delay_levels(text: str) -> tuple[int, ...]:
    """A ``messageDelayLevel`` string (``1s 5s 10s ...``) as the ms of each level, as a broker takes it."""
    try:
        return parse_message_delay_level(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def delay_level_text(text: str) -> str:
    """A ``messageDelayLevel`` string a broker takes (checked by :func:`delay_levels`), as it was given."""
    delay_levels(text)
    return text
