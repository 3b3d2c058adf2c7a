"""Broker requests (BRK): send checks, topic creation, store answers, queries, clients, admin; examples checked on
a 4.9.8 broker."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mutation import crosshair_mutant, mutant

from rocketspec.spec import broker_requests as br
from rocketspec.spec.explorer import explore
from rocketspec.spec.java import string_hash as java_string_hash
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    NOT_ALLOWED_SEND_TOPICS,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    TRANS_HALF_TOPIC,
    TRANSACTION_PREPARED_TYPE,
    Property,
    RequestCode,
    ResponseCode,
)

RC = ResponseCode
TOPIC_TEXT = st.text(alphabet=st.sampled_from("aZ9_-%| \t#é"), max_size=6)


# ------------------------------------------------------------------------------------------------------ sending
def test_validate_topic_remarks_checked_on_4_9_8() -> None:
    assert br.validate_topic("") == "The specified topic is blank."
    assert br.validate_topic("a b") == ("The specified topic contains illegal characters, allowing only "
                                        "^[%|a-zA-Z0-9_-]+$")
    assert br.validate_topic("x" * 128) == "The specified topic is longer than topic max length."
    assert br.validate_topic("x" * 127) is None
    assert br.validate_topic("%RETRY%G|x-y_z") is None


@given(TOPIC_TEXT)
def test_validate_topic(topic: str) -> None:
    remark = br.validate_topic(topic)
    valid_chars = all(c.isascii() and (c.isalnum() or c in "%|-_") for c in topic)
    assert (remark is None) == (topic != "" and valid_chars)
    if topic.strip(" \t") == "":
        assert remark == br.BLANK_TOPIC_REMARK


@given(st.sampled_from(("T", "", "a b", "SCHEDULE_TOPIC_XXXX", "TBW102", "OFFSET_MOVED_EVENT")), st.booleans(),
       st.booleans())
def test_send_check_order(topic: str, writable: bool, order: bool) -> None:
    answer = br.send_check(topic, writable, order)
    if not writable and order:
        assert answer is not None and answer[0] is RC.NO_PERMISSION  # before any name check
    elif br.validate_topic(topic) is not None:
        assert answer == (RC.SYSTEM_ERROR, br.validate_topic(topic))
    elif topic in NOT_ALLOWED_SEND_TOPICS:
        assert answer == (RC.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.")
    else:
        assert answer is None  # TBW102 itself may be sent to (checked on 4.9.8)


@given(st.integers(-2, 20), st.integers(0, 16), st.integers(0, 15), st.booleans(), st.booleans())
def test_topic_created_on_send(requested: int, write_queues: int, perm: int, auto: bool, tbw102: bool) -> None:
    default = br.TopicConf(write_queues, write_queues, perm)
    created = br.topic_created_on_send("T", default, tbw102, auto, requested)
    inherits = bool(perm & PERM_INHERIT) and (auto or not tbw102)
    if inherits:
        queues = max(0, min(requested, write_queues))
        assert created == br.TopicConf(queues, queues, perm & ~PERM_INHERIT)
    else:
        assert created is None
    assert br.topic_created_on_send("T", None, True, auto, requested) is None
    assert br.topic_created_on_send("%RETRY%G", None, True, auto, requested) == br.TopicConf(1, 1, 6)


def test_topic_not_exist_remark() -> None:
    assert br.topic_not_exist_remark("T") == (
        "topic[T] not exist, apply first please!\nSee http://rocketmq.apache.org/docs/faq/ for further details.")


@given(st.integers(-3, 10), st.integers(0, 8), st.integers(1, 8), st.integers(0, 99_999_998))
def test_send_queue_id(queue_id: int, read: int, write: int, draw: int) -> None:
    chosen = br.send_queue_id(queue_id, read, write, draw)
    if queue_id >= max(read, write):
        assert chosen is None
    elif queue_id < 0:
        assert chosen == draw % write
    else:
        assert chosen == queue_id  # may exceed writeQueueNums while below readQueueNums


@given(st.integers(0, 15))
def test_topic_perm_answer(perm: int) -> None:
    assert br.topic_perm_answer(br.RequestKind.SEND, "T", perm) is None  # 4.9.8 stores it (checked)
    answer = br.topic_perm_answer(br.RequestKind.PULL, "T", perm)
    if perm & PERM_READ:
        assert answer is None
    else:
        assert answer == (RC.NO_PERMISSION, "the topic[T] pulling message is forbidden")


def test_stored_message_length_and_limits() -> None:
    assert br.stored_message_length(0, 0, 0) == 91
    assert br.stored_message_length(10, 5, 20, 0x10 | 0x20) == 91 + 35 + 24
    limit = 1024
    assert not br.message_illegal(limit, "T", "", limit)
    assert br.message_illegal(limit + 1, "T", "", limit)
    assert br.message_illegal(1, "x" * 128, "", limit)
    assert br.message_illegal(1, "T", "k\x01" + "v" * 32766, 4 * 1024 * 1024)
    assert not br.message_illegal(1, "T", "k\x01" + "v" * 32765, 4 * 1024 * 1024)


@given(st.integers(0, 2**32 - 1), st.integers(0, 65535), st.integers(0, 2**63 - 1))
def test_offset_msg_id(ip: int, port: int, offset: int) -> None:
    msg_id = br.offset_msg_id(ip, port, offset)
    assert len(msg_id) == 32 and msg_id == msg_id.upper()
    assert int(msg_id[:8], 16) == ip and int(msg_id[8:16], 16) == port and int(msg_id[16:], 16) == offset


def test_offset_msg_id_checked_on_4_9_8() -> None:
    # broker-a at 127.0.0.1:29911 stored a message at commit-log offset 0x607.
    assert br.offset_msg_id(0x7F000001, 29911, 0x607) == "7F000001000074D70000000000000607"


@given(st.sampled_from((RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE,
                        RequestCode.PULL_MESSAGE)), st.booleans())
def test_send_path(code: int, batch: bool) -> None:
    path = br.send_path(code, batch)
    if code == RequestCode.PULL_MESSAGE:
        assert path is None
    else:
        # Checked on 4.9.8: SEND_BATCH_MESSAGE with batch=false stores the body as one message, V2 with
        # batch=true stores a batch.
        assert path is (br.SendPath.BATCH if batch else br.SendPath.SINGLE)


@given(st.integers(0, 0xFFF), st.integers(-1, 18))
def test_batch_refused(sys_flag: int, delay: int) -> None:
    assert br.batch_refused(sys_flag, delay) == (sys_flag & 0xC != 0 or delay > 0)
    assert br.batch_refused(TRANSACTION_PREPARED_TYPE, 0)


def test_batch_answer() -> None:
    ids = ("7F000001000074D7000000000000B043", "7F000001000074D7000000000000B0D6")
    assert br.batch_answer(3, ids) == (",".join(ids), 3)


@given(st.dictionaries(st.sampled_from(("TAGS", "KEYS", "WAIT", "CLUSTER", "x")), st.text(max_size=3), max_size=4))
def test_stored_properties(sent: dict[str, str]) -> None:
    stored = dict(br.stored_properties(tuple(sent.items()), "DefaultCluster"))
    expected = {k: v for k, v in sent.items() if k != Property.WAIT_STORE_MSG_OK}
    expected[Property.CLUSTER] = "DefaultCluster"
    assert stored == expected


@given(st.one_of(st.none(), st.text(max_size=4)), st.text(alphabet="AB", max_size=3))
def test_tags_code_and_subscription(tags: str | None, sub: str) -> None:
    assert br.tags_code(tags) == (java_string_hash(tags) if tags else 0)
    if tags and sub == tags:
        assert br.tag_subscription_passes(sub, tags)


def test_tag_hash_collision_passes_the_broker() -> None:
    assert br.tags_code("Aa") == br.tags_code("BB")
    assert br.tag_subscription_passes("Aa", "BB")
    assert not br.tag_subscription_passes("Aa", "AB")


# ------------------------------------------------------------------------------------------------ store answers
@given(st.lists(st.integers(0, 5), max_size=4).map(sorted))
def test_queue_offsets(times: list[int]) -> None:
    assert br.queue_offsets(tuple(times)) == (0, len(times), times[0] if times else -1)


def test_search_offset_checked_on_4_9_8() -> None:
    times = (100, 150, 200)  # three messages, 50 ms apart
    assert br.search_offset(times, 0) == 0
    assert br.search_offset(times, 10**13) == 2  # the last message, not the max offset 3
    assert br.search_offset(times, 150) == 1
    assert br.search_offset(times, 130) == 1  # nearer to 150
    assert br.search_offset(times, 120) == 0  # nearer to 100
    assert br.search_offset(times, 125) == 0  # a tie goes to the earlier
    assert br.search_offset((), 5) == 0


@given(st.lists(st.integers(0, 6), max_size=6).map(sorted), st.integers(-1, 8))
def test_search_offset(times: list[int], ts: int) -> None:
    found = br.search_offset(tuple(times), ts)
    if not times:
        assert found == 0
        return
    if ts in times:
        assert times[found] == ts
    elif ts < times[0]:
        assert found == 0
    elif ts > times[-1]:
        assert found == len(times) - 1
    else:
        before = max(i for i, t in enumerate(times) if t < ts)
        after = min(i for i, t in enumerate(times) if t > ts)
        assert found == (after if ts - times[before] > times[after] - ts else before)


def test_query_by_key() -> None:
    msgs = (
        br.IndexedMessage("T", "k1 k2", "U1", 10, 0),
        br.IndexedMessage("T", "k2", "U2", 20, 100),
        br.IndexedMessage("S", "k2", "U3", 20, 200),
        br.IndexedMessage("T", None, "U4", 30, 300),
    )
    assert br.query_by_key(msgs, "T", "k2", 32, 0, 100) == (0, 100)
    assert br.query_by_key(msgs, "T", "k2", 1, 0, 100) == (100,)  # the newest
    assert br.query_by_key(msgs, "T", "k2", 32, 15, 100) == (100,)
    assert br.query_by_key(msgs, "T", "U4", 32, 0, 100, unique_key_flag=True) == (300,)
    assert br.query_by_key(msgs, "T", "nope", 32, 0, 100) == ()
    many = tuple(br.IndexedMessage("T", "k", None, 1, i) for i in range(70))
    assert len(br.query_by_key(many, "T", "k", 100, 0, 5)) == 64
    assert len(br.query_by_key(many, "T", "k", 100, 0, 5, unique_key_flag=True)) == 32


def test_index_hash_collision_matches() -> None:
    assert br.index_hash("T", "Aa") == br.index_hash("T", "BB")
    msgs = (br.IndexedMessage("T", "BB", None, 1, 0),)
    assert br.query_by_key(msgs, "T", "Aa", 32, 0, 5) == (0,)  # the client filters by key


def test_view_message_answer() -> None:
    assert br.view_message_answer(5, (0, 5)) == (RC.SUCCESS, None)
    assert br.view_message_answer(7, (0, 5)) == (RC.SYSTEM_ERROR, "can not find message by the offset, 7")


# ------------------------------------------------------------------------------------------------------ clients
def test_consumer_list_answer() -> None:
    assert br.consumer_list_answer(("c1", "c2"), "G") == (RC.SUCCESS, ("c1", "c2"))
    assert br.consumer_list_answer((), "G") == (RC.SYSTEM_ERROR, "no consumer for this group, G")


@given(st.sampled_from(br.GroupEvent), st.booleans(), st.lists(st.sampled_from(("c1", "c2")), unique=True),
       st.booleans(), st.booleans())
def test_notify_targets(event: br.GroupEvent, changed: bool, after: list[str], group: bool, broker: bool) -> None:
    targets = br.notify_targets(event, changed, tuple(after), group, broker)
    notifies = changed and broker and (group or event is br.GroupEvent.CHANNEL_CLOSED)
    assert targets == (tuple(after) if notifies else ())


# -------------------------------------------------------------------------------------------------------- admin
def test_lock_batch_answer() -> None:
    me, other = "10.0.0.1@1", "10.0.0.2@2"
    holders = ((0, other, 1_000), (1, other, 61_000), (2, me, 5_000))
    assert br.lock_batch_answer((0, 1, 2, 3), holders, me) == (1, 2, 3)


@given(st.sampled_from(("T", "TBW102", "rmq_sys_x", "DefaultCluster", "SCHEDULE_TOPIC_XXXX", "a b", "")))
def test_admin_topic_check(topic: str) -> None:
    answer = br.admin_topic_check(topic, ("DefaultCluster",))
    if br.validate_topic(topic) is not None:
        assert answer == (RC.SYSTEM_ERROR, br.validate_topic(topic))
    elif topic != "T":
        assert answer == (RC.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
        assert br.is_system_topic(topic, ("DefaultCluster",))
    else:
        assert answer is None and not br.is_system_topic(topic)
    assert br.is_system_topic(AUTO_CREATE_TOPIC_KEY)


def test_broker_config_body() -> None:
    assert br.broker_config_body((("a", "1"), ("b", None), ("c", "x=y"))) == "a=1\nc=x=y\n"


@given(st.sampled_from(list(RequestCode)))
def test_unsupported_answer(code: RequestCode) -> None:
    answer = br.unsupported_answer(code)
    if code in br.BROKER_REQUEST_CODES:
        assert answer is None
    else:
        assert answer == (RC.REQUEST_CODE_NOT_SUPPORTED, f" request type {int(code)} not supported")


def test_unsupported_answer_checked_on_4_9_8() -> None:
    assert br.unsupported_answer(9999) == (RC.REQUEST_CODE_NOT_SUPPORTED, " request type 9999 not supported")
    assert br.unsupported_answer(RequestCode.REGISTER_BROKER) == (
        RC.REQUEST_CODE_NOT_SUPPORTED, " request type 103 not supported")


@given(st.sampled_from(("G", "CID_RMQ_SYS_X")), st.booleans(), st.booleans())
def test_group_config_exists(group: str, has: bool, auto: bool) -> None:
    assert br.group_config_exists(group, has, auto) == (has or auto or group.startswith("CID_RMQ_SYS_"))


# ----------------------------------------------------------------------------------------- tables and clients
def test_builtin_topics_checked_on_4_9_8() -> None:
    table = dict(br.builtin_topics("DefaultCluster", "broker-a", True, 8))
    assert table["TBW102"] == br.TopicConf(8, 8, 7)
    assert table["DefaultCluster"] == br.TopicConf(16, 16, 7) and table["broker-a"] == br.TopicConf(1, 1, 7)
    assert table["SCHEDULE_TOPIC_XXXX"] == br.TopicConf(18, 18, 6)
    assert table["DefaultCluster_REPLY_TOPIC"] == br.TopicConf(1, 1, 6)
    assert "TBW102" not in dict(br.builtin_topics("DefaultCluster", "broker-a", False, 8))


@given(st.integers(0, 6000), st.integers(0, 6000), st.booleans(), st.booleans())
def test_client_sys_flag(length: int, over: int, batch: bool, prepared: bool) -> None:
    flag = br.client_sys_flag(length, over, batch, prepared)
    assert (flag & 0x301 == 0x301) == (not batch and length >= over)
    assert (flag & 0xC == TRANSACTION_PREPARED_TYPE) == prepared
    assert br.client_sys_flag(4096, 4096, False) == 0x301 and br.client_sys_flag(4095, 4096, False) == 0


def test_unit_flags() -> None:
    assert br.created_topic_sys_flag(False, "T") == 0 == br.retry_topic_sys_flag(False)
    assert br.created_topic_sys_flag(True, "T") == 1
    assert br.created_topic_sys_flag(True, "%RETRY%G") == 2 == br.retry_topic_sys_flag(True)


def test_broker_config_updates() -> None:
    assert br.config_update_refused(("maxMessageSize", "brokerConfigPath"))
    assert not br.config_update_refused(("maxMessageSize", "fooBar"))
    assert br.parse_setting("autoCreateTopicEnable", "TRUE") is True
    assert br.parse_setting("autoCreateTopicEnable", "yes") is False  # Boolean.parseBoolean
    assert br.parse_setting("maxMessageSize", "+200") == 200
    assert br.parse_setting("maxMessageSize", "64x") is None
    assert br.parse_setting("maxMessageSize", "9999999999") is None  # Integer.parseInt overflows
    assert br.parse_setting("fooBar", "1") is None
    assert br.reported_value("int", "48", "72") == "48" and br.reported_value("int", "2x", "72") == "72"
    assert br.reported_value("boolean", "False", "true") == "false"
    assert br.reported_value("String", "05", "04") == "05"


@given(st.sampled_from(sorted(br.INT_SETTINGS | br.BOOL_SETTINGS | {"x"})), st.text("0123456789+-tTrRuUeE", max_size=6))
def test_parse_setting(key: str, text: str) -> None:
    value = br.parse_setting(key, text)
    if key in br.BOOL_SETTINGS:
        assert value == (text.lower() == "true")
    elif key in br.INT_SETTINGS:
        try:
            parsed: int | None = int(text) if text.lstrip("+-").isdigit() and text[1:2] not in ("+", "-") else None
        except ValueError:
            parsed = None
        if parsed is not None and not -(2**31) <= parsed < 2**31:
            parsed = None
        assert value == parsed
    else:
        assert value is None


def test_topic_stats_and_consume_queue() -> None:
    assert br.topic_stats(3, ((5, 7), (), (9,))) == ((0, 2, 7), (0, 0, 0), (0, 1, 9))
    assert br.topic_stats(2, ((1,),)) == ((0, 1, 1), (0, 0, 0))
    assert br.consume_queue_answer(False, 0, 0, 1) == (RC.SYSTEM_ERROR, "{queue} is not exist!", None)
    assert br.consume_queue_answer(True, 2, 2, 1) == (RC.SUCCESS, "Index {index} of {queue} is not exist!", None)
    assert br.consume_queue_answer(True, 3, 1, 5) == (RC.SUCCESS, None, (1, 2))
    assert br.consume_queue_answer(True, 3, 1, 0) == (RC.SUCCESS, None, ())


def test_runtime_values() -> None:
    assert dict(br.runtime_values(0, 0, -1))["commitLogMinOffset"] == "-1"
    values = dict(br.runtime_values(262, 2, 1704067200001))
    assert values["commitLogMaxOffset"] == "262" and values["commitLogMinOffset"] == "0"
    assert values["brokerVersionDesc"] == "V4_9_8" and values["msgPutTotalTodayNow"] == "2"


def test_stats_samples_checked_on_4_9_8() -> None:
    # One message counted 1 ms after the start: the minute list's first sample is a zero one at the start.
    counts = ((1, 1, 1),)
    assert br.stats_samples(counts, 0, 9_999, 10_000, 7) == ()
    assert br.stats_samples(counts, 0, 20_000, 10_000, 7) == ((0, 0, 0), (10_000, 1, 1), (20_000, 1, 1))
    assert len(br.stats_samples(counts, 0, 200_000, 10_000, 7)) == 7
    assert br.stats_snapshot(((0, 0, 0), (10_000, 1, 1), (20_000, 1, 1))) == (1, 0.05, 1.0)
    assert br.stats_snapshot(()) == (0, 0.0, 0.0)
    assert br.stats_snapshot(((0, 2, 5), (10_000, 2, 5))) == (0, 0.0, 0.0)


@given(st.lists(st.tuples(st.integers(1, 95), st.integers(0, 5), st.integers(0, 1)), max_size=4).map(
    lambda cs: tuple(sorted(c for c in cs if c[0] % 10))), st.integers(0, 100))
def test_stats_samples(counts: tuple[tuple[int, int, int], ...], now: int) -> None:
    counts = tuple(c for c in counts if c[0] <= now)
    samples = br.stats_samples(counts, 0, now, 10, 4)
    assert len(samples) <= 4
    for a, b in itertools.pairwise(samples):
        assert b[0] - a[0] == 10
    if samples:
        last = samples[-1][0]
        assert samples[-1][2] == sum(c[1] for c in counts if c[0] < last)
        total, tps, _avg = br.stats_snapshot(samples)
        assert total == samples[-1][2] - samples[0][2] and tps == total * 1000.0 / (last - samples[0][0])


def test_reply_answer_checked_on_4_9_8() -> None:
    assert br.reply_answer(None, False, False) == (RC.SYSTEM_ERROR,
                                                   "reply message properties[REPLY_TO_CLIENT] is null")
    assert br.reply_answer("c@1", False, True) == (RC.SYSTEM_ERROR,
                                                   "push reply message fail, channel of <c@1> not found.")
    assert br.reply_answer("c@1", True, False) == (RC.SYSTEM_ERROR, "push reply message to c@1fail.")
    assert br.reply_answer("c@1", True, True) == (RC.SUCCESS, None)


def test_offsets() -> None:
    assert br.consumer_offset_answer(5, 3) == (RC.SUCCESS, 5)
    assert br.consumer_offset_answer(None, 0) == (RC.SUCCESS, 0)
    assert br.consumer_offset_answer(None, 3) == (RC.QUERY_NOT_FOUND, None)
    offsets = (("G", 0, 5), ("H", 0, 2), ("H", 1, 1), ("G", 1, 0))
    assert br.correction_offsets(offsets, (), (0, 1)) == ((0, 2), (1, 1))
    assert br.correction_offsets(offsets, ("H",), (0, 1)) == ((0, 5),)  # G's 0 on queue 1 is below its min


def test_acl_and_maintenance() -> None:
    assert br.acl_failure_code(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG) is RC.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
    assert br.acl_failure_code(RequestCode.DELETE_ACL_CONFIG) is RC.DELETE_ACL_CONFIG_FAILED
    white = RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG
    assert br.acl_failure_code(white) is RC.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
    assert br.acl_failure_code(RequestCode.GET_BROKER_CLUSTER_ACL_INFO) is None


def test_malformed_answer() -> None:
    assert br.malformed_answer(RequestCode.GET_TOPIC_STATS_INFO, "topic", True) is RC.SYSTEM_ERROR
    assert br.malformed_answer(RequestCode.UPDATE_AND_CREATE_TOPIC, "perm", True) is RC.SYSTEM_ERROR
    assert br.malformed_answer(RequestCode.UPDATE_AND_CREATE_TOPIC, "perm", False) is None  # the name comes first
    assert br.malformed_answer(RequestCode.GET_TOPIC_STATS_INFO, "queueId", True) is None


def test_store_sizes_checked_on_4_9_8() -> None:
    # A 5-byte body to T with UNIQ_KEY=u1 and CLUSTER stored 131 bytes (refimpl and 4.9.8 alike).
    props = (("UNIQ_KEY", "u1"), ("CLUSTER", "DefaultCluster"))
    assert br.properties_length(props) == 34
    assert br.stored_message_length(5, 1, br.properties_length(props)) == 131
    assert br.properties_length(()) == 0
    assert br.batch_body_length(((1, 0), (2, 12))) == 22 + 1 + 22 + 2 + 12
    assert br.batch_stored_properties_length(12, 24) == 37 and br.batch_stored_properties_length(0, 24) == 24
    assert br.illegal_message_remark(64) == ("the message is illegal, maybe msg body or properties length not "
                                             "matched. msg body length limit 64B, msg properties length limit 32KB.")


def test_illegal_queue_remark_checked_on_4_9_8() -> None:
    remark = br.illegal_queue_remark(5, "T", br.TopicConf(4, 4, 6), "127.0.0.1:40002")
    assert remark == ("request queueId[5] is illegal, TopicConfig [topicName=T, readQueueNums=4, writeQueueNums=4, "
                      "perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false] Producer: 127.0.0.1:40002")
    assert br.perm_text(7) == "RWX" and br.perm_text(2) == "-W-"


@given(st.integers(0, 10**6), st.integers(0, 10**6))
def test_index_time(first: int, later: int) -> None:
    read = br.index_time(first, first + later)
    assert first <= read <= first + later and (read - first) % 1000 == 0 and first + later - read < 1000


# ------------------------------------------------------------------------------------------------ state machine
@pytest.mark.slow  # the default model: `spec check` explores it (test_cli.test_full_check_passes)
def test_explore() -> None:
    result = explore(br.model())
    assert result.complete and not result.violations
    assert result.states > 5000


def test_store_scenario() -> None:
    state = br.fresh_broker(br.STORE)
    state = br.step(state, br.Send(0, "A"))
    assert state.topic("T") == br.TopicConf(2, 2, PERM_READ | PERM_WRITE)
    answer = state.answer
    assert answer is not None and (answer.code, answer.queue_id, answer.queue_offset, answer.stored) == (
        RC.SUCCESS, 0, 0, 1)
    assert answer.msg_id == br.offset_msg_id(br.STORE_IP, br.STORE_PORT, 0)
    refused = br.step(state, br.Send(2)).answer
    assert refused is not None and refused.code is RC.SYSTEM_ERROR and "queueId[2] is illegal" in (refused.remark or "")
    state = br.step(state, br.SendBatch(0, 2))
    assert state.answer is not None and (state.answer.queue_offset, state.answer.stored) == (1, 2)
    assert len((state.answer.msg_id or "").split(",")) == 2
    off = br.step(br.fresh_broker(br.STORE, br.Settings(auto_create_topic=False)), br.Send(0))
    assert off.answer is not None and off.answer.code is RC.TOPIC_NOT_EXIST and off.topic("T") is None
    readonly = br.step(off, br.CreateTopic(1, PERM_READ))
    assert readonly.answer is not None and readonly.answer.remark == "not set any response code"
    stored = br.step(readonly, br.Send(0)).answer
    assert stored is not None and stored.code is RC.SUCCESS  # BRK-4: the perm is not checked
    deleted = br.step(state, br.DeleteTopic())
    assert deleted.topic("T") is None and deleted.queue("T", 0) == () and len(deleted.log) == 3


def test_clients_scenario() -> None:
    state = br.attrs_evolve_group(br.fresh_broker(br.CLIENTS), br.GroupConf())
    state = br.step(state, br.Heartbeat("c1", frozenset({"T"})))
    assert state.notified == (("c1", "G"),) and state.topic("%RETRY%G") == br.TopicConf(1, 1, 6)
    state = br.step(state, br.Heartbeat("c1", frozenset({"T"})))
    assert state.notified == ()  # nothing changed
    state = br.step(state, br.Heartbeat("c2", frozenset({"T"})))
    assert state.notified == (("c1", "G"), ("c2", "G"))
    state = br.step(state, br.UnregisterClient("c2"))
    group = state.consumer_group("G")
    assert state.notified == (("c1", "G"),) and group is not None and group.connections == {"c1"}
    quiet = br.attrs_evolve_group(br.fresh_broker(br.CLIENTS), br.GroupConf(notify=False))
    quiet = br.step(quiet, br.Heartbeat("c1", frozenset({"T"})))
    assert quiet.notified == ()
    quiet = br.step(br.step(quiet, br.Heartbeat("c2", frozenset({"T"}))), br.ConnectionClosed("c2"))
    assert quiet.notified == (("c1", "G"),)  # a closed connection notifies regardless of the group switch


def test_admin_and_query_scenarios() -> None:
    state = br.fresh_broker(br.QUERY, br.Settings(compress_over=2))
    state = br.step(state, br.Send(0, keys="k", uniq_key="u1", body=b"x"))
    assert not br.enabled(state, br.Send(0, body=b"\x01", original=b"yy"))  # only a client compresses (BRK-22)
    state = br.step(state, br.Send(0, keys="k", uniq_key="u2", body=b"\x01", sys_flag=0x301, original=b"yy",
                                   client=True))
    found = br.step(state, br.QueryMessage("T", "k", 32, 0, 10))
    assert found.answer is not None and found.answer.body == ((0, b"x"), (state.log[1].commit_log_offset, b"yy"))
    viewed = br.step(state, br.ViewMessage(state.log[1].commit_log_offset))
    assert viewed.answer is not None and isinstance(viewed.answer.body, tuple) and viewed.answer.body[3] == b"yy"
    resumed = br.step(state, br.ResumeHalf(0))
    assert resumed.queue(TRANS_HALF_TOPIC, 0)[0].prop(Property.TRANSACTION_CHECK_TIMES) == "0"
    config = br.step(br.fresh_broker(br.ADMIN), br.UpdateBrokerConfig((("maxMessageSize", "200"), ("x", "1"))))
    assert config.settings.max_message_size == 200 and config.config_version[0] == 1
    refused = br.step(config, br.UpdateBrokerConfig((("rocketmqHome", "/"),)))
    assert refused.answer is not None and refused.answer.code is RC.NO_PERMISSION and refused.config_version[0] == 1
    off = br.fresh_broker(br.ADMIN, br.Settings(auto_create_group=False))
    assert br.step(off, br.Heartbeat("c1", frozenset({"T"}))).group("G") is None
    assert br.step(off, br.Heartbeat("c1", frozenset({"T"}), group="CID_RMQ_SYS_X")).group("CID_RMQ_SYS_X") is not None


def test_order_topics_from_the_name_server() -> None:
    state = br.step(br.fresh_broker(br.ALL, br.Settings(broker_perm=PERM_READ, register_rtt=2)),
                    br.CreateTopic(2, 6))
    state = br.step(state, br.OrderTopicConfig("T", True))
    assert not state.topic("T").order  # type: ignore[union-attr]
    state = br.step(state, br.TimePasses(10_002))  # the first periodic registration's answer
    assert state.topic("T").order and state.topics_version == (2, 10_002)  # type: ignore[union-attr]
    refused = br.step(state, br.Send(0)).answer
    assert refused == br.Answer(RC.NO_PERMISSION, "the broker[127.0.0.1] sending message is forbidden",
                                fields=br.SEND_FIELDS)
    cleared = br.step(br.step(state, br.OrderTopicConfig("T", False)), br.TimePasses(30_000))
    assert not cleared.topic("T").order  # type: ignore[union-attr]


# --------------------------------------------------------------------------------------------------- sensitivity
def test_mutant_queue_offset_counted_from_one() -> None:
    mod = mutant(br, "tuple(sorted(props)), sys_flag, 0, 0, end, size, original)",
                 "tuple(sorted(props)), sys_flag, 0, 0, end + 1, size, original)")
    assert {"BRK-5", "BRK-6"} & set(explore(mod.model(2, scenarios=(br.STORE,))).failed_clauses())


def test_mutant_search_returns_max_offset_past_the_last() -> None:
    mod = mutant(br, "    if right == -1:\n        return left\n", "    if right == -1:\n        return left + 1\n")
    assert "BRK-11" in explore(mod.model(2, scenarios=(br.STORE,))).failed_clauses()


def test_mutant_closed_connection_respects_the_group_switch() -> None:
    mod = mutant(br, "    if event is not GroupEvent.CHANNEL_CLOSED and not group_notify:\n",
                 "    if not group_notify:\n")
    assert "BRK-14" in explore(mod.model(scenarios=(br.CLIENTS,))).failed_clauses()


def test_mutant_topic_created_with_the_default_topic_queues() -> None:
    mod = mutant(br, "            queues = max(0, min(requested_queue_nums, default_topic.write_queue_nums))\n",
                 "            queues = default_topic.write_queue_nums\n")
    assert "BRK-2" in explore(mod.model(2, scenarios=(br.STORE,))).failed_clauses()


def test_mutant_heartbeat_ignores_the_unit_flag() -> None:
    mod = mutant(br, "sys_flag=retry_topic_sys_flag(a.unit_mode)))", "sys_flag=0))")
    assert "BRK-23" in explore(mod.model(scenarios=(br.ADMIN,))).failed_clauses()


def test_mutant_group_created_without_auto_creation() -> None:
    mod = mutant(br, "    if not group_config_exists(group, False, state.settings.auto_create_group):\n",
                 "    if False:\n")
    assert "BRK-20" in explore(mod.model(scenarios=(br.ADMIN,))).failed_clauses()


def test_mutant_black_list_ignored() -> None:
    mod = mutant(br, "    return any(key in CONFIG_BLACK_LIST for key in keys)\n", "    return False\n")
    assert "BRK-24" in explore(mod.model(scenarios=(br.ADMIN,))).failed_clauses()


def test_mutant_reply_without_its_requester() -> None:
    mod = mutant(br, "    pushed = ((target, a.correlation),) if target is not None else ()\n",
                 "    pushed = ()\n")
    assert "BRK-28" in explore(mod.model(scenarios=(br.MISC,))).failed_clauses()


@pytest.mark.slow
def test_crosshair_mutant_created_topic_keeping_the_inherit_bit() -> None:
    mod = mutant(br, "            return TopicConf(queues, queues, perm & ~PERM_INHERIT, default_topic.multi_tag, "
                     "topic_sys_flag)\n",
                 "            return TopicConf(queues, queues, perm, default_topic.multi_tag, topic_sys_flag)\n")
    run = crosshair_mutant(mod, "topic_created_on_send", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr


@pytest.mark.slow
def test_crosshair_mutant_stats_sample_counts_the_tick() -> None:
    mod = mutant(br, "        value = sum(c[1] for c in counts if c[0] < tick)\n",
                 "        value = sum(c[1] for c in counts if c[0] <= tick + 1)\n")
    run = crosshair_mutant(mod, "stats_samples", per_condition_timeout=20)
    assert any(r.failed for r in run.results), run.stderr
