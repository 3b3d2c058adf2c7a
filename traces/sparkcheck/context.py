"""The state the PySpark checker's invariant jobs share over one loaded trace: :class:`CheckContext`.

It holds the loaded DataFrame (``ev``, the :data:`~rocketspec.traces.sparkcheck.reader.NEEDED` columns), the rows
per kind and the number of traces, and each trace's delay table, and gives the invariants what several of them use:
rows of some kinds (:meth:`CheckContext.kind`), DataFrames built and persisted once (:meth:`CheckContext.shared`;
the "clustering group" of every rule about a group's delivery, ownership and offsets:
:meth:`CheckContext.clustering`), oracles evaluated as broadcast decision tables (:meth:`CheckContext.decided`,
for send_retry (SEND-1, SEND-2, SEND-9) and retry_delay_dlq (a)), and the result of an invariant with its counts,
samples and cases judged (:meth:`CheckContext.result`, :meth:`CheckContext.row_cases`,
:meth:`CheckContext.classified`; ``invariants.CASES``). The invariants themselves are the functions of the modules
named in :mod:`rocketspec.traces.sparkcheck`, each taking the context.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DataType, IntegerType, LongType, StringType, StructField, StructType

from rocketspec.traces import invariants as inv
from rocketspec.traces import oracles
from rocketspec.traces.report import InvariantResult, excused_reason, sample_rows


def _parse_type(ddl: str) -> DataType:
    """A Spark type from its DDL name (``string``, ``int``, ``bigint``, ``boolean``)."""
    return {"string": StringType(), "int": IntegerType(), "bigint": LongType(), "boolean": BooleanType()}[ddl]


def _answer(value: Any) -> Any:
    """An oracle's answer for a decision table: None where the oracle refuses the values."""
    return None if isinstance(value, oracles.Refused) else value


class CheckContext:
    """The loaded trace and the DataFrames, decision tables and results the invariant jobs over it share.

    Thread-safe: the driver runs several invariants at once."""

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

    def has(self, *kinds: str) -> bool:
        """Whether the trace has a row of any of ``kinds``."""
        return any(self.kinds.get(k, 0) for k in kinds)

    def kind(self, *kinds: str) -> DataFrame:
        """The rows of ``kinds``."""
        return self.ev.where(F.col("kind").isin(list(kinds)))

    def scanned(self, name: str) -> int:
        """The events an invariant scans: the rows of the kinds it reads."""
        return sum(self.kinds.get(k, 0) for k in inv.BY_NAME[name].kinds)

    def persist(self, df: DataFrame) -> DataFrame:
        """``df`` persisted until :meth:`release`."""
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        with self._lock:
            self._persisted.append(df)
        return df

    def release(self) -> None:
        """Unpersist every DataFrame persisted for the checks."""
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
        """(trace_id, group) of the broadcasting groups: a rebalance.assign of the group has strategy
        BROADCASTING."""
        return self.shared("broadcasting", lambda: self.kind("rebalance.assign")
                           .where(F.col("strategy") == inv.BROADCASTING).select("trace_id", "group").distinct())

    def clustering(self, df: DataFrame) -> DataFrame:
        """Rows of clustering groups only (no rebalance.assign of the group has strategy BROADCASTING)."""
        return df.join(F.broadcast(self.broadcasting_groups()), ["trace_id", "group"], "left_anti")

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
        if not tallies:
            return result
        # The first rows the rule allowed, with their cause (the report's excused samples, chosen like the samples).
        excused = (rows.where(F.col(cause).isNotNull())
                   .withColumn("reason", F.concat(F.lit(excused_reason("")), F.col(cause)))
                   .withColumnRenamed(cause, "cause").orderBy("trace_id", "seq").limit(inv.MAX_SAMPLES).collect())
        return attrs.evolve(result, excused=sample_rows([r.asDict() for r in excused]))


#: The context's name when it was the one class holding every invariant's job (tests build one to try
#: :meth:`CheckContext.decided`).
_Checker = CheckContext
