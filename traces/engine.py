"""Which checker runs ``traces check`` when the user does not say: the one that is faster for the input.

Measured on a 2-core machine (docs/benchmarks.md, "Checking"), the single-process Python checker beats Spark
``local[2]`` at every size measured (a few thousand to 50M events) and starts in a fraction of a second where a JVM
takes seconds, so a trace on this machine's file system goes to the Python checker. Spark is chosen when asked for
(``--engine spark``), when a master is named (``--master``), when the process runs under ``spark-submit``, and for a
trace on a cluster file system (a URL such as ``hdfs://`` or ``s3a://``), which only Spark reads.
"""

from __future__ import annotations

import os

AUTO, SPARK, PYTHON = "auto", "spark", "python"
ENGINES = (AUTO, SPARK, PYTHON)
#: The Spark master when none is named and the process does not run under spark-submit.
DEFAULT_MASTER = "local[*]"


def is_url(source: str | os.PathLike[str]) -> bool:
    """A URL (``scheme://...``), not a path: ``Path`` would make ``hdfs://nn/x`` the directory ``hdfs:/nn/x``."""
    return "://" in os.fspath(source)


def is_remote(source: str | os.PathLike[str]) -> bool:
    """A URL of a file system other than this machine's (``file://`` is local)."""
    return is_url(source) and not os.fspath(source).startswith("file://")


def choose_engine(source: str | os.PathLike[str], engine: str = AUTO, master: str | None = None) -> tuple[str, str]:
    """The engine for ``engine`` (one of :data:`ENGINES`) and a few words on why; ``ValueError`` for a combination
    that cannot run (the Python checker with a master, or on a remote trace)."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; engines are: {', '.join(ENGINES)}")
    remote = is_remote(source)
    if engine == PYTHON:
        if master is not None:
            raise ValueError("--master applies to the spark engine only")
        if remote:
            raise ValueError(f"the python engine reads local files only, not {os.fspath(source)}: use --engine spark")
        return PYTHON, "asked for"
    if engine == SPARK:
        return SPARK, "asked for"
    if master is not None:
        return SPARK, f"auto: --master {master}"
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return SPARK, "auto: running under spark-submit"
    if remote:
        return SPARK, "auto: a trace on a cluster file system"
    return PYTHON, "auto: the faster engine for a trace on this machine; --engine spark for Spark"
