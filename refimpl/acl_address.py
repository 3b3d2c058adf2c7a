"""White remote address patterns of plain ACL (``RemoteAddressStrategyFactory`` and ``AclUtils`` of 4.9.8).

A pattern is chosen by its text, in this order:

- blank (missing, empty): matches nothing (``BlankRemoteAddressStrategy``);
- ``*``, ``*.*.*.*``, ``*:*:*:*:*:*:*:*``: matches everything (``NullRemoteAddressStrategy``);
- ending in ``}``: ``1.2.3.{1,2,3}`` (or the IPv6 form), each expanded address must be valid; matches any of them;
- with a comma: ``1.2.3.4,1.2.3.5``, a list of valid addresses (``MultipleRemoteAddressStrategy``);
- with ``*`` or ``-``: a range (``RangeRemoteAddressStrategy``): the first of the 2nd..4th parts that is ``*`` or
  ``a-b`` is the one compared; the parts before it must equal the address's, the parts after it are not looked at
  (``1.2.*.*`` and ``1.2.*.9`` both take any ``1.2.x.y``), as 4.9.8 compares;
- anything else: one valid address, compared exactly (``OneRemoteAddressStrategy``).

A pattern 4.9.8 cannot build (a bad address, a range out of 0..255, too few parts) raises ``ValueError`` here at load
time; a pattern 4.9.8 accepts but then fails on at request time (``*.1.2.3``: no range part after the first) is refused
at load time too, rather than failing every request.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

_IPV4 = re.compile(r"(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})")
_ALL = frozenset({"*", "*.*.*.*", "*:*:*:*:*:*:*:*"})
_V4_MAX = 255
_V6_MAX = 0xFFFF


def is_ipv4(text: str) -> bool:
    """``InetAddressValidator.isValidInet4Address``: four decimal parts 0..255 without leading zeros."""
    found = _IPV4.fullmatch(text)
    return found is not None and all(int(part) <= _V4_MAX for part in found.groups())


def is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def expand_ipv6(text: str, parts: int = 8) -> str:
    """``AclUtils.expandIP``: upper case, ``::`` widened to ``parts`` groups, every group padded to 4 digits."""
    text = text.upper()
    pad = parts - text.count(":")
    if pad > 0:
        text = text.replace("::", ":" * (pad + 1))
    return ":".join(group.rjust(4, "0") for group in text.split(":"))


def _split(text: str, sep: str) -> list[str]:
    # StringUtils.split: empty tokens dropped.
    return [part for part in text.split(sep) if part]


Matcher = Callable[[str], bool]


def address_pattern(text: str | None) -> Matcher:
    """The matcher of a ``whiteRemoteAddress`` / ``globalWhiteRemoteAddresses`` entry: host -> whether it matches.
    Raises ``ValueError`` for a pattern that is not valid."""
    if text is None or not text.strip():
        return lambda host: False
    if text in _ALL:
        return lambda host: True
    if text.endswith("}"):
        sep = ":" if ":" in text else "."
        parts = _split(text, sep)
        if sep == "." and len(parts) < 4:
            raise ValueError(f"{text!r} has too few parts")
        if not parts[-1].startswith("{"):
            raise ValueError(f"{text!r}: only the last part may be a {{...}} list")
        prefix = text[:text.index("{")]
        return _one_of([prefix + item for item in _split(parts[-1][1:-1], ",")], text)
    if "," in text:
        return _one_of(_split(text, ","), text)
    if "*" in text or "-" in text:
        return _ipv6_range(text) if ":" in text else _ipv4_range(text)
    if is_ipv4(text):
        return lambda host: host == text
    if is_ipv6(text):
        expanded = expand_ipv6(text)
        return lambda host: is_ipv6(host) and expand_ipv6(host) == expanded
    raise ValueError(f"{text!r} is not an IP address")


def _one_of(addresses: list[str], text: str) -> Matcher:
    allowed = set()
    for address in addresses:
        if is_ipv4(address):
            allowed.add(address)
        elif is_ipv6(address):
            allowed.add(expand_ipv6(address))
        else:
            raise ValueError(f"{address!r} (in {text!r}) is not an IP address")
    return lambda host: (expand_ipv6(host) if is_ipv6(host) else host) in allowed


def _bounds(value: str, base: int, top: int, text: str) -> tuple[int, int] | None:
    """``analysis``: a ``*`` or ``a-b`` part as its range; None for a plain part (or a range ending at 0, which
    4.9.8 passes over too)."""
    if value == "*":
        return 0, top
    if "-" not in value:
        return None
    if value.startswith("-"):
        raise ValueError(f"{text!r}: a range must be start-end")
    items = _split(value, "-")
    try:
        start, end = int(items[0], base), int(items[1], base)
    except (ValueError, IndexError):
        raise ValueError(f"{text!r}: {value!r} is not a range") from None
    if not (0 <= start <= end <= top):
        raise ValueError(f"{text!r}: range {value} is out of 0..{top:x}" if base == 16 else
                         f"{text!r}: range {value} is out of 0..{top}")
    return (start, end) if end > 0 else None


def _ipv4_range(text: str) -> Matcher:
    parts = text.split(".")
    if len(parts) != 4:
        raise ValueError(f"{text!r} does not have four parts")
    for index in (1, 2, 3):
        found = _bounds(parts[index].strip(), 10, _V4_MAX, text)
        if found is not None:
            break
    else:
        raise ValueError(f"{text!r}: the range (* or a-b) must be in the 2nd, 3rd or 4th part")
    head_parts = [p.strip() for p in parts[:index]]
    if not all(p.isdigit() and int(p) <= _V4_MAX for p in head_parts[:index - 1]):
        raise ValueError(f"{text!r}: {'.'.join(head_parts)} is not a valid address prefix")
    head = ".".join(head_parts) + "."
    start, end = found

    def match(host: str) -> bool:
        if not is_ipv4(host) or not host.startswith(head):
            return False
        # The part compared is the one at the range's position (RangeRemoteAddressStrategy.match).
        value = host.split(".")[index]
        return start <= int(value) <= end

    return match


def _ipv6_range(text: str) -> Matcher:
    star, minus = text.find("*"), text.find("-")
    if star > -1 and star != len(text) - 1:
        raise ValueError(f"{text!r}: * must be the last character of an IPv6 range")
    parts = _split(text, ":")
    for index in range(1, len(parts)):
        found = _bounds(parts[index].strip(), 16, _V6_MAX, text)
        if found is not None:
            break
    else:
        raise ValueError(f"{text!r}: no range part (* or a-b) after the first")
    if minus > -1 and minus <= text.rfind(":", 0, text.rfind(":") if star > -1 else len(text)):
        raise ValueError(f"{text!r}: the range must be in the last group")
    if star > -1 and minus > -1:
        sub, groups = text[:text[:text.rfind(":")].rfind(":")], 6
    else:
        sub, groups = text[:text.rfind(":")], 7
    head = expand_ipv6(sub, groups)
    width = len(_split(head, ":"))
    start, end = found

    def match(host: str) -> bool:
        if not is_ipv6(host):
            return False
        expanded = expand_ipv6(host)
        if not expanded.startswith(head):
            return False
        return start <= int(expanded[5 * width:5 * width + 4], 16) <= end

    return match
