"""Which clauses each suite is responsible for, which of them its cases reach, and why the rest are not reached.

A clause is *broker-side* when it states what a name server or broker answers, stores or sends (what a broker
author implements); *client-side* when it states what a client sends or decides. Some rules are both (a lock's
lifetime on each side). Every responsible clause that no case reaches is listed with the reason it cannot be checked
over the wire from outside (a slave-only rule, a timer of days, a client's internal state). After a run, a clause
counts as covered only when a case citing it reached a verdict (passed, failed, non-strict): a skipped case or one
that ended in an error judged nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import attrs

from rocketspec.conformance.model import VERDICTS, Case, CaseResult
from rocketspec.spec import AREAS, area_module


def _ids(prefix: str, numbers: Iterable[int]) -> tuple[str, ...]:
    return tuple(f"{prefix}-{n}" for n in numbers)


def _all(area: str) -> tuple[str, ...]:
    return tuple(area_module(area).CLAUSES.ids)


def _areas_present(*names: str) -> tuple[str, ...]:
    ids: list[str] = []
    for name in names:
        if name in AREAS:
            ids.extend(_all(name))
    return tuple(ids)


BROKER_SIDE: tuple[str, ...] = (
    *_areas_present("name_server", "broker_requests"),
    *_ids("OFF", (7, 8, 10)),
    *_ids("PULL", (*range(1, 19), 25, 26, 27)),
    *_ids("REB", (17, 18)),
    *_ids("TXN", (2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 23, 24, 25)),
    *_ids("RETRY", range(1, 13)),
    *_ids("FILTER", (2, 4, *range(5, 22))),
)

CLIENT_SIDE: tuple[str, ...] = (
    *_all("send_retry"),
    *_ids("REB", tuple(n for n in range(1, 24) if n != 17)),
    *_ids("OFF", tuple(n for n in range(1, 20) if n not in (7, 8, 10))),
    *_ids("PULL", range(19, 25)),
    *_ids("TXN", (1, 4, 21, 22)),
    *_ids("RETRY", range(13, 28)),
    *_ids("FILTER", (1, 3, 4)),
)

# Why a responsible clause is not reached by any case. Keys are clause IDs; a clause reached by a case needs none.
UNREACHED_REASONS: dict[str, str] = {
    # broker side
    "PULL-6": "needs a consume-queue file deleted while the queue's min offset is not yet corrected: a window inside "
              "the broker's clean-up that a client cannot open on demand",
    "TXN-5": "a slave's answer: the suite drives the masters registered at the name server and cannot assume a "
             "target has slaves",
    "TXN-13": "the check pass's op-offset bookkeeping (CID_RMQ_SYS_TRANS offsets, op batches of 32) is internal; its "
              "effects are checked through TXN-14/15/19/23",
    "TXN-17": "whether a message stored during a pass waits for the next one changes only which pass checks it, "
              "within one check interval: not separable on the wire from TXN-12",
    "TXN-18": "CHECK_IMMUNITY_TIME_IN_SECONDS re-appends and defers a message depending on the op queue's contents "
              "left by other transactions: 4.9.8 did not check an immune message at all within 20 s on a broker "
              "with earlier op messages, so no bounded case can be written",
    "TXN-20": "the half and op offsets a pass stores are internal consumer offsets of CID_RMQ_SYS_TRANS; their "
              "effects (nothing checked twice after resolution, nothing lost) are TXN-14/24",
    "NS-16": "how a client turns a route into its queue tables and when it takes a new route is the client's "
             "internal state (stated with the name server's routes); nothing a name server or broker answers",
    "NS-18": "needs the name server stopped and restarted mid-case; the suite drives a running target and cannot "
             "restart it",
    # client side
    "SEND-23": "needs the client's topic route to lose every writable queue while it runs and a check that no "
               "attempt follows; no case drives that yet, and the C++/JS drivers' departures for it are unknown",
    "SEND-24": "the refused messages (a blank, over-long or illegal topic, a null, empty or oversized body) need a "
               "driver that sends a message the case chooses; the driver contract names only the topic, of a routed "
               "topic, and sends bodies of its own",
    "SEND-25": "namespace wrapping is a pure name mapping inside the client; the driver contract has no variable for "
               "ClientConfig.namespace, so nothing of it reaches the wire",
    "SEND-26": "a namespaced producer needs ClientConfig.namespace set; the driver contract has no variable for it",
    "SEND-27": "a send to a queue the application chooses (send(msg, mq) or a MessageQueueSelector) needs a driver "
               "told which queue or selector to use; the driver contract sends to the topic only",
    "SEND-28": "SelectMessageQueueByHash is chosen by the application's code; the driver contract has no variable for "
               "a selector or its argument",
    "SEND-29": "a batch (MessageBatch) is the application's choice; the driver contract sends single messages only",
    "SEND-8": "an ASYNC retry follows only a failure whose first request never reaches the wire (connection "
              "refused): 4.9.8 reports a broker-closed connection only at sendMsgTimeout, when the spent budget "
              "refuses the retry; the queue id the retry must reuse comes from an async thread's random counter",
    "REB-4": "AVG_BY_CIRCLE is not the default strategy and the driver contract has no variable to choose one; its "
             "arithmetic is checked by the spec's own checks",
    "REB-5": "CONSISTENT_HASH is not the default strategy and the driver contract has no variable to choose one; its "
             "ring is checked by the spec's own checks",
    "REB-6": "CONFIG is not the default strategy and needs a configured queue list; the driver contract has no "
             "variable for either",
    "REB-7": "MACHINE_ROOM is not the default strategy and needs configured rooms and '@'-named brokers; the driver "
             "contract has no variable for either",
    "REB-11": "a push consumer re-takes a queue not pulled for 120 s: it needs a pull held off for over two minutes, "
              "longer than any case",
    "REB-15": "the lock flag of a new ProcessQueue is the client's internal state; only its effect, locking before "
              "the first orderly pull, is on the wire (REB-12)",
    "REB-16": "whether an orderly batch starts depends on the ProcessQueue's lock flag and its 30 s age, internal to "
              "the client; a lapse needs lockAll to fail for over 30 s (the lock-before-pull order is REB-12)",
    "REB-18": "the 30 s client and 60 s broker lock lifetimes only show after a holder stops renewing for over "
              "30 s, longer than a case; the broker's side is a broker case (REB-17)",
    "REB-19": "the race needs a queue to leave and return to one orderly consumer with messages cached inside the "
              "20 s unlock delay; it cannot be produced on purpose from outside the client",
    "REB-22": "a consumer must unsubscribe a topic while running; the driver contract has no step for that",
    "OFF-1": "internal state of the client's ProcessQueue (msgTreeMap, queueOffsetMax); only its effect on commits "
             "is on the wire (OFF-17/18)",
    "OFF-2": "the ProcessQueue's consuming flag decides when a batch is dispatched inside the client; nothing of it "
             "is on the wire",
    "OFF-3": "removeMessage's result is internal to the ProcessQueue; only the offsets it yields reach the wire as "
             "commits (OFF-4, OFF-18)",
    "OFF-5": "the in-memory offset table's update rule (increaseOnly) is internal; only what persistAll and pull "
             "commits send is on the wire (OFF-11, OFF-17)",
    "RETRY-20": "consumeTimeout is 15 minutes (a listener blocking that long), longer than any case",
    "RETRY-23": "the orderly maxReconsumeTimes defaults to Integer.MAX_VALUE; dead-lettering needs it configured, "
                "and the driver contract has no variable for it",
}


@attrs.frozen
class Coverage:
    """Responsible clauses, the ones the cases judged (or, without a run, cite), and the rest with reasons."""

    side: str
    responsible: tuple[str, ...]
    covered: tuple[str, ...]
    uncovered: tuple[tuple[str, str], ...]

    def line(self) -> str:
        return f"{len(self.covered)} of {len(self.responsible)} {self.side}-side clauses covered"

    def to_json(self) -> dict[str, object]:
        return {
            "side": self.side,
            "responsible": len(self.responsible),
            "covered": list(self.covered),
            "uncovered": [{"clause": c, "reason": r} for c, r in self.uncovered],
            "summary": self.line(),
        }


def known_clauses() -> set[str]:
    return {cid for area in AREAS for cid in area_module(area).CLAUSES.ids}


def coverage(side: str, cases: Sequence[Case], reasons: Mapping[str, str] | None = None,
             results: Sequence[CaseResult] | None = None) -> Coverage:
    """The coverage of ``side`` ("broker" or "client") by ``cases``: a clause is covered when a case cites it.

    Given a run's ``results``, a clause is covered only when a case citing it ran to a verdict
    (:data:`~rocketspec.conformance.model.VERDICTS`: passed, failed, non-strict); a clause whose cases were all skipped
    or ended in an error is not, and its reason says so."""
    responsible = BROKER_SIDE if side == "broker" else CLIENT_SIDE
    reasons = UNREACHED_REASONS if reasons is None else reasons
    cited = {c for case in cases for c in case.clauses}
    judged = cited if results is None else {c for r in results if r.outcome in VERDICTS for c in r.case.clauses}
    unjudged: dict[str, list[CaseResult]] = {}
    for result in results or ():
        if result.outcome not in VERDICTS:
            for clause in result.case.clauses:
                unjudged.setdefault(clause, []).append(result)

    def reason(clause: str) -> str:
        if clause in unjudged:
            return without_verdict(unjudged[clause])
        return reasons.get(clause, "no case reaches it in the cases run")

    covered = tuple(c for c in responsible if c in judged)
    uncovered = tuple((c, reason(c)) for c in responsible if c not in judged)
    return Coverage(side, responsible, covered, uncovered)


def without_verdict(results: Sequence[CaseResult]) -> str:
    """Why a clause whose cases ran is not covered: they ended without a verdict (how many skipped, how many
    errors, and the first case's ID)."""
    counts = Counter(r.outcome.value for r in results)
    how = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))
    first = results[0].case.id + (f" and {len(results) - 1} more" if len(results) > 1 else "")
    return f"no case citing it reached a verdict in this run ({how}: {first})"
