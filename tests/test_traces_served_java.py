"""The official Java 4.9.8 client against ``serve --trace``, nothing declared: its trace is judged (issue 29).

Recorded as the ``rocketmq_server`` fixture and ``rocketspec serve --trace`` record it, without ``--send-mode``: the
sends are read off the wire (a request and its answer, mode null), so send_retry judges every attempt by the rules
that need no mode and says why it judged no more; the consumer's commits come from a connection registered as a
consumer of its group, so they are commits (offset_no_regression judges them), not an administrator's resets. Needs
the real installation for the client (tests/realcluster.py says how it is found); no real broker is started.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from realcluster import SERVED_OPTIONS, JavaDriver

from rocketspec.traces import reading
from rocketspec.traces.invariants import MODE_UNKNOWN, not_judged_notes
from rocketspec.traces.pycheck import check_python
from rocketspec.traces.report import format_report
from rocketspec.traces.served import TracedServer

pytestmark = pytest.mark.xdist_group("rocketmq-real")


def test_a_java_clients_served_trace_is_judged_without_a_declared_send_mode(java_driver: JavaDriver,
                                                                             tmp_path: Path) -> None:
    out = tmp_path / "trace"
    with TracedServer(out, fmt="jsonl", brokers=2, **SERVED_OPTIONS) as served:
        consumed = java_driver.run(served.namesrv_addr, "consumer.tapped", suffix=f"_served_{os.getpid()}", count=12)
    assert consumed == {"handled": 12, "failedOnce": 4}
    rows = [row for _, rows in reading.read_traces(out) for row in rows]
    attempts = [r for r in rows if r["kind"] == "send.attempt"]
    assert len(attempts) >= 12 and all(r.get("mode") is None for r in attempts)
    assert all(r["action"] != "update" for r in rows if r["kind"] == "offset.reset")  # the consumer is registered
    report = check_python(out)
    print(format_report(report))  # shown with -s: what a user of serve --trace reads
    assert report.ok, format_report(report)
    judged = {r.name: r.judged for r in report.results}
    assert judged["send_retry"] >= 12 and judged["offset_no_regression"] > 0 and judged["no_lost_message"] >= 12, judged
    sends = report.result("send_retry")
    assert sends.counts.get(MODE_UNKNOWN, 0) >= 12
    assert not_judged_notes("send_retry", dict(sends.counts))[0].endswith(
        "the send mode is not on the wire; pass --send-mode")
