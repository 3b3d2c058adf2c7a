"""QUERY_MESSAGE (the message index), VIEW_MESSAGE_BY_ID and SEND_REPLY_MESSAGE(_V2) on an in-process broker."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from test_refimpl_broker import LONG_TO_LETTER, Env, FakeChannel

from rocketspec.refimpl.index import index_key_hash
from rocketspec.refimpl.message import decode_offset_message_id, decode_stored_messages, encode_properties
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.runtime import Future
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    SCHEDULE_TOPIC,
    TRANS_HALF_TOPIC,
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    UNIQUE_MSG_QUERY_FLAG,
    Property,
    RequestCode,
    ResponseCode,
)

FAR_FUTURE = 2**62


@pytest.fixture
def env() -> Iterator[Env]:
    e = Env()
    e.broker.create_topic("T", 2, 2)
    yield e


def query(env: Env, query_key: str, *, topic: str = "T", max_num: int = 32, begin: int = 0, end: int = FAR_FUTURE,
          unique: bool | None = None, **override: Any) -> RemotingCommand:
    fields: dict[str, Any] = {"topic": topic, "key": query_key, "maxNum": max_num, "beginTimestamp": begin,
                              "endTimestamp": end}
    if unique is not None:
        fields[UNIQUE_MSG_QUERY_FLAG] = "true" if unique else "false"
    fields.update(override)
    fields = {k: v for k, v in fields.items() if v is not None}
    response = env.handle(RemotingCommand.request(RequestCode.QUERY_MESSAGE, fields))
    assert response is not None
    return response


def bodies(response: RemotingCommand) -> list[bytes]:
    return [m.body for m in decode_stored_messages(response.body or b"", "broker-a")]


# ------------------------------------------------------------------------------------------------------- queries


def test_query_by_key_and_by_unique_key(env: Env) -> None:
    first = env.send("T", b"m1", props={Property.KEYS: "k1 k2", Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "U1"})
    env.send("T", b"m2", props={Property.KEYS: "k2"}, queue_id=1)
    env.send("Other", b"m3", props={Property.KEYS: "k1"})
    assert first.code == ResponseCode.SUCCESS
    found = query(env, "k1")
    assert found.code == ResponseCode.SUCCESS and bodies(found) == [b"m1"]
    assert bodies(query(env, "k2")) == [b"m1", b"m2"]  # commit-log order
    assert bodies(query(env, "k1", topic="Other")) == [b"m3"]
    assert bodies(query(env, "U1", unique=True)) == [b"m1"]
    # The index's newest entry is reported with what was found.
    store = env.broker.store
    assert int(found.ext_fields["indexLastUpdatePhyoffset"]) == env.broker.index.end_phy_offset > 0
    assert int(found.ext_fields["indexLastUpdateTimestamp"]) == env.broker.index.end_timestamp > 0
    message = decode_stored_messages(found.body or b"", "broker-a")[0]
    assert message.properties[Property.KEYS] == "k1 k2" and message.topic == "T"
    assert store.look_message_bytes(decode_offset_message_id(first.ext_fields["msgId"])[2]) == found.body


def test_nothing_found_is_query_not_found_with_zero_index_fields(env: Env) -> None:
    env.send("T", props={Property.KEYS: "k1"})
    for response in (query(env, "nope"), query(env, "k1", topic="Unknown"),
                     query(env, "k1", begin=env.runtime.now_ms() + 5_000)):
        assert response.code == ResponseCode.QUERY_NOT_FOUND
        assert response.remark == "can not find message, maybe time range not correct"
        assert response.ext_fields["indexLastUpdateTimestamp"] == "0"
        assert response.ext_fields["indexLastUpdatePhyoffset"] == "0"
        assert not response.body


def test_max_num_limits_and_the_unique_key_flag(env: Env) -> None:
    for i in range(70):
        env.send("T", f"m{i}".encode(), props={Property.KEYS: "dup"})
    assert len(bodies(query(env, "dup", max_num=5))) == 5
    assert len(bodies(query(env, "dup", max_num=1000))) == 64  # maxMsgsNumBatch
    assert len(bodies(query(env, "dup", max_num=1, unique=True))) == 32  # defaultQueryMaxNum
    assert len(bodies(query(env, "dup", max_num=5, unique=False))) == 5
    # The newest entries win: the 5 found are the last 5 sent, answered in commit-log order.
    assert bodies(query(env, "dup", max_num=5)) == [f"m{i}".encode() for i in range(65, 70)]


def test_time_range_in_whole_seconds_from_the_first_entry(env: Env) -> None:
    start = env.runtime.now_ms()
    env.send("T", b"early", props={Property.KEYS: "k"})
    env.runtime.advance(5_500)
    env.send("T", b"late", props={Property.KEYS: "k"})
    assert bodies(query(env, "k", begin=start + 5_000)) == [b"late"]
    # The late entry is read back as start + 5 s (whole seconds), so an end at start + 5.2 s still matches it.
    assert bodies(query(env, "k", end=start + 5_200)) == [b"early", b"late"]
    assert bodies(query(env, "k", end=start + 4_999)) == [b"early"]


def test_keys_are_split_on_spaces_and_hashes_decide(env: Env) -> None:
    assert index_key_hash("T#Aa") == index_key_hash("T#BB")  # Java's String.hashCode collides
    env.send("T", b"aa", props={Property.KEYS: "Aa"})
    env.send("T", b"bb", props={Property.KEYS: "  BB  "})  # empty parts are skipped
    # The broker returns what the hash finds; the client drops keys that do not match (MQAdminImpl.queryMessage).
    assert bodies(query(env, "Aa")) == [b"aa", b"bb"]
    assert bodies(query(env, "")) == []


def test_delayed_half_and_rolled_back_messages(env: Env) -> None:
    env.send("T", b"delayed", props={Property.KEYS: "d", Property.DELAY_TIME_LEVEL: "1"})
    assert bodies(query(env, "d", topic=SCHEDULE_TOPIC)) == [b"delayed"]
    assert query(env, "d").code == ResponseCode.QUERY_NOT_FOUND
    env.runtime.advance(3_000)  # delivered to T: indexed under T too
    assert bodies(query(env, "d")) == [b"delayed"]
    env.send("T", b"half", props={Property.KEYS: "h", Property.TRANSACTION_PREPARED: "true",
                                   Property.PRODUCER_GROUP: "PG"}, f=TRANSACTION_PREPARED_TYPE)
    assert bodies(query(env, "h", topic=TRANS_HALF_TOPIC)) == [b"half"]
    index = env.broker.index
    before = index.end_phy_offset
    from rocketspec.refimpl.store import StoredRecord

    index.build_index(StoredRecord("T", 0, before + 1000, 100, TRANSACTION_ROLLBACK_TYPE, 0, {Property.KEYS: "rb"}))
    assert index.end_phy_offset == before  # a rolled-back message is not indexed
    index.build_index(StoredRecord("T", 0, before + 2000, 100, TRANSACTION_COMMIT_TYPE, 0, {Property.KEYS: "c"}))
    assert index.end_phy_offset == before + 2000


def test_index_is_rebuilt_from_the_commit_log_after_a_restart(env: Env) -> None:
    env.send("T", b"kept", props={Property.KEYS: "k", Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "U"})
    env.broker.store.flush()
    env.broker.crash()
    env.broker = env.new_broker()
    assert bodies(query(env, "k")) == [b"kept"]
    assert bodies(query(env, "U", unique=True)) == [b"kept"]
    env.send("T", b"new", props={Property.KEYS: "k"})
    assert bodies(query(env, "k")) == [b"kept", b"new"]


def _index_state(index: Any) -> tuple[Any, ...]:
    slots = {slot: [(e.key_hash, e.commit_log_offset, e.time_diff_s) for e in entries]
             for slot, entries in index._slots.items()}
    return slots, index._count, index.begin_timestamp, index.end_timestamp, index.end_phy_offset


def _rebuilt(env: Env) -> tuple[Any, ...]:
    """The index a broker would build from the commit log alone."""
    from rocketspec.refimpl.index import _SAVED, IndexService

    kept = _SAVED.pop(env.disk, None)
    try:
        return _index_state(IndexService(env.broker.store))
    finally:
        if kept is not None:
            _SAVED[env.disk] = kept


@pytest.mark.parametrize("stop", ["shutdown", "crash", "crash_losing_the_tail", "shutdown_after_deleting"])
def test_a_restarted_broker_takes_over_the_index_it_left_equal_to_a_rebuild(stop: str) -> None:
    """The index a stopped broker leaves on its disk is taken over (only later messages are indexed) and is exactly
    what re-indexing the whole commit log gives, after a clean stop and after a crash, also one that loses
    unflushed messages or after old messages were deleted (then it is rebuilt)."""
    env = Env(flush="async", segment_bytes=4096)
    env.broker.create_topic("T", 2, 2)
    for i in range(30):
        env.send("T", f"m{i}".encode(), props={Property.KEYS: f"k{i % 7} x{i}",
                                               Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: f"U{i}"})
        env.runtime.advance(700)
    if stop != "crash_losing_the_tail":
        env.broker.store.flush()
    else:
        env.broker.store.flush()
        for i in range(3):
            env.send("T", f"lost{i}".encode(), props={Property.KEYS: "gone"})
    if stop == "shutdown_after_deleting":
        assert env.broker.store.delete_oldest_segments(1) == 1
    getattr(env.broker, "crash" if stop.startswith("crash") else "shutdown")()
    env.broker = env.new_broker()
    assert _index_state(env.broker.index) == _rebuilt(env)
    env.send("T", b"after", props={Property.KEYS: "k1"})
    assert _index_state(env.broker.index) == _rebuilt(env)
    assert b"after" in bodies(query(env, "k1")) and b"m29" in bodies(query(env, "x29"))
    assert query(env, "gone").code == ResponseCode.QUERY_NOT_FOUND


def test_index_can_be_disabled() -> None:
    env = Env(message_index_enable=False)
    env.broker.create_topic("T", 1, 1)
    env.send("T", props={Property.KEYS: "k"})
    assert query(env, "k").code == ResponseCode.QUERY_NOT_FOUND


def test_query_bad_input(env: Env) -> None:
    """As a 4.9.8 broker answers on the wire: its header decoder enforces nothing."""
    env.send("T", props={Property.KEYS: "null"})
    # A missing topic or key is Java's "null" in the index key: nothing (or a key "null" of topic "null") is found.
    assert query(env, "k", topic=None).code == ResponseCode.QUERY_NOT_FOUND
    assert bodies(query(env, "k", key=None)) == [b"hello"]  # KEYS "null" matches a null key
    assert query(env, "k", topic="bad topic!").code == ResponseCode.QUERY_NOT_FOUND
    npe = 'java.lang.NullPointerException: Cannot invoke "java.lang.{}()" because the return value of ' \
          '"org.apache.rocketmq.common.protocol.header.QueryMessageRequestHeader.{}()" is null'
    for field, value, unboxing, getter in (
        ("maxNum", None, "Integer.intValue", "getMaxNum"), ("maxNum", "many", "Integer.intValue", "getMaxNum"),
        ("beginTimestamp", None, "Long.longValue", "getBeginTimestamp"),
        ("endTimestamp", "x", "Long.longValue", "getEndTimestamp"),
    ):
        response = query(env, "k", **{field: value})
        assert response.code == ResponseCode.SYSTEM_ERROR and response.remark == npe.format(unboxing, getter)
    negative = query(env, "k", max_num=-1)
    assert negative.code == ResponseCode.SYSTEM_ERROR
    assert negative.remark == "java.lang.IllegalArgumentException: Illegal Capacity: -1"
    # The unique-key flag replaces maxNum before it is read.
    assert query(env, "k", max_num=-1, unique=True).code == ResponseCode.QUERY_NOT_FOUND
    assert query(env, "k", maxNum=None, unique=True).code == ResponseCode.QUERY_NOT_FOUND


def test_view_message_by_id(env: Env) -> None:
    sent = env.send("T", b"viewed")
    offset = decode_offset_message_id(sent.ext_fields["msgId"])[2]
    found = env.handle(RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": offset}))
    assert found is not None and found.code == ResponseCode.SUCCESS and bodies(found) == [b"viewed"]
    end = env.broker.store.commit_log_max_offset()
    for bad in (end, end + 10_000, -1, offset + 1):
        missing = env.handle(RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": bad}))
        assert missing is not None and missing.code == ResponseCode.SYSTEM_ERROR
        assert missing.remark == f"can not find message by the offset, {bad}"
    for fields in ({}, {"offset": "x"}):
        no_offset = env.handle(RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, fields))
        assert no_offset is not None and no_offset.code == ResponseCode.SYSTEM_ERROR
        assert (no_offset.remark or "").startswith("java.lang.NullPointerException: ")
        assert "ViewMessageRequestHeader.getOffset()" in (no_offset.remark or "")


# --------------------------------------------------------------------------------------------------- request-reply

REPLY_TOPIC = "DefaultCluster_REPLY_TOPIC"


class Requester(FakeChannel):
    """The requester's connection: PUSH_REPLY_MESSAGE_TO_CLIENT waits for the answer the test gives."""

    def __init__(self) -> None:
        super().__init__("10.0.0.9:60000")
        self.pushes: list[tuple[RemotingCommand, Future[RemotingCommand]]] = []

    def invoke(self, request: RemotingCommand, timeout_ms: int) -> Future[RemotingCommand]:
        future: Future[RemotingCommand] = Future()
        self.pushes.append((request, future))
        return future


def register_producer(env: Env, channel: FakeChannel, client_id: str) -> None:
    body = json.dumps({"clientID": client_id, "producerDataSet": [{"groupName": "REQ"}],
                       "consumerDataSet": []}).encode()
    response = env.handle(RemotingCommand.request(RequestCode.HEART_BEAT, {}, body), channel)
    assert response is not None and response.code == ResponseCode.SUCCESS


def send_reply(env: Env, channel: FakeChannel, props: dict[str, str], *, code: int = RequestCode.SEND_REPLY_MESSAGE,
               topic: str = REPLY_TOPIC, queue_id: int = -1, **override: Any) -> RemotingCommand | None:
    header: dict[str, Any] = {
        "producerGroup": "REPLIER", "topic": topic, "defaultTopic": AUTO_CREATE_TOPIC_KEY,
        "defaultTopicQueueNums": 4, "queueId": queue_id, "sysFlag": 0, "bornTimestamp": 1234, "flag": 7,
        "properties": encode_properties(props), "reconsumeTimes": 0,
    }
    header.update(override)
    header = {k: v for k, v in header.items() if v is not None}
    if code == RequestCode.SEND_REPLY_MESSAGE_V2:
        header = {LONG_TO_LETTER[k]: v for k, v in header.items()}
    return env.handle(RemotingCommand.request(code, header, b"reply-body"), channel)


def reply_props(client_id: str | None = "req@1") -> dict[str, str]:
    props = {Property.CORRELATION_ID: "corr-1", Property.MESSAGE_TTL: "3000", Property.MESSAGE_TYPE: "reply",
             Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "UNIQ1", Property.WAIT_STORE_MSG_OK: "true"}
    if client_id is not None:
        props[Property.MESSAGE_REPLY_TO_CLIENT] = client_id
    return props


def stored_replies(env: Env) -> list[Any]:
    store = env.broker.store
    out = []
    for queue_id in store.queue_ids(REPLY_TOPIC):
        result = store.get_message(REPLY_TOPIC, queue_id, 0, 32)
        out.extend(m for data in result.messages for m in decode_stored_messages(data, "broker-a"))
    return out


@pytest.mark.parametrize("code", [RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2])
def test_reply_is_pushed_to_the_requester_then_stored(env: Env, code: int) -> None:
    assert env.broker.topics.get(REPLY_TOPIC) is not None  # created at start (TopicConfigManager)
    requester = Requester()
    register_producer(env, requester, "req@1")
    replier = env.channel("10.0.0.5:50005")
    assert send_reply(env, replier, reply_props(), code=code) is None  # answered once the push is answered
    [(push, future)] = requester.pushes
    assert push.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT and push.body == b"reply-body"
    fields = push.ext_fields
    assert (fields["topic"], fields["producerGroup"], fields["queueId"], fields["flag"]) == (
        REPLY_TOPIC, "REPLIER", "-1", "7")
    assert fields["bornHost"] == "10.0.0.5:50005" and fields["storeHost"] == env.broker.addr
    pushed = dict(kv.split("\x01") for kv in fields["properties"].split("\x02") if kv)
    assert pushed[Property.PUSH_REPLY_TIME] == str(int(fields["storeTimestamp"]))
    assert pushed[Property.CORRELATION_ID] == "corr-1"
    assert replier.responses == [] and stored_replies(env) == []
    future.set_result(push.response(ResponseCode.SUCCESS))
    [response] = replier.responses
    assert response.code == ResponseCode.SUCCESS and response.opaque is not None
    assert response.ext_fields["queueOffset"] == "0" and response.ext_fields["MSG_REGION"] == "DefaultRegion"
    [stored] = stored_replies(env)
    assert decode_offset_message_id(response.ext_fields["msgId"])[2] == stored.commit_log_offset
    # Stored as sent: no PUSH_REPLY_TIME, no CLUSTER, WAIT kept, sysFlag 0.
    assert stored.properties == reply_props() and stored.sys_flag == 0 and stored.flag == 7
    assert stored.born_host == "10.0.0.5:50005"


def test_reply_to_nobody_is_a_system_error_but_still_stored(env: Env) -> None:
    replier = env.channel()
    cases = [
        (reply_props(None), "reply message properties[REPLY_TO_CLIENT] is null"),
        (reply_props("gone@1"), "push reply message fail, channel of <gone@1> not found."),
    ]
    for props, remark in cases:
        response = send_reply(env, replier, props)
        assert response is not None and response.code == ResponseCode.SYSTEM_ERROR
        assert response.remark == remark
        assert "msgId" in response.ext_fields  # the put still happened
    assert len(stored_replies(env)) == 2


def test_reply_push_answered_with_an_error_or_lost(env: Env) -> None:
    requester = Requester()
    register_producer(env, requester, "req@1")
    replier = env.channel()
    send_reply(env, replier, reply_props())
    send_reply(env, replier, reply_props())
    (_, refused), (_, lost) = requester.pushes
    refused.set_result(RemotingCommand(code=ResponseCode.SYSTEM_ERROR, remark="process reply message fail"))
    lost.set_exception(TimeoutError("no answer"))
    assert [(r.code, r.remark) for r in replier.responses] == [
        (ResponseCode.SYSTEM_ERROR, "push reply message to req@1fail."),
    ] * 2


def test_reply_not_stored_when_disabled() -> None:
    env = Env(store_reply_message_enable=False)
    requester = Requester()
    register_producer(env, requester, "req@1")
    replier = env.channel()
    send_reply(env, replier, reply_props(), queue_id=0)
    requester.pushes[0][1].set_result(RemotingCommand(code=ResponseCode.SUCCESS))
    [response] = replier.responses
    assert response.code == ResponseCode.SUCCESS and response.ext_fields["msgId"] == "0"
    assert stored_replies(env) == []


def test_reply_bad_input(env: Env) -> None:
    replier = env.channel()
    for code in (RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2):
        missing = send_reply(env, replier, reply_props(), code=code, topic=None)
        assert missing is not None and missing.code == ResponseCode.SYSTEM_ERROR
        assert missing.remark == "The specified topic is blank."
        assert missing.ext_fields["MSG_REGION"] == "DefaultRegion"
    missing_v2 = send_reply(env, replier, reply_props(), code=RequestCode.SEND_REPLY_MESSAGE_V2, flag=None)
    assert missing_v2 is not None and missing_v2.code == ResponseCode.SYSTEM_ERROR
    assert (missing_v2.remark or "").endswith("SendMessageRequestHeader.getFlag()\" is null, org.apache.rocketmq."
                                              "broker.processor.ReplyMessageProcessor.processReplyMessageRequest("
                                              "ReplyMessageProcessor.java:137)")
    bad_topic = send_reply(env, replier, reply_props(), topic="bad topic!")
    assert bad_topic is not None and bad_topic.code == ResponseCode.SYSTEM_ERROR
    assert "illegal characters" in (bad_topic.remark or "")
    bad_queue = send_reply(env, replier, reply_props(), queue_id=5)
    assert bad_queue is not None and bad_queue.code == ResponseCode.SYSTEM_ERROR
    assert (bad_queue.remark or "").startswith("request queueId[5] is illegal")
    assert stored_replies(env) == []


# ------------------------------------------------------------------------------------- routes of broker-made topics


@pytest.mark.parametrize("registered", [True, False])
def test_topics_the_broker_creates_are_routed_at_once(registered: bool) -> None:
    """``createTopicInSendMessageMethod`` / ``createTopicInSendMessageBackMethod`` register with the name server
    right away: a retry topic made by a heartbeat, a dead-letter topic made by a send-back and a topic auto-created
    by a send are routed within milliseconds, not at the next periodic registration (30 s). ``registered=False``
    shows the check fails without that registration."""
    from rocketspec.refimpl.namesrv import NameServer

    env = Env()
    env.broker.shutdown()
    namesrv = NameServer(env.runtime, env.network, env.events, "127.0.0.1:9876")
    namesrv.start()
    env.broker = env.new_broker("127.0.0.1:9876")
    env.runtime.advance(10)
    if not registered:
        env.broker.topics.on_created = None
    env.heartbeat(env.channel(), "c1", group="G", topics=("Auto",))
    sent = env.send("Auto", b"x")
    offset = decode_offset_message_id(sent.ext_fields["msgId"])[2]
    back = env.handle(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
        "offset": offset, "group": "G", "delayLevel": -1, "originMsgId": sent.ext_fields["msgId"],
        "originTopic": "Auto"}))
    assert back is not None and back.code == ResponseCode.SUCCESS
    env.runtime.advance(10)
    for topic in ("%RETRY%G", "%DLQ%G", "Auto"):
        assert (namesrv.pickup_topic_route(topic) is not None) is registered, topic


def test_a_reply_to_a_topic_without_write_queues_is_javas_division_by_zero(env: Env) -> None:
    """queueId -1 picks ``random % writeQueueNums``: with none, Java's ArithmeticException, answered as SYSTEM_ERROR
    with its text (found by mutation testing: ``<= 0`` must include zero)."""
    env.broker.create_topic(REPLY_TOPIC, 1, 0)
    answer = send_reply(env, env.channel(), reply_props(), queue_id=-1)
    assert answer is not None and answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark == "ArithmeticException: / by zero"
