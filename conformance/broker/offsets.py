"""Broker conformance cases: consumer offsets, queue offsets and the search by time.

Consumer offsets (``ConsumerManageProcessor``, ``ConsumerOffsetManager``): UPDATE_CONSUMER_OFFSET stores the
committed value for (topic, group, queue) whatever it is (OFF-8); QUERY_CONSUMER_OFFSET answers it, and for a group
that never committed answers 0 while the queue's min offset is 0 and its first message is still in memory (OFF-7; the
QUERY_NOT_FOUND branch needs a queue whose head was deleted or paged out, which no case can make in seconds).

Queue offsets (``DefaultMessageStore``): GET_MIN_OFFSET / GET_MAX_OFFSET answer the consume queue's first and next
offsets, GET_EARLIEST_MSG_STORETIME the store time of its first message (BRK-10). SEARCH_OFFSET_BY_TIMESTAMP
(``ConsumeQueue.getOffsetInQueueByTime``, BRK-11) binary-searches the queue by store time: an entry stored exactly at
the time, else the nearer of the last entry before and the first entry after (the earlier on a tie); the first entry
when every message is later, the LAST entry (not the max offset) when every message is earlier, 0 for an empty queue.

The real broker writes its consume queues asynchronously (the reput thread), so cases wait, bounded, for the max
offset to show their messages before they ask about them (``common.dispatched``).
"""

from __future__ import annotations

import itertools
import time

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import (
    commit_consumer_offset,
    consumer_heartbeat,
    consumer_offset,
    dispatched,
    expect_pull,
    fill,
    setup,
)
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.model import CaseList, Level
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.message import tags_code
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import ResponseCode

cases = CaseList("broker/offsets")
CASES = cases.cases

# The pause between sends whose store times a case compares: long enough for distinct, well separated times.
SEND_SPACING_S = 0.03


def _offset(ctx: BrokerContext, client: WireClient, command: RemotingCommand, what: str) -> int:
    answer = client.request(command)
    ctx.expect_code(answer, ResponseCode.SUCCESS, what)
    return int(answer.require("offset"))


def _max_offset(ctx: BrokerContext, client: WireClient, topic: str, queue_id: int) -> int:
    return _offset(ctx, client, requests.get_max_offset(topic, queue_id), f"GET_MAX_OFFSET {topic}:{queue_id}")


def _min_offset(ctx: BrokerContext, client: WireClient, topic: str, queue_id: int) -> int:
    return _offset(ctx, client, requests.get_min_offset(topic, queue_id), f"GET_MIN_OFFSET {topic}:{queue_id}")


def _expect_offset(ctx: BrokerContext, client: WireClient, group: str, topic: str, expected: int, what: str) -> None:
    """The group's stored consumer offset of queue 0 is ``expected``."""
    ctx.expect_equal(consumer_offset(ctx, client, group, topic, 0), expected, what)


def _search(ctx: BrokerContext, client: WireClient, topic: str, queue_id: int, timestamp_ms: int) -> int:
    return _offset(ctx, client, requests.search_offset(topic, queue_id, timestamp_ms),
                   f"SEARCH_OFFSET_BY_TIMESTAMP {topic}:{queue_id} at {timestamp_ms}")


def _stored_times(ctx: BrokerContext, count: int) -> tuple[WireClient, str, list[int]]:
    """A one-queue topic with ``count`` messages sent ``SEND_SPACING_S`` apart; their store times, in order."""
    client, topic, group = setup(ctx)
    for i in range(count):
        if i:
            time.sleep(SEND_SPACING_S)
        ctx.send(client, topic, b"at-%d" % i, 0)
    dispatched(ctx, client, topic, 0, count)
    answer = expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.SUCCESS, f"the pull of {topic}:0 from 0",
                         max_msgs=count)
    times = [m.store_timestamp for m in ctx.messages(answer)]
    ctx.expect_equal(len(times), count, "messages pulled back")
    ctx.expect(all(b - a >= 4 for a, b in itertools.pairwise(times)),
               "store times at least 4 ms apart (sends were spaced 30 ms)", f"store times {times}")
    return client, topic, times


# -------------------------------------------------------------------------------------------- consumer offsets
@cases.case("commit-then-query", clauses=("OFF-8", "OFF-7"),
            requirement="QUERY_CONSUMER_OFFSET answers the offset UPDATE_CONSUMER_OFFSET committed for the queue")
def commit_then_query(ctx: BrokerContext) -> None:
    """OFF-8: the commit is stored for (topic, group, queue); OFF-7: a stored offset >= 0 is answered as is."""
    client, topic, group = setup(ctx, 2, messages=3)
    commit_consumer_offset(ctx, client, group, topic, 0, 2)
    _expect_offset(ctx, client, group, topic, 2, f"the committed offset of {topic}:0")


@cases.case("lower-commit-overwrites", clauses=("OFF-8",),
            requirement="a commit lower than the stored offset replaces it (the broker does not keep the maximum)")
def lower_commit_overwrites(ctx: BrokerContext) -> None:
    """OFF-8: ``commitOffset`` overwrites, also with a lower value (4.9.8 only logs it)."""
    client, topic, group = setup(ctx)
    for offset, what in ((5, "the offset after committing 5"), (2, "the offset after committing 2 over 5")):
        commit_consumer_offset(ctx, client, group, topic, 0, offset)
        _expect_offset(ctx, client, group, topic, offset, what)


@cases.case("commit-past-max-offset-kept", clauses=("OFF-8",),
            requirement="UPDATE_CONSUMER_OFFSET stores an offset past the queue's max offset unchanged")
def commit_past_max_offset_kept(ctx: BrokerContext) -> None:
    """OFF-8: UPDATE_CONSUMER_OFFSET commits unconditionally; the broker does not clamp to the queue."""
    client, topic, group = setup(ctx, messages=1)
    commit_consumer_offset(ctx, client, group, topic, 0, 100)
    _expect_offset(ctx, client, group, topic, 100, "the offset after committing 100 to a 1-message queue")


@cases.case("offsets-per-group-and-queue", clauses=("OFF-8", "OFF-7"),
            requirement="a commit changes only its own (topic, group, queue) entry")
def offsets_per_group_and_queue(ctx: BrokerContext) -> None:
    """OFF-8: offsets are kept by ``topic@group`` and queue id; another group or queue of the same topic is not
    touched (each still answers what it committed)."""
    client, topic, first = setup(ctx, 2)
    second = ctx.group()
    commit_consumer_offset(ctx, client, first, topic, 0, 7)
    commit_consumer_offset(ctx, client, first, topic, 1, 3)
    commit_consumer_offset(ctx, client, second, topic, 0, 1)
    commit_consumer_offset(ctx, client, first, topic, 0, 9)
    seen = {(g, q): consumer_offset(ctx, client, g, topic, q) for g, q in ((first, 0), (first, 1), (second, 0))}
    ctx.expect_equal(seen, {(first, 0): 9, (first, 1): 3, (second, 0): 1}, "committed offsets by (group, queue)")


@cases.case("query-never-committed-empty-queue", clauses=("OFF-7",),
            requirement="QUERY_CONSUMER_OFFSET for a group that never committed, on a queue never written, answers 0")
def query_never_committed_empty_queue(ctx: BrokerContext) -> None:
    """OFF-7: nothing stored, the queue's min offset is 0 and offset 0 is not on disk → SUCCESS with offset 0
    (not QUERY_NOT_FOUND: a new consumer group on a fresh queue starts at 0)."""
    client, topic, group = setup(ctx)
    _expect_offset(ctx, client, group, topic, 0, f"the offset of a new group on {topic}:0")


@cases.case("query-never-committed-written-queue", clauses=("OFF-7",),
            requirement="QUERY_CONSUMER_OFFSET for a group that never committed answers 0 while the queue's "
                        "first message is offset 0 and in memory")
def query_never_committed_written_queue(ctx: BrokerContext) -> None:
    """OFF-7: nothing stored, min offset 0, the message at offset 0 just written (not paged out) → SUCCESS 0."""
    client, topic, group = setup(ctx, messages=3)
    _expect_offset(ctx, client, group, topic, 0, f"the offset of a new group on {topic}:0")


@cases.case("offsets-per-broker", clauses=("OFF-8", "OFF-7"),
            requirement="a commit to one broker is not an offset of the same queue id on another broker")
def offsets_per_broker(ctx: BrokerContext) -> None:
    """OFF-8: each broker keeps its own offset table (offsets belong to a broker's queues); the other broker
    answers as for a group that never committed (OFF-7: 0 on its fresh queue)."""
    ctx.need_brokers(2)
    topic = ctx.topic(1, brokers=[0, 1])
    group = ctx.group()
    first, second = ctx.broker(0), ctx.broker(1)
    commit_consumer_offset(ctx, first, group, topic, 0, 4)
    _expect_offset(ctx, first, group, topic, 4, f"{ctx.brokers[0].name}'s offset of {topic}:0")
    _expect_offset(ctx, second, group, topic, 0, f"{ctx.brokers[1].name}'s offset of {topic}:0")


# ----------------------------------------------------------------------------------------------- queue offsets
@cases.case("min-max-empty-queue", clauses=("BRK-10",),
            requirement="GET_MIN_OFFSET and GET_MAX_OFFSET of a queue never written answer 0 and 0")
def min_max_empty_queue(ctx: BrokerContext) -> None:
    client, topic, _ = setup(ctx, 2)
    ctx.expect_equal((_min_offset(ctx, client, topic, 1), _max_offset(ctx, client, topic, 1)), (0, 0),
                     f"(min, max) offset of {topic}:1")


@cases.case("min-max-after-writes", clauses=("BRK-10",),
            requirement="after n messages to a queue its min offset is 0 and its max offset n; other queues stay 0")
def min_max_after_writes(ctx: BrokerContext) -> None:
    """BRK-10: the max offset is the next offset to be written (one past the last message)."""
    client, topic, _ = setup(ctx, 2)
    fill(ctx, client, topic, 4, queue_id=1)
    seen = {q: (_min_offset(ctx, client, topic, q), _max_offset(ctx, client, topic, q)) for q in (0, 1)}
    ctx.expect_equal(seen, {0: (0, 0), 1: (0, 4)}, f"(min, max) offset of {topic} by queue")


@cases.case("earliest-msg-storetime", clauses=("BRK-10",),
            requirement="GET_EARLIEST_MSG_STORETIME answers the store time of the queue's first message")
def earliest_msg_storetime(ctx: BrokerContext) -> None:
    client, topic, times = _stored_times(ctx, 2)
    answer = client.request(requests.get_earliest_msg_storetime(topic, 0))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_EARLIEST_MSG_STORETIME {topic}:0")
    ctx.expect_equal(int(answer.require("timestamp")), times[0], "timestamp (the first message's store time)")


@cases.case("earliest-msg-storetime-empty", clauses=("BRK-10",), level=Level.SHOULD,
            requirement="GET_EARLIEST_MSG_STORETIME of a queue never written answers timestamp -1")
def earliest_msg_storetime_empty(ctx: BrokerContext) -> None:
    client, topic, _ = setup(ctx)
    answer = client.request(requests.get_earliest_msg_storetime(topic, 0))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_EARLIEST_MSG_STORETIME {topic}:0")
    ctx.expect_equal(answer.field("timestamp"), "-1", "timestamp of an empty queue")


# ------------------------------------------------------------------------------------------- search by time
@cases.case("search-empty-queue", clauses=("BRK-11",),
            requirement="SEARCH_OFFSET_BY_TIMESTAMP on a queue never written answers 0")
def search_empty_queue(ctx: BrokerContext) -> None:
    client, topic, _ = setup(ctx)
    ctx.expect_equal(_search(ctx, client, topic, 0, requests.now_ms()), 0, f"the offset searched in empty {topic}:0")


@cases.case("search-before-first", clauses=("BRK-11",),
            requirement="SEARCH_OFFSET_BY_TIMESTAMP before the first message answers the queue's min offset")
def search_before_first(ctx: BrokerContext) -> None:
    client, topic, times = _stored_times(ctx, 3)
    ctx.expect_equal(_search(ctx, client, topic, 0, times[0] - 60_000), 0, "the offset searched 60 s before the first")


@cases.case("search-exact", clauses=("BRK-11",),
            requirement="SEARCH_OFFSET_BY_TIMESTAMP at a message's store time answers that message's offset")
def search_exact(ctx: BrokerContext) -> None:
    client, topic, times = _stored_times(ctx, 3)
    found = [_search(ctx, client, topic, 0, t) for t in times]
    ctx.expect_equal(found, [0, 1, 2], f"the offsets searched at the store times {times}")


@cases.case("search-between", clauses=("BRK-11",),
            requirement="SEARCH_OFFSET_BY_TIMESTAMP between two messages answers one of those two offsets")
def search_between(ctx: BrokerContext) -> None:
    """BRK-11: a time strictly between two store times never answers an offset outside the two neighbours."""
    client, topic, times = _stored_times(ctx, 3)
    for index in (0, 1):
        middle = (times[index] + times[index + 1]) // 2 + 1
        found = _search(ctx, client, topic, 0, middle)
        ctx.expect(found in (index, index + 1), f"offset {index} or {index + 1} at {middle}, between the store "
                   f"times {times[index]} and {times[index + 1]}", f"offset {found}")


@cases.case("search-between-nearest", clauses=("BRK-11",), level=Level.SHOULD,
            requirement="SEARCH_OFFSET_BY_TIMESTAMP between two messages answers the one nearer in time, "
                        "the earlier on a tie")
def search_between_nearest(ctx: BrokerContext) -> None:
    """BRK-11 (4.9.8 ``ConsumeQueue.getOffsetInQueueByTime``): not "the first at or after" but the nearer
    neighbour by store time; equally near → the earlier one."""
    client, topic, times = _stored_times(ctx, 2)
    first, second = times
    probes = {first + 1: 0, second - 1: 1}
    if (second - first) % 2 == 0:
        probes[(first + second) // 2] = 0
    found = {t: _search(ctx, client, topic, 0, t) for t in probes}
    ctx.expect_equal(found, probes, f"offset by searched time (store times {times})")


@cases.case("search-after-last", clauses=("BRK-11",), level=Level.SHOULD,
            requirement="SEARCH_OFFSET_BY_TIMESTAMP after the last message answers the last message's offset "
                        "(max offset - 1)")
def search_after_last(ctx: BrokerContext) -> None:
    """BRK-11 (4.9.8): past every message the search ends on the last entry, so the answer is max offset - 1,
    not the max offset."""
    client, topic, times = _stored_times(ctx, 3)
    ctx.expect_equal(_search(ctx, client, topic, 0, times[-1] + 60_000), 2,
                     "the offset searched 60 s after the last of 3 messages")


# ---------------------------------------------------------------------------------------------- commits by pull
@cases.case("pull-commit-bit-commits", clauses=("OFF-10", "OFF-8"),
            requirement="a pull with the commit bit stores its commitOffset for the group's queue")
def pull_commit_bit_commits(ctx: BrokerContext) -> None:
    client, topic, group = setup(ctx, messages=3)
    expect_pull(ctx, client, group, topic, 0, 2, ResponseCode.SUCCESS,
                f"the pull of {topic}:0 from 2 with commitOffset 2", commit=True, commit_offset=2)
    _expect_offset(ctx, client, group, topic, 2, "the offset after the pull committed 2")


@cases.case("pull-without-commit-bit-commits-nothing", clauses=("OFF-10",),
            requirement="a pull without the commit bit leaves the stored offset, whatever its commitOffset")
def pull_without_commit_bit_commits_nothing(ctx: BrokerContext) -> None:
    client, topic, group = setup(ctx, messages=3)
    commit_consumer_offset(ctx, client, group, topic, 0, 2)
    expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.SUCCESS, f"the pull of {topic}:0 without the commit bit",
                commit=False, commit_offset=1)
    _expect_offset(ctx, client, group, topic, 2, "the offset after a pull without the commit bit")


@cases.case("pull-commit-whatever-status", clauses=("OFF-10",),
            requirement="a pull with the commit bit commits also when it finds no message or an offset past the end")
def pull_commit_whatever_status(ctx: BrokerContext) -> None:
    """OFF-10: the commit does not depend on the pull's status (NO_MESSAGE_IN_QUEUE, OFFSET_OVERFLOW_BADLY here)."""
    client, topic, group = setup(ctx, 2, messages=1)
    client.request(requests.pull(group, topic, 1, 0, commit=True, commit_offset=5))
    client.request(requests.pull(group, topic, 0, 100, commit=True, commit_offset=1))
    seen = {q: consumer_offset(ctx, client, group, topic, q) for q in (0, 1)}
    ctx.expect_equal(seen, {0: 1, 1: 5}, "offsets committed by pulls of an empty queue (1) and past the end (0)")


# ------------------------------------------------------------------------------ topic stats, consume queue (BRK-25)
def _store_times(ctx: BrokerContext, client: WireClient, group: str, topic: str, queue_id: int) -> list[int]:
    answer = expect_pull(ctx, client, group, topic, queue_id, 0, ResponseCode.SUCCESS,
                         f"the pull of {topic}:{queue_id}")
    return [m.store_timestamp for m in ctx.messages(answer)]


@cases.case("topic-stats", clauses=("BRK-25",),
            requirement="GET_TOPIC_STATS_INFO answers each write queue's min and max offset and last store time; a "
                        "topic without config is TOPIC_NOT_EXIST")
def topic_stats(ctx: BrokerContext) -> None:
    """BRK-25: a two-queue topic with three messages in queue 0 answers queue 0 (min 0, max 3, the last message's
    store time) and queue 1 (0, 0, 0); an absent topic answers TOPIC_NOT_EXIST "topic[<t>] not exist"."""
    client, topic, group = setup(ctx, queues=2, messages=3)
    answer = client.request(requests.topic_stats(topic))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_TOPIC_STATS_INFO {topic}")
    table = requests.queue_keyed(requests.fastjson_loads(answer.body or b"{}").get("offsetTable") or {})
    name = ctx.brokers[0].name
    got = {key[2]: (v.get("minOffset"), v.get("maxOffset"), v.get("lastUpdateTimestamp")) for key, v in table.items()
           if key[:2] == (topic, name)}
    last = _store_times(ctx, client, group, topic, 0)[-1]
    ctx.expect_equal(got, {0: (0, 3, last), 1: (0, 0, 0)}, "(minOffset, maxOffset, lastUpdateTimestamp) by queue")
    absent = ctx.name("absent")
    answer = client.request(requests.topic_stats(absent))
    ctx.expect_code(answer, ResponseCode.TOPIC_NOT_EXIST, f"GET_TOPIC_STATS_INFO {absent}")
    ctx.expect_equal(answer.remark, f"topic[{absent}] not exist", "remark")


@cases.case("query-consume-queue", clauses=("BRK-25", "BRK-9"),
            requirement="QUERY_CONSUME_QUEUE answers up to count entries from index (commit-log offset, size, tags "
                        "code) with the queue's min and max index")
def query_consume_queue(ctx: BrokerContext) -> None:
    """BRK-25: three tagged messages: from index 1 with count 5 the entries of the last two (their commit-log
    offsets, stored sizes and tags' hash codes, BRK-9), minQueueIndex 0 and maxQueueIndex 3; index 3 answers
    SUCCESS "Index 3 of 0@<t> is not exist!"; a queue never written is SYSTEM_ERROR "0@<t> is not exist!"."""
    client, topic, _ = setup(ctx)
    tags = ["TagA", "TagB", "TagC"]
    sent = [ctx.send(client, topic, f"cq-{i}".encode(), tags=tag) for i, tag in enumerate(tags)]
    dispatched(ctx, client, topic, 0, 3)
    sizes = []
    for one in sent:
        view = client.request(requests.view_message(one.commit_log_offset))
        ctx.expect_code(view, ResponseCode.SUCCESS, "VIEW_MESSAGE_BY_ID of a message sent")
        sizes.append(len(view.body or b""))
    answer = client.request(requests.query_consume_queue(topic, 0, 1, 5))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"QUERY_CONSUME_QUEUE {topic}:0 from 1")
    body = requests.fastjson_loads(answer.body or b"{}")
    entries = [(e.get("physicOffset"), e.get("physicSize"), e.get("tagsCode")) for e in body.get("queueData") or []]
    expected = [(s.commit_log_offset, size, tags_code(tag)) for s, size, tag in zip(sent, sizes, tags, strict=True)][1:]
    ctx.expect_equal(entries, expected, "entries (physicOffset, physicSize, tagsCode)")
    ctx.expect_equal((body.get("minQueueIndex"), body.get("maxQueueIndex")), (0, 3), "(minQueueIndex, maxQueueIndex)")
    outside = client.request(requests.query_consume_queue(topic, 0, 3, 1))
    ctx.expect_code(outside, ResponseCode.SUCCESS, f"QUERY_CONSUME_QUEUE {topic}:0 from 3")
    ctx.expect_equal(outside.remark, f"Index 3 of 0@{topic} is not exist!", "remark")
    never = ctx.name("absent")
    answer = client.request(requests.query_consume_queue(never, 0, 0, 1))
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, f"QUERY_CONSUME_QUEUE {never}:0 (never written)")
    ctx.expect_equal(answer.remark, f"0@{never} is not exist!", "remark")


# ------------------------------------------------------------------------------ consume stats, corrections (BRK-30)
def _consume_stats(ctx: BrokerContext, client: WireClient, group: str,
                   topic: str | None = None) -> dict[tuple[str, int], tuple[object, object, object]]:
    answer = client.request(requests.consume_stats(group, topic))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_CONSUME_STATS {group}")
    table = requests.queue_keyed(requests.fastjson_loads(answer.body or b"{}").get("offsetTable") or {})
    return {(key[0], key[2]): (v.get("brokerOffset"), v.get("consumerOffset"), v.get("lastTimestamp"))
            for key, v in table.items()}


@cases.case("consume-stats", clauses=("BRK-30",),
            requirement="GET_CONSUME_STATS answers per read queue the max offset, the committed offset and the last "
                        "consumed message's store time, for the topics an online group subscribes to")
def consume_stats(ctx: BrokerContext) -> None:
    """BRK-30: a group with offsets on two topics (queue 0 of a two-queue topic at 2 of 3 messages): asked for the
    topic, each read queue answers (max offset, committed offset, store time of the message before it; 0 for none);
    asked without a topic, both topics are listed while the group is offline, and only the subscribed one once a
    consumer of the group subscribes to it."""
    client, topic, group = setup(ctx, queues=2, messages=3)
    other = ctx.topic(1, brokers=[0], wait_route=False)
    commit_consumer_offset(ctx, client, group, topic, 0, 2)
    commit_consumer_offset(ctx, client, group, other, 0, 0)
    second = _store_times(ctx, client, group, topic, 0)[1]
    stats = _consume_stats(ctx, client, group, topic)
    ctx.expect_equal(stats, {(topic, 0): (3, 2, second), (topic, 1): (0, 0, 0)},
                     f"(brokerOffset, consumerOffset, lastTimestamp) by queue of {topic}")
    listed = {t for t, _ in _consume_stats(ctx, client, group)}
    ctx.expect_equal(listed, {topic, other}, "topics of the offline group's stats")
    consumer_heartbeat(ctx, client, group, requests.subscription_json(topic), f"HEART_BEAT subscribing {topic}")
    listed = {t for t, _ in _consume_stats(ctx, client, group)}
    ctx.expect_equal(listed, {topic}, "topics of the online group's stats")


@cases.case("correction-offsets", clauses=("BRK-30",),
            requirement="QUERY_CORRECTION_OFFSET answers per queue the least committed offset of the groups left after "
                        "the filterGroups")
def correction_offsets(ctx: BrokerContext) -> None:
    """BRK-30: three groups commit queue 0 of a two-queue topic at 2, 1 and 0 (the last one also queue 1 at 1,
    the second queue 1 at 0); with the last group filtered out the correction offsets are {0: 1, 1: 0}."""
    client, topic, _ = setup(ctx, queues=2, messages=3, group_options={"create": False})
    groups = [ctx.group() for _ in range(3)]
    commit_consumer_offset(ctx, client, groups[0], topic, 0, 2)
    commit_consumer_offset(ctx, client, groups[1], topic, 0, 1)
    commit_consumer_offset(ctx, client, groups[1], topic, 1, 0)
    commit_consumer_offset(ctx, client, groups[2], topic, 0, 0)
    commit_consumer_offset(ctx, client, groups[2], topic, 1, 1)
    answer = client.request(requests.query_correction_offset(topic, groups[0], [groups[2]]))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"QUERY_CORRECTION_OFFSET {topic}")
    table = requests.fastjson_loads(answer.body or b"{}").get("correctionOffsets") or {}
    ctx.expect_equal({int(k): v for k, v in table.items()}, {0: 1, 1: 0}, "correctionOffsets by queue")
