"""The PySpark trace checker: one Spark job per invariant of :mod:`rocketspec.traces.invariants`.

``check_spark(DIR)`` reads a trace directory (Parquet partitioned by trace, plain Parquet, JSON Lines, or one file),
validates it against :mod:`rocketspec.traces.schema` (a :class:`~rocketspec.traces.schema.SchemaError` names what is
wrong, never a JVM traceback), caches the needed columns once and decides every invariant's rule as written in
``Invariant.rule``. Most of the work is DataFrame operations executed in the JVM: joins on the rule's keys, window
functions over ``(trace_id, key)`` ordered by ``seq``, aggregations. Where a rule names a spec oracle, a trace is
judged by the same normative code the spec is checked with: the send attempt limit and budget and the send-back
target are decision tables, the oracle evaluated on the driver once per distinct input tuple of the trace and
broadcast back (:meth:`CheckContext.decided`); the delay of a level is a column expression that a test proves equal
to ``delay_millis``; pull correction and queue allocation, whose inputs are nearly as many as their rows, still call
the oracle from a pandas UDF on the executors, memoised on its argument tuples. The sequential replay of
``single_owner`` (views agreeing) runs per ``(trace_id, group, topic)`` with ``applyInPandas``.

Every rule is per trace: ``trace_id`` is part of every join and window key, and ``seq`` orders rows within a trace.
Each trace's delay table (retry_delay_dlq (b)) is the manifest's ``delay_levels_ms`` entry for its trace id, else the
default 18 levels: the tables are read on the driver and joined to the sendback rows by ``trace_id``.

The modules:

* :mod:`~rocketspec.traces.sparkcheck.session`: the Spark session (start, settings sized to the trace, Ctrl-C and
  the JVM's standard error, one-line errors);
* :mod:`~rocketspec.traces.sparkcheck.reader`: reading and validating the trace, the delay tables;
* :mod:`~rocketspec.traces.sparkcheck.columns`: column helpers and keys the invariants share;
* :mod:`~rocketspec.traces.sparkcheck.context`: :class:`CheckContext`, the loaded trace and what the invariant jobs
  share (clustering groups, decision tables, results);
* :mod:`~rocketspec.traces.sparkcheck.disturbances`: disturbances and shared queues (duplicates_allowed,
  offset_no_regression);
* :mod:`~rocketspec.traces.sparkcheck.workers`: the pandas UDF bodies run on Spark's Python workers (pull_oracle,
  single_owner);
* the invariants: :mod:`~rocketspec.traces.sparkcheck.loss` (no_lost_message),
  :mod:`~rocketspec.traces.sparkcheck.duplicates` (duplicates_allowed), :mod:`~rocketspec.traces.sparkcheck.offsets`
  (offset_no_regression, offset_not_past_unconsumed), :mod:`~rocketspec.traces.sparkcheck.ownership`
  (single_owner), :mod:`~rocketspec.traces.sparkcheck.pulls` (pull_oracle), :mod:`~rocketspec.traces.sparkcheck.
  sending` (send_retry), :mod:`~rocketspec.traces.sparkcheck.transactions` (transaction),
  :mod:`~rocketspec.traces.sparkcheck.retries` (retry_delay_dlq);
* :mod:`~rocketspec.traces.sparkcheck.driver`: :func:`check_spark` and :data:`CHECKS`.

Importing this package imports PySpark (an optional dependency): callers import it only when a Spark check is asked
for. The names below are those the checker offered when it was one module, ``traces/sparkcheck.py``.
"""

from __future__ import annotations

from typing import Any

from rocketspec.traces.sparkcheck import session
from rocketspec.traces.sparkcheck.columns import _F as _F
from rocketspec.traces.sparkcheck.columns import _U as _U
from rocketspec.traces.sparkcheck.columns import (
    DLQ,
    KEY,
    QUEUE,
    RETRY,
    STOPPED,
    tag_matches,
    user_topic,
)
from rocketspec.traces.sparkcheck.columns import _first_cause as _first_cause
from rocketspec.traces.sparkcheck.columns import _one_per_row as _one_per_row
from rocketspec.traces.sparkcheck.columns import _success as _success
from rocketspec.traces.sparkcheck.context import CheckContext
from rocketspec.traces.sparkcheck.context import _answer as _answer
from rocketspec.traces.sparkcheck.context import _Checker as _Checker
from rocketspec.traces.sparkcheck.context import _parse_type as _parse_type
from rocketspec.traces.sparkcheck.disturbances import DISTURBANCES, GLOBAL_CAUSES, GROUP_CAUSES
from rocketspec.traces.sparkcheck.driver import CHECKS, ENGINE, check_spark
from rocketspec.traces.sparkcheck.driver import _check as _check
from rocketspec.traces.sparkcheck.driver import _watch_stages as _watch_stages
from rocketspec.traces.sparkcheck.ownership import OWNED_STRATEGIES
from rocketspec.traces.sparkcheck.reader import _CORRUPT as _CORRUPT
from rocketspec.traces.sparkcheck.reader import _PROBLEM as _PROBLEM
from rocketspec.traces.sparkcheck.reader import NEEDED, delay_tables, load
from rocketspec.traces.sparkcheck.reader import _cached_input as _cached_input
from rocketspec.traces.sparkcheck.reader import _corrupt_detail as _corrupt_detail
from rocketspec.traces.sparkcheck.reader import _estimated_events as _estimated_events
from rocketspec.traces.sparkcheck.reader import _example_rows as _example_rows
from rocketspec.traces.sparkcheck.reader import _input_bytes as _input_bytes
from rocketspec.traces.sparkcheck.reader import _json_reader as _json_reader
from rocketspec.traces.sparkcheck.reader import _load as _load
from rocketspec.traces.sparkcheck.reader import _manifest as _manifest
from rocketspec.traces.sparkcheck.reader import _problem_column as _problem_column
from rocketspec.traces.sparkcheck.reader import _quiet_query_context_logs as _quiet_query_context_logs
from rocketspec.traces.sparkcheck.reader import _read_raw as _read_raw
from rocketspec.traces.sparkcheck.reader import _required_pairs as _required_pairs
from rocketspec.traces.sparkcheck.reader import _small_input as _small_input
from rocketspec.traces.sparkcheck.reader import _validate as _validate
from rocketspec.traces.sparkcheck.retries import delay_millis_column, send_back_target_or_none
from rocketspec.traces.sparkcheck.sending import attempt_limit_or_none, within_budget_or_none
from rocketspec.traces.sparkcheck.session import _INTERRUPTED as _INTERRUPTED
from rocketspec.traces.sparkcheck.session import _JVM_NOISE as _JVM_NOISE
from rocketspec.traces.sparkcheck.session import (
    CACHED,
    SMALL,
    SMALL_JVM_OPTIONS,
    SparkJobFailed,
    SparkUnavailable,
    spark_session,
)
from rocketspec.traces.sparkcheck.session import _configure as _configure
from rocketspec.traces.sparkcheck.session import _drop_py4j_records as _drop_py4j_records
from rocketspec.traces.sparkcheck.session import _failure_line as _failure_line
from rocketspec.traces.sparkcheck.session import _interrupt_deferred as _interrupt_deferred
from rocketspec.traces.sparkcheck.session import _jvm_stderr_filtered as _jvm_stderr_filtered
from rocketspec.traces.sparkcheck.session import _log4j_config as _log4j_config
from rocketspec.traces.sparkcheck.session import _on_sigint as _on_sigint
from rocketspec.traces.sparkcheck.session import _quiet_interrupts as _quiet_interrupts
from rocketspec.traces.sparkcheck.session import _short as _short
from rocketspec.traces.sparkcheck.session import _stop_quietly as _stop_quietly
from rocketspec.traces.sparkcheck.workers import _MEMO as _MEMO
from rocketspec.traces.sparkcheck.workers import OWNER_SCHEMA, SCAN_STATUSES
from rocketspec.traces.sparkcheck.workers import _allocate_reasons as _allocate_reasons
from rocketspec.traces.sparkcheck.workers import _memo as _memo
from rocketspec.traces.sparkcheck.workers import _pull_reasons as _pull_reasons
from rocketspec.traces.sparkcheck.workers import _replay_owners as _replay_owners

__all__ = [
    "CACHED",
    "CHECKS",
    "DISTURBANCES",
    "DLQ",
    "ENGINE",
    "GLOBAL_CAUSES",
    "GROUP_CAUSES",
    "KEY",
    "NEEDED",
    "OWNED_STRATEGIES",
    "OWNER_SCHEMA",
    "QUEUE",
    "RETRY",
    "SCAN_STATUSES",
    "SMALL",
    "SMALL_JVM_OPTIONS",
    "STOPPED",
    "CheckContext",
    "SparkJobFailed",
    "SparkUnavailable",
    "attempt_limit_or_none",
    "check_spark",
    "delay_millis_column",
    "delay_tables",
    "load",
    "send_back_target_or_none",
    "spark_session",
    "tag_matches",
    "user_topic",
    "within_budget_or_none",
]


def __getattr__(name: str) -> Any:
    """``_SESSION``, the process's session, read from :mod:`~rocketspec.traces.sparkcheck.session` when asked for:
    :func:`spark_session` rebinds it there, so a copy made here at import would stay ``None``."""
    if name == "_SESSION":
        return session._SESSION
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
