"""transaction (TXN-3, TXN-9, TXN-11, TXN-22, TXN-23, TXN-25): half messages resolved at most once; rolled back
never delivered; checks within the max.

Per msg_id with a txn.half row: (a) at most one broker-side resolution (COMMITTED or ROLLED_BACK), unless producers
sent more than one deciding END_TRANSACTION or the trace duplicated requests (counted under TXN-11); (b) a message
rolled back and never committed has no user-topic store.put and no consume.deliver; (c) txn.check rows within
max(check_max, 1) and none after the same broker's discard. ``invariants.BY_NAME["transaction"].rule`` is the exact
rule.
"""

from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from rocketspec.traces import invariants as inv
from rocketspec.traces.report import InvariantResult
from rocketspec.traces.sparkcheck.columns import _U, user_topic
from rocketspec.traces.sparkcheck.context import CheckContext


def transaction(ctx: CheckContext) -> InvariantResult:
    """transaction (TXN-3, TXN-9, TXN-11, TXN-22, TXN-23, TXN-25): (a) a half message resolved twice without an
    allowing cause, (b) a rolled-back message stored in a user topic or delivered, (c) a check past the max or after
    its broker's discard is a violation; allowed second resolutions are counted (TXN-11)."""
    name = "transaction"
    if not ctx.has("txn.half"):
        return ctx.result(name, None, {}, 0, judged=0)
    halves = ctx.persist(ctx.kind("txn.half").select("trace_id", "msg_id").distinct())
    judged = halves.count() + (ctx.kind("txn.check").where(F.col("action") == "check")
                               .join(F.broadcast(halves), ["trace_id", "msg_id"], "left_semi").count())
    halves = F.broadcast(halves)
    resolving = F.col("result").isin(inv.TXN_COMMITTED, inv.TXN_ROLLED_BACK)
    ends = (ctx.kind("txn.end").where(F.col("result").isNotNull()).join(halves, ["trace_id", "msg_id"],
                                                                        "left_semi")
            .groupBy("trace_id", "msg_id")
            .agg(F.sum(resolving.cast("int")).alias("resolved"),
                 F.max((F.col("result") == inv.TXN_COMMITTED).cast("int")).alias("committed"),
                 F.max((F.col("result") == inv.TXN_ROLLED_BACK).cast("int")).alias("rolled_back"),
                 F.try_element_at(F.array_sort(F.collect_list(F.when(resolving, F.col("seq")))), F.lit(2))
                 .alias("seq")))
    ends = ctx.persist(ends)
    # (a) a second resolution is allowed when producers sent more than one deciding END_TRANSACTION, or when the
    # trace duplicated requests (TXN-11/25)
    deciding = (ctx.kind("txn.end").where(F.col("result").isNull()
                                          & F.col("state").isin("COMMIT_MESSAGE", "ROLLBACK_MESSAGE"))
                .groupBy("trace_id", "msg_id").agg(F.count("*").alias("decided")))
    duplicated = (ctx.kind("fault.inject").where(F.col("action") == inv.DUPLICATE_FAULT).select("trace_id")
                  .distinct().withColumn("duplicated", F.lit(True)))
    again = (ends.where(F.col("resolved") > 1).join(deciding, ["trace_id", "msg_id"], "left")
             .join(F.broadcast(duplicated), "trace_id", "left")
             .withColumn("allowed", (F.coalesce("decided", F.lit(0)) > 1)
                         | F.coalesce("duplicated", F.lit(False))))
    again = ctx.persist(again)
    counts: dict[str, int] = {}
    allowed = again.where("allowed").count()
    if allowed:
        counts[inv.TXN_ALLOWED] = allowed
    twice = again.where(~F.col("allowed")).select(
        "trace_id", "seq", "msg_id", F.format_string(
            "half message resolved %d times with at most one deciding END_TRANSACTION and no duplicated request",
            "resolved").alias("reason"))
    # (b) rolled back, never committed: no user-topic copy and no delivery
    rolled = ends.where((F.col("rolled_back") == 1) & (F.col("committed") == 0)).select("trace_id", "msg_id")
    leaked = (ctx.kind("store.put", "consume.deliver")
              .where((F.col("kind") == "consume.deliver") | user_topic(F.col("topic")))
              .join(F.broadcast(rolled), ["trace_id", "msg_id"], "left_semi")
              .select("trace_id", "seq", "msg_id", "kind", "node", "topic", F.concat(
                  F.lit("rolled-back message: "), F.col("kind"), F.lit(" exists")).alias("reason")))
    # (c) checks within the max, none after a discard
    w = Window.partitionBy("trace_id", "msg_id", "node").orderBy("seq").rowsBetween(_U, -1)  # per broker
    checks = (ctx.kind("txn.check").join(halves, ["trace_id", "msg_id"], "left_semi")
              .withColumn("discarded_at", F.min(F.when(F.col("action") == "discard", F.col("seq"))).over(w))
              .where(F.col("action") == "check"))
    most = F.greatest(F.coalesce("check_max", F.lit(inv.DEFAULT_CHECK_MAX)), F.lit(1))
    bad_checks = checks.where((F.col("check_times") > most) | F.col("discarded_at").isNotNull()).select(
        "trace_id", "seq", "msg_id", "node", "check_times", "check_max", F.when(
            F.col("discarded_at").isNotNull(),
            F.format_string("check after this broker's discard at seq %d", "discarded_at")).otherwise(
            F.format_string("check_times %d > max(check_max, 1) = %d", "check_times", most)).alias("reason"))
    rows = twice.unionByName(leaked, allowMissingColumns=True).unionByName(bad_checks, allowMissingColumns=True)
    return ctx.result(name, ctx.persist(rows), counts, judged=judged)
