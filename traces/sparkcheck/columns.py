"""Column helpers and keys the PySpark checker's invariants share.

The rules' Python helpers as Spark expressions: :func:`user_topic` (``invariants.is_user_topic``, the "user topic"
of every rule), :func:`tag_matches` (``invariants.tag_matches``, no_lost_message (b)) and :func:`_success` (the
"success" of no_lost_message, duplicates_allowed and offset_not_past_unconsumed); the keys rows are grouped by
(:data:`KEY`, :data:`QUEUE`), the retry and dead-letter topic prefixes, and the shaping of violations
(:func:`_one_per_row`, :func:`_first_cause`). ``tests/test_traces_sparkcheck.py`` holds the expressions to the
Python helpers' answers. No invariant is decided here.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rocketspec.spec.protocol import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, SYSTEM_TOPIC_PREFIX
from rocketspec.traces import invariants as inv

KEY = ("trace_id", "group", "topic", "broker", "queue_id")  # a group's queue
QUEUE = ("trace_id", "topic", "broker", "queue_id")
STOPPED = ("shutdown", "crash")  # client.lifecycle actions after which a node is not a live consumer
RETRY = "%RETRY%"
DLQ = "%DLQ%"
_U = Window.unboundedPreceding
_F = Window.unboundedFollowing


def user_topic(topic: Column) -> Column:
    """:func:`invariants.is_user_topic` as a Spark expression (a test holds the two to the same answers)."""
    system = sorted(inv._SYSTEM_TOPICS)
    cond = ~topic.isin(system)
    for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX, "RMQ_SYS_", SYSTEM_TOPIC_PREFIX):
        cond = cond & ~topic.startswith(prefix)
    return cond


def tag_matches(expression: Column, tags: Column) -> Column:
    """:func:`invariants.tag_matches` as a Spark expression."""

    def strip(c: Column) -> Column:
        return F.regexp_replace(c, r"^\s+|\s+$", "")

    wanted = F.filter(F.transform(F.split(expression, r"\|\|"), strip), lambda t: t != "")
    return (
        expression.isNull()
        | strip(expression).isin("", "*")
        | (tags.isNotNull() & F.coalesce(F.array_contains(wanted, tags), F.lit(False)))
    )


def _success(status: Column) -> Column:
    """Whether a consume.result status is a success (``invariants.SUCCESS_STATUSES``)."""
    return status.isin(sorted(inv.SUCCESS_STATUSES))


def _one_per_row(violations: DataFrame) -> DataFrame:
    """One violation per row however many parts of a rule it breaks: the reasons are joined."""
    others = [c for c in violations.columns if c not in ("trace_id", "seq", "reason")]
    return violations.groupBy("trace_id", "seq").agg(
        *[F.first(c, True).alias(c) for c in others],
        F.concat_ws("; ", F.sort_array(F.collect_set("reason"))).alias("reason"))


def _first_cause(flags: Sequence[tuple[str, Column]]) -> Column:
    """The first cause whose flag holds, in the order given (null when none does)."""
    expr = None
    for cause, flag in flags:
        expr = F.when(flag, F.lit(cause)) if expr is None else expr.when(flag, F.lit(cause))
    return expr if expr is not None else F.lit(None).cast("string")
