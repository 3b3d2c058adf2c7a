"""Reading JSON as fastjson writes it: maps whose keys are objects or bare numbers.

RocketMQ's bodies are fastjson text (``RemotingSerializable.toJson``). A ``Map<MessageQueue, Long>`` is written with
the key object itself as the map key (``{{"brokerName":"b","queueId":0,"topic":"t"}:5}``) and a
``Map<Integer, ...>`` with a bare number (``{0:{...}}``): neither is JSON, so the standard parser refuses both. This
module is the one reader of that form; the reference implementation, the tests and the conformance suite each turn
an object key into what they need through ``object_key``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from typing import Any

_DECODER = json.JSONDecoder()
_SPACE = " \t\r\n"


def sorted_items(key: dict[str, Any]) -> Hashable:
    """The default map key for an object key: its items, sorted by name (a tuple of pairs)."""
    return tuple(sorted(key.items()))


def loads(data: bytes | bytearray | str, object_key: Callable[[dict[str, Any]], Hashable] = sorted_items) -> Any:
    """Parse fastjson text. A map key that is an object becomes ``object_key(the object)``; a bare numeric key an
    ``int``; everything else is read as JSON. Raises ``ValueError`` for text that is not fastjson (trailing data, a
    missing ``:``, ``,`` or closing bracket, truncated input)."""
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    try:
        value, pos = _value(text, 0, object_key)
    except IndexError:
        raise ValueError("truncated JSON") from None
    if _skip(text, pos) != len(text):
        raise ValueError(f"trailing data at {pos}")
    return value


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _SPACE:
        pos += 1
    return pos


def _value(text: str, pos: int, object_key: Callable[[dict[str, Any]], Hashable]) -> tuple[Any, int]:
    """One value at ``pos`` and the position after it."""
    pos = _skip(text, pos)
    if text.startswith("{", pos):
        out: dict[Any, Any] = {}

        def member(pos: int) -> int:
            key, pos = _value(text, pos, object_key)
            if isinstance(key, dict):
                key = object_key(key)
            elif isinstance(key, list):
                raise ValueError(f"a list as a map key at {pos}")
            pos = _skip(text, pos)
            if not text.startswith(":", pos):
                raise ValueError(f"':' expected at {pos}")
            out[key], pos = _value(text, pos + 1, object_key)
            return pos

        return out, _items(text, pos + 1, "}", member)
    if text.startswith("[", pos):
        items: list[Any] = []

        def element(pos: int) -> int:
            item, pos = _value(text, pos, object_key)
            items.append(item)
            return pos

        return items, _items(text, pos + 1, "]", element)
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as error:
        raise ValueError(str(error)) from None


def _items(text: str, pos: int, close: str, item: Callable[[int], int]) -> int:
    """Read ``item``s separated by ``,`` from ``pos`` up to ``close``; the position after ``close``."""
    pos = _skip(text, pos)
    while not text.startswith(close, pos):
        if pos >= len(text):
            raise ValueError("truncated JSON")
        pos = _skip(text, item(pos))
        if text.startswith(",", pos):
            pos = _skip(text, pos + 1)
        elif not text.startswith(close, pos):
            raise ValueError(f"',' or '{close}' expected at {pos}")
    return pos + 1
