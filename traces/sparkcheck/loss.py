"""no_lost_message (OFF-17, OFF-19, RETRY-7, TXN-8): no acknowledged message is lost.

(a) In every trace that records the broker's puts, a send acknowledged with SEND_OK in a user topic (not a half
message) has a store.put in that topic (or, in a trace cut before settling, in SCHEDULE_TOPIC_XXXX). (b) In a
SETTLED trace, each user-topic copy due to a live clustering group (the group pulled its queue from at or before
the copy's offset and its subscription selects the copy's tags) is delivered to it (a success, or dead-lettered)
unless a store.delete of its queue passed it. ``invariants.BY_NAME["no_lost_message"].rule`` is the exact rule.
"""

from __future__ import annotations

from pyspark.sql import functions as F

from rocketspec.spec.protocol import SCHEDULE_TOPIC
from rocketspec.traces import invariants as inv
from rocketspec.traces import schema
from rocketspec.traces.report import InvariantResult
from rocketspec.traces.sparkcheck.columns import DLQ, QUEUE, STOPPED, _success, tag_matches, user_topic
from rocketspec.traces.sparkcheck.context import CheckContext


def no_lost_message(ctx: CheckContext) -> InvariantResult:
    """no_lost_message (OFF-17, OFF-19, RETRY-7, TXN-8): (a) every acknowledged send is stored in its topic, (b)
    in a SETTLED trace every copy due to a live clustering group is delivered to it or exempt by a deletion; traces
    not judged are counted (part_a_skipped_no_puts, part_b_skipped_unsettled), exempt copies too (exempt_deleted)."""
    name = "no_lost_message"
    settled = (ctx.kind("trace.end").where(F.col("status") == schema.SETTLED).select("trace_id").distinct())
    settled = ctx.persist(settled)
    n_settled = settled.count()
    n_traces = ctx.traces
    counts = {inv.SKIPPED: n_traces - n_settled} if n_traces > n_settled else {}
    # (a) acknowledged sends stored, in every trace that records puts (settled or cut: a put comes before the
    # answer that acknowledges it)
    all_puts = ctx.kind("store.put")
    recorded = F.broadcast(all_puts.select("trace_id").distinct())
    halves = ctx.kind("txn.half").select("trace_id", "msg_id").distinct()
    acked = ctx.persist(ctx.kind("send.result")
                        .where((F.col("status") == "SEND_OK") & user_topic(F.col("topic")))
                        .join(halves, ["trace_id", "msg_id"], "left_anti"))
    n_unjudged = acked.join(recorded, "trace_id", "left_anti").select("trace_id").distinct().count()
    if n_unjudged:
        counts[inv.PART_A_SKIPPED] = n_unjudged
    judged = acked.join(recorded, "trace_id", "left_semi").count()
    # A delayed message reaches its topic when its level is due: in a trace cut before that, its put in the
    # schedule topic is all there is.
    parked_unsettled = (all_puts.where(F.col("topic") == SCHEDULE_TOPIC).select("trace_id", "msg_id").distinct()
                        .join(F.broadcast(settled), "trace_id", "left_anti"))
    acked = (acked.join(recorded, "trace_id", "left_semi")
             .join(all_puts.select("trace_id", "msg_id", "topic"), ["trace_id", "msg_id", "topic"], "left_anti")
             .join(parked_unsettled, ["trace_id", "msg_id"], "left_anti")
             .select("trace_id", "seq", F.lit("acknowledged (SEND_OK) but never stored in its topic")
                     .alias("reason"), "node", "topic", "broker", "queue_id", "msg_id"))
    if not n_settled:
        return ctx.result(name, acked, counts, judged=judged)
    b_settled = F.broadcast(settled)
    puts = all_puts.join(b_settled, "trace_id", "left_semi")
    # (b) every due copy delivered to each live clustering group: due to G when G pulled the queue from at or
    # before the copy's offset and G's latest subscription expression of the topic selects the copy's tags.
    assign = ctx.clustering(ctx.kind("rebalance.assign").join(b_settled, "trace_id", "left_semi"))
    requests = ctx.clustering(ctx.kind("pull.request").join(b_settled, "trace_id", "left_semi"))
    positions = requests.groupBy(*QUEUE, "group").agg(F.min("offset").alias("lowest_pull"))
    expressions = assign.groupBy("trace_id", "group", "topic").agg(
        F.max_by("expression", "seq").alias("expression"))
    lifecycle = (ctx.kind("client.lifecycle").groupBy("trace_id", "node", "group")
                 .agg(F.max_by("action", "seq").alias("last_action")))
    live = (assign.select("trace_id", "group", "node").unionByName(requests.select("trace_id", "group", "node"))
            .distinct()
            .join(lifecycle, ["trace_id", "node", "group"], "left")
            .where(F.col("last_action").isNull() | ~F.col("last_action").isin(list(STOPPED)))
            .select("trace_id", "group").distinct())
    copies = (puts.where(user_topic(F.col("topic")))
              .select("trace_id", "seq", "topic", "broker", "queue_id", "offset", "msg_id", "tags"))
    due = (copies.join(positions, list(QUEUE)).where(F.col("lowest_pull") <= F.col("offset"))
           .join(expressions, ["trace_id", "group", "topic"], "left")
           .where(tag_matches(F.col("expression"), F.col("tags")))
           .select("trace_id", "seq", "topic", "broker", "queue_id", "offset", "msg_id", "group")
           .join(F.broadcast(live), ["trace_id", "group"], "left_semi"))
    due = ctx.persist(due)
    judged += due.count()
    successes = (ctx.kind("consume.result").where(_success(F.col("status")))
                 .select("trace_id", "group", "msg_id").distinct())
    dead = (puts.where(F.col("topic").startswith(DLQ))
            .select("trace_id", F.expr(f"substring(topic, {len(DLQ) + 1})").alias("group"), "msg_id"))
    deleted = ctx.kind("store.delete").groupBy(*QUEUE).agg(F.max("offset").alias("deleted_below"))
    undelivered = (due.join(successes, ["trace_id", "group", "msg_id"], "left_anti")
                   .join(dead, ["trace_id", "group", "msg_id"], "left_anti")
                   .join(deleted, list(QUEUE), "left"))
    undelivered = ctx.persist(undelivered)
    exempt = F.col("deleted_below").isNotNull() & (F.col("deleted_below") > F.col("offset"))
    n_exempt = undelivered.where(exempt).count()
    if n_exempt:
        counts[inv.EXEMPT_DELETED] = n_exempt
    lost = (undelivered.where(~exempt)
            .select("trace_id", "seq", F.concat(F.lit("copy never delivered to group "), F.col("group"))
                    .alias("reason"), "group", "topic", "broker", "queue_id", "offset", "msg_id"))
    return ctx.result(name, acked.unionByName(lost, allowMissingColumns=True), counts, judged=judged)
