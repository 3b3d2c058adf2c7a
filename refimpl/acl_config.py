"""A plain ACL file (``plain_acl.yml`` of RocketMQ 4.9.8's plain ACL), read and checked once at load.

```yaml
globalWhiteRemoteAddresses:      # hosts whose requests pass unchecked, signed or not
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ          # longer than 6 characters
    secretKey: 12345678          # longer than 6 characters
    whiteRemoteAddress:          # hosts where this account's requests pass without signature or permission checks
    admin: false                 # admin-only requests (create/delete topics and groups, broker config)
    defaultTopicPerm: DENY       # for topics not listed: DENY, PUB, SUB or PUB|SUB (missing: DENY)
    defaultGroupPerm: SUB        # for groups not listed (missing: DENY)
    topicPerms: [topicA=DENY, topicB=PUB|SUB]
    groupPerms: [groupA=SUB]
```

Read as ``PlainPermissionManager.load`` / ``buildPlainAccessResource`` read it (``PlainAccessConfig`` fields; numbers
and booleans where text is expected are taken as their text, as fastjson converts them). Where 4.9.8 quietly takes
something it cannot mean — an unknown permission (it becomes DENY), a repeated access key (the later one is
ignored), an unknown key — this module refuses the file instead: every problem is one ``AclFileError`` line naming
the file and the entry. The file is read once; 4.9.8's broker also watches it for changes, this does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from rocketspec.refimpl.acl_address import Matcher, address_pattern
from rocketspec.spec.protocol import ACL_KEY_MIN_LENGTH, AclPerm, retry_topic


class AclFileError(ValueError):
    """An ACL file that cannot be read or is not a valid plain ACL configuration."""


# Permission.parsePermFromString.
_PERMS = {"PUB": AclPerm.PUB, "SUB": AclPerm.SUB, "PUB|SUB": AclPerm.PUB | AclPerm.SUB,
          "SUB|PUB": AclPerm.PUB | AclPerm.SUB, "DENY": AclPerm.DENY}
_TOP_KEYS = ("globalWhiteRemoteAddresses", "accounts", "dataVersion")
_ACCOUNT_KEYS = ("accessKey", "secretKey", "whiteRemoteAddress", "admin", "defaultTopicPerm", "defaultGroupPerm",
                 "topicPerms", "groupPerms")


@attrs.frozen
class AclAccount:
    """One account (``PlainAccessResource`` as built from its ``PlainAccessConfig``)."""

    access_key: str
    secret_key: str
    white_remote_address: str | None
    admin: bool
    default_topic_perm: AclPerm
    default_group_perm: AclPerm
    # Topic -> perm and retry topic of a group -> perm; None when the account lists neither (an admin account
    # without lists is then allowed everything: PlainPermissionManager.checkPerm).
    resource_perms: Mapping[str, AclPerm] | None
    white: Matcher = attrs.field(eq=False, repr=False)


@attrs.frozen
class AclConfig:
    """What a plain ACL file grants: global white addresses and accounts by access key."""

    global_white_addresses: tuple[str, ...]
    accounts: Mapping[str, AclAccount]
    source: str = "<memory>"
    global_white: tuple[Matcher, ...] = attrs.field(eq=False, repr=False, default=())

    def is_global_white(self, host: str) -> bool:
        return any(match(host) for match in self.global_white)


def _text(value: Any, where: str) -> str | None:
    """A scalar as the Java ``String`` fastjson makes of it; None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise AclFileError(f"{where} must be text, not {type(value).__name__}")


def _perm(value: Any, where: str) -> AclPerm:
    text = _text(value, where)
    if text is None:
        return AclPerm.DENY  # parsePermFromString(null)
    perm = _PERMS.get(text.strip())
    if perm is None:
        raise AclFileError(f"{where} must be one of {', '.join(_PERMS)}, not {text!r}")
    return perm


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AclFileError(f"{where} must be a list, not {type(value).__name__}")
    return value


def _resource_perms(items: list[Any], is_topic: bool, out: dict[str, AclPerm], where: str) -> None:
    """``Permission.parseResourcePerms``: ``name=PERM`` entries; a group is keyed by its retry topic."""
    for index, item in enumerate(items):
        entry = f"{where}[{index}]"
        text = _text(item, entry)
        parts = [part for part in (text or "").split("=") if part]  # StringUtils.split drops empty tokens
        if len(parts) != 2 or not parts[0].strip():
            raise AclFileError(f"{entry} must be NAME=PERM (e.g. topicA=PUB|SUB), not {text!r}")
        name = parts[0].strip()
        out[name if is_topic else retry_topic(name)] = _perm(parts[1], entry)


def _account(spec: Any, where: str) -> AclAccount:
    if not isinstance(spec, dict):
        raise AclFileError(f"{where} must be a mapping of {', '.join(_ACCOUNT_KEYS)}")
    unknown = sorted(str(key) for key in spec if key not in _ACCOUNT_KEYS)
    if unknown:
        raise AclFileError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_ACCOUNT_KEYS)}")
    access_key = _text(spec.get("accessKey"), f"{where}.accessKey")
    secret_key = _text(spec.get("secretKey"), f"{where}.secretKey")
    for name, key in (("accessKey", access_key), ("secretKey", secret_key)):
        if key is None or len(key) <= ACL_KEY_MIN_LENGTH:
            raise AclFileError(f"{where}.{name} must be longer than {ACL_KEY_MIN_LENGTH} characters")
    assert access_key is not None and secret_key is not None
    admin = spec.get("admin", False)
    if admin is None:
        admin = False
    if not isinstance(admin, bool):
        raise AclFileError(f"{where}.admin must be true or false, not {admin!r}")
    white_text = _text(spec.get("whiteRemoteAddress"), f"{where}.whiteRemoteAddress")
    try:
        white = address_pattern(white_text)
    except ValueError as error:
        raise AclFileError(f"{where}.whiteRemoteAddress: {error}") from None
    perms: dict[str, AclPerm] = {}
    groups = _list(spec.get("groupPerms"), f"{where}.groupPerms")
    topics = _list(spec.get("topicPerms"), f"{where}.topicPerms")
    # buildPlainAccessResource: groups first, then topics, into one map.
    _resource_perms(groups, False, perms, f"{where}.groupPerms")
    _resource_perms(topics, True, perms, f"{where}.topicPerms")
    return AclAccount(
        access_key=access_key, secret_key=secret_key, white_remote_address=white_text, admin=admin,
        default_topic_perm=_perm(spec.get("defaultTopicPerm"), f"{where}.defaultTopicPerm"),
        default_group_perm=_perm(spec.get("defaultGroupPerm"), f"{where}.defaultGroupPerm"),
        resource_perms=perms if (groups or topics) else None, white=white,
    )


def parse_acl_config(data: Any, source: str = "<memory>") -> AclConfig:
    """An ``AclConfig`` from the loaded YAML document (an empty document grants nothing)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise AclFileError(f"{source}: the document must be a mapping with globalWhiteRemoteAddresses and accounts")
    try:
        unknown = sorted(str(key) for key in data if key not in _TOP_KEYS)
        if unknown:
            raise AclFileError(f"unknown key(s) {', '.join(unknown)}; known: {', '.join(_TOP_KEYS)}")
        patterns: list[str] = []
        matchers: list[Matcher] = []
        for index, item in enumerate(_list(data.get("globalWhiteRemoteAddresses"), "globalWhiteRemoteAddresses")):
            where = f"globalWhiteRemoteAddresses[{index}]"
            text = _text(item, where)
            try:
                matchers.append(address_pattern(text))
            except ValueError as error:
                raise AclFileError(f"{where}: {error}") from None
            patterns.append(text or "")
        accounts: dict[str, AclAccount] = {}
        for index, spec in enumerate(_list(data.get("accounts"), "accounts")):
            account = _account(spec, f"accounts[{index}]")
            if account.access_key in accounts:
                raise AclFileError(f"accounts[{index}]: accessKey {account.access_key!r} is already defined")
            accounts[account.access_key] = account
    except AclFileError as error:
        raise AclFileError(f"{source}: {error}") from None
    return AclConfig(tuple(patterns), accounts, source, tuple(matchers))


def load_acl_file(path: str | Path) -> AclConfig:
    """Read and check a ``plain_acl.yml``; every problem is one ``AclFileError`` line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise AclFileError(f"cannot read ACL file {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise AclFileError(f"ACL file {path} is not UTF-8: {error.reason}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise AclFileError(f"ACL file {path} is not YAML{at}: {problem}") from None
    return parse_acl_config(data, str(path))
