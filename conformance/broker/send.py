"""Broker conformance cases: SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE (the response header, the checks
a send meets first, size limits, auto-created topics, what a stored message keeps, tag hash codes)."""

from __future__ import annotations

import itertools
import zlib

import attrs

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import (
    answer_within,
    dispatched,
    expect_remark_names,
    max_offset,
    new_client_id,
    queue_datas,
)
from rocketspec.conformance.context import BrokerContext, Sent, answer_text
from rocketspec.conformance.model import CaseList, Level
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.message import MessageExt, decode_properties, decode_stored_message
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    MAX_PROPERTIES_LENGTH,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    PROPERTY_MSG_REGION,
    PROPERTY_TRACE_SWITCH,
    RETRY_GROUP_TOPIC_PREFIX,
    SELF_TEST_TOPIC,
    SYSFLAG_COMPRESSED,
    SYSFLAG_COMPRESSION_ZLIB,
    TOPIC_MAX_LENGTH,
    TOPIC_SYS_FLAG_UNIT,
    TOPIC_SYS_FLAG_UNIT_SUB,
    Property,
    RequestCode,
    ResponseCode,
)

cases = CaseList("broker/send")
CASES = cases.cases

PRODUCER = "rscf_producer"


def decode_msg_id(msg_id: str) -> tuple[str, int]:
    """An offset message id (32 hex digits: IPv4, port, commit-log offset) as ("ip:port", offset)."""
    ip = ".".join(str(int(msg_id[i:i + 2], 16)) for i in range(0, 8, 2))
    return f"{ip}:{int(msg_id[8:16], 16)}", int(msg_id[16:32], 16)


def is_offset_msg_id(msg_id: str) -> bool:
    return len(msg_id) == 32 and all(c in "0123456789ABCDEF" for c in msg_id)


def with_field(command: RemotingCommand, name: str, value: str) -> RemotingCommand:
    """The request with one header field replaced."""
    return attrs.evolve(command, ext_fields={**command.ext_fields, name: value})


def pull_all(ctx: BrokerContext, client: WireClient, topic: str, queue_id: int, *, stored: int, offset: int = 0,
             subscription: str = "*") -> list[MessageExt]:
    """The messages of the queue from ``offset`` once ``stored`` messages are in it (``common.dispatched``)."""
    dispatched(ctx, client, topic, queue_id, stored)
    group = ctx.group()
    answer = client.request(requests.pull(group, topic, queue_id, offset, subscription=subscription))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"PULL_MESSAGE {topic}:{queue_id} from {offset}")
    return ctx.messages(answer)


# ------------------------------------------------------------------------------------------------ response header
@cases.case("response-header", clauses=("BRK-6",),
            requirement="a SUCCESS send answers an offset msgId of the broker's address, the queueId and queueOffset")
def response_header(ctx: BrokerContext) -> None:
    """BRK-6: msgId is 32 upper-case hex digits: the store host (the broker's registered address) and the message's
    commit-log offset; queueId is the queue written; queueOffset is 0 for the first message of a queue."""
    client = ctx.broker(0)
    topic = ctx.topic(4, brokers=[0], wait_route=False)
    answer = client.request(requests.send_v2(PRODUCER, topic, b"header", 2))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"SEND_MESSAGE_V2 {topic}:2")
    msg_id = answer.field("msgId") or ""
    ctx.expect(is_offset_msg_id(msg_id), "msgId of 32 upper-case hex digits", repr(msg_id))
    host, offset = decode_msg_id(msg_id)
    ctx.expect_equal(host, ctx.brokers[0].addr, "store host in msgId")
    ctx.expect_equal((answer.field("queueId"), answer.field("queueOffset")), ("2", "0"), "(queueId, queueOffset)")
    stored = pull_all(ctx, client, topic, 2, stored=1)
    ctx.expect_equal([(m.commit_log_offset, m.offset_msg_id) for m in stored], [(offset, msg_id)],
                     "(commitLogOffset, offset msgId) of the pulled message")


@cases.case("response-region-trace", clauses=("BRK-6",), level=Level.SHOULD,
            requirement="a send answer carries MSG_REGION and TRACE_ON, as 4.9.8's does")
def response_region_trace(ctx: BrokerContext) -> None:
    """BRK-6 (4.9.8 detail): the response header also has MSG_REGION (the broker's regionId) and TRACE_ON."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    sent = ctx.send(client, topic, b"region")
    fields = sent.response.ext_fields
    ctx.expect(bool(fields.get(PROPERTY_MSG_REGION)) and fields.get(PROPERTY_TRACE_SWITCH) in ("true", "false"),
               f"{PROPERTY_MSG_REGION} and {PROPERTY_TRACE_SWITCH} (true/false) in the answer", f"fields {fields}")


@cases.case("queue-offsets-consecutive", clauses=("BRK-6", "BRK-10"),
            requirement="queueOffset counts 0, 1, 2... per queue; commit-log offsets grow with every message")
def queue_offsets_consecutive(ctx: BrokerContext) -> None:
    """BRK-6: three sends to queue 1 answer queueOffset 0, 1, 2 and one to queue 0 answers 0; the commit-log offsets
    in the msgIds strictly increase; GET_MAX_OFFSET of queue 1 is then 3 (BRK-10)."""
    client = ctx.broker(0)
    topic = ctx.topic(2, brokers=[0], wait_route=False)
    sends = [ctx.send(client, topic, b"q1-%d" % i, 1) for i in range(3)]
    other = ctx.send(client, topic, b"q0", 0)
    ctx.expect_equal([s.queue_offset for s in sends], [0, 1, 2], "queueOffsets on queue 1")
    ctx.expect_equal(other.queue_offset, 0, "queueOffset of the first message on queue 0")
    offsets = [s.commit_log_offset for s in [*sends, other]]
    ctx.expect(all(a < b for a, b in itertools.pairwise(offsets)),
               "commit-log offsets increasing in send order", f"{offsets}")
    dispatched(ctx, client, topic, 1, 3)
    ctx.expect_equal(max_offset(client, topic, 1), 3, "GET_MAX_OFFSET of queue 1")


@cases.case("v1-and-v2-same", clauses=("BRK-7", "BRK-6"),
            requirement="SEND_MESSAGE (long names) and SEND_MESSAGE_V2 (a..m) store the same way on one queue")
def v1_and_v2_same(ctx: BrokerContext) -> None:
    """BRK-7: a v1 send and a v2 send to one queue answer queueOffset 0 and 1, and both messages are pulled with
    their bodies and tags."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    first = ctx.send(client, topic, b"v1-body", tags="one", v2=False)
    second = ctx.send(client, topic, b"v2-body", tags="two", v2=True)
    ctx.expect_equal((first.queue_offset, second.queue_offset), (0, 1), "queueOffsets of the v1 then v2 send")
    pulled = [(m.body, m.tags, m.queue_offset) for m in pull_all(ctx, client, topic, 0, stored=2)]
    ctx.expect_equal(pulled, [(b"v1-body", "one", 0), (b"v2-body", "two", 1)], "pulled (body, tags, queueOffset)")


# --------------------------------------------------------------------------------------------------------- batch
@cases.case("batch", clauses=("BRK-7", "BRK-6"),
            requirement="SEND_BATCH_MESSAGE stores each message in order at consecutive offsets, comma-joined msgIds")
def batch(ctx: BrokerContext) -> None:
    """BRK-7: after one single send (offset 0), a batch of three answers three comma-joined offset msgIds with
    increasing commit-log offsets and queueOffset 1 (the first message's); the pull returns the three in order at
    offsets 1, 2, 3 with their own bodies and tags."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    ctx.send(client, topic, b"single")
    entries = [(b"batch-%d" % i, requests.message_properties(tags=f"t{i}", wait_store=True)) for i in range(3)]
    answer = client.request(requests.send_batch(PRODUCER, topic, entries, 0))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"SEND_BATCH_MESSAGE {topic}:0")
    ids = (answer.field("msgId") or "").split(",")
    ctx.expect(len(ids) == 3 and all(is_offset_msg_id(i) for i in ids), "three comma-joined offset msgIds",
               repr(answer.field("msgId")))
    offsets = [decode_msg_id(i)[1] for i in ids]
    ctx.expect(offsets == sorted(set(offsets)), "commit-log offsets increasing in batch order", f"{offsets}")
    ctx.expect_equal((answer.field("queueId"), answer.field("queueOffset")), ("0", "1"), "(queueId, queueOffset)")
    pulled = [(m.body, m.tags, m.queue_offset, m.offset_msg_id)
              for m in pull_all(ctx, client, topic, 0, stored=4, offset=1)]
    expected = [(b"batch-%d" % i, f"t{i}", 1 + i, ids[i]) for i in range(3)]
    ctx.expect_equal(pulled, expected, "pulled (body, tags, queueOffset, offset msgId)")


@cases.case("batch-delay-refused", clauses=("BRK-7", "BRK-5"),
            requirement="a SEND_BATCH_MESSAGE with a delay level is refused with MESSAGE_ILLEGAL, nothing stored")
def batch_delay_refused(ctx: BrokerContext) -> None:
    """BRK-7: batches cannot be delayed: the batch header's DELAY property makes the send MESSAGE_ILLEGAL; the
    queue stays empty."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    props = requests.message_properties(extra={Property.DELAY_TIME_LEVEL: "1"})
    answer = client.request(requests.send_batch(PRODUCER, topic, [(b"a", {}), (b"b", {})], 0, props))
    ctx.expect_code(answer, ResponseCode.MESSAGE_ILLEGAL, "SEND_BATCH_MESSAGE with DELAY=1")
    ctx.expect_equal(ctx.send(client, topic, b"after").queue_offset, 0, "queueOffset of a message sent after it")


# ------------------------------------------------------------------------------------------------- msgCheck (BRK-1)
def send_code(ctx: BrokerContext, topic: str, queue_id: int = 0) -> RemotingCommand:
    return ctx.broker(0).request(requests.send_v2(PRODUCER, topic, b"x", queue_id))


@cases.case("topic-illegal-characters", clauses=("BRK-1",),
            requirement="a send to a topic with characters outside [%|a-zA-Z0-9_-] answers SYSTEM_ERROR")
def topic_illegal_characters(ctx: BrokerContext) -> None:
    """BRK-1: the name check comes before the topic lookup: an unknown topic with an illegal name is SYSTEM_ERROR,
    not created from TBW102 and not TOPIC_NOT_EXIST."""
    for bad in (ctx.name("topic") + "!", ctx.name("topic") + " x", ctx.name("topic") + ".y"):
        ctx.expect_code(send_code(ctx, bad), ResponseCode.SYSTEM_ERROR, f"SEND_MESSAGE_V2 to {bad!r}")


@cases.case("topic-too-long", clauses=("BRK-1",),
            requirement="a send to a topic longer than 127 characters answers SYSTEM_ERROR")
def topic_too_long(ctx: BrokerContext) -> None:
    """BRK-1: TopicValidator: a topic of 128 characters is refused (SYSTEM_ERROR)."""
    name = ctx.name("long")
    topic = name + "x" * (TOPIC_MAX_LENGTH + 1 - len(name))
    ctx.expect_code(send_code(ctx, topic), ResponseCode.SYSTEM_ERROR, f"SEND_MESSAGE_V2 to a {len(topic)}-char topic")


@cases.case("topic-blank", clauses=("BRK-1",),
            requirement="a send to a blank topic answers SYSTEM_ERROR")
def topic_blank(ctx: BrokerContext) -> None:
    """BRK-1: TopicValidator: a blank topic (spaces) is refused (SYSTEM_ERROR)."""
    ctx.expect_code(send_code(ctx, "   "), ResponseCode.SYSTEM_ERROR, "SEND_MESSAGE_V2 to a blank topic")


@cases.case("topic-validator-remarks", clauses=("BRK-1",), level=Level.SHOULD,
            requirement="the topic validator's remarks are 4.9.8's texts (blank, illegal characters, too long)")
def topic_validator_remarks(ctx: BrokerContext) -> None:
    """BRK-1 (4.9.8 text): TopicValidator.validateTopic's three remarks."""
    name = ctx.name("long")
    checks = [
        ("   ", "The specified topic is blank."),
        (name + "!", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
        (name + "x" * (TOPIC_MAX_LENGTH + 1 - len(name)), "The specified topic is longer than topic max length."),
    ]
    for topic, remark in checks:
        ctx.expect_equal(send_code(ctx, topic).remark, remark, f"remark for {topic!r}")


@cases.case("system-topic-forbidden", clauses=("BRK-1",),
            requirement="a send to a system topic closed to clients answers NO_PERMISSION naming the topic")
def system_topic_forbidden(ctx: BrokerContext) -> None:
    """BRK-1: TopicValidator.isNotAllowedSendTopic (SELF_TEST_TOPIC here, harmless should a target accept it):
    NO_PERMISSION "Sending message to topic[<t>] is forbidden."."""
    answer = send_code(ctx, SELF_TEST_TOPIC)
    ctx.expect_code(answer, ResponseCode.NO_PERMISSION, f"SEND_MESSAGE_V2 to {SELF_TEST_TOPIC}")
    expect_remark_names(ctx, answer, SELF_TEST_TOPIC)


# ------------------------------------------------------------------------------------------------ permissions (BRK-4)
@cases.case("write-only-topic-pull-refused", clauses=("BRK-4",),
            requirement="a pull from a topic whose perm lacks the read bit answers NO_PERMISSION naming the topic")
def write_only_topic_pull_refused(ctx: BrokerContext) -> None:
    """BRK-4: a topic created with perm W only takes a message, but PULL_MESSAGE answers NO_PERMISSION with a
    remark naming the topic."""
    client = ctx.broker(0)
    topic = ctx.topic(1, perm=PERM_WRITE, brokers=[0], wait_route=False)
    ctx.send(client, topic, b"write-only")
    answer = client.request(requests.pull(ctx.group(), topic, 0, 0))
    ctx.expect_code(answer, ResponseCode.NO_PERMISSION, f"PULL_MESSAGE from write-only {topic}")
    expect_remark_names(ctx, answer, topic)


@cases.case("read-only-topic-route", clauses=("BRK-4", "NS-2"),
            requirement="a topic without the write bit is routed with that perm, so clients do not send to it")
def read_only_topic_route(ctx: BrokerContext) -> None:
    """BRK-4, NS-2: write permission is enforced through the route: the queue data of a topic created with perm R
    carries perm R (the client's publish queues leave it out)."""
    topic = ctx.topic(2, perm=PERM_READ, brokers=[0])
    queues = queue_datas(ctx.namesrv().request(requests.route(topic)))
    perms = {name: queue.get("perm") for name, queue in queues.items()}
    ctx.expect_equal(perms, {ctx.brokers[0].name: PERM_READ}, "perm by broker in the route")


@cases.case("read-only-topic-send-stored", clauses=("BRK-4",), level=Level.SHOULD,
            requirement="4.9.8 does not check a topic's write bit on SEND_MESSAGE: a direct send is stored")
def read_only_topic_send_stored(ctx: BrokerContext) -> None:
    """BRK-4 (4.9.8 behaviour): only the route keeps clients off a read-only topic; the 4.9.8 send path
    (msgCheck) has no topic-permission check, so a send straight to the broker is stored and can be pulled."""
    client = ctx.broker(0)
    topic = ctx.topic(1, perm=PERM_READ, brokers=[0], wait_route=False)
    answer = client.request(requests.send_v2(PRODUCER, topic, b"read-only", 0))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"SEND_MESSAGE_V2 to read-only {topic}")
    ctx.expect_equal([m.body for m in pull_all(ctx, client, topic, 0, stored=1)], [b"read-only"], "pulled bodies")


# ------------------------------------------------------------------------------------------------------ sizes (BRK-5)
@cases.case("body-over-max-size", clauses=("BRK-5",),
            requirement="a message over maxMessageSize answers MESSAGE_ILLEGAL and nothing is stored")
def body_over_max_size(ctx: BrokerContext) -> None:
    """BRK-5: a body one byte over the broker's maxMessageSize (read from GET_BROKER_CONFIG) is MESSAGE_ILLEGAL;
    the queue stays empty and a normal send after it is stored at offset 0."""
    limit = ctx.setting_int("maxMessageSize")
    client = ctx.connect(ctx.brokers[0].addr, timeout=max(ctx.timeout, 15.0))
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    answer = client.request(requests.send_v2(PRODUCER, topic, b"\0" * (limit + 1), 0))
    ctx.expect_code(answer, ResponseCode.MESSAGE_ILLEGAL, f"SEND_MESSAGE_V2 of a {limit + 1}-byte body")
    ctx.expect_equal(ctx.send(client, topic, b"small").queue_offset, 0, "queueOffset of the next small message")


@cases.case("properties-over-limit", clauses=("BRK-5",),
            requirement="a message whose properties exceed 32767 bytes answers MESSAGE_ILLEGAL, nothing stored")
def properties_over_limit(ctx: BrokerContext) -> None:
    """BRK-5: the stored properties length is a 16-bit field: properties of more than 32767 bytes are refused."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    props = requests.message_properties(extra={"big": "p" * (MAX_PROPERTIES_LENGTH + 1)})
    answer = client.request(requests.send_v2(PRODUCER, topic, b"x", 0, props))
    ctx.expect_code(answer, ResponseCode.MESSAGE_ILLEGAL, "SEND_MESSAGE_V2 with 32 KiB of properties")
    ctx.expect_equal(ctx.send(client, topic, b"after").queue_offset, 0, "queueOffset of a message sent after it")


# ---------------------------------------------------------------------------------------------------- queues (BRK-3)
@cases.case("queue-id-out-of-range", clauses=("BRK-3",),
            requirement="a queueId >= max(readQueueNums, writeQueueNums) answers SYSTEM_ERROR; below it is stored")
def queue_id_out_of_range(ctx: BrokerContext) -> None:
    """BRK-3: on a topic with 4 read and 2 write queues, queueId 3 is accepted (the bound is the larger count) and
    queueId 4 answers SYSTEM_ERROR "request queueId[4] is illegal, ..."."""
    client = ctx.broker(0)
    topic = ctx.name("topic")
    ctx.target.created_topics.add(topic)
    ctx.expect_code(client.request(requests.create_topic(topic, 2, read_queues=4)), ResponseCode.SUCCESS,
                    f"UPDATE_AND_CREATE_TOPIC {topic} (4 read, 2 write)")
    ctx.expect_equal(ctx.send(client, topic, b"q3", 3).queue_id, 3, "queueId of the send to queue 3")
    answer = client.request(requests.send_v2(PRODUCER, topic, b"q4", 4))
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, "SEND_MESSAGE_V2 to queue 4")
    expect_remark_names(ctx, answer, "queueId[4]")


@cases.case("negative-queue-id", clauses=("BRK-3",),
            requirement="a negative queueId is stored on some writable queue, named in the answer")
def negative_queue_id(ctx: BrokerContext) -> None:
    """BRK-3: queueId -1 picks a writable queue: SUCCESS with 0 <= queueId < writeQueueNums, and the message is
    on that queue."""
    client = ctx.broker(0)
    topic = ctx.topic(3, brokers=[0], wait_route=False)
    answer = client.request(requests.send_v2(PRODUCER, topic, b"anywhere", -1))
    ctx.expect_code(answer, ResponseCode.SUCCESS, "SEND_MESSAGE_V2 to queue -1")
    queue_id = int(answer.require("queueId"))
    ctx.expect(0 <= queue_id < 3, "0 <= queueId < 3", f"queueId {queue_id}")
    ctx.expect_equal([m.body for m in pull_all(ctx, client, topic, queue_id, stored=1)], [b"anywhere"],
                     f"bodies pulled from queue {queue_id}")


# --------------------------------------------------------------------------------------------- auto-create (BRK-2)
@cases.case("auto-create-from-default-topic", clauses=("BRK-2", "BRK-17", "NS-1"),
            requirement="a send to a missing topic creates it from TBW102 when allowed, else TOPIC_NOT_EXIST")
def auto_create_from_default_topic(ctx: BrokerContext) -> None:
    """BRK-2: with autoCreateTopicEnable and TBW102 inheritable, a send naming defaultTopic TBW102 and
    defaultTopicQueueNums 3 creates the topic with min(3, TBW102's write queues) queues, stores the message and
    registers the topic (it gets a route); otherwise the send answers TOPIC_NOT_EXIST."""
    client = ctx.broker(0)
    topic = ctx.name("auto")
    ctx.target.created_topics.add(topic)
    configs = (requests.json_body(client.request(requests.all_topic_config())) or {}).get("topicConfigTable") or {}
    default = configs.get(AUTO_CREATE_TOPIC_KEY)
    allowed = ctx.setting_bool("autoCreateTopicEnable") and default is not None and bool(
        int(default.get("perm", 0)) & PERM_INHERIT)
    answer = client.request(with_field(requests.send_v2(PRODUCER, topic, b"auto", 0), "d", "3"))
    if not allowed:
        ctx.expect_code(answer, ResponseCode.TOPIC_NOT_EXIST, f"SEND_MESSAGE_V2 to missing {topic} (no auto-create)")
        return
    assert default is not None
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"SEND_MESSAGE_V2 to missing {topic} (auto-create)")
    created = ((requests.json_body(client.request(requests.all_topic_config())) or {}).get("topicConfigTable")
               or {}).get(topic) or {}
    queues = min(3, int(default.get("writeQueueNums", 0)))
    ctx.expect_equal((created.get("readQueueNums"), created.get("writeQueueNums")), (queues, queues),
                     f"(readQueueNums, writeQueueNums) of {topic}")
    namesrv = ctx.namesrv()
    ctx.wait_until(lambda: namesrv.request(requests.route(topic)).code == ResponseCode.SUCCESS, 10.0,
                   what=f"the name server to route the auto-created {topic}")


@cases.case("unknown-default-topic", clauses=("BRK-2",),
            requirement="a send to a missing topic whose defaultTopic does not exist answers TOPIC_NOT_EXIST")
def unknown_default_topic(ctx: BrokerContext) -> None:
    """BRK-2: nothing to inherit from: TOPIC_NOT_EXIST "topic[<t>] not exist, apply first please!", and the topic
    is not created."""
    client = ctx.broker(0)
    topic = ctx.name("noauto")
    ctx.target.created_topics.add(topic)
    request = with_field(requests.send_v2(PRODUCER, topic, b"x", 0), "c", ctx.name("nodefault"))
    answer = client.request(request)
    ctx.expect_code(answer, ResponseCode.TOPIC_NOT_EXIST, f"SEND_MESSAGE_V2 to {topic} with an unknown defaultTopic")
    ctx.expect(f"topic[{topic}] not exist, apply first please!" in (answer.remark or ""),
               f"a remark starting \"topic[{topic}] not exist, apply first please!\"", repr(answer.remark))
    configs = (requests.json_body(client.request(requests.all_topic_config())) or {}).get("topicConfigTable") or {}
    ctx.expect(topic not in configs, f"{topic} not created", "it is in GET_ALL_TOPIC_CONFIG")


# ---------------------------------------------------------------------------------------------- stored message (BRK-8)
@cases.case("properties-round-trip", clauses=("BRK-8",),
            requirement="a pulled message has the sent body, flag, bornTimestamp, reconsumeTimes and properties")
def properties_round_trip(ctx: BrokerContext) -> None:
    """BRK-8: everything the producer sent comes back: body, flag, bornTimestamp, reconsumeTimes and each property
    (TAGS, KEYS, user properties with non-ASCII text); the broker adds CLUSTER; the pulled message names its
    queueId, queueOffset, commitLogOffset, store host and offset msgId as the send answered."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    user = {"rscf-a": "1", "rscf_unicode": "h\u00e9llo \u4e16\u754c", "rscf-empty-ish": "-"}
    props = requests.message_properties(tags="TagA", keys="k1 k2", extra=user)
    born = requests.now_ms() - 12345
    answer = client.request(requests.send_v2(PRODUCER, topic, b"\x00\x01body\xff", 0, props, flag=7, born_ms=born,
                                             reconsume_times=2))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"SEND_MESSAGE_V2 {topic}")
    sent = Sent(answer.require("msgId"), int(answer.require("queueId")), int(answer.require("queueOffset")), answer)
    pulled = pull_all(ctx, client, topic, 0, stored=1)
    ctx.expect_equal(len(pulled), 1, "messages pulled")
    m = pulled[0]
    ctx.expect_equal((m.body, m.flag, m.born_timestamp, m.reconsume_times), (b"\x00\x01body\xff", 7, born, 2),
                     "(body, flag, bornTimestamp, reconsumeTimes)")
    for key, value in {Property.TAGS: "TagA", Property.KEYS: "k1 k2", **user}.items():
        ctx.expect_equal(m.properties.get(key), value, f"property {key}")
    ctx.expect(Property.CLUSTER in m.properties, "the CLUSTER property added by the broker",
               f"properties {sorted(m.properties)}")
    ctx.expect_equal((m.queue_id, m.queue_offset, m.commit_log_offset, m.offset_msg_id, m.store_host),
                     (0, sent.queue_offset, sent.commit_log_offset, sent.msg_id, ctx.brokers[0].addr),
                     "(queueId, queueOffset, commitLogOffset, offset msgId, storeHost)")


# --------------------------------------------------------------------------------------------------- tag codes (BRK-9)
@cases.case("tag-hash-codes", clauses=("BRK-9",),
            requirement="the broker filters tags by Java hashCode: tags with equal hash codes both pass")
def tag_hash_codes(ctx: BrokerContext) -> None:
    """BRK-9: "Aa" and "BB" have the same String.hashCode (2112); a pull subscribed to "Aa" returns both of them
    (the broker compares codes; the client then compares strings) and neither "Cc" nor a message without tags."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    for body, tags in ((b"aa", "Aa"), (b"cc", "Cc"), (b"bb", "BB"), (b"none", None)):
        ctx.send(client, topic, body, tags=tags)
    pulled = [(m.body, m.tags) for m in pull_all(ctx, client, topic, 0, stored=4, subscription="Aa")]
    ctx.expect_equal(pulled, [(b"aa", "Aa"), (b"bb", "BB")], "pulled (body, tags) for subscription \"Aa\"")


# ------------------------------------------------------------------------------------- broker not writable (BRK-1)
def restore_broker_setting(addr: str, timeout: float, name: str, value: str) -> RemotingCommand:
    """UPDATE_BROKER_CONFIG ``name=value`` on a connection of its own (it must work even after the case was
    stopped and its recorded connections closed)."""
    with WireClient(addr, timeout) as client:
        return client.request(requests.update_broker_config({name: value}))


@cases.case("broker-not-writable-order-topic", clauses=("BRK-1", "NS-7"),
            requirement="a broker whose brokerPermission lacks the write bit refuses sends to an order topic")
def broker_not_writable_order_topic(ctx: BrokerContext) -> None:
    """BRK-1 (first check of msgCheck): a topic is an order topic at the broker once the name server's
    ORDER_TOPIC_CONFIG KV namespace names it (the broker reads it from its registration answer, NS-7); with
    brokerPermission read-only, a send to it answers NO_PERMISSION "the broker[<ip>] sending message is forbidden".
    The case sets brokerPermission on the first master for a moment and restores the value it read (in a finally
    block, on a fresh connection), and deletes its KV entry."""
    broker = ctx.brokers[0]
    original = ctx.setting("brokerPermission")
    topic = ctx.name("order")
    ctx.target.created_topics.add(topic)
    namesrv = ctx.namesrv()
    client = ctx.broker(0)
    put = namesrv.request(requests.put_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, topic, f"{broker.name}:1"))
    ctx.expect_code(put, ResponseCode.SUCCESS, "PUT_KV_CONFIG ORDER_TOPIC_CONFIG")
    try:
        # Creating the topic makes the broker register it; the answer carries the order-topic table.
        ctx.expect_code(client.request(requests.create_topic(topic, 1)), ResponseCode.SUCCESS,
                        f"UPDATE_AND_CREATE_TOPIC {topic}")
        try:
            answer = client.request(requests.update_broker_config({"brokerPermission": str(PERM_READ)}))
            if answer.code != ResponseCode.SUCCESS:
                ctx.skip(f"the target does not take UPDATE_BROKER_CONFIG brokerPermission ({answer_text(answer)})")
            refused = client.request(requests.send_v2(PRODUCER, topic, b"order", 0))
        finally:
            restored = restore_broker_setting(broker.addr, ctx.target.timeout_s, "brokerPermission", original)
        ctx.expect_code(restored, ResponseCode.SUCCESS, f"UPDATE_BROKER_CONFIG brokerPermission={original} (restore)")
        ctx.expect_code(refused, ResponseCode.NO_PERMISSION, f"SEND_MESSAGE_V2 to order topic {topic} "
                        "on a read-only broker")
        ctx.expect("sending message is forbidden" in (refused.remark or ""),
                   "a remark \"the broker[<ip>] sending message is forbidden\"", repr(refused.remark))
    finally:
        with WireClient(ctx.target.namesrv, ctx.target.timeout_s) as cleanup:
            cleanup.request(requests.delete_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, topic))


# ------------------------------------------------------------------------------------------- compressed bodies (BRK-22)
def raw_stored(ctx: BrokerContext, client: WireClient, commit_log_offset: int) -> MessageExt:
    """The message at ``commit_log_offset`` as stored (VIEW_MESSAGE_BY_ID, the body not inflated)."""
    answer = client.request(requests.view_message(commit_log_offset))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"VIEW_MESSAGE_BY_ID {commit_log_offset}")
    message, _ = decode_stored_message(answer.body or b"", broker_name=ctx.brokers[0].name, decompress=False)
    return message


@cases.case("compressed-body-stored-as-sent", clauses=("BRK-22", "BRK-5"),
            requirement="a zlib-compressed body with sysFlag 0x301 is stored as sent, its size checks counting the "
                        "compressed bytes")
def compressed_body_stored_as_sent(ctx: BrokerContext) -> None:
    """BRK-22: a producer's compressed send (sysFlag COMPRESSED | ZLIB type, 0x301) is stored with that body and
    sysFlag unchanged (VIEW_MESSAGE_BY_ID and a pull return the deflated bytes, which inflate to the original); a
    body that inflates past maxMessageSize but is small compressed is stored (BRK-5 counts the bytes sent)."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    sys_flag = SYSFLAG_COMPRESSED | SYSFLAG_COMPRESSION_ZLIB
    original = b"compressed body " * 512
    packed = zlib.compress(original)
    sent = ctx.send(client, topic, packed, sys_flag=sys_flag)
    message = raw_stored(ctx, client, sent.commit_log_offset)
    ctx.expect_equal((message.sys_flag, message.body == packed), (sys_flag, True),
                     "(sysFlag, body is the compressed bytes sent) at VIEW_MESSAGE_BY_ID")
    ctx.expect_equal(zlib.decompress(message.body), original, "the stored body inflated")
    pulled = pull_all(ctx, client, topic, 0, stored=sent.queue_offset + 1)
    ctx.expect_equal([m.body for m in pulled], [original], "the pulled body, inflated by the reader")
    huge = zlib.compress(b"\0" * (ctx.setting_int("maxMessageSize") + 1024))
    big = client.request(requests.send_v2(PRODUCER, topic, huge, 0, sys_flag=sys_flag))
    ctx.expect_code(big, ResponseCode.SUCCESS, f"a send of {len(huge)} compressed bytes inflating past "
                    "maxMessageSize")


# ----------------------------------------------------------------------------------------------- unit mode (BRK-23)
def topic_sys_flag(ctx: BrokerContext, client: WireClient, topic: str) -> int | None:
    answer = client.request(requests.all_topic_config())
    ctx.expect_code(answer, ResponseCode.SUCCESS, "GET_ALL_TOPIC_CONFIG")
    config = ((requests.json_body(answer) or {}).get("topicConfigTable") or {}).get(topic)
    return None if config is None else int(config.get("topicSysFlag", 0))


@cases.case("unit-mode-topic-flags", clauses=("BRK-23", "BRK-2", "BRK-13"),
            requirement="a unitMode send that creates its topic flags it UNIT (UNIT_SUB for %RETRY%), a unitMode "
                        "heartbeat's retry topic UNIT_SUB; an existing topic keeps its flag")
def unit_mode_topic_flags(ctx: BrokerContext) -> None:
    """BRK-23: with autoCreateTopicEnable, a send with unitMode=true to a missing topic creates it with topicSysFlag
    UNIT (1), and one to a missing %RETRY% topic with UNIT_SUB (2); a unitMode send to an existing topic leaves its
    flag 0; a heartbeat whose consumer data has unitMode creates %RETRY%<group> with UNIT_SUB."""
    client = ctx.broker(0)
    existing = ctx.topic(1, brokers=[0], wait_route=False)
    ctx.send(client, existing, b"unit", unit_mode=True)
    ctx.expect_equal(topic_sys_flag(ctx, client, existing), 0, f"topicSysFlag of the existing {existing}")
    group = ctx.group()
    retry = RETRY_GROUP_TOPIC_PREFIX + group
    ctx.target.created_topics.add(retry)
    answer = client.request(requests.heartbeat(new_client_id(ctx, "unit"), unit_mode=True, consumer_groups={
        group: [requests.subscription_json(existing)]}))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"HEART_BEAT of a unitMode consumer of {group}")
    ctx.expect_equal(topic_sys_flag(ctx, client, retry), TOPIC_SYS_FLAG_UNIT_SUB, f"topicSysFlag of {retry}")
    if not ctx.setting_bool("autoCreateTopicEnable"):
        ctx.skip("the send-created topics need autoCreateTopicEnable (the heartbeat part passed)")
    fresh = ctx.name("unit")
    fresh_retry = RETRY_GROUP_TOPIC_PREFIX + ctx.name("unitgroup")
    for topic, flag in ((fresh, TOPIC_SYS_FLAG_UNIT), (fresh_retry, TOPIC_SYS_FLAG_UNIT_SUB)):
        ctx.target.created_topics.add(topic)
        ctx.send(client, topic, b"unit", unit_mode=True)
        ctx.expect_equal(topic_sys_flag(ctx, client, topic), flag, f"topicSysFlag of {topic}, created by the send")


# --------------------------------------------------------------------------------------------------- replies (BRK-28)
REPLY_WAIT_S = 5.0


def reply_properties(ctx: BrokerContext, client_id: str | None) -> dict[str, str]:
    extra = {Property.CORRELATION_ID: ctx.name("corr"), Property.MESSAGE_TYPE: "reply"}
    if client_id is not None:
        extra[Property.MESSAGE_REPLY_TO_CLIENT] = client_id
    return requests.message_properties(extra=extra)


@cases.case("reply-pushed-to-requester", clauses=("BRK-28", "BRK-29"),
            requirement="SEND_REPLY_MESSAGE_V2 pushes the reply to the REPLY_TO_CLIENT producer's connection and "
                        "succeeds when it answers SUCCESS")
def reply_pushed_to_requester(ctx: BrokerContext) -> None:
    """BRK-28: a producer heartbeat registers client id C on connection A (BRK-29); a reply sent on connection B
    with REPLY_TO_CLIENT=C reaches A as PUSH_REPLY_MESSAGE_TO_CLIENT with the body and properties sent; A answers
    SUCCESS, and the reply answers SUCCESS: with storeReplyMessageEnable it is stored (a queue offset, an offset
    msgId), otherwise msgId "0"."""
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    requester = ctx.broker(0)
    client_id = new_client_id(ctx, "requester")
    answer = requester.request(requests.heartbeat(client_id, producer_groups=[ctx.name("pgroup")]))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"HEART_BEAT of producer {client_id}")
    replier = ctx.broker(0)
    props = reply_properties(ctx, client_id)
    reply = requests.send_reply(PRODUCER, topic, b"the reply", 0, props)
    replier.send(reply)
    pushed = requester.wait_request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, REPLY_WAIT_S)
    ctx.expect(pushed is not None, f"PUSH_REPLY_MESSAGE_TO_CLIENT on {client_id}'s connection within "
               f"{REPLY_WAIT_S:g} s", "none came")
    assert pushed is not None
    requester.send(pushed.response(ResponseCode.SUCCESS))
    answer = replier.response_to(reply.opaque, REPLY_WAIT_S)
    pushed_props = decode_properties(pushed.field("properties") or "")
    ctx.expect_equal((pushed.body, pushed_props.get(Property.CORRELATION_ID)),
                     (b"the reply", props[Property.CORRELATION_ID]), "the pushed (body, CORRELATION_ID)")
    ctx.expect_code(answer, ResponseCode.SUCCESS, "SEND_REPLY_MESSAGE_V2 after the requester answered SUCCESS")
    if ctx.setting_bool("storeReplyMessageEnable"):
        ctx.expect(is_offset_msg_id(answer.field("msgId") or ""), "an offset msgId (the reply stored)",
                   repr(answer.field("msgId")))
    else:
        ctx.expect_equal(answer.field("msgId"), "0", "msgId (storeReplyMessageEnable=false)")


@cases.case("reply-without-requester", clauses=("BRK-28",),
            requirement="a reply without REPLY_TO_CLIENT, or to a client id no producer registered, is SYSTEM_ERROR")
def reply_without_requester(ctx: BrokerContext) -> None:
    """BRK-28: SYSTEM_ERROR "reply message properties[REPLY_TO_CLIENT] is null" without the property, and
    "push reply message fail, channel of <id> not found." for a client id the producer manager does not hold; a
    requester that answers the push with an error makes it "push reply message to <id>fail."."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0], wait_route=False)
    answer = client.request(requests.send_reply(PRODUCER, topic, b"r", 0, reply_properties(ctx, None)))
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, "SEND_REPLY_MESSAGE_V2 without REPLY_TO_CLIENT")
    ctx.expect_equal(answer.remark, "reply message properties[REPLY_TO_CLIENT] is null", "remark")
    nobody = new_client_id(ctx, "nobody")
    answer = client.request(requests.send_reply(PRODUCER, topic, b"r", 0, reply_properties(ctx, nobody)))
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, f"SEND_REPLY_MESSAGE_V2 to {nobody}")
    ctx.expect_equal(answer.remark, f"push reply message fail, channel of <{nobody}> not found.", "remark")
    requester = ctx.broker(0)
    client_id = new_client_id(ctx, "refuser")
    ctx.expect_code(requester.request(requests.heartbeat(client_id, producer_groups=[ctx.name("pgroup")])),
                    ResponseCode.SUCCESS, f"HEART_BEAT of producer {client_id}")
    reply = requests.send_reply(PRODUCER, topic, b"r", 0, reply_properties(ctx, client_id))
    client.send(reply)
    pushed = requester.wait_request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, REPLY_WAIT_S)
    ctx.expect(pushed is not None, f"PUSH_REPLY_MESSAGE_TO_CLIENT to {client_id}", "none came")
    assert pushed is not None
    requester.send(pushed.response(ResponseCode.SYSTEM_ERROR, remark="refused"))
    refused = answer_within(client, reply.opaque, REPLY_WAIT_S)
    ctx.expect(refused is not None, "an answer to the reply", "none came")
    assert refused is not None
    ctx.expect_code(refused, ResponseCode.SYSTEM_ERROR, "SEND_REPLY_MESSAGE_V2 whose push was refused")
    ctx.expect_equal(refused.remark, f"push reply message to {client_id}fail.", "remark")
