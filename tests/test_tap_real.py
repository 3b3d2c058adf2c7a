"""The wire tap in front of a real RocketMQ 4.9.8 cluster under the official Java client (issue 17's acceptance).

``rocketspec tap`` records what the Java client and the real name server and brokers say to each other; the trace's
check must judge real cases, not only scan rows, for every invariant the wire can decide, and hold on them:

- no_lost_message: acknowledged sends, by part (a) (the put is the send answer's: read from the wire, derived);
- offset_no_regression: the UPDATE_CONSUMER_OFFSET commits the client sends;
- offset_not_past_unconsumed: the messages the consumer received (pull answers, derived) that it sent back;
- pull_oracle: the real broker's pull answers (its GetMessageStatus in the remark, its min and max offsets);
- send_retry: the producers' attempts (declared SYNC to the tap);
- transaction: half messages, the broker's checks back;
- retry_delay_dlq: (c), the deliveries: none from a DLQ.

Two cannot be decided from the wire and say so ("nothing judged", not "ok"): duplicates_allowed needs the listener's
results and single_owner the client's allocation, neither of which the client sends. Needs the real installation
(tests/realcluster.py says how it is found).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from realcluster import JavaDriver, RealCluster

from rocketspec.traces import reading
from rocketspec.traces.pycheck import check_python
from rocketspec.traces.report import format_report
from rocketspec.traces.tap import Tap

pytestmark = pytest.mark.xdist_group("rocketmq-real")

#: The invariants the wire decides, and the two it cannot.
WIRE_DECIDES = ("no_lost_message", "offset_no_regression", "offset_not_past_unconsumed", "pull_oracle", "send_retry",
                "transaction", "retry_delay_dlq")
NOT_ON_THE_WIRE = ("duplicates_allowed", "single_owner")


def test_a_tapped_java_session_on_the_real_broker_is_judged_and_holds(
        real_rocketmq: RealCluster, java_driver: JavaDriver, tmp_path: Path) -> None:
    out = tmp_path / "trace"
    suffix = f"_tap_{os.getpid()}"
    with Tap("127.0.0.1", 0, real_rocketmq.namesrv_addr, out, trace_id="tap-real", send_mode="SYNC") as tap:
        # Names of their own per scenario: a group of the same name would also get the other's retry copies.
        consumed = java_driver.run(tap.addr, "consumer.tapped", suffix=f"{suffix}_c", count=12)
        txn = java_driver.run(tap.addr, "producer.transactions", suffix=f"{suffix}_t")
        tap.close()
    assert consumed == {"handled": 12, "failedOnce": 4}
    assert txn["received"] == ["commit", "unknown-commit"]
    rows = [row for _, rows in reading.read_traces(out) for row in rows]
    kinds = {row["kind"] for row in rows}
    assert {"consume.deliver", "sendback", "offset.commit", "txn.half", "txn.check"} <= kinds
    # The send-backs say what the client asked; where the copy went is the broker's decision, not on the wire.
    assert all(r["target"] is None and r["delay_level"] is None for r in rows if r["kind"] == "sendback")
    report = check_python(out)
    print(format_report(report))  # shown with -s: what a user of the tap reads
    assert report.ok, format_report(report)
    judged = {r.name: r.judged for r in report.results}
    assert all(judged[name] > 0 for name in WIRE_DECIDES), judged
    assert all(judged[name] == 0 for name in NOT_ON_THE_WIRE), judged
    assert {r.name: r.verdict for r in report.results if not r.judged} == dict.fromkeys(NOT_ON_THE_WIRE,
                                                                                       "nothing judged")
    # Every failed message was received, then sent back before its offset was committed past it.
    assert judged["offset_not_past_unconsumed"] >= 4
    assert "nothing judged by duplicates_allowed, single_owner" in format_report(report)
