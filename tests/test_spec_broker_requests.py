"""Broker requests (BRK): send checks, topic creation, store answers, queries, clients, admin; examples checked on
a 4.9.8 broker."""

from __future__ import annotations

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


# ------------------------------------------------------------------------------------------------ state machine
def test_explore() -> None:
    result = explore(br.model())
    assert result.complete and not result.violations
    assert result.states > 500


def test_store_scenario() -> None:
    state = br.BrokerState(br.STORE)
    state = br.step(state, br.Send(0, "A"))
    assert state.topic == br.TopicConf(2, 2, PERM_READ | PERM_WRITE)
    assert state.answer == br.SendAnswer(RC.SUCCESS, 0, 0, 1)
    assert br.step(state, br.Send(2)).answer == br.SendAnswer(RC.SYSTEM_ERROR)
    state = br.step(state, br.SendBatch(0, 2))
    assert state.answer == br.SendAnswer(RC.SUCCESS, 0, 1, 2)
    off = br.step(br.BrokerState(br.STORE, auto_create=False), br.Send(0))
    assert off.answer == br.SendAnswer(RC.TOPIC_NOT_EXIST) and off.topic is None
    readonly = br.step(off, br.CreateTopic(1, PERM_READ))
    assert br.step(readonly, br.Send(0)).answer == br.SendAnswer(RC.SUCCESS, 0, 0, 1)
    assert not br.enabled(state, br.Heartbeat("c1", frozenset({"T"})))


def test_clients_scenario() -> None:
    state = br.BrokerState(br.CLIENTS)
    state = br.step(state, br.Heartbeat("c1", frozenset({"T"})))
    assert state.notified == ("c1",) and state.retry_topic
    state = br.step(state, br.Heartbeat("c1", frozenset({"T"})))
    assert state.notified == ()  # nothing changed
    state = br.step(state, br.Heartbeat("c2", frozenset({"T"})))
    assert state.notified == ("c1", "c2")
    state = br.step(state, br.UnregisterClient("c2"))
    assert state.notified == ("c1",) and state.connections == {"c1"}
    quiet = br.step(br.BrokerState(br.CLIENTS, group_notify=False), br.Heartbeat("c1", frozenset({"T"})))
    assert quiet.notified == ()
    quiet = br.step(br.step(quiet, br.Heartbeat("c2", frozenset({"T"}))), br.ConnectionClosed("c2"))
    assert quiet.notified == ("c1",)  # a closed connection notifies regardless of the group switch


# --------------------------------------------------------------------------------------------------- sensitivity
def test_mutant_queue_offset_counted_from_one() -> None:
    mod = mutant(br, "    offset = len(state.queues[queue_id])\n", "    offset = len(state.queues[queue_id]) + 1\n")
    assert "BRK-6" in explore(mod.model()).failed_clauses()


def test_mutant_search_returns_max_offset_past_the_last() -> None:
    mod = mutant(br, "    if right == -1:\n        return left\n", "    if right == -1:\n        return left + 1\n")
    assert "BRK-11" in explore(mod.model()).failed_clauses()


def test_mutant_closed_connection_respects_the_group_switch() -> None:
    mod = mutant(br, "    if event is not GroupEvent.CHANNEL_CLOSED and not group_notify:\n",
                 "    if not group_notify:\n")
    assert "BRK-14" in explore(mod.model()).failed_clauses()


def test_mutant_topic_created_with_the_default_topic_queues() -> None:
    mod = mutant(br, "            queues = max(0, min(requested_queue_nums, default_topic.write_queue_nums))\n",
                 "            queues = default_topic.write_queue_nums\n")
    assert "BRK-2" in explore(mod.model()).failed_clauses()


@pytest.mark.slow
def test_crosshair_mutant_created_topic_keeping_the_inherit_bit() -> None:
    mod = mutant(br, "            return TopicConf(queues, queues, perm & ~PERM_INHERIT)\n",
                 "            return TopicConf(queues, queues, perm)\n")
    run = crosshair_mutant(mod, "topic_created_on_send", per_condition_timeout=4)
    assert any(r.failed for r in run.results), run.stderr
