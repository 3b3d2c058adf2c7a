"""Reading and validating a trace for the PySpark checker: Parquet (partitioned by trace or plain), JSON Lines, or
one file, on this machine or a cluster file system.

:func:`load` reads the trace at a path, checks it against :mod:`rocketspec.traces.schema` in one job (a
:class:`~rocketspec.traces.schema.SchemaError` names every problem with a few example rows, never a JVM traceback)
and returns the :data:`NEEDED` columns, cached for a small trace, with the rows per kind and the number of traces.
:func:`delay_tables` reads each trace's delay table from the manifest (retry_delay_dlq (b), RETRY-1, RETRY-2).

No invariant is checked here; the schema's rules (core columns, known kinds, the columns a kind requires) are.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F

from rocketspec.traces import reading, schema
from rocketspec.traces.engine import is_remote
from rocketspec.traces.sparkcheck.session import CACHED, _short

#: The columns the invariants read; the cache holds these (plus the validation verdict) and nothing else.
NEEDED: tuple[str, ...] = (
    "trace_id", "seq", "ts_ms", "node", "kind", "group", "topic", "broker", "queue_id", "offset", "msg_id", "code",
    "status", "attempt", "mode", "final", "retry_times", "retry_times_async", "timeout_ms", "latency_fault", "queues",
    "all_queues", "consumers", "strategy", "expression", "tags", "next_offset", "min_offset", "max_offset",
    "reconsume_times", "max_reconsume_times", "delay_level", "target", "via", "state", "result", "check_times",
    "check_max", "action", "derived",
)
_CORRUPT = "_corrupt_record"
_PROBLEM = "_problem"


def _manifest(directory: Path) -> dict[str, Any] | None:
    """The manifest of a trace directory (None when it has none); SchemaError when it is unreadable, of another
    schema version, or carries a bad delay table."""
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


def _json_reader(spark: SparkSession) -> DataFrameReader:
    """A JSON Lines reader with the trace schema that keeps unreadable lines in :data:`_CORRUPT`."""
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
    """The first ``limit`` rows meeting ``cond``, by trace and seq, for an error message."""
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
        assert tallies is not None  # an aggregate without grouping has one row
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
    """Silence PySpark's query-context loggers; the loggers and the levels to restore."""
    from pyspark.logger import PySparkLogger

    saved: list[tuple[logging.Logger, int]] = []
    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        logger = PySparkLogger.getLogger(name)
        saved.append((logger, logger.level))
        logger.setLevel(logging.CRITICAL)
    return saved


def _load(spark: SparkSession, source: str | Path) -> tuple[DataFrame, dict[str, int], int]:
    """:func:`load` with PySpark's query-context logs as they are."""
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
