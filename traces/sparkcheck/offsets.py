"""The committed-offset invariants of a clustering group's queue (the broker's offset.commit rows).

* offset_no_regression (OFF-8, OFF-12, PULL-22, REB-10, REB-23): a commit lower than the key's previous one is a
  regression, allowed when the group was disturbed since the offset was last below it
  (:mod:`rocketspec.traces.sparkcheck.disturbances`) or its queue is shared; counted per cause, else a violation.
* offset_not_past_unconsumed (OFF-3, OFF-15, OFF-17, OFF-18): no commit between an offset's first delivery and its
  completion passes it, unless a store.delete of the queue, an OFFSET_ILLEGAL pull answer or an offset.reset of
  the key past it came in between.

``invariants.BY_NAME[name].rule`` is each exact rule.
"""

from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from rocketspec.traces import invariants as inv
from rocketspec.traces.report import InvariantResult
from rocketspec.traces.sparkcheck.columns import _F, _U, KEY, QUEUE, _first_cause, _success
from rocketspec.traces.sparkcheck.context import CheckContext
from rocketspec.traces.sparkcheck.disturbances import DISTURBANCES, with_last_disturbances, with_shared_queue


def offset_no_regression(ctx: CheckContext) -> InvariantResult:
    """offset_no_regression (OFF-8, OFF-12, PULL-22, REB-10, REB-23): a commit below the key's previous commit is
    allowed by a disturbance of the group since the key's offset was last lower than it, or by a shared queue (counted
    per cause); otherwise it is a violation."""
    name = "offset_no_regression"
    key = list(KEY)
    commits = ctx.clustering(ctx.kind("offset.commit")).select(*key, "seq", "offset", "node")
    # Some commit lies between s (the latest earlier commit with an offset <= this one) and this one exactly
    # when the previous commit of the key is higher.
    commits = commits.withColumn("previous", F.lag("offset").over(Window.partitionBy(*key).orderBy("seq")))
    commits = ctx.persist(commits)
    regressed = commits.where(F.col("offset") < F.col("previous"))
    if not regressed.take(1):
        return ctx.result(name, None, {}, 0)
    # Only keys with a regression need their epochs: everything below runs on those keys' commits.
    sub = commits.join(F.broadcast(regressed.select(*key).distinct()), key, "left_semi")
    sub = with_last_disturbances(ctx, sub).repartition(*key)
    for c in DISTURBANCES:
        # Commits after the last c-disturbance before this one: those with seq in (_L_c, seq). The latest commit
        # with an offset strictly lower than this one (s') lies there exactly when their minimum offset is lower.
        epoch = Window.partitionBy(*key, f"_L_{c}").orderBy("seq").rowsBetween(_U, -1)
        sub = sub.withColumn(f"_M_{c}", F.min("offset").over(epoch))
    sub = sub.where(F.col("offset") < F.col("previous"))
    flags = [(c, (F.col(f"_L_{c}") > 0) & (F.col(f"_M_{c}").isNull() | (F.col(f"_M_{c}") >= F.col("offset"))))
             for c in DISTURBANCES]
    out = sub.select(
        *key, "seq", "offset", "previous", "node", _first_cause(flags).alias("_cause"),
        F.format_string("committed offset %d after %d with no disturbance of the group since the offset was last "
                        "below it and its queue not shared", "offset", "previous").alias("reason"))
    return ctx.classified(name, with_shared_queue(ctx, out))


def offset_not_past_unconsumed(ctx: CheckContext) -> InvariantResult:
    """offset_not_past_unconsumed (OFF-3, OFF-15, OFF-17, OFF-18): per key and delivered offset x, a commit of the
    key after x's first delivery d and before its first completion c with an offset above x is a violation, unless a
    store.delete of the queue past x, a client-side OFFSET_ILLEGAL of the group for the queue or an offset.reset of
    the key past x came after d."""
    name = "offset_not_past_unconsumed"
    key = list(KEY)
    commits = ctx.clustering(ctx.kind("offset.commit")).select(*key, F.col("seq").alias("t"),
                                                                  F.col("offset").alias("o"))
    commits = ctx.persist(commits)
    stats = ctx.persist(commits.groupBy(*key).agg(F.count("*").alias("n"), F.min("t").alias("t0"),
                                                  F.max("t").alias("t1")))
    if not ctx.has("consume.deliver"):
        return ctx.result(name, None, {}, 0, judged=0)
    # d: first delivery of (key, x); c: first completion after d (a success for x in the queue, or a sendback;
    # for a delivery derived from the wire, only a sendback: it is not judged without one).
    deliver = F.col("kind") == "consume.deliver"
    events = (ctx.clustering(ctx.kind("consume.deliver", "consume.result"))
              .where(deliver | _success(F.col("status")))
              .groupBy(*key, F.col("offset").alias("x"))
              .agg(F.min(F.when(deliver, F.col("seq"))).alias("d"),
                   F.min_by(F.when(deliver, F.col("msg_id")), F.when(deliver, F.col("seq"))).alias("msg_id"),
                   F.min_by(F.when(deliver, F.col("derived").isNotNull()), F.when(deliver, F.col("seq")))
                   .alias("derived"),
                   F.collect_list(F.when(F.col("kind") == "consume.result", F.col("seq"))).alias("done"))
              .where(F.col("d").isNotNull())
              .withColumn("c", F.when(~F.col("derived"), F.array_min(F.filter("done", lambda s: s > F.col("d")))))
              .drop("done"))
    sendbacks = (ctx.kind("sendback").where(F.col("via").isin(sorted(inv.SENT_BACK_VIAS)))
                 .select("trace_id", "group", "msg_id", F.col("seq").alias("sb")))
    if ctx.has("sendback"):
        first_sb = (events.select("trace_id", "group", "msg_id", "x", "topic", "broker", "queue_id", "d")
                    .join(sendbacks, ["trace_id", "group", "msg_id"])
                    .where(F.col("sb") > F.col("d")).groupBy(*key, "x").agg(F.min("sb").alias("sb")))
        events = events.join(first_sb, [*key, "x"], "left").withColumn("c", F.least("c", "sb")).drop("sb")
    events = ctx.persist(events.where(~F.col("derived") | F.col("c").isNotNull()))
    judged = events.count()
    if not stats.take(1):
        return ctx.result(name, None, {}, 0, judged=judged)
    events = events.join(F.broadcast(stats), key)  # keys without commits cannot violate
    # The first OFFSET_ILLEGAL of the group for the queue after d exempts every later commit: the interval ends.
    illegal = (ctx.kind("pull.response")
               .where((F.col("node") != F.col("broker")) & (F.col("status") == "OFFSET_ILLEGAL"))
               .select(*key, "seq"))
    if ctx.has("pull.response"):
        u = (events.withColumn("seq", F.col("d")).withColumn("_ill", F.lit(False))
             .unionByName(illegal.withColumn("_ill", F.lit(True)), allowMissingColumns=True))
        after = Window.partitionBy(*key).orderBy("seq").rowsBetween(Window.currentRow, _F)
        events = (u.withColumn("ill", F.min(F.when(F.col("_ill"), F.col("seq"))).over(after))
                  .where(~F.col("_ill")).drop("_ill", "seq"))
    else:
        events = events.withColumn("ill", F.lit(None).cast("bigint"))
    # Commits strictly inside (d, end): a join on (key, seq bin) with bins of about 4 commits of the key each,
    # so that the join is bounded by key and interval instead of pairing every delivery with every commit.
    width = F.greatest(F.lit(1), F.ceil((F.col("t1") - F.col("t0") + 1) * 4 / F.col("n"))).cast("bigint")
    end = F.least(F.coalesce(F.least("c", "ill"), F.col("t1") + 1), F.col("t1") + 1)
    lo = F.greatest(F.col("d"), F.col("t0") - 1)
    spans = (events.withColumn("w", width).withColumn("end", end).withColumn("lo", lo)
             .where(F.col("end") - F.col("lo") > 1)
             .withColumn("bin", F.explode(F.sequence(F.floor((F.col("lo") + 1) / F.col("w")),
                                                     F.floor((F.col("end") - 1) / F.col("w")))))
             .select(*key, "x", "d", "c", "ill", "end", "msg_id", "w", "bin"))
    binned = commits.join(F.broadcast(stats.select(*key, width.alias("w"))), key).withColumn(
        "bin", F.floor(F.col("t") / F.col("w")))
    candidates = (spans.join(binned, [*key, "w", "bin"])
                  .where((F.col("t") > F.col("d")) & (F.col("t") < F.col("end")) & (F.col("o") > F.col("x")))
                  .select(*key, "x", "d", "c", "msg_id", "t", "o"))
    if ctx.has("store.delete"):
        deletes = ctx.kind("store.delete").select(*QUEUE, F.col("seq").alias("e"),
                                                  F.col("offset").alias("deleted_to"))
        exempt = (candidates.join(deletes, list(QUEUE))
                  .where((F.col("e") > F.col("d")) & (F.col("e") < F.col("t"))
                         & (F.col("deleted_to") > F.col("x")))
                  .select(*key, "x", "t").distinct())
        candidates = candidates.join(exempt, [*key, "x", "t"], "left_anti")
    if ctx.has("offset.reset"):
        # An administrator set the key's offset past x (as a deletion past x, for the key only).
        resets = ctx.kind("offset.reset").select(*key, F.col("seq").alias("e"), F.col("offset").alias("reset_to"))
        exempt = (candidates.join(resets, key)
                  .where((F.col("e") > F.col("d")) & (F.col("e") < F.col("t")) & (F.col("reset_to") > F.col("x")))
                  .select(*key, "x", "t").distinct())
        candidates = candidates.join(exempt, [*key, "x", "t"], "left_anti")
    violations = (candidates.groupBy(*key, "t", "o")
                  .agg(F.min_by(F.struct("x", "d", "msg_id", "c"), F.col("x")).alias("p"))
                  .select(*key, F.col("t").alias("seq"), F.col("o").alias("offset"),
                          F.col("p.x").alias("unconsumed"), F.col("p.msg_id").alias("msg_id"),
                          F.col("p.d").alias("delivered_seq"),
                          F.format_string("committed offset %d passes offset %d, delivered at seq %d and not "
                                          "completed before", "o", "p.x", "p.d").alias("reason")))
    return ctx.result(name, violations, judged=judged)
