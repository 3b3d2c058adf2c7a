"""Admin requests with required header fields missing or not numbers, sent raw to the real 4.9.8 cluster and to
`serve`: code, remark and body compared.

4.9.8's ``RemotingCommand.decodeCommandCustomHeader`` (for every header but send's and pull's ``FastCodesHeader``)
catches its own "the custom field <x> is null" check and a number that does not parse, logs them and leaves the
field null; the processor then goes on with null: SUCCESS, a specific code, or a NullPointerException answered as
SYSTEM_ERROR with ``RemotingHelper.exceptionSimpleDesc`` as its remark. Each probe is one raw request on its own
connection (``WireClient``), to broker-a or to the name server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from javacompare import differences
from realcluster import RealCluster
from wire_client import WireClient

from rocketspec.refimpl.remoting import JAVA_NPE, JAVA_NPE_NULL_KEY_GET, RemotingCommand
from rocketspec.refimpl.served import ServedCluster
from rocketspec.spec.protocol import RequestCode as R

pytestmark = pytest.mark.xdist_group("rocketmq-real")

T = "NulProbeTopic"  # never created: every probe naming it sees an unknown topic
G = "NulProbeGroup"

# (node, code, extFields[, body]): node "b" is broker-a, "n" the name server.
PROBES: list[tuple[Any, ...]] = [
    # first an offset, so that neither offset table is empty (the real one is shared: what null scans throw)
    ("b", R.UPDATE_CONSUMER_OFFSET, {"consumerGroup": G, "topic": "NulProbeOffsets", "queueId": "0",
                                     "commitOffset": "0"}),
    # topics
    ("b", R.UPDATE_AND_CREATE_TOPIC, {}),
    ("b", R.UPDATE_AND_CREATE_TOPIC, {"topic": T, "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG"}),
    ("b", R.UPDATE_AND_CREATE_TOPIC, {"topic": T, "readQueueNums": "x", "writeQueueNums": "4", "perm": "6",
                                      "topicFilterType": "SINGLE_TAG"}),
    ("b", R.UPDATE_AND_CREATE_TOPIC, {"topic": T, "readQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG"}),
    ("b", R.UPDATE_AND_CREATE_TOPIC, {"topic": T, "readQueueNums": "4", "writeQueueNums": "2147483648", "perm": "6",
                                      "topicFilterType": "SINGLE_TAG"}),
    ("b", R.UPDATE_AND_CREATE_TOPIC, {"topic": T, "readQueueNums": "4", "writeQueueNums": "4",
                                      "topicFilterType": "SINGLE_TAG"}),
    ("b", R.UPDATE_AND_CREATE_TOPIC, {"topic": T, "readQueueNums": "4", "writeQueueNums": "4", "perm": "x",
                                      "topicFilterType": "SINGLE_TAG"}),
    ("b", R.UPDATE_AND_CREATE_TOPIC, {"topic": T, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6",
                                      "topicFilterType": "NOPE"}),
    # created (the number that does not parse is optional): SUCCESS keeps createResponseCommand's remark; then gone
    ("b", R.UPDATE_AND_CREATE_TOPIC, {"topic": "NulProbeMade", "readQueueNums": "1", "writeQueueNums": "1",
                                      "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "x"}),
    ("b", R.UPDATE_AND_CREATE_TOPIC, {"topic": "NulProbeMade", "readQueueNums": "+1", "writeQueueNums": "-0",
                                      "perm": "6", "topicFilterType": "SINGLE_TAG"}),
    ("b", R.DELETE_TOPIC_IN_BROKER, {"topic": "NulProbeMade"}),
    ("b", R.DELETE_TOPIC_IN_BROKER, {}),
    ("b", R.GET_TOPIC_STATS_INFO, {}),
    ("b", R.QUERY_TOPIC_CONSUME_BY_WHO, {}),
    ("b", R.GET_EARLIEST_MSG_STORETIME, {}),
    ("b", R.GET_EARLIEST_MSG_STORETIME, {"topic": T}),
    ("b", R.GET_EARLIEST_MSG_STORETIME, {"topic": T, "queueId": "x"}),
    ("b", R.GET_EARLIEST_MSG_STORETIME, {"queueId": "0"}),
    ("b", R.QUERY_CONSUME_QUEUE, {}),
    ("b", R.QUERY_CONSUME_QUEUE, {"topic": T, "index": "0", "count": "1"}),
    ("b", R.QUERY_CONSUME_QUEUE, {"topic": T, "queueId": "0", "count": "1"}),
    ("b", R.QUERY_CONSUME_QUEUE, {"topic": T, "queueId": "0", "index": "0"}),
    ("b", R.QUERY_CONSUME_QUEUE, {"queueId": "0", "index": "0", "count": "1"}),
    # consumers and offsets
    ("b", R.GET_CONSUME_STATS, {}),
    ("b", R.GET_CONSUME_STATS, {"topic": T}),
    ("b", R.GET_CONSUME_STATS, {"consumerGroup": G}),
    ("b", R.GET_CONSUMER_CONNECTION_LIST, {}),
    ("b", R.GET_PRODUCER_CONNECTION_LIST, {}),
    ("b", R.GET_CONSUMER_RUNNING_INFO, {}),
    ("b", R.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": G}),
    ("b", R.GET_CONSUMER_RUNNING_INFO, {"clientId": "c"}),
    ("b", R.CONSUME_MESSAGE_DIRECTLY, {}),
    ("b", R.CONSUME_MESSAGE_DIRECTLY, {"consumerGroup": G, "clientId": "c"}),
    # a message id naming commit-log offset 0, where probe_all stored a message first: found, then the null group
    ("b", R.CONSUME_MESSAGE_DIRECTLY, {"msgId": "7F00000100002A9F0000000000000000"}),
    ("b", R.CONSUME_MESSAGE_DIRECTLY, {"msgId": "XYZ", "consumerGroup": G, "clientId": "c"}),
    *(("b", R.CONSUME_MESSAGE_DIRECTLY, {"msgId": msg_id, "consumerGroup": G, "clientId": "c"})
      # A non-hex digit is no error (UtilAll.string2bytes): "...FZ" decodes to an offset past any data. (Offsets
      # inside the log land inside some message on the shared real broker: 4.9.8 reads whatever size is there.)
      for msg_id in ("", "A" * 34, "A" * 40, "G" * 32, "7F00000100002A9F7FFFFFFFFFFFFFFZ",
                     "7F00000100002A9F7FFFFFFFFFFFFFFF")),
    ("b", R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}),
    *(("b", R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body)
      for body in (b"", b"null", b"[]", b'{"retryMaxTimes":3}', b'{"groupName":null}')),
    ("b", R.DELETE_SUBSCRIPTIONGROUP, {}),
    ("b", R.INVOKE_BROKER_TO_RESET_OFFSET, {}),
    ("b", R.INVOKE_BROKER_TO_RESET_OFFSET, {"topic": T}),
    ("b", R.INVOKE_BROKER_TO_RESET_OFFSET, {"group": G}),
    ("b", R.INVOKE_BROKER_TO_RESET_OFFSET, {"topic": T, "group": G, "timestamp": "x", "isForce": "false"}),
    ("b", R.INVOKE_BROKER_TO_RESET_OFFSET, {"topic": T, "group": G, "isForce": "false"}),
    ("b", R.INVOKE_BROKER_TO_RESET_OFFSET, {"topic": T, "group": G, "timestamp": "0"}),
    ("b", R.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {}),
    ("b", R.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": T}),
    ("b", R.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"group": G}),
    ("b", R.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": T, "group": G}),
    ("b", R.CLONE_GROUP_OFFSET, {}),
    ("b", R.CLONE_GROUP_OFFSET, {"srcGroup": G, "topic": T}),
    ("b", R.CLONE_GROUP_OFFSET, {"destGroup": G, "topic": T}),
    ("b", R.GET_BROKER_CONSUME_STATS, {}),
    ("b", R.GET_BROKER_CONSUME_STATS, {"isOrder": "x"}),
    ("b", R.QUERY_CONSUME_TIME_SPAN, {}),
    ("b", R.QUERY_CONSUME_TIME_SPAN, {"topic": T}),
    ("b", R.QUERY_CONSUME_TIME_SPAN, {"group": G}),
    # runtime
    ("b", R.UPDATE_BROKER_CONFIG, {}),
    # name server
    ("n", R.PUT_KV_CONFIG, {}),
    ("n", R.PUT_KV_CONFIG, {"namespace": "NulNs", "key": "k"}),
    ("n", R.PUT_KV_CONFIG, {"namespace": "NulNs", "value": "v"}),
    ("n", R.PUT_KV_CONFIG, {"key": "k", "value": "v"}),
    ("n", R.GET_KV_CONFIG, {}),
    ("n", R.GET_KV_CONFIG, {"namespace": "NulNs"}),
    ("n", R.GET_KV_CONFIG, {"key": "k"}),
    ("n", R.DELETE_KV_CONFIG, {}),
    ("n", R.DELETE_KV_CONFIG, {"namespace": "NulNs"}),
    ("n", R.DELETE_KV_CONFIG, {"key": "k"}),
    ("n", R.GET_KVLIST_BY_NAMESPACE, {}),
    ("n", R.DELETE_TOPIC_IN_NAMESRV, {}),
    ("n", R.GET_TOPICS_BY_CLUSTER, {}),
    ("n", R.WIPE_WRITE_PERM_OF_BROKER, {}),
    ("n", R.ADD_WRITE_PERM_OF_BROKER, {}),
    ("n", R.UPDATE_NAMESRV_CONFIG, {}),
]


def _body(raw: bytes | None) -> Any:
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def probe(addr: str, code: int, fields: dict[str, str], body: bytes | None = None,
          timeout: float = 5.0) -> dict[str, Any]:
    """One raw request on a fresh connection: what came back (or that nothing did)."""
    with WireClient(addr, timeout=timeout) as client:
        try:
            answer = client.request(RemotingCommand.request(code, fields, body))
        except TimeoutError:
            return {"timeout": True}
    return {"code": answer.code, "remark": answer.remark, "fields": answer.ext_fields, "body": _body(answer.body)}


def probe_all(namesrv: str, broker: str) -> list[dict[str, Any]]:
    # Commit-log offset 0 of broker-a holds a message on both targets (the real one may already hold others'), so
    # the probe that names offset 0 finds a message whatever ran before.
    seeded = probe(broker, R.SEND_MESSAGE_V2, {"a": "NulProbePG", "b": "NulProbeSeed", "c": "TBW102", "d": "4",
                                                "e": "0", "f": "0", "g": "0", "h": "0"}, b"seed")
    assert seeded.get("code") == 0, f"seeding broker-a failed: {seeded}"
    return [{"request": f"{int(code)} {sorted(fields.items())} {body!r}",
             **probe(namesrv if node == "n" else broker, code, fields, *body)}
            for node, code, fields, *body in PROBES]


@pytest.fixture(scope="module")
def answers(real_rocketmq: RealCluster, served_for_java: ServedCluster) -> Iterator[tuple[list[Any], list[Any]]]:
    with ThreadPoolExecutor(2) as pool:
        real = pool.submit(probe_all, real_rocketmq.namesrv_addr, real_rocketmq.broker_addrs["broker-a"])
        served = pool.submit(probe_all, served_for_java.namesrv_addr, served_for_java.broker_addrs["broker-a"])
        yield real.result(), served.result()


def comparable(real: dict[str, Any], served: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pair with what legitimately varies made equal:

    - a NullPointerException answered bare (``java.lang.NullPointerException``, no frame) matches any
      NullPointerException remark: a warm JVM (``-XX:+OmitStackTraceInFastThrow``, HotSpot's default) throws a
      preallocated exception without message or stack once a site threw often, so the real broker answers the helpful
      text only the first times; serve answers that first (cold) form;
    - GET_BROKER_CONSUME_STATS' body: the broker's address and every group with offsets (the real cluster is shared
      by the session's modules, each gets a fresh serve): the code only.
    """
    real, served = dict(real), dict(served)
    remarks = (real.get("remark") or "", served.get("remark") or "")
    if JAVA_NPE in remarks and all(r.startswith(JAVA_NPE) for r in remarks):
        real["remark"] = served["remark"] = JAVA_NPE
    for answer in (real, served):
        body = answer.get("body")
        if (isinstance(body, dict) and "consumeStatsList" in body) or \
                (isinstance(body, str) and body.startswith('{"brokerAddr"')):  # MessageQueue keys: not JSON
            answer["body"] = "<ConsumeStatsList>"
    return real, served


def test_missing_and_bad_header_fields_answer_as_4_9_8(answers: tuple[list[Any], list[Any]]) -> None:
    real, served = (list(side) for side in zip(*(comparable(a, b) for a, b in zip(*answers, strict=True)),
                                               strict=True))
    # What the real broker shows, so that serve's equal answer means something.
    npe = [a for a in answers[0] if a.get("code") == 1 and (a.get("remark") or "").startswith(JAVA_NPE + ": ")]
    assert npe, "the real broker answered no probe with a helpful NullPointerException"
    found = differences(real, served)
    assert not found, "serve differs from RocketMQ 4.9.8:\n  " + "\n  ".join(found)



def test_the_comparison_keeps_what_matters() -> None:
    """A bare NullPointerException matches only another one; anything else still differs."""
    bare = {"code": 1, "remark": JAVA_NPE, "fields": {}, "body": None}
    helpful = {**bare, "remark": JAVA_NPE_NULL_KEY_GET}
    assert not differences(*comparable(bare, helpful))
    assert differences(*comparable(bare, {**bare, "remark": "the custom field <topic> is null"}))
    assert differences(*comparable(bare, {**helpful, "code": 0}))
