"""``rocketspec traces check`` and ``traces generate --spark`` on a real Spark standalone cluster.

A master and two workers (one core each) are started from the pyspark installation's ``spark-class`` on loopback;
the commands run in a subprocess (a process has one SparkContext, and the rest of the suite uses local sessions) with
``--master spark://127.0.0.1:P``, and must give exactly what they give without a cluster: the checker's report equals
the Python engine's on a damaged heavy-fault trace (violations of most invariants), and generation writes
byte-identical files. That the work ran on the cluster is read from the cluster itself: the master lists the
finished application, and each worker's work directory holds an executor directory of it. Every daemon binds
127.0.0.1 only, and is stopped at the end of the module, also when starting it failed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from realcluster import REQUIRE_ENV

from rocketspec.traces.pycheck import check_python
from rocketspec.traces.schema import MANIFEST

pytestmark = pytest.mark.xdist_group("spark-cluster")

APP_NAME = "rocketspec traces"  # traces/sparkcheck/session.py::spark_session
#: Daemons and executors: the client JIT and the serial collector, which halve the CPU a JVM spends starting.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: Settings for the driver started by ``rocketspec``: spark-submit options, which pyspark reads from this variable
#: when it launches the JVM from Python (docs/traces.md, "On a cluster").
SUBMIT_ARGS = shlex.join([
    "--driver-memory", "1g", "--conf", "spark.executor.memory=512m", "--conf", "spark.executor.cores=1",
    "--conf", "spark.cores.max=2", "--conf", f"spark.executor.extraJavaOptions={JVM_OPTIONS}", "pyspark-shell",
])
EXECUTOR_MEMORY_MB = 512
#: Bounds (not assertions on speed): a start that takes longer is broken; a command gets several minutes.
START_TIMEOUT = 120.0
COMMAND_TIMEOUT = 600.0


def _skip(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1 forbids skipping)")
    pytest.skip(reason)


def _spark_class() -> Path:
    """The pyspark installation's ``bin/spark-class``; skips when it or Java is missing."""
    pyspark = pytest.importorskip("pyspark")
    script = Path(pyspark.__file__).parent / "bin" / "spark-class"
    if not script.is_file():
        _skip(f"no spark-class in the pyspark installation ({script})")
    java_home = os.environ.get("JAVA_HOME")
    if not (java_home and (Path(java_home) / "bin" / "java").is_file()) and shutil.which("java") is None:
        _skip("no Java (java on PATH or JAVA_HOME): a Spark standalone cluster needs a JVM")
    return script


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get_json(url: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return dict(json.loads(answer.read()))
    except (OSError, ValueError, urllib.error.URLError):
        return None  # not up yet


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _listening(pids: set[int]) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state held by ``pids`` (Linux /proc)."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                try:
                    target = os.readlink(fd)
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found: set[tuple[str, int]] = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            if width == 8:
                host = socket.inet_ntop(socket.AF_INET, raw[::-1])
            else:  # four little-endian 32-bit words
                host = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
            found.add((host.removeprefix("::ffff:"), int(port, 16)))  # a v4-mapped address is the v4 one
    return found


def _descendants(root: int) -> set[int]:
    """``root`` and every process below it (the worker's executors are its children)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, []))
    return found


@attrs.define
class SparkCluster:
    """A standalone master and workers on 127.0.0.1, each a process group of its own (stopped as a group)."""

    base: Path
    master_url: str = ""
    web_url: str = ""
    workers: list[Path] = attrs.Factory(list)
    processes: list[subprocess.Popen[bytes]] = attrs.Factory(list)

    def env(self) -> dict[str, str]:
        return dict(
            os.environ,
            SPARK_LOCAL_IP="127.0.0.1",  # every daemon, executor and web UI binds loopback
            SPARK_DAEMON_MEMORY="512m",
            SPARK_DAEMON_JAVA_OPTS=JVM_OPTIONS,
            # No REST submission server: it would listen on the fixed port 6066, which parallel runs share.
            SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
            SPARK_LOG_DIR=str(self.base / "logs"),
            SPARK_PID_DIR=str(self.base),
        )

    def _start(self, name: str, spark_class: Path, *args: str) -> subprocess.Popen[bytes]:
        log = (self.base / f"{name}.log").open("wb")
        try:
            process = subprocess.Popen([str(spark_class), *args], stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, env=self.env(), cwd=self.base,
                                       start_new_session=True)
        finally:
            log.close()
        self.processes.append(process)
        return process

    def _wait(self, what: str, ready: Any) -> dict[str, Any]:
        """Poll the master's JSON until ``ready(state)``; fail with the logs when a daemon exits or time is up."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            state = _get_json(f"{self.web_url}/json") if self.web_url else None
            if state is not None and ready(state):
                return state
            for process in self.processes:
                if process.poll() is not None:
                    pytest.fail(f"a Spark daemon exited ({process.returncode}) while waiting for {what}:\n"
                                + "\n".join(_tail(p) for p in sorted(self.base.glob("*.log"))))
            if time.monotonic() > deadline:
                pytest.fail(f"no {what} within {START_TIMEOUT:.0f} s; master says {state}:\n"
                            + "\n".join(_tail(p) for p in sorted(self.base.glob("*.log"))))
            time.sleep(0.3)

    def start(self, spark_class: Path, workers: int = 2) -> None:
        port, web = _free_port(), _free_port()
        self.web_url = f"http://127.0.0.1:{web}"
        self._start("master", spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(port), "--webui-port", str(web))
        state = self._wait("master", lambda s: s.get("status") == "ALIVE")
        self.master_url = str(state["url"])
        for k in range(workers):
            work = self.base / f"worker-{k}"
            work.mkdir()
            self.workers.append(work)
            self._start(f"worker-{k}", spark_class, "org.apache.spark.deploy.worker.Worker", self.master_url,
                        "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(_free_port()),
                        "--work-dir", str(work))
        self._wait(f"{workers} registered workers",
                   lambda s: sum(w.get("state") == "ALIVE" for w in s.get("workers", [])) == workers)

    def state(self) -> dict[str, Any]:
        state = _get_json(f"{self.web_url}/json")
        assert state is not None, "the master's web UI stopped answering"
        return state

    def listening(self) -> set[tuple[str, int]]:
        return _listening(set().union(*(_descendants(p.pid) for p in self.processes)))

    def stop(self) -> None:
        """SIGTERM to each daemon's process group (a worker's executors are in it), SIGKILL after 20 s."""
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=20)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    spark_class = _spark_class()
    running = SparkCluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        running.start(spark_class)
        yield running
    finally:
        running.stop()


def _rocketspec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``rocketspec ARGS`` in a new interpreter, with the cluster's driver settings."""
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_SUBMIT_ARGS=SUBMIT_ARGS)
    return subprocess.run([sys.executable, "-m", "rocketspec", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, stdin=subprocess.DEVNULL, timeout=COMMAND_TIMEOUT)


def _apps(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for a in state.get("completedapps", []) + state.get("activeapps", []) if a.get("name") == APP_NAME]


def _ran_on_every_worker(cluster: SparkCluster, before: set[str]) -> dict[str, Any]:
    """The one application that ran since ``before`` (the ids seen earlier); asserts the master gave it the
    executor memory set by PYSPARK_SUBMIT_ARGS and that each worker launched an executor of it."""
    new = [a for a in _apps(cluster.state()) if a["id"] not in before]
    assert len(new) == 1, new
    app = new[0]
    memory = app.get("memoryperexecutor", app.get("memoryperslave"))
    assert memory == EXECUTOR_MEMORY_MB, app
    for work in cluster.workers:
        executors = [p for p in (work / app["id"]).iterdir() if p.is_dir()] if (work / app["id"]).is_dir() else []
        assert executors, f"no executor of {app['id']} in {work}: {sorted(p.name for p in work.iterdir())}"
    return app


def _damage(directory: Path) -> None:
    """Break a generated trace the way a faulty implementation would, deterministically by ``seq % 64``: drop the
    rows at 0 (lost deliveries, results and commits) and, at 1 to 7, retry a send with a gap in its attempts, answer
    a pull past the queue's end, check a half message too often, take every queue in a rebalance, commit a lower
    offset. A generated trace holds every rule at this size (docs/traces.md, "Known limits"), and violations are what
    the engines must agree on row by row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for path in sorted(directory.rglob("*.parquet")):
        table = pq.read_table(path)
        rows = []
        for row in table.to_pylist():
            at, kind = row["seq"] % 64, row["kind"]
            if at == 0:
                continue
            if at < 8:
                if kind == "send.attempt":
                    row["attempt"] += 3
                elif kind == "pull.response" and row["max_offset"] is not None:
                    row["next_offset"] = row["max_offset"] + 5
                elif kind == "txn.check":
                    row["check_times"] = 99
                elif kind == "rebalance.assign" and row["all_queues"]:
                    row["queues"] = list(row["all_queues"])
                elif kind == "offset.commit":
                    row["offset"] = max(0, row["offset"] - 3)
            rows.append(row)
        pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)


def _comparable(report: dict[str, Any]) -> dict[str, Any]:
    """What the engines must agree on: the report without the engine's name and the time taken, each sample row by
    its identity (trace_id, seq) and each excused row by its identity and cause; the engines word their reasons and
    pick the context columns each its own way."""
    kept = {k: v for k, v in report.items() if k not in ("engine", "seconds", "invariants")}
    kept["invariants"] = [dict(i, samples=[(s["trace_id"], s["seq"]) for s in i["samples"]],
                               excused=[(s["trace_id"], s["seq"], s["cause"]) for s in i["excused"]])
                          for i in report["invariants"]]
    return kept


def test_the_daemons_listen_on_loopback_only(cluster: SparkCluster) -> None:
    bound = cluster.listening()
    assert bound, "found none of the daemons' listening sockets"
    assert {host for host, _ in bound} == {"127.0.0.1"}, bound


def test_check_on_the_cluster_equals_the_local_result(cluster: SparkCluster, tmp_path: Path) -> None:
    trace = tmp_path / "heavy"
    generated = _rocketspec("traces", "generate", "--events", "20000", "--shards", "2", "--seed", "5", "--faults",
                            "heavy", "--out", str(trace), cwd=tmp_path)
    assert generated.returncode == 0, generated.stderr
    _damage(trace)
    local = check_python(trace).to_json()
    assert sum(not i["ok"] for i in local["invariants"]) >= 5, local
    before = {a["id"] for a in _apps(cluster.state())}
    checked = _rocketspec("traces", "check", str(trace), "--master", cluster.master_url, "--json", cwd=tmp_path)
    assert checked.returncode == 1, checked.stderr[-3000:]
    assert "engine spark (auto: --master" in checked.stderr
    remote = json.loads(checked.stdout)
    assert remote["engine"] == "spark"
    assert _comparable(remote) == _comparable(local)
    _ran_on_every_worker(cluster, before)


def test_generate_on_the_cluster_writes_the_same_files(cluster: SparkCluster, tmp_path: Path) -> None:
    on_cluster, local = tmp_path / "cluster", tmp_path / "local"
    before = {a["id"] for a in _apps(cluster.state())}
    generated = _rocketspec("traces", "generate", "--events", "4000", "--shards", "2", "--seed", "9", "--spark",
                            "--master", cluster.master_url, "--out", str(on_cluster), cwd=tmp_path)
    assert generated.returncode == 0, generated.stderr[-3000:]
    _ran_on_every_worker(cluster, before)
    plain = _rocketspec("traces", "generate", "--events", "4000", "--shards", "2", "--seed", "9", "--out",
                        str(local), cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr

    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
                if p.is_file() and p.name != MANIFEST}

    written = files(on_cluster)
    assert any(name.endswith(".parquet") for name in written) and written == files(local)
    manifests = [json.loads((root / MANIFEST).read_text()) for root in (on_cluster, local)]
    assert [m["generator"].pop("engine") for m in manifests] == ["spark", "processes"]
    assert manifests[0] == manifests[1]
