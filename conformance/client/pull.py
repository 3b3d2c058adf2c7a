"""Client cases for pull corrections (PULL-*): where a push consumer pulls next after each kind of answer.

The broker answers the consumer's first pull of the case's queue with a crafted response (a code and a
nextBeginOffset the queue would not give by itself); the next PULL_MESSAGE of that queue shows what the client did.
``rocketspec.spec.pull_correction.pull_status`` and ``client_reaction`` say what it must do. The tag cases (FILTER-*)
compare what the broker returned to the pulls with what the client delivered (``rocketspec.spec.message_filter``).
"""

from __future__ import annotations

from collections.abc import Callable

from rocketspec.conformance import requests
from rocketspec.conformance.client.context import ClientContext, Frame, client_case
from rocketspec.conformance.model import CaseList, Level
from rocketspec.refimpl.message import MessageExt, decode_stored_messages
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.java import string_hash as java_string_hash
from rocketspec.spec.message_filter import client_tag_matches, is_tag_type, subscription_tags
from rocketspec.spec.offset_commit import pull_commit_request
from rocketspec.spec.protocol import PULL_FLAG_COMMIT_OFFSET, MessageModel, RequestCode, ResponseCode
from rocketspec.spec.pull_correction import client_reaction, pull_status

cases = CaseList("client/pull")
CASES = cases.cases

BROKER_A = "broker-a"
MESSAGES = 5
WAIT_S = 8.0


def crafted(topic: str, code: ResponseCode, next_begin: int) -> Callable[[RemotingCommand], RemotingCommand | None]:
    """A responder answering the first pull of ``topic`` queue 0 with ``code`` and ``next_begin``."""

    def respond(request: RemotingCommand) -> RemotingCommand | None:
        if request.ext_fields.get("topic") != topic or request.ext_fields.get("queueId") != "0":
            return None
        fields = {"nextBeginOffset": next_begin, "minOffset": 0, "maxOffset": MESSAGES, "suggestWhichBrokerId": 0}
        return request.response(code, fields, remark="rocketspec conformance: crafted pull answer")

    return respond


def queue_pulls(ctx: ClientContext, topic: str) -> list[Frame]:
    return ctx.requests(RequestCode.PULL_MESSAGE, node=BROKER_A,
                        where=lambda f: f.field("topic") == topic and f.int_field("queueId") == 0)


def describe(pulls: list[Frame]) -> str:
    return ", ".join(f"offset {f.int_field('queueOffset')} commit {f.int_field('commitOffset')} "
                     f"flag {f.int_field('sysFlag', 0)}@{f.at_s:.2f}s" for f in pulls) or "none"


def start_consumer(ctx: ClientContext, code: ResponseCode, next_begin: int, *,
                   start_offset: int | None = None) -> tuple[str, str]:
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    ctx.put_messages(topic, BROKER_A, 0, MESSAGES)
    if start_offset is not None:
        answer = ctx.suite_client(BROKER_A).request(requests.update_consumer_offset(group, topic, 0, start_offset))
        ctx.expect(answer.code == ResponseCode.SUCCESS, "the set-up UPDATE_CONSUMER_OFFSET answered SUCCESS",
                   str(answer.code))
    ctx.answer(BROKER_A, RequestCode.PULL_MESSAGE, crafted(topic, code, next_begin))
    ctx.start("consumer", topic=topic, group=group)
    return topic, group


def next_pull_case(ctx: ClientContext, code: ResponseCode, next_begin: int) -> None:
    topic, _ = start_consumer(ctx, code, next_begin)
    pulls = ctx.wait_requests(RequestCode.PULL_MESSAGE, 2, WAIT_S, what="a pull after the crafted answer",
                              node=BROKER_A, where=lambda f: f.field("topic") == topic and f.int_field("queueId") == 0)
    first, second = pulls[0], pulls[1]
    reaction = client_reaction(pull_status(code), next_begin, True, request_offset=first.int_field("queueOffset"))
    ctx.expect(second.int_field("queueOffset") == reaction.next_offset,
               f"the pull after {code.name} (nextBeginOffset {next_begin}) at offset {reaction.next_offset} "
               "(PULL-19, PULL-21)", describe(pulls[:2]))
    if reaction.update is not None:
        # The process queue was empty: the memory offset took nextBeginOffset, which the next pull commits.
        commit, flag = pull_commit_request(MessageModel.CLUSTERING, reaction.update.offset)
        ctx.expect(second.int_field("commitOffset") == commit and bool(second.int_field("sysFlag", 0) & flag
                                                                       & PULL_FLAG_COMMIT_OFFSET),
                   f"that pull commits {commit} (the memory offset took nextBeginOffset: OFF-14, OFF-9)",
                   describe(pulls[:2]))


@cases.case("not-found-next-offset", clauses=("PULL-19", "PULL-21", "OFF-14", "OFF-9"),
            requirement="after PULL_NOT_FOUND the consumer pulls at nextBeginOffset and takes it as its offset")
@client_case()
def not_found_next_offset(ctx: ClientContext) -> None:
    """The first pull is answered PULL_NOT_FOUND with nextBeginOffset 3: NO_NEW_MSG (PULL-19), so the next pull is
    at 3 and, the process queue being empty, the memory offset becomes 3 (PULL-21, OFF-14), committed by that pull
    (OFF-9)."""
    next_pull_case(ctx, ResponseCode.PULL_NOT_FOUND, 3)


@cases.case("retry-immediately-next-offset", clauses=("PULL-19", "PULL-21", "OFF-14"),
            requirement="after PULL_RETRY_IMMEDIATELY the consumer pulls again at once at nextBeginOffset")
@client_case()
def retry_immediately_next_offset(ctx: ClientContext) -> None:
    """The first pull is answered PULL_RETRY_IMMEDIATELY with nextBeginOffset 2: NO_MATCHED_MSG (PULL-19), so the
    next pull is at 2, committing 2 (PULL-21, OFF-14)."""
    next_pull_case(ctx, ResponseCode.PULL_RETRY_IMMEDIATELY, 2)


@cases.case("offset-moved-drops-queue", clauses=("PULL-19", "PULL-22"),
            requirement="after PULL_OFFSET_MOVED the consumer stops pulling the queue and stores nextBeginOffset",
            level=Level.SHOULD)
@client_case()
def offset_moved_drops_queue(ctx: ClientContext) -> None:
    """The first pull is answered PULL_OFFSET_MOVED with nextBeginOffset 4: OFFSET_ILLEGAL (PULL-19). The process
    queue is dropped at once and the request never pulled again; 10 s later the offset store takes 4 (not
    increase-only) and persists it: a oneway UPDATE_CONSUMER_OFFSET of 4 (PULL-22)."""
    next_begin = 4
    topic, _ = start_consumer(ctx, ResponseCode.PULL_OFFSET_MOVED, next_begin)
    first = ctx.wait_requests(RequestCode.PULL_MESSAGE, 1, WAIT_S, what="the consumer's first pull", node=BROKER_A,
                              where=lambda f: f.field("topic") == topic and f.int_field("queueId") == 0)[0]
    reaction = client_reaction(pull_status(ResponseCode.PULL_OFFSET_MOVED), next_begin, True,
                               request_offset=first.int_field("queueOffset"))
    assert reaction.fix is not None
    fixed = reaction.fix.offset
    updates = ctx.wait_requests(
        RequestCode.UPDATE_CONSUMER_OFFSET, 1, 14.0, what=f"UPDATE_CONSUMER_OFFSET of {fixed} after the drop (PULL-22)",
        node=BROKER_A, where=lambda f: f.field("topic") == topic and f.int_field("commitOffset") == fixed)
    pulls = queue_pulls(ctx, topic)
    again = [p for p in pulls[1:] if p.at_s < updates[0].at_s]
    ctx.expect(not again, "no pull of the dropped queue before the fix is stored (PULL-22)", describe(pulls))


@cases.case("error-keeps-offset", clauses=("PULL-19", "PULL-23"),
            requirement="after a pull error the consumer pulls the same offset again (later)")
@client_case()
def error_keeps_offset(ctx: ClientContext) -> None:
    """The group's stored offset is 2; the first pull (at 2) is answered SYSTEM_ERROR, which no PullStatus maps
    (PULL-19): the request keeps its offset and is pulled again after pullTimeDelayMillsWhenException (PULL-23)."""
    topic, _ = start_consumer(ctx, ResponseCode.SYSTEM_ERROR, 4, start_offset=2)
    pulls = ctx.wait_requests(RequestCode.PULL_MESSAGE, 2, WAIT_S, what="a pull after the error", node=BROKER_A,
                              where=lambda f: f.field("topic") == topic and f.int_field("queueId") == 0)
    first, second = pulls[0], pulls[1]
    reaction = client_reaction(pull_status(ResponseCode.SYSTEM_ERROR), 4, True,
                               request_offset=first.int_field("queueOffset"))
    ctx.expect(first.int_field("queueOffset") == 2, "the first pull at the stored offset 2 (OFF-13)", describe(pulls))
    ctx.expect(second.int_field("queueOffset") == reaction.next_offset,
               f"the pull after the error again at {reaction.next_offset} (PULL-23)", describe(pulls[:2]))


# ------------------------------------------------------------------------------------------------ tag filtering


def pulled_messages(ctx: ClientContext, topic: str) -> list[MessageExt]:
    """The messages the broker returned to the consumer's pulls of ``topic`` (queue 0 on broker-a), by offset."""
    found: dict[int, MessageExt] = {}
    for pull in queue_pulls(ctx, topic):
        answer = ctx.response_to(pull)
        if answer is None or answer.code != ResponseCode.SUCCESS or not answer.command.body:
            continue
        for message in decode_stored_messages(answer.command.body, BROKER_A):
            found.setdefault(message.queue_offset, message)
    return [found[k] for k in sorted(found)]


def filter_case(ctx: ClientContext, subscription: str, tags: list[str]) -> tuple[str, list[MessageExt]]:
    """Store one message per tag, start a consumer subscribed to ``subscription``; once every message the client
    must keep (FILTER-3) is delivered and a pull came back empty-handed after them, check the deliveries are exactly
    those. Returns the topic and what the broker returned."""
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    for tag in tags:
        ctx.put_messages(topic, BROKER_A, 0, 1, tags=tag)
    consumer = ctx.start("consumer", topic=topic, group=group, subscription=subscription)
    # The pull after the last message: everything the broker returns has been handed to the client.
    ctx.wait_requests(RequestCode.PULL_MESSAGE, 1, WAIT_S, what=f"a pull past offset {len(tags) - 1}",
                      node=BROKER_A, where=lambda f: f.field("topic") == topic
                      and f.int_field("queueOffset") >= len(tags))
    pulled = pulled_messages(ctx, topic)
    kept = [m.queue_offset for m in pulled if client_tag_matches(subscription, m.tags)]
    if kept:
        consumer.require("received", len(kept), WAIT_S, what="the messages the subscription keeps delivered")
    ctx.sleep(0.5)
    delivered = sorted(int(e.get("queueOffset", -1)) for e in consumer.of("received"))
    shown = {m.queue_offset: m.tags for m in pulled}
    ctx.expect(delivered == kept, f"delivered: the offsets {kept} whose tags are in the subscription "
                                  f"{subscription!r} (FILTER-3); the broker returned {shown}",
               f"offsets {delivered}")
    return topic, pulled


@cases.case("tag-hash-collision-dropped", clauses=("FILTER-3", "PULL-20"),
            requirement="a message whose tag only shares the hash code of a subscribed tag is not delivered")
@client_case()
def tag_hash_collision_dropped(ctx: ClientContext) -> None:
    """The consumer subscribes to "Aa"; messages are tagged "Aa", "BB" (the same String.hashCode) and "Cc". The
    broker filters by tag code, so it returns both "Aa" and "BB"; the client re-filters the pulled messages by the
    tag strings (PULL-20) and delivers "Aa" only (FILTER-3)."""
    subscription, tags = "Aa", ["Aa", "BB", "Cc", "Aa"]
    _, pulled = filter_case(ctx, subscription, tags)
    collided = [m for m in pulled if m.tags != subscription]
    if not collided:
        ctx.skip("the broker did not return the colliding tag \"BB\": nothing for the client to filter")


@cases.case("subscription-tags-in-heartbeat", clauses=("FILTER-1", "FILTER-3", "FILTER-4"),
            requirement="a subscription 'a || b' is sent as the trimmed tag set [a, b] with their hash codes")
@client_case()
def subscription_tags_in_heartbeat(ctx: ClientContext) -> None:
    """The consumer subscribes to "a || b": the expression splits on "||" and each piece is trimmed (FILTER-1), so
    the subscription data of its HEART_BEAT carries expression type TAG (FILTER-4), tagsSet {a, b} and codeSet
    their String.hashCode values; of
    messages tagged a, b and c it delivers a and b (FILTER-3)."""
    subscription = "a || b"
    topic, _ = filter_case(ctx, subscription, ["a", "b", "c"])
    wanted = subscription_tags(subscription)
    datas = [d for f in ctx.requests(RequestCode.HEART_BEAT)
             for c in (requests.json_body(f.command) or {}).get("consumerDataSet", [])
             for d in c.get("subscriptionDataSet", []) if d.get("topic") == topic]
    ctx.expect(bool(datas), f"a HEART_BEAT with subscription data for {topic}", "none seen")
    expected = (sorted(wanted), sorted(java_string_hash(t) for t in wanted))
    for data in datas:
        ctx.expect(is_tag_type(data.get("expressionType")), "a tag expression type (FILTER-4)",
                   str(data.get("expressionType")))
        actual = (sorted(str(t) for t in data.get("tagsSet", [])), sorted(int(c) for c in data.get("codeSet", [])))
        ctx.expect(actual == expected, f"tagsSet {expected[0]} and codeSet {expected[1]} (FILTER-1)",
                   f"tagsSet {actual[0]} codeSet {actual[1]}")
