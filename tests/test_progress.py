"""Progress lines of long commands: rate-limited, only where someone watches, never on stdout."""

from __future__ import annotations

import io

import pytest
from trace_fixtures import healthy

from rocketspec.cli.progress import PROGRESS_ENV, ProgressLine, watched
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
    assert out.getvalue().splitlines() == ["rocketspec: python checker: c", "rocketspec: python checker: e"]
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
