"""``rocketspec traces generate``: seeded randomized workloads on the simulated reference cluster, recorded as traces.

:func:`generate` splits the requested number of events over ``shards`` independent shards. Shard ``k`` of seed ``s``
is trace ``s<s>-<k>``: its own simulated cluster, seeded by ``(s, k)``, running the workload of
:mod:`rocketspec.traces.workload` until it has recorded about ``events / shards`` rows, then settling and ending with a
``trace.end`` row (SETTLED, or CUT if it never settles). The same arguments give the same rows.

Shards run in parallel: in ``min(shards, cpu count)`` worker processes, or with ``spark=True`` as the tasks of one
Spark job (``sc.parallelize(range(shards), shards)``), each task writing its own files into the output directory
(which must then be shared by the executors, e.g. on a cluster file system). When every shard is done the directory
manifest ``_trace.json`` is written with the generator's arguments. Progress (events, events/s, shards done) goes to
the ``progress`` callback; the command line prints it on stderr.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from rocketspec.traces.engine import is_url
from rocketspec.traces.recording import FORMATS, write_manifest
from rocketspec.traces.schema import FAULT_PROFILES, SETTLED
from rocketspec.traces.workload import ShardResult, ShardSpec, run_shard

#: Rows a worker lets pass between two progress reports.
_PROGRESS_EVERY = 20_000


class GenerateError(ValueError):
    """Bad arguments or output directory for :func:`generate`; the message says what to change."""


@attrs.frozen
class Progress:
    """Where a generation is: rows recorded so far, the rate, shards finished."""

    events: int
    seconds: float
    shards_done: int
    shards: int

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        return (f"{self.events:,} events, {self.rate:,.0f} events/s, {self.shards_done}/{self.shards} shards, "
                f"{self.seconds:.1f} s")


# ----------------------------------------------------------------------------------------------------- arguments
def _check_arguments(events: int, shards: int, seed: int, faults: str, fmt: str) -> None:
    for name, value, low in (("events", events, 1), ("shards", shards, 1), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            what = "a positive" if low else "a non-negative"
            raise GenerateError(f"{name} must be {what} whole number, not {value!r}")
    if faults not in FAULT_PROFILES:
        raise GenerateError(f"faults must be one of {', '.join(FAULT_PROFILES)}, not {faults!r}")
    if fmt not in FORMATS:
        raise GenerateError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")


def _is_trace_output(path: Path) -> bool:
    name = path.name
    if path.is_dir():
        return name.startswith("trace_id=")
    return (name.startswith("_trace") and name.endswith(".json")) or name.endswith((".jsonl", ".jsonl.gz", ".parquet"))


def prepare_output(out: str | os.PathLike[str], *, force: bool = False) -> Path:
    """The output directory, created if missing. A non-empty one is refused unless ``force``, which removes the
    traces a previous generation wrote there (and refuses a directory holding anything else). A URL (``hdfs://``,
    ``s3a://``, ...) is refused: shards write with local file I/O, so on a cluster ``out`` is a shared directory
    mounted at the same path on the driver and every executor."""
    if is_url(out):
        raise GenerateError(f"--out {os.fspath(out)}: a URL; give a directory path (on a cluster, a shared directory "
                            "mounted at the same path on every node)")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise GenerateError(f"--out {path} exists and is not a directory")
    if path.is_dir():
        entries = sorted(path.iterdir())
        if entries and not force:
            raise GenerateError(f"--out {path} is not empty; choose a new directory or pass --force to replace the "
                                "traces in it")
        others = [e.name for e in entries if not _is_trace_output(e)]
        if others:
            raise GenerateError(f"--out {path} holds files that are not traces ({', '.join(others[:5])}); "
                                "--force only replaces traces")
        for entry in entries:
            if entry.is_dir():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise GenerateError(f"cannot create --out {path}: {error.strerror or error}") from None
    return path


def shard_specs(events: int, out: str | os.PathLike[str], *, shards: int = 1, seed: int = 0, faults: str = "light",
                fmt: str = "parquet") -> list[ShardSpec]:
    """The shards of a generation: ``events`` split as evenly as possible."""
    base, extra = divmod(events, shards)
    return [ShardSpec(str(out), seed, k, max(1, base + (1 if k < extra else 0)), faults, fmt) for k in range(shards)]


# ----------------------------------------------------------------------------------------------------- running
def _run_local(specs: list[ShardSpec], processes: int, started: float,
               progress: Callable[[Progress], None] | None) -> list[ShardResult]:
    if processes <= 1:
        results: list[ShardResult] = []
        done_rows = 0
        for spec in specs:
            def report(rows: int, done_rows: int = done_rows) -> None:
                if progress is not None:
                    progress(Progress(done_rows + rows, time.perf_counter() - started, len(results), len(specs)))

            result = run_shard(spec, report)
            results.append(result)
            done_rows += result.events
            if progress is not None and len(results) < len(specs):  # generate() reports the end
                progress(Progress(done_rows, time.perf_counter() - started, len(results), len(specs)))
        return results

    import multiprocessing

    context = multiprocessing.get_context("spawn")  # a fresh interpreter per worker: no state copied from the caller
    counter = context.Value("q", 0)
    with context.Pool(processes, initializer=_init_worker, initargs=(counter,)) as pool:
        pending = [pool.apply_async(_worker_run, (spec,)) for spec in specs]
        while True:
            done = sum(p.ready() for p in pending)
            if done == len(pending):
                break  # generate() reports the end
            if progress is not None:
                progress(Progress(int(counter.value), time.perf_counter() - started, done, len(specs)))
            pending[next(i for i, p in enumerate(pending) if not p.ready())].wait(0.5)
        return [p.get() for p in pending]


_counter: Any = None


def _init_worker(counter: Any) -> None:
    global _counter
    _counter = counter


def _worker_run(spec: ShardSpec) -> ShardResult:
    last = 0

    def report(rows: int) -> None:
        nonlocal last
        with _counter.get_lock():
            _counter.value += rows - last
        last = rows

    return run_shard(spec, report)


def _run_spark(specs: list[ShardSpec], master: str | None, started: float,
               progress: Callable[[Progress], None] | None) -> list[ShardResult]:
    import threading

    try:
        from rocketspec.traces.sparkcheck import spark_session
    except ImportError:
        raise GenerateError("PySpark is not installed: pip install 'rocketspec[spark]', or run without --spark") \
            from None
    # The process's one session (the checker's too): local[*] unless ``master`` or spark-submit says otherwise.
    spark = spark_session(master)
    sc = spark.sparkContext
    shard_list = list(specs)
    rdd = sc.parallelize(range(len(shard_list)), len(shard_list)).map(lambda k: attrs.asdict(run_shard(shard_list[k])))
    collected: list[dict[str, Any]] = []
    failure: list[BaseException] = []

    def collect() -> None:
        try:
            collected.extend(rdd.collect())
        except BaseException as error:  # reported on the caller's thread
            failure.append(error)

    worker = threading.Thread(target=collect, daemon=True)
    worker.start()
    tracker = sc.statusTracker()
    while worker.is_alive():
        worker.join(0.5)
        if progress is not None:
            done = 0
            for stage in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage)
                if info is not None:
                    done += info.numCompletedTasks
            progress(Progress(0, time.perf_counter() - started, done, len(shard_list)))
    if failure:
        raise failure[0]
    return [ShardResult(**row) for row in collected]


def generate(
    events: int,
    out: str | os.PathLike[str],
    *,
    shards: int = 1,
    seed: int = 0,
    faults: str = "light",
    spark: bool = False,
    master: str | None = None,
    fmt: str = "parquet",
    progress: Callable[[Progress], None] | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Generate about ``events`` trace rows in ``shards`` seeded shards under ``out``; returns a summary (events,
    traces, settled/cut shards, seconds, events/s, the manifest). ``master`` implies ``spark``. Raises
    :class:`GenerateError` for bad arguments or a non-empty ``out`` (unless ``force``)."""
    _check_arguments(events, shards, seed, faults, fmt)
    if master is not None:
        spark = True
    path = prepare_output(out, force=force)
    specs = shard_specs(events, path, shards=shards, seed=seed, faults=faults, fmt=fmt)
    started = time.perf_counter()
    if spark:
        results = _run_spark(specs, master, started, progress)
    else:
        results = _run_local(specs, min(shards, os.cpu_count() or 1), started, progress)
    seconds = time.perf_counter() - started
    results.sort(key=lambda r: int(r.trace_id.rsplit("-", 1)[1]))
    generator = {"events": events, "shards": shards, "seed": seed, "faults": faults, "format": fmt,
                 "engine": "spark" if spark else "processes"}
    manifest = write_manifest(path, generator=generator)
    total = sum(r.events for r in results)
    if progress is not None:
        progress(Progress(total, seconds, len(results), len(results)))
    return {
        "out": str(path),
        "events": total,
        "traces": len(results),
        "settled": sum(r.status == SETTLED for r in results),
        "cut": sum(r.status != SETTLED for r in results),
        "seconds": round(seconds, 3),
        "events_per_second": round(total / seconds) if seconds > 0 else 0,
        "shards": [attrs.asdict(r) for r in results],
        "manifest": manifest,
    }
