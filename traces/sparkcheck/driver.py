"""The PySpark checker's driver: :func:`check_spark` runs every invariant of :mod:`rocketspec.traces.invariants`
(:data:`CHECKS`, one function per invariant) over a trace and reports the verdicts.

It starts the session (:mod:`rocketspec.traces.sparkcheck.session`), loads and validates the trace and its delay
tables (:mod:`rocketspec.traces.sparkcheck.reader`), sizes Spark's settings to it, runs the invariants' jobs (two at
once by default, ``ROCKETSPEC_SPARK_THREADS``) over one :class:`~rocketspec.traces.sparkcheck.context.CheckContext`,
tells ``progress`` how far they are, and turns a Ctrl-C or a failed Spark job into one line. The rules themselves
are in the invariant modules :data:`CHECKS` names (no_lost_message, duplicates_allowed, offset_no_regression,
offset_not_past_unconsumed, single_owner, pull_oracle, send_retry, transaction, retry_delay_dlq).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from rocketspec.traces import invariants as inv
from rocketspec.traces import schema
from rocketspec.traces.report import InvariantResult, Report
from rocketspec.traces.sparkcheck.context import CheckContext
from rocketspec.traces.sparkcheck.duplicates import duplicates_allowed
from rocketspec.traces.sparkcheck.loss import no_lost_message
from rocketspec.traces.sparkcheck.offsets import offset_no_regression, offset_not_past_unconsumed
from rocketspec.traces.sparkcheck.ownership import single_owner
from rocketspec.traces.sparkcheck.pulls import pull_oracle
from rocketspec.traces.sparkcheck.reader import _small_input, delay_tables, load
from rocketspec.traces.sparkcheck.retries import retry_delay_dlq
from rocketspec.traces.sparkcheck.sending import send_retry
from rocketspec.traces.sparkcheck.session import (
    _INTERRUPTED,
    SparkJobFailed,
    _configure,
    _failure_line,
    _stop_quietly,
    spark_session,
)
from rocketspec.traces.sparkcheck.transactions import transaction

ENGINE = "spark"

#: The job of each invariant, by name: a function of the check's context.
CHECKS: dict[str, Callable[[CheckContext], InvariantResult]] = {
    "no_lost_message": no_lost_message,
    "duplicates_allowed": duplicates_allowed,
    "offset_no_regression": offset_no_regression,
    "offset_not_past_unconsumed": offset_not_past_unconsumed,
    "single_owner": single_owner,
    "pull_oracle": pull_oracle,
    "send_retry": send_retry,
    "transaction": transaction,
    "retry_delay_dlq": retry_delay_dlq,
}


def _watch_stages(spark: SparkSession, progress: Callable[[str], None], done: list[str], total: int,
                  stop: threading.Event) -> None:
    """Tell ``progress`` once a second what Spark is doing: invariants decided, jobs, tasks of the running stages."""
    tracker = spark.sparkContext.statusTracker()
    while not stop.wait(1.0):
        try:
            stages = [info for info in map(tracker.getStageInfo, tracker.getActiveStageIds()) if info is not None]
            jobs = len(tracker.getActiveJobsIds())
        except Exception:  # the context is stopping: nothing more to tell
            return
        tasks = sum(info.numCompletedTasks for info in stages), sum(info.numTasks for info in stages)
        progress(f"{len(done)}/{total} invariants decided; {jobs} job(s) running, tasks {tasks[0]}/{tasks[1]} "
                 f"of {len(stages)} running stage(s)")


def check_spark(source: str | Path, master: str | None = None, *,
                only: Iterable[str] | None = None, progress: Callable[[str], None] | None = None) -> Report:
    """Check every invariant of ``invariants.INVARIANTS`` on the trace at ``source`` with Spark.

    ``master`` is any Spark master URL (default ``local[*]``; an existing session, e.g. under spark-submit, is
    reused). ``only`` restricts the run to the named invariants (the report then lists those). ``progress`` hears
    every second how far the jobs are. Raises
    :class:`~rocketspec.traces.schema.SchemaError` for a missing or empty path and for rows that break the schema.
    """
    started = time.monotonic()
    spark = spark_session(master, small=_small_input(source))
    _INTERRUPTED.clear()
    try:
        return _check(spark, source, only, progress, started)
    except BaseException as error:
        # A Ctrl-C inside a JVM call may come back as any error (py4j turns it into "Answer from Java side is
        # empty", which loading would report as a bad trace): the signal decides.
        if _INTERRUPTED.is_set():
            _stop_quietly(spark)
            raise KeyboardInterrupt from None
        if isinstance(error, PySparkException) or type(error).__module__.startswith("py4j"):
            raise SparkJobFailed(_failure_line(error)) from None
        raise


def _check(spark: SparkSession, source: str | Path, only: Iterable[str] | None,
           progress: Callable[[str], None] | None, started: float) -> Report:
    """:func:`check_spark` on a started session: load the trace, run the invariants' jobs, report."""
    names = [i.name for i in inv.INVARIANTS if only is None or i.name in set(only)]
    ev, kinds, traces = load(spark, source)
    try:
        tables = delay_tables(spark, source)
    except schema.SchemaError:
        ev.unpersist()
        raise
    events = sum(kinds.values())
    _configure(spark, events)
    ctx = CheckContext(spark, ev, kinds, traces, tables)
    threads = max(1, int(os.environ.get("ROCKETSPEC_SPARK_THREADS", "2")))
    decided: list[str] = []
    stop = threading.Event()
    if progress is not None:
        threading.Thread(target=_watch_stages, args=(spark, progress, decided, len(names), stop), daemon=True,
                         name="rocketspec-progress").start()

    def run(name: str) -> InvariantResult:
        result = CHECKS[name](ctx)
        decided.append(name)
        return result

    try:
        if threads == 1:
            results = tuple(run(name) for name in names)
        else:
            # Jobs of several invariants at once: one invariant's planning and single-task stages leave cores idle
            # that another's tasks can use.
            with ThreadPoolExecutor(threads, thread_name_prefix="rocketspec-check") as pool:
                results = tuple(pool.map(run, names))
    finally:
        stop.set()
        with contextlib.suppress(Exception):  # after Ctrl-C the context is gone: nothing left to release
            ctx.release()
            ev.unpersist()
    return Report(str(source), ENGINE, events, traces, results, time.monotonic() - started)
