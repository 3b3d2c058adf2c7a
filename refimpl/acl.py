"""Plain ACL checks of a request (``PlainAccessValidator`` and ``PlainPermissionManager`` of 4.9.8).

With ``aclEnable`` a 4.9.8 broker runs ``validate(parse(request, remoteAddr))`` as a server RPC hook before any
processor, for every request code, unknown ones included (``BrokerController.initialAcl``; the hook runs inside
``NettyRemotingAbstract.processRequestCommand``). A refusal is the hook's exception turned into a response there:
SYSTEM_ERROR with ``RemotingHelper.exceptionSimpleDesc`` as remark — the exception and its throwing frame, e.g.
``org.apache.rocketmq.acl.common.AclException: No accessKey is configured,
org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:664)`` (the remarks below
were read off a real 4.9.8 broker). A oneway request gets no answer.

``parse`` names the resources a request needs (``PlainAccessValidator.parse``):

- SEND_MESSAGE (``topic``) / SEND_MESSAGE_V2 (``b``): PUB on the topic; a retry topic instead needs SUB on the retry
  topic of ``group`` / ``a`` (a field SEND_MESSAGE does not carry, so nothing is needed then);
- CONSUMER_SEND_MSG_BACK: SUB on the group (``group``); PULL_MESSAGE: SUB on ``topic`` and on ``consumerGroup``;
  QUERY_MESSAGE: SUB on ``topic``; UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP: SUB on ``consumerGroup``;
  UPDATE_CONSUMER_OFFSET: SUB on ``consumerGroup`` and ``topic``;
- HEART_BEAT: SUB on every consumer group of the body and every topic it subscribes (a body that does not decode is
  refused by ``parse`` itself);
- every other code (batch sends and replies included): no resource, only the signature (and the admin flag for the
  admin codes).

A group is checked as its retry topic (``%RETRY%group``). ``validate`` then decides in this order: a global white
address passes; no ``AccessKey`` field, or one no account has, is refused; the account's white address passes; the
signature (``acl_signature``) must match; a PUB on ``RMQ_SYS_TRACE_TOPIC`` passes; an admin code needs an admin
account; an admin account without topic and group lists passes; each resource, in Java ``HashMap`` order (the first
refused one is named), needs its listed perm or else the account's default topic or group perm (DENY refuses all).

The name server of 4.9.8 has no ACL. ``NamesrvAclGuard`` is rocketspec's extension for ``serve --acl``: the requests
that change a name server (register or unregister a broker, wipe or add write perm, delete a topic, put or delete a
KV config, update its config) need a global white address or an admin account's signed request; reads stay open.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rocketspec.refimpl.acl_config import AclAccount, AclConfig
from rocketspec.refimpl.acl_signature import acl_content, acl_signature
from rocketspec.refimpl.message import java_string_hash
from rocketspec.refimpl.remoting import Channel, RemotingCommand, Server
from rocketspec.spec.protocol import (
    ACL_ACCESS_KEY,
    ACL_ADMIN_REQUEST_CODES,
    ACL_SIGNATURE,
    RETRY_GROUP_TOPIC_PREFIX,
    TRACE_TOPIC,
    AclPerm,
    RequestCode,
    ResponseCode,
    is_retry_topic,
    retry_topic,
)

ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"
_MANAGER = "org.apache.rocketmq.acl.plain.PlainPermissionManager"
_VALIDATOR = "org.apache.rocketmq.acl.plain.PlainAccessValidator"
# The throwing frames of the 4.9.8 build, as its refusals name them.
FRAME_NO_ACCESS_KEY = f"{_MANAGER}.validate(PlainPermissionManager.java:664)"
FRAME_NO_ACL_CONFIG = f"{_MANAGER}.validate(PlainPermissionManager.java:668)"
FRAME_SIGNATURE = f"{_MANAGER}.validate(PlainPermissionManager.java:684)"
FRAME_ADMIN = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:581)"
FRAME_DEFAULT_PERM = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:606)"
FRAME_LISTED_PERM = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:611)"
FRAME_PARSE = f"{_VALIDATOR}.parse(PlainAccessValidator.java:134)"
# HeartbeatData.decode of a missing body (new String(null)) and of JSON that is not an object (null data).
NULL_BODY_MESSAGE = 'Cannot read the array length because "bytes" is null'
NOT_AN_OBJECT_MESSAGE = ('Cannot invoke "org.apache.rocketmq.common.protocol.heartbeat.HeartbeatData'
                         '.getConsumerDataSet()" because "<local6>" is null')

# rocketspec's name-server extension: the requests that change a name server's state.
NAMESRV_GUARDED_CODES = frozenset({
    RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER, RequestCode.WIPE_WRITE_PERM_OF_BROKER,
    RequestCode.ADD_WRITE_PERM_OF_BROKER, RequestCode.DELETE_TOPIC_IN_NAMESRV, RequestCode.PUT_KV_CONFIG,
    RequestCode.DELETE_KV_CONFIG, RequestCode.UPDATE_NAMESRV_CONFIG,
})


class AclDenied(Exception):
    """A refusal: the ``AclException`` message and the frame 4.9.8 throws it from."""

    def __init__(self, message: str, frame: str) -> None:
        super().__init__(message)
        self.message = message
        self.frame = frame

    @property
    def remark(self) -> str:
        """``RemotingHelper.exceptionSimpleDesc`` of the exception."""
        return f"{ACL_EXCEPTION}: {self.message}, {self.frame}"


def java_hashmap_order(keys: list[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap`` the distinct ``keys`` were put into in this order: by bucket
    (spread hash masked by the table size, 16 doubled while more than 3/4 full), insertion order within a bucket."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # sorted is stable: insertion order within a bucket


class Resources:
    """``PlainAccessResource.resourcePermMap``: what a request needs, kept in insertion order."""

    def __init__(self) -> None:
        self.perms: dict[str, AclPerm] = {}

    def add(self, resource: str | None, perm: AclPerm) -> None:
        if resource is not None:  # addResourceAndPerm ignores a null resource
            self.perms[resource] = perm

    def add_group(self, group: str | None, perm: AclPerm) -> None:
        self.add(retry_topic(group) if group is not None else None, perm)

    def in_java_order(self) -> list[tuple[str, AclPerm]]:
        return [(key, self.perms[key]) for key in java_hashmap_order(list(self.perms))]


def _objects(container: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The list of JSON objects under ``key`` (none when absent); anything else is a parse failure, as fastjson's."""
    value = container.get(key) or []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise AclDenied(f"syntax error, {key} is not a list of objects", FRAME_PARSE)
    return value


def _heartbeat_resources(body: bytes | None, out: Resources) -> None:
    if not body:
        raise AclDenied(NULL_BODY_MESSAGE, FRAME_PARSE)
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise AclDenied(f"syntax error, {error}", FRAME_PARSE) from None
    if not isinstance(data, dict):
        raise AclDenied(NOT_AN_OBJECT_MESSAGE, FRAME_PARSE)
    for consumer in _objects(data, "consumerDataSet"):
        group = consumer.get("groupName")
        out.add_group(group if isinstance(group, str) else None, AclPerm.SUB)
        for subscription in _objects(consumer, "subscriptionDataSet"):
            topic = subscription.get("topic")
            out.add(topic if isinstance(topic, str) else None, AclPerm.SUB)


def needed_resources(request: RemotingCommand) -> Resources:
    """``PlainAccessValidator.parse``: the topics and groups (as retry topics) a request needs, and which perm."""
    fields = request.ext_fields
    out = Resources()
    code = request.code
    if code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2):
        topic_key, group_key = ("topic", "group") if code == RequestCode.SEND_MESSAGE else ("b", "a")
        topic = fields.get(topic_key)
        if topic is not None and is_retry_topic(topic):
            out.add_group(fields.get(group_key), AclPerm.SUB)
        else:
            out.add(topic, AclPerm.PUB)
    elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
        out.add_group(fields.get("group"), AclPerm.SUB)
    elif code == RequestCode.PULL_MESSAGE:
        out.add(fields.get("topic"), AclPerm.SUB)
        out.add_group(fields.get("consumerGroup"), AclPerm.SUB)
    elif code == RequestCode.QUERY_MESSAGE:
        out.add(fields.get("topic"), AclPerm.SUB)
    elif code == RequestCode.HEART_BEAT:
        _heartbeat_resources(request.body, out)
    elif code in (RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP):
        out.add_group(fields.get("consumerGroup"), AclPerm.SUB)
    elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
        out.add_group(fields.get("consumerGroup"), AclPerm.SUB)
        out.add(fields.get("topic"), AclPerm.SUB)
    return out


def check_permission(needed: AclPerm, owned: AclPerm) -> bool:
    """``Permission.checkPermission``: DENY refuses everything; ANY needs PUB or SUB; else a common bit."""
    if owned & AclPerm.DENY:
        return False
    if needed & AclPerm.ANY:
        return bool(owned & (AclPerm.PUB | AclPerm.SUB))
    return bool(needed & owned)


def _resource_name(resource: str) -> str:
    """``PlainAccessResource.printStr``: ``group:NAME`` for a retry topic, else ``topic:NAME``."""
    if is_retry_topic(resource):
        return f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX):]}"
    return f"topic:{resource}"


def remote_host(remote_addr: str) -> str:
    """The host part of ``host:port`` (``PlainAccessValidator.parse``: up to the last colon)."""
    return remote_addr[:remote_addr.rfind(":")] if ":" in remote_addr else remote_addr


class PlainAccessValidator:
    """The checks of one ACL configuration; ``refusal`` is the response a refused request gets."""

    def __init__(self, config: AclConfig) -> None:
        self.config = config

    def _signed_account(self, request: RemotingCommand, host: str) -> tuple[AclAccount, bool]:
        """The request's account, and whether its white address let it through (then nothing else is checked)."""
        fields = request.ext_fields
        access_key = fields.get(ACL_ACCESS_KEY)
        if access_key is None:
            raise AclDenied("No accessKey is configured", FRAME_NO_ACCESS_KEY)
        account = self.config.accounts.get(access_key)
        if account is None:
            raise AclDenied(f"No acl config for {access_key}", FRAME_NO_ACL_CONFIG)
        if account.white(host):
            return account, True
        expected = acl_signature(acl_content(fields, request.body, server=True), account.secret_key)
        if fields.get(ACL_SIGNATURE) != expected:
            raise AclDenied(f"Check signature failed for accessKey={access_key}", FRAME_SIGNATURE)
        return account, False

    def validate(self, request: RemotingCommand, remote_addr: str) -> None:
        """Raise ``AclDenied`` unless the request passes (``parse`` then ``validate``)."""
        needed = needed_resources(request)
        host = remote_host(remote_addr)
        if self.config.is_global_white(host):
            return
        account, white = self._signed_account(request, host)
        if white:
            return
        # A message-trace write is never checked (the trace topic may be shared by every account).
        if needed.perms.get(TRACE_TOPIC) == AclPerm.PUB:
            return
        self._check_perm(request.code, needed, account)

    @staticmethod
    def _check_perm(code: int, needed: Resources, account: AclAccount) -> None:
        """``PlainPermissionManager.checkPerm``."""
        if code in ACL_ADMIN_REQUEST_CODES and not account.admin:
            raise AclDenied(f"Need admin permission for request code={code}, but accessKey={account.access_key} "
                            "is not", FRAME_ADMIN)
        if not needed.perms:
            return
        owned: Mapping[str, AclPerm] | None = account.resource_perms
        if owned is None and account.admin:
            return
        for resource, perm in needed.in_java_order():
            if owned is None or resource not in owned:
                default = account.default_group_perm if is_retry_topic(resource) else account.default_topic_perm
                if not check_permission(perm, default):
                    raise AclDenied(f"No default permission for {_resource_name(resource)}", FRAME_DEFAULT_PERM)
            elif not check_permission(perm, owned[resource]):
                raise AclDenied(f"No default permission for {_resource_name(resource)}", FRAME_LISTED_PERM)

    def refusal(self, request: RemotingCommand, remote_addr: str) -> RemotingCommand | None:
        """None when the request passes; else the SYSTEM_ERROR answer 4.9.8 gives (for a oneway request the caller
        answers nothing, and does not process it)."""
        try:
            self.validate(request, remote_addr)
        except AclDenied as denied:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=denied.remark)
        return None

    def admin_refusal(self, request: RemotingCommand, remote_addr: str) -> RemotingCommand | None:
        """The name-server extension: None when the request comes from a global white address or carries an admin
        account's valid signature (or comes from its white address); else the SYSTEM_ERROR answer."""
        host = remote_host(remote_addr)
        if self.config.is_global_white(host):
            return None
        try:
            account, _white = self._signed_account(request, host)
            if not account.admin:
                raise AclDenied(f"Need admin permission for request code={request.code}, but accessKey="
                                f"{account.access_key} is not", FRAME_ADMIN)
        except AclDenied as denied:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=denied.remark)
        return None


class NamesrvAclGuard:
    """A name server behind rocketspec's ACL extension (``serve --acl``): the changing requests of
    ``NAMESRV_GUARDED_CODES`` need an admin account or a global white address; everything else is served as is."""

    def __init__(self, server: Server, validator: PlainAccessValidator) -> None:
        self.server = server
        self.validator = validator

    def handle(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        if request.code in NAMESRV_GUARDED_CODES:
            refused = self.validator.admin_refusal(request, channel.remote_addr)
            if refused is not None:
                return None if request.is_oneway else refused
        return self.server.handle(request, channel)

    def channel_closed(self, channel: Channel) -> None:
        self.server.channel_closed(channel)

    def __getattr__(self, name: str) -> Any:
        # Anything else a transport asks of its server is the name server's.
        return getattr(self.server, name)
