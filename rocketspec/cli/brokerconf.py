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
from rocketspec.refimpl.broker.config_file import BrokerFile, load_broker_file
from rocketspec.refimpl.cluster import delay_table
from rocketspec.refimpl.namesrv_config import load_namesrv_file
from rocketspec.refimpl.properties import ConfigFileError
from rocketspec.spec.protocol import DEFAULT_NAMESRV_PORT, SERVER_CHANNEL_MAX_IDLE_S, VIP_CHANNEL_PORT_OFFSET

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


#: A configuration file as ``_pick`` reads it: (option, path, what the file sets or None, key).
_Found = tuple[str, str, Any, str]


def _pick(flag: str, given: Any, files: list[_Found], default: Any) -> Sourced:
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
    """What ``serve`` runs with once the files and the flags are merged: the name server's port, the brokers' ports
    (None: free ports) and where they came from, the advertised host, the idle timeout, each broker's
    ``BrokerConfig`` options (``flush`` among them), whether ACL must be on, the name server's start-up settings,
    and a note of the keys ignored."""

    port: Sourced
    broker_ports: list[int] | None
    broker_ports_source: str
    advertise_host: Sourced
    idle_close: Sourced
    broker_settings: list[dict[str, Any]]
    namesrv_settings: dict[str, str]
    notes: tuple[str, ...]


def _check_port(picked: Sourced, *, zero_is_free: bool) -> Sourced:
    value = picked.value
    if value is None or (zero_is_free and value == 0):
        return Sourced(None if zero_is_free else 0, picked.source)
    if not 0 <= value <= 65535:
        raise UsageError(f"{picked.source}: not a port (0 to 65535)")
    return picked


def _spaced_ports(picked: Sourced, brokers: int) -> list[int] | None:
    """``--broker-port P`` (or one file's ``listenPort``): broker i listens on P + 10 i (and on that port - 2, the
    VIP channel); None: free ports."""
    if picked.value is None:
        return None
    ports = [picked.value + 10 * i for i in range(brokers)]
    if ports[0] < 3 or ports[-1] > 65535:
        raise UsageError(f"{picked.source} leaves no room for {brokers} broker(s) "
                         f"(ports {ports[0]}..{ports[-1]}, each with its port - 2)")
    return ports


def _own_ports(files: list[tuple[str, BrokerFile]]) -> tuple[list[int] | None, str]:
    """One file per broker: each broker on its file's ``listenPort`` (every file sets one, or none does)."""
    setting = [(path, file) for path, file in files if "listenPort" in file.serve]
    if not setting:
        return None, "free ports"
    if len(setting) != len(files):
        lacking = ", ".join(path for path, file in files if "listenPort" not in file.serve)
        raise UsageError(f"{BROKER_OPTION} {setting[0][0]} sets listenPort and {lacking} does not: with one file per "
                         "broker, set it in every file or in none (or give --broker-port)")
    ports = []
    for path, file in setting:
        port = file.serve["listenPort"]
        source = f"{BROKER_OPTION} {path} line {file.lines['listenPort']}: listenPort {port}"
        if not VIP_CHANNEL_PORT_OFFSET < port <= 65535:
            raise UsageError(f"{source}: not a port a broker can listen on (with its port - 2)")
        if port in ports or port - VIP_CHANNEL_PORT_OFFSET in ports or port + VIP_CHANNEL_PORT_OFFSET in ports:
            raise UsageError(f"{source}: another file's broker listens there (each broker also takes its port - 2)")
        ports.append(port)
    return ports, ", ".join(f"{BROKER_OPTION} {path} listenPort" for path, _file in setting)


def _broker_files(args: argparse.Namespace) -> list[tuple[str, BrokerFile]]:
    """The ``--broker-config`` files read: none, one for every broker, or one per broker in order."""
    paths: list[str] = args.broker_config or []
    if len(paths) not in (0, 1, args.brokers):
        raise UsageError(f"{BROKER_OPTION} is given {len(paths)} times for {args.brokers} broker(s): give one file "
                         "for every broker, or one per broker in order")
    files = []
    for path in paths:
        loaded = load_file(BROKER_OPTION, path, load_broker_file)
        assert loaded is not None  # (a path was given)
        files.append((path, loaded))
    return files


def _one_delay_table(files: list[tuple[str, BrokerFile]]) -> None:
    """Every broker has one delay table (a served run's trace is judged by it): per-broker files agree on it."""
    tables = {delay_table(file.options) for _path, file in files}
    if len(tables) > 1:
        said = ", ".join(f"{path} " + (f"line {file.lines['messageDelayLevel']}" if "messageDelayLevel" in file.lines
                                       else "(the default)") for path, file in files)
        raise UsageError(f"{BROKER_OPTION} files set different messageDelayLevel ({said}): serve's brokers share "
                         "one delay table; set the same in each (or give --message-delay-level)")


def serve_config(args: argparse.Namespace) -> ServeConfig:
    """Merge ``--broker-config`` and ``--namesrv-config`` with the flags (a flag given wins)."""
    files = _broker_files(args)
    namesrv = load_file(NAMESRV_OPTION, args.namesrv_config, load_namesrv_file)
    npath = args.namesrv_config
    found = [(BROKER_OPTION, path, file) for path, file in files]
    settings = [dict(file.options) for _path, file in files] if len(files) > 1 else \
        [dict(files[0][1].options) if files else {} for _ in range(args.brokers)]
    if args.message_delay_level is None:
        _one_delay_table(files)
    for options in settings:
        options.setdefault("flush", "async")
        if args.flush:
            options["flush"] = args.flush
        if args.message_delay_level:
            options["message_delay_level"] = args.message_delay_level
        if args.enable_property_filter:
            options["enable_property_filter"] = True
    acl = [(path, file) for path, file in files if file.serve.get("aclEnable")]
    if acl and not args.acl:
        path, file = acl[0]
        raise UsageError(f"{BROKER_OPTION} {path} line {file.lines['aclEnable']}: aclEnable=true needs --acl FILE "
                         "(the plain_acl.yml a 4.9.8 broker reads from ROCKETMQ_HOME/conf)")
    if acl and len(acl) != len(files):
        raise UsageError(f"{BROKER_OPTION} {acl[0][0]} sets aclEnable=true and another file does not: serve checks "
                         "ACL (--acl) at every broker")
    port = _check_port(_pick("--port", args.port, [(NAMESRV_OPTION, npath, namesrv, "listenPort")],
                             DEFAULT_NAMESRV_PORT), zero_is_free=False)
    if args.broker_port is None and len(files) > 1:  # one file per broker: each its own listenPort
        ports, ports_source = _own_ports(files)
    else:
        picked = _check_port(_pick("--broker-port", args.broker_port,
                                   [(option, path, file, "listenPort") for option, path, file in found], None),
                             zero_is_free=True)
        ports, ports_source = _spaced_ports(picked, args.brokers), picked.source
    advertise = _pick("--advertise-host", args.advertise_host,
                      [(option, path, file, "brokerIP1") for option, path, file in found], None)
    idle = _pick("--idle-close", args.idle_close,
                 [*((option, path, file, "serverChannelMaxIdleTimeSeconds") for option, path, file in found),
                  (NAMESRV_OPTION, npath, namesrv, "serverChannelMaxIdleTimeSeconds")],
                 SERVER_CHANNEL_MAX_IDLE_S)
    if idle.value < 0:
        raise UsageError(f"{idle.source}: must not be negative")
    notes = tuple(f"{option} {path}: ignored (serve decides these itself or they change nothing a client sees; "
                  f"docs/serve.md): {', '.join(file.ignored)}"
                  for option, path, file in (*found, (NAMESRV_OPTION, npath, namesrv))
                  if file is not None and file.ignored)
    return ServeConfig(port, ports, ports_source, advertise, idle, settings,
                       dict(namesrv.settings) if namesrv else {}, notes)
