"""Delayed delivery (ScheduleMessageService) and consumer send-back (consumerSendMsgBack, handleRetryAndDLQ)."""

from __future__ import annotations

import json

import attrs
import pytest
from broker_services_harness import BrokerHarness

from rocketspec.refimpl.broker.groups import SubscriptionGroupConfig
from rocketspec.refimpl.broker.schedule import DELAY_OFFSET_FILE, correct_deliver_timestamp
from rocketspec.refimpl.events import MessageStored, SendBack
from rocketspec.refimpl.message import java_string_hash
from rocketspec.refimpl.runtime import SIMULATED_EPOCH_MS
from rocketspec.refimpl.store import MessageToStore, PutResult
from rocketspec.spec.protocol import (
    DELAY_LEVEL_MILLIS,
    MAX_DELAY_LEVEL,
    PERM_READ,
    PERM_WRITE,
    SCHEDULE_FIRST_DELAY_MS,
    SCHEDULE_TICK_MS,
    SCHEDULE_TOPIC,
    TRANS_HALF_TOPIC,
    VERSION_V3_4_9,
    PutMessageStatus,
    RequestCode,
    ResponseCode,
)

TOPIC = "TopicTest"
GROUP = "CG"


@pytest.fixture
def h() -> BrokerHarness:
    harness = BrokerHarness()
    harness.broker.create_topic(TOPIC, 4, 4)
    return harness


def stored_in(h: BrokerHarness, topic: str) -> list[MessageStored]:
    return [e for e in h.events.of(MessageStored) if e.topic == topic]


def send_back(h: BrokerHarness, offset: int, delay_level: int = 0, *, group: str = GROUP,
              max_reconsume_times: int | None = None, version: int | None = None):
    fields = {"offset": offset, "group": group, "delayLevel": delay_level, "originMsgId": "IGNORED",
              "originTopic": TOPIC, "unitMode": False, "maxReconsumeTimes": max_reconsume_times}
    if version is None:
        return h.call(RequestCode.CONSUMER_SEND_MSG_BACK, fields)
    return h.call(RequestCode.CONSUMER_SEND_MSG_BACK, fields, version=version)


# --------------------------------------------------------------------------------------------------- delayed delivery


@pytest.mark.parametrize("level", [1, 3, 5, 18])
def test_delayed_message_is_delivered_within_one_tick_of_its_due_time(h: BrokerHarness, level: int) -> None:
    h.runtime.advance(1_234)
    response = h.send(TOPIC, b"later", queue_id=2, props={"DELAY": str(level), "KEYS": "k1"})
    assert response.code == ResponseCode.SUCCESS
    parked = stored_in(h, SCHEDULE_TOPIC)
    assert [(e.queue_id, e.offset) for e in parked] == [(level - 1, 0)]
    assert h.broker.store.max_offset(TOPIC, 2) == 0
    stored_at = h.messages(SCHEDULE_TOPIC, level - 1)[0].store_timestamp
    # The parked entry's tags code is the delivery time.
    assert h.tags_codes(SCHEDULE_TOPIC, level - 1) == [stored_at + DELAY_LEVEL_MILLIS[level - 1]]

    h.runtime.run_until_idle()
    delivered = stored_in(h, TOPIC)
    assert len(delivered) == 1 and delivered[0].queue_id == 2
    late = delivered[0].ts_ms - stored_at - DELAY_LEVEL_MILLIS[level - 1]
    assert 0 <= late < SCHEDULE_TICK_MS
    # On Java's tick grid: the level's task first runs 1 s after start, then every 100 ms.
    first_run = SIMULATED_EPOCH_MS + SCHEDULE_FIRST_DELAY_MS
    due = stored_at + DELAY_LEVEL_MILLIS[level - 1]
    assert delivered[0].ts_ms == first_run + -(-(due - first_run) // SCHEDULE_TICK_MS) * SCHEDULE_TICK_MS
    msg = h.messages(TOPIC, 2)[0]
    assert msg.body == b"later"
    # 4.9.8 writes the properties as parked (messageTimeup encodes them before clearing DELAY): the delivered
    # message shows its level and the WAIT the producer sent, yet is not parked again.
    assert msg.properties["DELAY"] == str(level) and msg.properties["WAIT"] == "true"
    assert msg.properties["REAL_TOPIC"] == TOPIC and msg.properties["REAL_QID"] == "2"
    assert msg.properties["KEYS"] == "k1"
    assert msg.born_timestamp == h.messages(SCHEDULE_TOPIC, level - 1)[0].born_timestamp
    # Delivered under its real tags code.
    assert h.tags_codes(TOPIC, 2) == [java_string_hash("tagA")]
    assert h.broker.schedule.offset_table[level] == 1
    assert not h.broker.schedule.pending()


def test_delay_level_above_the_table_is_clamped_to_the_top_level(h: BrokerHarness) -> None:
    h.send(TOPIC, props={"DELAY": "25"})
    assert [e.queue_id for e in stored_in(h, SCHEDULE_TOPIC)] == [MAX_DELAY_LEVEL - 1]
    parked_at = h.messages(SCHEDULE_TOPIC, MAX_DELAY_LEVEL - 1)[0].store_timestamp
    h.runtime.run_until_idle()
    [delivered] = stored_in(h, TOPIC)
    assert 0 <= delivered.ts_ms - parked_at - DELAY_LEVEL_MILLIS[-1] < SCHEDULE_TICK_MS


def test_levels_are_independent_and_ordered_by_due_time(h: BrokerHarness) -> None:
    h.send(TOPIC, b"slow", props={"DELAY": "4"})
    h.send(TOPIC, b"fast", props={"DELAY": "1"})
    h.send(TOPIC, b"slow2", props={"DELAY": "4"})
    h.runtime.run_until_idle()
    assert [m.body for m in h.messages(TOPIC)] == [b"fast", b"slow", b"slow2"]


def test_idle_probe_keeps_the_simulation_running_until_delivery(h: BrokerHarness) -> None:
    h.send(TOPIC, props={"DELAY": "2"})
    assert h.broker.schedule.pending()
    used = h.runtime.run_until_idle()
    assert DELAY_LEVEL_MILLIS[1] <= used < DELAY_LEVEL_MILLIS[1] + SCHEDULE_TICK_MS + 10


def test_failed_delivery_is_retried_on_the_next_tick(h: BrokerHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    h.send(TOPIC, props={"DELAY": "1"})
    real_put = h.broker.put_message
    failures = []

    def flaky(msg: MessageToStore) -> PutResult:
        if msg.topic == TOPIC and not failures:
            failures.append(h.runtime.now_ms())
            return PutResult(PutMessageStatus.OS_PAGECACHE_BUSY)
        return real_put(msg)

    monkeypatch.setattr(h.broker, "put_message", flaky)
    h.runtime.run_until_idle()
    [delivered] = stored_in(h, TOPIC)
    assert delivered.ts_ms - failures[0] == SCHEDULE_TICK_MS
    assert len(h.messages(TOPIC)) == 1


def test_parked_message_for_the_half_topic_is_dropped(h: BrokerHarness) -> None:
    h.broker.put_message(MessageToStore(topic=TRANS_HALF_TOPIC, queue_id=0, body=b"x", properties={"DELAY": "1"}))
    h.send(TOPIC, props={"DELAY": "1"})
    h.runtime.run_until_idle()
    assert h.broker.store.max_offset(TRANS_HALF_TOPIC, 0) == 0
    assert len(h.messages(TOPIC)) == 1
    assert h.broker.schedule.offset_table[1] == 2


def test_offsets_survive_a_clean_restart(h: BrokerHarness) -> None:
    h.send(TOPIC, b"one", props={"DELAY": "1"})
    h.runtime.run_until_idle()
    h.send(TOPIC, b"two", props={"DELAY": "3"})
    h.restart()
    assert json.loads(h.disk.read_file(DELAY_OFFSET_FILE)) == {"offsetTable": {"1": 1}}
    assert h.broker.schedule.offset_table == {1: 1}
    h.runtime.run_until_idle()
    assert [m.body for m in h.messages(TOPIC)] == [b"one", b"two"]


def test_a_crash_before_the_offsets_are_persisted_delivers_again(h: BrokerHarness) -> None:
    h.send(TOPIC, b"once", props={"DELAY": "1"})
    h.runtime.run_until_idle()  # delivered after ~1 s; offsets are first persisted after 10 s
    h.runtime.advance(1_000)  # the store has flushed both messages
    h.restart(crash=True)
    h.runtime.run_until_idle()
    assert [m.body for m in h.messages(TOPIC)] == [b"once", b"once"]


def test_persisted_offsets_are_corrected_into_the_queue_bounds(h: BrokerHarness) -> None:
    h.send(TOPIC, props={"DELAY": "1"})
    h.runtime.run_until_idle()
    h.broker.shutdown()
    h.disk.write_file(DELAY_OFFSET_FILE, json.dumps({"offsetTable": {"1": 7, "2": 3}}).encode())
    h.restart()
    # Level 1's queue holds one entry: 7 becomes 1; level 2's queue is empty: 0.
    assert h.broker.schedule.offset_table == {1: 1, 2: 0}


def test_correct_deliver_timestamp() -> None:
    assert correct_deliver_timestamp(1_000, 5_000, 1_000) == 1_000  # beyond now + delay: now
    assert correct_deliver_timestamp(1_000, 2_000, 1_000) == 2_000


def test_a_slave_runs_no_schedule_service() -> None:
    harness = BrokerHarness(broker_id=1)
    assert not harness.broker.schedule.started and not harness.broker.schedule.pending()


# --------------------------------------------------------------------------------------------------------- send back


def test_send_back_parks_a_retry_with_level_three_plus_reconsume_times(h: BrokerHarness) -> None:
    sent = h.send(TOPIC, b"payload", queue_id=1)
    offset = h.commit_log_offset(sent)
    original = h.broker.store.look_message(offset)
    assert original is not None
    h.runtime.advance(500)

    response = send_back(h, offset)
    assert response.code == ResponseCode.SUCCESS and response.remark is None
    parked = h.messages(SCHEDULE_TOPIC, 2)
    assert len(parked) == 1
    retry = parked[0]
    assert retry.reconsume_times == 1
    assert retry.properties["REAL_TOPIC"] == "%RETRY%CG"
    assert retry.properties["RETRY_TOPIC"] == TOPIC
    assert retry.properties["ORIGIN_MESSAGE_ID"] == original.offset_msg_id
    assert retry.properties["DELAY"] == "3" and retry.properties["WAIT"] == "false"
    assert retry.properties["UNIQ_KEY"] == original.properties["UNIQ_KEY"]
    assert retry.born_timestamp == original.born_timestamp and retry.born_host == original.born_host
    assert retry.body == b"payload"
    [event] = h.events.of(SendBack)
    assert attrs.evolve(event, seq=-1, ts_ms=-1) == SendBack(
        node="broker-a", group=GROUP, topic=TOPIC, msg_id=original.msg_id, reconsume_times=1, delay_level=3,
        target="%RETRY%CG", via="broker", max_reconsume_times=16, broker="broker-a")
    retry_topic = h.broker.topics.get("%RETRY%CG")
    assert retry_topic is not None and retry_topic.perm == PERM_READ | PERM_WRITE

    # RECONSUME_LATER: back in the retry topic 10 s (level 3) after the send-back, within one tick.
    h.runtime.run_until_idle()
    [delivered] = stored_in(h, "%RETRY%CG")
    assert 0 <= delivered.ts_ms - retry.store_timestamp - DELAY_LEVEL_MILLIS[2] < SCHEDULE_TICK_MS

    # The second failure: level 4, ORIGIN_MESSAGE_ID and RETRY_TOPIC kept.
    again = send_back(h, delivered.commit_log_offset)
    assert again.code == ResponseCode.SUCCESS
    second = h.messages(SCHEDULE_TOPIC, 3)[0]
    assert second.reconsume_times == 2 and second.properties["DELAY"] == "4"
    assert second.properties["ORIGIN_MESSAGE_ID"] == original.offset_msg_id
    assert second.properties["RETRY_TOPIC"] == TOPIC


def test_a_send_back_is_stamped_as_of_its_put_however_long_the_put_takes(h: BrokerHarness,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """retry_delay_dlq (b), RETRY-1/2: the copy's delay runs from the put's store timestamp, so the sendback row must
    not be stamped later than that: a put that took 5 ms (a loaded machine) once made a copy look 5 ms early."""
    offset = h.commit_log_offset(h.send(TOPIC, b"payload", queue_id=1))
    put = h.broker.put_message

    def slow_put(msg: MessageToStore) -> PutResult:
        result = put(msg)
        h.runtime.advance(5)  # what the put wakes (held pulls, observers) takes time after the store timestamp
        return result

    monkeypatch.setattr(h.broker, "put_message", slow_put)
    assert send_back(h, offset).code == ResponseCode.SUCCESS
    monkeypatch.undo()
    [event] = h.events.of(SendBack)
    parked = h.messages(SCHEDULE_TOPIC, 2)[0]
    assert event.ts_ms <= parked.store_timestamp
    h.runtime.run_until_idle()
    [delivered] = stored_in(h, "%RETRY%CG")
    assert delivered.ts_ms >= event.ts_ms + DELAY_LEVEL_MILLIS[2]


def test_send_back_with_an_explicit_level(h: BrokerHarness) -> None:
    offset = h.commit_log_offset(h.send(TOPIC))
    assert send_back(h, offset, 7).code == ResponseCode.SUCCESS
    assert h.messages(SCHEDULE_TOPIC, 6)[0].properties["DELAY"] == "7"


def test_origin_message_id_already_present_is_kept(h: BrokerHarness) -> None:
    offset = h.commit_log_offset(h.send(TOPIC, props={"ORIGIN_MESSAGE_ID": "FIRST"}))
    send_back(h, offset)
    assert h.messages(SCHEDULE_TOPIC, 2)[0].properties["ORIGIN_MESSAGE_ID"] == "FIRST"


def test_send_back_at_the_group_limit_goes_to_the_dead_letter_topic(h: BrokerHarness) -> None:
    offset = h.commit_log_offset(h.send(TOPIC, reconsume_times=16))
    response = send_back(h, offset)
    assert response.code == ResponseCode.SUCCESS
    [dead] = h.messages("%DLQ%CG")
    assert dead.reconsume_times == 17 and dead.properties["DELAY"] == "0"
    assert dead.properties["RETRY_TOPIC"] == TOPIC
    dlq = h.broker.topics.get("%DLQ%CG")
    assert dlq is not None and dlq.perm == PERM_READ | PERM_WRITE and dlq.write_queue_nums == 1
    assert h.events.of(SendBack)[-1].target == "%DLQ%CG"
    assert h.broker.store.max_offset(SCHEDULE_TOPIC, 2) == 0


def test_send_back_below_the_group_limit_retries(h: BrokerHarness) -> None:
    offset = h.commit_log_offset(h.send(TOPIC, reconsume_times=15))
    send_back(h, offset)
    assert h.messages(SCHEDULE_TOPIC, MAX_DELAY_LEVEL - 1)[0].properties["DELAY"] == "18"
    assert h.broker.store.max_offset("%DLQ%CG", 0) == 0


def test_header_max_reconsume_times_counts_from_v3_4_9(h: BrokerHarness) -> None:
    offset = h.commit_log_offset(h.send(TOPIC, reconsume_times=2))
    send_back(h, offset, max_reconsume_times=2, version=VERSION_V3_4_9 - 1)
    assert h.broker.store.max_offset("%DLQ%CG", 0) == 0  # an old client's limit is ignored
    send_back(h, offset, max_reconsume_times=2, version=VERSION_V3_4_9)
    assert len(h.messages("%DLQ%CG")) == 1


def test_negative_delay_level_goes_straight_to_the_dead_letter_topic(h: BrokerHarness) -> None:
    offset = h.commit_log_offset(h.send(TOPIC))
    assert send_back(h, offset, -1).code == ResponseCode.SUCCESS
    [dead] = h.messages("%DLQ%CG")
    assert dead.reconsume_times == 1


def test_send_back_for_an_unknown_group() -> None:
    harness = BrokerHarness(auto_create_subscription_group=False)
    harness.broker.create_topic(TOPIC, 4, 4)
    offset = harness.commit_log_offset(harness.send(TOPIC))
    response = send_back(harness, offset)
    assert response.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    assert response.remark.startswith("subscription group not exist, CG \nSee http")


def test_send_back_of_a_missing_offset(h: BrokerHarness) -> None:
    response = send_back(h, 987_654)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == "look message by offset failed, 987654"


def test_send_back_on_a_broker_without_write_permission() -> None:
    harness = BrokerHarness(broker_permission=PERM_READ)
    response = send_back(harness, 0)
    assert response.code == ResponseCode.NO_PERMISSION
    assert response.remark == "the broker[127.0.0.1] sending message is forbidden"


def test_send_back_to_a_read_only_retry_topic(h: BrokerHarness) -> None:
    offset = h.commit_log_offset(h.send(TOPIC))
    h.broker.create_topic("%RETRY%CG", 1, 1, PERM_READ)
    response = send_back(h, offset)
    assert response.code == ResponseCode.NO_PERMISSION
    assert response.remark == "the topic[%RETRY%CG] sending message is forbidden"


def test_group_without_retry_queues_drops_the_message(h: BrokerHarness) -> None:
    h.broker.subscription_groups.update(SubscriptionGroupConfig(GROUP, retry_queue_nums=0))
    offset = h.commit_log_offset(h.send(TOPIC))
    response = send_back(h, offset)
    assert response.code == ResponseCode.SUCCESS
    assert h.broker.store.max_offset(SCHEDULE_TOPIC, 2) == 0 and not h.events.of(SendBack)


def test_send_back_without_required_fields(h: BrokerHarness) -> None:
    response = h.call(RequestCode.CONSUMER_SEND_MSG_BACK, {"group": GROUP, "delayLevel": 0})
    assert response.code == ResponseCode.SYSTEM_ERROR and "offset" in response.remark


def test_store_failure_is_a_system_error_with_the_status(h: BrokerHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    offset = h.commit_log_offset(h.send(TOPIC))
    monkeypatch.setattr(h.broker, "put_message", lambda msg: PutResult(PutMessageStatus.FLUSH_DISK_TIMEOUT))
    response = send_back(h, offset)
    assert response.code == ResponseCode.SYSTEM_ERROR and response.remark == "FLUSH_DISK_TIMEOUT"


# ------------------------------------------------------------------------------------- sends to a retry topic


def test_client_retry_send_past_the_limit_goes_to_the_dead_letter_topic(h: BrokerHarness) -> None:
    response = h.send("%RETRY%CG", b"again", queue_id=0, reconsume_times=16)
    assert response.code == ResponseCode.SUCCESS
    assert [m.body for m in h.messages("%DLQ%CG")] == [b"again"]


def test_client_retry_send_below_the_limit_stays_in_the_retry_topic(h: BrokerHarness) -> None:
    response = h.send("%RETRY%CG", b"again", queue_id=0, reconsume_times=3, max_reconsume_times=5,
                      props={"DELAY": "6"})
    assert response.code == ResponseCode.SUCCESS
    assert h.broker.store.max_offset("%DLQ%CG", 0) == 0
    assert h.messages(SCHEDULE_TOPIC, 5)[0].properties["REAL_TOPIC"] == "%RETRY%CG"


def test_client_retry_send_uses_the_header_limit(h: BrokerHarness) -> None:
    response = h.send("%RETRY%CG", b"again", reconsume_times=3, max_reconsume_times=3, props={"DELAY": "6"})
    assert response.code == ResponseCode.SUCCESS
    # The DLQ redirect keeps the client's DELAY (RocketMQ resets it before the properties are set): parked.
    assert h.messages(SCHEDULE_TOPIC, 5)[0].properties["REAL_TOPIC"] == "%DLQ%CG"
