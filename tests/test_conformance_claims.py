"""The suite claims only what it judged, and takes back what it made.

Coverage: a clause counts as covered only by a case that ran to a verdict (passed, failed, non-strict); a skip or
an error judged nothing. Shown on a client run whose driver cannot start (``--exec false``: every case an error), on
a broker run whose cases all skip, and on the rule itself. Clean-up: which names are the run's, and what a pass
deletes when the target lists them and when it does not answer a listing (the full runs in
``tests/test_conformance_broker.py`` check the target's lists before and after, on ``serve`` and on 4.9.8).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import socket
import threading
import time
from pathlib import Path

import pytest
from realcluster import SERVED_OPTIONS

from rocketspec.cli import main
from rocketspec.conformance.cleanup import (
    Inventory,
    Leftovers,
    Listing,
    clean,
    delete,
    is_run_name,
    leftovers,
    run_name,
)
from rocketspec.conformance.coverage import BROKER_SIDE, CLIENT_SIDE, coverage
from rocketspec.conformance.model import VERDICTS, Case, CaseResult, Level, Outcome
from rocketspec.refimpl.frame import decode, encode
from rocketspec.refimpl.served import ServedCluster

NO_VERDICT = "no case citing it reached a verdict"


def test_a_client_run_whose_driver_never_starts_covers_no_clause(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """``--exec false``: every case is an error, so the run covers nothing (it said 71 of 88 before)."""
    code = main(["conformance", "client", "--exec", "false", "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert code == 2
    document = json.loads((tmp_path / "r.json").read_text())
    assert {c["outcome"] for c in document["cases"]} == {"error"}
    assert document["coverage"]["covered"] == []
    assert f"0 of {len(CLIENT_SIDE)} client-side clauses covered" in out.splitlines()
    cited = {clause for c in document["cases"] for clause in c["clauses"]}
    reasons = {u["clause"]: u["reason"] for u in document["coverage"]["uncovered"]}
    assert all(reasons[c].startswith(NO_VERDICT) for c in cited & set(CLIENT_SIDE))


def test_a_broker_run_whose_cases_all_skip_covers_no_clause(tmp_path: Path) -> None:
    """The refusals of a broker without SQL92 filtering cannot be seen on one with it: skipped, so not covered."""
    with ServedCluster(brokers=1, **SERVED_OPTIONS) as cluster, contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(["conformance", "broker", "--namesrv", cluster.namesrv_addr, "--json", str(tmp_path / "r.json"),
                     "--case", "broker/filter/*-disabled"])
    document = json.loads((tmp_path / "r.json").read_text())
    assert code == 0, out.getvalue()
    assert [c["outcome"] for c in document["cases"]] == ["skipped", "skipped"], out.getvalue()
    assert document["coverage"]["covered"] == []
    reasons = {u["clause"]: u["reason"] for u in document["coverage"]["uncovered"]}
    assert reasons["FILTER-21"] == f"{NO_VERDICT} in this run (1 skipped: broker/filter/sql92-property-filter-disabled)"
    assert f"0 of {len(BROKER_SIDE)} broker-side clauses covered" in out.getvalue().splitlines()


def _case(name: str, *clauses: str) -> Case:
    return Case(f"broker/x/{name}", clauses, Level.MUST, "a rule", lambda ctx: None)


def test_only_a_verdict_covers_a_clause() -> None:
    a, b, c, d = BROKER_SIDE[:4]
    results = [CaseResult(_case("passes", a), Outcome.PASSED), CaseResult(_case("errs", a, b), Outcome.ERROR),
               CaseResult(_case("fails", c), Outcome.NON_STRICT), CaseResult(_case("skips", d), Outcome.SKIPPED)]
    assert VERDICTS == {Outcome.PASSED, Outcome.FAILED, Outcome.NON_STRICT}
    judged = coverage("broker", [r.case for r in results], results=results)
    assert judged.covered == (a, c)
    reasons = dict(judged.uncovered)
    assert reasons[b] == f"{NO_VERDICT} in this run (1 error: broker/x/errs)"
    assert reasons[d] == f"{NO_VERDICT} in this run (1 skipped: broker/x/skips)"
    # Without results (the catalogue), a clause is covered when a case cites it.
    assert coverage("broker", [r.case for r in results]).covered == (a, b, c, d)


def test_the_run_s_names_are_told_apart_from_every_other() -> None:
    group = run_name("group", 7)
    assert is_run_name(group) and is_run_name(f"%RETRY%{group}") and is_run_name(f"%DLQ%{group}")
    assert not is_run_name("rscf_group_0000000000_7") and not is_run_name("TBW102")
    assert is_run_name(f"rmq_sys_{group}"), "the system-prefixed name a case asks a broker to refuse"
    assert not is_run_name(f"rmq_sys_x_{group}") and not is_run_name(f"RMQ_SYS_TRANS_HALF_TOPIC{group}")


def test_a_pass_deletes_the_run_s_new_names_and_falls_back_to_the_recorded_ones() -> None:
    topic, group, stray = run_name("topic", 1), run_name("group", 2), run_name("group", 3)
    other = "someone_elses_topic"
    before = Inventory(frozenset({"TBW102"}), {"b1": Listing(frozenset({"TBW102"}), frozenset(), frozenset()),
                                               "b2": Listing(None, None, None)})
    now = Inventory(frozenset({"TBW102", topic, f"%RETRY%{stray}", other}),
                    {"b1": Listing(frozenset({"TBW102", topic, f"%RETRY%{stray}", other}), frozenset({group}),
                                   frozenset({stray})),
                     "b2": Listing(frozenset({topic}), frozenset(), frozenset())})
    found = leftovers(before, now, [topic], [group])
    assert found.broker_topics["b1"] == {topic, f"%RETRY%{stray}"}
    assert found.broker_groups["b1"] == {group, stray}, "a group with offsets and no config is deleted too"
    assert found.namesrv_topics == {topic, f"%RETRY%{stray}"}
    # b2 did not answer before the run: the recorded names (and the recorded group's retry and DLQ topics) instead.
    assert found.broker_topics["b2"] == {topic, f"%RETRY%{group}", f"%DLQ%{group}"}
    assert found.broker_groups["b2"] == {group}


def test_a_clean_up_past_its_deadline_sends_nothing() -> None:
    """After Ctrl-C the clean-up has what is left of the command's 2 s: once that is spent it does not even connect
    (a target that answers slowly cannot hold the interrupted command)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        addr = f"127.0.0.1:{listener.getsockname()[1]}"
        left = clean(addr, [addr], Inventory(None, {}), [run_name("topic", 1)], [run_name("group", 2)], 600.0,
                     deadline=time.monotonic() - 1)
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert left == frozenset()


def test_what_the_target_will_not_delete_is_named_on_the_console(tmp_path: Path) -> None:
    """A broker that refuses DELETE_TOPIC_IN_BROKER keeps the case's topic and its group's retry topic: the run says
    so, by name."""
    refuse = {"action": "fail", "target": "broker-a", "request": "DELETE_TOPIC_IN_BROKER", "code": "SYSTEM_ERROR"}
    with ServedCluster(brokers=1, faults=[refuse], **SERVED_OPTIONS) as cluster, \
            contextlib.redirect_stdout(io.StringIO()) as out:
        code = main(["conformance", "broker", "--namesrv", cluster.namesrv_addr,
                     "--case", "broker/clients/heartbeat-creates-retry-topic"])
    assert code == 0, out.getvalue()
    [line] = [line for line in out.getvalue().splitlines() if "did not delete" in line]
    assert re.fullmatch(r"rocketspec conformance broker: the target did not delete 2 name\(s\) the run made: "
                        r"%RETRY%rscf_group_\d+_\d+, rscf_topic_\d+_\d+", line), line


def _answering_in_reverse(listener: socket.socket, received: list[str]) -> None:
    """One connection's requests, each batch answered in reverse order once the client pauses (as a broker's pool of
    admin threads may answer): the topic of every request is noted in ``received``."""
    connection, _ = listener.accept()
    with connection:
        connection.settimeout(0.2)
        data, unanswered = b"", []
        for _ in range(1000):  # bounded: the client closes long before
            try:
                chunk = connection.recv(65536)
            except TimeoutError:
                for request in reversed(unanswered):
                    connection.sendall(encode(request.response()))
                unanswered = []
                continue
            if not chunk:
                return
            data += chunk
            while len(data) >= 4 and len(data) >= 4 + int.from_bytes(data[:4], "big"):
                size = int.from_bytes(data[:4], "big")
                request, _serialize = decode(data[4:4 + size])
                data = data[4 + size:]
                received.append(request.field("topic") or "")
                unanswered.append(request)


def test_deletions_answered_out_of_order_are_all_sent() -> None:
    """4.9.8 answers admin requests from a thread pool, out of order: every deletion is still sent (the clean-up
    once waited for the first answer of a batch, skipped the others and gave up on the real broker)."""
    topics = frozenset(run_name("topic", n) for n in range(40))
    received: list[str] = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        addr = f"127.0.0.1:{listener.getsockname()[1]}"
        server = threading.Thread(target=_answering_in_reverse, args=(listener, received), daemon=True)
        server.start()
        delete(Leftovers({}, {addr: topics}, frozenset()), addr, 5.0)
        server.join(30)
    assert sorted(received) == sorted(topics)
