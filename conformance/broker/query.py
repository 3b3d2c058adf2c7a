"""Broker conformance cases: query by key (QUERY_MESSAGE) and by offset id (VIEW_MESSAGE_BY_ID).

QUERY_MESSAGE (``QueryMessageProcessor.queryMessage``, BRK-12) asks the broker's index for the messages of a topic
whose KEYS (each space-separated key) or UNIQ_KEY equal the key, stored within [beginTimestamp, endTimestamp], at
most maxNum of them; SUCCESS with the stored messages as the body, QUERY_NOT_FOUND when there are none.
VIEW_MESSAGE_BY_ID answers the message stored at a commit-log offset (the one an offset message id carries), and
SYSTEM_ERROR when no message is there.

The real broker builds its index asynchronously (the reput thread), so a case waits, bounded, for the messages it
sent to be found before judging the answer.
"""

from __future__ import annotations

import attrs

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import FAR_COMMIT_LOG_OFFSET, unique_key
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.model import CaseList, Level
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.message import MessageExt
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import UNIQUE_MSG_QUERY_FLAG, Property, ResponseCode

cases = CaseList("broker/query")
CASES = cases.cases

# How long the real broker's index may take to show a message it stored.
INDEX_WAIT_S = 5.0


def _query(ctx: BrokerContext, client: WireClient, command: RemotingCommand) -> tuple[RemotingCommand,
                                                                                      list[MessageExt]]:
    answer = client.request(command)
    return answer, ctx.messages(answer) if answer.code == ResponseCode.SUCCESS else []


def _wait_found(ctx: BrokerContext, client: WireClient, topic: str, key: str, count: int) -> list[MessageExt]:
    """Query until the index answers ``count`` messages for the key (it is written asynchronously)."""

    def found() -> list[MessageExt] | None:
        _, messages = _query(ctx, client, requests.query_message(topic, key))
        return messages if len(messages) >= count else None

    return ctx.wait_until(found, INDEX_WAIT_S, what=f"QUERY_MESSAGE {topic} key {key} to find {count} message(s)")


def _bodies(messages: list[MessageExt]) -> list[bytes]:
    return sorted(m.body for m in messages)


def _keyed(ctx: BrokerContext, queues: int, count: int) -> tuple[WireClient, str, str]:
    """A new topic on the first master with ``count`` messages carrying one new key (bodies keyed-0, keyed-1, ...,
    spread over its ``queues`` queues), waited for in the index; (connection, topic, key)."""
    client = ctx.broker(0)
    topic = ctx.topic(queues, brokers=[0])
    key = ctx.name("key")
    for i in range(count):
        ctx.send(client, topic, b"keyed-%d" % i, i % queues, keys=key)
    _wait_found(ctx, client, topic, key, count)
    return client, topic, key


@cases.case("query-by-key-found", clauses=("BRK-12",),
            requirement="QUERY_MESSAGE answers every message of the topic carrying the key, and only those")
def query_by_key_found(ctx: BrokerContext) -> None:
    """BRK-12: three messages with the key (on two queues) are found; a message with another key is not."""
    client, topic, key = _keyed(ctx, 2, 3)
    ctx.send(client, topic, b"other", 0, keys=key + "x")
    answer, messages = _query(ctx, client, requests.query_message(topic, key))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"QUERY_MESSAGE {topic} key {key}")
    ctx.expect_equal(_bodies(messages), [b"keyed-0", b"keyed-1", b"keyed-2"], "bodies of the messages found")
    ctx.expect(all(m.topic == topic and key in m.keys for m in messages), f"every message of {topic} with KEYS {key}",
               repr([(m.topic, m.keys) for m in messages]))


@cases.case("query-by-key-max-num", clauses=("BRK-12",),
            requirement="QUERY_MESSAGE answers at most maxNum messages")
def query_by_key_max_num(ctx: BrokerContext) -> None:
    client, topic, key = _keyed(ctx, 1, 3)
    answer, messages = _query(ctx, client, requests.query_message(topic, key, max_num=2))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"QUERY_MESSAGE {topic} key {key} maxNum 2")
    ctx.expect_equal(len(messages), 2, "messages answered for maxNum 2 (3 carry the key)")
    ctx.expect(all(key in m.keys for m in messages), f"messages with KEYS {key}", repr([m.keys for m in messages]))


@cases.case("query-by-key-not-found", clauses=("BRK-12",),
            requirement="QUERY_MESSAGE for a key no message carries answers QUERY_NOT_FOUND")
def query_by_key_not_found(ctx: BrokerContext) -> None:
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0])
    ctx.send(client, topic, b"keyed", 0, keys=ctx.name("key"))
    answer = client.request(requests.query_message(topic, ctx.name("absent")))
    ctx.expect_code(answer, ResponseCode.QUERY_NOT_FOUND, f"QUERY_MESSAGE {topic} for an unused key")
    ctx.expect(not answer.body, "no body", f"a body of {len(answer.body or b'')} bytes")


@cases.case("query-not-found-remark", clauses=("BRK-12",), level=Level.SHOULD,
            requirement="QUERY_NOT_FOUND carries the remark 'can not find message, maybe time range not correct'")
def query_not_found_remark(ctx: BrokerContext) -> None:
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0])
    answer = client.request(requests.query_message(topic, ctx.name("absent")))
    ctx.expect_code(answer, ResponseCode.QUERY_NOT_FOUND, f"QUERY_MESSAGE {topic} for an unused key")
    ctx.expect_equal(answer.remark, "can not find message, maybe time range not correct", "remark")


@cases.case("query-by-key-time-range", clauses=("BRK-12",),
            requirement="QUERY_MESSAGE finds nothing when [beginTimestamp, endTimestamp] excludes the store times")
def query_by_key_time_range(ctx: BrokerContext) -> None:
    client, topic, key = _keyed(ctx, 1, 1)
    stored = _wait_found(ctx, client, topic, key, 1)[0].store_timestamp
    answer = client.request(requests.query_message(topic, key, begin_ms=stored - 3_600_000,
                                                   end_ms=stored - 1_800_000))
    ctx.expect_code(answer, ResponseCode.QUERY_NOT_FOUND, "QUERY_MESSAGE over a range ending 30 min before the store")
    answer = client.request(requests.query_message(topic, key, begin_ms=stored + 1_800_000,
                                                   end_ms=stored + 3_600_000))
    ctx.expect_code(answer, ResponseCode.QUERY_NOT_FOUND, "QUERY_MESSAGE over a range starting 30 min after it")


@cases.case("query-by-key-topic-scoped", clauses=("BRK-12",),
            requirement="QUERY_MESSAGE answers only the queried topic's messages carrying the key")
def query_by_key_topic_scoped(ctx: BrokerContext) -> None:
    client = ctx.broker(0)
    topic, other = ctx.topic(1, brokers=[0]), ctx.topic(1, brokers=[0])
    key = ctx.name("key")
    ctx.send(client, other, b"in-other", 0, keys=key)
    ctx.send(client, topic, b"in-topic", 0, keys=key)
    _wait_found(ctx, client, other, key, 1)
    messages = _wait_found(ctx, client, topic, key, 1)
    ctx.expect_equal([(m.topic, m.body) for m in messages], [(topic, b"in-topic")], f"messages found in {topic}")


@cases.case("query-by-one-of-several-keys", clauses=("BRK-12",),
            requirement="a message whose KEYS holds several space-separated keys is found by each of them")
def query_by_one_of_several_keys(ctx: BrokerContext) -> None:
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0])
    first, second = ctx.name("key"), ctx.name("key")
    ctx.send(client, topic, b"two-keys", 0, keys=f"{first} {second}")
    for key in (second, first):
        messages = _wait_found(ctx, client, topic, key, 1)
        ctx.expect_equal(_bodies(messages), [b"two-keys"], f"bodies found by key {key}")


@cases.case("query-by-unique-key", clauses=("BRK-12",),
            requirement="QUERY_MESSAGE with the unique-key flag finds a message by its UNIQ_KEY")
def query_by_unique_key(ctx: BrokerContext) -> None:
    """BRK-12: the index also holds each message's UNIQ_KEY (the client message id), which is how a Java client's
    viewMessage(topic, msgId) finds a message (``_UNIQUE_KEY_QUERY`` = true, maxNum replaced by 32)."""
    client = ctx.broker(0)
    topic = ctx.topic(1, brokers=[0])
    uniq = unique_key()
    ctx.send(client, topic, b"unique", 0,
             properties=requests.message_properties(extra={Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: uniq}))
    def found() -> list[MessageExt] | None:
        command = requests.query_message(topic, uniq, max_num=1)
        command = attrs.evolve(command, ext_fields={**command.ext_fields, UNIQUE_MSG_QUERY_FLAG: "true"})
        return _query(ctx, client, command)[1] or None

    messages = ctx.wait_until(found, INDEX_WAIT_S, what=f"QUERY_MESSAGE {topic} by unique key {uniq}")
    ctx.expect_equal([(m.body, m.msg_id) for m in messages], [(b"unique", uniq)], "(body, msgId) found")


@cases.case("view-by-id-found", clauses=("BRK-12",),
            requirement="VIEW_MESSAGE_BY_ID at a message's commit-log offset answers that message")
def view_by_id_found(ctx: BrokerContext) -> None:
    client = ctx.broker(0)
    topic = ctx.topic(2, brokers=[0])
    sent = ctx.send(client, topic, b"viewed", 1, tags="TagV", keys=ctx.name("key"))
    answer = client.request(requests.view_message(sent.commit_log_offset))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"VIEW_MESSAGE_BY_ID {sent.commit_log_offset}")
    messages = ctx.messages(answer)
    ctx.expect_equal([(m.topic, m.queue_id, m.queue_offset, m.body, m.tags, m.offset_msg_id) for m in messages],
                     [(topic, 1, sent.queue_offset, b"viewed", "TagV", sent.msg_id)],
                     "(topic, queueId, queueOffset, body, tags, offset msgId) viewed")


@cases.case("view-by-id-nothing-there", clauses=("BRK-12",),
            requirement="VIEW_MESSAGE_BY_ID at an offset where no message is stored answers SYSTEM_ERROR")
def view_by_id_nothing_there(ctx: BrokerContext) -> None:
    client = ctx.broker(0)
    answer = client.request(requests.view_message(FAR_COMMIT_LOG_OFFSET))
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, f"VIEW_MESSAGE_BY_ID {FAR_COMMIT_LOG_OFFSET} (past the log)")
    ctx.expect(not answer.body, "no body", f"a body of {len(answer.body or b'')} bytes")


@cases.case("view-by-id-nothing-remark", clauses=("BRK-12",), level=Level.SHOULD,
            requirement="VIEW_MESSAGE_BY_ID with no message there says 'can not find message by the offset, N'")
def view_by_id_nothing_remark(ctx: BrokerContext) -> None:
    answer = ctx.broker(0).request(requests.view_message(FAR_COMMIT_LOG_OFFSET))
    ctx.expect_equal(answer.remark, f"can not find message by the offset, {FAR_COMMIT_LOG_OFFSET}", "remark")
