"""A real Apache RocketMQ 4.9.8 cluster and the official Java client, to compare `serve` with the real thing.

One setting finds the installation: ``ROCKETSPEC_ROCKETMQ_HOME`` names a RocketMQ home laid out like the binary
distribution (``lib/*.jar``, ``conf/``, ``bin/cluster.sh``); unset, it defaults to ``../shared/rocketmq-4.9.8`` beside
the checkout when that exists. Where there is none (a user's checkout) the tests that need it skip with the reason;
``ROCKETSPEC_REQUIRE_REAL=1`` (set by ``.ci/run``) turns that skip into a failure, so CI cannot pass by skipping.

``RealCluster`` drives ``bin/cluster.sh`` (name server and N master brokers on loopback, ~10 s to start);
``JavaDriver`` compiles ``tests/realclients/java`` once per source hash with ``javac`` against ``lib/*`` and runs one
scenario per JVM: ``java ... rocketspec.driver.Main NAMESRV AREA.METHOD ARGS_JSON`` prints one JSON object (what the
client observed) on stdout.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HOME_ENV = "ROCKETSPEC_ROCKETMQ_HOME"
REQUIRE_ENV = "ROCKETSPEC_REQUIRE_REAL"
JAVA_CACHE_ENV = "ROCKETSPEC_JAVA_CACHE"
REPO = Path(__file__).resolve().parent.parent
DEFAULT_HOME = REPO.parent / "shared" / "rocketmq-4.9.8"
JAVA_SRC = Path(__file__).resolve().parent / "realclients" / "java"

# The same short timers on both targets, so retries and check-backs come back within a test's patience:
# every delay level 1 s, a transaction checked after 1 s and then every second, SQL92 filtering on.
DELAY_LEVELS = " ".join(["1s"] * 18)
TRANSACTION_TIMEOUT_MS = 1000
TRANSACTION_CHECK_INTERVAL_MS = 1000
# Few checks before a half message is discarded, so the conformance cases on checkMax finish in seconds.
TRANSACTION_CHECK_MAX = 3
BROKER_EXTRA_CONF = "\n".join([
    f"messageDelayLevel={DELAY_LEVELS}",
    f"transactionTimeOut={TRANSACTION_TIMEOUT_MS}",
    f"transactionCheckInterval={TRANSACTION_CHECK_INTERVAL_MS}",
    f"transactionCheckMax={TRANSACTION_CHECK_MAX}",
    "enablePropertyFilter=true",
    "",
])
# The `ServedCluster` options that configure `serve` like BROKER_EXTRA_CONF configures the real brokers.
SERVED_OPTIONS: dict[str, Any] = {
    "message_delay_level": DELAY_LEVELS,
    "transaction_timeout_ms": TRANSACTION_TIMEOUT_MS,
    "transaction_check_interval_ms": TRANSACTION_CHECK_INTERVAL_MS,
    "transaction_check_max": TRANSACTION_CHECK_MAX,
    "enable_property_filter": True,  # the real cluster's enablePropertyFilter=true
}

START_TIMEOUT_S = 180
ADMIN_TIMEOUT_S = 120
SCENARIO_TIMEOUT_S = 120
# -XX:-UsePerfData: no /tmp/hsperfdata file, whose "locked by another process" warning a JVM prints on stdout when
# a PID is reused across the machine's containers (it once came before a scenario's READY line).
JAVA_OPTS = ("-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-XX:-UsePerfData")


def rocketmq_home() -> Path | None:
    """The RocketMQ home the setting names, or the default beside the checkout; None where there is none."""
    named = os.environ.get(HOME_ENV)
    home = Path(named) if named else DEFAULT_HOME
    if (home / "bin" / "cluster.sh").is_file() and (home / "lib").is_dir():
        return home
    if named:
        # A setting that names nothing usable is a mistake, never a reason to skip quietly.
        pytest.fail(f"{HOME_ENV}={named} is not a RocketMQ home (no bin/cluster.sh and lib/)")
    return None


def require_home() -> Path:
    """The RocketMQ home, or skip (fail under ROCKETSPEC_REQUIRE_REAL=1) with the reason."""
    home = rocketmq_home()
    reason = None
    if home is None:
        reason = f"no real RocketMQ 4.9.8: set {HOME_ENV} to a RocketMQ home (default {DEFAULT_HOME} is absent)"
    elif shutil.which("java") is None or shutil.which("javac") is None:
        reason = "java and javac (17 or newer) are not on PATH"
    if reason is not None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{reason} ({REQUIRE_ENV}=1 forbids skipping)")
        pytest.skip(reason)
    assert home is not None
    return home


def free_port_block(width: int = 12) -> int:
    """A port P such that P-2 .. P+width are free now (a broker listens on P, P-2 for VIP and P+1 for HA)."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base < 1100 or base + width > 65000:
            continue
        ok = True
        for port in range(base - 2, base + width):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no block of free loopback ports")


class RealCluster:
    """A real 4.9.8 name server and brokers started by ``bin/cluster.sh`` in ``directory``."""

    def __init__(self, home: Path, directory: Path, brokers: int = 2, extra_conf: str = BROKER_EXTRA_CONF) -> None:
        self.home = home
        self.dir = directory
        self.brokers = brokers
        self._extra = directory / "broker-extra.conf"
        directory.mkdir(parents=True, exist_ok=True)
        self._extra.write_text(extra_conf)
        self.namesrv_addr = ""
        self.broker_addrs: dict[str, str] = {}

    def _script(self, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, BROKER_EXTRA_CONF=str(self._extra))
        return subprocess.run(
            ["bash", str(self.home / "bin" / "cluster.sh"), *args], env=env, capture_output=True, text=True,
            timeout=timeout, stdin=subprocess.DEVNULL,
        )

    def start(self) -> RealCluster:
        namesrv_port = free_port_block(3)
        broker_base = free_port_block(10 * self.brokers + 2)
        done = self._script("start", str(self.dir), str(self.brokers), str(namesrv_port), str(broker_base),
                            timeout=START_TIMEOUT_S)
        if done.returncode != 0:
            self.stop()
            raise RuntimeError(f"cluster.sh start failed: {done.stderr.strip()[-2000:]}")
        for line in (self.dir / "cluster.txt").read_text().splitlines():
            name, addr = line.split()
            if name == "namesrv":
                self.namesrv_addr = addr
            else:
                self.broker_addrs[name] = addr
        return self

    def admin(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``mqadmin ARGS -n NAMESRV`` against this cluster."""
        return self._script("admin", str(self.dir), *args, timeout=ADMIN_TIMEOUT_S)

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._script("stop", str(self.dir), timeout=60)

    def __enter__(self) -> RealCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


LOGBACK_STATUS = re.compile(r"^\d\d:\d\d:\d\d,\d{3} \|-")


def mqadmin(home: Path, namesrv: str, *args: str, user_home: Path) -> subprocess.CompletedProcess[str]:
    """Run mqadmin (``MQAdminStartup``) from ``home`` against any name server: the real one or ``serve``."""
    user_home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, ROCKETMQ_HOME=str(home), NAMESRV_ADDR=namesrv)
    cmd = ["java", *JAVA_OPTS, f"-Duser.home={user_home}", f"-Dlogback.configurationFile={home}/conf/logback_tools.xml",
           "-cp", f"{home}/lib/*", "org.apache.rocketmq.tools.command.MQAdminStartup", *args, "-n", namesrv]
    # In user_home: some commands (getConsumerStatus) write files into the working directory.
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=ADMIN_TIMEOUT_S,
                          stdin=subprocess.DEVNULL, cwd=user_home)
    # Logback prints its own status lines to stdout when it meets a warning (seen on a loaded machine): they are not
    # mqadmin's output.
    done.stdout = "".join(line for line in done.stdout.splitlines(keepends=True) if not LOGBACK_STATUS.match(line))
    return done


def _java_cache_root() -> Path:
    explicit = os.environ.get(JAVA_CACHE_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "rocketspec" / "realclient-java"


class ScenarioError(AssertionError):
    """A driver scenario did not finish (a Java exception, a timeout): the message says which and why."""


class JavaDriver:
    """The official Java client driven by ``tests/realclients/java``: compiled once per source hash."""

    def __init__(self, home: Path, work: Path) -> None:
        self.home = home
        self.work = work
        self.classes = self._compile()

    def _compile(self) -> Path:
        sources = sorted(JAVA_SRC.rglob("*.java"))
        digest = hashlib.sha256()
        for path in sources:
            digest.update(path.relative_to(JAVA_SRC).as_posix().encode())
            digest.update(path.read_bytes())
        digest.update(str(self.home.resolve()).encode())
        root = _java_cache_root()
        root.mkdir(parents=True, exist_ok=True)
        target = root / digest.hexdigest()[:16]
        with open(root / f"{target.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (target / ".compiled").is_file():
                shutil.rmtree(target, ignore_errors=True)
                target.mkdir()
                done = subprocess.run(
                    ["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(target), "-cp", f"{self.home}/lib/*",
                     *map(str, sources)],
                    capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
                )
                if done.returncode != 0:
                    raise RuntimeError(f"javac failed:\n{done.stdout}{done.stderr}")
                (target / ".compiled").write_text("ok")
        return target

    def command(self, namesrv: str, scenario: str, args: dict[str, Any]) -> list[str]:
        user_home = Path(tempfile.mkdtemp(prefix="java-home-", dir=self.work))
        return [
            "java", *JAVA_OPTS, f"-Duser.home={user_home}", f"-Drocketmq.client.logRoot={user_home}/logs",
            "-Drocketmq.client.logLevel=WARN", "-Drocketmq.client.logUseSlf4j=false",
            f"-Dlogback.configurationFile={self.home}/conf/logback-client-quiet.xml",
            "-cp", f"{self.classes}:{self.home}/lib/*", "rocketspec.driver.Main", namesrv, scenario, json.dumps(args),
        ]

    def run(self, namesrv: str, scenario: str, timeout: float = SCENARIO_TIMEOUT_S, **args: Any) -> dict[str, Any]:
        """Run one scenario; its observation as a dict (``{"error": ...}`` scenarios raise ScenarioError)."""
        try:
            done = subprocess.run(self.command(namesrv, scenario, args), capture_output=True, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise ScenarioError(f"{scenario} against {namesrv}: no answer in {timeout} s\n{exc.stderr or ''}") from None
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            raise ScenarioError(
                f"{scenario} against {namesrv} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return json.loads(lines[-1])


@contextlib.contextmanager
def real_cluster(base: Path, brokers: int = 2, extra_conf: str = BROKER_EXTRA_CONF) -> Iterator[RealCluster]:
    home = require_home()
    with RealCluster(home, base / f"rmq-{brokers}", brokers, extra_conf) as cluster:
        yield cluster
