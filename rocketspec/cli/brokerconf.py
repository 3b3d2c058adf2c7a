"""``serve --broker-config FILE`` and ``--namesrv-config FILE``: RocketMQ configuration files, merged with the flags.

A file is read as 4.9.8 reads ``mqbroker -c`` / ``mqnamesrv -c`` (ISO 8859-1, ``Properties.load``); which keys the
reference servers take, and how, is the library's (``refimpl.broker.config_file``, ``refimpl.namesrv_config``). The
rule here: **a flag given on the command line overrides the file**, and every problem is one line naming the option,
the file and, where there is one, the line (``--broker-config FILE line 7: ...``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TypeVar

import attrs

from rocketspec.cli.errors import UsageError
from rocketspec.refimpl.broker.config_file import load_broker_file
from rocketspec.refimpl.namesrv_config import load_namesrv_file
from rocketspec.refimpl.properties import ConfigFileError
from rocketspec.spec.protocol import DEFAULT_NAMESRV_PORT, SERVER_CHANNEL_MAX_IDLE_S

BROKER_OPTION = "--broker-config"
NAMESRV_OPTION = "--namesrv-config"
T = TypeVar("T")


def read_text(option: str, path: str) -> str:
    """The file's text as ``Properties.load(InputStream)`` decodes it (ISO 8859-1: every byte is a character)."""
    try:
        with open(path, "rb") as file:
            return file.read().decode("latin-1")
    except OSError as error:
        raise UsageError(f"{option} {path}: cannot read: {error.strerror or error}") from None


def load_file(option: str, path: str | None, load: Callable[[str], T]) -> T | None:
    """The configuration file given to ``option`` read by ``load``, or None when the option was not given; its
    errors as one line naming the option, the file and the line."""
    if path is None:
        return None
    try:
        return load(read_text(option, path))
    except ConfigFileError as error:
        raise UsageError(f"{option} {path} {error}") from None


@attrs.frozen
class Sourced:
    """A value and where it came from, for error messages (``--port 9876`` or ``--namesrv-config F line 2:
    listenPort 9876``)."""

    value: Any
    source: str


def _pick(flag: str, given: Any, files: list[tuple[str, str, Any, str]], default: Any) -> Sourced:
    """The flag's value when given, else the first file's that sets ``key`` (option, path, file, key), else the
    default. Two files setting one of serve's shared values differently is an error."""
    if given is not None:
        return Sourced(given, f"{flag} {given}")
    found = [(option, path, file, key) for option, path, file, key in files
             if file is not None and key in file.serve]
    values = {file.serve[key] for _option, _path, file, key in found}
    if len(values) > 1:
        said = ", ".join(f"{option} {path} line {file.lines[key]} says {file.serve[key]}"
                         for option, path, file, key in found)
        raise UsageError(f"{said}: serve has one {flag} for every listener; set it once (or give {flag})")
    if not found:
        return Sourced(default, f"{flag} {default}")
    option, path, file, key = found[0]
    return Sourced(file.serve[key], f"{option} {path} line {file.lines[key]}: {key} {file.serve[key]}")


@attrs.frozen
class ServeConfig:
    """What ``serve`` runs with once the files and the flags are merged: the name server's port, the first broker's
    port (None: free ports), the advertised host, the idle timeout, the ``BrokerConfig`` options (``flush`` apart),
    ``flush``, whether ACL must be on, the name server's start-up settings, and a note of the keys ignored."""

    port: Sourced
    broker_port: Sourced
    advertise_host: Sourced
    idle_close: Sourced
    broker_options: dict[str, Any]
    flush: str
    namesrv_settings: dict[str, str]
    notes: tuple[str, ...]


def _check_port(picked: Sourced, *, zero_is_free: bool) -> Sourced:
    value = picked.value
    if value is None or (zero_is_free and value == 0):
        return Sourced(None if zero_is_free else 0, picked.source)
    if not 0 <= value <= 65535:
        raise UsageError(f"{picked.source}: not a port (0 to 65535)")
    return picked


def serve_config(args: argparse.Namespace) -> ServeConfig:
    """Merge ``--broker-config`` and ``--namesrv-config`` with the flags (a flag given wins)."""
    broker = load_file(BROKER_OPTION, args.broker_config, load_broker_file)
    namesrv = load_file(NAMESRV_OPTION, args.namesrv_config, load_namesrv_file)
    bpath, npath = args.broker_config, args.namesrv_config
    options: dict[str, Any] = dict(broker.options) if broker else {}
    flush = args.flush or options.pop("flush", None) or "async"
    options.pop("flush", None)
    if args.message_delay_level:
        options["message_delay_level"] = args.message_delay_level
    if args.enable_property_filter:
        options["enable_property_filter"] = True
    if broker is not None and broker.serve.get("aclEnable") and not args.acl:
        raise UsageError(f"{BROKER_OPTION} {bpath} line {broker.lines['aclEnable']}: aclEnable=true needs --acl "
                         "FILE (the plain_acl.yml a 4.9.8 broker reads from ROCKETMQ_HOME/conf)")
    port = _check_port(_pick("--port", args.port, [(NAMESRV_OPTION, npath, namesrv, "listenPort")],
                             DEFAULT_NAMESRV_PORT), zero_is_free=False)
    broker_port = _check_port(_pick("--broker-port", args.broker_port, [(BROKER_OPTION, bpath, broker, "listenPort")],
                                    None), zero_is_free=True)
    advertise = _pick("--advertise-host", args.advertise_host, [(BROKER_OPTION, bpath, broker, "brokerIP1")], None)
    idle = _pick("--idle-close", args.idle_close, [(BROKER_OPTION, bpath, broker, "serverChannelMaxIdleTimeSeconds"),
                                                   (NAMESRV_OPTION, npath, namesrv, "serverChannelMaxIdleTimeSeconds")],
                 SERVER_CHANNEL_MAX_IDLE_S)
    if idle.value < 0:
        raise UsageError(f"{idle.source}: must not be negative")
    notes = tuple(f"{option} {path}: ignored (serve decides these itself or they change nothing a client sees; "
                  f"docs/serve.md): {', '.join(file.ignored)}"
                  for option, path, file in ((BROKER_OPTION, bpath, broker), (NAMESRV_OPTION, npath, namesrv))
                  if file is not None and file.ignored)
    return ServeConfig(port, broker_port, advertise, idle, options, flush,
                       dict(namesrv.settings) if namesrv else {}, notes)
