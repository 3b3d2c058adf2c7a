"""The PySpark trace checker: one Spark job per invariant of :mod:`rocketspec.traces.invariants`.

``check_spark(DIR)`` reads a trace directory (Parquet partitioned by trace, plain Parquet, JSON Lines, or one file),
validates it against :mod:`rocketspec.traces.schema` (a :class:`~rocketspec.traces.schema.SchemaError` names what is
wrong, never a JVM traceback), caches the needed columns once and decides every invariant's rule as written in
``Invariant.rule``. Most of the work is DataFrame operations executed in the JVM: joins on the rule's keys, window
functions over ``(trace_id, key)`` ordered by ``seq``, aggregations. Where a rule names a spec oracle, a trace is
judged by the same normative code the spec is checked with: the send attempt limit and budget and the send-back
target are decision tables, the oracle evaluated on the driver once per distinct input tuple of the trace and
broadcast back (:meth:`_Checker.decided`); the delay of a level is a column expression that a test proves equal to
``delay_millis``; pull correction and queue allocation, whose inputs are nearly as many as their rows, still call the
oracle from a pandas UDF on the executors, memoised on its argument tuples. The sequential replay of
``single_owner`` (views agreeing) runs per ``(trace_id, group, topic)`` with ``applyInPandas``.

Every rule is per trace: ``trace_id`` is part of every join and window key, and ``seq`` orders rows within a trace.
Each trace's delay table (retry_delay_dlq (b)) is the manifest's ``delay_levels_ms`` entry for its trace id, else the
default 18 levels: the tables are read on the driver and joined to the sendback rows by ``trace_id``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark import StorageLevel
from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DataType, IntegerType, LongType, StringType, StructField, StructType

from rocketspec.spec.protocol import DELAY_LEVEL_MILLIS, SCHEDULE_TOPIC
from rocketspec.traces import invariants as inv
from rocketspec.traces import oracles, reading, schema
from rocketspec.traces.engine import DEFAULT_MASTER, is_remote
from rocketspec.traces.report import InvariantResult, Report, sample_rows

ENGINE = "spark"

#: The columns the invariants read; the cache holds these (plus the validation verdict) and nothing else.
NEEDED: tuple[str, ...] = (
    "trace_id", "seq", "ts_ms", "node", "kind", "group", "topic", "broker", "queue_id", "offset", "msg_id", "code",
    "status", "attempt", "mode", "final", "retry_times", "retry_times_async", "timeout_ms", "latency_fault", "queues",
    "all_queues", "consumers", "strategy", "expression", "tags", "next_offset", "min_offset", "max_offset",
    "reconsume_times", "max_reconsume_times", "delay_level", "target", "via", "state", "result", "check_times",
    "check_max", "action", "derived",
)
KEY = ("trace_id", "group", "topic", "broker", "queue_id")  # a group's queue
QUEUE = ("trace_id", "topic", "broker", "queue_id")
GROUP_CAUSES = ("rebalance", "client", "offset_illegal")  # disturbances of one group
GLOBAL_CAUSES = ("broker_restart", "fault", "deletion")  # disturbances of every group of the trace
DISTURBANCES = tuple(c for c in inv.CAUSES if c not in ("stored_twice", inv.SHARED_QUEUE))
STOPPED = ("shutdown", "crash")  # client.lifecycle actions after which a node is not a live consumer
SCAN_STATUSES = ("FOUND", "NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING", "OFFSET_FOUND_NULL")  # PULL-25
OWNED_STRATEGIES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH")
RETRY = "%RETRY%"
DLQ = "%DLQ%"
_CORRUPT = "_corrupt_record"
_PROBLEM = "_problem"
_U = Window.unboundedPreceding
_F = Window.unboundedFollowing

_SESSION: SparkSession | None = None


class SparkJobFailed(RuntimeError):
    """A Spark job of the check failed (an executor or its Python worker died, a task kept failing): the message
    is one line, the root cause without the JVM's stack."""


class SparkUnavailable(RuntimeError):
    """Spark cannot start here (no Java, or the master cannot be reached); the message says why."""


# ----------------------------------------------------------------------------------------------------------------
# session


#: JVM options for a local session started for a small trace: the client JIT compiler only and the serial
#: collector, which halve the CPU a short run spends compiling and collecting.
SMALL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def spark_session(master: str | None = None, *, small: bool = False) -> SparkSession:
    """The process's one Spark session, created on first use (``local[*]`` unless ``master`` says otherwise).

    Under ``spark-submit`` (or when another session is active) that session is reused whatever ``master`` says: a
    process has one SparkContext. A new session runs the Python workers with this interpreter (unless
    ``PYSPARK_PYTHON`` or ``spark.pyspark.python`` is set), without the UI, with the JVM's log off, untyped Hive
    partition values (``trace_id=7`` stays the string ``"7"``) and, for a local master, ``spark.driver.memory`` from
    ``ROCKETSPEC_SPARK_DRIVER_MEMORY`` (default 4g) and JVM options from ``ROCKETSPEC_SPARK_JAVA_OPTIONS`` (default
    :data:`SMALL_JVM_OPTIONS` when ``small`` says the session is started for a small trace, else none).
    """
    global _SESSION
    active = SparkSession.getActiveSession()
    if active is not None:
        _SESSION = active
    if _SESSION is not None and not _SESSION.sparkContext._jsc.sc().isStopped():  # type: ignore[union-attr]
        return _SESSION
    builder = SparkSession.builder.appName("rocketspec traces")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit launched this process: its master rules
    chosen = master or (None if submitted else DEFAULT_MASTER)
    if chosen:
        builder = builder.master(chosen)
    if not os.environ.get("PYSPARK_PYTHON"):
        # A driver started from Python names the workers' interpreter by this variable (the spark.pyspark.python
        # setting only reaches spark-submit): without it the workers run "python3" from PATH, which may lack
        # pandas or rocketspec.
        os.environ["PYSPARK_PYTHON"] = sys.executable
        builder = builder.config("spark.pyspark.python", sys.executable)
    if chosen and chosen.startswith("local") and not submitted:
        builder = builder.config("spark.driver.memory", os.environ.get("ROCKETSPEC_SPARK_DRIVER_MEMORY", "4g"))
        java = os.environ.get("ROCKETSPEC_SPARK_JAVA_OPTIONS", SMALL_JVM_OPTIONS if small else "")
        if "SPARK_CONF_DIR" not in os.environ:
            # Errors only, from the first line the JVM logs (not the start-up warnings of the default profile).
            java = f"{java} -Dlog4j2.configurationFile={_log4j_config()}".strip()
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # local: no network lookup, no loopback warning
        builder = builder.config("spark.driver.extraJavaOptions", java)
    builder = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.autoBroadcastJoinThreshold", str(32 * 1024 * 1024))
        .config("spark.sql.shuffle.partitions", "4")
    )
    if chosen and chosen.startswith("local") and not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        raise SparkUnavailable("no Java: Spark needs a JVM (install Java 17 or set JAVA_HOME)")
    local = bool(chosen and chosen.startswith("local") and not submitted)
    with _interrupt_deferred() as interrupted, _jvm_stderr_filtered() if local else contextlib.nullcontext():
        try:
            session = builder.getOrCreate()
        except Exception as error:  # the JVM did not start or the master refused the application
            raise SparkUnavailable(_short(error)) from None
    if interrupted:
        _stop_quietly(session)
        raise KeyboardInterrupt
    _SESSION = session
    # The JVM logs nothing of its own (a failed task would print its stack once per attempt): a failure reaches
    # the user as one line from the driver (SparkJobFailed). A SPARK_CONF_DIR's log settings keep errors.
    _SESSION.sparkContext.setLogLevel("ERROR" if "SPARK_CONF_DIR" in os.environ else "OFF")
    _quiet_interrupts()
    return _SESSION


@contextlib.contextmanager
def _interrupt_deferred() -> Iterator[list[int]]:
    """Ctrl-C while the JVM starts is held until it has started (the list it yields then holds the signal): PySpark
    leaves the JVM it is launching running when interrupted, and that orphan later prints a Java stack."""
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, previous)


#: Set by Ctrl-C during a check (see :func:`check_spark`).
_INTERRUPTED = threading.Event()


def _on_sigint(_signum: int, _frame: Any) -> None:
    _INTERRUPTED.set()
    raise KeyboardInterrupt


def _drop_py4j_records(record: logging.LogRecord) -> bool:
    """False for what py4j logs (by where it was logged, by its logger, or by the error it carries)."""
    error = record.exc_info[1] if record.exc_info else None
    return not ("py4j" in record.pathname or record.name.startswith("py4j")
                or (error is not None and type(error).__module__.startswith("py4j")))


def _quiet_interrupts() -> None:
    """Ctrl-C raises KeyboardInterrupt and nothing else: PySpark's own SIGINT handler calls the JVM from inside the
    interrupted call (py4j then fails and logs tracebacks on the root logger, which its errors reach us as exceptions
    anyway); :func:`check_spark` cancels the jobs and stops Spark itself, quietly."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)
    root = logging.getLogger()
    if _drop_py4j_records not in root.filters:
        root.addFilter(_drop_py4j_records)
    if not root.handlers:
        # What ``logging.error`` would install on first use (``basicConfig``), here at once so that the filter sits
        # on the handler too: a record that reaches it by any path is filtered (one once got through the logger's
        # filter during a Ctrl-C, in a run of the interrupt test under load).
        logging.basicConfig()
    for handler in root.handlers:
        if _drop_py4j_records not in handler.filters:
            handler.addFilter(_drop_py4j_records)


#: What the JVM prints on every start, whatever the log settings: not for the user (Spark 4 adds the module).
_JVM_NOISE = (b"WARNING: Using incubator modules",)


@contextlib.contextmanager
def _jvm_stderr_filtered() -> Iterator[None]:
    """Start the JVM with its standard error through a pipe that drops :data:`_JVM_NOISE` and passes the rest on.

    The JVM inherits file descriptor 2 when PySpark starts it; for that moment this process's descriptor 2 is the
    pipe, then the real one again. A daemon thread forwards what the JVM writes for as long as it runs (its errors
    still reach the user)."""
    try:
        sys.stderr.flush()
        read_end, write_end = os.pipe()
        saved = os.dup(2)
    except OSError:  # no descriptors to spare: the noise is harmless
        yield
        return
    target = os.dup(saved)

    def forward() -> None:
        with os.fdopen(read_end, "rb", buffering=0) as source, os.fdopen(target, "wb", buffering=0) as sink:
            pending = b""
            while chunk := source.read(65536):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                out = b"".join(line + b"\n" for line in lines if not line.startswith(_JVM_NOISE))
                if out:
                    sink.write(out)
            if pending and not pending.startswith(_JVM_NOISE):
                sink.write(pending)

    threading.Thread(target=forward, name="rocketspec-jvm-stderr", daemon=True).start()
    os.dup2(write_end, 2)
    os.close(write_end)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _log4j_config() -> Path:
    """A log4j2 configuration that logs nothing (failures reach the user from the driver; written once per process)."""
    path = Path(tempfile.gettempdir()) / f"rocketspec-log4j2-{os.getpid()}.properties"
    if not path.exists():
        path.write_text(
            "rootLogger.level = off\n"
            # The logger whose level PySpark's driver (a "shell" to Spark) compares with the root's: when it has a
            # level of its own equal to the root's, no "Setting default log level" banner is printed.
            "logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer\n"
            "logger.gateway.level = off\n"
            "rootLogger.appenderRef.stderr.ref = console\n"
            "appender.console.type = Console\n"
            "appender.console.name = console\n"
            "appender.console.target = SYSTEM_ERR\n"
            "appender.console.layout.type = PatternLayout\n"
            "appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex\n"
        )
    return path


# ----------------------------------------------------------------------------------------------------------------
# reading and validation


def _failure_line(error: BaseException) -> str:
    """One line for a failed job: the deepest cause the JVM names (or the last line of a Python worker's
    traceback), the Java package left off its class."""
    lines = [line.strip() for line in str(error).splitlines()
             if line.strip() and not line.startswith(("\tat ", "\t...")) and
             not line.startswith("An error occurred while calling")]
    causes = [line.removeprefix("Caused by: ") for line in lines if line.startswith("Caused by: ")]
    python = [line for line in lines if not line.startswith(("File ", "Traceback", "at ", ":")) and
              ("Error: " in line or "Exception: " in line) and not line.startswith("org.")]
    line = causes[-1] if causes else python[-1] if python else lines[0] if lines else type(error).__name__
    line = line.removeprefix(": ")
    name, sep, rest = line.partition(": ")
    if sep and " " not in name and "." in name:
        line = f"{name.rsplit('.', 1)[-1]}: {rest}"
    return line[:300]


def _short(error: BaseException) -> str:
    """The first line of a Spark error, without the JVM stack."""
    text = str(error).strip().splitlines()
    return text[0][:300] if text else type(error).__name__


def _manifest(directory: Path) -> dict[str, Any] | None:
    path = directory / schema.MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise schema.SchemaError(f"{path}: unreadable manifest ({error})") from None
    if not isinstance(manifest, dict):
        raise schema.SchemaError(f"{path}: the manifest must be a JSON object")
    version = manifest.get("schema_version")
    if version != schema.SCHEMA_VERSION:
        raise schema.SchemaError(
            f"{path}: schema_version {version!r}; this checker reads schema version {schema.SCHEMA_VERSION}"
        )
    if schema.MANIFEST_DELAY_LEVELS in manifest:
        schema.check_delay_tables(manifest[schema.MANIFEST_DELAY_LEVELS], str(path))
    return manifest


def delay_tables(spark: SparkSession, source: str | Path) -> dict[str, tuple[int, ...]]:
    """The delay tables of the traces at ``source`` by trace id (``reading.delay_tables``: the manifest of a
    directory, or the one next to a single file). On a cluster file system the manifest is read through Spark; when
    it cannot be read (there is none) every trace has the default table."""
    if not is_remote(source):
        return reading.delay_tables(Path(str(source).removeprefix("file://")))
    text = str(source).rstrip("/")
    if text.endswith((".parquet", ".jsonl", ".jsonl.gz", ".json", ".json.gz")):
        text = text.rsplit("/", 1)[0]  # a single file: the manifest next to it
    where = f"{text}/{schema.MANIFEST}"
    try:
        lines = spark.read.option("wholetext", "true").text(where).collect()
    except (AnalysisException, PySparkException):  # no manifest (the path does not exist)
        return {}
    if not lines:
        return {}
    try:
        manifest = json.loads(lines[0][0])
    except ValueError as error:
        raise schema.SchemaError(f"{where}: unreadable manifest ({error})") from None
    if not isinstance(manifest, dict) or schema.MANIFEST_DELAY_LEVELS not in manifest:
        return {}
    return schema.check_delay_tables(manifest[schema.MANIFEST_DELAY_LEVELS], where)


def _json_reader(spark: SparkSession):
    return (
        spark.read.schema(f"{schema.spark_ddl()}, `{_CORRUPT}` string")
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", _CORRUPT)
    )


def _read_raw(spark: SparkSession, source: str | Path) -> tuple[DataFrame, str]:
    """The rows of ``source`` as Spark reads them, and the format ("parquet" or "jsonl")."""
    text = str(source)
    if is_remote(text):
        # A cluster file system: no local listing, so the name decides (a directory is read as Parquet).
        if text.rstrip("/").endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz")):
            return _json_reader(spark).json(text), "jsonl"
        return spark.read.option("mergeSchema", "true").parquet(text), "parquet"
    path = Path(text.removeprefix("file://"))
    if not path.exists():
        raise schema.SchemaError(f"{path}: no such file or directory")
    base = reading.partition_base(path)
    # A trace_id=<id> partition named alone: Spark takes the trace id from the path only below its base path.
    parquet_reader = spark.read.option("basePath", str(base)) if base is not None else spark.read
    if path.is_file():
        if path.name.endswith(".parquet"):
            return parquet_reader.parquet(str(path)), "parquet"
        if path.name.endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz")):
            return _json_reader(spark).json(str(path)), "jsonl"
        raise schema.SchemaError(f"{path}: not a trace file (.parquet, .jsonl or .jsonl.gz)")
    manifest = _manifest(path) or {}
    visible = [p for p in path.rglob("*") if p.is_file() and not any(part.startswith(("_", "."))
                                                                      for part in p.relative_to(path).parts)]
    parquet = [p for p in visible if p.name.endswith(".parquet")]
    jsonl = [p for p in visible if p.name.endswith((".jsonl", ".jsonl.gz"))]
    fmt = manifest.get("format")
    if parquet and (fmt != "jsonl" or not jsonl):
        return parquet_reader.option("mergeSchema", "true").parquet(str(path)), "parquet"
    if jsonl:
        return _json_reader(spark).json([str(p) for p in sorted(jsonl)]), "jsonl"
    raise schema.SchemaError(f"{path}: no trace files (*.parquet, *.jsonl, *.jsonl.gz)")


def _required_pairs(present: set[str]) -> list[tuple[str, str, Column]]:
    """(kind, column, condition) for every column a kind requires: the condition holds on rows lacking it."""
    return [(kind.name, name, (F.col("kind") == kind.name) & (F.col(name).isNull() if name in present else F.lit(True)))
            for kind in schema.KINDS.values() for name in kind.required]


def _problem_column(present: set[str], fmt: str) -> Column:
    """Why a row breaks the schema (null when it follows it): "corrupt" (unreadable), "null:<core column>",
    "unknown" (kind), or "required" (a column its kind requires is null). Cheap per row: one hash lookup of the
    kind per required column that is null."""
    branches: list[tuple[Column, str]] = []
    if fmt == "jsonl":
        branches.append((F.col(_CORRUPT).isNotNull(), "corrupt"))
    for name in schema.CORE:
        branches.append((F.col(name).isNull(), f"null:{name}"))
    branches.append((~F.col("kind").isin(list(schema.KINDS)), "unknown"))
    needing: dict[str, list[str]] = {}
    for kind in schema.KINDS.values():
        for name in kind.required:
            needing.setdefault(name, []).append(kind.name)
    lacking = F.lit(False)
    for name, kinds in needing.items():
        if name in present:
            lacking = lacking | (F.col(name).isNull() & F.col("kind").isin(kinds))
        else:
            lacking = lacking | F.col("kind").isin(kinds)
    branches.append((lacking, "required"))
    expr = F.when(branches[0][0], F.lit(branches[0][1]))
    for cond, label in branches[1:]:
        expr = expr.when(cond, F.lit(label))
    return expr


def _example_rows(raw: DataFrame, cond: Column, limit: int = 3) -> str:
    rows = raw.where(cond).select("trace_id", "seq").orderBy("trace_id", "seq").limit(limit).collect()
    return ", ".join(f"trace {r['trace_id']} seq {r['seq']}" for r in rows)


def _corrupt_detail(raw: DataFrame) -> str:
    """Which files hold unreadable lines, how many, and what is wrong with the first ones."""
    # Spark refuses queries of raw JSON that reference only the corrupt-record column: query a cached parse.
    parsed = raw.withColumn("file", F.input_file_name()).cache()
    bad = parsed.where(F.col(_CORRUPT).isNotNull()).select("file", F.col(_CORRUPT).alias("line"))
    per_file = bad.groupBy("file").count().orderBy("file").collect()
    firsts = bad.limit(3).collect()
    files = ", ".join(f"{Path(r['file']).name} ({r['count']})" for r in per_file[:5])
    reasons = []
    for r in firsts:
        line = r["line"]
        try:
            row = json.loads(line)
        except ValueError as error:
            reasons.append(f"{Path(r['file']).name}: not JSON ({error}): {line[:80]!r}")
            continue
        try:
            if not isinstance(row, dict):
                raise schema.SchemaError(f"a line must be a JSON object, not {type(row).__name__}")
            schema.check_row(row)
            reasons.append(f"{Path(r['file']).name}: does not match the schema: {line[:80]!r}")
        except schema.SchemaError as error:
            reasons.append(f"{Path(r['file']).name}: {error}")
    total = sum(r["count"] for r in per_file)
    parsed.unpersist()
    return f"{total} unreadable line(s) in {files}; " + "; ".join(reasons)


def _validate(raw: DataFrame, base: DataFrame, fmt: str) -> tuple[dict[str, int], int]:
    """Row counts per kind and the number of traces (one job); raise SchemaError naming every problem found (with a
    few example rows)."""
    stats = base.groupBy("kind", _PROBLEM, "trace_id").count().collect()
    traces = len({r["trace_id"] for r in stats if r["trace_id"] is not None})
    problems: dict[str, int] = {}
    kinds: dict[str, int] = {}
    unknown: dict[str, int] = {}
    for r in stats:
        if r[_PROBLEM] is None:
            kinds[r["kind"]] = kinds.get(r["kind"], 0) + r["count"]
        elif r[_PROBLEM] == "unknown":
            unknown[r["kind"]] = unknown.get(r["kind"], 0) + r["count"]
        else:
            problems[r[_PROBLEM]] = problems.get(r[_PROBLEM], 0) + r["count"]
    if not problems and not unknown:
        if not kinds:
            raise schema.SchemaError("the trace has no events")
        return kinds, traces
    lines = []
    if "corrupt" in problems:
        lines.append(_corrupt_detail(raw))
    for name in schema.CORE:
        n = problems.get(f"null:{name}", 0)
        if n:
            total = sum(r["count"] for r in stats)
            if n == total:
                lines.append(f"missing column {name!r}; every trace row needs {', '.join(schema.CORE)}")
            else:
                lines.append(f"{n} row(s) without {name!r}")
    if unknown:
        listed = ", ".join(f"{k!r} ({n} row(s); {_example_rows(raw, F.col('kind') == k, 1)})"
                           for k, n in sorted(unknown.items())[:5])
        lines.append(f"{sum(unknown.values())} row(s) of unknown kinds: {listed}; kinds are: {', '.join(schema.KINDS)}")
    if problems.get("required"):
        present = set(raw.columns)
        pairs = _required_pairs(present)
        tallies = raw.select(*[F.sum(cond.cast("int")).alias(f"c{i}") for i, (_, _, cond) in enumerate(pairs)]).first()
        for i, (kind, name, cond) in enumerate(pairs):
            n = tallies[f"c{i}"] or 0
            if n:
                where = _example_rows(raw, cond) if name in present else "the column is absent"
                lines.append(f"{n} {kind} row(s) without {name!r}, which the kind requires ({where})")
    raise schema.SchemaError("bad trace: " + "; ".join(lines))


def _estimated_events(source: str | Path) -> int | None:
    """About how many events the trace's files hold (Parquet takes some 16 bytes an event, JSON Lines some 300);
    None when they cannot be listed (a cluster file system)."""
    path = Path(str(source).removeprefix("file://"))
    try:
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        size = sum(p.stat().st_size * (300 // 16 if p.name.endswith(".parquet") else 1) for p in files)
    except OSError:
        return None
    return size // 300 if files else None


def _small_input(source: str | Path) -> bool:
    """Whether a JVM tuned to start fast (:data:`SMALL_JVM_OPTIONS`) suits the trace: fewer than about
    :data:`CACHED` events (221k events: 30 s instead of 45; 1M: no slower; docs/benchmarks.md)."""
    return _cached_input(source)


def _cached_input(source: str | Path) -> bool:
    """Whether the trace is read once into memory (fewer than about :data:`CACHED` events) rather than read again,
    only the columns needed, by each check."""
    events = _estimated_events(source)
    return events is not None and 0 < events < CACHED


def _input_bytes(source: str | Path) -> int:
    """The size of the trace's files (0 when it cannot be listed, e.g. on a cluster file system)."""
    path = Path(str(source).removeprefix("file://"))
    try:
        if path.is_file():
            return path.stat().st_size
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    except OSError:
        return 0


def load(spark: SparkSession, source: str | Path) -> tuple[DataFrame, dict[str, int], int]:
    """Read, validate and cache ``source``: the cached DataFrame of :data:`NEEDED` columns, rows per kind and the
    number of traces. Raises SchemaError for bad input."""
    # PySpark logs the query context of an analysis error as it raises it; a reading error becomes a SchemaError
    # with its own message, so those logs would only repeat it as a JVM stack on stderr.
    quiet = _quiet_query_context_logs()
    try:
        return _load(spark, source)
    finally:
        for logger, level in quiet:
            logger.setLevel(level)


def _quiet_query_context_logs() -> list[tuple[logging.Logger, int]]:
    from pyspark.logger import PySparkLogger

    saved = []
    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        logger = PySparkLogger.getLogger(name)
        saved.append((logger, logger.level))
        logger.setLevel(logging.CRITICAL)
    return saved


def _load(spark: SparkSession, source: str | Path) -> tuple[DataFrame, dict[str, int], int]:
    try:
        raw, fmt = _read_raw(spark, source)
        types = {f.name: f.dataType.simpleString() for f in raw.schema.fields if f.name != _CORRUPT}
        schema.check_columns(types, {n: t for n, t in types.items() if n in schema.COLUMN_TYPES})
        present = set(types)
        cols = [
            (F.col(n).cast(schema.COLUMN_TYPES[n]) if n in present else F.lit(None).cast(schema.COLUMN_TYPES[n]))
            .alias(n)
            for n in NEEDED
        ]
        problem = _problem_column(present, fmt).alias(_PROBLEM)
        if fmt == "parquet" and not _cached_input(source):
            # Large Parquet is not cached: each check reads only its columns, which costs less than building an
            # in-memory copy of every column; validation is one aggregation over the files.
            kinds, traces = _validate(raw, raw.select("kind", problem, "trace_id"), fmt)
            return raw.select(*cols), kinds, traces
        # JSON Lines is parsed once, into a cache of the needed columns. About 64 MB of input per partition, at
        # least one per core: small traces in many files get few partitions (every later stage over the cache has
        # as many tasks), a big gzip file is split up.
        base = raw.select(*cols, problem)
        par = spark.sparkContext.defaultParallelism
        target = max(par, _input_bytes(source) // (64 << 20))
        parts = base.rdd.getNumPartitions()
        if parts > target:
            base = base.coalesce(target)
        elif parts < par:
            base = base.repartition(par)
        base = base.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            kinds, traces = _validate(raw, base, fmt)
        except schema.SchemaError:
            base.unpersist()
            raise
    except schema.SchemaError:
        raise
    except (AnalysisException, PySparkException) as error:
        raise schema.SchemaError(f"{source}: cannot read the trace: {_short(error)}") from None
    except Exception as error:  # Py4J errors from the reader (unreadable Parquet, permissions, ...)
        if type(error).__module__.startswith("py4j"):
            raise schema.SchemaError(f"{source}: cannot read the trace: {_short(error)}") from None
        raise
    return base.drop(_PROBLEM), kinds, traces


# ----------------------------------------------------------------------------------------------------------------
# shared expressions


def user_topic(topic: Column) -> Column:
    """:func:`invariants.is_user_topic` as a Spark expression (a test holds the two to the same answers)."""
    from rocketspec.spec.protocol import (
        DLQ_GROUP_TOPIC_PREFIX,
        RETRY_GROUP_TOPIC_PREFIX,
        SYSTEM_TOPIC_PREFIX,
    )

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
    return status.isin(sorted(inv.SUCCESS_STATUSES))


def _one_per_row(violations: DataFrame) -> DataFrame:
    """One violation per row however many parts of a rule it breaks: the reasons are joined."""
    others = [c for c in violations.columns if c not in ("trace_id", "seq", "reason")]
    return violations.groupBy("trace_id", "seq").agg(
        *[F.first(c, True).alias(c) for c in others],
        F.concat_ws("; ", F.sort_array(F.collect_set("reason"))).alias("reason"))


def _first_cause(flags: Sequence[tuple[str, Column]]) -> Column:
    expr = None
    for cause, flag in flags:
        expr = F.when(flag, F.lit(cause)) if expr is None else expr.when(flag, F.lit(cause))
    return expr if expr is not None else F.lit(None).cast("string")


# ----------------------------------------------------------------------------------------------------------------
# oracle UDF bodies (module level so that workers import them and keep their memos across tasks)

_MEMO: dict[tuple[Any, ...], Any] = {}


def _memo(key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    try:
        return _MEMO[key]
    except KeyError:
        if len(_MEMO) > 1_000_000:
            _MEMO.clear()
        value = _MEMO[key] = compute()
        return value


def _pull_reasons(broker_side: pd.Series, offset: pd.Series, min_offset: pd.Series, max_offset: pd.Series,
                  status: pd.Series, has_next: pd.Series, next_offset: pd.Series, has_code: pd.Series,
                  code: pd.Series) -> pd.Series:
    """pull_oracle per row: why the row disagrees with the pull-correction oracles, or None."""
    from rocketspec.spec import pull_correction
    from rocketspec.spec.protocol import GetMessageStatus, ResponseCode

    def bounds(o: int, lo: int, hi: int) -> Any:
        return _memo(("bounds", o, lo, hi), lambda: pull_correction.bounds_decision(o, lo, hi))

    def codes(st: str, o: int) -> frozenset[int] | None:
        def compute() -> frozenset[int] | None:
            try:
                gms = GetMessageStatus[st]
            except KeyError:
                return None
            answers = (pull_correction.response_code(gms, requested_offset=o, suspend=s) for s in (True, False))
            return frozenset(int(a.code) for a in answers if a.code is not None)

        return _memo(("code", st, o), compute)

    def client(c: int) -> str | None:
        def compute() -> str | None:
            try:
                rc = ResponseCode(c)
            except ValueError:
                return None
            ps = pull_correction.pull_status(rc)
            return None if ps is None else ps.name

        return _memo(("pull_status", c), compute)

    out: list[str | None] = []
    for bs, o, lo, hi, st, hn, nx, hc, c in zip(
        broker_side.tolist(), offset.tolist(), min_offset.tolist(), max_offset.tolist(), status.tolist(),
        has_next.tolist(), next_offset.tolist(), has_code.tolist(), code.tolist(), strict=True,
    ):
        nxt = nx if hn else None
        reason = None
        if bs:
            decision = bounds(o, lo, hi)
            if decision is not None:
                if st != decision.status.name or nxt != decision.next_begin_offset:
                    reason = (f"bounds_decision({o}, {lo}, {hi}) gives {decision.status.name} next "
                              f"{decision.next_begin_offset}, the row has {st} next {nxt}")
            elif st not in SCAN_STATUSES or nxt is None or not lo <= nxt <= hi:
                reason = (f"offset {o} is readable in [{lo}, {hi}): status {st} next {nxt} is not a scan's "
                          f"(status one of {', '.join(SCAN_STATUSES)}, next within [{lo}, {hi}])")
            if reason is None and hc:
                allowed = codes(st, o)
                if allowed is None:
                    reason = f"status {st} is not a GetMessageStatus"
                elif c not in allowed:
                    reason = f"code {c} for {st} at offset {o}; response_code gives {sorted(allowed) or 'none'}"
        elif hc:
            expected = client(c) or "ERROR"  # None: the client raises MQBrokerException
            if expected != st:
                reason = f"code {c}: pull_status gives {expected}, the row has {st}"
        out.append(reason)
    return pd.Series(out, dtype=object)


def _allocate_reasons(strategy: pd.Series, node: pd.Series, topic: pd.Series, all_queues: pd.Series,
                      consumers: pd.Series, queues: pd.Series) -> pd.Series:
    """single_owner (a): why a rebalance.assign differs from rebalance.allocate, or None."""
    from rocketspec.spec import MessageQueue, rebalance

    def parse(q: str) -> MessageQueue:
        broker, _, qid = q.rpartition(":")
        return MessageQueue(topic=t, broker_name=broker, queue_id=int(qid))

    out: list[str | None] = []
    for s, n, t, aq, cs, qs in zip(strategy.tolist(), node.tolist(), topic.tolist(), all_queues.tolist(),
                                   consumers.tolist(), queues.tolist(), strict=True):
        key = ("allocate", s, n, t, tuple(aq), tuple(cs))

        def compute(s: str = s, n: str = n, aq: Any = aq, cs: Any = cs) -> frozenset[str] | str:
            try:
                given = rebalance.allocate(s, n, [parse(q) for q in aq], list(cs))
            except ValueError as error:
                return f"allocate raised {error}"
            return frozenset(f"{q.broker_name}:{q.queue_id}" for q in given)

        expected = _memo(key, compute)
        if isinstance(expected, str):
            out.append(expected)
        elif expected != frozenset(qs):
            out.append(f"{s} gives {sorted(expected)}, the row lists {sorted(set(qs))}")
        else:
            out.append(None)
    return pd.Series(out, dtype=object)


def _answer(value: Any) -> Any:
    """An oracle's answer for a decision table: None where the oracle refuses the values."""
    return None if isinstance(value, oracles.Refused) else value


def attempt_limit_or_none(mode: str | None, retry_times: int, retry_times_async: int) -> int | None:
    """send_retry.attempt_limit (SEND-1, SEND-9) for a mode's name; None for a mode that is not one."""
    return _answer(oracles.attempt_limit(mode, retry_times, retry_times_async))


def within_budget_or_none(elapsed_ms: int, timeout_ms: int) -> bool | None:
    """send_retry.attempt_within_budget (SEND-2)."""
    return _answer(oracles.within_budget(elapsed_ms, timeout_ms))


def send_back_target_or_none(reconsume_times: int, max_reconsume_times: int) -> str | None:
    """retry_delay_dlq (a): where consume_retry.consumer_send_back(r, 0, max) sends the copy (a Target name; None
    when the oracle refuses the values)."""
    return _answer(oracles.send_back_target(reconsume_times, 0, max_reconsume_times))


def delay_millis_column(level: str, table: str) -> Column:
    """consume_retry.delay_millis(level, table) as a Spark column, for ``level`` already clamped to 1..len(table)
    (RETRY-1, RETRY-2): the table's entry at that level. ``tests/test_traces_sparkcheck.py`` proves it equal to
    the oracle on every level 1..36 and the tables a trace can carry."""
    return F.element_at(F.col(table), F.col(level))


OWNER_SCHEMA = "trace_id string, seq bigint, group string, topic string, node string, reason string"


def _replay_owners(rows: pd.DataFrame) -> pd.DataFrame:
    """single_owner (b) for one (trace_id, group, topic): replay assignments and lifecycles in seq order."""
    rows = rows.sort_values("seq", kind="stable")
    latest: dict[str, tuple[frozenset[str], frozenset[str] | None, frozenset[str]]] = {}
    last_action: dict[str, str] = {}
    reported = False
    out = []
    for r in rows.itertuples(index=False):
        if r.kind == "rebalance.assign":
            all_q = None if r.all_queues is None else frozenset(r.all_queues)
            latest[r.node] = (frozenset(r.consumers), all_q, frozenset(r.queues))
        else:
            last_action[r.node] = r.action
        live = {n for n in latest if last_action.get(n) not in STOPPED}
        views = [latest[n] for n in live]
        agree = all(v[0] == live for v in views) and len({v[1] for v in views if v[1] is not None}) <= 1
        if not agree:
            reported = False
            continue
        owner: dict[str, str] = {}
        clash = None
        for n in sorted(live):
            for q in sorted(latest[n][2]):
                if q in owner:
                    clash = (q, owner[q], n)
                    break
                owner[q] = n
            if clash:
                break
        if clash and not reported:
            reported = True
            out.append((r.trace_id, int(r.seq), r.group, r.topic, r.node,
                        f"queue {clash[0]} owned by {clash[1]} and {clash[2]} while views agree"))
    return pd.DataFrame(out, columns=["trace_id", "seq", "group", "topic", "node", "reason"])


# ----------------------------------------------------------------------------------------------------------------
# the checks


def _parse_type(ddl: str) -> DataType:
    """A Spark type from its DDL name (``string``, ``int``, ``bigint``, ``boolean``)."""
    return {"string": StringType(), "int": IntegerType(), "bigint": LongType(), "boolean": BooleanType()}[ddl]


class _Checker:
    """The invariant jobs over one cached trace DataFrame."""

    def __init__(self, spark: SparkSession, ev: DataFrame, kinds: dict[str, int], traces: int,
                 delay_tables: dict[str, tuple[int, ...]] | None = None) -> None:
        self.spark = spark
        self.ev = ev
        self.kinds = kinds
        self.traces = traces
        self.delay_tables = delay_tables or {}
        self._cache: dict[str, DataFrame] = {}
        self._persisted: list[DataFrame] = []
        self._lock = threading.Lock()  # checks may run in threads
        self._cases_lock = threading.Lock()  # held while row_cases runs its job (which takes _lock)
        self._row_cases: dict[str, int] | None = None

    # helpers ------------------------------------------------------------------------------------------------------
    def with_delay_table(self, df: DataFrame) -> DataFrame:
        """``df`` with column ``delay_table``: the delay table of each row's trace (the default when the manifest
        gives none for it)."""
        default = F.array(*[F.lit(d).cast("bigint") for d in DELAY_LEVEL_MILLIS])
        if not self.delay_tables:
            return df.withColumn("delay_table", default)
        tables = self.spark.createDataFrame([(t, list(ms)) for t, ms in sorted(self.delay_tables.items())],
                                            "trace_id string, own_table array<bigint>")
        return (df.join(F.broadcast(tables), "trace_id", "left")
                .withColumn("delay_table", F.coalesce("own_table", default)).drop("own_table"))

    def has(self, *kinds: str) -> bool:
        return any(self.kinds.get(k, 0) for k in kinds)

    def kind(self, *kinds: str) -> DataFrame:
        return self.ev.where(F.col("kind").isin(list(kinds)))

    def scanned(self, name: str) -> int:
        return sum(self.kinds.get(k, 0) for k in inv.BY_NAME[name].kinds)

    def persist(self, df: DataFrame) -> DataFrame:
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        with self._lock:
            self._persisted.append(df)
        return df

    def release(self) -> None:
        with self._lock:
            for df in self._persisted:
                df.unpersist()
            self._persisted.clear()

    def shared(self, name: str, build: Callable[[], DataFrame]) -> DataFrame:
        """A DataFrame several checks use, built and persisted once."""
        with self._lock:
            if name not in self._cache:
                self._cache[name] = build().persist(StorageLevel.MEMORY_AND_DISK)
                self._persisted.append(self._cache[name])
            return self._cache[name]

    def decided(self, df: DataFrame, inputs: Sequence[str], output: str, output_type: str,
                decide: Callable[..., Any]) -> DataFrame:
        """``df`` with column ``output``: ``decide(*inputs)`` evaluated on the driver once per distinct tuple of the
        input columns' values and joined back as a broadcast decision table. The oracle stays the one source of the
        rule and no row goes through Python; the inputs are few distinct values (a mode, a count, a budget), so the
        table is small. Null inputs match null (the join is null-safe)."""
        keys = df.select(*inputs)
        values = [tuple(row) for row in keys.distinct().collect()]
        fields = [StructField(f"_in{i}", field.dataType, True) for i, field in enumerate(keys.schema.fields)]
        table_schema = StructType([*fields, StructField(output, _parse_type(output_type), True)])
        table = self.spark.createDataFrame([(*v, decide(*v)) for v in values], table_schema)
        condition = [df[name].eqNullSafe(table[f"_in{i}"]) for i, name in enumerate(inputs)]
        joined = df.join(F.broadcast(table), condition, "left")
        return joined.drop(*[f"_in{i}" for i in range(len(inputs))])

    def broadcasting_groups(self) -> DataFrame:
        return self.shared("broadcasting", lambda: self.kind("rebalance.assign")
                           .where(F.col("strategy") == inv.BROADCASTING).select("trace_id", "group").distinct())

    def clustering(self, df: DataFrame) -> DataFrame:
        """Rows of clustering groups only (no rebalance.assign of the group has strategy BROADCASTING)."""
        return df.join(F.broadcast(self.broadcasting_groups()), ["trace_id", "group"], "left_anti")

    def group_disturbances(self) -> DataFrame:
        """(trace_id, group, seq, _cause) of the disturbances of one group: rebalance, client, offset_illegal."""

        def build() -> DataFrame:
            assign = self.kind("rebalance.assign").select(
                "trace_id", "group", "node", "topic", "seq", F.array_sort(F.array_distinct("queues")).alias("qs"))
            w = Window.partitionBy("trace_id", "group", "node", "topic").orderBy("seq")
            rebalance = (assign.withColumn("prev", F.lag("qs").over(w))
                         .where(F.col("prev").isNull() | (F.col("prev") != F.col("qs")))
                         .select("trace_id", "group", "seq", F.lit("rebalance").alias("_cause")))
            client = self.kind("client.lifecycle").select("trace_id", "group", "seq", F.lit("client").alias("_cause"))
            illegal = (self.kind("pull.response")
                       .where((F.col("node") != F.col("broker")) & (F.col("status") == "OFFSET_ILLEGAL"))
                       .select("trace_id", "group", "seq", F.lit("offset_illegal").alias("_cause")))
            return rebalance.unionByName(client).unionByName(illegal)

        return self.shared("group_disturbances", build)

    def global_disturbances(self) -> DataFrame:
        """(trace_id, seq, _cause) of the disturbances of every group: broker_restart, fault, deletion."""
        labels = F.when(F.col("kind") == "broker.restart", F.lit("broker_restart")).when(
            F.col("kind") == "fault.inject", F.lit("fault")).otherwise(F.lit("deletion"))
        return self.shared("global_disturbances", lambda: self.kind("broker.restart", "fault.inject", "store.delete")
                           .select("trace_id", "seq", labels.alias("_cause")))

    def with_last_disturbances(self, q: DataFrame) -> DataFrame:
        """``q`` (with trace_id, group, seq) plus ``_L_<cause>``: the seq of the last disturbance of that cause of
        the row's group before the row (null: none). A disturbance lies in (a, seq) exactly when ``_L_c > a``."""
        cols = q.columns
        out = q
        if self.has("rebalance.assign", "client.lifecycle", "pull.response"):
            u = out.withColumn("_cause", F.lit(None).cast("string")).unionByName(
                self.group_disturbances(), allowMissingColumns=True)
            w = Window.partitionBy("trace_id", "group").orderBy("seq").rowsBetween(_U, Window.currentRow)
            out = u.select(*cols, "_cause", *[F.max(F.when(F.col("_cause") == c, F.col("seq"))).over(w)
                                              .alias(f"_L_{c}") for c in GROUP_CAUSES])
            out = out.where(F.col("_cause").isNull()).drop("_cause")
        else:
            out = out.select(*cols, *[F.lit(None).cast("bigint").alias(f"_L_{c}") for c in GROUP_CAUSES])
        cols = out.columns
        if self.has("broker.restart", "fault.inject", "store.delete"):
            u = out.withColumn("_cause", F.lit(None).cast("string")).unionByName(
                self.global_disturbances(), allowMissingColumns=True)
            w = Window.partitionBy("trace_id").orderBy("seq").rowsBetween(_U, Window.currentRow)
            out = u.select(*cols, "_cause", *[F.max(F.when(F.col("_cause") == c, F.col("seq"))).over(w)
                                              .alias(f"_L_{c}") for c in GLOBAL_CAUSES])
            out = out.where(F.col("_cause").isNull()).drop("_cause")
        else:
            out = out.select(*cols, *[F.lit(None).cast("bigint").alias(f"_L_{c}") for c in GLOBAL_CAUSES])
        return out

    def with_shared_queue(self, out: DataFrame) -> DataFrame:
        """``out`` (rows with trace_id, seq, group, topic, broker, queue_id and ``_cause``) with ``_cause`` set to
        shared_queue where it is null and the row's queue is a shared queue of its group at its seq: two or more
        nodes of the group, live (last client.lifecycle of the group before the row not shutdown or crash), list
        the queue in their latest rebalance.assign of the topic before the row."""
        out = self.persist(out)
        candidates = out.where(F.col("_cause").isNull()).select("trace_id", "seq", "group", "topic", "broker",
                                                                 "queue_id")
        if not self.has("rebalance.assign") or not candidates.take(1):
            return out
        candidates = self.persist(candidates)
        where = candidates.select("trace_id", "group", "topic").distinct()
        assigns = (self.kind("rebalance.assign").join(F.broadcast(where), ["trace_id", "group", "topic"], "left_semi")
                   .select("trace_id", "group", "topic", "node", "seq", "queues", F.lit(None).cast("string")
                           .alias("action")))
        # A node's lifecycle rows of the group count for every topic it has an assignment of.
        topics = assigns.select("trace_id", "group", "node", "topic").distinct()
        lifecycles = (self.kind("client.lifecycle").select("trace_id", "group", "node", "seq", "action")
                      .join(topics, ["trace_id", "group", "node"])
                      .select("trace_id", "group", "topic", "node", "seq", F.lit(None).cast("array<string>")
                              .alias("queues"), "action"))
        # The state after each of the node's rows holds until its next row: (seq, next seq) with its latest queues
        # and whether its latest lifecycle leaves it live.
        w = Window.partitionBy("trace_id", "group", "topic", "node").orderBy("seq")
        upto = w.rowsBetween(_U, Window.currentRow)
        states = (assigns.unionByName(lifecycles)
                  .select("trace_id", "group", "topic", "node", F.col("seq").alias("lo"),
                          F.lead("seq").over(w).alias("hi"),
                          F.last("queues", ignorenulls=True).over(upto).alias("owned"),
                          F.last("action", ignorenulls=True).over(upto).alias("last_action"))
                  .where(F.col("owned").isNotNull()
                         & (F.col("last_action").isNull() | ~F.col("last_action").isin(list(STOPPED))))
                  .select("trace_id", "group", "topic", "node", "lo", "hi", F.explode(F.array_distinct("owned"))
                          .alias("queue")))
        keyed = candidates.withColumn("queue", F.concat_ws(":", "broker", F.col("queue_id").cast("string")))
        shared = (keyed.join(states, ["trace_id", "group", "topic", "queue"])
                  .where((F.col("lo") < F.col("seq")) & (F.col("hi").isNull() | (F.col("seq") < F.col("hi"))))
                  .groupBy("trace_id", "seq").agg(F.countDistinct("node").alias("_owners"))
                  .where(F.col("_owners") >= 2).select("trace_id", "seq", F.lit(True).alias("_shared")))
        return (out.join(shared, ["trace_id", "seq"], "left")
                .withColumn("_cause", F.coalesce("_cause", F.when(F.col("_shared"), F.lit(inv.SHARED_QUEUE))))
                .drop("_shared"))

    def result(self, name: str, violations: DataFrame | None, counts: dict[str, int] | None = None,
               n: int | None = None, judged: int | None = None) -> InvariantResult:
        """Count ``violations`` (rows with trace_id, seq, reason and key columns) and keep the first samples;
        ``judged``: the cases judged (invariants.CASES), else those of :meth:`row_cases`."""
        samples: tuple[dict[str, Any], ...] = ()
        if violations is not None and n != 0:
            rows = violations.orderBy("trace_id", "seq").limit(inv.MAX_SAMPLES).collect()
            samples = sample_rows([r.asDict() for r in rows])
            if n is None:
                # Fewer than the samples kept: that is all of them, and counting them again would be one more job.
                n = len(rows) if len(rows) < inv.MAX_SAMPLES else violations.count()
        if judged is None:
            judged = self.row_cases().get(name, 0)
        return InvariantResult(name, self.scanned(name), n or 0, samples, dict(counts or {}), judged=judged)

    def row_cases(self) -> dict[str, int]:
        """The cases judged of the invariants whose cases are rows (invariants.CASES), counted in one job."""
        with self._cases_lock:
            if self._row_cases is None:
                flagged = self.ev.join(F.broadcast(self.broadcasting_groups().withColumn("_bc", F.lit(True))),
                                       ["trace_id", "group"], "left")
                clustering = F.col("_bc").isNull()
                kind = F.col("kind")
                broker_side = F.coalesce(F.col("node") == F.col("broker"), F.lit(False))

                def n(cond: Column) -> Column:
                    return F.sum(F.coalesce(cond, F.lit(False)).cast("long"))

                cases = {
                    "send_retry": n(kind == "send.attempt"),
                    "pull_oracle": n((kind == "pull.response") & (
                        (broker_side & F.col("min_offset").isNotNull() & F.col("max_offset").isNotNull())
                        | (~broker_side & F.col("code").isNotNull() & F.col("derived").isNull()))),
                    "duplicates_allowed": n((kind == "consume.result") & clustering),
                    "offset_no_regression": n((kind == "offset.commit") & clustering),
                    "single_owner": n((kind == "rebalance.assign") & clustering),
                    "retry_delay_dlq": n((kind == "consume.deliver") | (
                        (kind == "sendback") & (F.col("via") == "broker") & broker_side
                        & F.col("target").isNotNull() & F.col("delay_level").isNotNull())),
                }
                row = flagged.agg(*(c.alias(name) for name, c in cases.items())).collect()[0]
                self._row_cases = {name: int(row[name] or 0) for name in cases}
            return dict(self._row_cases)

    def classified(self, name: str, rows: DataFrame, cause: str = "_cause") -> InvariantResult:
        """Rows that are either allowed (``cause`` set: counted per cause) or violations (``cause`` null)."""
        rows = self.persist(rows)
        tallies = {r[cause]: r["count"] for r in rows.groupBy(cause).count().collect()}
        n = tallies.pop(None, 0)
        result = self.result(name, rows.where(F.col(cause).isNull()).drop(cause), tallies, n)
        return result

    # invariants ---------------------------------------------------------------------------------------------------
    def no_lost_message(self) -> InvariantResult:
        name = "no_lost_message"
        settled = (self.kind("trace.end").where(F.col("status") == schema.SETTLED).select("trace_id").distinct())
        settled = self.persist(settled)
        n_settled = settled.count()
        n_traces = self.traces
        counts = {inv.SKIPPED: n_traces - n_settled} if n_traces > n_settled else {}
        # (a) acknowledged sends stored, in every trace that records puts (settled or cut: a put comes before the
        # answer that acknowledges it)
        all_puts = self.kind("store.put")
        recorded = F.broadcast(all_puts.select("trace_id").distinct())
        halves = self.kind("txn.half").select("trace_id", "msg_id").distinct()
        acked = self.persist(self.kind("send.result")
                             .where((F.col("status") == "SEND_OK") & user_topic(F.col("topic")))
                             .join(halves, ["trace_id", "msg_id"], "left_anti"))
        n_unjudged = acked.join(recorded, "trace_id", "left_anti").select("trace_id").distinct().count()
        if n_unjudged:
            counts[inv.PART_A_SKIPPED] = n_unjudged
        judged = acked.join(recorded, "trace_id", "left_semi").count()
        # A delayed message reaches its topic when its level is due: in a trace cut before that, its put in the
        # schedule topic is all there is.
        parked_unsettled = (all_puts.where(F.col("topic") == SCHEDULE_TOPIC).select("trace_id", "msg_id").distinct()
                            .join(F.broadcast(settled), "trace_id", "left_anti"))
        acked = (acked.join(recorded, "trace_id", "left_semi")
                 .join(all_puts.select("trace_id", "msg_id", "topic"), ["trace_id", "msg_id", "topic"], "left_anti")
                 .join(parked_unsettled, ["trace_id", "msg_id"], "left_anti")
                 .select("trace_id", "seq", F.lit("acknowledged (SEND_OK) but never stored in its topic")
                         .alias("reason"), "node", "topic", "broker", "queue_id", "msg_id"))
        if not n_settled:
            return self.result(name, acked, counts, judged=judged)
        b_settled = F.broadcast(settled)
        puts = all_puts.join(b_settled, "trace_id", "left_semi")
        # (b) every due copy delivered to each live clustering group: due to G when G pulled the queue from at or
        # before the copy's offset and G's latest subscription expression of the topic selects the copy's tags.
        assign = self.clustering(self.kind("rebalance.assign").join(b_settled, "trace_id", "left_semi"))
        requests = self.clustering(self.kind("pull.request").join(b_settled, "trace_id", "left_semi"))
        positions = requests.groupBy(*QUEUE, "group").agg(F.min("offset").alias("lowest_pull"))
        expressions = assign.groupBy("trace_id", "group", "topic").agg(
            F.max_by("expression", "seq").alias("expression"))
        lifecycle = (self.kind("client.lifecycle").groupBy("trace_id", "node", "group")
                     .agg(F.max_by("action", "seq").alias("last_action")))
        live = (assign.select("trace_id", "group", "node").unionByName(requests.select("trace_id", "group", "node"))
                .distinct()
                .join(lifecycle, ["trace_id", "node", "group"], "left")
                .where(F.col("last_action").isNull() | ~F.col("last_action").isin(list(STOPPED)))
                .select("trace_id", "group").distinct())
        copies = (puts.where(user_topic(F.col("topic")))
                  .select("trace_id", "seq", "topic", "broker", "queue_id", "offset", "msg_id", "tags"))
        due = (copies.join(positions, list(QUEUE)).where(F.col("lowest_pull") <= F.col("offset"))
               .join(expressions, ["trace_id", "group", "topic"], "left")
               .where(tag_matches(F.col("expression"), F.col("tags")))
               .select("trace_id", "seq", "topic", "broker", "queue_id", "offset", "msg_id", "group")
               .join(F.broadcast(live), ["trace_id", "group"], "left_semi"))
        due = self.persist(due)
        judged += due.count()
        successes = (self.kind("consume.result").where(_success(F.col("status")))
                     .select("trace_id", "group", "msg_id").distinct())
        dead = (puts.where(F.col("topic").startswith(DLQ))
                .select("trace_id", F.expr(f"substring(topic, {len(DLQ) + 1})").alias("group"), "msg_id"))
        deleted = self.kind("store.delete").groupBy(*QUEUE).agg(F.max("offset").alias("deleted_below"))
        undelivered = (due.join(successes, ["trace_id", "group", "msg_id"], "left_anti")
                       .join(dead, ["trace_id", "group", "msg_id"], "left_anti")
                       .join(deleted, list(QUEUE), "left"))
        undelivered = self.persist(undelivered)
        exempt = F.col("deleted_below").isNotNull() & (F.col("deleted_below") > F.col("offset"))
        n_exempt = undelivered.where(exempt).count()
        if n_exempt:
            counts[inv.EXEMPT_DELETED] = n_exempt
        lost = (undelivered.where(~exempt)
                .select("trace_id", "seq", F.concat(F.lit("copy never delivered to group "), F.col("group"))
                        .alias("reason"), "group", "topic", "broker", "queue_id", "offset", "msg_id"))
        return self.result(name, acked.unionByName(lost, allowMissingColumns=True), counts, judged=judged)

    def duplicates_allowed(self) -> InvariantResult:
        name = "duplicates_allowed"
        results = self.clustering(self.kind("consume.result")).select(
            "trace_id", "group", "msg_id", "seq", "status", "node", "topic", "broker", "queue_id", "offset")
        w = Window.partitionBy("trace_id", "group", "msg_id").orderBy("seq").rowsBetween(_U, -1)
        dups = (results.withColumn("first_success", F.min(F.when(_success(F.col("status")), F.col("seq"))).over(w))
                .where(F.col("first_success").isNotNull()))
        dups = self.persist(dups)
        if not dups.take(1):
            return self.result(name, None, {}, 0)
        keys = dups.select("trace_id", "msg_id").distinct()
        puts = self.kind("store.put").join(keys, ["trace_id", "msg_id"], "left_semi")
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
        rows = self.with_last_disturbances(rows)
        flags = [("stored_twice", F.col("stored_twice"))]
        flags += [(c, F.col(f"_L_{c}") > F.col("origin")) for c in DISTURBANCES]
        out = rows.select(
            "trace_id", "seq", "group", "msg_id", "node", "topic", "broker", "queue_id", "offset", "status",
            "first_success", "origin", _first_cause(flags).alias("_cause"),
            F.format_string("consume.result after the group's first success (seq %d) with no stored_twice, no "
                            "disturbance of the group in (%d, %d) and its queue not shared", "first_success",
                            "origin", "seq").alias("reason"))
        return self.classified(name, self.with_shared_queue(out))

    def offset_no_regression(self) -> InvariantResult:
        name = "offset_no_regression"
        key = list(KEY)
        commits = self.clustering(self.kind("offset.commit")).select(*key, "seq", "offset", "node")
        # Some commit lies between s (the latest earlier commit with an offset <= this one) and this one exactly
        # when the previous commit of the key is higher.
        commits = commits.withColumn("previous", F.lag("offset").over(Window.partitionBy(*key).orderBy("seq")))
        commits = self.persist(commits)
        regressed = commits.where(F.col("offset") < F.col("previous"))
        if not regressed.take(1):
            return self.result(name, None, {}, 0)
        # Only keys with a regression need their epochs: everything below runs on those keys' commits.
        sub = commits.join(F.broadcast(regressed.select(*key).distinct()), key, "left_semi")
        sub = self.with_last_disturbances(sub).repartition(*key)
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
        return self.classified(name, self.with_shared_queue(out))

    def offset_not_past_unconsumed(self) -> InvariantResult:
        name = "offset_not_past_unconsumed"
        key = list(KEY)
        commits = self.clustering(self.kind("offset.commit")).select(*key, F.col("seq").alias("t"),
                                                                      F.col("offset").alias("o"))
        commits = self.persist(commits)
        stats = self.persist(commits.groupBy(*key).agg(F.count("*").alias("n"), F.min("t").alias("t0"),
                                                       F.max("t").alias("t1")))
        if not self.has("consume.deliver"):
            return self.result(name, None, {}, 0, judged=0)
        # d: first delivery of (key, x); c: first completion after d (a success for x in the queue, or a sendback;
        # for a delivery derived from the wire, only a sendback: it is not judged without one).
        deliver = F.col("kind") == "consume.deliver"
        events = (self.clustering(self.kind("consume.deliver", "consume.result"))
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
        sendbacks = (self.kind("sendback").where(F.col("via").isin(sorted(inv.SENT_BACK_VIAS)))
                     .select("trace_id", "group", "msg_id", F.col("seq").alias("sb")))
        if self.has("sendback"):
            first_sb = (events.select("trace_id", "group", "msg_id", "x", "topic", "broker", "queue_id", "d")
                        .join(sendbacks, ["trace_id", "group", "msg_id"])
                        .where(F.col("sb") > F.col("d")).groupBy(*key, "x").agg(F.min("sb").alias("sb")))
            events = events.join(first_sb, [*key, "x"], "left").withColumn("c", F.least("c", "sb")).drop("sb")
        events = self.persist(events.where(~F.col("derived") | F.col("c").isNotNull()))
        judged = events.count()
        if not stats.take(1):
            return self.result(name, None, {}, 0, judged=judged)
        events = events.join(F.broadcast(stats), key)  # keys without commits cannot violate
        # The first OFFSET_ILLEGAL of the group for the queue after d exempts every later commit: the interval ends.
        illegal = (self.kind("pull.response")
                   .where((F.col("node") != F.col("broker")) & (F.col("status") == "OFFSET_ILLEGAL"))
                   .select(*key, "seq"))
        if self.has("pull.response"):
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
        if self.has("store.delete"):
            deletes = self.kind("store.delete").select(*QUEUE, F.col("seq").alias("e"),
                                                       F.col("offset").alias("deleted_to"))
            exempt = (candidates.join(deletes, list(QUEUE))
                      .where((F.col("e") > F.col("d")) & (F.col("e") < F.col("t"))
                             & (F.col("deleted_to") > F.col("x")))
                      .select(*key, "x", "t").distinct())
            candidates = candidates.join(exempt, [*key, "x", "t"], "left_anti")
        violations = (candidates.groupBy(*key, "t", "o")
                      .agg(F.min_by(F.struct("x", "d", "msg_id", "c"), F.col("x")).alias("p"))
                      .select(*key, F.col("t").alias("seq"), F.col("o").alias("offset"),
                              F.col("p.x").alias("unconsumed"), F.col("p.msg_id").alias("msg_id"),
                              F.col("p.d").alias("delivered_seq"),
                              F.format_string("committed offset %d passes offset %d, delivered at seq %d and not "
                                              "completed before", "o", "p.x", "p.d").alias("reason")))
        return self.result(name, violations, judged=judged)

    def single_owner(self) -> InvariantResult:
        name = "single_owner"
        assign = self.clustering(self.kind("rebalance.assign"))
        if not self.has("rebalance.assign"):
            return self.result(name, None, {}, 0)
        udf = F.pandas_udf(_allocate_reasons, "string")
        computed = (assign.where(F.col("all_queues").isNotNull() & F.col("strategy").isin(list(OWNED_STRATEGIES)))
                    .select("trace_id", "seq", "group", "topic", "node", "strategy",
                            udf("strategy", "node", "topic", "all_queues", "consumers", "queues").alias("reason"))
                    .where(F.col("reason").isNotNull()))
        topics = assign.select("trace_id", "group", "topic").distinct()
        lifecycle = (self.clustering(self.kind("client.lifecycle")).select("trace_id", "group", "node", "seq", "kind",
                                                                           "action")
                     .join(topics, ["trace_id", "group"]))
        replay_rows = assign.select("trace_id", "group", "topic", "node", "seq", "kind", "consumers", "all_queues",
                                    "queues").unionByName(lifecycle, allowMissingColumns=True)
        overlaps = replay_rows.groupBy("trace_id", "group", "topic").applyInPandas(_replay_owners, OWNER_SCHEMA)
        rows = computed.unionByName(overlaps, allowMissingColumns=True)
        return self.result(name, self.persist(rows))

    def pull_oracle(self) -> InvariantResult:
        name = "pull_oracle"
        if not self.has("pull.response"):
            return self.result(name, None, {}, 0)
        broker_side = F.col("node") == F.col("broker")
        rows = self.kind("pull.response").where(
            (broker_side & F.col("min_offset").isNotNull() & F.col("max_offset").isNotNull())
            | (~broker_side & F.col("code").isNotNull() & F.col("derived").isNull()))
        udf = F.pandas_udf(_pull_reasons, "string")
        checked = rows.select(
            "trace_id", "seq", "node", "group", "topic", "broker", "queue_id", "offset", "status", "code",
            "next_offset", "min_offset", "max_offset",
            udf(broker_side, F.col("offset"), F.coalesce("min_offset", F.lit(0)),
                F.coalesce("max_offset", F.lit(0)), F.col("status"), F.col("next_offset").isNotNull(),
                F.coalesce("next_offset", F.lit(0)), F.col("code").isNotNull(),
                F.coalesce("code", F.lit(0))).alias("reason"))
        return self.result(name, self.persist(checked.where(F.col("reason").isNotNull())))

    def send_retry(self) -> InvariantResult:
        name = "send_retry"
        if not self.has("send.attempt"):
            return self.result(name, None, {}, 0)
        sends = Window.partitionBy("trace_id", "node", "msg_id").orderBy("seq")
        running = sends.rowsBetween(_U, Window.currentRow)
        rn = F.row_number().over(sends)
        attempts = (self.kind("send.attempt")
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
        attempts = self.persist(attempts)
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
        looked = self.decided(looked, ["mode", "rt", "rta"], "most", "int", attempt_limit_or_none)
        looked = self.decided(looked, ["elapsed", "budget"], "within", "boolean", within_budget_or_none)
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
        results = (self.kind("send.result").where(~F.col("final"))
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
        if self.has("route.update"):
            routes = self.kind("route.update").select("trace_id", "node", "topic", "seq", "queues")
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
        return self.result(name, self.persist(_one_per_row(out)))

    def transaction(self) -> InvariantResult:
        name = "transaction"
        if not self.has("txn.half"):
            return self.result(name, None, {}, 0, judged=0)
        halves = self.persist(self.kind("txn.half").select("trace_id", "msg_id").distinct())
        judged = halves.count() + (self.kind("txn.check").where(F.col("action") == "check")
                                   .join(F.broadcast(halves), ["trace_id", "msg_id"], "left_semi").count())
        halves = F.broadcast(halves)
        resolving = F.col("result").isin(inv.TXN_COMMITTED, inv.TXN_ROLLED_BACK)
        ends = (self.kind("txn.end").where(F.col("result").isNotNull()).join(halves, ["trace_id", "msg_id"],
                                                                            "left_semi")
                .groupBy("trace_id", "msg_id")
                .agg(F.sum(resolving.cast("int")).alias("resolved"),
                     F.max((F.col("result") == inv.TXN_COMMITTED).cast("int")).alias("committed"),
                     F.max((F.col("result") == inv.TXN_ROLLED_BACK).cast("int")).alias("rolled_back"),
                     F.try_element_at(F.array_sort(F.collect_list(F.when(resolving, F.col("seq")))), F.lit(2))
                     .alias("seq")))
        ends = self.persist(ends)
        # (a) a second resolution is allowed when producers sent more than one deciding END_TRANSACTION, or when the
        # trace duplicated requests (TXN-11/25)
        deciding = (self.kind("txn.end").where(F.col("result").isNull()
                                               & F.col("state").isin("COMMIT_MESSAGE", "ROLLBACK_MESSAGE"))
                    .groupBy("trace_id", "msg_id").agg(F.count("*").alias("decided")))
        duplicated = (self.kind("fault.inject").where(F.col("action") == inv.DUPLICATE_FAULT).select("trace_id")
                      .distinct().withColumn("duplicated", F.lit(True)))
        again = (ends.where(F.col("resolved") > 1).join(deciding, ["trace_id", "msg_id"], "left")
                 .join(F.broadcast(duplicated), "trace_id", "left")
                 .withColumn("allowed", (F.coalesce("decided", F.lit(0)) > 1)
                             | F.coalesce("duplicated", F.lit(False))))
        again = self.persist(again)
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
        leaked = (self.kind("store.put", "consume.deliver")
                  .where((F.col("kind") == "consume.deliver") | user_topic(F.col("topic")))
                  .join(F.broadcast(rolled), ["trace_id", "msg_id"], "left_semi")
                  .select("trace_id", "seq", "msg_id", "kind", "node", "topic", F.concat(
                      F.lit("rolled-back message: "), F.col("kind"), F.lit(" exists")).alias("reason")))
        # (c) checks within the max, none after a discard
        w = Window.partitionBy("trace_id", "msg_id", "node").orderBy("seq").rowsBetween(_U, -1)  # per broker
        checks = (self.kind("txn.check").join(halves, ["trace_id", "msg_id"], "left_semi")
                  .withColumn("discarded_at", F.min(F.when(F.col("action") == "discard", F.col("seq"))).over(w))
                  .where(F.col("action") == "check"))
        most = F.greatest(F.coalesce("check_max", F.lit(inv.DEFAULT_CHECK_MAX)), F.lit(1))
        bad_checks = checks.where((F.col("check_times") > most) | F.col("discarded_at").isNotNull()).select(
            "trace_id", "seq", "msg_id", "node", "check_times", "check_max", F.when(
                F.col("discarded_at").isNotNull(),
                F.format_string("check after this broker's discard at seq %d", "discarded_at")).otherwise(
                F.format_string("check_times %d > max(check_max, 1) = %d", "check_times", most)).alias("reason"))
        rows = twice.unionByName(leaked, allowMissingColumns=True).unionByName(bad_checks, allowMissingColumns=True)
        return self.result(name, self.persist(rows), counts, judged=judged)

    def retry_delay_dlq(self) -> InvariantResult:
        name = "retry_delay_dlq"
        out: DataFrame | None = None
        counts: dict[str, int] = {}
        if self.has("sendback"):
            # A sendback row describes its copy: reconsume_times is the copy's count, delay_level the copy's level.
            # Broker-side rows only: the broker that made the copy (a client's report of the same send back is
            # not read), and only those that say where the copy went and with what level.
            sb = self.persist(self.kind("sendback").where((F.col("via") == "broker")
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
            fates = self.decided(sb.withColumn("r", F.col("reconsume_times") - 1)
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
            own = (self.kind("sendback").where((F.col("via") == "client") & (F.col("target") == retry_topic)
                                               & F.col("reconsume_times").isNotNull() & (F.col("delay_level") >= 1))
                   .select(*copy, "seq", "ts_ms", "group", "delay_level", F.lit(False).alias("judged")))
            made = self.with_delay_table(
                sb.where(F.col("target") == retry_topic)
                .select(*copy, "seq", "ts_ms", "group", "delay_level", F.lit(True).alias("judged")).unionByName(own))
            # consume_retry.delay_millis(level, table) as a column: the table's entry at the level clamped to its size
            # (a test proves it equal to the oracle on every level and table it can meet).
            made = (made.withColumn("level", F.least("delay_level", F.size("delay_table")))
                    .withColumn("delay", F.when(F.col("delay_level") >= 1, delay_millis_column("level", "delay_table")))
                    .withColumn("k", F.row_number().over(Window.partitionBy(*copy).orderBy(
                        F.col("ts_ms") + F.coalesce("delay", F.lit(0)), "seq"))))
            firsts = made.groupBy(*copy).agg(F.min("seq").alias("first_sb"))
            puts = (self.kind("store.put").where(F.col("topic").startswith(RETRY))
                    .select("trace_id", F.col("topic").alias("target"), "msg_id", "reconsume_times",
                            F.col("seq").alias("put_seq"), F.col("ts_ms").alias("put_ts"))
                    .join(firsts, copy).where(F.col("put_seq") > F.col("first_sb"))
                    .withColumn("k", F.row_number().over(Window.partitionBy(*copy).orderBy("put_seq")))
                    .drop("first_sb"))
            # A copy with more puts than copies made was stored twice (the schedule service delivers again when its
            # put answers other than PUT_OK): which put is whose is not known, so it is not judged, only counted.
            tallies = (made.groupBy(*copy).agg(F.count("*").alias("n_made"))
                       .join(puts.groupBy(*copy).agg(F.count("*").alias("n_puts")), copy))
            twice = self.persist(tallies.where(F.col("n_puts") > F.col("n_made")).select(*copy))
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
        dead = (self.kind("consume.deliver").where(F.col("topic") == F.concat(F.lit(DLQ), F.col("group")))
                .select("trace_id", "seq", "group", "msg_id", "node", "topic",
                        F.lit("delivered from the group's dead-letter topic").alias("reason")))
        out = dead if out is None else out.unionByName(dead, allowMissingColumns=True)
        return self.result(name, self.persist(_one_per_row(out)), counts)


CHECKS: dict[str, Callable[[_Checker], InvariantResult]] = {
    "no_lost_message": _Checker.no_lost_message,
    "duplicates_allowed": _Checker.duplicates_allowed,
    "offset_no_regression": _Checker.offset_no_regression,
    "offset_not_past_unconsumed": _Checker.offset_not_past_unconsumed,
    "single_owner": _Checker.single_owner,
    "pull_oracle": _Checker.pull_oracle,
    "send_retry": _Checker.send_retry,
    "transaction": _Checker.transaction,
    "retry_delay_dlq": _Checker.retry_delay_dlq,
}


#: Below this many events a trace is small: one shuffle partition and no generated code, whose compilation costs
#: more than it saves on a few thousand rows per stage.
SMALL = 200_000
#: Below this many events the trace is cached in memory once, and adaptive execution is off: each of its re-planned
#: query stages is a job of its own, whose fixed cost outweighs what re-planning saves on a trace this size.
CACHED = 2_000_000


def _configure(spark: SparkSession, events: int) -> None:
    """Settings sized to the trace: below :data:`SMALL` events one shuffle partition and no generated code; below
    :data:`CACHED` one partition per core and no adaptive execution; above, about one partition per 500k rows (at
    least two per core) with adaptive execution."""
    par = spark.sparkContext.defaultParallelism
    small = events < SMALL
    spark.conf.set("spark.sql.adaptive.enabled", "false" if events < CACHED else "true")
    # Compiling generated code costs more than it saves on a few thousand rows.
    spark.conf.set("spark.sql.codegen.wholeStage", "false" if small else "true")
    spark.conf.set("spark.sql.codegen.factoryMode", "NO_CODEGEN" if small else "FALLBACK")
    spark.conf.set("spark.sql.shuffle.partitions", "1" if small else str(par) if events < CACHED else
                   str(max(2 * par, min(400, -(-events // 500_000)))))



def _stop_quietly(spark: SparkSession) -> None:
    """Ctrl-C: cancel the jobs and stop Spark without its noise (the JVM logs every task it kills with a stack
    trace; the caller prints one line)."""
    with contextlib.suppress(Exception):
        spark.sparkContext.setLogLevel("OFF")
    with contextlib.suppress(Exception):
        # Not a log: a Scala future completing into a pool that is shutting down prints its
        # RejectedExecutionException straight to System.err. The process is ending: the JVM's stderr goes nowhere.
        jvm = spark.sparkContext._jvm
        jvm.java.lang.System.setErr(jvm.java.io.PrintStream(jvm.java.io.OutputStream.nullOutputStream()))
    with contextlib.suppress(Exception):
        spark.sparkContext.cancelAllJobs()
    with contextlib.suppress(Exception):
        spark.stop()


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
    names = [i.name for i in inv.INVARIANTS if only is None or i.name in set(only)]
    ev, kinds, traces = load(spark, source)
    try:
        tables = delay_tables(spark, source)
    except schema.SchemaError:
        ev.unpersist()
        raise
    events = sum(kinds.values())
    _configure(spark, events)
    checker = _Checker(spark, ev, kinds, traces, tables)
    threads = max(1, int(os.environ.get("ROCKETSPEC_SPARK_THREADS", "2")))
    decided: list[str] = []
    stop = threading.Event()
    if progress is not None:
        threading.Thread(target=_watch_stages, args=(spark, progress, decided, len(names), stop), daemon=True,
                         name="rocketspec-progress").start()

    def run(name: str) -> InvariantResult:
        result = CHECKS[name](checker)
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
            checker.release()
            ev.unpersist()
    return Report(str(source), ENGINE, events, traces, results, time.monotonic() - started)
