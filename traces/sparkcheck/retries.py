"""retry_delay_dlq (RETRY-1, RETRY-2, RETRY-3, RETRY-7, RETRY-8, RETRY-26, RETRY-27): retries follow the delay
levels and reach the DLQ at the limit.

For the broker-side sendback rows of a group G: (a) the copy goes where ``consume_retry.consumer_send_back`` says
(%DLQ%<G> at the limit, else %RETRY%<G> with a level, or %DLQ%<G> with level 0), a decision table over
:func:`send_back_target_or_none`; (b) paired with the puts of its copy in due order, a copy with a level is stored no
earlier than ``consume_retry.delay_millis`` of its level in the trace's delay table (:func:`with_delay_table`,
:func:`delay_millis_column`; copies stored twice are counted, not judged); (c) nothing of G is delivered from
%DLQ%<G>. ``invariants.BY_NAME["retry_delay_dlq"].rule`` is the exact rule.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rocketspec.spec.protocol import DELAY_LEVEL_MILLIS
from rocketspec.traces import oracles
from rocketspec.traces.report import InvariantResult
from rocketspec.traces.sparkcheck.columns import DLQ, RETRY, _one_per_row
from rocketspec.traces.sparkcheck.context import CheckContext, _answer


def send_back_target_or_none(reconsume_times: int, max_reconsume_times: int) -> str | None:
    """retry_delay_dlq (a): where consume_retry.consumer_send_back(r, 0, max) sends the copy (a Target name; None
    when the oracle refuses the values)."""
    return _answer(oracles.send_back_target(reconsume_times, 0, max_reconsume_times))


def delay_millis_column(level: str, table: str) -> Column:
    """consume_retry.delay_millis(level, table) as a Spark column, for ``level`` already clamped to 1..len(table)
    (RETRY-1, RETRY-2): the table's entry at that level. ``tests/test_traces_sparkcheck.py`` proves it equal to
    the oracle on every level 1..36 and the tables a trace can carry."""
    return F.element_at(F.col(table), F.col(level))


def with_delay_table(ctx: CheckContext, df: DataFrame) -> DataFrame:
    """``df`` with column ``delay_table``: the delay table of each row's trace (the default when the manifest
    gives none for it), for retry_delay_dlq (b) (RETRY-1, RETRY-2)."""
    default = F.array(*[F.lit(d).cast("bigint") for d in DELAY_LEVEL_MILLIS])
    if not ctx.delay_tables:
        return df.withColumn("delay_table", default)
    tables = ctx.spark.createDataFrame([(t, list(ms)) for t, ms in sorted(ctx.delay_tables.items())],
                                       "trace_id string, own_table array<bigint>")
    return (df.join(F.broadcast(tables), "trace_id", "left")
            .withColumn("delay_table", F.coalesce("own_table", default)).drop("own_table"))


def retry_delay_dlq(ctx: CheckContext) -> InvariantResult:
    """retry_delay_dlq (RETRY-1, RETRY-2, RETRY-3, RETRY-7, RETRY-8, RETRY-26, RETRY-27): a broker-side sendback
    whose copy goes elsewhere than consumer_send_back says (a) or is stored before its level's delay (b), and a
    delivery from the group's dead-letter topic (c), is a violation; copies stored twice are counted."""
    name = "retry_delay_dlq"
    out: DataFrame | None = None
    counts: dict[str, int] = {}
    if ctx.has("sendback"):
        # A sendback row describes its copy: reconsume_times is the copy's count, delay_level the copy's level.
        # Broker-side rows only: the broker that made the copy (a client's report of the same send back is
        # not read), and only those that say where the copy went and with what level.
        sb = ctx.persist(ctx.kind("sendback").where((F.col("via") == "broker")
                                                    & (F.col("broker") == F.col("node"))
                                                    & F.col("target").isNotNull()
                                                    & F.col("delay_level").isNotNull()).select(
            "trace_id", "seq", "ts_ms", "node", "group", "topic", "msg_id", "reconsume_times", "delay_level",
            "max_reconsume_times", "target"))
        retry_topic = F.concat(F.lit(RETRY), F.col("group"))
        dlq_topic = F.concat(F.lit(DLQ), F.col("group"))
        # (a) dead-lettered when consumer_send_back(r, 0, max) says so, else retried with a level (or, asked with
        # a level < 0, dead-lettered with level 0)
        # consumer_send_back's target as a decision table over the distinct (stored count, max) of the trace.
        fates = ctx.decided(sb.withColumn("r", F.col("reconsume_times") - 1)
                            .withColumn("m", F.coalesce("max_reconsume_times", F.lit(16))),
                            ["r", "m"], "fate", "string", send_back_target_or_none)
        fine = F.when(F.col("fate") == "DLQ", F.col("target") == dlq_topic).otherwise(
            ((F.col("target") == retry_topic) & (F.col("delay_level") >= 1))
            | ((F.col("target") == dlq_topic) & (F.col("delay_level") == 0)))
        wrong = (fates.withColumn("fate", F.coalesce("fate", F.lit("refused by consumer_send_back")))
                 .where(~F.coalesce(fine, F.lit(False)))
                 .select("trace_id", "seq", "group", "msg_id", "reconsume_times", "delay_level", "target",
                         F.format_string("sent to %s with delay level %d; consumer_send_back(%d, 0, %d) gives %s",
                                         "target", "delay_level", F.col("reconsume_times") - 1,
                                         F.coalesce("max_reconsume_times", F.lit(16)), "fate").alias("reason")))
        # (b) per copy (msg_id, retry topic, count), the copies made (the broker's sendbacks, and a client's own
        # copy after its sendback request failed, RETRY-16) in the order they are due pair with the puts of the
        # copy after the first of them in seq order (the schedule service moves them when due); a broker's
        # sendback with a level (>= 1) is judged: its copy stores no earlier than its delay.
        copy = ["trace_id", "target", "msg_id", "reconsume_times"]
        own = (ctx.kind("sendback").where((F.col("via") == "client") & (F.col("target") == retry_topic)
                                          & F.col("reconsume_times").isNotNull() & (F.col("delay_level") >= 1))
               .select(*copy, "seq", "ts_ms", "group", "delay_level", F.lit(False).alias("judged")))
        made = with_delay_table(
            ctx, sb.where(F.col("target") == retry_topic)
            .select(*copy, "seq", "ts_ms", "group", "delay_level", F.lit(True).alias("judged")).unionByName(own))
        # consume_retry.delay_millis(level, table) as a column: the table's entry at the level clamped to its size
        # (a test proves it equal to the oracle on every level and table it can meet).
        made = (made.withColumn("level", F.least("delay_level", F.size("delay_table")))
                .withColumn("delay", F.when(F.col("delay_level") >= 1, delay_millis_column("level", "delay_table")))
                .withColumn("k", F.row_number().over(Window.partitionBy(*copy).orderBy(
                    F.col("ts_ms") + F.coalesce("delay", F.lit(0)), "seq"))))
        firsts = made.groupBy(*copy).agg(F.min("seq").alias("first_sb"))
        puts = (ctx.kind("store.put").where(F.col("topic").startswith(RETRY))
                .select("trace_id", F.col("topic").alias("target"), "msg_id", "reconsume_times",
                        F.col("seq").alias("put_seq"), F.col("ts_ms").alias("put_ts"))
                .join(firsts, copy).where(F.col("put_seq") > F.col("first_sb"))
                .withColumn("k", F.row_number().over(Window.partitionBy(*copy).orderBy("put_seq")))
                .drop("first_sb"))
        # A copy with more puts than copies made was stored twice (the schedule service delivers again when its
        # put answers other than PUT_OK): which put is whose is not known, so it is not judged, only counted.
        tallies = (made.groupBy(*copy).agg(F.count("*").alias("n_made"))
                   .join(puts.groupBy(*copy).agg(F.count("*").alias("n_puts")), copy))
        twice = ctx.persist(tallies.where(F.col("n_puts") > F.col("n_made")).select(*copy))
        stored_twice = twice.count()
        if stored_twice:
            counts["stored_twice"] = stored_twice
        early = (made.where(F.col("judged") & (F.col("delay_level") >= 1)).join(puts, [*copy, "k"])
                 .join(F.broadcast(twice), copy, "left_anti")
                 .where(F.col("put_ts") < F.col("ts_ms") + F.col("delay"))
                 .select("trace_id", "seq", "group", "msg_id", "reconsume_times", "delay_level", "target",
                         "put_seq", F.format_string(
                             "its retry copy was stored (seq %d) %d ms after it; level %d needs %d ms",
                             "put_seq", F.col("put_ts") - F.col("ts_ms"), "level", "delay").alias("reason")))
        out = wrong.unionByName(early, allowMissingColumns=True)
    dead = (ctx.kind("consume.deliver").where(F.col("topic") == F.concat(F.lit(DLQ), F.col("group")))
            .select("trace_id", "seq", "group", "msg_id", "node", "topic",
                    F.lit("delivered from the group's dead-letter topic").alias("reason")))
    out = dead if out is None else out.unionByName(dead, allowMissingColumns=True)
    return ctx.result(name, ctx.persist(_one_per_row(out)), counts)
