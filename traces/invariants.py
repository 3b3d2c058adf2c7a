"""The protocol invariants a trace is checked against: names, clauses, and the exact rule each one decides.

Both checkers — the PySpark one (``traces.sparkcheck``) and the single-process one (``traces.pycheck``) — implement
exactly these rules, each written independently from this text; tests hold them to the same answers. The terms the
rules use are defined once here (``docs/traces.md`` explains them with examples):

* **user topic**: not a retry (``%RETRY%``) or dead-letter (``%DLQ%``) topic and not a system topic
  (:func:`is_user_topic`).
* **success**: a ``consume.result`` whose status is in :data:`SUCCESS_STATUSES`.
* **clustering group**: a consumer group none of whose ``rebalance.assign`` rows has strategy ``BROADCASTING``;
  invariants about a group's delivery, ownership and offsets consider clustering groups only.
* **the queue of a row**: ``(topic, broker, queue_id)``; for ``consume.*`` rows the topic is the topic of the queue
  pulled (``%RETRY%<group>`` for a retry copy), not the topic shown to the listener.
* **disturbance of group G in (a, b)**: a row with ``a < seq < b`` (same trace) that is one of :data:`CAUSES`:
  ``rebalance`` (a ``rebalance.assign`` of G whose queue set differs from the previous one of the same node and
  topic, or is that node's first), ``client`` (a ``client.lifecycle`` of G), ``offset_illegal`` (a client-side
  ``pull.response`` of G with status ``OFFSET_ILLEGAL``), ``reset`` (an ``offset.reset`` of G: an administrator
  set its offset), ``broker_restart``, ``fault`` (any ``fault.inject``),
  ``deletion`` (any ``store.delete``). Every rule is per trace (``trace_id``); ``seq`` orders rows within one.
* a ``pull.response`` is **broker-side** when ``node == broker``, else client-side.
* **shared queue of group G at seq x**: a queue ``(topic, broker, queue_id)`` is one when two or more nodes of G whose
  last ``client.lifecycle`` of G before x (if any) is not shutdown or crash have, as their latest
  ``rebalance.assign`` of G for that topic before x, a ``queues`` list containing ``'broker:queue_id'`` (consumers
  whose views disagree own it together: cause ``shared_queue``).
"""

from __future__ import annotations

import attrs

from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    DLQ_GROUP_TOPIC_PREFIX,
    NOT_ALLOWED_SEND_TOPICS,
    RETRY_GROUP_TOPIC_PREFIX,
    SCHEDULE_TOPIC,
    SYSTEM_TOPIC_PREFIX,
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
)


@attrs.frozen
class Invariant:
    name: str
    title: str
    clauses: tuple[str, ...]
    kinds: tuple[str, ...]  # the kinds it reads: "events scanned" counts rows of these kinds
    rule: str


SUCCESS_STATUSES = frozenset({"CONSUME_SUCCESS", "SUCCESS", "COMMIT"})
BROADCASTING = "BROADCASTING"
#: The cause of a duplicate or regression whose queue is a shared queue of the group at its seq.
SHARED_QUEUE = "shared_queue"
#: The causes allowed duplicates and regressions are counted under, in the order they are attributed: the
#: disturbance causes, between stored_twice (a duplicate's own) and shared_queue (a state at the row's seq).
CAUSES = ("stored_twice", "rebalance", "client", "offset_illegal", "reset", "broker_restart", "fault", "deletion",
          SHARED_QUEUE)
#: The disturbances of one group (the others disturb every group of the trace).
GROUP_CAUSES = ("rebalance", "client", "offset_illegal", "reset")
#: sendback ``via`` values that take the message out of the consumer (a copy was stored).
SENT_BACK_VIAS = frozenset({"broker", "client"})
#: Count names results use besides the CAUSES: traces whose part (b) no_lost_message could not judge (not SETTLED),
#: traces whose part (a) it could not judge (no store.put row at all: the broker's side is not recorded), due copies
#: exempt by a store.delete, msg_ids resolved more than once as TXN-11/25 allow.
SKIPPED = "part_b_skipped_unsettled"
PART_A_SKIPPED = "part_a_skipped_no_puts"
#: The counts that say a part of an invariant was not judged on some traces (``traces check --strict`` fails on them).
UNJUDGED = (SKIPPED, PART_A_SKIPPED)
EXEMPT_DELETED = "exempt_deleted"
TXN_ALLOWED = "TXN-11"
#: send_retry: sends whose mode is not in the trace ((c) and (d) not judged on them).
MODE_UNKNOWN = "mode_unknown"
#: Why a count says a part was not judged, as the summary's one line says it (invariant -> count -> reason).
NOT_JUDGED_WHY: dict[str, dict[str, str]] = {
    "send_retry": {MODE_UNKNOWN: "(c) budget and (d) broker avoidance not judged on {n:,} send(s): the send mode is "
                                 "not on the wire; pass --send-mode"},
}
#: fault.inject action of a duplicated request.
DUPLICATE_FAULT = "duplicate"
#: The most sample rows a result keeps per invariant.
MAX_SAMPLES = 20
#: Broker-side txn.end results that resolve a half message.
TXN_COMMITTED = "COMMITTED"
TXN_ROLLED_BACK = "ROLLED_BACK"
#: transactionCheckMax when a txn.check row does not say.
DEFAULT_CHECK_MAX = 15

_SYSTEM_TOPICS = frozenset(
    {SCHEDULE_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC, AUTO_CREATE_TOPIC_KEY}
    | NOT_ALLOWED_SEND_TOPICS
)


def not_judged_notes(name: str, counts: dict[str, int]) -> list[str]:
    """One line per part of invariant ``name`` its ``counts`` say was not judged, with the reason
    (``send_retry: (c) budget ... not judged on 3 send(s): the send mode is not on the wire; pass --send-mode``)."""
    reasons = NOT_JUDGED_WHY.get(name, {})
    return [f"{name}: {why.format(n=counts[count])}" for count, why in reasons.items() if counts.get(count)]


def is_user_topic(topic: str) -> bool:
    """A topic applications send to (not retry, DLQ or system)."""
    return not (
        topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX, "RMQ_SYS_", SYSTEM_TOPIC_PREFIX))
        or topic in _SYSTEM_TOPICS
    )


def tag_matches(expression: str | None, tags: str | None) -> bool:
    """Whether a TAG subscription expression selects a message with ``tags`` (``*`` or empty selects all)."""
    if expression is None or expression.strip() in ("", "*"):
        return True
    wanted = {t.strip() for t in expression.split("||") if t.strip()}
    return tags is not None and tags in wanted


INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "no_lost_message",
        "no acknowledged message lost",
        ("OFF-17", "OFF-19", "RETRY-7", "TXN-8"),
        ("send.result", "store.put", "pull.request", "rebalance.assign", "consume.result", "store.delete",
         "client.lifecycle", "txn.half", "trace.end"),
        "(a) In every trace that records the broker's puts (has a store.put row; others are counted as "
        "part_a_skipped_no_puts), settled or cut: a put comes before the answer that acknowledges it, so a message "
        "acknowledged to a producer (a send.result with status SEND_OK in a user topic, msg_id with no txn.half row) "
        "has a store.put with its msg_id in that topic (in a trace that is not SETTLED, a store.put in "
        "SCHEDULE_TOPIC_XXXX also does: a delayed message reaches its topic when its level is due); a violation row "
        "names the send.result. (b) Only in traces with a trace.end row of status SETTLED (others are counted as "
        "part_b_skipped_unsettled): each store.put of a user topic (a copy) is due to every clustering group G that "
        "has a pull.request for the copy's queue with offset <= the copy's offset (at any seq: the group's position "
        "was at or before the copy), whose subscription expression for the topic (that of G's latest rebalance.assign "
        "of the topic; '*' if none) selects the copy's tags (tag_matches), and that has a live consumer at the end (a "
        "node with a rebalance.assign or pull.request of G whose last client.lifecycle, if any, is not shutdown or "
        "crash). A due copy is delivered when G has a success for its msg_id (any topic) or a store.put of its msg_id "
        "in %DLQ%<G>, at any seq; it is exempt when a store.delete of its queue has offset > the copy's offset. A "
        "violation row names the group and the copy's store.put.",
    ),
    Invariant(
        "duplicates_allowed",
        "duplicates only where allowed",
        ("OFF-17", "REB-20", "TXN-11", "SEND-3", "RETRY-18"),
        ("consume.result", "store.put", "rebalance.assign", "client.lifecycle", "pull.response", "offset.reset",
         "broker.restart", "fault.inject", "store.delete"),
        "A duplicate is a consume.result of group G for msg_id m whose seq is after G's first success for m. Its "
        "cause, the first that applies: stored_twice (m has more than one store.put in user topics, or two "
        "store.put rows in %RETRY%<G> with the same reconsume_times), else a disturbance of G in (origin, seq of "
        "the duplicate), origin being the seq of m's first store.put in a user topic (0 if none), else shared_queue "
        "when the duplicate's queue (topic, broker, queue_id of the consume.result) is a shared queue of G at the "
        "duplicate's seq. Allowed duplicates are counted per cause; one without a cause is a violation.",
    ),
    Invariant(
        "offset_no_regression",
        "committed offsets move back only by an allowed correction",
        ("OFF-8", "OFF-12", "PULL-22", "REB-10", "REB-23"),
        ("offset.commit", "rebalance.assign", "client.lifecycle", "pull.response", "offset.reset", "broker.restart",
         "fault.inject", "store.delete"),
        "Per queue and group (group, topic, broker, queue_id), the broker's offset.commit rows in seq order (an "
        "offset.reset is not one: an administrator's write is not consumer progress, and is a disturbance). Let s "
        "be the seq of the latest earlier commit of the key whose offset is <= this one's (0 if none). The commit "
        "is a regression when some commit of the key lies in (s, seq) (all of those are higher: the value rose "
        "above this one and came back; re-committing the same value is not a regression). A regression is allowed "
        "when there is a disturbance of the group in (s', seq), s' being the seq of the latest earlier commit of "
        "the key whose offset is strictly lower than this one's (0 if none): something must have happened since the "
        "value was last below this one; or else when the key's queue is a shared queue of the group at the commit's "
        "seq (cause shared_queue). Allowed regressions are counted per cause (the first disturbance cause in CAUSES "
        "order, else shared_queue); one with neither is a violation.",
    ),
    Invariant(
        "offset_not_past_unconsumed",
        "committed offsets never pass an unconsumed message",
        ("OFF-3", "OFF-15", "OFF-17", "OFF-18"),
        ("offset.commit", "consume.deliver", "consume.result", "sendback", "store.delete", "pull.response",
         "offset.reset"),
        "Per key (group, topic, broker, queue_id) and queue offset x delivered to the group (consume.deliver): d is "
        "the seq of x's first delivery, c the seq of its first completion after d (a success for x in that queue, "
        "or a sendback of the group for x's msg_id with via broker or client), infinite if none; when x's first "
        "delivery is derived (derived set: received in a pull answer, its listener's result not on the wire), c is "
        "the first such sendback after d, and x is not judged without one. A broker "
        "offset.commit of the key with seq in (d, c) and offset > x is a violation, unless before it (smaller seq, "
        "> d) a store.delete of the queue had offset > x, a client-side pull.response of the group for the queue "
        "had status OFFSET_ILLEGAL, or an offset.reset of the key had offset > x (an administrator skipped it).",
    ),
    Invariant(
        "single_owner",
        "allocations follow the strategy; no queue has two owners once views agree",
        ("REB-1", "REB-3", "REB-4", "REB-5", "REB-20", "REB-21"),
        ("rebalance.assign", "client.lifecycle"),
        "Per clustering group and topic: (a) a rebalance.assign with all_queues whose strategy is AVG, "
        "AVG_BY_CIRCLE or CONSISTENT_HASH lists exactly the queues rebalance.allocate(strategy, node, all_queues, "
        "consumers) gives (compared as sets). (b) Replaying the rows in seq order, the live consumers are the nodes "
        "with a rebalance.assign for the topic whose last client.lifecycle, if any, is not shutdown or crash; views "
        "agree when every live consumer's latest rebalance.assign has the same consumers set, equal to the live "
        "set, and the same all_queues (when given). Whenever views agree after a row, the live consumers' latest "
        "queue sets are pairwise disjoint; a violation is reported at the row after which they overlap (once until "
        "views stop agreeing).",
    ),
    Invariant(
        "pull_oracle",
        "every pull response agrees with the pull-correction oracle",
        ("PULL-1", "PULL-2", "PULL-3", "PULL-4", "PULL-5", "PULL-10", "PULL-19", "PULL-25"),
        ("pull.response",),
        "Broker-side rows with min_offset and max_offset: pull_correction.bounds_decision(offset, min, max) (4.9.8 "
        "master): when it decides, status and next_offset equal its status and next begin offset; when it does not "
        "(the offset is readable), the status is one a scan gives (FOUND, NO_MATCHED_MESSAGE, MESSAGE_WAS_REMOVING, "
        "OFFSET_FOUND_NULL) and next_offset is within [min, max] (PULL-25). With a code, the code is "
        "pull_correction.response_code(status, requested_offset=offset) with or without suspension. Client-side "
        "rows with a code, not derived (a tap infers a client's status from the code, so its rows say nothing): "
        "status equals pull_correction.pull_status(code), or is ERROR when that gives None (the "
        "client raises MQBrokerException).",
    ),
    Invariant(
        "send_retry",
        "send attempts within the limit, retries avoid the failed broker, the budget holds",
        ("SEND-1", "SEND-2", "SEND-9", "SEND-13", "SEND-20", "SEND-21"),
        ("send.attempt", "send.result", "route.update"),
        "Per producer node and msg_id, send.attempt rows in seq order form sends (a new send starts at attempt 1). "
        "(a) Attempts are numbered 1, 2, ... without gaps and a send has at most "
        "send_retry.attempt_limit(mode, retry_times, retry_times_async) attempts (defaults 2 and 2; with mode null, "
        "the larger of the SYNC and ASYNC limits). (b) An "
        "attempt k > 1 follows a send.result of attempt k-1 that is not final (SEND-21). (c) In SYNC mode "
        "ts_ms(k) - ts_ms(1) satisfies send_retry.attempt_within_budget(elapsed, timeout_ms) (default 3000). (d) "
        "In SYNC mode (selector sends make one attempt there; ASYNC retries of selector sends keep their broker) "
        "with latency_fault false or null, attempt k > 1 goes to another broker than attempt k-1 whenever the "
        "node's latest route.update for the topic before attempt 1 of the send lists a writable queue (perm & 2) "
        "on another broker (SEND-13, SEND-20): a send selects from the publish info it found when it started "
        "(tryToFindTopicPublishInfo runs once per send), so a route arriving during the send does not count. "
        "(c) and (d) need the mode: a send whose attempt 1 has mode null (read off the wire without --send-mode) "
        "is judged by (a) and (b) only, and counted as mode_unknown.",
    ),
    Invariant(
        "transaction",
        "half messages resolved at most once; rolled back never delivered; checks within the max",
        ("TXN-3", "TXN-9", "TXN-11", "TXN-22", "TXN-23", "TXN-25"),
        ("txn.half", "txn.end", "txn.check", "store.put", "consume.deliver"),
        "Per msg_id with a txn.half row: (a) broker-side txn.end rows (result set) with result COMMITTED or "
        "ROLLED_BACK number at most one, unless producers sent more than one END_TRANSACTION deciding it "
        "(producer-side txn.end rows, result null, with state COMMIT_MESSAGE or ROLLBACK_MESSAGE: an answer to a "
        "check besides the first end) or the trace has a fault.inject with action duplicate (TXN-11/25; such a "
        "msg_id is counted as allowed under TXN-11); a violation row names the second resolution. (b) When a "
        "broker-side result is "
        "ROLLED_BACK and none is COMMITTED, no store.put of the msg_id in a user topic and no consume.deliver of it "
        "exist. (c) txn.check rows with action check have check_times <= max(check_max, 1) (default 15), and no "
        "check by a broker (node) follows that broker's discard of the same msg_id (a send retried to another "
        "broker leaves a half on each).",
    ),
    Invariant(
        "retry_delay_dlq",
        "retries follow the delay levels and reach the DLQ at the limit",
        ("RETRY-1", "RETRY-2", "RETRY-3", "RETRY-7", "RETRY-8", "RETRY-26", "RETRY-27"),
        ("sendback", "store.put", "consume.deliver"),
        "A sendback row describes the copy it makes: reconsume_times is the copy's count (the stored count + 1), "
        "delay_level the level the copy is delayed by (0: not delayed). Per group G, for broker-side sendback rows "
        "(via broker, broker = node: the broker that made the copy; a client's own report of the same send back "
        "is not read; rows without target or delay_level say nothing to judge): (a) with r = reconsume_times - 1 "
        "and max = max_reconsume_times (16 if null), when "
        "consume_retry.consumer_send_back(r, 0, max) dead-letters (r >= max) the target is %DLQ%<G>; otherwise the "
        "target is %RETRY%<G> with delay_level >= 1, or %DLQ%<G> with delay_level 0 (a request level < 0, "
        "RETRY-7). (b) The copies made of msg_id m to %RETRY%<G> with reconsume_times n (the broker-side "
        "sendbacks, and the via-client sendback rows with delay_level >= 1 of a client that stored its own copy "
        "after its request failed, RETRY-16), ordered by when they are due (ts_ms + the level's delay; ts_ms for "
        "a level < 1) and then seq, pair with the store.put rows of m in %RETRY%<G> with reconsume_times n whose "
        "seq is after the first of those copies, in seq order: the k-th copy with the k-th put (unpaired ones are "
        "not judged; a copy with more puts than copies made was stored twice and is not judged, counted as "
        "stored_twice). For a pair whose broker-side "
        "sendback has delay_level >= 1 the put has ts_ms >= the sendback's ts_ms + "
        "consume_retry.delay_millis(min(delay_level, len(table)), table), table being the trace's delay table: the "
        "manifest's delay_levels_ms entry for the trace_id (the brokers' messageDelayLevel, 1 to 18 levels in ms), "
        "else the default 18 levels (1s 5s 10s 30s 1m ... 2h); a violation row names the sendback. (c) No "
        "consume.deliver of G comes from %DLQ%<G> (RETRY-27).",
    ),
)

BY_NAME: dict[str, Invariant] = {i.name: i for i in INVARIANTS}

#: What one case an invariant judges is: the report's "cases judged" counts these, summed over the traces, the same
#: in both checkers. An invariant that judged no case says nothing about the trace ("nothing judged", not "ok").
CASES: dict[str, str] = {
    "no_lost_message": "an acknowledged send checked by (a) in a trace with store.put rows, and a copy due to a "
                       "group checked by (b)",
    "duplicates_allowed": "a consume.result of a clustering group",
    "offset_no_regression": "a broker offset.commit of a clustering group",
    "offset_not_past_unconsumed": "a delivered offset (group, queue, x) of a clustering group whose completion is "
                                  "known: every first delivery seen by the consumer, and a derived one sent back "
                                  "after it",
    "single_owner": "a rebalance.assign of a clustering group",
    "pull_oracle": "a pull.response the oracle decides: broker-side with min_offset and max_offset, client-side "
                   "with a code and not derived",
    "send_retry": "a send.attempt (by (a) and (b); by (c) and (d) too when its send's mode is known)",
    "transaction": "a msg_id with a txn.half row, and a txn.check (action check) of one",
    "retry_delay_dlq": "a broker-side sendback with target and delay_level ((a), (b)), and a consume.deliver ((c))",
}
