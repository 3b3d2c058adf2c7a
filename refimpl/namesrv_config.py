"""A name server configuration file (``mqnamesrv -c FILE``) as the reference name server takes it.

4.9.8's ``NamesrvStartup`` reads the file with ``Properties.load`` (``refimpl.properties``) into ``NamesrvConfig``
and ``NettyServerConfig`` (``MixAll.properties2Object``). Here every key of the file is one of:

- a property of those two (``spec.protocol.NAMESRV_CONFIG_DEFAULTS``), parsed by its Java type: the name server
  starts with it (GET_NAMESRV_CONFIG reports it, UPDATE_NAMESRV_CONFIG's black list reads ``configBlackList``,
  ``orderMessageEnable`` changes routes) and keeps it across restarts;
- one ``serve`` takes from its own options (:data:`SERVE_KEYS`: ``listenPort`` is ``--port``,
  ``serverChannelMaxIdleTimeSeconds`` is ``--idle-close``), used where the option is not given;
- a path (:data:`IGNORED`: the reference name server writes no files): accepted and ignored;
- anything else is an error naming the key and its line, as is a value that does not parse.
"""

from __future__ import annotations

from typing import Any

import attrs

from rocketspec.refimpl.properties import (
    JAVA_BOOLEAN,
    JAVA_INT,
    JAVA_STRING,
    ConfigFileError,
    expected,
    file_entries,
    java_setting,
)
from rocketspec.spec.java import parse_long
from rocketspec.spec.protocol import NAMESRV_CONFIG_DEFAULTS

#: Settings ``serve`` takes from its own options when they are not given on the command line.
SERVE_KEYS: dict[str, str] = {"listenPort": JAVA_INT, "serverChannelMaxIdleTimeSeconds": JAVA_INT}
#: Accepted and ignored: the paths of the files a 4.9.8 name server keeps (the reference one keeps them in memory).
IGNORED: tuple[str, ...] = ("rocketmqHome", "kvConfigPath", "configStorePath")
_DEFAULTS = dict(NAMESRV_CONFIG_DEFAULTS)


def _java_type(default: str) -> str:
    """A property's Java type, read off its default (``NamesrvConfig`` / ``NettyServerConfig`` have booleans, ints
    and strings)."""
    if default in ("true", "false"):
        return JAVA_BOOLEAN
    return JAVA_INT if parse_long(default, 32) is not None else JAVA_STRING


@attrs.frozen
class NamesrvFile:
    """What a name server configuration file sets: ``settings`` (property -> value as Java prints it, for
    ``NamesrvAdmin.configure``), ``serve`` (:data:`SERVE_KEYS` values), the keys ``ignored`` and each key's line."""

    settings: dict[str, str]
    serve: dict[str, Any]
    ignored: tuple[str, ...]
    lines: dict[str, int]


def load_namesrv_file(text: str) -> NamesrvFile:
    """Read a name server configuration file's text (see the module docstring); ``ConfigFileError``
    (``line N: ...``) for a key that is not a 4.9.8 name server property, or a value that does not parse."""
    last = file_entries(text)
    settings: dict[str, str] = {}
    serve: dict[str, Any] = {}
    ignored: list[str] = []
    for key, entry in last.items():
        where = f"line {entry.line}: {key}"
        if key in IGNORED:
            ignored.append(key)
            continue
        if key not in _DEFAULTS:
            raise ConfigFileError(f"{where} is not a name server setting the reference name server models")
        java_type = SERVE_KEYS.get(key) or _java_type(_DEFAULTS[key])
        try:
            value = java_setting(entry.value, java_type)
        except ValueError:
            raise ConfigFileError(f"{where} is {entry.value!r}: expected {expected(java_type)}") from None
        if key in SERVE_KEYS:
            serve[key] = value
        else:
            settings[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return NamesrvFile(settings, serve, tuple(ignored), {key: entry.line for key, entry in last.items()})
