"""Short runs of the reliability attacks (benchmarks/reliability.py) against ``rocketspec serve``: flood, non-readers,
slowloris, idle connections and fuzz, with a good client beside each.

Only what does not depend on timing is asserted: after the attack the server is alive and answers the good client,
its stderr holds no traceback, nothing acknowledged is lost, its RSS stayed under 300 MB, and idle connections are
closed after ``--idle-close``. The rates go into the printed summary line, for a reader, not into an
assertion; the long runs and their figures are docs/benchmarks.md's.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
# Free ports by default; ROCKETSPEC_RELIABILITY_PORT_BASE pins them (name server P, broker P+10, control P+100).
PORT_BASE = int(os.environ.get("ROCKETSPEC_RELIABILITY_PORT_BASE", "0"))


def load(name: str) -> ModuleType:
    """benchmarks/ is not a package: its modules are loaded from their files (reliability.py imports its sibling
    reliability_attacks.py by name, as it does when run as a script)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


attacks = load("reliability_attacks")
harness = load("reliability")


@pytest.fixture(scope="module")
def serve_options() -> set[str]:
    return harness.serve_options()


def short_run(name: str, options: set[str], port_offset: int) -> dict[str, object]:
    args = harness.parse_args(["--seconds", "1", "--frames", "2000", "--idle-seconds", "1", "--idle-conns", "20",
                               "--port-base", str(PORT_BASE + port_offset if PORT_BASE else 0)])
    with tempfile.TemporaryDirectory(prefix="rocketspec-reliability-") as tmp:
        result = harness.run_scenario(name, args, options, Path(tmp))
    print(harness.summary(result))
    return result


@pytest.mark.parametrize(("name", "port_offset"), [("flood", 0), ("nonreaders", 200), ("slowloris", 400),
                                                   ("fuzz", 600)])
def test_attack_leaves_the_server_answering_with_nothing_lost(name: str, port_offset: int,
                                                              serve_options: set[str]) -> None:
    result = short_run(name, serve_options, port_offset)
    assert result["crashed"] == [], "the server process died"
    assert result["answering"], "the server no longer answers a send and a route lookup after the attack"
    assert result["tracebacks"] == 0, "a traceback in serve's stderr"
    assert result["acked"] > 0, "the good client had nothing acknowledged: nothing was measured"
    assert result["lost"] == 0, f"{result['lost']} acknowledged messages not pulled back"
    assert result["rss_max_mb"] < harness.RSS_LIMIT_MB


def test_idle_connections_are_closed_after_the_idle_time(serve_options: set[str]) -> None:
    assert "--idle-close" in serve_options
    result = short_run("idle", serve_options, 800)
    assert result["idle_open"] == 20 and result["idle_closed"] == 20
    assert result["answering"] and result["lost"] == 0 and result["tracebacks"] == 0


def test_fuzz_frames_are_bounded_and_break_the_framing_only_last() -> None:
    frames = list(attacks.fuzz_frames(random.Random(7), 50))
    assert 50 <= len(frames) <= 51
    for frame in frames[:50]:  # frames on the outside: the length prefix tells the rest's size
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4


def test_bad_options_are_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        harness.main(["--seconds", "0"])
    assert exit_info.value.code == 2
    assert "--seconds and --fuzz-rounds must be positive" in capsys.readouterr().err
