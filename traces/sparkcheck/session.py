"""The Spark session of the PySpark checker: starting it, sizing it to the trace, and keeping it quiet.

:func:`spark_session` starts (or reuses) the process's one session; :func:`_configure` sizes its settings to the
trace (:data:`SMALL`, :data:`CACHED`); Ctrl-C is held while the JVM starts (:func:`_interrupt_deferred`) and
afterwards only raises ``KeyboardInterrupt`` (:func:`_quiet_interrupts`, :func:`_stop_quietly`); the JVM's start-up
noise on standard error is dropped (:func:`_jvm_stderr_filtered`) and its log is off (:func:`_log4j_config`).
Spark's errors reach the user as one line (:class:`SparkJobFailed`, :class:`SparkUnavailable`,
:func:`_failure_line`, :func:`_short`).

No invariant is checked here (the invariants are in the modules named in :mod:`rocketspec.traces.sparkcheck`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from rocketspec.traces.engine import DEFAULT_MASTER

#: The process's one session (see :func:`spark_session`), rebound when it is created.
_SESSION: SparkSession | None = None


class SparkJobFailed(RuntimeError):
    """A Spark job of the check failed (an executor or its Python worker died, a task kept failing): the message
    is one line, the root cause without the JVM's stack."""


class SparkUnavailable(RuntimeError):
    """Spark cannot start here (no Java, or the master cannot be reached); the message says why."""


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
    if _SESSION is not None and not _SESSION.sparkContext._jsc.sc().isStopped():
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
    """The SIGINT handler during a check: note the interrupt (:data:`_INTERRUPTED`) and raise KeyboardInterrupt."""
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


# ----------------------------------------------------------------------------------------------------------------
# settings sized to the trace


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
        assert jvm is not None  # a live context has its gateway (and the block ignores any failure)
        jvm.java.lang.System.setErr(jvm.java.io.PrintStream(jvm.java.io.OutputStream.nullOutputStream()))
    with contextlib.suppress(Exception):
        spark.sparkContext.cancelAllJobs()
    with contextlib.suppress(Exception):
        spark.stop()
