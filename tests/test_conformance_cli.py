"""``rocketspec conformance``: bad input is one line and exit 2; the runner classifies every way a case ends."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from rocketspec.cli import main
from rocketspec.conformance.model import Case, CaseFailed, CaseList, CaseSkipped, Level, Outcome, select
from rocketspec.conformance.runner import run_case
from rocketspec.conformance.wire import Recorder


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    return lines[0]


@pytest.fixture()
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def garbage_server() -> Iterator[str]:
    """A TCP server that answers anything with an HTTP response (not RocketMQ)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(2)
    server.close()


@pytest.fixture()
def silent_server() -> Iterator[str]:
    """A TCP server that accepts and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


def test_unreachable_address(closed_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "broker", "--namesrv", f"127.0.0.1:{closed_port}"]) == 2
    assert "cannot connect" in one_line_error(capsys)


def test_not_rocketmq(garbage_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "broker", "--namesrv", garbage_server]) == 2
    assert "does not speak the RocketMQ remoting protocol" in one_line_error(capsys)


def test_silent_address(silent_server: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "broker", "--namesrv", silent_server, "--timeout", "1"]) == 2
    assert "did not answer" in one_line_error(capsys)


@pytest.mark.parametrize("address", ["localhost", "127.0.0.1:", "127.0.0.1:99999", ":9876"])
def test_malformed_address(address: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "broker", "--namesrv", address]) == 2
    assert "HOST:PORT" in one_line_error(capsys)


def test_missing_namesrv(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "broker"]) == 2
    assert "--namesrv" in one_line_error(capsys)


def test_no_case_matches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "broker", "--namesrv", "127.0.0.1:9876", "--case", "broker/nothing-*"]) == 2
    assert "no case matches" in one_line_error(capsys)


def test_report_paths_checked_before_running(closed_port: int, tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "a-file"
    afile.write_text("")
    assert main(["conformance", "broker", "--namesrv", "127.0.0.1:9876", "--html", str(afile)]) == 2
    assert "--html" in one_line_error(capsys)
    missing = str(tmp_path / "no" / "r.json")
    assert main(["conformance", "broker", "--namesrv", "127.0.0.1:9876", "--json", missing]) == 2
    assert "--json" in one_line_error(capsys)


def test_bad_timeout_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["conformance", "broker", "--namesrv", "127.0.0.1:9876", "--timeout", "-1"])
    assert exit_info.value.code == 2
    assert "must be positive" in capsys.readouterr().err


def test_list_needs_no_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "broker", "--list", "--case", "broker/namesrv"]) == 0
    out = capsys.readouterr().out
    assert "broker/namesrv/" in out and "broker/send/" not in out


# ------------------------------------------------------------------------------------------------------ the runner


class FakeContext:
    def __init__(self) -> None:
        self.recorder = Recorder()
        self.aborted = threading.Event()
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted.set()


def _case(run, level: Level = Level.MUST) -> Case:
    cases = CaseList("broker/test")
    cases.case("c", clauses=("PULL-1",), requirement="r", level=level)(run)
    return cases.cases[0]


def _raise(error: BaseException):
    def run(ctx: FakeContext) -> None:
        raise error
    return run


@pytest.mark.parametrize(("error", "level", "outcome"), [
    (None, Level.MUST, Outcome.PASSED),
    (CaseFailed("a", "b"), Level.MUST, Outcome.FAILED),
    (CaseFailed("a", "b"), Level.SHOULD, Outcome.NON_STRICT),
    (CaseSkipped("no feature"), Level.MUST, Outcome.SKIPPED),
    (RuntimeError("bug"), Level.MUST, Outcome.ERROR),
    (TimeoutError("no answer"), Level.MUST, Outcome.FAILED),
])
def test_outcomes(error: BaseException | None, level: Level, outcome: Outcome) -> None:
    case = _case((lambda ctx: None) if error is None else _raise(error), level)
    context = FakeContext()
    result = run_case(case, lambda c, b: context, 5)
    assert result.outcome is outcome and context.closed
    if outcome is Outcome.FAILED and isinstance(error, CaseFailed):
        assert (result.expected, result.actual) == ("a", "b")


def test_a_hanging_case_is_stopped_at_its_budget() -> None:
    context = FakeContext()
    case = _case(lambda ctx: ctx.aborted.wait(30))
    result = run_case(case, lambda c, b: context, 0.3)
    assert result.outcome is Outcome.ERROR and "budget" in result.detail
    assert context.aborted.is_set()  # the runner stopped the case instead of waiting for it


def test_select_by_glob_and_by_area() -> None:
    cases = CaseList("broker/pull")
    for name in ("a", "b-x"):
        cases.case(name, clauses=("PULL-1",), requirement="r")(lambda ctx: None)
    assert [c.id for c in select(cases.cases, ["broker/pull"])] == ["broker/pull/a", "broker/pull/b-x"]
    assert [c.id for c in select(cases.cases, ["*/b-*"])] == ["broker/pull/b-x"]
    assert select(cases.cases, []) == cases.cases


def test_case_ids_and_clauses_are_checked() -> None:
    cases = CaseList("broker/pull")
    with pytest.raises(ValueError):
        cases.case("Bad Name", clauses=("PULL-1",), requirement="r")(lambda ctx: None)
    with pytest.raises(ValueError):
        cases.case("x", clauses=(), requirement="r")(lambda ctx: None)
