"""The broker driven request by request (``broker.handle``) on a simulated runtime, plus a name server round trip."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from rocketspec.refimpl.broker.broker import Broker
from rocketspec.refimpl.broker.config import BrokerConfig
from rocketspec.refimpl.events import EventLog, MessageStored, OffsetCommit, PullResponseEvent
from rocketspec.refimpl.message import BatchEntry, decode_stored_messages, encode_batch, encode_properties, tags_code
from rocketspec.refimpl.namesrv import NameServer
from rocketspec.refimpl.remoting import Network, RemotingCommand
from rocketspec.refimpl.runtime import Future, SimulatedRuntime
from rocketspec.refimpl.store import GetMessageResult, MemoryDisk
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    OFFSET_MOVED_EVENT_TOPIC,
    PERM_READ,
    PERM_WRITE,
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    PULL_FLAG_SUSPEND,
    SCHEDULE_TOPIC,
    SEND_MESSAGE_V2_FIELDS,
    TRANS_HALF_TOPIC,
    TRANSACTION_PREPARED_TYPE,
    VERSION_V3_0_11,
    GetMessageStatus,
    Property,
    RequestCode,
    ResponseCode,
)

LONG_TO_LETTER = {long: letter for letter, long in SEND_MESSAGE_V2_FIELDS.items()}


class FakeChannel:
    """A server-side channel that records what the broker sends back."""

    def __init__(self, remote_addr: str = "10.0.0.7:50001") -> None:
        self.remote_addr = remote_addr
        self.local_addr = "127.0.0.1:10911"
        self.active = True
        self.responses: list[RemotingCommand] = []
        self.oneways: list[RemotingCommand] = []
        self.broker: Broker | None = None

    def send_response(self, response: RemotingCommand) -> None:
        self.responses.append(response)

    def invoke_oneway(self, request: RemotingCommand) -> None:
        self.oneways.append(request)

    def invoke(self, request: RemotingCommand, timeout_ms: int) -> Future[RemotingCommand]:
        self.oneways.append(request)
        return Future()

    def close(self) -> None:
        if self.active:
            self.active = False
            if self.broker is not None:
                self.broker.channel_closed(self)

    def notifications(self) -> list[str]:
        return [r.ext_fields["consumerGroup"] for r in self.oneways
                if r.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED]


class Env:
    def __init__(self, **options: Any) -> None:
        self.runtime = SimulatedRuntime(seed=1)
        self.events = EventLog(self.runtime.now_ms)
        self.network = Network(self.runtime, self.events)
        self.disk = MemoryDisk()
        self.options = options
        self.broker = self.new_broker()

    def new_broker(self, namesrv: str | None = None) -> Broker:
        broker = Broker(BrokerConfig(broker_name="broker-a", **self.options), self.runtime, self.network, self.events,
                        namesrv, disk=self.disk)
        broker.start()
        return broker

    def channel(self, remote_addr: str = "10.0.0.7:50001") -> FakeChannel:
        channel = FakeChannel(remote_addr)
        channel.broker = self.broker
        return channel

    def handle(self, request: RemotingCommand, channel: FakeChannel | None = None) -> RemotingCommand | None:
        return self.broker.handle(request, channel or self.channel())

    def send(self, topic: str, body: bytes = b"hello", *, tags: str | None = None, queue_id: int = 0,
             props: dict[str, str] | None = None, channel: FakeChannel | None = None, code: int = 310,
             **fields: Any) -> RemotingCommand:
        properties = dict(props or {})
        if tags is not None:
            properties[Property.TAGS] = tags
        header: dict[str, Any] = {
            "producerGroup": "PG", "topic": topic, "defaultTopic": AUTO_CREATE_TOPIC_KEY,
            "defaultTopicQueueNums": 4, "queueId": queue_id, "sysFlag": 0, "bornTimestamp": self.runtime.now_ms(),
            "flag": 0, "properties": encode_properties(properties),
        }
        header.update({SEND_MESSAGE_V2_FIELDS.get(k, k): v for k, v in fields.items()})
        if code != RequestCode.SEND_MESSAGE:
            header = {LONG_TO_LETTER[k]: v for k, v in header.items()}
        response = self.handle(RemotingCommand.request(code, header, body), channel)
        assert response is not None
        return response

    def pull(self, topic: str, queue_id: int = 0, offset: int = 0, *, group: str = "CG", sys_flag: int | None = None,
             subscription: str | None = "*", max_msgs: int = 32, suspend_ms: int = 15_000, commit_offset: int = 0,
             sub_version: int = 0, channel: FakeChannel | None = None, **extra: Any) -> RemotingCommand | None:
        if sys_flag is None:
            sys_flag = PULL_FLAG_SUBSCRIPTION
        fields: dict[str, Any] = {
            "consumerGroup": group, "topic": topic, "queueId": queue_id, "queueOffset": offset,
            "maxMsgNums": max_msgs, "sysFlag": sys_flag, "commitOffset": commit_offset,
            "suspendTimeoutMillis": suspend_ms, "subscription": subscription, "subVersion": sub_version,
        }
        fields.update(extra)
        return self.handle(RemotingCommand.request(RequestCode.PULL_MESSAGE, fields), channel)

    def heartbeat(self, channel: FakeChannel, client_id: str, group: str = "CG", topics: tuple[str, ...] = ("T",),
                  model: str = "CLUSTERING", sub_version: int = 0) -> RemotingCommand:
        body = {
            "clientID": client_id,
            "producerDataSet": [],
            "consumerDataSet": [{
                "groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": model,
                "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": False,
                "subscriptionDataSet": [{"classFilterMode": False, "topic": t, "subString": "*", "tagsSet": [],
                                         "codeSet": [], "subVersion": sub_version, "expressionType": "TAG"}
                                        for t in topics],
            }],
        }
        response = self.handle(RemotingCommand.request(RequestCode.HEART_BEAT, {}, json.dumps(body).encode()),
                               channel)
        assert response is not None and response.code == ResponseCode.SUCCESS, response
        return response


@pytest.fixture
def env() -> Iterator[Env]:
    yield Env()


def offset_of(response: RemotingCommand, name: str = "offset") -> int:
    return int(response.ext_fields[name])


# ----------------------------------------------------------------------------------------------------- send + pull


def test_send_then_pull_round_trip(env: Env) -> None:
    env.broker.create_topic("T", 4, 4)
    channel = env.channel("10.1.2.3:4444")
    sent = env.send("T", b"payload", tags="A", props={Property.WAIT_STORE_MSG_OK: "true",
                                                       Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "UNIQ1"},
                    channel=channel, queue_id=2)
    assert sent.code == ResponseCode.SUCCESS
    assert sent.ext_fields["queueId"] == "2" and sent.ext_fields["queueOffset"] == "0"
    assert sent.ext_fields["MSG_REGION"] == "DefaultRegion" and sent.ext_fields["TRACE_ON"] == "true"
    assert len(sent.ext_fields["msgId"]) == 32
    pulled = env.pull("T", 2, 0)
    assert pulled is not None and pulled.code == ResponseCode.SUCCESS and pulled.remark == "FOUND"
    assert (offset_of(pulled, "nextBeginOffset"), offset_of(pulled, "minOffset"),
            offset_of(pulled, "maxOffset"), offset_of(pulled, "suggestWhichBrokerId")) == (1, 0, 1, 0)
    [msg] = decode_stored_messages(pulled.body or b"", "broker-a")
    assert msg.body == b"payload" and msg.tags == "A" and msg.queue_id == 2
    assert msg.properties[Property.CLUSTER] == "DefaultCluster"
    assert Property.WAIT_STORE_MSG_OK not in msg.properties
    assert msg.born_host == "10.1.2.3:4444" and msg.offset_msg_id == sent.ext_fields["msgId"]
    stored = env.events.of(MessageStored)[-1]
    assert (stored.topic, stored.queue_id, stored.offset, stored.msg_id) == ("T", 2, 0, "UNIQ1")
    pull_event = env.events.of(PullResponseEvent)[-1]
    assert (pull_event.node, pull_event.status, pull_event.count, pull_event.next_offset) == ("broker-a", "FOUND", 1, 1)


def test_send_message_v1_long_names_and_random_queue(env: Env) -> None:
    env.broker.create_topic("T", 4, 4)
    response = env.send("T", code=RequestCode.SEND_MESSAGE, queue_id=-1)
    assert response.code == ResponseCode.SUCCESS and 0 <= int(response.ext_fields["queueId"]) < 4


def test_pull_status_table(env: Env) -> None:
    env.broker.create_topic("T", 2, 2)
    # No consume queue yet: offset 0 → PULL_NOT_FOUND, other offsets → PULL_OFFSET_MOVED.
    first = env.pull("T", 0, 0)
    assert first is not None and (first.code, first.remark) == (ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE")
    moved = env.pull("T", 0, 5)
    assert moved is not None and (moved.code, moved.remark) == (ResponseCode.PULL_OFFSET_MOVED,
                                                                "NO_MESSAGE_IN_QUEUE")
    for _ in range(3):
        env.send("T", tags="A")
    one = env.pull("T", 0, 3)
    assert one is not None and (one.code, one.remark) == (ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE")
    badly = env.pull("T", 0, 9)
    assert badly is not None and (badly.code, badly.remark) == (ResponseCode.PULL_OFFSET_MOVED,
                                                                "OFFSET_OVERFLOW_BADLY")
    assert offset_of(badly, "nextBeginOffset") == 3
    # A master records every offset correction in OFFSET_MOVED_EVENT.
    event_msgs = [e for e in env.events.of(MessageStored) if e.topic == OFFSET_MOVED_EVENT_TOPIC]
    assert len(event_msgs) == 2
    unmatched = env.pull("T", 0, 0, subscription="B")
    assert unmatched is not None and (unmatched.code, unmatched.remark) == (ResponseCode.PULL_RETRY_IMMEDIATELY,
                                                                            "NO_MATCHED_MESSAGE")
    assert offset_of(unmatched, "nextBeginOffset") == 3


_TABLE = [
    (GetMessageStatus.FOUND, 3, ResponseCode.SUCCESS),
    (GetMessageStatus.NO_MATCHED_MESSAGE, 3, ResponseCode.PULL_RETRY_IMMEDIATELY),
    (GetMessageStatus.MESSAGE_WAS_REMOVING, 3, ResponseCode.PULL_RETRY_IMMEDIATELY),
    (GetMessageStatus.OFFSET_FOUND_NULL, 3, ResponseCode.PULL_NOT_FOUND),
    (GetMessageStatus.OFFSET_OVERFLOW_ONE, 3, ResponseCode.PULL_NOT_FOUND),
    (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 3, ResponseCode.PULL_OFFSET_MOVED),
    (GetMessageStatus.OFFSET_TOO_SMALL, 3, ResponseCode.PULL_OFFSET_MOVED),
    (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, 0, ResponseCode.PULL_NOT_FOUND),
    (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, 3, ResponseCode.PULL_OFFSET_MOVED),
    (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, ResponseCode.PULL_NOT_FOUND),
    (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 3, ResponseCode.PULL_OFFSET_MOVED),
]


@pytest.mark.parametrize(("status", "offset", "code"), _TABLE)
def test_every_store_status_maps_to_its_code(status: GetMessageStatus, offset: int, code: int,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    env = Env()
    env.broker.create_topic("T", 1, 1)
    messages = (b"stored",) if status == GetMessageStatus.FOUND else ()
    monkeypatch.setattr(env.broker.store, "get_message",
                        lambda *args: GetMessageResult(status, 7, 1, 9, messages))
    response = env.pull("T", 0, offset)
    assert response is not None and response.code == code and response.remark == status.name
    assert (offset_of(response, "nextBeginOffset"), offset_of(response, "minOffset"),
            offset_of(response, "maxOffset")) == (7, 1, 9)
    assert response.body == (b"stored" if messages else None)
    # The same request held for long polling when it found nothing.
    held = env.pull("T", 0, offset, sys_flag=PULL_FLAG_SUBSCRIPTION | PULL_FLAG_SUSPEND)
    assert (held is None) == (code == ResponseCode.PULL_NOT_FOUND)
    event = env.events.of(PullResponseEvent)[-1]
    assert event.status == status.name and event.code == code


def test_slave_pull_corrections() -> None:
    env = Env(broker_id=1)
    env.broker.create_topic("T", 1, 1)
    moved = env.pull("T", 0, 5)
    assert moved is not None and moved.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert not [e for e in env.events.of(MessageStored) if e.topic == OFFSET_MOVED_EVENT_TOPIC]
    checking = Env(broker_id=1, offset_check_in_slave=True)
    checking.broker.create_topic("T", 1, 1)
    corrected = checking.pull("T", 0, 5)
    assert corrected is not None and corrected.code == ResponseCode.PULL_OFFSET_MOVED
    # slaveReadEnable does not change the code, only the suggested broker (the group's brokerId).
    reading = Env(broker_id=1, slave_read_enable=True)
    reading.broker.create_topic("T", 1, 1)
    found = reading.pull("T", 0, 0)
    assert found is not None and found.code == ResponseCode.PULL_NOT_FOUND
    assert offset_of(found, "suggestWhichBrokerId") == 0
    # A slave does not commit offsets from pulls.
    reading.pull("T", 0, 0, sys_flag=PULL_FLAG_SUBSCRIPTION | PULL_FLAG_COMMIT_OFFSET, commit_offset=3)
    assert reading.broker.group_offsets("CG", "T") == {}


def test_pull_offset_too_small_after_old_data_is_deleted() -> None:
    env = Env(segment_bytes=4096)
    env.broker.create_topic("T", 1, 1)
    for _ in range(60):
        env.send("T", b"x" * 200)
    assert env.broker.store.delete_oldest_segments(1) == 1
    min_offset = env.broker.store.min_offset("T", 0)
    assert min_offset > 0
    small = env.pull("T", 0, 0)
    assert small is not None and (small.code, small.remark) == (ResponseCode.PULL_OFFSET_MOVED, "OFFSET_TOO_SMALL")
    assert offset_of(small, "nextBeginOffset") == min_offset
    # No stored offset but the queue's minimum is above 0: the query is QUERY_NOT_FOUND.
    query = env.handle(RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET,
                                               {"consumerGroup": "CG", "topic": "T", "queueId": 0}))
    assert query is not None and query.code == ResponseCode.QUERY_NOT_FOUND


def test_tag_filtering(env: Env) -> None:
    env.broker.create_topic("T", 1, 1)
    for tags in ("A", "B", None, "C", "A"):
        env.send("T", (tags or "none").encode(), tags=tags)
    pulled = env.pull("T", 0, 0, subscription="A || C")
    assert pulled is not None and pulled.code == ResponseCode.SUCCESS
    bodies = [m.body for m in decode_stored_messages(pulled.body or b"", "broker-a")]
    assert bodies == [b"A", b"C", b"A"] and offset_of(pulled, "nextBeginOffset") == 5
    everything = env.pull("T", 0, 0, subscription="")
    assert everything is not None and len(decode_stored_messages(everything.body or b"", "broker-a")) == 5


def test_pull_checks_in_order() -> None:
    env = Env(auto_create_subscription_group=False, broker_permission=PERM_WRITE)
    denied = env.pull("T")
    assert denied is not None and denied.code == ResponseCode.NO_PERMISSION
    env = Env(auto_create_subscription_group=False)
    no_group = env.pull("T")
    assert no_group is not None and no_group.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    env = Env()
    group = env.broker.subscription_groups.find_or_create("OFF")
    assert group is not None
    group.consume_enable = False
    off = env.pull("T", group="OFF")
    assert off is not None and off.code == ResponseCode.NO_PERMISSION
    missing = env.pull("Nope")
    assert missing is not None and missing.code == ResponseCode.TOPIC_NOT_EXIST
    assert "topic[Nope] not exist, apply first please!" in (missing.remark or "")
    env.broker.create_topic("W", 2, 2, perm=PERM_WRITE)
    write_only = env.pull("W")
    assert write_only is not None and write_only.code == ResponseCode.NO_PERMISSION
    env.broker.create_topic("T", 2, 2)
    bad_queue = env.pull("T", 2)
    assert bad_queue is not None and bad_queue.code == ResponseCode.SYSTEM_ERROR
    parse = env.pull("T", subscription="", expressionType="SQL92")
    assert parse is not None and parse.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    sql = env.pull("T", subscription="a > 1", expressionType="SQL92")
    assert sql is not None and sql.code == ResponseCode.SYSTEM_ERROR
    # Without the subscription bit the group's registered subscription is used.
    no_info = env.pull("T", sys_flag=0)
    assert no_info is not None and no_info.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    channel = env.channel()
    env.heartbeat(channel, "c1", topics=("Other",), sub_version=5)
    not_subscribed = env.pull("T", sys_flag=0)
    assert not_subscribed is not None and not_subscribed.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    env.heartbeat(channel, "c1", topics=("T",), sub_version=5)
    stale = env.pull("T", sys_flag=0, sub_version=6)
    assert stale is not None and stale.code == ResponseCode.SUBSCRIPTION_NOT_LATEST
    fine = env.pull("T", sys_flag=0, sub_version=5)
    assert fine is not None and fine.code == ResponseCode.PULL_NOT_FOUND
    broadcast = env.broker.subscription_groups.find_or_create("BG")
    assert broadcast is not None
    broadcast.consume_broadcast_enable = False
    env.heartbeat(env.channel("10.0.0.8:1"), "c2", group="BG", model="BROADCASTING")
    refused = env.pull("T", group="BG", sys_flag=0)
    assert refused is not None and refused.code == ResponseCode.NO_PERMISSION
    assert all(e.status for e in env.events.of(PullResponseEvent))


def test_pull_commit_bit_commits_on_master(env: Env) -> None:
    env.broker.create_topic("T", 1, 1)
    env.send("T")
    response = env.pull("T", 0, 0, sys_flag=PULL_FLAG_SUBSCRIPTION | PULL_FLAG_COMMIT_OFFSET, commit_offset=7)
    assert response is not None and response.code == ResponseCode.SUCCESS
    assert env.broker.group_offsets("CG", "T") == {0: 7}
    assert env.events.of(OffsetCommit)[-1].offset == 7


# ---------------------------------------------------------------------------------------------------- long polling


def test_long_polling_wakes_on_arrival(env: Env) -> None:
    env.broker.create_topic("T", 1, 1)
    channel = env.channel()
    held = env.pull("T", 0, 0, sys_flag=PULL_FLAG_SUBSCRIPTION | PULL_FLAG_SUSPEND, channel=channel,
                    subscription="A")
    assert held is None and env.broker.puller.hold.held_count() == 1
    env.runtime.advance(1_000)
    env.send("T", tags="B")  # not for this subscription: still held
    env.runtime.advance(10)
    assert channel.responses == [] and env.broker.puller.hold.held_count() == 1
    env.runtime.advance(500)
    env.send("T", tags="A")
    env.runtime.advance(10)
    [response] = channel.responses
    assert response.code == ResponseCode.SUCCESS and response.opaque > 0
    assert [m.tags for m in decode_stored_messages(response.body or b"", "broker-a")] == ["A"]
    assert env.broker.puller.hold.held_count() == 0


def test_long_polling_times_out_at_the_periodic_check(env: Env) -> None:
    env.broker.create_topic("T", 1, 1)
    channel = env.channel()
    start = env.runtime.now_ms()
    assert env.pull("T", 0, 0, sys_flag=PULL_FLAG_SUBSCRIPTION | PULL_FLAG_SUSPEND, suspend_ms=7_000,
                    channel=channel) is None
    env.runtime.advance(9_000)
    assert channel.responses == []  # the check runs every 5 s: the first one after 7 s is at 10 s
    env.runtime.advance(1_000)
    [response] = channel.responses
    assert response.code == ResponseCode.PULL_NOT_FOUND and response.remark == "NO_MESSAGE_IN_QUEUE"
    assert env.runtime.now_ms() - start == 10_000
    assert env.runtime.run_until_idle() == 0  # held pulls are housekeeping, not pending work


def test_short_polling_answers_after_one_second() -> None:
    env = Env(long_polling_enable=False)
    env.broker.create_topic("T", 1, 1)
    channel = env.channel()
    assert env.pull("T", 0, 0, sys_flag=PULL_FLAG_SUBSCRIPTION | PULL_FLAG_SUSPEND, channel=channel) is None
    env.send("T")
    env.runtime.advance(10)
    assert channel.responses == []  # arrivals do not wake pulls without long polling
    env.runtime.advance(1_000)
    [response] = channel.responses
    assert response.code == ResponseCode.SUCCESS


def test_periodic_check_wakes_unmatched_arrivals_with_retry_immediately(env: Env) -> None:
    env.broker.create_topic("T", 1, 1)
    channel = env.channel()
    assert env.pull("T", 0, 0, sys_flag=PULL_FLAG_SUBSCRIPTION | PULL_FLAG_SUSPEND, channel=channel,
                    subscription="A") is None
    env.send("T", tags="B")
    env.runtime.advance(5_000)
    [response] = channel.responses
    assert response.code == ResponseCode.PULL_RETRY_IMMEDIATELY and response.remark == "NO_MATCHED_MESSAGE"


# -------------------------------------------------------------------------------------------------------- send checks


def test_auto_create_topic_on_and_off() -> None:
    env = Env()
    created = env.send("NewTopic", queue_id=1, d=16)
    assert created.code == ResponseCode.SUCCESS
    topic = env.broker.topics.get("NewTopic")  # min(16 asked, TBW102's 8: BrokerConfig.defaultTopicQueueNums)
    assert topic is not None and topic.write_queue_nums == 8 and topic.perm == PERM_READ | PERM_WRITE
    env = Env(auto_create_topic_enable=False)
    refused = env.send("NewTopic")
    assert refused.code == ResponseCode.TOPIC_NOT_EXIST
    assert (refused.remark or "").startswith("topic[NewTopic] not exist, apply first please!")
    retry = env.send("%RETRY%CG")
    assert retry.code == ResponseCode.SUCCESS
    retry_topic = env.broker.topics.get("%RETRY%CG")
    assert retry_topic is not None and retry_topic.write_queue_nums == 1


def test_send_checks(env: Env) -> None:
    forbidden = env.send(SCHEDULE_TOPIC)
    assert forbidden.code == ResponseCode.NO_PERMISSION
    assert forbidden.remark == f"Sending message to topic[{SCHEDULE_TOPIC}] is forbidden."
    illegal = env.send("bad topic")
    assert illegal.code == ResponseCode.SYSTEM_ERROR and "illegal characters" in (illegal.remark or "")
    env.broker.create_topic("T", 2, 2)
    too_far = env.send("T", queue_id=2)
    assert too_far.code == ResponseCode.SYSTEM_ERROR
    assert "request queueId[2] is illegal, TopicConfig [topicName=T, readQueueNums=2" in (too_far.remark or "")
    env.broker.create_topic("O", 1, 1, order=True)
    env.broker.config.broker_permission = PERM_READ
    assert env.send("O").code == ResponseCode.NO_PERMISSION
    assert env.send("T").code == ResponseCode.SUCCESS  # 4.9.8 only refuses order topics here


def test_send_without_topic(env: Env) -> None:
    """The letter header (FastCodesHeader) leaves a missing field null: msgCheck then finds the topic blank, with the
    region and trace fields every send answer carries. The long header's checkFields refuses the null field first."""
    v2 = env.handle(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "PG", "c": "TBW102", "d": 4, "e": 0,
                                                                         "f": 0, "g": 1, "h": 0}, b"x"))
    assert v2 is not None and v2.code == ResponseCode.SYSTEM_ERROR
    assert v2.remark == "The specified topic is blank." and "MSG_REGION" in v2.ext_fields
    v1 = env.handle(RemotingCommand.request(RequestCode.SEND_MESSAGE, {
        "producerGroup": "PG", "defaultTopic": "TBW102", "defaultTopicQueueNums": 4, "queueId": 0, "sysFlag": 0,
        "bornTimestamp": 1, "flag": 0}, b"x"))
    assert v1 is not None and v1.code == ResponseCode.SYSTEM_ERROR and "topic" in (v1.remark or "")


def test_delayed_message_is_stored_in_the_schedule_topic(env: Env) -> None:
    env.broker.create_topic("T", 1, 1)
    response = env.send("T", props={Property.DELAY_TIME_LEVEL: "3"})
    assert response.code == ResponseCode.SUCCESS
    stored = env.events.of(MessageStored)[-1]
    assert (stored.topic, stored.queue_id) == (SCHEDULE_TOPIC, 2)


def test_transaction_messages(env: Env) -> None:
    env.broker.create_topic("T", 1, 1)
    half = env.send("T", props={Property.TRANSACTION_PREPARED: "true", Property.PRODUCER_GROUP: "PG"},
                    f=TRANSACTION_PREPARED_TYPE)
    assert half.code == ResponseCode.SUCCESS
    assert env.events.of(MessageStored)[-1].topic == TRANS_HALF_TOPIC
    env.broker.config.reject_transaction_message = True
    refused = env.send("T", props={Property.TRANSACTION_PREPARED: "TRUE"}, f=TRANSACTION_PREPARED_TYPE)
    assert refused.code == ResponseCode.NO_PERMISSION and "transaction message is forbidden" in (refused.remark or "")


def test_send_back_and_end_transaction_are_routed_to_the_services(env: Env) -> None:
    env.broker.create_topic("T", 1, 1)
    env.send("T", b"retry me")
    stored = env.events.of(MessageStored)[-1]
    back = env.handle(RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {
        "offset": stored.commit_log_offset, "group": "CG", "delayLevel": 0}))
    assert back is not None and back.code == ResponseCode.SUCCESS
    assert env.events.of(MessageStored)[-1].topic == SCHEDULE_TOPIC
    assert env.broker.topics.get("%RETRY%CG") is not None
    half = env.send("T", b"tx", props={Property.TRANSACTION_PREPARED: "true", Property.PRODUCER_GROUP: "PG",
                                       Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "TX1"}, f=TRANSACTION_PREPARED_TYPE)
    half_event = env.events.of(MessageStored)[-1]
    end = RemotingCommand.request(RequestCode.END_TRANSACTION, {
        "producerGroup": "PG", "tranStateTableOffset": half.ext_fields["queueOffset"],
        "commitLogOffset": half_event.commit_log_offset, "commitOrRollback": 8, "msgId": half.ext_fields["msgId"],
        "transactionId": "TX1", "fromTransactionCheck": False}, oneway=True)
    assert env.handle(end) is None
    assert env.broker.store.max_offset("T", 0) == 2  # the committed message is in its real topic


def test_retry_topic_redirects_to_dlq(env: Env) -> None:
    ok = env.send("%RETRY%CG", j=3)
    assert ok.code == ResponseCode.SUCCESS and env.events.of(MessageStored)[-1].topic == "%RETRY%CG"
    dead = env.send("%RETRY%CG", j=16)
    assert dead.code == ResponseCode.SUCCESS and env.events.of(MessageStored)[-1].topic == "%DLQ%CG"
    assert env.broker.topics.get("%DLQ%CG") is not None
    # maxReconsumeTimes from the header counts from V3_4_9 on.
    assert env.send("%RETRY%CG", j=2, l=2).code == ResponseCode.SUCCESS
    assert env.events.of(MessageStored)[-1].topic == "%DLQ%CG"
    header = {"a": "PG", "b": "%RETRY%CG", "c": AUTO_CREATE_TOPIC_KEY, "d": 4, "e": 0, "f": 0, "g": 0, "h": 0,
              "j": 2, "l": 2}
    old = env.handle(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header, b"x", version=VERSION_V3_0_11))
    assert old is not None and old.code == ResponseCode.SUCCESS
    assert env.events.of(MessageStored)[-1].topic == "%RETRY%CG"
    strict = Env(auto_create_subscription_group=False)
    assert strict.send("%RETRY%Unknown").code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


def test_batch_send(env: Env) -> None:
    env.broker.create_topic("T", 1, 1)
    body = encode_batch([BatchEntry(0, f"m{i}".encode(), {Property.TAGS: "A",
                                                         Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: f"U{i}"})
                         for i in range(3)])
    response = env.send("T", body, code=RequestCode.SEND_BATCH_MESSAGE, m=True,
                        props={Property.WAIT_STORE_MSG_OK: "true"})
    assert response.code == ResponseCode.SUCCESS
    ids = response.ext_fields["msgId"].split(",")
    assert len(ids) == 3 and response.ext_fields["queueOffset"] == "0"
    stored = env.events.of(MessageStored)[-3:]
    assert [(e.offset, e.msg_id) for e in stored] == [(0, "U0"), (1, "U1"), (2, "U2")]
    pulled = env.pull("T", 0, 0)
    assert pulled is not None
    msgs = decode_stored_messages(pulled.body or b"", "broker-a")
    assert [m.body for m in msgs] == [b"m0", b"m1", b"m2"]
    assert msgs[0].properties[Property.WAIT_STORE_MSG_OK] == "true"  # batch properties go onto every message
    assert msgs[1].offset_msg_id == ids[1]
    delayed = env.send("T", body, code=RequestCode.SEND_BATCH_MESSAGE, m=True, props={Property.DELAY_TIME_LEVEL: "1"})
    assert delayed.code == ResponseCode.MESSAGE_ILLEGAL
    prepared = env.send("T", body, code=RequestCode.SEND_BATCH_MESSAGE, m=True, f=TRANSACTION_PREPARED_TYPE)
    assert prepared.code == ResponseCode.MESSAGE_ILLEGAL
    # 4.9.8 brokers accept batches to retry topics (only the client refuses them).
    retry = env.send("%RETRY%CG", body, code=RequestCode.SEND_BATCH_MESSAGE, m=True)
    assert retry.code == ResponseCode.SUCCESS
    garbage = env.send("T", b"\x00\x00", code=RequestCode.SEND_BATCH_MESSAGE, m=True)
    assert garbage.code == ResponseCode.MESSAGE_ILLEGAL


def test_oversized_message_and_slave_broker() -> None:
    env = Env(max_message_size=1000)
    env.broker.create_topic("T", 1, 1)
    big = env.send("T", b"x" * 1001)
    assert big.code == ResponseCode.MESSAGE_ILLEGAL and "msg body length limit 1000B" in (big.remark or "")
    slave = Env(broker_id=1)
    slave.broker.create_topic("T", 1, 1)
    assert slave.send("T").code == ResponseCode.SERVICE_NOT_AVAILABLE


# -------------------------------------------------------------------------------------------------------- bad input


def test_unknown_code_missing_fields_and_bad_bodies(env: Env) -> None:
    unknown = env.handle(RemotingCommand.request(9999, {}))
    assert unknown is not None and unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    missing = env.handle(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "PG", "b": "T"}, b"x"))
    assert missing is not None and missing.code == ResponseCode.SYSTEM_ERROR
    assert (missing.remark or "").startswith('java.lang.NullPointerException: Cannot invoke "java.lang.Integer.intValue'
                                             '()" because the return value of "org.apache.rocketmq.common.protocol.'
                                             'header.SendMessageRequestHeader.getQueueId()" is null, ')
    bad_number = env.handle(RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"b": "T", "e": "x"}, b"x"))
    assert bad_number is not None and bad_number.code == ResponseCode.SYSTEM_ERROR
    assert (bad_number.remark or "").startswith('java.lang.NumberFormatException: For input string: "x", ')
    not_number = env.pull("T", queueId="zero")
    assert not_number is not None and not_number.code == ResponseCode.SYSTEM_ERROR
    bad_heartbeat = env.handle(RemotingCommand.request(RequestCode.HEART_BEAT, {}, b"{not json"))
    assert bad_heartbeat is not None and bad_heartbeat.code == ResponseCode.SYSTEM_ERROR
    bad_lock = env.handle(RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, {}, b"[]"))
    assert bad_lock is not None and bad_lock.code == ResponseCode.SYSTEM_ERROR
    oneway = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {"consumerGroup": "G"}, oneway=True)
    assert env.handle(oneway) is None
    no_msg = env.handle(RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": 123456}))
    assert no_msg is not None and no_msg.code == ResponseCode.SYSTEM_ERROR


# ---------------------------------------------------------------------------------------------- offsets and queries


def test_offset_queries(env: Env) -> None:
    env.broker.create_topic("T", 2, 2)

    def query(queue_id: int) -> RemotingCommand:
        response = env.handle(RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET,
                                                      {"consumerGroup": "CG", "topic": "T", "queueId": queue_id}))
        assert response is not None
        return response

    fresh = query(0)  # nothing stored, minimum 0 and offset 0 in memory: answered 0
    assert fresh.code == ResponseCode.SUCCESS and offset_of(fresh) == 0
    env.handle(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
        "consumerGroup": "CG", "topic": "T", "queueId": 1, "commitOffset": 42}, oneway=True))
    assert offset_of(query(1)) == 42
    commit = env.events.of(OffsetCommit)[-1]
    assert (commit.group, commit.queue_id, commit.offset, commit.previous) == ("CG", 1, 42, None)
    first_store_ts = env.runtime.now_ms()
    env.send("T", b"a")
    env.runtime.advance(1_000)
    env.send("T", b"b")
    for code, field, expected in ((RequestCode.GET_MAX_OFFSET, {}, 2), (RequestCode.GET_MIN_OFFSET, {}, 0),
                                  (RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {"timestamp": first_store_ts + 600}, 1)):
        response = env.handle(RemotingCommand.request(code, {"topic": "T", "queueId": 0, **field}))
        assert response is not None and response.code == ResponseCode.SUCCESS and offset_of(response) == expected
    commit_log_offset = env.events.of(MessageStored)[-1].commit_log_offset
    view = env.handle(RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": commit_log_offset}))
    assert view is not None and view.code == ResponseCode.SUCCESS
    assert decode_stored_messages(view.body or b"", "broker-a")[0].body == b"b"


# ------------------------------------------------------------------------------------------------- clients, notify


def test_heartbeat_registers_and_notifies_on_join_leave_close(env: Env) -> None:
    a, b, c = env.channel("10.0.0.1:1"), env.channel("10.0.0.2:1"), env.channel("10.0.0.3:1")
    env.heartbeat(a, "ca")
    assert a.notifications() == ["CG"]
    assert env.broker.topics.get("%RETRY%CG") is not None  # the heartbeat creates the retry topic
    env.heartbeat(a, "ca")
    assert a.notifications() == ["CG"]  # a plain heartbeat changes nothing
    env.heartbeat(b, "cb")
    env.heartbeat(c, "cc")
    assert (a.notifications(), b.notifications(), c.notifications()) == (["CG"] * 3, ["CG"] * 2, ["CG"])
    ids = env.handle(RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "CG"}))
    assert ids is not None and json.loads(ids.body or b"") == {"consumerIdList": ["ca", "cb", "cc"]}
    env.handle(RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, {"clientID": "cc", "consumerGroup": "CG"}),
               c)
    assert (len(a.notifications()), len(b.notifications()), len(c.notifications())) == (4, 3, 1)
    b.close()
    assert (len(a.notifications()), len(b.notifications())) == (5, 3)
    a.close()
    nobody = env.handle(RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "CG"}))
    assert nobody is not None and nobody.code == ResponseCode.SYSTEM_ERROR
    assert nobody.remark == "no consumer for this group, CG"


def test_silent_clients_expire(env: Env) -> None:
    quiet, alive = env.channel("10.0.0.1:1"), env.channel("10.0.0.2:1")
    env.heartbeat(quiet, "quiet")
    env.heartbeat(alive, "alive")
    for _ in range(13):
        env.runtime.advance(10_000)
        env.heartbeat(alive, "alive")
    info = env.broker.consumers.get("CG")
    assert info is not None and info.client_ids() == ["alive"]
    assert not quiet.active  # the broker closed the expired connection
    # 4.9.8 removes the channel before closing it, so the close event finds nothing and nobody is notified.
    assert alive.notifications() == ["CG"]


def test_producers_register_from_heartbeat(env: Env) -> None:
    channel = env.channel()
    body = json.dumps({"clientID": "p1", "producerDataSet": [{"groupName": "PG"}], "consumerDataSet": []}).encode()
    response = env.handle(RemotingCommand.request(RequestCode.HEART_BEAT, {}, body), channel)
    assert response is not None and response.code == ResponseCode.SUCCESS
    assert env.broker.producers.channels("PG") == [(channel, "p1")]
    assert env.broker.producers.any_channel("PG") is channel
    env.handle(RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, {"clientID": "p1", "producerGroup": "PG"}),
               channel)
    assert env.broker.producers.any_channel("PG") is None


def test_lock_and_unlock_with_expiry(env: Env) -> None:
    def lock(code: int, client: str, queues: list[int]) -> list[int]:
        body = {"consumerGroup": "CG", "clientId": client,
                "mqSet": [{"topic": "T", "brokerName": "broker-a", "queueId": q} for q in queues]}
        response = env.handle(RemotingCommand.request(code, {}, json.dumps(body).encode()))
        assert response is not None and response.code == ResponseCode.SUCCESS
        if code == RequestCode.UNLOCK_BATCH_MQ:
            return []
        return sorted(mq["queueId"] for mq in json.loads(response.body or b"")["lockOKMQSet"])

    assert lock(RequestCode.LOCK_BATCH_MQ, "c1", [0, 1]) == [0, 1]
    assert lock(RequestCode.LOCK_BATCH_MQ, "c2", [0, 1, 2]) == [2]
    env.runtime.advance(60_001)
    assert lock(RequestCode.LOCK_BATCH_MQ, "c2", [0, 1]) == [0, 1]
    lock(RequestCode.UNLOCK_BATCH_MQ, "c2", [0])
    assert lock(RequestCode.LOCK_BATCH_MQ, "c1", [0, 1]) == [0]


# ----------------------------------------------------------------------------------------------- admin, lifecycle


def test_update_and_create_topic(env: Env) -> None:
    response = env.handle(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
        "topic": "Admin", "defaultTopic": AUTO_CREATE_TOPIC_KEY, "readQueueNums": 3, "writeQueueNums": 2,
        "perm": 6, "topicFilterType": "SINGLE_TAG"}))
    assert response is not None and response.code == ResponseCode.SUCCESS
    topic = env.broker.topics.get("Admin")
    assert topic is not None and (topic.read_queue_nums, topic.write_queue_nums) == (3, 2)
    system = env.handle(RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, {
        "topic": SCHEDULE_TOPIC, "readQueueNums": 1, "writeQueueNums": 1, "perm": 6, "topicFilterType": "SINGLE_TAG"}))
    assert system is not None and system.code == ResponseCode.SYSTEM_ERROR
    assert system.remark == f"The topic[{SCHEDULE_TOPIC}] is conflict with system topic."


def test_restart_keeps_persisted_state_and_crash_loses_recent_offsets(env: Env) -> None:
    env.broker.create_topic("T", 2, 2)
    env.send("T")
    commit = {"consumerGroup": "CG", "topic": "T", "queueId": 0}
    env.handle(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {**commit, "commitOffset": 1}))
    env.broker.shutdown()
    env.broker = env.new_broker()
    assert env.broker.topics.get("T") is not None and env.broker.group_offsets("CG", "T") == {0: 1}
    assert env.broker.store.max_offset("T", 0) == 1
    env.runtime.advance(20_000)  # offsets persisted every 5 s
    env.handle(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {**commit, "commitOffset": 5}))
    env.broker.crash()
    env.broker = env.new_broker()
    assert env.broker.group_offsets("CG", "T") == {0: 1}


def test_idle_probe_reports_unconsumed_messages(env: Env) -> None:
    env.broker.create_topic("T", 1, 1)
    channel = env.channel()
    env.heartbeat(channel, "c1")
    assert not env.broker.has_unconsumed_messages()
    env.send("T")
    assert env.broker.has_unconsumed_messages()
    env.handle(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
        "consumerGroup": "CG", "topic": "T", "queueId": 0, "commitOffset": 1}))
    assert not env.broker.has_unconsumed_messages()
    env.send("T")
    channel.close()
    assert not env.broker.has_unconsumed_messages()  # nobody is left to consume it


def test_registration_with_a_name_server() -> None:
    env = Env()
    env.broker.shutdown()
    namesrv = NameServer(env.runtime, env.network, env.events, "127.0.0.1:9876")
    namesrv.start()
    env.broker = env.new_broker("127.0.0.1:9876")
    env.runtime.advance(10)
    assert "broker-a" in namesrv.broker_addr_table
    assert namesrv.pickup_topic_route("Fresh") is None
    env.send("Fresh")  # auto-created: registered at once (oneway)
    env.runtime.advance(10)
    route = namesrv.pickup_topic_route("Fresh")
    assert route is not None and route.queue_datas[0].write_queue_nums == 4
    env.broker.shutdown()
    env.runtime.advance(10)
    assert "broker-a" not in namesrv.broker_addr_table
    env.broker = env.new_broker("127.0.0.1:9876")
    env.runtime.advance(10)
    assert "broker-a" in namesrv.broker_addr_table
    env.broker.crash()
    env.runtime.advance(10)
    assert "broker-a" not in namesrv.broker_addr_table  # the connection closed: the name server dropped it
    assert tags_code("A") != 0


def test_a_batch_of_exactly_the_maximum_size_is_stored() -> None:
    """``maxMessageSize`` bounds a batch body from above: a body of exactly that size is stored, one byte more is
    MESSAGE_ILLEGAL (SendMessageProcessor: ``body.length > maxMessageSize``)."""
    entry = encode_batch([BatchEntry(0, b"x", {Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "U0"})])
    env = Env(max_message_size=len(entry))
    env.broker.create_topic("T", 1, 1)
    assert env.send("T", entry, code=RequestCode.SEND_BATCH_MESSAGE, m=True).code == ResponseCode.SUCCESS
    small = Env(max_message_size=len(entry) - 1)
    small.broker.create_topic("T", 1, 1)
    assert small.send("T", entry, code=RequestCode.SEND_BATCH_MESSAGE, m=True).code == ResponseCode.MESSAGE_ILLEGAL
