"""Recording a run of the reference implementation as a trace (schema version 1, ``traces.schema``).

A :class:`TraceRecorder` subscribes to a refimpl :class:`~rocketspec.refimpl.events.EventLog` and turns every event
into a schema row: the event's fields (``Event.fields()``: tuples become lists, enums their names) plus ``trace_id``,
``seq``, ``ts_ms``, ``node`` and ``kind``. Rows are buffered column by column and written in bounded batches:

- Parquet (default): ``DIR/trace_id=<id>/part-NNNNN.parquet`` (Hive partitioning: the ``trace_id`` column is the
  directory name, readers restore it), one row group per batch, a new part file every ``rows_per_file`` rows;
- JSON Lines: ``DIR/<id>.jsonl``, one object per row, nulls left out.

On close a recorder writes its own manifest ``DIR/_trace.<id>.json`` and (unless told not to) merges every recorder
manifest of the directory into the directory manifest ``DIR/_trace.json`` (:func:`write_manifest`). Files whose name
starts with ``_`` are ignored by Parquet and Spark readers. A run whose brokers use their own delay levels (RocketMQ's
``messageDelayLevel``) gives the recorder its table (``delay_levels_ms``): the manifests then carry it under
``delay_levels_ms`` keyed by trace id (``traces.schema.MANIFEST_DELAY_LEVELS``), so a directory may hold traces of
different tables and the checkers judge each trace's retry delays by its own.

Two mappings keep rows faithful to the schema where a refimpl event is not one row per message:

- a batch send's ``send.attempt`` / ``send.result`` names every message of the batch (``msg_id`` = the ids joined by
  commas): it becomes one row per message (``offset`` + i for a stored batch, whose messages take consecutive
  offsets), so each message's attempts can be followed by its own id;
- ``seq`` is therefore the recorder's row number, which keeps the log's order (the schema asks for a unique,
  increasing total order, not for the log's numbers).

The run's end is a ``trace.end`` row (:meth:`TraceRecorder.record_trace_end`): ``SETTLED`` when every consumer caught
up and nothing is in flight, ``CUT`` otherwise (closing a recorder that was not ended writes ``CUT``). Nothing is
recorded after it.
"""

from __future__ import annotations

import enum
import json
import operator
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

import attrs

from rocketspec.refimpl.events import Event, EventLog, EventSink
from rocketspec.spec.protocol import DELAY_LEVEL_MILLIS
from rocketspec.traces.schema import (
    BOOL,
    COLUMNS,
    CUT,
    INT,
    LONG,
    MANIFEST,
    MANIFEST_DELAY_LEVELS,
    SCHEMA_VERSION,
    SETTLED,
    STRING,
    STRINGS,
    SchemaError,
    check_delay_levels,
    check_delay_tables,
)

FORMATS = ("parquet", "jsonl")
#: The node of the ``trace.end`` row a recorder writes.
RECORDER_NODE = "recorder"
#: Prefix of a recorder's own manifest (``_trace.<trace_id>.json``) next to the directory manifest.
_PART_MANIFEST_PREFIX = "_trace."
_TRACE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_NAMES: tuple[str, ...] = tuple(c.name for c in COLUMNS)
_INDEX: dict[str, int] = {name: i for i, name in enumerate(_NAMES)}
_BATCH_KINDS = frozenset({"send.attempt", "send.result"})
_PLAIN = (str, int, bool, float)


class TraceWriteError(ValueError):
    """A trace cannot be written where asked (bad trace id, existing trace, unknown format)."""


def check_trace_id(trace_id: str) -> str:
    """A trace id is a directory and file name: letters, digits, ``.``, ``_``, ``-`` (not first), up to 128."""
    if not isinstance(trace_id, str) or not _TRACE_ID.match(trace_id):
        raise TraceWriteError(f"trace id {trace_id!r} must be 1-128 letters, digits, '.', '_' or '-' (not first)")
    return trace_id


def arrow_schema(*, with_trace_id: bool = True) -> Any:
    """The Arrow schema of trace rows (``traces.schema.COLUMNS`` types), without ``trace_id`` for Hive partitions."""
    import pyarrow as pa

    types = {STRING: pa.string(), INT: pa.int32(), LONG: pa.int64(), BOOL: pa.bool_(), STRINGS: pa.list_(pa.string())}
    return pa.schema([pa.field(c.name, types[c.type]) for c in COLUMNS if with_trace_id or c.name != "trace_id"])


def _value(value: Any) -> Any:
    """A field value as a row holds it: tuples as lists, enums as their names."""
    if isinstance(value, (tuple, list)):
        return [_value(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.name
    return value


class _Layout:
    """An event class's row shape: its kind, the schema columns of its fields (core columns excluded) and a getter
    returning their values as one tuple (``operator.attrgetter``: one C call per event)."""

    __slots__ = ("columns", "get", "kind", "names")

    def __init__(self, kind: str, names: tuple[str, ...]) -> None:
        self.kind = kind
        self.names = names
        self.columns = tuple(_INDEX[n] for n in names)
        # (mypy cannot infer a lambda with a default argument where a one-argument callable is expected)
        self.get: Callable[[Any], tuple[Any, ...]] = (
            operator.attrgetter(*names) if len(names) > 1 else (lambda e, n=names[0]: (getattr(e, n),))  # type: ignore[misc]
        ) if names else (lambda e: ())


_LAYOUTS: dict[type, _Layout] = {}


def _layout(cls: type) -> _Layout:
    layout = _LAYOUTS.get(cls)
    if layout is None:
        core = {"node", "seq", "ts_ms", "trace_id", "kind"}
        names = tuple(f.name for f in attrs.fields(cls) if f.name not in core)
        unknown = [n for n in names if n not in _INDEX]
        if unknown:
            raise TraceWriteError(f"event {cls.__name__} has field(s) {', '.join(unknown)} the trace schema lacks")
        layout = _Layout(str(cls.kind), names)  # type: ignore[attr-defined]
        _LAYOUTS[cls] = layout
    return layout


class _Buffer:
    """Buffered rows, per event layout: ``(seq, ts_ms, node, field values...)`` tuples."""

    def __init__(self) -> None:
        self.by_layout: dict[_Layout, list[tuple[Any, ...]]] = {}
        self.rows = 0

    def take(self) -> tuple[dict[_Layout, list[tuple[Any, ...]]], int]:
        taken, rows = self.by_layout, self.rows
        self.by_layout, self.rows = {}, 0
        return taken, rows


def _columns(batch: dict[_Layout, list[tuple[Any, ...]]]) -> Iterator[tuple[_Layout, list[tuple[Any, ...]]]]:
    """Per layout, its rows as columns: seq, ts_ms, node, then the layout's fields."""
    for layout, rows in batch.items():
        yield layout, list(zip(*rows, strict=True))


class _ParquetSink:
    def __init__(self, directory: Path, rows_per_file: int) -> None:
        import pyarrow as pa

        self.directory = directory
        self.rows_per_file = rows_per_file
        self.schema = arrow_schema(with_trace_id=False)
        self._types = {f.name: f.type for f in self.schema}
        self._string_types = (pa.string(), pa.list_(pa.string()))
        self._writer: Any = None
        self._in_file = 0
        self._part = 0

    def _array(self, name: str, values: Sequence[Any]) -> Any:
        import pyarrow as pa

        kind = self._types[name]
        try:
            return pa.array(values, type=kind)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # enums and other values that need their row form
            return pa.array([_value(v) for v in values], type=kind)

    def table(self, batch: dict[_Layout, list[tuple[Any, ...]]]) -> Any:
        """One Arrow table of the batch, rows in seq order."""
        import pyarrow as pa

        tables = []
        for layout, columns in _columns(batch):
            n = len(columns[0])
            given = {"seq": columns[0], "ts_ms": columns[1], "node": columns[2], "kind": [layout.kind] * n}
            given.update(zip(layout.names, columns[3:], strict=True))
            arrays = [
                self._array(f.name, given[f.name]) if f.name in given else pa.nulls(n, type=f.type)
                for f in self.schema
            ]
            tables.append(pa.Table.from_arrays(arrays, schema=self.schema))
        table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
        return table.sort_by("seq") if len(tables) > 1 else table

    def write(self, trace_id: str, batch: dict[_Layout, list[tuple[Any, ...]]], rows: int) -> None:
        import pyarrow.parquet as pq

        del trace_id  # the directory name carries it
        table = self.table(batch)
        start = 0
        while start < rows:
            if self._writer is None:
                self.directory.mkdir(parents=True, exist_ok=True)
                path = self.directory / f"part-{self._part:05d}.parquet"
                self._writer = pq.ParquetWriter(str(path), self.schema, compression="snappy")
                self._part += 1
                self._in_file = 0
            take = min(rows - start, self.rows_per_file - self._in_file)
            self._writer.write_table(table.slice(start, take))
            self._in_file += take
            start += take
            if self._in_file >= self.rows_per_file:
                self._close_file()

    def _close_file(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def close(self) -> None:
        self._close_file()


class _JsonlSink:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None

    def write(self, trace_id: str, batch: dict[_Layout, list[tuple[Any, ...]]], rows: int) -> None:
        del rows
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "w", encoding="utf-8")
        out: list[tuple[int, dict[str, Any]]] = []
        for layout, layout_rows in batch.items():
            names = layout.names
            for row in layout_rows:
                record: dict[str, Any] = {"trace_id": trace_id, "seq": row[0], "ts_ms": row[1], "node": row[2],
                                          "kind": layout.kind}
                for name, value in zip(names, row[3:], strict=True):
                    if value is not None:
                        record[name] = value if isinstance(value, _PLAIN) else _value(value)
                out.append((row[0], record))
        out.sort(key=lambda item: item[0])
        dumps = json.dumps
        self._file.write("".join(dumps(record, separators=(",", ":")) + "\n" for _, record in out))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class TraceRecorder:
    """Records the events of ``log`` as trace ``trace_id`` under ``out`` (see the module docs for the layout).

    ``log`` None: the recorder is an ``EventSink`` to pass to a run (``Cluster(sinks=[recorder])``, or
    :func:`record`), which attaches its log and delay table when it starts.

    ``batch_rows`` bounds the rows held in memory (one Parquet row group); ``keep_events=False`` also stops the log
    from keeping events in memory, so a recorded run of any length uses bounded memory. ``manifest=False`` leaves the
    directory manifest to the caller (the generator writes it once every shard is done). ``generator`` is stored in
    the manifest. ``delay_levels_ms`` is the run's delay table (the ms of levels 1..n, n <= 18) when its brokers do
    not use the default one; the manifests record it for this trace id. ``rewrite`` turns each event into the one
    recorded (a served run's wire observer rewrites a broker's commit it knows to be an administrator's:
    ``traces.wireoffsets``). Raises :class:`TraceWriteError` for a bad trace id, format or delay table, or a trace
    already written there.
    """

    def __init__(
        self,
        log: EventLog | None,
        out: str | os.PathLike[str],
        trace_id: str,
        *,
        fmt: str = "parquet",
        batch_rows: int = 65_536,
        rows_per_file: int = 1_000_000,
        keep_events: bool | None = None,
        manifest: bool = True,
        generator: Mapping[str, Any] | None = None,
        delay_levels_ms: Sequence[int] | None = None,
        rewrite: Callable[[Event], Event] | None = None,
    ) -> None:
        if fmt not in FORMATS:
            raise TraceWriteError(f"trace format must be one of {', '.join(FORMATS)}, not {fmt!r}")
        if batch_rows < 1 or rows_per_file < 1:
            raise TraceWriteError("batch_rows and rows_per_file must be positive")
        self.trace_id = check_trace_id(trace_id)
        self.out = Path(out)
        self.fmt = fmt
        self.batch_rows = batch_rows
        self.manifest = manifest
        self.generator = dict(generator or {})
        try:
            self.delay_levels_ms = None if delay_levels_ms is None else check_delay_levels(delay_levels_ms,
                                                                                          "delay_levels_ms")
        except SchemaError as bad:
            raise TraceWriteError(str(bad)) from None
        if self.out.exists() and not self.out.is_dir():
            raise TraceWriteError(f"{self.out} exists and is not a directory")
        target = self.out / f"trace_id={trace_id}" if fmt == "parquet" else self.out / f"{trace_id}.jsonl"
        if target.exists() and (target.is_file() or any(target.iterdir())):
            raise TraceWriteError(f"trace {trace_id!r} already exists in {self.out} ({target})")
        self._sink: _ParquetSink | _JsonlSink = (
            _ParquetSink(target, rows_per_file) if fmt == "parquet" else _JsonlSink(target)
        )
        self._log: EventLog | None = None
        self._clock: Callable[[], int] = lambda: 0
        self._keep_events = keep_events
        self._rewrite = rewrite
        self._buffer = _Buffer()
        self._seq = 0
        self.rows_written = 0
        self.ended: str | None = None
        self.closed = False
        if log is not None:
            self.attach(log, None)

    def attach(self, log: EventLog, delay_level_millis: Sequence[int] | None) -> None:
        """Start recording ``log`` (``EventSink``); a run's delay table other than the default goes into the
        manifests unless ``delay_levels_ms`` was given."""
        if self._log is not None:
            raise TraceWriteError(f"trace {self.trace_id} already records a run")
        self._log = log
        self._clock = log._clock  # the run's clock, for the trace.end row
        if self.delay_levels_ms is None and delay_level_millis is not None \
                and tuple(delay_level_millis) != DELAY_LEVEL_MILLIS:
            self.delay_levels_ms = check_delay_levels(delay_level_millis, "delay_levels_ms")
        if self._keep_events is not None:
            log.keep = self._keep_events
        log.subscribe(self.record)

    # ---------------------------------------------------------------------------------------------------- rows
    @property
    def rows(self) -> int:
        """Rows recorded so far (written or buffered)."""
        return self._seq

    def record(self, event: Event) -> None:
        """Add ``event`` as a row (a batch send's event as one row per message); the log calls this."""
        if self.ended is not None:
            return
        if self._rewrite is not None:
            event = self._rewrite(event)
        layout = _LAYOUTS.get(type(event)) or _layout(type(event))
        values = layout.get(event)
        if layout.kind in _BATCH_KINDS and "," in event.msg_id:  # type: ignore[attr-defined]
            self._add_batch(event, layout, values)
            return
        buffer = self._buffer
        rows = buffer.by_layout.get(layout)
        if rows is None:
            rows = buffer.by_layout[layout] = []
        rows.append((self._seq, event.ts_ms, event.node, *values))
        self._seq += 1
        buffer.rows += 1
        if buffer.rows >= self.batch_rows:
            self.flush()

    def _add_batch(self, event: Event, layout: _Layout, values: tuple[Any, ...]) -> None:
        names = layout.names
        msg_at, offset_at = names.index("msg_id"), names.index("offset") if "offset" in names else -1
        offset = values[offset_at] if offset_at >= 0 else None
        rows = self._buffer.by_layout.setdefault(layout, [])
        for i, msg_id in enumerate(event.msg_id.split(",")):  # type: ignore[attr-defined]
            row = list(values)
            row[msg_at] = msg_id
            if offset is not None:
                row[offset_at] = offset + i
            rows.append((self._seq, event.ts_ms, event.node, *row))
            self._seq += 1
            self._buffer.rows += 1
        if self._buffer.rows >= self.batch_rows:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows."""
        if self._buffer.rows:
            batch, rows = self._buffer.take()
            self._sink.write(self.trace_id, batch, rows)
            self.rows_written += rows

    def record_trace_end(self, status: str = SETTLED, *, detail: str | None = None) -> None:
        """Write the ``trace.end`` row (``SETTLED`` or ``CUT``) and stop recording."""
        if status not in (SETTLED, CUT):
            raise TraceWriteError(f"trace end status must be {SETTLED} or {CUT}, not {status!r}")
        if self.ended is not None:
            raise TraceWriteError(f"trace {self.trace_id} already ended ({self.ended})")
        self.record(_TraceEnd(node=RECORDER_NODE, status=status, detail=detail, ts_ms=self._clock()))
        self.ended = status
        if self._log is not None:
            self._log.unsubscribe(self.record)

    # ---------------------------------------------------------------------------------------------------- close
    def close(self) -> dict[str, Any]:
        """End the trace (``CUT`` unless already ended), write the rest and the manifests; returns this recorder's
        manifest. Idempotent."""
        if not self.closed:
            if self.ended is None:
                self.record_trace_end(CUT)
            self.flush()
            self._sink.close()
            self.closed = True
            self.out.mkdir(parents=True, exist_ok=True)
            _write_json(self.out / f"{_PART_MANIFEST_PREFIX}{self.trace_id}.json", self.part_manifest())
            if self.manifest:
                write_manifest(self.out, generator=self.generator or None)
        return self.part_manifest()

    def part_manifest(self) -> dict[str, Any]:
        manifest = {"schema_version": SCHEMA_VERSION, "format": self.fmt, "events": self.rows_written, "traces": 1,
                    "trace_ids": [self.trace_id], "end": self.ended}
        if self.delay_levels_ms is not None:
            manifest[MANIFEST_DELAY_LEVELS] = {self.trace_id: list(self.delay_levels_ms)}
        return manifest

    def __enter__(self) -> TraceRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RecordableRun(Protocol):
    """What :func:`record` needs of a run: a ``Cluster`` (its seed names the trace; it takes event sinks)."""

    seed: int

    def add_sink(self, sink: EventSink) -> EventSink: ...


def record(cluster: RecordableRun, out: str | os.PathLike[str], *, trace_id: str | None = None, fmt: str = "parquet",
           keep_events: bool | None = False, **options: Any) -> TraceRecorder:
    """Record ``cluster``'s events from now on as a trace under ``out`` (``docs/traces.md``): Parquet partitioned by
    trace (``out/trace_id=<id>/part-*.parquet``) or JSON Lines (``out/<id>.jsonl``); the trace id defaults to
    ``refimpl-s<seed>``. ``keep_events=False`` (the default) stops the cluster keeping events in memory. End the trace
    with ``recorder.record_trace_end("SETTLED")`` once the run settled; closing the recorder (or the cluster) ends it
    ``CUT`` otherwise and writes the manifest, which records the brokers' delay table when it is not the default.
    Other ``options`` are :class:`TraceRecorder`'s. To record a run from its very start, pass
    ``TraceRecorder(None, out, trace_id)`` to ``Cluster(sinks=[...])`` instead."""
    recorder = TraceRecorder(None, out, trace_id or f"refimpl-s{cluster.seed}", fmt=fmt, keep_events=keep_events,
                             **options)
    cluster.add_sink(recorder)
    return recorder


@attrs.frozen(kw_only=True)
class _TraceEnd(Event):
    """The ``trace.end`` row (not a refimpl event: the recorder writes it)."""

    kind = "trace.end"
    status: str
    detail: str | None = None


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write atomically (several processes may write the directory manifest)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_manifest(out: str | os.PathLike[str], *, generator: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Merge the recorder manifests of ``out`` (``_trace.<id>.json``) into ``out/_trace.json`` and return it:
    ``{"schema_version": 1, "format": ..., "events": N, "traces": K, "trace_ids": [...], "generator": {...}}``, plus
    ``delay_levels_ms`` (``{trace_id: [ms, ...]}``) when a recorder had its own delay table. Raises
    :class:`TraceWriteError` when the recorders wrote different formats or a recorder manifest has a
    malformed delay table."""
    directory = Path(out)
    parts = sorted(p for p in directory.glob(f"{_PART_MANIFEST_PREFIX}*.json") if p.name != MANIFEST)
    formats: set[str] = set()
    events = 0
    trace_ids: list[str] = []
    delay_tables: dict[str, tuple[int, ...]] = {}
    for path in parts:
        data = json.loads(path.read_text(encoding="utf-8"))
        formats.add(data["format"])
        events += int(data["events"])
        trace_ids.extend(data["trace_ids"])
        if MANIFEST_DELAY_LEVELS in data:
            try:
                delay_tables.update(check_delay_tables(data[MANIFEST_DELAY_LEVELS], str(path)))
            except SchemaError as bad:
                raise TraceWriteError(str(bad)) from None
    if len(formats) > 1:
        raise TraceWriteError(f"{directory} mixes trace formats {', '.join(sorted(formats))}")
    manifest: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "format": formats.pop() if formats else "parquet",
        "events": events,
        "traces": len(trace_ids),
        "trace_ids": sorted(trace_ids),
    }
    if delay_tables:
        manifest[MANIFEST_DELAY_LEVELS] = {t: list(delay_tables[t]) for t in sorted(delay_tables)}
    if generator:
        manifest["generator"] = dict(generator)
    directory.mkdir(parents=True, exist_ok=True)
    _write_json(directory / MANIFEST, manifest)
    return manifest
