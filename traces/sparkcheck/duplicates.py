"""duplicates_allowed (OFF-17, REB-20, TXN-11, SEND-3, RETRY-18): duplicates only where allowed.

A duplicate is a consume.result of a clustering group G for msg_id m after G's first success for m. Its cause is
the first that applies: stored_twice (m stored more than once in user topics, or twice in %RETRY%<G> with the same
reconsume_times), a disturbance of G since m's first store.put in a user topic
(:mod:`rocketspec.traces.sparkcheck.disturbances`), or shared_queue; allowed duplicates are counted per cause and
one without a cause is a violation. ``invariants.BY_NAME["duplicates_allowed"].rule`` is the exact rule.
"""

from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from rocketspec.traces.report import InvariantResult
from rocketspec.traces.sparkcheck.columns import _U, RETRY, _first_cause, _success, user_topic
from rocketspec.traces.sparkcheck.context import CheckContext
from rocketspec.traces.sparkcheck.disturbances import DISTURBANCES, with_last_disturbances, with_shared_queue


def duplicates_allowed(ctx: CheckContext) -> InvariantResult:
    """duplicates_allowed (OFF-17, REB-20, TXN-11, SEND-3, RETRY-18): each consume.result after its group's first
    success for the msg_id is allowed by a cause (stored_twice, a disturbance of the group since the message was
    first stored, shared_queue; counted per cause) or is a violation."""
    name = "duplicates_allowed"
    results = ctx.clustering(ctx.kind("consume.result")).select(
        "trace_id", "group", "msg_id", "seq", "status", "node", "topic", "broker", "queue_id", "offset")
    w = Window.partitionBy("trace_id", "group", "msg_id").orderBy("seq").rowsBetween(_U, -1)
    dups = (results.withColumn("first_success", F.min(F.when(_success(F.col("status")), F.col("seq"))).over(w))
            .where(F.col("first_success").isNotNull()))
    dups = ctx.persist(dups)
    if not dups.take(1):
        return ctx.result(name, None, {}, 0)
    keys = dups.select("trace_id", "msg_id").distinct()
    puts = ctx.kind("store.put").join(keys, ["trace_id", "msg_id"], "left_semi")
    user = (puts.where(user_topic(F.col("topic"))).groupBy("trace_id", "msg_id")
            .agg(F.count("*").alias("n_user"), F.min("seq").alias("origin")))
    twice = (puts.where(F.col("topic").startswith(RETRY)).groupBy("trace_id", "topic", "msg_id", "reconsume_times")
             .count().where(F.col("count") > 1)
             .select("trace_id", F.expr(f"substring(topic, {len(RETRY) + 1})").alias("group"), "msg_id")
             .distinct().withColumn("retry_twice", F.lit(True)))
    rows = (dups.join(user, ["trace_id", "msg_id"], "left").join(twice, ["trace_id", "group", "msg_id"], "left")
            .withColumn("origin", F.coalesce("origin", F.lit(0)))
            .withColumn("stored_twice", (F.coalesce("n_user", F.lit(0)) > 1) | F.coalesce("retry_twice",
                                                                                        F.lit(False))))
    rows = with_last_disturbances(ctx, rows)
    flags = [("stored_twice", F.col("stored_twice"))]
    flags += [(c, F.col(f"_L_{c}") > F.col("origin")) for c in DISTURBANCES]
    out = rows.select(
        "trace_id", "seq", "group", "msg_id", "node", "topic", "broker", "queue_id", "offset", "status",
        "first_success", "origin", _first_cause(flags).alias("_cause"),
        F.format_string("consume.result after the group's first success (seq %d) with no stored_twice, no "
                        "disturbance of the group in (%d, %d) and its queue not shared", "first_success",
                        "origin", "seq").alias("reason"))
    return ctx.classified(name, with_shared_queue(ctx, out))
