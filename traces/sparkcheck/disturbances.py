"""Disturbances and shared queues: the causes that allow a duplicate (duplicates_allowed) or an offset regression
(offset_no_regression), as the terms of :mod:`rocketspec.traces.invariants` define them.

A disturbance of group G in (a, b) is a row with a < seq < b of one of the causes: ``rebalance`` (a
rebalance.assign of G whose queue set differs from the node's previous one for the topic), ``client`` (a
client.lifecycle of G), ``offset_illegal`` (a client-side pull.response of G with status OFFSET_ILLEGAL),
``reset`` (an offset.reset of G: an administrator set its offset) — the
:data:`GROUP_CAUSES` — and ``broker_restart``, ``fault``, ``deletion``, which disturb every group of the trace (the
:data:`GLOBAL_CAUSES`). :func:`with_last_disturbances` gives each row the seq of the last disturbance of each cause
before it; :func:`with_shared_queue` sets the cause ``shared_queue`` where the row's queue is a shared queue of its
group at its seq (clauses OFF-17, REB-20, REB-10, REB-23 through the two invariants that use them).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from rocketspec.traces import invariants as inv
from rocketspec.traces.sparkcheck.columns import _U, STOPPED
from rocketspec.traces.sparkcheck.context import CheckContext

GROUP_CAUSES = inv.GROUP_CAUSES  # disturbances of one group
GLOBAL_CAUSES = ("broker_restart", "fault", "deletion")  # disturbances of every group of the trace
DISTURBANCES = tuple(c for c in inv.CAUSES if c not in ("stored_twice", inv.SHARED_QUEUE))


def group_disturbances(ctx: CheckContext) -> DataFrame:
    """(trace_id, group, seq, _cause) of the disturbances of one group: rebalance, client, offset_illegal, reset."""

    def build() -> DataFrame:
        assign = ctx.kind("rebalance.assign").select(
            "trace_id", "group", "node", "topic", "seq", F.array_sort(F.array_distinct("queues")).alias("qs"))
        w = Window.partitionBy("trace_id", "group", "node", "topic").orderBy("seq")
        rebalance = (assign.withColumn("prev", F.lag("qs").over(w))
                     .where(F.col("prev").isNull() | (F.col("prev") != F.col("qs")))
                     .select("trace_id", "group", "seq", F.lit("rebalance").alias("_cause")))
        client = ctx.kind("client.lifecycle").select("trace_id", "group", "seq", F.lit("client").alias("_cause"))
        illegal = (ctx.kind("pull.response")
                   .where((F.col("node") != F.col("broker")) & (F.col("status") == "OFFSET_ILLEGAL"))
                   .select("trace_id", "group", "seq", F.lit("offset_illegal").alias("_cause")))
        reset = ctx.kind("offset.reset").select("trace_id", "group", "seq", F.lit("reset").alias("_cause"))
        return rebalance.unionByName(client).unionByName(illegal).unionByName(reset)

    return ctx.shared("group_disturbances", build)


def global_disturbances(ctx: CheckContext) -> DataFrame:
    """(trace_id, seq, _cause) of the disturbances of every group: broker_restart, fault, deletion."""
    labels = F.when(F.col("kind") == "broker.restart", F.lit("broker_restart")).when(
        F.col("kind") == "fault.inject", F.lit("fault")).otherwise(F.lit("deletion"))
    return ctx.shared("global_disturbances", lambda: ctx.kind("broker.restart", "fault.inject", "store.delete")
                      .select("trace_id", "seq", labels.alias("_cause")))


def with_last_disturbances(ctx: CheckContext, q: DataFrame) -> DataFrame:
    """``q`` (with trace_id, group, seq) plus ``_L_<cause>``: the seq of the last disturbance of that cause of
    the row's group before the row (null: none). A disturbance lies in (a, seq) exactly when ``_L_c > a``."""
    cols = q.columns
    out = q
    if ctx.has("rebalance.assign", "client.lifecycle", "pull.response", "offset.reset"):
        u = out.withColumn("_cause", F.lit(None).cast("string")).unionByName(
            group_disturbances(ctx), allowMissingColumns=True)
        w = Window.partitionBy("trace_id", "group").orderBy("seq").rowsBetween(_U, Window.currentRow)
        out = u.select(*cols, "_cause", *[F.max(F.when(F.col("_cause") == c, F.col("seq"))).over(w)
                                          .alias(f"_L_{c}") for c in GROUP_CAUSES])
        out = out.where(F.col("_cause").isNull()).drop("_cause")
    else:
        out = out.select(*cols, *[F.lit(None).cast("bigint").alias(f"_L_{c}") for c in GROUP_CAUSES])
    cols = out.columns
    if ctx.has("broker.restart", "fault.inject", "store.delete"):
        u = out.withColumn("_cause", F.lit(None).cast("string")).unionByName(
            global_disturbances(ctx), allowMissingColumns=True)
        w = Window.partitionBy("trace_id").orderBy("seq").rowsBetween(_U, Window.currentRow)
        out = u.select(*cols, "_cause", *[F.max(F.when(F.col("_cause") == c, F.col("seq"))).over(w)
                                          .alias(f"_L_{c}") for c in GLOBAL_CAUSES])
        out = out.where(F.col("_cause").isNull()).drop("_cause")
    else:
        out = out.select(*cols, *[F.lit(None).cast("bigint").alias(f"_L_{c}") for c in GLOBAL_CAUSES])
    return out


def with_shared_queue(ctx: CheckContext, out: DataFrame) -> DataFrame:
    """``out`` (rows with trace_id, seq, group, topic, broker, queue_id and ``_cause``) with ``_cause`` set to
    shared_queue where it is null and the row's queue is a shared queue of its group at its seq: two or more
    nodes of the group, live (last client.lifecycle of the group before the row not shutdown or crash), list
    the queue in their latest rebalance.assign of the topic before the row."""
    out = ctx.persist(out)
    candidates = out.where(F.col("_cause").isNull()).select("trace_id", "seq", "group", "topic", "broker",
                                                             "queue_id")
    if not ctx.has("rebalance.assign") or not candidates.take(1):
        return out
    candidates = ctx.persist(candidates)
    where = candidates.select("trace_id", "group", "topic").distinct()
    assigns = (ctx.kind("rebalance.assign").join(F.broadcast(where), ["trace_id", "group", "topic"], "left_semi")
               .select("trace_id", "group", "topic", "node", "seq", "queues", F.lit(None).cast("string")
                       .alias("action")))
    # A node's lifecycle rows of the group count for every topic it has an assignment of.
    topics = assigns.select("trace_id", "group", "node", "topic").distinct()
    lifecycles = (ctx.kind("client.lifecycle").select("trace_id", "group", "node", "seq", "action")
                  .join(topics, ["trace_id", "group", "node"])
                  .select("trace_id", "group", "topic", "node", "seq", F.lit(None).cast("array<string>")
                          .alias("queues"), "action"))
    # The state after each of the node's rows holds until its next row: (seq, next seq) with its latest queues
    # and whether its latest lifecycle leaves it live.
    w = Window.partitionBy("trace_id", "group", "topic", "node").orderBy("seq")
    upto = w.rowsBetween(_U, Window.currentRow)
    states = (assigns.unionByName(lifecycles)
              .select("trace_id", "group", "topic", "node", F.col("seq").alias("lo"),
                      F.lead("seq").over(w).alias("hi"),
                      F.last("queues", ignorenulls=True).over(upto).alias("owned"),
                      F.last("action", ignorenulls=True).over(upto).alias("last_action"))
              .where(F.col("owned").isNotNull()
                     & (F.col("last_action").isNull() | ~F.col("last_action").isin(list(STOPPED))))
              .select("trace_id", "group", "topic", "node", "lo", "hi", F.explode(F.array_distinct("owned"))
                      .alias("queue")))
    keyed = candidates.withColumn("queue", F.concat_ws(":", "broker", F.col("queue_id").cast("string")))
    shared = (keyed.join(states, ["trace_id", "group", "topic", "queue"])
              .where((F.col("lo") < F.col("seq")) & (F.col("hi").isNull() | (F.col("seq") < F.col("hi"))))
              .groupBy("trace_id", "seq").agg(F.countDistinct("node").alias("_owners"))
              .where(F.col("_owners") >= 2).select("trace_id", "seq", F.lit(True).alias("_shared")))
    return (out.join(shared, ["trace_id", "seq"], "left")
            .withColumn("_cause", F.coalesce("_cause", F.when(F.col("_shared"), F.lit(inv.SHARED_QUEUE))))
            .drop("_shared"))
