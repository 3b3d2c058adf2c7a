"""Unit tests of the broker's state managers: topics, groups, offsets, clients, locks."""

from __future__ import annotations

import json

import pytest

from rocketspec.refimpl.broker.clients import (
    ClientChannelInfo,
    ConsumerManager,
    HeartbeatData,
    ProducerManager,
    SubscriptionData,
)
from rocketspec.refimpl.broker.config import BrokerConfig
from rocketspec.refimpl.broker.groups import SubscriptionGroupManager
from rocketspec.refimpl.broker.locks import LockBatchRequest, RebalanceLockManager, encode_lock_response
from rocketspec.refimpl.broker.offsets import ConsumerOffsetManager
from rocketspec.refimpl.broker.topics import TopicConfig, TopicConfigManager, validate_topic
from rocketspec.refimpl.events import EventLog, OffsetCommit
from rocketspec.refimpl.message import java_string_hash
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    SCHEDULE_TOPIC,
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
)
from rocketspec.spec.queues import MessageQueue


class Disk:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}

    def write_file(self, path: str, data: bytes) -> None:
        self.files[path] = data

    def read_file(self, path: str) -> bytes | None:
        return self.files.get(path)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


class FakeChannel:
    def __init__(self, name: str, active: bool = True) -> None:
        self.remote_addr = name
        self.local_addr = "127.0.0.1:10911"
        self.active = active


# ------------------------------------------------------------------------------------------------------------ topics


def test_builtin_topics_and_auto_create_from_tbw102() -> None:
    created = []
    manager = TopicConfigManager(BrokerConfig(broker_name="broker-a"), Clock(), Disk(), lambda: created.append(1))
    tbw = manager.get(AUTO_CREATE_TOPIC_KEY)
    # BrokerConfig.defaultTopicQueueNums is 8 in 4.9.8 (the client asks for 4: min of both is created).
    assert tbw is not None and tbw.perm == PERM_INHERIT | PERM_READ | PERM_WRITE and tbw.write_queue_nums == 8
    assert manager.get(SCHEDULE_TOPIC).read_queue_nums == 18
    assert manager.is_system_topic("broker-a") and manager.is_system_topic("DefaultCluster")
    assert manager.is_system_topic("rmq_sys_anything")
    version = manager.data_version.counter
    topic = manager.create_in_send("T", AUTO_CREATE_TOPIC_KEY, 16, 0)
    assert topic is not None and topic.write_queue_nums == 8 and topic.perm == PERM_READ | PERM_WRITE
    assert manager.data_version.counter == version + 1 and created == [1]
    assert manager.create_in_send("T2", AUTO_CREATE_TOPIC_KEY, 2, 0).read_queue_nums == 2
    assert manager.create_in_send("T3", "NoSuchDefault", 2, 0) is None


def test_auto_create_off_has_no_tbw102_and_demotes_a_persisted_one() -> None:
    disk = Disk()
    on = TopicConfigManager(BrokerConfig(broker_name="b"), Clock(), disk)
    on.persist()
    off_config = BrokerConfig(broker_name="b", auto_create_topic_enable=False)
    assert TopicConfigManager(off_config, Clock(), Disk()).get(AUTO_CREATE_TOPIC_KEY) is None
    off = TopicConfigManager(off_config, Clock(), disk)
    off.load()
    assert off.get(AUTO_CREATE_TOPIC_KEY) is not None
    assert off.create_in_send("T", AUTO_CREATE_TOPIC_KEY, 4, 0) is None
    assert off.get(AUTO_CREATE_TOPIC_KEY).perm == PERM_READ | PERM_WRITE


def test_topics_persist_and_reload_with_version() -> None:
    disk, clock = Disk(), Clock()
    manager = TopicConfigManager(BrokerConfig(broker_name="b"), clock, disk)
    manager.update(TopicConfig("Orders", 2, 3, PERM_READ, order=True))
    clock.now = 5_000
    retry = manager.create_retry_topic("G", 1)
    assert retry.topic_name == "%RETRY%G" and retry.perm == PERM_READ | PERM_WRITE
    assert manager.create_retry_topic("G", 7) is retry
    reloaded = TopicConfigManager(BrokerConfig(broker_name="b"), Clock(), disk)
    reloaded.load()
    assert reloaded.get("Orders") == TopicConfig("Orders", 2, 3, PERM_READ, order=True)
    assert reloaded.data_version == manager.data_version
    wrapper = reloaded.wrapper(PERM_READ)
    assert wrapper["topicConfigTable"]["Orders"]["perm"] == PERM_READ
    assert wrapper["topicConfigTable"]["Orders"]["order"] is False  # re-registered with the broker's perm only


@pytest.mark.parametrize(("topic", "ok"), [("Good_Topic-1|%", True), ("", False), ("bad topic", False),
                                            ("x" * 128, False), ("x" * 127, True)])
def test_validate_topic(topic: str, ok: bool) -> None:
    assert (validate_topic(topic) is None) == ok


# ------------------------------------------------------------------------------------------------------------ groups


def test_subscription_groups_auto_create_and_persist() -> None:
    disk = Disk()
    manager = SubscriptionGroupManager(BrokerConfig(broker_name="b"), Clock(), disk)
    assert manager.find("G") is None
    group = manager.find_or_create("G")
    assert group is not None and group.retry_max_times == 16 and group.retry_queue_nums == 1
    group.retry_max_times = 3
    manager.update(group)
    strict = SubscriptionGroupManager(BrokerConfig(broker_name="b", auto_create_subscription_group=False),
                                      Clock(), disk)
    strict.load()
    assert strict.find("G").retry_max_times == 3
    assert strict.find_or_create("Unknown") is None
    assert strict.find_or_create("CID_RMQ_SYS_TRANS") is not None
    assert strict.find("TOOLS_CONSUMER") is not None


def test_an_auto_created_group_is_written_with_the_next_periodic_persist_not_at_once() -> None:
    disk = Disk()
    manager = SubscriptionGroupManager(BrokerConfig(broker_name="b"), Clock(), disk)
    manager.find_or_create("Auto")

    def written() -> SubscriptionGroupManager:
        reader = SubscriptionGroupManager(BrokerConfig(broker_name="b"), Clock(), disk)
        reader.load()
        return reader

    assert written().find("Auto") is None
    manager.persist_if_changed()
    assert written().find("Auto") is not None


# ----------------------------------------------------------------------------------------------------------- offsets


def test_offsets_commit_query_persist() -> None:
    disk, clock = Disk(), Clock()
    events = EventLog(clock)
    manager = ConsumerOffsetManager("broker-a", disk, events)
    assert manager.query("G", "T", 0) == -1
    manager.commit("1.2.3.4:5", "G", "T", 0, 7)
    manager.commit("1.2.3.4:5", "G", "T", 0, 3)  # lower offsets overwrite too
    assert manager.query("G", "T", 0) == 3 and manager.offsets("G", "T") == {0: 3}
    commits = events.of(OffsetCommit)
    assert [(c.offset, c.previous) for c in commits] == [(7, None), (3, 7)]
    manager.persist()
    assert json.loads(disk.files["config/consumerOffset.json"]) == {"offsetTable": {"T@G": {"0": 3}}}
    again = ConsumerOffsetManager("broker-a", disk, events)
    again.load()
    assert again.query("G", "T", 0) == 3 and again.groups_of_topic("T") == {"G"}


# ----------------------------------------------------------------------------------------------------------- clients


def test_subscription_data_build_and_match() -> None:
    everything = SubscriptionData.build("T", "*")
    assert everything.matches(123) and everything.matches(None)
    assert SubscriptionData.build("T", "").sub_string == "*"
    tags = SubscriptionData.build("T", " A || B ||")
    assert tags.tags_set == frozenset({"A", "B"})
    assert tags.matches(java_string_hash("A")) and not tags.matches(java_string_hash("C"))
    assert not tags.matches(0)
    with pytest.raises(ValueError):
        SubscriptionData.build("T", "", "SQL92")


def test_heartbeat_decode_accepts_names_and_ordinals() -> None:
    body = json.dumps({
        "clientID": "c1",
        "producerDataSet": [{"groupName": "PG"}],
        "consumerDataSet": [
            {"groupName": "CG", "consumeType": 1, "messageModel": 1, "consumeFromWhere": 4,
             "subscriptionDataSet": [{"topic": "T", "subString": "A", "tagsSet": ["A"], "codeSet": [],
                                      "subVersion": 5}]},
            {"groupName": "CG2", "consumeType": "CONSUME_ACTIVELY", "messageModel": "BROADCASTING",
             "consumeFromWhere": "CONSUME_FROM_MIN_OFFSET", "subscriptionDataSet": []},
        ],
    }).encode()
    data = HeartbeatData.decode(body)
    assert data.client_id == "c1" and data.producer_groups == ["PG"]
    first, second = data.consumers
    assert first.consume_type == ConsumeType.CONSUME_PASSIVELY and first.message_model == MessageModel.CLUSTERING
    assert first.consume_from_where == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    assert first.subscriptions[0].code_set == frozenset({java_string_hash("A")})
    assert second.message_model == MessageModel.BROADCASTING
    assert second.consume_from_where == "CONSUME_FROM_MIN_OFFSET"
    for bad in (b"", b"[]", b"{}", b'{"clientID": "c", "consumerDataSet": [{"groupName": "G", "messageModel": 9}]}'):
        with pytest.raises(ValueError):
            HeartbeatData.decode(bad)


def test_consumer_manager_register_change_close_and_scan() -> None:
    notified: list[tuple[str, list[str]]] = []
    manager = ConsumerManager(lambda g, chs: notified.append((g, sorted(c.remote_addr for c in chs))))
    a, b = FakeChannel("a"), FakeChannel("b")
    subs = [SubscriptionData.build("T", "*")]

    def register(channel: FakeChannel, client_id: str, now: int, subs: list[SubscriptionData] = subs) -> bool:
        return manager.register("G", ClientChannelInfo(channel, client_id), ConsumeType.CONSUME_PASSIVELY,
                                MessageModel.CLUSTERING, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, subs, True, now)

    assert register(a, "ca", 0) and notified == [("G", ["a"])]
    assert not register(a, "ca", 10) and len(notified) == 1  # plain heartbeat: no change
    assert register(b, "cb", 20) and notified[-1] == ("G", ["a", "b"])
    assert register(b, "cb", 30, [*subs, SubscriptionData.build("T2", "*")])  # a new topic is a change
    assert manager.get("G").client_ids() == ["ca", "cb"]
    assert manager.channel_closed(a) == ["G"] and notified[-1] == ("G", ["b"])
    assert manager.scan_not_active(30 + 120_000, 120_000) == []
    assert manager.scan_not_active(31 + 120_000, 120_000) == [b]
    assert manager.get("G") is None


def test_producer_manager_round_robin_and_close() -> None:
    clock = Clock()
    manager = ProducerManager(clock)
    a, b = FakeChannel("a"), FakeChannel("b", active=False)
    manager.register("PG", a, "ca")
    manager.register("PG", b, "cb")
    assert manager.channels("PG") == [(a, "ca"), (b, "cb")]
    assert manager.any_channel("PG") is a  # counter 1 → b (inactive) → a
    assert manager.any_channel("PG") is a
    assert manager.find_channel("cb") is b
    manager.channel_closed(a)
    assert manager.any_channel("PG") is None and manager.find_channel("ca") is None
    clock.now += 120_001
    assert manager.scan_not_active(clock.now, 120_000) == [b]
    assert manager.any_channel(None) is None


# ------------------------------------------------------------------------------------------------------------- locks


def test_locks_expire_after_60_seconds() -> None:
    clock = Clock()
    locks = RebalanceLockManager(clock)
    q0, q1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)
    assert locks.try_lock_batch("G", [q0, q1], "c1") == {q0, q1}
    clock.now += 30_000
    assert locks.try_lock_batch("G", [q0, q1], "c2") == set()
    assert locks.try_lock_batch("G", [q0], "c1") == {q0}  # renewed at 31 s
    clock.now += 30_001
    assert locks.try_lock_batch("G", [q0, q1], "c2") == {q1}  # q1 lapsed, q0 still held by c1
    locks.unlock_batch("G", [q0], "c2")  # not c2's lock
    assert locks.holder("G", q0) == "c1"
    locks.unlock_batch("G", [q0], "c1")
    assert locks.holder("G", q0) is None and locks.is_locked("G", q1, "c2")


def test_lock_bodies() -> None:
    body = json.dumps({"consumerGroup": "G", "clientId": "c",
                       "mqSet": [{"topic": "T", "brokerName": "b", "queueId": 3}]}).encode()
    request = LockBatchRequest.decode(body)
    assert request.mq_set == [MessageQueue("T", "b", 3)]
    assert json.loads(encode_lock_response(request.mq_set)) == {
        "lockOKMQSet": [{"brokerName": "b", "queueId": 3, "topic": "T"}]}
    for bad in (None, b"x", b'{"consumerGroup": "G"}', b'{"consumerGroup": "G", "clientId": "c", "mqSet": [1]}'):
        with pytest.raises(ValueError):
            LockBatchRequest.decode(bad)
