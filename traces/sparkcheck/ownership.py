"""single_owner (REB-1, REB-3, REB-4, REB-5, REB-20, REB-21): allocations follow the strategy; no queue has two
owners once the consumers' views agree.

(a) A clustering group's rebalance.assign with all_queues and an AVG, AVG_BY_CIRCLE or CONSISTENT_HASH strategy
lists exactly what ``rebalance.allocate`` gives (a pandas UDF,
:func:`~rocketspec.traces.sparkcheck.workers._allocate_reasons`). (b) Replayed in seq order per (trace, group,
topic) with ``applyInPandas`` (:func:`~rocketspec.traces.sparkcheck.workers._replay_owners`), the live consumers'
queue sets are disjoint whenever their views agree. ``invariants.BY_NAME["single_owner"].rule`` is the exact rule.
"""

from __future__ import annotations

from pyspark.sql import functions as F

from rocketspec.traces.report import InvariantResult
from rocketspec.traces.sparkcheck.context import CheckContext
from rocketspec.traces.sparkcheck.workers import OWNER_SCHEMA, _allocate_reasons, _replay_owners

OWNED_STRATEGIES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH")


def single_owner(ctx: CheckContext) -> InvariantResult:
    """single_owner (REB-1, REB-3, REB-4, REB-5, REB-20, REB-21): (a) assignments equal rebalance.allocate's for
    the strategies it decides, (b) no queue has two live owners while the views agree."""
    name = "single_owner"
    assign = ctx.clustering(ctx.kind("rebalance.assign"))
    if not ctx.has("rebalance.assign"):
        return ctx.result(name, None, {}, 0)
    udf = F.pandas_udf(_allocate_reasons, "string")  # type: ignore[call-overload]  # the stubs want type hints of Series
    computed = (assign.where(F.col("all_queues").isNotNull() & F.col("strategy").isin(list(OWNED_STRATEGIES)))
                .select("trace_id", "seq", "group", "topic", "node", "strategy",
                        udf("strategy", "node", "topic", "all_queues", "consumers", "queues").alias("reason"))
                .where(F.col("reason").isNotNull()))
    topics = assign.select("trace_id", "group", "topic").distinct()
    lifecycle = (ctx.clustering(ctx.kind("client.lifecycle")).select("trace_id", "group", "node", "seq", "kind",
                                                                     "action")
                 .join(topics, ["trace_id", "group"]))
    replay_rows = assign.select("trace_id", "group", "topic", "node", "seq", "kind", "consumers", "all_queues",
                                "queues").unionByName(lifecycle, allowMissingColumns=True)
    overlaps = replay_rows.groupBy("trace_id", "group", "topic").applyInPandas(_replay_owners, OWNER_SCHEMA)
    rows = computed.unionByName(overlaps, allowMissingColumns=True)
    return ctx.result(name, ctx.persist(rows))
