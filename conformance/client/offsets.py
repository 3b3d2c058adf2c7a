"""Client cases for consumer offsets (OFF-*): commits never pass unconsumed messages; offsets persisted on shutdown.

A commit is what the client tells a broker: a oneway UPDATE_CONSUMER_OFFSET, or a pull's commitOffset with the
commit flag. Bounds come from ``rocketspec.spec.offset_commit``: the offset a consume result may write
(``concurrent_consume_result``), what a pull may carry (``pull_commit_request``) and what a persist sends
(``remote_persist_all``).
"""

from __future__ import annotations

from rocketspec.conformance.client.context import ClientContext, Frame, client_case
from rocketspec.conformance.client.rebalance import client_ids_by_connection
from rocketspec.conformance.model import CaseList
from rocketspec.spec.offset_commit import (
    NO_OFFSET,
    ProcessQueueState,
    concurrent_consume_result,
    orderly_commit,
    pull_commit_request,
    remote_persist_all,
    take_messages,
)
from rocketspec.spec.protocol import PULL_FLAG_COMMIT_OFFSET, MessageModel, RequestCode
from rocketspec.spec.queues import MessageQueue
from rocketspec.spec.rebalance import assignment

cases = CaseList("client/offsets")
CASES = cases.cases

BROKER_A = "broker-a"
WAIT_S = 12.0


def commits(ctx: ClientContext, topic: str, queue_id: int, node: str) -> list[tuple[Frame, int]]:
    """Every commit the client sent for one queue: (frame, offset) of UPDATE_CONSUMER_OFFSET requests and of pulls
    with the commit flag."""
    out: list[tuple[Frame, int]] = []
    for frame in ctx.requests({RequestCode.UPDATE_CONSUMER_OFFSET, RequestCode.PULL_MESSAGE}, node=node,
                              where=lambda f: f.field("topic") == topic and f.int_field("queueId") == queue_id):
        if frame.code == RequestCode.PULL_MESSAGE:
            if frame.int_field("sysFlag", 0) & PULL_FLAG_COMMIT_OFFSET:
                out.append((frame, frame.int_field("commitOffset")))
        else:
            out.append((frame, frame.int_field("commitOffset")))
    return out


def show(found: list[tuple[Frame, int]]) -> str:
    return ", ".join(f"{f.command.code_name()} {offset}@{f.at_s:.2f}s" for f, offset in found) or "none"


@cases.case("persist-on-shutdown", clauses=("REB-23", "OFF-11", "OFF-17"),
            requirement="a consumer stopped cleanly persists the offset of everything it consumed, then unregisters")
@client_case()
def persist_on_shutdown(ctx: ClientContext) -> None:
    """Three messages in each of two queues, consumed successfully; the consumer is stopped at once (before its
    periodic persist). Its shutdown persists every held queue's offset (REB-23, OFF-11: oneway UPDATE_CONSUMER_OFFSET
    of the memory entry, here 3) and then unregisters; the broker then holds 3 for both queues, never more (OFF-17)."""
    per_queue = 3
    topic, group = ctx.topic(2, brokers=[BROKER_A]), ctx.group()
    for queue_id in range(2):
        ctx.put_messages(topic, BROKER_A, queue_id, per_queue)
    consumer = ctx.start("consumer", topic=topic, group=group, count=2 * per_queue)
    consumer.require("done", 1, WAIT_S, what="the consumer to receive the 6 messages")
    ctx.sleep(0.3)  # the listener returns after it reported the last delivery
    stopped_at = ctx.now()
    consumer.stop()
    # What persistAll must send: each held queue's memory entry, here every message consumed.
    _, expected = remote_persist_all((per_queue, per_queue), (True, True))
    for queue_id, offset in expected:
        stored = ctx.stored_offset(group, topic, BROKER_A, queue_id)
        found = commits(ctx, topic, queue_id, BROKER_A)
        ctx.expect(stored == offset, f"queue {queue_id}: offset {offset} persisted by the shutdown (REB-23, OFF-11)",
                   f"broker holds {stored}; commits: {show(found)}")
        ctx.expect(all(value <= per_queue for _, value in found), f"queue {queue_id}: no commit past {per_queue}",
                   show(found))
    unregister = ctx.requests(RequestCode.UNREGISTER_CLIENT, node=BROKER_A, since=stopped_at,
                              where=lambda f: f.field("consumerGroup") == group)
    ctx.expect(bool(unregister), "UNREGISTER_CLIENT for the group on shutdown (REB-23)", "none")
    # On the connection to broker-a, the persisted offsets come before the unregistration.
    last_commit = max((f.at_s for q in range(2) for f, _ in commits(ctx, topic, q, BROKER_A)), default=0.0)
    ctx.expect(last_commit <= unregister[0].at_s, "offsets persisted before unregistering (REB-23)",
               f"last commit at {last_commit:.3f}s, UNREGISTER_CLIENT at {unregister[0].at_s:.3f}s")


@cases.case("failed-send-back-holds-offset", clauses=("OFF-4", "OFF-9", "OFF-17", "OFF-18", "RETRY-17"),
            requirement="a message whose send-back and fallback failed stays unhandled: no commit passes it")
@client_case()
def failed_send_back_holds_offset(ctx: ClientContext) -> None:
    """The listener answers RECONSUME_LATER; every CONSUMER_SEND_MSG_BACK and every send (the %RETRY% fallback)
    fails. The messages stay in the process queue and are consumed again locally 5 s later (RETRY-17, OFF-4), so
    the offset written stays at the first of them (OFF-18): no UPDATE_CONSUMER_OFFSET or pull commitOffset (OFF-9)
    passes offset 0, also not the one the shutdown persists (OFF-17)."""
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    ctx.put_messages(topic, BROKER_A, 0, 2)
    ctx.faults.fail("*", "CONSUMER_SEND_MSG_BACK", code="SYSTEM_ERROR")
    ctx.faults.fail("*", "SEND_MESSAGE", code="SYSTEM_ERROR")
    consumer = ctx.start("consumer", topic=topic, group=group, consume_result="later")
    # Each message delivered, failed, and delivered again by the local retry (reconsumeTimes one more).
    consumer.require("received", 4, WAIT_S, what="both messages delivered again after the failed send-backs")
    redelivered = {int(e.get("queueOffset", -1)) for e in consumer.of("received")
                   if int(e.get("reconsumeTimes", 0)) >= 1}
    ctx.expect(redelivered == {0, 1}, "both messages (offsets 0 and 1) delivered again with reconsumeTimes 1 "
               "(RETRY-17)", str([(e.get("queueOffset"), e.get("reconsumeTimes")) for e in consumer.of("received")]))
    consumer.stop()
    # The oracle: both cached, the batch [0] failed its send-back: the offset written stays at 0.
    pq = ProcessQueueState(cached=(0, 1), queue_offset_max=1, consuming=True)
    pq, bound, _ = concurrent_consume_result(pq, (0,), (True,), MessageModel.CLUSTERING)
    _, bound_1, _ = concurrent_consume_result(pq, (1,), (True,), MessageModel.CLUSTERING)
    bound = max(bound, bound_1, 0) if bound != NO_OFFSET else 0
    found = commits(ctx, topic, 0, BROKER_A)
    ctx.expect(all(value <= bound for _, value in found), f"no commit past offset {bound} (OFF-4, OFF-18)",
               show(found))
    _, flag = pull_commit_request(MessageModel.CLUSTERING, bound)
    pulls_with_commit = [f for f, _ in found if f.code == RequestCode.PULL_MESSAGE]
    ctx.expect(bool(flag & PULL_FLAG_COMMIT_OFFSET) or not pulls_with_commit,
               f"no pull carries the commit flag for a memory offset of {bound} (OFF-9)", show(found))
    stored = ctx.stored_offset(group, topic, BROKER_A, 0)
    ctx.expect(stored <= bound, f"the broker's offset at most {bound} after the shutdown (OFF-17)", str(stored))


@cases.case("persist-on-queue-removal", clauses=("REB-10", "OFF-12", "OFF-13", "PULL-24", "OFF-19"),
            requirement="a queue leaving a consumer has its offset persisted; the consumer taking it resumes there")
@client_case()
def persist_on_queue_removal(ctx: ClientContext) -> None:
    """One consumer consumes the 2 messages of each of 6 queues; a second consumer of the group joins. The first
    drops the queues AVG now gives the second, persisting each one's offset (2) as it goes (REB-10, OFF-12); the
    second reads the stored offset and starts pulling each queue it gains exactly there (OFF-13, PULL-24), so nothing
    is consumed twice or skipped (OFF-19).

    Whether the second consumer reads a queue's offset before or after the first persists it is a race in RocketMQ
    too (both rebalance when the second registers); the case delays the brokers' answers to QUERY_CONSUMER_OFFSET by
    1 s once the first consumer holds every queue, so the persist comes first."""
    per_queue, queues_per_broker = 2, 3
    topic, group = ctx.topic(queues_per_broker), ctx.group()
    queues = [MessageQueue(topic, b, q) for b in ctx.broker_names for q in range(queues_per_broker)]
    for queue in queues:
        ctx.put_messages(topic, queue.broker_name, queue.queue_id, per_queue)
    first = ctx.start("consumer", topic=topic, group=group, count=per_queue * len(queues))
    first.require("done", 1, WAIT_S, what="the first consumer to receive every message")
    ctx.sleep(0.3)
    [first_id] = ctx.consumer_ids(group, ctx.broker_names[0]) or ["?"]
    for broker in ctx.broker_names:
        ctx.faults.delay(broker, "QUERY_CONSUMER_OFFSET", ms=1000)
    ctx.start("consumer", topic=topic, group=group)
    ids: list[str] = []

    def joined() -> bool:
        ids[:] = ctx.consumer_ids(group, ctx.broker_names[0])
        return len(ids) == 2

    ctx.wait_until(joined, WAIT_S, what="the second consumer registered")
    [second_id] = [i for i in ids if i != first_id] or ["?"]
    moved = assignment("AVG", queues, ids)[second_id]

    def first_pull(queue: MessageQueue, client: str) -> Frame | None:
        conns = {c for c, cid in client_ids_by_connection(ctx).items() if cid == client}
        pulls = ctx.requests(RequestCode.PULL_MESSAGE, node=queue.broker_name,
                             where=lambda f: f.connection in conns and f.field("topic") == topic
                             and f.int_field("queueId") == queue.queue_id)
        return pulls[0] if pulls else None

    ctx.wait_until(lambda: all(first_pull(q, second_id) for q in moved), WAIT_S,
                   what="the second consumer pulling the queues it gains")
    first_conns = {c for c, cid in client_ids_by_connection(ctx).items() if cid == first_id}

    def persists(queue: MessageQueue) -> list[Frame]:
        return [f for f in ctx.requests(RequestCode.UPDATE_CONSUMER_OFFSET, node=queue.broker_name)
                if f.connection in first_conns and f.field("topic") == topic
                and f.int_field("queueId") == queue.queue_id]

    # A oneway persist can reach the broker after the second consumer's pull on a loaded machine: a bounded wait.
    ctx.poll(lambda: all(persists(q) for q in moved) or None, 5.0, 0.2)
    for queue in moved:
        persisted = persists(queue)
        ctx.expect(any(f.int_field("commitOffset") == per_queue for f in persisted),
                   f"{queue.broker_name}:{queue.queue_id}: the leaving consumer persists offset {per_queue} "
                   "(REB-10, OFF-12)", show([(f, f.int_field("commitOffset")) for f in persisted]))
        pull = first_pull(queue, second_id)
        assert pull is not None
        ctx.expect(pull.int_field("queueOffset") == per_queue,
                   f"{queue.broker_name}:{queue.queue_id}: the second consumer's first pull at the stored offset "
                   f"{per_queue} (OFF-13, PULL-24)", f"queueOffset {pull.int_field('queueOffset')}")
    received = [e["msgId"] for d in ctx.drivers for e in d.of("received")]
    ctx.expect(len(received) == len(set(received)) == per_queue * len(queues),
               f"each of the {per_queue * len(queues)} messages delivered once (OFF-19)",
               f"{len(received)} deliveries of {len(set(received))} messages")


@cases.case("orderly-commit-persisted", clauses=("OFF-15", "OFF-11", "OFF-17", "REB-23"),
            requirement="an orderly consumer's offset after consuming a queue is the last consumed offset + 1")
@client_case()
def orderly_commit_persisted(ctx: ClientContext) -> None:
    """An orderly consumer consumes the 3 messages of a queue, one batch at a time (consumeMessageBatchMaxSize 1):
    each commit forgets the taken messages and writes the largest taken offset + 1 (OFF-15); its clean shutdown
    persists that (OFF-11, REB-23), so the broker holds 3, and no commit ever passes it (OFF-17)."""
    count = 3
    topic, group = ctx.topic(1, brokers=[BROKER_A]), ctx.group()
    ctx.put_messages(topic, BROKER_A, 0, count)
    consumer = ctx.start("consumer", topic=topic, group=group, orderly=True, count=count)
    consumer.require("done", 1, WAIT_S, what="the orderly consumer to receive the 3 messages")
    ctx.sleep(0.3)  # the listener returns after it reported the last delivery
    consumer.stop()
    pq = ProcessQueueState(cached=tuple(range(count)), queue_offset_max=count - 1, consuming=True)
    written = NO_OFFSET
    while pq.cached:
        pq, _ = take_messages(pq, 1)
        pq, written = orderly_commit(pq)
    found = commits(ctx, topic, 0, BROKER_A)
    ctx.expect(all(value <= written for _, value in found), f"no commit past {written} (OFF-17)", show(found))
    stored = ctx.stored_offset(group, topic, BROKER_A, 0)
    ctx.expect(stored == written, f"the broker holds {written} after the shutdown (OFF-15, OFF-11)",
               f"{stored}; commits: {show(found)}")
