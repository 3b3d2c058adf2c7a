"""pull_oracle (PULL-1, PULL-2, PULL-3, PULL-4, PULL-5, PULL-10, PULL-19, PULL-25): every pull response agrees
with the pull-correction oracle.

Broker-side rows with min_offset and max_offset against ``pull_correction.bounds_decision`` (or a scan's status and
next offset where it does not decide) and ``response_code``; client-side rows with a code, not derived, against
``pull_status``. The oracle runs in a pandas UDF on the executors
(:func:`~rocketspec.traces.sparkcheck.workers._pull_reasons`), memoised on its argument tuples.
``invariants.BY_NAME["pull_oracle"].rule`` is the exact rule.
"""

from __future__ import annotations

from pyspark.sql import functions as F

from rocketspec.traces.report import InvariantResult
from rocketspec.traces.sparkcheck.context import CheckContext
from rocketspec.traces.sparkcheck.workers import _pull_reasons


def pull_oracle(ctx: CheckContext) -> InvariantResult:
    """pull_oracle (PULL-1, PULL-2, PULL-3, PULL-4, PULL-5, PULL-10, PULL-19, PULL-25): a pull.response the oracle
    decides (broker-side with min and max offsets, client-side with a code and not derived) that disagrees with it is
    a violation."""
    name = "pull_oracle"
    if not ctx.has("pull.response"):
        return ctx.result(name, None, {}, 0)
    broker_side = F.col("node") == F.col("broker")
    rows = ctx.kind("pull.response").where(
        (broker_side & F.col("min_offset").isNotNull() & F.col("max_offset").isNotNull())
        | (~broker_side & F.col("code").isNotNull() & F.col("derived").isNull()))
    udf = F.pandas_udf(_pull_reasons, "string")  # type: ignore[call-overload]  # the stubs want type hints of Series
    checked = rows.select(
        "trace_id", "seq", "node", "group", "topic", "broker", "queue_id", "offset", "status", "code",
        "next_offset", "min_offset", "max_offset",
        udf(broker_side, F.col("offset"), F.coalesce("min_offset", F.lit(0)),
            F.coalesce("max_offset", F.lit(0)), F.col("status"), F.col("next_offset").isNotNull(),
            F.coalesce("next_offset", F.lit(0)), F.col("code").isNotNull(),
            F.coalesce("code", F.lit(0))).alias("reason"))
    return ctx.result(name, ctx.persist(checked.where(F.col("reason").isNotNull())))
