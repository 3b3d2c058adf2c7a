"""send_retry (SEND-1, SEND-2, SEND-9, SEND-13, SEND-20, SEND-21): send attempts within the limit, retries avoid
the failed broker, the budget holds.

Per producer node and msg_id the send.attempt rows in seq order form sends: (a) attempts numbered 1, 2, ... and at
most ``send_retry.attempt_limit`` of them (SEND-1, SEND-9), (b) a retry follows a non-final send.result of the
previous attempt (SEND-21), (c) a SYNC attempt starts within ``send_retry.attempt_within_budget`` (SEND-2), (d) a
SYNC retry without latency fault tolerance avoids the previous attempt's broker when the route at the send's start
offers another writable one (SEND-13, SEND-20). The oracles of (a) and (c) are decision tables
(:meth:`~rocketspec.traces.sparkcheck.context.CheckContext.decided`) over :func:`attempt_limit_or_none` and
:func:`within_budget_or_none`. ``invariants.BY_NAME["send_retry"].rule`` is the exact rule.
"""

from __future__ import annotations

from pyspark.sql import Window
from pyspark.sql import functions as F

from rocketspec.traces import invariants as inv
from rocketspec.traces import oracles
from rocketspec.traces.report import InvariantResult
from rocketspec.traces.sparkcheck.columns import _U, _one_per_row
from rocketspec.traces.sparkcheck.context import CheckContext, _answer


def attempt_limit_or_none(mode: str | None, retry_times: int, retry_times_async: int) -> int | None:
    """send_retry.attempt_limit (SEND-1, SEND-9) for a mode's name; None for a mode that is not one. A null mode
    (not known: SYNC and ASYNC look alike on the wire) has the larger of the SYNC and ASYNC limits."""
    if mode is None:
        limits = [_answer(oracles.attempt_limit(m, retry_times, retry_times_async)) for m in ("SYNC", "ASYNC")]
        return None if None in limits else max(x for x in limits if x is not None)
    return _answer(oracles.attempt_limit(mode, retry_times, retry_times_async))


def within_budget_or_none(elapsed_ms: int, timeout_ms: int) -> bool | None:
    """send_retry.attempt_within_budget (SEND-2)."""
    return _answer(oracles.within_budget(elapsed_ms, timeout_ms))


def send_retry(ctx: CheckContext) -> InvariantResult:
    """send_retry (SEND-1, SEND-2, SEND-9, SEND-13, SEND-20, SEND-21): every send.attempt that breaks (a) numbering
    or the attempt limit, (b) following a non-final result, (c) the SYNC budget or (d) avoiding the previous broker is
    a violation, once per row with its reasons joined."""
    name = "send_retry"
    if not ctx.has("send.attempt"):
        return ctx.result(name, None, {}, 0)
    sends = Window.partitionBy("trace_id", "node", "msg_id").orderBy("seq")
    running = sends.rowsBetween(_U, Window.currentRow)
    rn = F.row_number().over(sends)
    attempts = (ctx.kind("send.attempt")
                .select("trace_id", "seq", "ts_ms", "node", "group", "topic", "broker", "queue_id", "msg_id",
                        "attempt", "mode", "retry_times", "retry_times_async", "timeout_ms", "latency_fault")
                .withColumn("rn", rn)
                .withColumn("start_rn", F.last(F.when(F.col("attempt") == 1, F.col("rn")), True).over(running))
                .withColumn("start_ts", F.last(F.when(F.col("attempt") == 1, F.col("ts_ms")), True).over(running))
                .withColumn("start_seq", F.coalesce(
                    F.last(F.when(F.col("attempt") == 1, F.col("seq")), True).over(running),
                    F.first("seq").over(running)))
                .withColumn("first_ts", F.first("ts_ms").over(running))
                .withColumn("prev_broker", F.lag("broker").over(sends))
                .withColumn("prev_attempt", F.lag("attempt").over(sends))
                .withColumn("prev_seq", F.lag("seq").over(sends))
                .withColumn("position", F.col("rn") - F.coalesce("start_rn", F.lit(1)) + 1)
                .withColumn("elapsed", F.col("ts_ms") - F.coalesce("start_ts", "first_ts")))
    attempts = ctx.persist(attempts)
    retry = F.col("position") > 1
    # (a) numbering
    numbering = attempts.where(F.col("attempt") != F.col("position")).select(
        "trace_id", "seq", "node", "msg_id", "attempt", F.format_string(
            "attempt %d where the send's attempt %d was due (attempts are numbered 1, 2, ... without gaps)",
            "attempt", "position").alias("reason"))
    # (a) limit and (c) budget by the oracles, as decision tables over the distinct (mode, retry settings) and
    # (elapsed, budget) of the trace. An attempt that starts its send (position 1, 0 ms in) meets both by the
    # oracles' postconditions (attempt_limit >= 1; elapsed <= timeout is within budget), so only retries and
    # sends with a negative budget are looked up.
    timeout = F.coalesce("timeout_ms", F.lit(3000))
    looked = (attempts.where(retry | (F.col("elapsed") != 0) | (timeout < 0))
              .select("trace_id", "seq", "node", "msg_id", "attempt", "mode", "position", "elapsed",
                      F.coalesce("retry_times", F.lit(2)).alias("rt"),
                      F.coalesce("retry_times_async", F.lit(2)).alias("rta"), timeout.alias("budget")))
    looked = ctx.decided(looked, ["mode", "rt", "rta"], "most", "int", attempt_limit_or_none)
    looked = ctx.decided(looked, ["elapsed", "budget"], "within", "boolean", within_budget_or_none)
    limit = (F.when(F.col("most").isNull(), F.format_string("unknown mode '%s'", "mode"))
             .when(F.col("position") > F.col("most"), F.format_string(
                 "attempt %d of a send exceeds attempt_limit(%s, %d, %d) = %d", "position", "mode", "rt", "rta",
                 "most")))
    budget = F.when((F.col("mode") == "SYNC") & ~F.col("within"), F.format_string(
        "started %d ms into the send, past the %d ms budget", "elapsed", "budget"))
    oracle = (looked.select("trace_id", "seq", "node", "msg_id", "attempt", "mode",
                            F.concat_ws("; ", limit, budget).alias("reason"))
              .where(F.col("reason") != ""))
    # (b) a retry follows a non-final send.result of the previous attempt
    results = (ctx.kind("send.result").where(~F.col("final"))
               .select("trace_id", "node", "msg_id", F.col("attempt").alias("r_attempt"),
                       F.col("seq").alias("r_seq")))
    retries = attempts.where(retry & (F.col("attempt") > 1))
    followed = (retries.join(results, ["trace_id", "node", "msg_id"])
                .where((F.col("r_attempt") == F.col("attempt") - 1) & (F.col("r_seq") > F.col("prev_seq"))
                       & (F.col("r_seq") < F.col("seq")))
                .select("trace_id", "node", "msg_id", "seq").distinct())
    unfollowed = retries.join(followed, ["trace_id", "node", "msg_id", "seq"], "left_anti").select(
        "trace_id", "seq", "node", "msg_id", "attempt", F.format_string(
            "attempt %d without a non-final send.result of attempt %d before it", "attempt",
            F.col("attempt") - 1).alias("reason"))
    # (d) a retry avoids the previous attempt's broker when the latest route offers another writable broker
    out = numbering.unionByName(oracle, allowMissingColumns=True).unionByName(unfollowed,
                                                                              allowMissingColumns=True)
    if ctx.has("route.update"):
        routes = ctx.kind("route.update").select("trace_id", "node", "topic", "seq", "queues")
        same_broker = F.col("broker") == F.col("prev_broker")
        sync = F.col("mode") == "SYNC"
        cand = (retries.where(sync & ~F.coalesce("latency_fault", F.lit(False)) & same_broker)
                .select("trace_id", "node", "topic", "seq", "start_seq", "msg_id", "attempt", "broker"))
        if cand.take(1):
            # A send selects from the publish info it found when it started (attempt 1): the route as of then.
            u = (cand.withColumn("_q", F.lit(True)).withColumn("_at", F.col("start_seq"))
                 .unionByName(routes.withColumn("_q", F.lit(False)).withColumn("_at", F.col("seq")),
                              allowMissingColumns=True))
            wr = Window.partitionBy("trace_id", "node", "topic").orderBy("_at").rowsBetween(_U, -1)
            u = u.withColumn("route", F.last(F.when(~F.col("_q"), F.col("queues")), True).over(wr)).where("_q")
            perm = F.regexp_extract
            other = F.exists("route", lambda q: (perm(q, r"^(.*):(-?\d+):(-?\d+)$", 1) != F.col("broker"))
                             & ((perm(q, r"^(.*):(-?\d+):(-?\d+)$", 3).cast("int").bitwiseAND(2)) != 0))
            same = u.where(F.col("route").isNotNull() & other).select(
                "trace_id", "seq", "node", "msg_id", "attempt", "broker", F.format_string(
                    "attempt %d went to %s again although the route offers another writable broker", "attempt",
                    "broker").alias("reason"))
            out = out.unionByName(same, allowMissingColumns=True)
    # (c) and (d) need the mode: sends whose first attempt has none are judged by (a) and (b) only.
    unknown = attempts.where((F.col("attempt") == 1) & F.col("mode").isNull()).count()
    return ctx.result(name, ctx.persist(_one_per_row(out)), {inv.MODE_UNKNOWN: unknown} if unknown else {})
