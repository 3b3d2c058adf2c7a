"""Progress lines of long commands: rate-limited, only where someone watches, never on stdout."""

from __future__ import annotations

import io
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from trace_fixtures import healthy

from rocketspec import speccheck
from rocketspec.cli import main
from rocketspec.cli.progress import EVERY_S, PLAIN_EVERY_S, PROGRESS_ENV, ProgressLine, elapsed, if_watched, watched
from rocketspec.contracts import CrosshairRun
from rocketspec.traces.pycheck import check_python


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_first_line_comes_after_the_interval_then_at_most_one_per_interval() -> None:
    clock, out = _Clock(), io.StringIO()
    line = ProgressLine("python checker", every_s=10.0, stream=out, enabled=True, clock=clock)
    line("a")
    clock.now = 109.9
    line("b")
    assert out.getvalue() == ""
    clock.now = 110.0
    line("c")
    clock.now = 115.0
    line("d")
    clock.now = 120.5
    line("e")
    assert out.getvalue().splitlines() == ["rocketspec: python checker: c (10 s)",
                                           "rocketspec: python checker: e (20 s)"]
    assert line.printed == 2


def test_nothing_when_nobody_watches() -> None:
    clock, out = _Clock(), io.StringIO()
    line = ProgressLine("x", every_s=1.0, stream=out, enabled=False, clock=clock)
    clock.now = 1e9
    line("late")
    assert out.getvalue() == ""


@pytest.mark.parametrize(("forced", "tty", "expected"), [("1", False, True), ("0", True, False), (None, True, True),
                                                         (None, False, False)])
def test_watched_by_terminal_or_setting(monkeypatch: pytest.MonkeyPatch, forced: str | None, tty: bool,
                                        expected: bool) -> None:
    if forced is None:
        monkeypatch.delenv(PROGRESS_ENV, raising=False)
    else:
        monkeypatch.setenv(PROGRESS_ENV, forced)
    stream = io.StringIO()
    stream.isatty = lambda: tty  # type: ignore[method-assign]
    assert watched(stream) is expected


def test_the_python_checker_reports_traces_and_events_as_it_goes() -> None:
    rows = healthy()
    heard: list[str] = []
    report = check_python(rows, progress=heard.append)
    assert heard and heard[-1] == f"{report.traces:,} trace(s), {report.events:,} events checked"


def _stream(tty: bool) -> io.StringIO:
    stream = io.StringIO()
    stream.isatty = lambda: tty  # type: ignore[method-assign]
    return stream


def test_a_plain_line_at_least_every_30_s_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Redirected to a file, a long check still says every half minute at most how far it is, and for how long."""
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    clock, out = _Clock(), _stream(tty=False)
    line = ProgressLine("spec check", stream=out, clock=clock)
    assert line.enabled and not line.live and if_watched(line) is line
    printed_at: list[float] = []
    for second in range(1, 181):  # news (or a heartbeat) once a second for three minutes
        clock.now = 100.0 + second
        before = line.printed
        line(f"explorer: remoting {second} states")
        if line.printed > before:
            printed_at.append(clock.now)
    gaps = [b - a for a, b in zip([100.0, *printed_at], printed_at, strict=False)]
    assert printed_at and max(gaps) <= 30.0 and PLAIN_EVERY_S <= 30.0
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("rocketspec: spec check: explorer: remoting ")
    assert last.endswith(f"({elapsed(printed_at[-1] - 100)})")


def test_the_live_line_is_more_frequent_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    assert ProgressLine("x", stream=_stream(tty=True)).every_s == EVERY_S < PLAIN_EVERY_S
    assert ProgressLine("x", stream=_stream(tty=False)).every_s == PLAIN_EVERY_S


def test_progress_0_silences_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROGRESS_ENV, "0")
    line = ProgressLine("x", stream=_stream(tty=True))
    assert not line.enabled and if_watched(line) is None


def test_elapsed_reads_well() -> None:
    assert [elapsed(s) for s in (0, 59.9, 65, 3599, 3725)] == ["0 s", "59 s", "1 min 05 s", "59 min 59 s", "1 h 02 min"]


def test_spec_check_tells_progress_while_crosshair_runs_without_news(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    """Between the explorer's reports and CrossHair's areas there may be minutes without news: the check still
    tells its progress once a heartbeat, with the areas CrossHair has done and has left."""
    monkeypatch.setattr(speccheck, "HEARTBEAT_S", 0.01)
    heard: list[str] = []
    enough = threading.Event()

    def tell(text: str) -> None:
        heard.append(text)
        if len(heard) >= 5:
            enough.set()

    def slow(targets: Sequence[str], per_condition_timeout: float, **_: object) -> CrosshairRun:
        enough.wait(60)  # a bound for a hang, not a speed
        return CrosshairRun(" ".join(targets), 0, (), "", per_condition_timeout)

    monkeypatch.setattr(speccheck, "run_crosshair", slow)
    speccheck.check_areas(["remoting"], explorer=False, progress=tell, cache=None)
    assert enough.is_set()
    assert "CrossHair: 0/1 areas done, 1 left, 0 conditions checked" in heard
    assert heard[-1].startswith("CrossHair: 1/1 areas done, 0 left")


class _Seen(Exception):
    pass


def test_traces_check_with_spark_reports_progress_when_piped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``traces check --engine spark`` with stderr not a terminal hands the checker a progress line."""
    sparkcheck = pytest.importorskip("rocketspec.traces.sparkcheck")
    monkeypatch.delenv(PROGRESS_ENV, raising=False)
    monkeypatch.setattr("sys.stderr", _stream(tty=False))
    given: list[object] = []

    def fake(source: object, master: object = None, progress: object = None) -> object:
        given.append(progress)
        raise _Seen

    monkeypatch.setattr(sparkcheck, "check_spark", fake)
    trace = tmp_path / "t.jsonl"
    trace.write_text("", encoding="utf-8")
    with pytest.raises(_Seen):
        main(["traces", "check", str(trace), "--engine", "spark"])
    assert isinstance(given[0], ProgressLine) and not given[0].live
