"""Hypothesis profiles: `ci` (bounded, deterministic; the default) and `deep` (long runs by hand).

Select with ``pytest --hypothesis-profile=deep`` or ``HYPOTHESIS_PROFILE=deep``.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=True,
    deadline=None,
    print_blob=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep",
    max_examples=20_000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
# The ci profile is deterministic only if the implementation's set and dict orders are: string hashing is seeded per
# process, so the xdist workers (started after this runs, with this environment) all get one fixed seed.
os.environ.setdefault("PYTHONHASHSEED", "0")


# ------------------------------------------------------------------------------------------------------ slow tests
# The README's test command runs in minutes; what takes longer is marked `slow` and runs with `--slow` (CI runs both:
# `.ci/run`). Slow: the whole main job (`spec check` at full budgets), CrossHair runs over many conditions, Spark
# (a JVM per session), and the suites that start the real RocketMQ 4.9.8, its Java client or the C++/JS client
# conformance drivers. Tests of those xdist groups are marked here, so a new test in a group needs no mark of its own.
SLOW_GROUPS = frozenset({"rocketmq-real", "conformance-client", "client-suite-cpp", "client-suite-js", "spark-cluster"})
SLOW_ENV = "ROCKETSPEC_SLOW"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true",
                     help=f"also run the tests marked slow (or set {SLOW_ENV}=1); `-m slow` runs only those")


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        group = item.get_closest_marker("xdist_group")
        if group is not None and group.args and group.args[0] in SLOW_GROUPS:
            item.add_marker(pytest.mark.slow)
    if config.getoption("--slow") or os.environ.get(SLOW_ENV) == "1":
        return
    skip = pytest.mark.skip(reason="slow: runs with --slow (CI runs it)")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


# ------------------------------------------------------------------------------------------ why tests were skipped
# The README's test command skips the slow tests and those whose tools or installations are absent here (a real
# RocketMQ, Java, Chromium, ...). One line per reason, with its count, says why; pytest's own `-rs` prints a line per
# test location, hundreds of them.


def skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The reason a skipped test or module gives, on one line ("no reason given" for a bare skip)."""
    longrepr = report.longrepr
    # A skip's longrepr is (path, line, "Skipped: reason"), a list once an xdist worker has sent it over.
    reason = str(longrepr[2]) if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3 else str(longrepr or "")
    reason = reason.removeprefix("Skipped: ").strip()
    return reason.splitlines()[0] if reason else "no reason given"


def skip_summary(reports: list[pytest.TestReport | pytest.CollectReport]) -> list[str]:
    """One line per skip reason, the most frequent first: its count, right-aligned, and the reason."""
    counts = Counter(skip_reason(r) for r in reports)
    width = len(str(max(counts.values(), default=0)))
    return [f"{n:>{width}}  {reason}" for reason, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if getattr(r, "skipped", False)]
    if skipped:
        terminalreporter.write_sep("=", f"{len(skipped)} skipped, by reason")
        for line in skip_summary(skipped):
            terminalreporter.write_line(line)


# ----------------------------------------------------------------- the real RocketMQ 4.9.8 and the official Java client
# Tests that use these are marked `pytest.mark.xdist_group("rocketmq-real")` so that one xdist worker starts the
# real cluster once (`--dist loadgroup` in pyproject); see tests/realcluster.py for the setting that finds it.

import tempfile  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

from realcluster import SERVED_OPTIONS, JavaDriver, RealCluster, require_home  # noqa: E402

from rocketspec.refimpl.served import ServedCluster  # noqa: E402
from rocketspec.traces.pycheck import check_python  # noqa: E402
from rocketspec.traces.report import format_report  # noqa: E402
from rocketspec.traces.served import TracedServer  # noqa: E402


@pytest.fixture(scope="session")
def rocketmq_home() -> Path:
    return require_home()


@pytest.fixture(scope="session")
def real_rocketmq(rocketmq_home: Path) -> Iterator[RealCluster]:
    """A real RocketMQ 4.9.8 name server and two brokers (broker-a, broker-b) with the suite's short timers."""
    with tempfile.TemporaryDirectory(prefix="rocketspec-real-") as base, \
            RealCluster(rocketmq_home, Path(base), brokers=2) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def served_for_java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    """`serve` with two brokers configured like `real_rocketmq` (same delay levels and transaction timers), one per
    module; what it served is recorded, and the trace must hold every invariant once the module is done."""
    trace = tmp_path_factory.mktemp("java-trace")
    with TracedServer(trace, fmt="jsonl", brokers=2, **SERVED_OPTIONS) as served:
        yield served
    report = check_python(trace)
    assert report.ok, format_report(report)


@pytest.fixture(scope="session")
def java_driver(rocketmq_home: Path) -> Iterator[JavaDriver]:
    with tempfile.TemporaryDirectory(prefix="rocketspec-java-") as work:
        yield JavaDriver(rocketmq_home, Path(work))
