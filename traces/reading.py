"""Reading a trace directory in Python, one trace at a time, validated against the schema.

A trace source is a directory (``DIR/_trace.json`` manifest, optional; Parquet files, Hive-partitioned by trace as
``DIR/trace_id=<id>/*.parquet`` or plain files carrying a ``trace_id`` column; or JSON Lines files ``*.jsonl``,
``*.jsonl.gz``), or a single ``.parquet`` / ``.jsonl`` file. :func:`read_traces` yields each trace with its rows in
``seq`` order, so a checker holds one trace at a time. Memory: Parquet row groups that follow each other in ``seq``
(what recorders write) are streamed, one row group at a time; other Parquet traces are read whole, then sorted; JSON
Lines traces are held whole until the last file holding rows of them is read.

Every problem is a :class:`~rocketspec.traces.schema.SchemaError` naming the file and the line or ``seq``: missing
core columns, unknown kinds, required columns null, wrong types, unparseable JSON, a manifest of another schema
version or with a malformed delay table, a duplicate ``seq`` within a trace, a missing or empty source.

Each trace ran with a table of delay levels: the manifest's ``delay_levels_ms`` entry for its trace id, else the
default 18 levels. :func:`delay_tables` reads the entries of a source (both engines use it), :func:`delay_table`
picks a trace's table.
"""

from __future__ import annotations

import gzip
import itertools
import json
import operator
import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote

import attrs
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rocketspec.spec.protocol import DELAY_LEVEL_MILLIS
from rocketspec.traces.schema import (
    CORE,
    KINDS,
    MANIFEST,
    MANIFEST_DELAY_LEVELS,
    SCHEMA_VERSION,
    SchemaError,
    check_columns,
    check_delay_tables,
    check_row,
)

PARQUET = "parquet"
JSONL = "jsonl"
_PARQUET_SUFFIXES = (".parquet",)
_JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")
#: Rows converted to Python dicts at a time from an Arrow table.
BATCH_ROWS = 8_192
_PARTITION = "trace_id="
# The trace id of a JSON line without parsing it all (the index pass); lines it does not fit are parsed.
_TRACE_ID_RE = re.compile(r'"trace_id"\s*:\s*("(?:[^"\\]|\\.)*")')

Rows = Iterator[dict[str, Any]]
#: String columns with few distinct values (names, enums), converted through a dictionary.
_FEW_VALUES = frozenset({"trace_id", "node", "kind", "group", "topic", "broker", "status", "mode", "strategy",
                         "expression", "tags", "target", "via", "state", "result", "action", "role", "error"})


@attrs.frozen
class TraceSource:
    """A resolved trace source: its files in one format and its manifest (None when absent)."""

    path: Path
    format: str
    files: tuple[Path, ...]
    manifest: Mapping[str, Any] | None = None


def _is_data_file(path: Path, suffixes: tuple[str, ...]) -> bool:
    name = path.name
    # Spark and Hadoop leave _SUCCESS, .crc and similar files next to the data; they are not rows.
    return not name.startswith(("_", ".")) and name.endswith(suffixes)


def _read_manifest(directory: Path) -> Mapping[str, Any] | None:
    path = directory / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as bad:
        raise SchemaError(f"{path}: not a readable JSON manifest ({bad})") from None
    if not isinstance(manifest, dict):
        raise SchemaError(f"{path}: the manifest must be a JSON object")
    version = manifest.get("schema_version")
    if version != SCHEMA_VERSION:
        raise SchemaError(f"{path}: schema_version {version!r}; this reader reads schema version {SCHEMA_VERSION}")
    if MANIFEST_DELAY_LEVELS in manifest:
        check_delay_tables(manifest[MANIFEST_DELAY_LEVELS], str(path))
    return manifest


def partition_base(path: Path) -> Path | None:
    """The trace directory that ``path`` (a directory, or a file's directory) is a ``trace_id=<id>`` partition of, or
    lies in one of: naming a partition checks that one trace, with the directory's manifest; None otherwise."""
    directory = path if path.is_dir() else path.parent
    for candidate in (directory, *directory.parents):
        if candidate.name.startswith(_PARTITION):
            return candidate.parent
    return None


def _manifest_dir(path: Path) -> Path:
    """Where the manifest describing ``path`` is: the directory itself, the one a single file is in, or the trace
    directory above a partition."""
    directory = path if path.is_dir() else path.parent
    if (directory / MANIFEST).is_file():
        return directory
    base = partition_base(path)
    return base if base is not None else directory


def delay_tables(source: str | os.PathLike[str]) -> dict[str, tuple[int, ...]]:
    """The delay tables the manifest describing ``source`` gives, by trace id (``{}`` without a manifest or without
    the field): a directory's ``_trace.json``; for a single file the manifest next to it (the trace directory a
    recorder wrote it in). Raises SchemaError for a manifest of another schema version or a malformed table."""
    directory = _manifest_dir(Path(source))
    manifest = _read_manifest(directory)
    if manifest is None or MANIFEST_DELAY_LEVELS not in manifest:
        return {}
    return check_delay_tables(manifest[MANIFEST_DELAY_LEVELS], str(directory / MANIFEST))


def delay_table(tables: Mapping[str, tuple[int, ...]], trace_id: str) -> tuple[int, ...]:
    """The delay table trace ``trace_id`` ran with: its entry in ``tables``, else the default (18 levels,
    ``spec.protocol.DELAY_LEVEL_MILLIS``)."""
    return tables.get(trace_id, DELAY_LEVEL_MILLIS)


def open_source(source: str | os.PathLike[str]) -> TraceSource:
    """Resolve ``source`` to its data files; raise SchemaError when it is missing, empty or mixes formats."""
    path = Path(source)
    if not path.exists():
        raise SchemaError(f"{path}: no such file or directory")
    if path.is_file():
        if path.name.endswith(_PARQUET_SUFFIXES):
            return TraceSource(path, PARQUET, (path,))
        if path.name.endswith(_JSONL_SUFFIXES):
            return TraceSource(path, JSONL, (path,))
        raise SchemaError(f"{path}: not a trace file (expected .parquet, .jsonl or .jsonl.gz)")
    manifest = _read_manifest(_manifest_dir(path))
    every = sorted(p for p in path.rglob("*") if p.is_file())
    parquet = tuple(p for p in every if _is_data_file(p, _PARQUET_SUFFIXES))
    jsonl = tuple(p for p in every if _is_data_file(p, _JSONL_SUFFIXES))
    if parquet and jsonl:
        raise SchemaError(f"{path}: holds both Parquet and JSON Lines files; a trace directory uses one format")
    if not parquet and not jsonl:
        raise SchemaError(f"{path}: no trace files (*.parquet, *.jsonl, *.jsonl.gz) in the directory")
    return TraceSource(path, PARQUET if parquet else JSONL, parquet or jsonl, manifest)


def read_traces(source: str | os.PathLike[str], columns: Sequence[str] | None = None, *,
                kind_columns: bool = False) -> Iterator[tuple[str, Rows]]:
    """Yield ``(trace_id, rows)`` per trace, rows as dicts in ``seq`` order.

    ``columns`` limits the keys of the row dicts (validation still sees every column); with ``kind_columns`` a
    Parquet row only has the core columns and those its kind may set (the schema says the others are null), which
    makes rows smaller and faster to build. Consume each trace's rows before asking for the next trace.

    Raises SchemaError for bad input, see the module docstring. Parquet row groups in seq order (what recorders
    write) are streamed and validated one at a time, so an error may surface after earlier rows were yielded;
    otherwise a trace is read, validated and sorted whole before its first row.
    """
    src = open_source(source)
    if columns is not None and "seq" not in columns:
        columns = (*columns, "seq")  # rows are ordered by it
    empty = True
    readers = (_parquet_traces(src, columns, kind_columns) if src.format == PARQUET
               else _jsonl_traces(src, columns))
    for trace_id, rows in readers:
        empty = False
        yield trace_id, rows
    if empty:
        raise SchemaError(f"{src.path}: the trace holds no events")


def count_events(source: str | os.PathLike[str]) -> int:
    """The number of rows in ``source`` (Parquet: from the file footers; JSON Lines: non-blank lines)."""
    src = open_source(source)
    if src.format == PARQUET:
        return sum(pq.ParquetFile(f).metadata.num_rows for f in src.files)
    total = 0
    for f in src.files:
        with _open_text(f) as stream:
            total += sum(1 for line in stream if line.strip())
    return total


def group_rows(rows: Iterable[Mapping[str, Any]], where: str = "row") -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Validate in-memory rows (schema.check_row) and yield them per trace, sorted by ``seq``."""
    traces: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise SchemaError(f"{where} {i}: a row must be a mapping of column names to values, not "
                              f"{type(row).__name__}")
        check_row(row, f"{where} {i}")
        traces[row["trace_id"]].append(dict(row))
    for trace_id in sorted(traces):
        yield trace_id, _sorted_rows(trace_id, traces.pop(trace_id), where)


def _sort_by_seq(rows: list[dict[str, Any]]) -> int | None:
    """Sort ``rows`` by seq in place; the first seq that appears twice, if any."""
    rows.sort(key=lambda r: r["seq"])
    for before, after in itertools.pairwise(rows):
        if before["seq"] == after["seq"]:
            return after["seq"]
    return None


def _sorted_rows(trace_id: str, rows: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
    twice = _sort_by_seq(rows)
    if twice is not None:
        raise SchemaError(f"{where}s: trace {trace_id!r} has seq {twice} twice; seq must be unique within a trace")
    return rows


# Parquet ---------------------------------------------------------------------------------------------------------


def _ddl_type(t: pa.DataType) -> str:
    """The Spark DDL name of an Arrow type, as schema.check_columns compares them."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", bool)(t):
        return "string"
    named = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
             pa.bool_(): "boolean", pa.null(): "void", pa.float32(): "float", pa.float64(): "double"}
    if t in named:
        return named[t]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{_ddl_type(t.value_type)}>"
    return str(t)


def _hive_trace_id(path: Path, root: Path) -> str | None:
    for part in path.relative_to(root).parts[:-1]:
        if part.startswith(_PARTITION):
            return unquote(part[len(_PARTITION):])
    return None


def _read_parquet(path: Path, trace_id: str | None = None, filtered: bool = False) -> pa.Table:
    try:
        if filtered:
            return pq.read_table(path, filters=[("trace_id", "=", trace_id)])
        # ParquetFile.read, not read_table: the latter goes through pyarrow.dataset (which imports pandas).
        with pq.ParquetFile(path) as parquet:
            return parquet.read()
    except (OSError, pa.ArrowException) as bad:
        raise SchemaError(f"{path}: not a readable Parquet file ({bad})") from None


def _validate_table(table: pa.Table, where: Path) -> pa.Table:
    """Check a file's table: column types once (schema), then core nulls, kinds and required columns by kind
    (vectorised). Returns the table with ``trace_id`` as plain strings."""
    try:
        check_columns(table.column_names, {f.name: _ddl_type(f.type) for f in table.schema})
    except SchemaError as bad:
        raise SchemaError(f"{where}: {bad}") from None
    if pa.types.is_dictionary(table.schema.field("trace_id").type):
        table = table.set_column(table.column_names.index("trace_id"), "trace_id",
                                 table.column("trace_id").cast(pa.string()))
    if table.num_rows == 0:
        return table
    for name in CORE:
        column = table.column(name)
        if column.null_count:
            seqs = table.column("seq").filter(pc.is_null(column))
            at = f"the row with seq {seqs[0].as_py()}" if name != "seq" and seqs[0].is_valid else "a row"
            raise SchemaError(f"{where}: {at} has no {name!r}")
    kinds = table.column("kind")
    for value in pc.unique(kinds).to_pylist():
        kind = KINDS.get(value)
        if kind is None:
            seq = table.column("seq").filter(pc.equal(kinds, value))[0].as_py()
            raise SchemaError(f"{where}: seq {seq}: unknown kind {value!r}; kinds are: {', '.join(KINDS)}")
        mask = pc.equal(kinds, value)
        for name in kind.required:
            if name not in table.column_names:
                seq = table.column("seq").filter(mask)[0].as_py()
                raise SchemaError(f"{where}: seq {seq}: {value} needs {name!r}; the file has no such column")
            nulls = pc.and_(mask, pc.is_null(table.column(name)))
            if pc.any(nulls).as_py():
                seq = table.column("seq").filter(nulls)[0].as_py()
                raise SchemaError(f"{where}: seq {seq}: {value} needs {name!r}")
    return table


def _python_values(column: pa.Array, few: bool) -> list[Any]:
    """A column as Python values; a string column with few distinct values through its dictionary, so that its rows
    share one str per value (state that keeps them stays small)."""
    if not few or not pa.types.is_string(column.type):
        return column.to_pylist()
    encoded = pc.dictionary_encode(column)
    distinct = [*encoded.dictionary.to_pylist(), None]
    return list(map(distinct.__getitem__, pc.fill_null(encoded.indices, len(distinct) - 1).to_pylist()))


def _kind_shapes(names: Sequence[str]) -> dict[str, tuple[tuple[str, ...], Callable[[tuple[Any, ...]], Any]]]:
    """Per kind: the columns a row of it may set (core, required, optional) and a getter of their values."""
    index = {n: i for i, n in enumerate(names)}
    shapes: dict[str, tuple[tuple[str, ...], Callable[[tuple[Any, ...]], Any]]] = {}
    for kind in KINDS.values():
        keys = tuple(n for n in (*CORE, *kind.required, *kind.optional) if n in index)
        shapes[kind.name] = (keys, operator.itemgetter(*(index[n] for n in keys)))
    return shapes


def _table_rows(table: pa.Table, columns: Sequence[str] | None, kind_columns: bool) -> Rows:
    names = [c for c in (columns or table.column_names) if c in table.column_names]
    batches = table.select(names).to_batches(max_chunksize=BATCH_ROWS)
    del table
    batches.reverse()
    shapes = _kind_shapes(names) if kind_columns and "kind" in names else None
    kind_at = names.index("kind") if shapes is not None else 0
    while batches:
        # Popping each batch lets Arrow free a row group's buffers once its rows are done.
        batch = batches.pop()
        # Column-wise conversion then zip: several times faster than RecordBatch.to_pylist for wide rows.
        values = [_python_values(batch.column(i), names[i] in _FEW_VALUES) for i in range(batch.num_columns)]
        del batch
        if shapes is None:
            yield from [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]
            continue
        rows = []
        for row in zip(*values, strict=True):
            keys, get = shapes[row[kind_at]]
            rows.append(dict(zip(keys, get(row), strict=True)))
        yield from rows


def _sorted_table(trace_id: str, table: pa.Table, files: Sequence[Path]) -> pa.Table:
    """``table`` sorted by seq; SchemaError when a seq appears twice. (Arrow compute only: numpy conversions of
    Arrow arrays import pandas.)"""
    if table.num_rows < 2:
        return table
    seq = table.column("seq").combine_chunks()
    steps = pc.pairwise_diff(seq)
    if pc.min(steps).as_py() <= 0:
        table = table.sort_by("seq")
        seq = table.column("seq").combine_chunks()
        steps = pc.pairwise_diff(seq)
    if pc.min(steps).as_py() == 0:
        twice = seq.filter(pc.equal(steps, 0))[0].as_py()
        raise SchemaError(f"{', '.join(map(str, files))}: trace {trace_id!r} has seq {twice} twice; seq must be "
                          f"unique within a trace")
    return table


def _with_trace_id(table: pa.Table, trace_id: str) -> pa.Table:
    """A Hive partition's table with its trace_id column restored from the directory name."""
    if "trace_id" in table.column_names:
        table = table.drop_columns(["trace_id"])
    return table.append_column("trace_id", pa.array([trace_id] * table.num_rows, pa.string()))


def _ordered_row_groups(files: Sequence[Path]) -> list[tuple[Path, int]] | None:
    """The row groups of one trace's files in seq order, when their seq statistics show that they do not overlap
    (each can then be read, checked and sorted on its own); None when they overlap or have no statistics."""
    groups = []
    for f in files:
        try:
            with pq.ParquetFile(f) as parquet:
                meta = parquet.metadata
                for i in range(meta.num_row_groups):
                    group = meta.row_group(i)
                    if group.num_rows == 0:
                        continue
                    stats = next((group.column(k).statistics for k in range(group.num_columns)
                                  if group.column(k).path_in_schema == "seq"), None)
                    if stats is None or not stats.has_min_max or stats.null_count:
                        return None
                    groups.append((stats.min, stats.max, f, i))
        except (OSError, pa.ArrowException) as bad:
            raise SchemaError(f"{f}: not a readable Parquet file ({bad})") from None
    groups.sort(key=lambda g: g[0])
    if any(before[1] >= after[0] for before, after in itertools.pairwise(groups)):
        return None
    return [(f, i) for _, _, f, i in groups]


def _streamed_rows(trace_id: str, groups: list[tuple[Path, int]], hive: bool, columns: Sequence[str] | None,
                   kind_columns: bool) -> Rows:
    """Rows of a trace read one row group at a time (memory: one row group), each group validated first."""
    for f, i in groups:
        try:
            with pq.ParquetFile(f) as parquet:
                table = parquet.read_row_group(i)
        except (OSError, pa.ArrowException) as bad:
            raise SchemaError(f"{f}: not a readable Parquet file ({bad})") from None
        if hive:
            table = _with_trace_id(table, trace_id)
        table = _sorted_table(trace_id, _validate_table(table, f), [f])
        yield from _table_rows(table, columns, kind_columns)


def _parquet_traces(src: TraceSource, columns: Sequence[str] | None,
                    kind_columns: bool) -> Iterator[tuple[str, Rows]]:
    root = src.path if src.path.is_dir() else src.path.parent
    root = partition_base(root) or root  # a partition named alone: its trace id is in its own name
    by_trace: dict[str, list[Path]] = defaultdict(list)
    single: set[Path] = set()  # files holding exactly one trace: read without a filter
    hive: set[Path] = set()
    for f in src.files:
        partition = _hive_trace_id(f, root)
        if partition is not None:
            by_trace[partition].append(f)
            single.add(f)
            hive.add(f)
            continue
        try:
            schema = pq.read_schema(f)
        except (OSError, pa.ArrowException) as bad:
            raise SchemaError(f"{f}: not a readable Parquet file ({bad})") from None
        if "trace_id" not in schema.names:
            raise SchemaError(f"{f}: missing column(s) trace_id; every trace row needs {', '.join(CORE)} (or put "
                              f"the file under a trace_id=<id> directory)")
        ids = pc.unique(_read_parquet_column(f, "trace_id")).to_pylist()
        if len(ids) == 1:
            single.add(f)
        for trace_id in ids:
            if trace_id is None:
                raise SchemaError(f"{f}: a row has no 'trace_id'")
            by_trace[str(trace_id)].append(f)
    for trace_id in sorted(by_trace):
        files = by_trace[trace_id]
        whole = all(f in single for f in files)
        groups = _ordered_row_groups(files) if whole and len({f in hive for f in files}) == 1 else None
        if groups is not None:
            # The usual case (a recorder writes in seq order): stream, one row group in memory at a time.
            if groups:
                yield trace_id, _streamed_rows(trace_id, groups, files[0] in hive, columns, kind_columns)
            continue
        tables = []
        for f in files:
            table = _read_parquet(f, trace_id, filtered=f not in single)
            tables.append(_validate_table(_with_trace_id(table, trace_id) if f in hive else table, f))
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="default")
        table = _sorted_table(trace_id, table, files)
        if table.num_rows:
            yield trace_id, _table_rows(table, columns, kind_columns)


def _read_parquet_column(path: Path, name: str) -> pa.ChunkedArray:
    try:
        with pq.ParquetFile(path) as parquet:
            column = parquet.read(columns=[name]).column(name)
    except (OSError, pa.ArrowException) as bad:
        raise SchemaError(f"{path}: not a readable Parquet file ({bad})") from None
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return column


# JSON Lines ------------------------------------------------------------------------------------------------------


def _open_text(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, validated row) for each non-blank line of ``path``."""
    try:
        with _open_text(path) as stream:
            for number, line in enumerate(stream, 1):
                if not line.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as bad:
                    raise SchemaError(f"{where}: not valid JSON ({bad.msg} at column {bad.colno})") from None
                if not isinstance(row, dict):
                    raise SchemaError(f"{where}: a row must be a JSON object, not {type(row).__name__}")
                check_row(row, where)
                yield number, row
    except (OSError, UnicodeDecodeError, EOFError) as bad:
        raise SchemaError(f"{path}: cannot read ({bad})") from None


def _line_trace_ids(path: Path) -> set[str]:
    """The trace ids in a JSON Lines file, found cheaply (a regex; lines it does not fit are parsed)."""
    ids: set[str] = set()
    try:
        with _open_text(path) as stream:
            for number, line in enumerate(stream, 1):
                found = _TRACE_ID_RE.findall(line)
                if len(found) == 1:
                    try:
                        ids.add(json.loads(found[0]))
                        continue
                    except json.JSONDecodeError:
                        pass
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as bad:
                    raise SchemaError(f"{path}:{number}: not valid JSON ({bad.msg} at column {bad.colno})") from None
                if isinstance(row, dict) and isinstance(row.get("trace_id"), str):
                    ids.add(row["trace_id"])
    except (OSError, UnicodeDecodeError, EOFError) as bad:
        raise SchemaError(f"{path}: cannot read ({bad})") from None
    return ids


def _project(row: dict[str, Any], columns: Sequence[str] | None) -> dict[str, Any]:
    if columns is None:
        return row
    return {c: row[c] for c in columns if c in row}


def _jsonl_traces(src: TraceSource, columns: Sequence[str] | None) -> Iterator[tuple[str, Rows]]:
    files = src.files
    # The last file each trace appears in: after reading it the trace is complete and can be handed out.
    last: dict[str, int] = {}
    if len(files) > 1:
        for i, f in enumerate(files):
            for trace_id in _line_trace_ids(f):
                last[trace_id] = i
    buffers: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for i, f in enumerate(files):
        for _, row in _json_lines(f):
            buffers[row["trace_id"]].append(_project(row, columns))
        done = sorted(t for t in buffers if last.get(t, i) <= i) if len(files) > 1 else sorted(buffers)
        for trace_id in done:
            rows = buffers.pop(trace_id)
            yield trace_id, iter(_jsonl_sorted(trace_id, rows, files))


def _jsonl_sorted(trace_id: str, rows: list[dict[str, Any]], files: Sequence[Path]) -> list[dict[str, Any]]:
    twice = _sort_by_seq(rows)
    if twice is not None:
        where = ", ".join(_locate(files, trace_id, twice))
        raise SchemaError(f"{where}: trace {trace_id!r} has seq {twice} twice; seq must be unique within a trace")
    return rows


def _locate(files: Sequence[Path], trace_id: str, seq: int) -> list[str]:
    """Where the rows of ``trace_id`` with ``seq`` are (file:line), for the duplicate-seq message."""
    found = []
    for f in files:
        for number, row in _json_lines(f):
            if row["trace_id"] == trace_id and row["seq"] == seq:
                found.append(f"{f}:{number}")
    return found


__all__ = [
    "BATCH_ROWS",
    "JSONL",
    "PARQUET",
    "TraceSource",
    "count_events",
    "delay_table",
    "delay_tables",
    "group_rows",
    "open_source",
    "read_traces",
]
