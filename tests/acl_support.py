"""Plain ACL test material shared by test_acl.py (serve, in-process) and test_acl_real.py (the real 4.9.8 broker).

``ACL_YML`` is the plain_acl.yml both targets load: a user account (``RocketMQ``) with default topic perm DENY and
default group perm SUB, a few listed topics and a denied group; an admin account (``AdminKey1``) whose white address
never matches loopback, so its requests are signed like any other. ``probe_requests`` are raw requests each refused
(or passed) for one reason; ``REAL_ANSWERS`` is what a real 4.9.8 broker with ``aclEnable=true`` answered to them
(read off it with tests/test_acl_real.py's comparison), pinned so the served broker is held to it without the real
installation too.
"""

from __future__ import annotations

import json

import attrs

from rocketspec.conformance import requests as rq
from rocketspec.refimpl.acl_signature import signed_fields
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import ACL_ACCESS_KEY, RequestCode

USER_AK, USER_SK = "RocketMQ", "12345678"
ADMIN_AK, ADMIN_SK = "AdminKey1", "AdminSecret1"
ALLOWED_TOPIC, PUB_ONLY_TOPIC, DENIED_TOPIC, DENIED_GROUP = "AclTopicA", "AclTopicPubOnly", "AclTopicDenied", \
    "AclGroupDenied"
ACL_YML = f"""\
globalWhiteRemoteAddresses:
- 10.10.103.*
accounts:
- accessKey: {USER_AK}
  secretKey: {USER_SK}
  whiteRemoteAddress:
  admin: false
  defaultTopicPerm: DENY
  defaultGroupPerm: SUB
  topicPerms:
  - {ALLOWED_TOPIC}=PUB|SUB
  - {PUB_ONLY_TOPIC}=PUB
  - {DENIED_TOPIC}=DENY
  groupPerms:
  - {DENIED_GROUP}=DENY
- accessKey: {ADMIN_AK}
  secretKey: {ADMIN_SK}
  whiteRemoteAddress: 192.168.1.*
  admin: true
"""

_EXC = "org.apache.rocketmq.acl.common.AclException: "
_MGR = "org.apache.rocketmq.acl.plain.PlainPermissionManager."
NO_ACCESS_KEY = f"{_EXC}No accessKey is configured, {_MGR}validate(PlainPermissionManager.java:664)"


def bad_signature(access_key: str) -> str:
    return f"{_EXC}Check signature failed for accessKey={access_key}, {_MGR}validate(PlainPermissionManager.java:684)"


def sign(command: RemotingCommand, access_key: str = USER_AK, secret_key: str = USER_SK,
         token: str | None = None, **extra: str) -> RemotingCommand:
    """COMMAND as ``AclClientRPCHook`` sends it (``extra`` fields added before signing, as the C++ client adds
    ``OnsChannel``)."""
    fields = {**command.ext_fields, **extra}
    return attrs.evolve(command, ext_fields=signed_fields(fields, command.body, access_key, secret_key, token))


def heartbeat_body(group: str, topics: list[str]) -> bytes:
    return json.dumps({"clientID": "c", "producerDataSet": [], "consumerDataSet": [
        {"groupName": group, "subscriptionDataSet": [{"topic": t} for t in topics]}]}).encode()


def probe_requests() -> dict[str, RemotingCommand]:
    """Raw requests, each passing or refused for one reason (new opaques on every call)."""
    def heartbeat(body: bytes | None) -> RemotingCommand:
        return RemotingCommand.request(RequestCode.HEART_BEAT, {ACL_ACCESS_KEY: USER_AK}, body)

    return {
        "unsigned send": rq.send_v2("PG", ALLOWED_TOPIC, b"x"),
        "signed send": sign(rq.send_v2("PG", ALLOWED_TOPIC, b"x")),
        "wrong secret": sign(rq.send_v2("PG", ALLOWED_TOPIC, b"x"), secret_key="wrongwrong"),
        "unknown access key": sign(rq.send_v2("PG", ALLOWED_TOPIC, b"x"), access_key="Nobody12"),
        "denied topic": sign(rq.send_v2("PG", DENIED_TOPIC, b"x")),
        "topic by default perm": sign(rq.send_v2("PG", "OtherTopic", b"x")),
        "pull of a pub-only topic": sign(rq.pull("CG", PUB_ONLY_TOPIC, 0, 0)),
        "pull by a denied group": sign(rq.pull(DENIED_GROUP, ALLOWED_TOPIC, 0, 0)),
        "pull: denied topic and group": sign(rq.pull(DENIED_GROUP, DENIED_TOPIC, 0, 0)),
        "admin request by a user": sign(rq.create_topic("AclTopicX")),
        "admin request by the admin": sign(rq.create_topic("AclTopicX"), ADMIN_AK, ADMIN_SK),
        "admin sends anywhere": sign(rq.send_v2("PG", "AnyTopic", b"x"), ADMIN_AK, ADMIN_SK),
        "unknown code unsigned": RemotingCommand.request(9999, {"a": "b"}),
        "unknown code signed": sign(RemotingCommand.request(9999, {"a": "b"})),
        "heartbeat without body": heartbeat(None),
        "heartbeat with an empty body": heartbeat(b""),
        "heartbeat with a JSON array": heartbeat(b"[]"),
        "heartbeat unsigned": RemotingCommand.request(RequestCode.HEART_BEAT, {}, heartbeat_body(DENIED_GROUP, [])),
        "heartbeat: first refused in HashMap order": sign(RemotingCommand.request(
            RequestCode.HEART_BEAT, {}, heartbeat_body("G1", ["T1", ALLOWED_TOPIC, "T2"]))),
        "retry topic needs the group": sign(rq.send_v2(DENIED_GROUP, f"%RETRY%{DENIED_GROUP}", b"x")),
        "send v1 retry topic (no group field)": sign(rq.send_v1(DENIED_GROUP, f"%RETRY%{DENIED_GROUP}", b"x")),
        "send back by a denied group": sign(rq.send_back(DENIED_GROUP, 0)),
        "trace topic is never checked": sign(rq.send_v2("PG", "RMQ_SYS_TRACE_TOPIC", b"x")),
        "query by unique key (4.9.8 signs the flag, checks without it)": sign(RemotingCommand.request(
            RequestCode.QUERY_MESSAGE, {"topic": ALLOWED_TOPIC, "key": "k", "maxNum": 1, "beginTimestamp": 0,
                                        "endTimestamp": 1, "_UNIQUE_KEY_QUERY": "true"})),
        "signed with token and OnsChannel": sign(rq.send_v2("PG", ALLOWED_TOPIC, b"x"), token="tok",
                                                 OnsChannel="ALIYUN"),
    }


def _perm(what: str, line: int) -> str:
    return f"{_EXC}No default permission for {what}, {_MGR}checkPerm(PlainPermissionManager.java:{line})"


_PARSE = "org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)"
# Code and remark of a real 4.9.8 broker (aclEnable=true, ACL_YML) for every probe request.
REAL_ANSWERS: dict[str, tuple[int, str | None]] = {
    "unsigned send": (1, NO_ACCESS_KEY),
    "signed send": (0, None),
    "wrong secret": (1, bad_signature(USER_AK)),
    "unknown access key": (1, f"{_EXC}No acl config for Nobody12, {_MGR}validate(PlainPermissionManager.java:668)"),
    "denied topic": (1, _perm(f"topic:{DENIED_TOPIC}", 611)),
    "topic by default perm": (1, _perm("topic:OtherTopic", 606)),
    "pull of a pub-only topic": (1, _perm(f"topic:{PUB_ONLY_TOPIC}", 611)),
    "pull by a denied group": (1, _perm(f"group:{DENIED_GROUP}", 611)),
    "pull: denied topic and group": (1, _perm(f"topic:{DENIED_TOPIC}", 611)),
    "admin request by a user": (1, f"{_EXC}Need admin permission for request code=17, but accessKey={USER_AK} is "
                                   f"not, {_MGR}checkPerm(PlainPermissionManager.java:581)"),
    "admin request by the admin": (0, "not set any response code"),
    "admin sends anywhere": (0, None),
    "unknown code unsigned": (1, NO_ACCESS_KEY),
    "unknown code signed": (3, " request type 9999 not supported"),
    "heartbeat without body": (1, f'{_EXC}Cannot read the array length because "bytes" is null, {_PARSE}'),
    "heartbeat with an empty body": (1, f'{_EXC}Cannot read the array length because "bytes" is null, {_PARSE}'),
    "heartbeat with a JSON array": (1, f'{_EXC}Cannot invoke "org.apache.rocketmq.common.protocol.heartbeat.'
                                       f'HeartbeatData.getConsumerDataSet()" because "<local6>" is null, {_PARSE}'),
    "heartbeat unsigned": (1, NO_ACCESS_KEY),
    "heartbeat: first refused in HashMap order": (1, _perm("topic:T1", 606)),
    "retry topic needs the group": (1, _perm(f"group:{DENIED_GROUP}", 611)),
    "send v1 retry topic (no group field)": (0, None),
    "send back by a denied group": (1, _perm(f"group:{DENIED_GROUP}", 611)),
    "trace topic is never checked": (0, None),
    "query by unique key (4.9.8 signs the flag, checks without it)": (1, bad_signature(USER_AK)),
    "signed with token and OnsChannel": (0, None),
}
