"""Query and view messages (QUERY_MESSAGE, VIEW_MESSAGE_BY_ID) and request-reply (SEND_REPLY_MESSAGE(_V2),
PUSH_REPLY_MESSAGE_TO_CLIENT) with the official 4.9.8 Java client and mqadmin, on the real broker and on `serve`.

Scenarios are ``QueryScenarios`` / ``ReplyScenarios`` of the Java driver; mqadmin's ``queryMsgByKey``,
``queryMsgById``, ``queryMsgByUniqueKey`` and ``queryMsgByOffset`` run against both name servers on a message seeded
by the driver. Outputs are compared after the usual volatile fields (ids, hosts, timestamps, offsets) are normalized.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from javacompare import VOLATILE, Targets, assert_same
from realcluster import JavaDriver, RealCluster, mqadmin

from rocketspec.refimpl.served import ServedCluster

pytestmark = pytest.mark.xdist_group("rocketmq-real")

# Reply-only properties that differ per run: the requester's client id, times, the correlation id; and the broker
# the replier's producer picked (its round robin starts at random).
REPLY_VOLATILE = VOLATILE | {"PUSH_REPLY_TIME", "ARRIVE_TIME", "CORRELATION_ID", "REPLY_TO_CLIENT", "broker"}


@pytest.fixture(scope="module")
def targets(java_driver: JavaDriver, real_rocketmq: RealCluster, served_for_java: ServedCluster) -> Iterator[Targets]:
    yield Targets(java_driver, real_rocketmq, served_for_java)


def scrub(value: Any) -> Any:
    """Error texts with the broker address, the time spent and the brokers tried cut out."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, str):
        value = re.sub(r" BROKER: [0-9.:]+", " BROKER: <addr>", value)
        value = re.sub(r"cost \[\d+\]ms", "cost [<n>]ms", value)
        return re.sub(r"BrokersSent: \[[^\]]*\]", "BrokersSent: [<brokers>]", value)
    return value


def test_query_by_key(targets: Targets) -> None:
    real, served = targets.both("query.byKey")
    assert [m["body"] for m in real["common"]] == ["q1", "q2"] and real["producerQk3"] == ["q3"]
    assert real["maxNum1"] == ["q1", "q2"]  # maxNum applies per broker
    assert real["missingKey"]["code"] == 208 and real["unknownTopic"]["code"] == 17
    assert_same(real, served)


def test_view_by_offset_id_and_unique_key(targets: Targets) -> None:
    real, served = targets.both("query.byId")
    assert real["byTopicAndUniqKey"]["body"] == "viewed"
    assert real["pastTheLog"]["code"] == 1 and "can not find message by the offset" in real["pastTheLog"]["message"]
    assert real["notAnId"]["code"] == 208
    assert_same(scrub(real), scrub(served))


def test_request_reply(targets: Targets) -> None:
    real, served = targets.both("reply.requestReply")
    reply = real["reply"]
    assert reply["body"] == "re:ping" and reply["properties"]["MSG_TYPE"] == "reply"
    assert {"PUSH_REPLY_TIME", "ARRIVE_TIME"} <= set(reply["properties"])
    [stored] = real["storedReplies"]
    assert "PUSH_REPLY_TIME" not in stored["properties"] and "CLUSTER" not in stored["properties"]
    assert_same(real, served, volatile=REPLY_VOLATILE)


def test_reply_to_nobody(targets: Targets) -> None:
    real, served = targets.both("reply.replyToNobody")
    assert real["unknownClient"]["code"] == 1 and real["noClient"]["code"] == 1
    assert real["stored"] == ["lost"] * 3 + ["lost-too"] * 3  # every attempt is stored
    assert_same(scrub(real), scrub(served))


# --------------------------------------------------------------------------------------------------------- mqadmin

_FIELD = re.compile(r"^([A-Z][A-Za-z ]+):\s+(.*)$")
_ERROR = re.compile(r"(MQ\w*Exception): CODE: (\d+)\s+DESC: (.*?)(?: BROKER:|\n|$)")
_ADMIN_VOLATILE = {"OffsetID", "CommitLog Offset", "Born Timestamp", "Store Timestamp", "Born Host", "Store Host",
                   "Message Body Path"}


def admin_view(stdout: str) -> dict[str, Any]:
    """What an mqadmin query printed: the message's fields (volatile ones marked), table rows or the error."""
    fields: dict[str, Any] = {}
    rows = []
    for line in stdout.splitlines():
        found = _FIELD.match(line)
        if found and not line.startswith("WARN"):
            name, value = found.group(1).strip(), found.group(2).strip()
            if name == "Properties":
                props = dict(kv.split("=", 1) for kv in value.strip("{}").split(", ") if "=" in kv)
                props["UNIQ_KEY"] = "<set>" if props.get("UNIQ_KEY") else None
                fields[name] = props
            else:
                fields[name] = "<set>" if name in _ADMIN_VOLATILE and value else value
        elif re.match(r"^[0-9A-F]{32,}\s+\d+\s+\d+\s*$", line):
            rows.append(line.split()[1:])
    error = _ERROR.search(stdout)
    return {"fields": fields, "rows": rows, "error": error.groups() if error else None}


def test_mqadmin_query_commands(targets: Targets, rocketmq_home: Path, tmp_path: Path) -> None:
    suffix = targets.suffix()  # one topic name on both targets

    def run(target: str) -> dict[str, Any]:
        seed = targets.run(target, "query.seed", suffix=suffix)
        sent = seed["sent"]
        namesrv = targets.real.namesrv_addr if target == "real" else targets.served.namesrv_addr
        commands = {
            "byKey": ["queryMsgByKey", "-t", seed["topic"], "-k", "admin-key"],
            "byId": ["queryMsgById", "-i", sent["offsetMsgId"]],
            "byUniqueKey": ["queryMsgByUniqueKey", "-t", seed["topic"], "-i", sent["msgId"]],
            "byOffset": ["queryMsgByOffset", "-t", seed["topic"], "-b", sent["broker"], "-i",
                         str(sent["queueId"]), "-o", "0"],
            "missingKey": ["queryMsgByKey", "-t", seed["topic"], "-k", "nobody"],
            "pastTheLog": ["queryMsgById", "-i", sent["offsetMsgId"][:-8] + "0FFFFF00"],
        }
        out = {}
        for name, args in commands.items():
            done = mqadmin(rocketmq_home, namesrv, *args, user_home=tmp_path / f"admin-{target}")
            out[name] = admin_view(done.stdout + done.stderr)
        return out

    with ThreadPoolExecutor(2) as pool:
        real_future, served_future = pool.submit(run, "real"), pool.submit(run, "serve")
        real, served = real_future.result(), served_future.result()
    assert real["byId"]["fields"]["Keys"] == "[admin-key]" and real["byKey"]["rows"] == [["0", "0"]]
    assert real["byOffset"]["fields"]["Properties"]["MAX_OFFSET"] == "1"
    assert real["missingKey"]["error"][:2] == ("MQClientException", "208")
    assert real["pastTheLog"]["error"][:2] == ("MQBrokerException", "1")
    assert_same(scrub(real), scrub(served), volatile=())
