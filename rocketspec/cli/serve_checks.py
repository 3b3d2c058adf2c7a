"""What ``serve`` checks before it starts, so that a problem names the option behind it: ``--trace OUT: ...``,
``--data-dir D: ...``, ``--port P: ...``, ``--broker-port P: ...``, ``--host H: ...``, ``--advertise-host H: ...``.

The server itself would fail on the same problems, with a message that cannot say which option caused it; these
checks come first (a port taken between the check and the start still fails, as the server reports it).
"""

from __future__ import annotations

import contextlib
import socket
import tempfile
from pathlib import Path

from rocketspec.cli.errors import UsageError
from rocketspec.spec.protocol import VIP_CHANNEL_PORT_OFFSET

_WILDCARDS = ("", "0.0.0.0", "::")


def writable_dir(option: str, path: str, *, force: bool = False, empty: bool = False) -> None:
    """``path`` is a directory this process can write into, or one it can create; with ``empty``, one with nothing
    in it unless ``force``. Nothing is left behind: a directory made to find out is removed again."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{option} {path}: is a file, not a directory")
    if empty and out.is_dir() and any(out.iterdir()) and not force:
        raise UsageError(f"{option} {path}: the directory is not empty (use --force to add this run to it)")
    made = []
    parent = out
    while not parent.exists() and parent != parent.parent:
        made.append(parent)
        parent = parent.parent
    try:
        out.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=out).close()  # os.access says yes to root even on a read-only file system
    except OSError as error:
        raise UsageError(f"{option} {path}: cannot write there: {error.strerror or error}") from None
    finally:
        for directory in made:  # deepest first
            with contextlib.suppress(OSError):
                directory.rmdir()


def _bind_check(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (as the server binds: SO_REUSEADDR), or None."""
    try:
        family, kind, proto, _name, addr = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as error:
        return f"cannot resolve {host!r}: {error.strerror}"
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(addr)
        except OSError as error:
            return f"cannot listen on {host}:{port}: {error.strerror or error}"
    return None


def bindable_host(host: str) -> None:
    """``--host``: an address this machine can listen on."""
    problem = _bind_check(host, 0)
    if problem is not None:
        raise UsageError(f"--host {host}: {problem}")


def free_port(source: str, host: str, port: int) -> None:
    """The name server's port (``source`` names where it came from); 0 picks a free one."""
    if port == 0:
        return
    problem = _bind_check(host, port)
    if problem is not None:
        raise UsageError(f"{source}: {problem}")


def free_broker_ports(source: str, host: str, ports: list[int]) -> None:
    """Each broker's port and its VIP channel (port - 2) are free."""
    for port in ports:
        for wanted in (port, port - VIP_CHANNEL_PORT_OFFSET):
            problem = _bind_check(host, wanted)
            if problem is not None:
                raise UsageError(f"{source}: {problem}")


def resolvable(source: str, name: str | None) -> None:
    """The host brokers advertise resolves to an IPv4 address (message ids carry it as 4 bytes)."""
    if name is None or name in _WILDCARDS:
        return
    try:
        socket.gethostbyname(name)
    except OSError as error:
        raise UsageError(f"{source}: cannot resolve it to an IPv4 address for brokers to advertise: "
                         f"{error.strerror or error}") from None
