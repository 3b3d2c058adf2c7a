"""Client cases for rebalancing (REB-*): what N consumer processes of one group pull equals the oracle's allocation.

The queues a client owns are read off the wire: its PULL_MESSAGE requests, attributed to its client id by the
HEART_BEAT sent on the same connection. The id list is what the broker answers GET_CONSUMER_LIST_BY_GROUP, the list
the clients allocate by; ``rocketspec.spec.rebalance.assignment`` (AVG, the default strategy) gives each id's queues.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from rocketspec.conformance import requests
from rocketspec.conformance.client.context import ClientContext, Frame, client_case
from rocketspec.conformance.model import CaseList
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.offset_commit import pull_commit_request
from rocketspec.spec.protocol import (
    PULL_FLAG_COMMIT_OFFSET,
    ConsumeFromWhere,
    MessageModel,
    RequestCode,
    ResponseCode,
)
from rocketspec.spec.queues import MessageQueue
from rocketspec.spec.rebalance import allocate, assignment, compute_pull_from_where

cases = CaseList("client/rebalance")
CASES = cases.cases

BROKER_A = "broker-a"
QUEUES_PER_BROKER = 3
SETTLE_TIMEOUT_S = 12.0


def client_ids_by_connection(ctx: ClientContext) -> dict[int, str]:
    """Connection -> the client id its HEART_BEAT named."""
    ids: dict[int, str] = {}
    for frame in ctx.requests(RequestCode.HEART_BEAT):
        body = requests.json_body(frame.command) or {}
        if isinstance(body, dict) and body.get("clientID"):
            ids[frame.connection] = str(body["clientID"])
    return ids


def pulled_queue(frame: Frame) -> MessageQueue:
    return MessageQueue(frame.field("topic") or "", frame.node, frame.int_field("queueId"))


def pullers(ctx: ClientContext, topic: str, since: float) -> dict[MessageQueue, set[str]]:
    """For each queue of ``topic``, the client ids that sent a PULL_MESSAGE for it at or after ``since``."""
    ids = client_ids_by_connection(ctx)
    out: dict[MessageQueue, set[str]] = {}
    for frame in ctx.requests(RequestCode.PULL_MESSAGE, since=since, where=lambda f: f.field("topic") == topic):
        out.setdefault(pulled_queue(frame), set()).add(ids.get(frame.connection, f"connection {frame.connection}"))
    return out


def show(owners: dict[MessageQueue, set[str]] | dict[MessageQueue, str]) -> str:
    parts = []
    for queue in sorted(owners):
        who = owners[queue]
        names = sorted(who) if isinstance(who, set) else [who]
        parts.append(f"{queue.broker_name}:{queue.queue_id}={'+'.join(n.rsplit('@', 1)[-1] for n in names)}")
    return ", ".join(parts) or "none"


def check_allocation(ctx: ClientContext, topic: str, group: str, members: int) -> None:
    """Wait for ``members`` consumers in the broker's list; then every queue must be pulled by its AVG owner only."""
    brokers = ctx.broker_names
    ids: list[str] = []

    def listed() -> bool:
        ids[:] = ctx.consumer_ids(group, brokers[0])
        return len(ids) == members

    ctx.wait_until(listed, SETTLE_TIMEOUT_S, what=f"{members} consumers of the group registered")
    queues = [MessageQueue(topic, b, q) for b in brokers for q in range(QUEUES_PER_BROKER)]
    plan = assignment("AVG", queues, ids)
    owner = {queue: cid for cid, owned in plan.items() for queue in owned}
    # Every owner pulls each of its queues (a new pull request per queue it takes; a queue it kept has one held).
    def owners_pull() -> bool:
        seen = pullers(ctx, topic, 0.0)
        return all(owner[q] in seen.get(q, set()) for q in queues)

    if not ctx.poll(owners_pull, SETTLE_TIMEOUT_S):
        raise_mismatch(ctx, owner, pullers(ctx, topic, 0.0), "every queue pulled by its owner")
    ctx.sleep(2.0)  # the other members' rebalances drop what they no longer own
    mark = ctx.now()
    # One new message per queue: its owner's held pull returns and the owner pulls again; nobody else may.
    for queue in queues:
        ctx.put_messages(topic, queue.broker_name, queue.queue_id, 1)

    def repulled() -> bool:
        seen = pullers(ctx, topic, mark)
        return all(owner[q] in seen.get(q, set()) for q in queues)

    ctx.poll(repulled, SETTLE_TIMEOUT_S)
    ctx.sleep(1.0)
    seen = pullers(ctx, topic, mark)
    if any(seen.get(q, set()) != {owner[q]} for q in queues):
        raise_mismatch(ctx, owner, seen, "after the rebalance, each queue pulled by its AVG owner only")


def raise_mismatch(ctx: ClientContext, owner: dict[MessageQueue, str], seen: dict[MessageQueue, set[str]],
                   what: str) -> None:
    ctx.expect(False, f"{what} (REB-1, REB-3): {show(owner)}", show(seen))


def delivered_once(ctx: ClientContext) -> None:
    """Every message of the case's topic delivered to exactly one consumer, once."""
    ids = [e["msgId"] for d in ctx.drivers for e in d.of("received")]
    ctx.expect(len(ids) == len(set(ids)), "each message delivered once across the group (REB-20)",
               f"{len(ids) - len(set(ids))} duplicate deliveries")


@cases.case("avg-two-consumers", clauses=("REB-1", "REB-3", "REB-20", "REB-21"),
            requirement="two consumers of a group pull exactly the queues AVG allocates to each over the sorted ids")
@client_case()
def avg_two_consumers(ctx: ClientContext) -> None:
    """Two clustering consumers of one group on a topic with 3 queues on each of 2 brokers: each pulls exactly the
    consecutive run AVG gives its index in the sorted id list over the sorted queues (REB-1, REB-3), so every queue has
    one owner (REB-20) and the shares differ by at most one (REB-21)."""
    topic, group = ctx.topic(QUEUES_PER_BROKER), ctx.group()
    for _ in range(2):
        ctx.start("consumer", topic=topic, group=group)
    check_allocation(ctx, topic, group, 2)
    delivered_once(ctx)


@cases.case("avg-recomputed-after-leave", clauses=("REB-1", "REB-3", "REB-10", "REB-12", "REB-23"),
            requirement="when one of three consumers stops, the other two re-allocate by AVG over the ids left")
@client_case()
def avg_recomputed_after_leave(ctx: ClientContext) -> None:
    """Three consumers share the queues; one is stopped (SIGTERM: it unregisters, REB-23). The two left rebalance
    over the new id list: each pulls exactly its AVG share (REB-1, REB-3), taking up the queues it gains (REB-12)
    and leaving those it loses (REB-10)."""
    topic, group = ctx.topic(QUEUES_PER_BROKER), ctx.group()
    consumers = [ctx.start("consumer", topic=topic, group=group) for _ in range(3)]
    check_allocation(ctx, topic, group, 3)
    consumers[0].stop()
    check_allocation(ctx, topic, group, 2)


@cases.case("broadcasting-takes-every-queue", clauses=("REB-8", "OFF-9", "OFF-16"),
            requirement="every broadcasting consumer pulls every queue, committing nothing to the broker")
@client_case()
def broadcasting_takes_every_queue(ctx: ClientContext) -> None:
    """Two BROADCASTING consumers of one group: broadcasting does not allocate, each takes every queue of the route
    (REB-8). Offsets stay with the consumer (OFF-16): its pulls carry commitOffset 0 without the commit flag (OFF-9)
    and it sends no UPDATE_CONSUMER_OFFSET."""
    topic, group = ctx.topic(QUEUES_PER_BROKER), ctx.group()
    for _ in range(2):
        ctx.start("consumer", topic=topic, group=group, message_model="BROADCASTING")
    ids: list[str] = []

    def listed() -> bool:
        ids[:] = ctx.consumer_ids(group, ctx.broker_names[0])
        return len(ids) == 2

    ctx.wait_until(listed, SETTLE_TIMEOUT_S, what="2 consumers of the group registered")
    queues = [MessageQueue(topic, b, q) for b in ctx.broker_names for q in range(QUEUES_PER_BROKER)]

    def everyone_pulls_everything() -> bool:
        seen = pullers(ctx, topic, 0.0)
        return all(seen.get(q, set()) >= set(ids) for q in queues)

    if not ctx.poll(everyone_pulls_everything, SETTLE_TIMEOUT_S):
        ctx.expect(False, "every queue pulled by both consumers (REB-8)", show(pullers(ctx, topic, 0.0)))
    commit, flag = pull_commit_request(MessageModel.BROADCASTING, 0)
    pulls = ctx.requests(RequestCode.PULL_MESSAGE, where=lambda f: f.field("topic") == topic)
    wrong = [f for f in pulls if f.int_field("commitOffset") != commit
             or f.int_field("sysFlag", 0) & PULL_FLAG_COMMIT_OFFSET != flag & PULL_FLAG_COMMIT_OFFSET]
    ctx.expect(not wrong, f"every pull with commitOffset {commit} and no commit flag (OFF-9)",
               "; ".join(f"commitOffset={f.field('commitOffset')} sysFlag={f.field('sysFlag')}" for f in wrong[:3]))
    for driver in ctx.drivers:
        driver.stop()
    updates = ctx.requests(RequestCode.UPDATE_CONSUMER_OFFSET, where=lambda f: f.field("topic") == topic)
    ctx.expect(not updates, "no UPDATE_CONSUMER_OFFSET: broadcasting offsets are local (OFF-16)",
               f"{len(updates)} sent")


def not_found(topic: str) -> Callable[[RemotingCommand], RemotingCommand | None]:
    """A responder answering QUERY_CONSUMER_OFFSET for ``topic`` QUERY_NOT_FOUND: no offset stored for the group
    (what a broker answers when the queue's first message is no longer in memory)."""

    def respond(request: RemotingCommand) -> RemotingCommand | None:
        if request.ext_fields.get("topic") != topic:
            return None
        return request.response(ResponseCode.QUERY_NOT_FOUND, {},
                                remark="rocketspec conformance: no offset stored for the group")

    return respond


def start_offsets(ctx: ClientContext, topic: str, group: str, node: str, queue_id: int) -> tuple[int, int | None]:
    """What the group's client read for one queue: (stored offset, -1 for none; the max offset, None if not
    asked), from its QUERY_CONSUMER_OFFSET and GET_MAX_OFFSET answers."""
    stored, max_offset = -1, None
    mine = {f.connection for f in ctx.requests(RequestCode.HEART_BEAT)
            if group in (f.command.body or b"").decode("utf-8", "replace")}
    for frame in ctx.requests({RequestCode.QUERY_CONSUMER_OFFSET, RequestCode.GET_MAX_OFFSET}, node=node,
                              where=lambda f: f.connection in mine and f.field("topic") == topic
                              and f.int_field("queueId") == queue_id):
        answer = ctx.response_to(frame)
        if answer is None or answer.code != ResponseCode.SUCCESS:
            continue
        if frame.code == RequestCode.QUERY_CONSUMER_OFFSET:
            stored = answer.int_field("offset", -1)
        else:
            max_offset = answer.int_field("offset", 0)
    return stored, max_offset


@cases.case("consume-from-first-or-last", clauses=("REB-13", "REB-12", "OFF-13", "OFF-6"),
            requirement="a new group starts at offset 0 with CONSUME_FROM_FIRST_OFFSET, at the max offset with LAST")
@client_case()
def consume_from_first_or_last(ctx: ClientContext) -> None:
    """Messages are stored before two new groups start, one with CONSUME_FROM_FIRST_OFFSET and one with
    CONSUME_FROM_LAST_OFFSET; the broker has no offset for either (QUERY_CONSUMER_OFFSET answers QUERY_NOT_FOUND,
    which the store read gives as -1, OFF-6).
    computePullFromWhere gives 0 for FIRST and the broker's max offset (GET_MAX_OFFSET) for LAST (REB-13): each
    group's first pull of each queue is there (REB-12, OFF-13), and only the FIRST group receives the messages."""
    topic = ctx.topic(2, brokers=[BROKER_A])
    stored = {0: 3, 1: 2}
    for queue_id, count in stored.items():
        ctx.put_messages(topic, BROKER_A, queue_id, count)
    ctx.answer(BROKER_A, RequestCode.QUERY_CONSUMER_OFFSET, not_found(topic), times=1000)
    groups = {ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET: ctx.group(),
              ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET: ctx.group()}
    for where, group in groups.items():
        ctx.start("consumer", topic=topic, group=group,
                  consume_from="first" if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET else "last")

    def first_pulls(group: str) -> dict[int, Frame]:
        found: dict[int, Frame] = {}
        for frame in ctx.requests(RequestCode.PULL_MESSAGE, node=BROKER_A,
                                  where=lambda f: f.field("topic") == topic and f.field("consumerGroup") == group):
            found.setdefault(frame.int_field("queueId"), frame)
        return found

    ctx.wait_until(lambda: all(len(first_pulls(g)) == len(stored) for g in groups.values()), SETTLE_TIMEOUT_S,
                   what="both groups pulling both queues")
    for where, group in groups.items():
        for queue_id, pull in sorted(first_pulls(group).items()):
            offset, max_offset = start_offsets(ctx, topic, group, BROKER_A, queue_id)
            expected = compute_pull_from_where(where, topic, offset, max_offset)
            ctx.expect(pull.int_field("queueOffset") == expected,
                       f"{where.value}: the first pull of queue {queue_id} at {expected} (stored offset {offset}, "
                       f"max offset {max_offset}: REB-13)", f"at {pull.int_field('queueOffset')}")
    first, last = ctx.drivers
    first.require("received", sum(stored.values()), SETTLE_TIMEOUT_S, what="the FIRST group receiving every message")
    ctx.expect(not last.of("received"), "nothing delivered to the LAST group (it starts after the messages)",
               f"{len(last.of('received'))} deliveries")


@cases.case("no-id-list-changes-nothing", clauses=("REB-9", "REB-20"),
            requirement="a rebalance that cannot fetch the group's id list keeps the queues as they are")
@client_case()
def no_id_list_changes_nothing(ctx: ClientContext) -> None:
    """One consumer owns every queue. Then every GET_CONSUMER_LIST_BY_GROUP is answered SYSTEM_ERROR and a second
    consumer of the group starts: neither can fetch the id list, so their rebalances change nothing (REB-9). The
    first keeps pulling every queue, and the second takes none (each queue keeps its one owner, REB-20)."""
    topic, group = ctx.topic(QUEUES_PER_BROKER), ctx.group()
    queues = [MessageQueue(topic, b, q) for b in ctx.broker_names for q in range(QUEUES_PER_BROKER)]
    ctx.start("consumer", topic=topic, group=group)
    ctx.wait_until(lambda: len(pullers(ctx, topic, 0.0)) == len(queues), SETTLE_TIMEOUT_S,
                   what="the first consumer pulling every queue")
    [first_id] = set().union(*pullers(ctx, topic, 0.0).values()) or {"?"}
    ctx.faults.fail("*", "GET_CONSUMER_LIST_BY_GROUP", code="SYSTEM_ERROR")
    joined = ctx.now()
    ctx.start("consumer", topic=topic, group=group)
    ctx.wait_until(lambda: len(set(client_ids_by_connection(ctx).values())) >= 2, SETTLE_TIMEOUT_S,
                   what="the second consumer's HEART_BEAT")
    ctx.sleep(2.0)  # both rebalance now (the broker notifies the first; the second on start)
    failed = ctx.requests(RequestCode.GET_CONSUMER_LIST_BY_GROUP, since=joined)
    ctx.expect(bool(failed), "GET_CONSUMER_LIST_BY_GROUP tried after the second consumer started", "none")
    mark = ctx.now()
    for queue in queues:
        ctx.put_messages(topic, queue.broker_name, queue.queue_id, 1)
    ctx.poll(lambda: all(first_id in pullers(ctx, topic, mark).get(q, set()) for q in queues), SETTLE_TIMEOUT_S)
    ctx.sleep(0.5)
    seen = pullers(ctx, topic, joined)
    since_mark = pullers(ctx, topic, mark)
    owner = {q: first_id for q in queues}
    if any(seen.get(q, set()) - {first_id} for q in queues) or any(first_id not in since_mark.get(q, set())
                                                                    for q in queues):
        ctx.expect(False, f"every queue pulled by the first consumer only (REB-9): {show(owner)}",
                   show(seen))


def unlocked_queues(ctx: ClientContext, topic: str, connections: set[int]) -> set[MessageQueue]:
    """The queues of ``topic`` named in UNLOCK_BATCH_MQ requests sent on ``connections``."""
    found: set[MessageQueue] = set()
    for frame in ctx.requests(RequestCode.UNLOCK_BATCH_MQ, where=lambda f: f.connection in connections):
        body = requests.json_body(frame.command) or {}
        for mq in body.get("mqSet", []):
            if mq.get("topic") == topic:
                found.add(MessageQueue(topic, str(mq.get("brokerName")), int(mq.get("queueId", -1))))
    return found


@cases.case("orderly-removal-unlocks", clauses=("REB-14", "REB-10", "REB-12"),
            requirement="an orderly consumer giving up a queue with nothing cached releases its broker lock at once")
@client_case()
def orderly_removal_unlocks(ctx: ClientContext) -> None:
    """An orderly consumer locks and consumes every queue (REB-12); a second orderly consumer joins. The first
    drops the queues AVG now gives the second (REB-10): their ProcessQueues are idle and empty, so it takes the
    consume lock at once and releases the broker lock with a oneway UNLOCK_BATCH_MQ for each, without the 20 s
    delay kept for queues with cached messages (REB-14); it unlocks none of the queues it keeps."""
    topic, group = ctx.topic(QUEUES_PER_BROKER), ctx.group()
    queues = [MessageQueue(topic, b, q) for b in ctx.broker_names for q in range(QUEUES_PER_BROKER)]
    for queue in queues:
        ctx.put_messages(topic, queue.broker_name, queue.queue_id, 1)
    first = ctx.start("consumer", topic=topic, group=group, orderly=True, count=len(queues))
    first.require("done", 1, SETTLE_TIMEOUT_S, what="the first consumer consuming every queue")
    [first_id] = ctx.consumer_ids(group, ctx.broker_names[0]) or ["?"]
    joined = ctx.now()
    ctx.start("consumer", topic=topic, group=group, orderly=True)
    ids: list[str] = []

    def listed() -> bool:
        ids[:] = ctx.consumer_ids(group, ctx.broker_names[0])
        return len(ids) == 2

    ctx.wait_until(listed, SETTLE_TIMEOUT_S, what="the second consumer registered")
    plan = assignment("AVG", queues, ids)
    moved, kept = set(queues) - set(plan[first_id]), set(plan[first_id])
    mine = {c for c, cid in client_ids_by_connection(ctx).items() if cid == first_id}
    ctx.poll(lambda: unlocked_queues(ctx, topic, mine) >= moved, 5.0)
    unlocked = unlocked_queues(ctx, topic, mine)
    ctx.expect(unlocked >= moved and not unlocked & kept,
               f"UNLOCK_BATCH_MQ from the first consumer for {show({q: first_id for q in moved})} and none of the "
               f"queues it keeps, within 5 s of the second joining at {joined:.1f}s (REB-14)",
               show({q: first_id for q in unlocked}) or "none")


@cases.case("absent-from-id-list-takes-nothing", clauses=("REB-2", "REB-1"),
            requirement="a consumer whose id is not in the group's id list allocates itself no queue")
@client_case()
def absent_from_id_list_takes_nothing(ctx: ClientContext) -> None:
    """Every GET_CONSUMER_LIST_BY_GROUP for the group is answered with an id list naming another client only. The
    consumer's id is not in the list, so AVG gives it nothing (REB-2) and it pulls no queue of the topic."""
    topic, group = ctx.topic(QUEUES_PER_BROKER), ctx.group()
    other = "127.0.0.1@rocketspec-other"
    queues = [MessageQueue(topic, b, q) for b in ctx.broker_names for q in range(QUEUES_PER_BROKER)]
    body = json.dumps({"consumerIdList": [other]}).encode()

    def respond(request: RemotingCommand) -> RemotingCommand | None:
        if request.ext_fields.get("consumerGroup") != group:
            return None
        return request.response(ResponseCode.SUCCESS, body=body)

    for node in ctx.broker_names:
        ctx.answer(node, RequestCode.GET_CONSUMER_LIST_BY_GROUP, respond, times=1000)
    ctx.start("consumer", topic=topic, group=group)
    ctx.wait_requests(RequestCode.GET_CONSUMER_LIST_BY_GROUP, 1, SETTLE_TIMEOUT_S,
                      what="the consumer asking for the group's id list")
    ctx.sleep(2.0)
    [mine] = set(client_ids_by_connection(ctx).values()) or {"?"}
    owned = set(allocate("AVG", mine, queues, [other]))
    pulls = pullers(ctx, topic, 0.0)
    ctx.expect(set(pulls) <= owned, f"pulls of the queues AVG gives {mine} for the id list [{other}] only: "
                                    f"{show({q: mine for q in owned}) or 'none'} (REB-2)", show(pulls))
