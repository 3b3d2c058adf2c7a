"""Broker conformance cases: pull (PULL_MESSAGE statuses, offset corrections, pre-checks, the offset commit).

A pull's answer is decided in two steps (``PullMessageProcessor.processRequest``): pre-checks, first failure wins
(PULL-16, PULL-17), then the store's status for the requested offset against the queue's [min, max] (PULL-1 ..
PULL-9) mapped to a response code (PULL-10), with ``nextBeginOffset`` / ``minOffset`` / ``maxOffset`` /
``suggestWhichBrokerId`` in the header (PULL-12, PULL-25). A pull with the commit flag stores the consumer offset it
carries, whatever the answer (PULL-18).

Not drivable from the wire on a 4.9.8 master: NO_MATCHED_LOGIC_QUEUE (PULL-1; the store creates a consume queue on
demand, so a queue never written answers NO_MESSAGE_IN_QUEUE), OFFSET_FOUND_NULL (PULL-6; a window between a
consume-queue file's deletion and the min-offset correction), MESSAGE_WAS_REMOVING (PULL-9) and the slave answers
(PULL-11; the suite talks to masters). OFFSET_TOO_SMALL (PULL-3) needs a min offset above 0, which only deleting
commit-log files gives: the case runs on a target whose files can be deleted at once (fileReservedTime=0, small
mappedFileSizeCommitLog) and is skipped, saying so, elsewhere.
"""

from __future__ import annotations

import json

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import (
    bodies,
    commit_consumer_offset,
    consumer_heartbeat,
    consumer_offset,
    dispatched,
    expect_pull,
    expect_remark_names,
    setup,
)
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.model import CaseList, Level
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import (
    MASTER_ID,
    OFFSET_MOVED_EVENT_TOPIC,
    PERM_WRITE,
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    RequestCode,
    ResponseCode,
)

cases = CaseList("broker/pull")
CASES = cases.cases

# Largest commit-log file a case deletes files of (it writes past one file to move a queue's min offset).
DELETABLE_FILE_MAX_BYTES = 4 * 1024 * 1024


def offsets(answer: RemotingCommand) -> tuple[int | None, int | None, int | None]:
    """(nextBeginOffset, minOffset, maxOffset) of a pull answer (None for a field it lacks)."""
    return (answer.int_field("nextBeginOffset"), answer.int_field("minOffset"), answer.int_field("maxOffset"))


def expect_offsets(ctx: BrokerContext, answer: RemotingCommand, next_offset: int, min_offset: int,
                   max_offset: int) -> None:
    ctx.expect_equal(offsets(answer), (next_offset, min_offset, max_offset),
                     "(nextBeginOffset, minOffset, maxOffset)")


# ------------------------------------------------------------------------------------------------------ statuses
@cases.case("found", clauses=("PULL-8", "PULL-9", "PULL-10", "PULL-12", "PULL-25", "BRK-8"),
            requirement="a pull at an offset below max answers SUCCESS with the messages from that offset on, "
                        "nextBeginOffset past them, min/max offsets and suggestWhichBrokerId 0")
def found(ctx: BrokerContext) -> None:
    """PULL-8/9/10: entries in [offset, max) are scanned, taken messages make FOUND → SUCCESS, next = offset +
    entries scanned; PULL-12: a master without slaveReadEnable suggests the master (0)."""
    client, topic, group = setup(ctx, messages=3)
    answer = expect_pull(ctx, client, group, topic, 0, 1, ResponseCode.SUCCESS, "PULL_MESSAGE at offset 1 of 3")
    ctx.expect_equal(bodies(ctx, answer), [b"m1", b"m2"], "message bodies")
    ctx.expect_equal([m.queue_offset for m in ctx.messages(answer)], [1, 2], "queue offsets")
    expect_offsets(ctx, answer, 3, 0, 3)
    if not ctx.setting_bool("slaveReadEnable"):
        ctx.expect_equal(answer.int_field("suggestWhichBrokerId"), MASTER_ID, "suggestWhichBrokerId")


@cases.case("found-max-msg-nums", clauses=("PULL-8", "PULL-25"),
            requirement="a pull answers at most maxMsgNums messages and nextBeginOffset right after the last")
def found_max_msg_nums(ctx: BrokerContext) -> None:
    """PULL-8: the scan stops before an entry once the batch holds maxMsgNums messages; next = offset + taken."""
    client, topic, group = setup(ctx, messages=5)
    answer = expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.SUCCESS, "PULL_MESSAGE maxMsgNums=2", max_msgs=2)
    ctx.expect_equal(bodies(ctx, answer), [b"m0", b"m1"], "message bodies")
    expect_offsets(ctx, answer, 2, 0, 5)
    answer = client.request(requests.pull(group, topic, 0, 2, max_msgs=2))
    ctx.expect_equal(bodies(ctx, answer), [b"m2", b"m3"], "message bodies of the next pull")
    ctx.expect_equal(answer.int_field("nextBeginOffset"), 4, "nextBeginOffset of the next pull")


@cases.case("found-transfer-limit", clauses=("PULL-8",), level=Level.SHOULD,
            requirement="a pull of many small in-memory messages answers at most maxTransferCountOnMessageInMemory")
def found_transfer_limit(ctx: BrokerContext) -> None:
    """PULL-8 (isTheBatchFull): besides maxMsgNums, a batch read from memory is full at
    maxTransferCountOnMessageInMemory messages (32 by default)."""
    limit = ctx.setting_int("maxTransferCountOnMessageInMemory")
    if limit > 64:
        ctx.skip(f"maxTransferCountOnMessageInMemory={limit}: the case writes limit + 2 messages, at most 66")
    client, topic, group = setup(ctx, messages=limit + 2)
    answer = expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.SUCCESS,
                         f"PULL_MESSAGE maxMsgNums={limit + 2}", max_msgs=limit + 2)
    ctx.expect_equal(len(ctx.messages(answer)), limit, "messages in the answer")
    ctx.expect_equal(answer.int_field("nextBeginOffset"), limit, "nextBeginOffset")


@cases.case("not-found-at-max", clauses=("PULL-4", "PULL-10", "PULL-25", "PULL-26"),
            requirement="a pull at the queue's max offset (no suspend flag) answers PULL_NOT_FOUND at once with "
                        "nextBeginOffset = the offset")
def not_found_at_max(ctx: BrokerContext) -> None:
    """PULL-4: offset == max is OFFSET_OVERFLOW_ONE, next = offset; PULL-10: PULL_NOT_FOUND (not held without the
    suspend flag, PULL-13)."""
    client, topic, group = setup(ctx, messages=2)
    answer = expect_pull(ctx, client, group, topic, 0, 2, ResponseCode.PULL_NOT_FOUND, "PULL_MESSAGE at max offset 2")
    expect_offsets(ctx, answer, 2, 0, 2)


@cases.case("offset-overflow-badly", clauses=("PULL-5", "PULL-10", "PULL-25", "PULL-26"),
            requirement="a pull above the max offset answers PULL_OFFSET_MOVED with nextBeginOffset within [min, max]")
def offset_overflow_badly(ctx: BrokerContext) -> None:
    """PULL-5/10: offset > max is OFFSET_OVERFLOW_BADLY → PULL_OFFSET_MOVED, corrected into the queue's bounds
    (PULL-25) — the consumer is moved back."""
    client, topic, group = setup(ctx, messages=2)
    answer = expect_pull(ctx, client, group, topic, 0, 10, ResponseCode.PULL_OFFSET_MOVED,
                         "PULL_MESSAGE at offset 10 of max 2")
    next_offset, low, high = offsets(answer)
    ctx.expect((low, high) == (0, 2), "minOffset 0, maxOffset 2", f"minOffset {low}, maxOffset {high}")
    ctx.expect(next_offset is not None and 0 <= next_offset <= 2, "nextBeginOffset within [0, 2]",
               f"nextBeginOffset {next_offset}")


@cases.case("offset-overflow-badly-to-max", clauses=("PULL-5",), level=Level.SHOULD,
            requirement="a pull above the max offset is corrected to the max offset (4.9.4+)")
def offset_overflow_badly_to_max(ctx: BrokerContext) -> None:
    """PULL-5: since 4.9.4 (ISSUE #4215) OFFSET_OVERFLOW_BADLY corrects to max; 4.9.0-4.9.3 corrected to min while
    min == 0 (a documented version difference)."""
    client, topic, group = setup(ctx, messages=3)
    answer = expect_pull(ctx, client, group, topic, 0, 1000, ResponseCode.PULL_OFFSET_MOVED,
                         "PULL_MESSAGE at offset 1000 of max 3")
    expect_offsets(ctx, answer, 3, 0, 3)


@cases.case("empty-queue-offset-zero", clauses=("PULL-1", "PULL-2", "PULL-10", "PULL-26"),
            requirement="a pull at offset 0 of a queue never written answers PULL_NOT_FOUND, next 0, min = max = 0")
def empty_queue_offset_zero(ctx: BrokerContext) -> None:
    """PULL-2: max offset 0 is NO_MESSAGE_IN_QUEUE (PULL-1 NO_MATCHED_LOGIC_QUEUE alike), next = correction(0, 0);
    PULL-10: at requested offset 0 that is PULL_NOT_FOUND, never PULL_OFFSET_MOVED (PULL-26)."""
    client, topic, group = setup(ctx, queues=4)
    ctx.send(client, topic, b"other queue", 1)
    answer = expect_pull(ctx, client, group, topic, 2, 0, ResponseCode.PULL_NOT_FOUND,
                         "PULL_MESSAGE at offset 0 of empty queue 2")
    expect_offsets(ctx, answer, 0, 0, 0)


@cases.case("empty-queue-offset-moved", clauses=("PULL-2", "PULL-7", "PULL-10", "PULL-25"),
            requirement="a pull at an offset > 0 of a queue never written answers PULL_OFFSET_MOVED with "
                        "nextBeginOffset 0")
def empty_queue_offset_moved(ctx: BrokerContext) -> None:
    """PULL-2/7: NO_MESSAGE_IN_QUEUE corrects to 0 on a master; PULL-10: a requested offset other than 0 makes it
    PULL_OFFSET_MOVED."""
    client, topic, group = setup(ctx, queues=2)
    answer = expect_pull(ctx, client, group, topic, 1, 7, ResponseCode.PULL_OFFSET_MOVED,
                         "PULL_MESSAGE at offset 7 of empty queue 1")
    expect_offsets(ctx, answer, 0, 0, 0)


@cases.case("status-remarks", clauses=("PULL-2", "PULL-4", "PULL-5", "PULL-9", "PULL-10"), level=Level.SHOULD,
            requirement="a store-decided pull answer carries the GetMessageStatus name as its remark")
def status_remarks(ctx: BrokerContext) -> None:
    """4.9.8 sets the response remark to the store status's name (FOUND, OFFSET_OVERFLOW_ONE, OFFSET_OVERFLOW_BADLY,
    NO_MESSAGE_IN_QUEUE, NO_MATCHED_MESSAGE): a client can tell statuses that share a code apart."""
    client, topic, group = setup(ctx, queues=2, messages=2)
    ctx.send(client, topic, b"tagged", 0, tags="b")
    dispatched(ctx, client, topic, 0, 3)
    checks = [
        (requests.pull(group, topic, 0, 0), "FOUND"),
        (requests.pull(group, topic, 0, 3), "OFFSET_OVERFLOW_ONE"),
        (requests.pull(group, topic, 0, 9), "OFFSET_OVERFLOW_BADLY"),
        (requests.pull(group, topic, 1, 0), "NO_MESSAGE_IN_QUEUE"),
        (requests.pull(group, topic, 0, 2, subscription="a"), "NO_MATCHED_MESSAGE"),
    ]
    for request, remark in checks:
        answer = client.request(request)
        what = f"the remark of a pull at queue {request.field('queueId')} offset {request.field('queueOffset')}"
        ctx.expect_equal(answer.remark, remark, what)


@cases.case("offset-moved-event", clauses=("PULL-10", "PULL-11"), level=Level.SHOULD,
            requirement="a PULL_OFFSET_MOVED answer of a master records an OffsetMovedEvent in OFFSET_MOVED_EVENT")
def offset_moved_event(ctx: BrokerContext) -> None:
    """A master (PULL-11: unlike a plain slave) answering PULL_OFFSET_MOVED stores an OffsetMovedEvent (keys and
    tags = the group) with the requested and the corrected offset in the OFFSET_MOVED_EVENT topic."""
    client, topic, group = setup(ctx, messages=1)
    answer = expect_pull(ctx, client, group, topic, 0, 5, ResponseCode.PULL_OFFSET_MOVED,
                         "PULL_MESSAGE at offset 5 of max 1")

    def recorded() -> list[dict[str, object]]:
        found = client.request(requests.query_message(OFFSET_MOVED_EVENT_TOPIC, group))
        if found.code != ResponseCode.SUCCESS:
            return []
        return [json.loads(m.body) for m in ctx.messages(found)]

    events = ctx.wait_until(recorded, 5.0, what=f"an OffsetMovedEvent keyed {group} in {OFFSET_MOVED_EVENT_TOPIC}")
    event = events[0]
    ctx.expect_equal((event.get("consumerGroup"), event.get("offsetRequest"), event.get("offsetNew")),
                     (group, 5, answer.int_field("nextBeginOffset")), "(consumerGroup, offsetRequest, offsetNew)")
    queue = event.get("messageQueue") or {}
    ctx.expect_equal(queue, {"brokerName": ctx.brokers[0].name, "queueId": 0, "topic": topic}, "messageQueue")


@cases.case("offset-too-small", clauses=("PULL-3", "PULL-7", "PULL-10", "PULL-25", "PULL-26"),
            requirement="a pull below a queue's min offset answers PULL_OFFSET_MOVED with nextBeginOffset = min")
def offset_too_small(ctx: BrokerContext) -> None:
    """PULL-3/7/10: offset < min is OFFSET_TOO_SMALL, corrected to min on a master → PULL_OFFSET_MOVED.

    A min offset above 0 exists only once the queue's first commit-log file is deleted. The case writes past one
    commit-log file, asks DELETE_EXPIRED_COMMITLOG and waits (bounded by cleanResourceInterval) for the min offset
    to move: it runs on the first master with fileReservedTime=0 and mappedFileSizeCommitLog ≤ 4 MiB, and deletes that
    broker's old files (4.9.8's store cleans first 60 s after start, then every cleanResourceInterval)."""

    def lacks(index: int) -> str | None:
        reserved = ctx.setting_int("fileReservedTime", index)
        size = ctx.setting_int("mappedFileSizeCommitLog", index)
        if reserved == 0 and size <= DELETABLE_FILE_MAX_BYTES:
            return None
        return f"fileReservedTime={reserved} (needs 0), mappedFileSizeCommitLog={size} (needs ≤ " \
               f"{DELETABLE_FILE_MAX_BYTES})"

    broker = ctx.broker_where("deleted commit-log files for a min offset above 0", lacks)
    file_size = ctx.setting_int("mappedFileSizeCommitLog", broker)
    client, topic, group = setup(ctx, broker=broker)
    chunk = b"x" * 64 * 1024
    sent = 0
    # Past the end of the file holding the first message, plus one message in the next-but-one file.
    while sent * len(chunk) < 2 * file_size + len(chunk):
        ctx.send(client, topic, chunk, 0)
        sent += 1
    dispatched(ctx, client, topic, 0, sent)
    interval = ctx.setting_int("cleanResourceInterval", broker)

    def min_moved() -> int:
        client.request(RemotingCommand.request(RequestCode.DELETE_EXPIRED_COMMITLOG))
        answer = client.request(requests.get_min_offset(topic, 0))
        return int(answer.field("offset") or 0)

    low = ctx.wait_until(min_moved, min(3 * interval / 1000 + 5, ctx.remaining()), interval=0.5,
                         what="the queue's min offset to move above 0 after DELETE_EXPIRED_COMMITLOG")
    answer = expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.PULL_OFFSET_MOVED,
                         f"PULL_MESSAGE at offset 0 below min {low}")
    next_offset, min_offset, max_offset = offsets(answer)
    ctx.expect_equal((next_offset, max_offset), (min_offset, sent), "(nextBeginOffset, maxOffset) [min, messages]")
    ctx.expect(min_offset is not None and min_offset >= low, f"minOffset ≥ {low}", f"minOffset {min_offset}")


# --------------------------------------------------------------------------------------------------- pre-checks
@cases.case("topic-not-exist", clauses=("PULL-16",),
            requirement="a pull of a topic the broker does not have answers TOPIC_NOT_EXIST (no auto-creation)")
def topic_not_exist(ctx: BrokerContext) -> None:
    """PULL-16: a missing topic fails the pre-checks; pulls never create topics."""
    group = ctx.group()
    topic = ctx.name("absent")
    client = ctx.broker(0)
    answer = expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.TOPIC_NOT_EXIST,
                         f"PULL_MESSAGE of missing topic {topic}")
    expect_remark_names(ctx, answer, topic)
    again = client.request(requests.pull(group, topic, 0, 0))
    ctx.expect_code(again, ResponseCode.TOPIC_NOT_EXIST, "a second PULL_MESSAGE of the missing topic")


@cases.case("topic-not-readable", clauses=("PULL-16", "BRK-4"),
            requirement="a pull of a topic whose perm lacks the read bit answers NO_PERMISSION")
def topic_not_readable(ctx: BrokerContext) -> None:
    """PULL-16 / BRK-4: a write-only topic (perm 2) is not readable."""
    client, topic, group = setup(ctx, messages=1, perm=PERM_WRITE)
    answer = expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.NO_PERMISSION,
                         f"PULL_MESSAGE of write-only topic {topic}")
    expect_remark_names(ctx, answer, topic)


@cases.case("queue-id-out-of-range", clauses=("PULL-16",),
            requirement="a pull of queueId ≥ readQueueNums (even a writable queue) or < 0 answers SYSTEM_ERROR")
def queue_id_out_of_range(ctx: BrokerContext) -> None:
    """PULL-16: the queue id must be within [0, readQueueNums); write queues beyond the read queues are not read."""
    topic = ctx.name("topic")
    ctx.target.created_topics.add(topic)
    client = ctx.broker(0)
    created = client.request(requests.create_topic(topic, 4, read_queues=2))
    ctx.expect_code(created, ResponseCode.SUCCESS, "UPDATE_AND_CREATE_TOPIC with 2 read / 4 write queues")
    group = ctx.group()
    ctx.send(client, topic, b"in write queue 3", 3)
    for queue_id in (3, 2, -1):
        answer = client.request(requests.pull(group, topic, queue_id, 0))
        ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, f"PULL_MESSAGE of queue {queue_id} (readQueueNums 2)")
        expect_remark_names(ctx, answer, f"queueId[{queue_id}]")
    answer = expect_pull(ctx, client, group, topic, 1, 0, ResponseCode.PULL_NOT_FOUND, "PULL_MESSAGE of read queue 1")


@cases.case("group-consume-disabled", clauses=("PULL-16", "BRK-20"),
            requirement="a pull for a group whose consumeEnable is false answers NO_PERMISSION")
def group_consume_disabled(ctx: BrokerContext) -> None:
    """PULL-16: a subscription group with consumeEnable=false may not pull."""
    client, topic, group = setup(ctx, messages=1, group_options={"consume_enable": False})
    answer = expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.NO_PERMISSION,
                         f"PULL_MESSAGE for consume-disabled group {group}")
    expect_remark_names(ctx, answer, group)


@cases.case("group-not-exist", clauses=("PULL-16", "BRK-20"),
            requirement="with autoCreateSubscriptionGroup off, a pull for an unknown group answers "
                        "SUBSCRIPTION_GROUP_NOT_EXIST; with it on the group is created and the pull served")
def group_not_exist(ctx: BrokerContext) -> None:
    """PULL-16 / BRK-20: the group is looked up (or auto-created) before anything else but broker permission."""
    client, topic, group = setup(ctx, group_options={"create": False})
    answer = client.request(requests.pull(group, topic, 0, 0))
    if ctx.setting_bool("autoCreateSubscriptionGroup"):
        ctx.target.created_groups.add(group)
        ctx.expect_code(answer, ResponseCode.PULL_NOT_FOUND, f"PULL_MESSAGE for new group {group} (auto-created)")
    else:
        ctx.expect_code(answer, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"PULL_MESSAGE for unknown group {group}")


@cases.case("precheck-order", clauses=("PULL-16",),
            requirement="pull pre-checks fail in order: group consume disabled before topic missing, topic not "
                        "readable before queueId out of range")
def precheck_order(ctx: BrokerContext) -> None:
    """PULL-16: first failure wins, in the order broker, group, group consume, topic, topic perm, queue id."""
    disabled = ctx.group(consume_enable=False)
    group = ctx.group()
    client = ctx.broker(0)
    answer = client.request(requests.pull(disabled, ctx.name("absent"), 0, 0))
    ctx.expect_code(answer, ResponseCode.NO_PERMISSION, "consume-disabled group pulling a missing topic")
    write_only = ctx.topic(1, brokers=[0], wait_route=False, perm=PERM_WRITE)
    answer = client.request(requests.pull(group, write_only, 9, 0))
    ctx.expect_code(answer, ResponseCode.NO_PERMISSION, "write-only topic pulled at queue 9 of 1")
    answer = client.request(requests.pull(group, ctx.name("absent"), 9, 0, subscription="||"))
    ctx.expect_code(answer, ResponseCode.TOPIC_NOT_EXIST, "missing topic pulled at queue 9 with a bad subscription")


@cases.case("subscription-parse-failed", clauses=("PULL-17", "FILTER-1"),
            requirement="a pull whose tag subscription has no piece at all ('||') answers SUBSCRIPTION_PARSE_FAILED")
def subscription_parse_failed(ctx: BrokerContext) -> None:
    """PULL-17: the request's subscription is parsed (FilterAPI.buildSubscriptionData); Java's split of '||' on
    '||' gives no piece, which is a parse failure (a blank piece is merely skipped)."""
    client, topic, group = setup(ctx, messages=1)
    expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                "PULL_MESSAGE with subscription '||'", subscription="||")
    expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.PULL_RETRY_IMMEDIATELY,
                "PULL_MESSAGE with subscription '|| a' (untagged)", subscription="|| a")


@cases.case("subscription-not-exist", clauses=("PULL-17",),
            requirement="a pull without the subscription flag for a group with no registered consumer answers "
                        "SUBSCRIPTION_NOT_EXIST")
def subscription_not_exist(ctx: BrokerContext) -> None:
    """PULL-17: without the subscription bit the broker needs the group's consumer info (from heartbeats)."""
    client, topic, group = setup(ctx, messages=1)
    answer = expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.SUBSCRIPTION_NOT_EXIST,
                         "PULL_MESSAGE without subscription, no heartbeat", with_subscription=False)
    other = ctx.topic(1, brokers=[0], wait_route=False)
    consumer_heartbeat(ctx, client, group, requests.subscription_json(other), "HEART_BEAT subscribing another topic")
    answer = expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.SUBSCRIPTION_NOT_EXIST,
                         "PULL_MESSAGE of a topic the group did not subscribe", with_subscription=False)
    answer = client.request(requests.pull(group, other, 0, 0, with_subscription=False))
    ctx.expect_code(answer, ResponseCode.PULL_NOT_FOUND, "PULL_MESSAGE of the subscribed topic")


@cases.case("subscription-not-latest", clauses=("PULL-17",),
            requirement="a pull without the subscription flag whose subVersion is above the registered one "
                        "answers SUBSCRIPTION_NOT_LATEST")
def subscription_not_latest(ctx: BrokerContext) -> None:
    """PULL-17: the registered subscription's version must not be below the request's subVersion."""
    client, topic, group = setup(ctx, messages=1)
    consumer_heartbeat(ctx, client, group, requests.subscription_json(topic, sub_version=1000),
                       "HEART_BEAT with subVersion 1000")
    expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.SUBSCRIPTION_NOT_LATEST,
                "PULL_MESSAGE with subVersion 2000", with_subscription=False, sub_version=2000)
    expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.SUCCESS,
                "PULL_MESSAGE with subVersion 1000", with_subscription=False, sub_version=1000)


@cases.case("broadcast-disabled", clauses=("PULL-17",),
            requirement="a broadcasting consumer of a group with consumeBroadcastEnable false is refused "
                        "NO_PERMISSION on a pull without the subscription flag")
def broadcast_disabled(ctx: BrokerContext) -> None:
    """PULL-17: the group's registered message model BROADCASTING needs consumeBroadcastEnable."""
    client, topic, group = setup(ctx, group_options={"broadcast_enable": False})
    consumer_heartbeat(ctx, client, group, requests.subscription_json(topic),
                       "HEART_BEAT as a broadcasting consumer", message_model="BROADCASTING")
    answer = expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.NO_PERMISSION,
                         "PULL_MESSAGE of a broadcasting consumer", with_subscription=False)
    ctx.expect("broadcast" in (answer.remark or ""), "a remark about broadcast", repr(answer.remark))


# ---------------------------------------------------------------------------------------------- commit offset
@cases.case("commit-offset", clauses=("PULL-18", "OFF-10"),
            requirement="a pull with the commit flag stores its commitOffset as the group's consumer offset")
def commit_offset(ctx: BrokerContext) -> None:
    """PULL-18: a master commits the request's commitOffset when the commit flag is set."""
    client, topic, group = setup(ctx, messages=4)
    expect_pull(ctx, client, group, topic, 0, 3, ResponseCode.SUCCESS,
                "PULL_MESSAGE with the commit flag", commit=True, commit_offset=3)
    ctx.expect_equal(consumer_offset(ctx, client, group, topic), 3, "the stored consumer offset")


@cases.case("commit-offset-whatever-the-result", clauses=("PULL-18", "OFF-10"),
            requirement="the commit flag commits even when the pull answers PULL_OFFSET_MOVED or PULL_NOT_FOUND")
def commit_offset_whatever_the_result(ctx: BrokerContext) -> None:
    """PULL-18: the commit does not depend on the store's answer."""
    client, topic, group = setup(ctx, messages=2)
    for offset, code, committed in ((50, ResponseCode.PULL_OFFSET_MOVED, 1), (2, ResponseCode.PULL_NOT_FOUND, 2)):
        expect_pull(ctx, client, group, topic, 0, offset, code, f"PULL_MESSAGE at offset {offset} with the commit flag",
                    commit=True, commit_offset=committed)
        ctx.expect_equal(consumer_offset(ctx, client, group, topic), committed,
                         f"the stored offset after {ResponseCode(code).name}")


@cases.case("no-commit-without-flag", clauses=("PULL-18",),
            requirement="a pull without the commit flag leaves the stored consumer offset alone")
def no_commit_without_flag(ctx: BrokerContext) -> None:
    """PULL-18: commitOffset is ignored unless the commit flag is set."""
    client, topic, group = setup(ctx, messages=3)
    commit_consumer_offset(ctx, client, group, topic, 0, 1)
    expect_pull(ctx, client, group, topic, 0, 0, ResponseCode.SUCCESS,
                "PULL_MESSAGE with commitOffset 3, no commit flag", commit_offset=3, sys_flag=PULL_FLAG_SUBSCRIPTION)
    ctx.expect_equal(consumer_offset(ctx, client, group, topic), 1, "the stored consumer offset")
    client.request(requests.pull(group, topic, 0, 0, commit_offset=2,
                                 sys_flag=PULL_FLAG_COMMIT_OFFSET | PULL_FLAG_SUBSCRIPTION))
    ctx.expect_equal(consumer_offset(ctx, client, group, topic), 2,
                     "the stored consumer offset after a pull with the flag")
