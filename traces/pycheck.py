"""The single-process, pure-Python checker of every trace invariant (engine ``python``).

Each invariant of :data:`rocketspec.traces.invariants.INVARIANTS` is implemented here from its rule text,
independently of the Spark checker (``traces.sparkcheck``); the two are compared on the same traces, so a difference
exposes a bug in one of them. Every rule is per trace, so traces are checked one at a time: one pass over a trace's
rows in ``seq`` order builds compact state (dicts keyed by tuples), most rules decide during that pass, the rest
(those that need the whole trace: settled or not, stored twice, resolved as what) decide at its end.

Why one module of about 950 lines, where the Spark checker is a package of one module per invariant: the rules share
the state this pass builds (a group's disturbances and owners, a queue's shared spans, the first successes, the puts
of each message), and one object keeps it so that every row is looked at once (the checker's speed in
docs/benchmarks.md rests on it). Split by rule, each row would go to several objects that each keep their own copy of
that state; the handlers are per event kind instead, each naming the invariants it feeds.

Readings of the rule text where it leaves a choice:

* "clustering groups only" (the definitions) applies to the delivery, ownership and offset invariants:
  no_lost_message, duplicates_allowed, offset_no_regression, offset_not_past_unconsumed, single_owner.
* A node's last ``client.lifecycle`` and a node's previous ``rebalance.assign`` are taken per group (and topic):
  a client id may host clients of several groups.
* A violation is a row: a row breaking a rule several ways counts once, its reason lists each way. The row is the
  one the rule is about: the offset.commit that passes unconsumed offsets (once, however many it passes), the
  sendback whose copy came too early, each store.put or consume.deliver of a rolled-back message.
* ``events_scanned`` counts every row of the invariant's kinds, in skipped (unsettled) traces too.
* pull_oracle's "With a code" applies to the broker-side rows it follows (those with min_offset and max_offset);
  a null next_offset is not within [min, max].
* send_retry reads mode, retry_times, timeout_ms and latency_fault from each attempt's own row; an attempt k > 1
  with no attempt before it in the send breaks the numbering.
* An oracle that raises on a row's values (its preconditions do not hold) makes the row a violation whose reason
  quotes the oracle.
* retry_delay_dlq (b) takes each trace's delay table from the manifest (``reading.delay_tables``; for in-memory
  rows, ``check_python``'s ``delay_tables`` argument), the default 18 levels for a trace it does not list.
"""

from __future__ import annotations

import gc
import os
import time
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from rocketspec.spec.consume_retry import Target
from rocketspec.spec.protocol import SCHEDULE_TOPIC
from rocketspec.traces import reading
from rocketspec.traces.invariants import (
    BROADCASTING,
    CAUSES,
    DEFAULT_CHECK_MAX,
    GROUP_CAUSES,
    INVARIANTS,
    MAX_SAMPLES,
    MODE_UNKNOWN,
    PART_A_SKIPPED,
    SENT_BACK_VIAS,
    SHARED_QUEUE,
    SKIPPED,
    SUCCESS_STATUSES,
    TXN_COMMITTED,
    TXN_ROLLED_BACK,
    is_user_topic,
    tag_matches,
)
from rocketspec.traces.oracles import (
    Refused,
    allocation,
    attempt_limit,
    bounds,
    client_pull_status,
    delay_ms,
    pull_codes,
    send_back_target,
    within_budget,
)
from rocketspec.traces.report import InvariantResult, Report, excused_reason, sample_rows
from rocketspec.traces.schema import SETTLED, SchemaError, check_delay_tables

ENGINE = "python"

#: The columns the checker reads (the reader converts only these to Python values).
COLUMNS: tuple[str, ...] = (
    "seq", "ts_ms", "node", "kind", "group", "topic", "broker", "queue_id", "offset", "msg_id", "code", "status",
    "attempt", "mode", "final", "retry_times", "retry_times_async", "timeout_ms", "latency_fault", "queues",
    "all_queues", "consumers", "strategy", "expression", "tags", "next_offset", "min_offset", "max_offset",
    "reconsume_times", "max_reconsume_times", "delay_level", "target", "via", "state", "result", "check_times",
    "check_max", "action", "derived",
)
#: The columns a sample row keeps (besides trace_id, seq and reason), when set.
_SAMPLE_COLUMNS = (
    "kind", "node", "group", "topic", "broker", "queue_id", "offset", "msg_id", "status", "code", "attempt", "mode",
    "final", "next_offset", "min_offset", "max_offset", "reconsume_times", "delay_level", "max_reconsume_times",
    "target", "via", "result", "check_times", "check_max", "action", "strategy", "ts_ms",
)

_NO_LOST, _DUPLICATES, _REGRESSION, _UNCONSUMED, _SINGLE_OWNER, _PULL, _SEND, _TXN, _RETRY = (
    i.name for i in INVARIANTS
)
# stored_twice is a duplicate's own cause and shared_queue a state at one seq: neither is a disturbance.
_DISTURBANCES = tuple(c for c in CAUSES if c not in ("stored_twice", SHARED_QUEUE))
_GROUP_CAUSES = GROUP_CAUSES
_GONE = frozenset({"shutdown", "crash"})
_CHECKED_STRATEGIES = frozenset({"AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"})
_DECIDING_STATES = frozenset({"COMMIT_MESSAGE", "ROLLBACK_MESSAGE"})
_SCAN_STATUSES = frozenset({"FOUND", "NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING", "OFFSET_FOUND_NULL"})
_RETRY_PREFIX = "%RETRY%"
_DLQ_PREFIX = "%DLQ%"
_DEFAULT_MAX_RECONSUME = 16
_DEFAULT_RETRY_TIMES = 2
_DEFAULT_TIMEOUT_MS = 3000

@lru_cache(maxsize=4096)
def _user_topic(topic: str) -> bool:
    return is_user_topic(topic)


@lru_cache(maxsize=4096)
def _selects(expression: str | None, tags: str | None) -> bool:
    return tag_matches(expression, tags)


def _writable_brokers(topic: str, queues: Iterable[str]) -> frozenset[str]:
    brokers = set()
    for q in queues:
        parts = q.rsplit(":", 2)
        if len(parts) != 3 or not all(part.lstrip("-").isdigit() for part in parts[1:]):
            raise SchemaError(f"route.update of {topic!r}: queue {q!r} is not 'broker:queueId:perm'")
        if int(parts[2]) & 2:  # PermName.PERM_WRITE
            brokers.add(parts[0])
    return frozenset(brokers)


class _Tally:
    """One invariant's totals over all traces: cases judged, violations, kept samples, counts."""

    __slots__ = ("counts", "excused", "judged", "samples", "violations")

    def __init__(self) -> None:
        self.judged = 0
        self.violations = 0
        self.samples: list[dict[str, Any]] = []
        self.excused: list[dict[str, Any]] = []
        self.counts: Counter[str] = Counter()

    def add(self, sample: dict[str, Any]) -> None:
        self.violations += 1
        self.samples.append(sample)
        if len(self.samples) > 4 * MAX_SAMPLES:
            self.samples = list(sample_rows(self.samples))

    def excuse(self, cause: str, sample: dict[str, Any]) -> None:
        """A row the rule allows by ``cause``: counted per cause, the first ones kept."""
        self.counts[cause] += 1
        self.excused.append(sample)
        if len(self.excused) > 4 * MAX_SAMPLES:
            self.excused = list(sample_rows(self.excused))


def _compact(trace_id: str, seq: int, reason: str, **columns: Any) -> dict[str, Any]:
    """A sample row from kept values (the checker keeps tuples, not rows, for what it decides at the end)."""
    sample = {"trace_id": trace_id, "seq": seq, "reason": reason}
    sample.update((k, v) for k, v in columns.items() if v is not None)
    return sample


def _sample(trace_id: str, row: Mapping[str, Any], reason: str, **extra: Any) -> dict[str, Any]:
    sample = {"trace_id": trace_id, "seq": row["seq"], "reason": reason}
    for name in _SAMPLE_COLUMNS:
        value = row.get(name)
        if value is not None:
            sample[name] = value
    sample.update(extra)
    return sample


class _Trace:
    """The state of one trace while its rows go by in seq order, and the decisions at its end."""

    def __init__(self, trace_id: str, tallies: dict[str, _Tally], delays: tuple[int, ...]) -> None:
        self.trace_id = trace_id
        self.t = tallies
        self.delays = delays  # the trace's delay table (retry_delay_dlq (b))
        self.kinds: Counter[str] = Counter()
        self.settled = False
        # Cases judged (invariants.CASES): per invariant, and per (invariant, group) for the invariants about
        # clustering groups only (which groups broadcast is known at the end).
        self.judged: Counter[str] = Counter()
        self.group_cases: Counter[tuple[str, str]] = Counter()
        # Disturbances: (group, cause) -> seqs (rebalance, client, offset_illegal, reset); cause -> seqs (others).
        self.group_dist: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.any_dist: dict[str, list[int]] = {c: [] for c in _DISTURBANCES if c not in _GROUP_CAUSES}
        self.broadcasting: set[str] = set()
        # Consumers: (group, node, topic) -> previous queue set; (group, node) -> last lifecycle action.
        self.prev_assign: dict[tuple[str, str, str], frozenset[str]] = {}
        self.last_life: dict[tuple[str, str], str] = {}
        # no_lost_message: group -> nodes with a rebalance.assign or pull.request; (group, topic) -> the expression of
        # the latest rebalance.assign; queue -> group -> lowest offset pulled; the user-topic copies; acked sends.
        self.consumer_nodes: dict[str, set[str]] = defaultdict(set)
        self.latest_expression: dict[tuple[str, str], str | None] = {}
        self.lowest_pull: dict[tuple[str, str, int], dict[str, int]] = defaultdict(dict)
        self.copies: list[tuple[int, str, str, str, int, int, str | None]] = []
        self.acked: list[tuple[int, str, str, str, str, int, int | None, int]] = []
        self.puts_recorded = False  # any store.put row: the trace records the broker's side
        self.parked: set[str] = set()  # msg_ids put in SCHEDULE_TOPIC_XXXX (delayed: their topic's put comes later)
        self.put_in_topic: set[tuple[str, str]] = set()
        self.dlq: set[tuple[str, str]] = set()
        self.deleted: dict[tuple[str, str, int], int] = {}
        # duplicates_allowed: (group, msg) -> first success seq; msg -> user-topic puts, the first one's seq, ...
        self.first_success: dict[tuple[str, str], int] = {}
        self.duplicates: list[tuple[dict[str, Any], bool]] = []  # (row, its queue shared at its seq)
        self.user_puts: dict[str, list[Any]] = {}  # msg -> [count, seq, kind, topic, broker, queue_id, offset]
        self.retry_puts: set[tuple[str, str, int | None]] = set()
        self.stored_twice: set[tuple[str, str]] = set()
        # offset_no_regression: key -> (offsets, seqs) of the earlier commits no later commit is <= to (increasing).
        self.commits: dict[tuple[str, str, str, int], tuple[list[int], list[int]]] = {}
        self.regressions: list[tuple[str, str | None, dict[str, Any]]] = []  # (group, cause, sample)
        # offset_not_past_unconsumed: key -> offsets delivered; key -> pending offset -> (d, msg).
        self.delivered: dict[tuple[str, str, str, int], set[int]] = defaultdict(set)
        self.pending: dict[tuple[str, str, str, int], dict[int, tuple[int, str]]] = defaultdict(dict)
        self.keys_of_group: dict[str, set[tuple[str, str, str, int]]] = defaultdict(set)
        self.keys_of_queue: dict[tuple[str, str, int], set[tuple[str, str, str, int]]] = defaultdict(set)
        self.past_unconsumed: list[tuple[str, dict[str, Any]]] = []
        self.unconsumed_reported: set[int] = set()  # seqs of the commits reported (a commit counts once)
        # Deliveries derived from the wire (the listener's result unknown: judged only when sent back): key ->
        # offset -> [d, msg, the commits passing it as (seq, sample), exempt from here on]; (group, msg, d) of each;
        # (group, msg) -> the seq of its latest sendback.
        self.derived_pending: dict[tuple[str, str, str, int], dict[int, list[Any]]] = defaultdict(dict)
        self.derived_first: list[tuple[str, str, int]] = []
        self.last_sendback: dict[tuple[str, str], int] = {}
        # single_owner: (group, topic) -> node -> (consumers, all_queues, queues); reported flags.
        self.views: dict[tuple[str, str], dict[str, tuple[frozenset[str], frozenset[str] | None, frozenset[str]]]] = (
            defaultdict(dict))
        self.topics_of_group: dict[str, set[str]] = defaultdict(set)
        # (group, topic) -> the nodes with a rebalance.assign whose last client.lifecycle is not shutdown or crash.
        self.live: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.overlap_reported: set[tuple[str, str]] = set()
        self.owner_problems: list[tuple[str, dict[str, Any]]] = []
        # send_retry: (node, msg) -> [last attempt, ts of attempt 1, last broker, non-final result of last attempt].
        self.sends: dict[tuple[str, str], list[Any]] = {}
        self.routes: dict[tuple[str, str], frozenset[str]] = {}
        # transaction: msgs with a half; broker-side end counts; resolutions; check problems; deliveries.
        self.halves: set[str] = set()
        self.checks: Counter[str] = Counter()  # txn.check rows with action check per msg_id
        self.producer_ends: Counter[str] = Counter()  # producer-side txn.end rows deciding a msg_id
        self.duplicating = False  # a fault.inject with action duplicate
        self.resolutions: dict[str, list[tuple[str, int]]] = defaultdict(list)
        self.discarded: set[tuple[str, str]] = set()  # (broker node, msg) of each discard
        self.check_problems: list[tuple[str, dict[str, Any]]] = []
        self.delivers: dict[str, list[Any]] = {}  # as user_puts, and the group
        # retry_delay_dlq: rows reported; (group, msg, reconsume_times of the copy) -> (the copies made to
        # %RETRY%<group> as (when due, seq, due to judge or None, the broker's sendback row or None for a client's own
        # copy), the puts of such copies after the first of them in seq order as (ts_ms, seq)): paired at the end of
        # the trace (rule (b)).
        self.retry_reported: set[int] = set()
        self.retry_pairs: dict[tuple[str, str, int], tuple[list[tuple[int, int, int | None, dict[str, Any] | None]],
                                                           list[tuple[int, int]]]] = {}

    # The pass --------------------------------------------------------------------------------------------------

    def run(self, rows: Iterable[dict[str, Any]]) -> int:
        # A local table, not an attribute: bound methods in an attribute would make each trace a reference cycle,
        # which check_python (the cycle collector off) would keep alive until the end of the whole run.
        handlers: dict[str, Callable[[dict[str, Any]], None]] = {
            "send.attempt": self.send_attempt, "send.result": self.send_result, "route.update": self.route_update,
            "rebalance.assign": self.rebalance_assign, "pull.request": self.pull_request,
            "pull.response": self.pull_response,
            "consume.deliver": self.consume_deliver, "consume.result": self.consume_result,
            "offset.commit": self.offset_commit, "offset.reset": self.offset_reset, "store.put": self.store_put,
            "store.delete": self.store_delete,
            "sendback": self.sendback, "txn.half": self.txn_half, "txn.end": self.txn_end,
            "txn.check": self.txn_check, "broker.restart": self.broker_restart, "fault.inject": self.fault_inject,
            "client.lifecycle": self.client_lifecycle, "trace.end": self.trace_end,
        }
        kinds = self.kinds
        for row in rows:
            kind = row["kind"]
            kinds[kind] += 1
            handler = handlers.get(kind)
            if handler is not None:
                handler(row)
        self.finish()
        return sum(kinds.values())

    def violation(self, name: str, row: Mapping[str, Any], reason: str, **extra: Any) -> None:
        self.t[name].add(_sample(self.trace_id, row, reason, **extra))

    def disturbance(self, group: str, after: int, before: int) -> str | None:
        """The first cause (CAUSES order) with a disturbance of ``group`` strictly between the two seqs."""
        for cause in _DISTURBANCES:
            seqs = self.group_dist.get((group, cause)) if cause in _GROUP_CAUSES else self.any_dist[cause]
            if seqs:
                i = bisect_right(seqs, after)
                if i < len(seqs) and seqs[i] < before:
                    return cause
        return None

    def shared_queue(self, group: str, topic: str, broker: str, queue_id: int) -> bool:
        """Whether the queue is a shared queue of ``group`` now (at the seq of the row being handled): two or more
        live consumers of the group list it in their latest rebalance.assign of the topic."""
        key = (group, topic)
        live = self.live.get(key)
        if not live or len(live) < 2:
            return False
        queue, view = f"{broker}:{queue_id}", self.views[key]
        return sum(queue in view[n][2] for n in live) >= 2

    # Producers ---------------------------------------------------------------------------------------------------

    def send_attempt(self, row: dict[str, Any]) -> None:
        """send_retry (a)-(d): numbering, limit, follows a non-final result, SYNC budget, broker avoidance."""
        key = (row["node"], row["msg_id"])
        attempt = row["attempt"]
        mode = row.get("mode")
        self.judged[_SEND] += 1
        reasons: list[str] = []
        retry_times = row.get("retry_times")
        retry_times_async = row.get("retry_times_async")
        settings = (_DEFAULT_RETRY_TIMES if retry_times is None else retry_times,
                    _DEFAULT_RETRY_TIMES if retry_times_async is None else retry_times_async)
        if mode is None:
            # Not on the wire (SYNC and ASYNC look alike): the larger limit; (c) and (d) are not judged.
            limits = [attempt_limit(m, *settings) for m in ("SYNC", "ASYNC")]
            refused = [x for x in limits if isinstance(x, Refused)]
            limit: int | Refused | None = refused[0] if refused else max(x for x in limits if isinstance(x, int))
            if attempt == 1:
                self.t[_SEND].counts[MODE_UNKNOWN] += 1
        else:
            limit = attempt_limit(mode, *settings)
        if limit is None:
            reasons.append(f"mode {mode!r} is not a CommunicationMode")
        elif isinstance(limit, Refused):
            reasons.append(limit)
        elif attempt > limit:
            reasons.append(f"attempt {attempt} > attempt_limit {limit} (SEND-1)")
        state = self.sends.get(key)
        # The publish info a send selects from is fixed when it starts (tryToFindTopicPublishInfo runs once per
        # send), so retries are judged against the route as of attempt 1, not a route that arrived meanwhile.
        route = self.routes.get((row["node"], row["topic"]), frozenset())
        if attempt == 1:
            self.sends[key] = [1, row["ts_ms"], row["broker"], False, route]
        else:
            follows = state is not None and state[0] == attempt - 1
            if not follows:
                before = "no attempt" if state is None else f"attempt {state[0]}"
                reasons.append(f"attempt {attempt} after {before}: attempts are numbered 1, 2, ... without gaps")
            elif state is not None and not state[3]:
                reasons.append(f"attempt {attempt} does not follow a non-final send.result of attempt {attempt - 1} "
                               f"(SEND-21)")
            if state is not None:
                if mode == "SYNC":
                    timeout = row.get("timeout_ms")
                    timeout = _DEFAULT_TIMEOUT_MS if timeout is None else timeout
                    elapsed = row["ts_ms"] - state[1]
                    within = within_budget(elapsed, timeout)
                    if isinstance(within, Refused):
                        reasons.append(within)
                    elif not within:
                        reasons.append(f"attempt {attempt} starts {elapsed} ms into the send, budget {timeout} ms "
                                       f"(SEND-2)")
                if mode == "SYNC" and follows and not row.get("latency_fault") and row["broker"] == state[2]:
                    writable = state[4]
                    if writable - {state[2]}:
                        reasons.append(f"attempt {attempt} retries broker {state[2]} although the route has a "
                                       f"writable queue on {', '.join(sorted(writable - {state[2]}))} (SEND-13)")
                state[0] = attempt
                state[2] = row["broker"]
                state[3] = False
            else:
                # No attempt 1 to hang on: the numbering is broken already; later attempts follow this one.
                self.sends[key] = [attempt, row["ts_ms"], row["broker"], False, route]
        if reasons:
            self.violation(_SEND, row, "; ".join(reasons))

    def send_result(self, row: dict[str, Any]) -> None:
        state = self.sends.get((row["node"], row["msg_id"]))
        if state is not None and state[0] == row["attempt"] and not row["final"]:
            state[3] = True
        if row["status"] == "SEND_OK" and _user_topic(row["topic"]):
            self.acked.append((row["seq"], row["node"], row["msg_id"], row["topic"], row["broker"], row["queue_id"],
                               row.get("offset"), row["attempt"]))

    def route_update(self, row: dict[str, Any]) -> None:
        try:
            self.routes[(row["node"], row["topic"])] = _writable_brokers(row["topic"], row["queues"])
        except SchemaError as bad:
            raise SchemaError(f"trace {self.trace_id!r} seq {row['seq']}: {bad}") from None

    # Consumers ---------------------------------------------------------------------------------------------------

    def rebalance_assign(self, row: dict[str, Any]) -> None:
        group, node, topic, seq = row["group"], row["node"], row["topic"], row["seq"]
        strategy = row["strategy"]
        if strategy == BROADCASTING:
            self.broadcasting.add(group)
        self.group_cases[(_SINGLE_OWNER, group)] += 1
        queues = frozenset(row["queues"])
        expression = row.get("expression")
        key = (group, node, topic)
        previous = self.prev_assign.get(key)
        if previous != queues:
            self.group_dist[(group, "rebalance")].append(seq)
        self.prev_assign[key] = queues
        self.latest_expression[(group, topic)] = expression
        self.consumer_nodes[group].add(node)
        # single_owner (a): the allocation follows the strategy.
        all_queues = row.get("all_queues")
        consumers = row["consumers"]
        if all_queues is not None and strategy in _CHECKED_STRATEGIES:
            try:
                expected = allocation(strategy, node, topic, tuple(sorted(all_queues)), tuple(sorted(consumers)))
            except SchemaError as bad:
                raise SchemaError(f"trace {self.trace_id!r} seq {seq}: rebalance.assign all_queues: {bad}") from None
            if isinstance(expected, Refused):
                self.owner_problems.append((group, _sample(self.trace_id, row, expected)))
            elif expected != queues:
                self.owner_problems.append((group, _sample(
                    self.trace_id, row, f"{strategy} gives {node} {sorted(expected)}, it took {sorted(queues)} "
                    f"(REB-3/4/5)")))
        # single_owner (b): replay the views of (group, topic).
        self.views[(group, topic)][node] = (
            frozenset(consumers), None if all_queues is None else frozenset(all_queues), queues)
        if self.last_life.get((group, node)) not in _GONE:
            self.live[(group, topic)].add(node)
        self.topics_of_group[group].add(topic)
        self.check_owners(group, topic, row)

    def check_owners(self, group: str, topic: str, row: Mapping[str, Any]) -> None:
        """single_owner (b): once the live consumers' views agree, their queue sets are pairwise disjoint."""
        key = (group, topic)
        view = self.views[key]
        live = self.live[key]
        live_set = frozenset(live)
        agree = all(view[n][0] == live_set for n in live)
        if agree:
            given = {view[n][1] for n in live if view[n][1] is not None}
            agree = len(given) <= 1
        if not agree:
            self.overlap_reported.discard(key)
            return
        total = sum(len(view[n][2]) for n in live)
        union: set[str] = set().union(*(view[n][2] for n in live)) if live else set()
        if total != len(union) and key not in self.overlap_reported:
            self.overlap_reported.add(key)
            owners: dict[str, list[str]] = defaultdict(list)
            for n in sorted(live):
                for q in view[n][2]:
                    owners[q].append(n)
            shared = sorted(q for q, ns in owners.items() if len(ns) > 1)
            self.owner_problems.append((group, _sample(
                self.trace_id, row, f"views agree and {', '.join(f'{q} is owned by {owners[q]}' for q in shared[:3])} "
                f"(REB-20)", group=group, topic=topic)))

    def client_lifecycle(self, row: dict[str, Any]) -> None:
        group, node, action = row["group"], row["node"], row["action"]
        self.group_dist[(group, "client")].append(row["seq"])
        self.last_life[(group, node)] = action
        for topic in sorted(self.topics_of_group.get(group, ())):
            if node in self.views[(group, topic)]:
                if action in _GONE:
                    self.live[(group, topic)].discard(node)
                else:
                    self.live[(group, topic)].add(node)
            self.check_owners(group, topic, row)

    def pull_request(self, row: dict[str, Any]) -> None:
        """no_lost_message (b): the lowest offset a group pulled a queue from; the node consumes for the group."""
        group = row["group"]
        pulled = self.lowest_pull[(row["topic"], row["broker"], row["queue_id"])]
        lowest = pulled.get(group)
        if lowest is None or row["offset"] < lowest:
            pulled[group] = row["offset"]
        self.consumer_nodes[group].add(row["node"])

    def pull_response(self, row: dict[str, Any]) -> None:
        status, code = row["status"], row.get("code")
        if row["node"] != row["broker"]:
            if status == "OFFSET_ILLEGAL":
                group = row["group"]
                self.group_dist[(group, "offset_illegal")].append(row["seq"])
                # offset_not_past_unconsumed: commits after this are exempt for offsets delivered before it.
                key = (group, row["topic"], row["broker"], row["queue_id"])
                self.pending.pop(key, None)
                self.stop_derived(key, None)
            if code is not None and row.get("derived") is None:
                self.judged[_PULL] += 1
                expected = client_pull_status(code)
                if status != (expected or "ERROR"):
                    self.violation(_PULL, row, f"client status {status} for code {code}, pull_status gives "
                                               f"{expected or 'None (ERROR)'} (PULL-19)")
            return
        low, high = row.get("min_offset"), row.get("max_offset")
        if low is None or high is None:
            return
        self.judged[_PULL] += 1
        offset, next_offset = row["offset"], row.get("next_offset")
        reasons: list[str] = []  # a Refused is the oracle's refusal as text
        decided = bounds(offset, low, high)
        if isinstance(decided, Refused):
            reasons.append(decided)
        elif decided is not None:
            if (status, next_offset) != decided:
                reasons.append(f"bounds_decision({offset}, {low}, {high}) gives {decided[0]} next {decided[1]}, "
                               f"the row has {status} next {next_offset}")
        else:
            if status not in _SCAN_STATUSES:
                reasons.append(f"offset {offset} is readable in [{low}, {high}), a scan cannot give {status}")
            if next_offset is None or not low <= next_offset <= high:
                reasons.append(f"next_offset {next_offset} outside [{low}, {high}] (PULL-25)")
        if code is not None:
            codes = pull_codes(status, offset)
            if codes is None:
                reasons.append(f"{status} is not a GetMessageStatus: no response code follows from it")
            elif isinstance(codes, Refused):
                reasons.append(codes)
            elif code not in codes:
                reasons.append(f"code {code} for {status}, response_code gives {sorted(codes)} (PULL-10)")
        if reasons:
            self.violation(_PULL, row, "; ".join(reasons))

    def consume_deliver(self, row: dict[str, Any]) -> None:
        group, topic, msg, offset = row["group"], row["topic"], row["msg_id"], row["offset"]
        key = (group, topic, row["broker"], row["queue_id"])
        seen = self.delivered[key]
        self.judged[_RETRY] += 1  # (c)
        if offset not in seen:
            seen.add(offset)
            if row.get("derived") is None:
                self.pending[key][offset] = (row["seq"], msg)
                self.group_cases[(_UNCONSUMED, group)] += 1
            else:
                # Received in a pull answer: whether the listener consumed it is not on the wire, so only a
                # sendback completes it (offset_not_past_unconsumed judges it then).
                self.derived_pending[key][offset] = [row["seq"], msg, [], False]
                self.derived_first.append((group, msg, row["seq"]))
            self.keys_of_queue[key[1:]].add(key)
            self.keys_of_group[group].add(key)
        first = self.delivers.get(msg)
        if first is None:
            self.delivers[msg] = [1, row["seq"], "consume.deliver", topic, row["broker"], row["queue_id"], offset,
                                  group]
        else:
            first[0] += 1
        if topic == _DLQ_PREFIX + group:
            self.retry_violation(row, f"delivered from {topic} (RETRY-27)")

    def consume_result(self, row: dict[str, Any]) -> None:
        group, msg = row["group"], row["msg_id"]
        key = (group, msg)
        success = row["status"] in SUCCESS_STATUSES
        self.group_cases[(_DUPLICATES, group)] += 1
        if key in self.first_success:
            self.duplicates.append((row, self.shared_queue(group, row["topic"], row["broker"], row["queue_id"])))
        elif success:
            self.first_success[key] = row["seq"]
        if success:
            pending = self.pending.get((group, row["topic"], row["broker"], row["queue_id"]))
            if pending:
                pending.pop(row["offset"], None)

    def sendback(self, row: dict[str, Any]) -> None:
        group, msg, via = row["group"], row["msg_id"], row["via"]
        if via in SENT_BACK_VIAS:
            self.last_sendback[(group, msg)] = row["seq"]
            # Sendbacks are rare and few offsets are pending at a time: scanning them beats indexing every delivery.
            for key in self.keys_of_group.get(group, ()):
                pending = self.pending.get(key)
                if pending:
                    for offset in [x for x, (_, m) in pending.items() if m == msg]:
                        del pending[offset]
                derived = self.derived_pending.get(key)
                if derived:
                    for offset in [x for x, entry in derived.items() if entry[1] == msg]:
                        for commit_seq, sample in derived.pop(offset)[2]:
                            if commit_seq not in self.unconsumed_reported:
                                self.unconsumed_reported.add(commit_seq)
                                self.past_unconsumed.append((group, sample))
        copy_times, delay_level, target = row["reconsume_times"], row.get("delay_level"), row.get("target")
        retry, dead = _RETRY_PREFIX + group, _DLQ_PREFIX + group
        if via == "client":
            # A client whose sendback request failed stored its own copy (RETRY-16): not judged (its row is stamped
            # after its send), but that copy goes through the same retry topic, so it takes its place among the
            # copies that (b) pairs, ordered by when it is due.
            if target == retry and copy_times is not None and delay_level is not None and delay_level >= 1:
                delay = delay_ms(min(delay_level, len(self.delays)), self.delays)
                due = row["ts_ms"] + (0 if isinstance(delay, Refused) else delay)
                self.retry_copy_made((group, msg, copy_times), due, row["seq"], None, None)
            return
        if via != "broker" or row.get("broker") != row["node"]:
            return  # retry_delay_dlq reads the row of the broker that made the copy, not a client's own report
        if target is None or delay_level is None:
            return  # a row that does not say where the copy went, or with what level: nothing to judge
        self.judged[_RETRY] += 1  # (a)
        # retry_delay_dlq (a): the row describes the copy; r is the count of the message sent back.
        max_times = row.get("max_reconsume_times")
        max_times = _DEFAULT_MAX_RECONSUME if max_times is None else max_times
        where = send_back_target(copy_times - 1, 0, max_times)
        if isinstance(where, Refused):
            self.retry_violation(row, where)
        elif where == Target.DLQ.name:
            if target != dead:
                self.retry_violation(row, f"sent to {target}, consumer_send_back({copy_times - 1}, 0, {max_times}) "
                                          f"dead-letters: {dead} (RETRY-7)")
        elif not ((target == retry and delay_level >= 1) or (target == dead and delay_level == 0)):
            self.retry_violation(row, f"sent to {target} with delay level {delay_level}; consumer_send_back("
                                      f"{copy_times - 1}, 0, {max_times}) retries: {retry} with a level >= 1, or "
                                      f"{dead} undelayed for a level < 0 (RETRY-7, RETRY-8)")
        # (b): the copy is stored no earlier than the delay level says; a level < 1 (an (a) finding if any) is not
        # judged: delay_millis is defined from level 1.
        if target == retry:
            due = None
            if delay_level >= 1:
                delay = delay_ms(min(delay_level, len(self.delays)), self.delays)
                if isinstance(delay, Refused):
                    self.retry_violation(row, delay)
                else:
                    due = row["ts_ms"] + delay
            self.retry_copy_made((group, msg, copy_times), row["ts_ms"] if due is None else due, row["seq"], due, row)

    def retry_copy_made(self, copy: tuple[str, str, int], order: int, seq: int, due: int | None,
                        row: dict[str, Any] | None) -> None:
        """A copy of ``copy`` (group, msg, count) was made, due at ``order``; ``row``: the broker's sendback that
        (b) judges with ``due`` (None: a client's own copy, or a level not judged)."""
        pairs = self.retry_pairs.get(copy)
        if pairs is None:
            pairs = self.retry_pairs[copy] = ([], [])
        pairs[0].append((order, seq, due, row))

    def finish_retry_pairs(self) -> None:
        """retry_delay_dlq (b): per copy, the copies made in the order they are due pair with the puts of the copy
        in seq order (the schedule service moves them when due); a broker's sendback with a level is judged on its
        put. A copy with more puts than copies made is not judged (counted as stored_twice)."""
        for made, puts in self.retry_pairs.values():
            if len(puts) > len(made):
                # More puts than copies made: one was stored twice (the schedule service delivers again when a put
                # it made answers other than PUT_OK), so which put is whose is not known: not judged, counted.
                self.t[_RETRY].counts["stored_twice"] += 1
                continue
            made.sort(key=lambda entry: (entry[0], entry[1]))
            for (_, _, due, row), (put_ts, put_seq) in zip(made, puts, strict=False):
                if row is not None and due is not None and put_ts < due:
                    self.retry_violation(row, f"its retry copy is stored at ts {put_ts} (seq {put_seq}), before ts "
                                              f"{due} the delay level gives (RETRY-1/2)", copy_seq=put_seq)

    def retry_violation(self, row: Mapping[str, Any], reason: str, **extra: Any) -> None:
        """A retry_delay_dlq violation, once per row (the first reason is kept)."""
        if row["seq"] not in self.retry_reported:
            self.retry_reported.add(row["seq"])
            self.violation(_RETRY, row, reason, **extra)

    def offset_commit(self, row: dict[str, Any]) -> None:
        group, offset, seq = row["group"], row["offset"], row["seq"]
        key = (group, row["topic"], row["broker"], row["queue_id"])
        self.group_cases[(_REGRESSION, group)] += 1
        # offset_no_regression: the stack keeps, of the earlier commits, those no later commit is <= to.
        stack = self.commits.get(key)
        if stack is None:
            stack = self.commits[key] = ([], [])
        offsets, seqs = stack
        # The previous commit is the top of the stack: when it is higher, the latest commit <= this one (s) lies
        # before it, so a commit lies in (s, seq): a regression.
        if offsets and offsets[-1] > offset:
            # s' (the latest earlier commit strictly lower) is on the stack too: every later commit is >= this one.
            i = bisect_left(offsets, offset)
            since = seqs[i - 1] if i else 0
            cause = self.disturbance(group, since, seq)
            if cause is None and self.shared_queue(group, key[1], key[2], key[3]):
                cause = SHARED_QUEUE
            self.regressions.append((group, cause, _sample(
                self.trace_id, row, excused_reason(cause), cause=cause) if cause else _sample(
                self.trace_id, row, f"offset {offset} after {offsets[-1]} with no disturbance since seq {since}, "
                f"when it was last below it, and its queue not shared (OFF-8)", since=since)))
        while offsets and offsets[-1] >= offset:
            offsets.pop()
            seqs.pop()
        offsets.append(offset)
        seqs.append(seq)
        # offset_not_past_unconsumed: no pending (delivered, not completed, not exempt) offset below the commit.
        pending = self.pending.get(key)
        if pending:
            passed = [x for x in pending if x < offset]
            if passed:
                x = min(passed)
                self.unconsumed_reported.add(seq)
                self.past_unconsumed.append((group, _sample(
                    self.trace_id, row, f"commit {offset} passes offset {x} delivered at seq {pending[x][0]} and not "
                    f"consumed" + (f" (and {len(passed) - 1} more)" if len(passed) > 1 else "") + " (OFF-3)",
                    unconsumed=x, unconsumed_msg_id=pending[x][1])))
        derived = self.derived_pending.get(key)
        if derived:
            passed = [x for x, entry in derived.items() if x < offset and not entry[3]]
            if passed:
                x = min(passed)
                sample = _sample(self.trace_id, row, f"commit {offset} passes offset {x} received at seq "
                                 f"{derived[x][0]} and sent back after it (OFF-3)", unconsumed=x,
                                 unconsumed_msg_id=derived[x][1])
                for x in passed:
                    derived[x][2].append((seq, sample))

    def offset_reset(self, row: dict[str, Any]) -> None:
        """An administrator set the group's offset: a disturbance of the group (reset), and later commits of the key
        are exempt for offsets below it delivered before it (offset_not_past_unconsumed)."""
        group, offset = row["group"], row["offset"]
        self.group_dist[(group, "reset")].append(row["seq"])
        key = (group, row["topic"], row["broker"], row["queue_id"])
        pending = self.pending.get(key)
        if pending:
            for x in [x for x in pending if x < offset]:
                del pending[x]
        self.stop_derived(key, offset)

    def stop_derived(self, key: tuple[str, str, str, int], below: int | None) -> None:
        """Later commits are exempt for the derived deliveries of ``key`` (below ``below``, or all): those no commit
        passed yet are done; those one passed still await their sendback."""
        derived = self.derived_pending.get(key)
        if derived:
            for x in [x for x in derived if below is None or x < below]:
                if derived[x][2]:
                    derived[x][3] = True
                else:
                    del derived[x]

    # Brokers -----------------------------------------------------------------------------------------------------

    def store_put(self, row: dict[str, Any]) -> None:
        topic, msg = row["topic"], row["msg_id"]
        self.puts_recorded = True
        if topic == SCHEDULE_TOPIC:
            self.parked.add(msg)
        if _user_topic(topic):
            self.put_in_topic.add((msg, topic))
            puts = self.user_puts.get(msg)
            if puts is None:
                self.user_puts[msg] = [1, row["seq"], "store.put", topic, row["broker"], row["queue_id"],
                                       row["offset"]]
            else:
                puts[0] += 1
            self.copies.append((row["seq"], msg, topic, row["broker"], row["queue_id"], row["offset"],
                                row.get("tags")))
        elif topic.startswith(_RETRY_PREFIX):
            group = topic[len(_RETRY_PREFIX):]
            reconsume_times = row.get("reconsume_times")
            copy = (group, msg, reconsume_times)
            if copy in self.retry_puts:
                self.stored_twice.add((group, msg))
            else:
                self.retry_puts.add(copy)
            # retry_delay_dlq (b): the puts of a copy made (by a sendback) before them, paired at the end.
            pairs = self.retry_pairs.get((group, msg, reconsume_times)) if reconsume_times is not None else None
            if pairs is not None:
                pairs[1].append((row["ts_ms"], row["seq"]))
        elif topic.startswith(_DLQ_PREFIX):
            self.dlq.add((topic[len(_DLQ_PREFIX):], msg))

    def store_delete(self, row: dict[str, Any]) -> None:
        self.any_dist["deletion"].append(row["seq"])
        queue = (row["topic"], row["broker"], row["queue_id"])
        offset = row["offset"]
        if offset > self.deleted.get(queue, -1):
            self.deleted[queue] = offset
        # offset_not_past_unconsumed: later commits are exempt for offsets below the deletion delivered before it.
        for key in self.keys_of_queue.get(queue, ()):
            pending = self.pending.get(key)
            if pending:
                for x in [x for x in pending if x < offset]:
                    del pending[x]
            self.stop_derived(key, offset)

    def broker_restart(self, row: dict[str, Any]) -> None:
        self.any_dist["broker_restart"].append(row["seq"])

    def fault_inject(self, row: dict[str, Any]) -> None:
        self.any_dist["fault"].append(row["seq"])
        if row["action"] == "duplicate":
            self.duplicating = True

    def trace_end(self, row: dict[str, Any]) -> None:
        if row["status"] == SETTLED:
            self.settled = True

    # Transactions ------------------------------------------------------------------------------------------------

    def txn_half(self, row: dict[str, Any]) -> None:
        self.halves.add(row["msg_id"])

    def txn_end(self, row: dict[str, Any]) -> None:
        result = row.get("result")
        msg = row["msg_id"]
        if result is None:
            if row["state"] in _DECIDING_STATES:
                self.producer_ends[msg] += 1
            return
        if result in (TXN_COMMITTED, TXN_ROLLED_BACK):
            self.resolutions[msg].append((result, row["seq"]))

    def txn_check(self, row: dict[str, Any]) -> None:
        msg, action = row["msg_id"], row["action"]
        if action == "discard":
            self.discarded.add((row["node"], msg))
        if action != "check":
            return
        self.checks[msg] += 1
        reasons = []
        check_max = row.get("check_max")
        limit = max(DEFAULT_CHECK_MAX if check_max is None else check_max, 1)
        if row["check_times"] > limit:
            reasons.append(f"check {row['check_times']} > max {limit} (TXN-22)")
        if (row["node"], msg) in self.discarded:
            reasons.append(f"checked after {row['node']} discarded it (TXN-23)")
        if reasons:
            self.check_problems.append((msg, _sample(self.trace_id, row, "; ".join(reasons))))

    # The end of the trace ----------------------------------------------------------------------------------------

    def finish(self) -> None:
        broadcast = self.broadcasting.__contains__  # the findings about clustering groups only count
        t = self.t
        self.finish_lost(broadcast)
        # duplicates_allowed
        tally = t[_DUPLICATES]
        for row, shared in self.duplicates:
            group, msg = row["group"], row["msg_id"]
            if broadcast(group):
                continue
            puts = self.user_puts.get(msg)
            if (puts is not None and puts[0] > 1) or (group, msg) in self.stored_twice:
                tally.excuse("stored_twice", _sample(self.trace_id, row, excused_reason("stored_twice"),
                                                     cause="stored_twice"))
                continue
            origin = 0 if puts is None else puts[1]
            cause = self.disturbance(group, origin, row["seq"]) or (SHARED_QUEUE if shared else None)
            if cause is None:
                self.violation(_DUPLICATES, row, f"consumed again after the success at seq "
                                                 f"{self.first_success[(group, msg)]} with no cause since seq {origin} "
                                                 f"and its queue not shared",
                               first_success=self.first_success[(group, msg)])
            else:
                tally.excuse(cause, _sample(self.trace_id, row, excused_reason(cause), cause=cause))
        # offset_no_regression, offset_not_past_unconsumed, single_owner: clustering groups' findings.
        for group, cause, sample in self.regressions:
            if broadcast(group):
                continue
            if cause is not None:
                t[_REGRESSION].excuse(cause, sample)
            else:
                t[_REGRESSION].add(sample)
        for name, found in ((_UNCONSUMED, self.past_unconsumed), (_SINGLE_OWNER, self.owner_problems)):
            for group, sample in found:
                if not broadcast(group):
                    t[name].add(sample)
        self.finish_transactions()
        self.finish_retry_pairs()
        judged = self.judged
        for (name, group), n in self.group_cases.items():
            if not broadcast(group):
                judged[name] += n
        last_sendback = self.last_sendback
        judged[_UNCONSUMED] += sum(1 for group, msg, d in self.derived_first
                                   if not broadcast(group) and last_sendback.get((group, msg), -1) > d)
        for name, n in judged.items():
            t[name].judged += n

    def finish_lost(self, broadcasting: Callable[[str], bool]) -> None:
        """no_lost_message: (a) where the trace records puts, settled or cut; (b) in settled traces."""
        tally = self.t[_NO_LOST]
        acked = [a for a in self.acked if a[2] not in self.halves]
        if not self.puts_recorded:
            if acked:
                tally.counts[PART_A_SKIPPED] += 1
        else:
            self.judged[_NO_LOST] += len(acked)
            for seq, node, msg, topic, broker, queue_id, offset, attempt in acked:
                if (msg, topic) not in self.put_in_topic and (self.settled or msg not in self.parked):
                    tally.add(_compact(self.trace_id, seq, f"acknowledged SEND_OK but never stored in {topic} "
                                       f"(OFF-17)", kind="send.result", node=node, topic=topic, broker=broker,
                                       queue_id=queue_id, offset=offset, msg_id=msg, attempt=attempt,
                                       status="SEND_OK"))
        if not self.settled:
            tally.counts[SKIPPED] += 1
            return
        life = self.last_life
        live = {g for g, nodes in self.consumer_nodes.items()
                if not broadcasting(g) and any(life.get((g, n)) not in _GONE for n in nodes)}
        delivered, dead_letters, expressions = self.first_success, self.dlq, self.latest_expression
        for seq, msg, topic, broker, queue_id, offset, tags in self.copies:
            pulled = self.lowest_pull.get((topic, broker, queue_id))
            if not pulled:
                continue
            for group, lowest in pulled.items():
                if lowest > offset or group not in live or not _selects(expressions.get((group, topic), "*"), tags):
                    continue
                self.judged[_NO_LOST] += 1
                if (group, msg) in delivered or (group, msg) in dead_letters:
                    continue
                if self.deleted.get((topic, broker, queue_id), -1) > offset:
                    tally.counts["exempt_deleted"] += 1
                    continue
                tally.add(_compact(self.trace_id, seq, f"due to group {group}, never consumed successfully nor "
                                   f"dead-lettered (OFF-17, RETRY-7)", kind="store.put", group=group, topic=topic,
                                   broker=broker, queue_id=queue_id, offset=offset, msg_id=msg))

    def finish_transactions(self) -> None:
        """transaction (a)-(c), for msg_ids with a txn.half row."""
        tally = self.t[_TXN]
        self.judged[_TXN] += len(self.halves) + sum(self.checks[m] for m in self.halves)
        for msg in sorted(self.halves):
            resolved = self.resolutions.get(msg, ())
            results = {result for result, _ in resolved}
            if len(resolved) > 1:
                if self.producer_ends[msg] > 1 or self.duplicating:
                    tally.counts["TXN-11"] += 1
                else:
                    tally.add(_compact(self.trace_id, resolved[1][1], f"resolved {len(resolved)} times, decided by "
                                       f"{self.producer_ends[msg]} END_TRANSACTION(s), no duplicating fault (TXN-11)",
                                       kind="txn.end", msg_id=msg))
            if TXN_ROLLED_BACK in results and TXN_COMMITTED not in results:
                for found in (self.user_puts.get(msg), self.delivers.get(msg)):
                    if found is None:
                        continue
                    count, seq, kind, topic, broker, queue_id, offset = found[:7]
                    tally.violations += count - 1  # every such row violates; the first is kept as the sample
                    tally.add(_compact(self.trace_id, seq, f"rolled back, yet {kind} in {topic} ({count} row(s)) "
                                       f"(TXN-9)", kind=kind, topic=topic, broker=broker, queue_id=queue_id,
                                       offset=offset, msg_id=msg, group=found[7] if len(found) > 7 else None))
        for msg, sample in self.check_problems:
            if msg in self.halves:
                tally.add(sample)


def _rows_of(source: str | os.PathLike[str] | Iterable[Mapping[str, Any]]
             ) -> tuple[str, Iterator[tuple[str, Any]], dict[str, tuple[int, ...]]]:
    if isinstance(source, (str, os.PathLike)):
        traces = reading.read_traces(source, COLUMNS, kind_columns=True)
        return str(source), traces, reading.delay_tables(source)
    return "<rows>", reading.group_rows(source), {}


def check_python(source: str | Path | Iterable[Mapping[str, Any]], *,
                 delay_tables: Mapping[str, Sequence[int]] | None = None,
                 progress: Callable[[str], None] | None = None) -> Report:
    """Check every invariant on a trace directory or file (Parquet or JSON Lines) or on in-memory rows.

    ``delay_tables`` gives traces their delay tables by trace id (the manifest's ``delay_levels_ms`` field, which a
    directory's manifest supplies; these entries take precedence); a trace without one ran with the default 18
    levels. Returns a Report (engine ``python``) with one result per invariant in INVARIANTS order; raises
    SchemaError for bad input. ``progress`` hears the traces and events checked so far after each trace.
    """
    started = time.perf_counter()
    name, traces, tables = _rows_of(source)
    if delay_tables is not None:
        tables = {**tables, **check_delay_tables(delay_tables, "delay_tables")}
    # The state is acyclic and grows by millions of small objects: the cycle collector would only rescan it.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _check(name, traces, tables, started, progress)
    finally:
        if collecting:
            gc.enable()


def _check(name: str, traces: Iterator[tuple[str, Any]], tables: Mapping[str, tuple[int, ...]],
           started: float, progress: Callable[[str], None] | None = None) -> Report:
    tallies = {i.name: _Tally() for i in INVARIANTS}
    kinds: Counter[str] = Counter()
    events = count = 0
    for trace_id, rows in traces:
        trace = _Trace(trace_id, tallies, reading.delay_table(tables, trace_id))
        events += trace.run(rows)
        kinds.update(trace.kinds)
        count += 1
        if progress is not None:
            progress(f"{count:,} trace(s), {events:,} events checked")
    results = tuple(
        InvariantResult(
            name=i.name,
            events_scanned=sum(kinds[k] for k in i.kinds),
            judged=tallies[i.name].judged,
            violations=tallies[i.name].violations,
            samples=sample_rows(tallies[i.name].samples),
            counts=dict(tallies[i.name].counts),
            excused=sample_rows(tallies[i.name].excused),
        )
        for i in INVARIANTS
    )
    return Report(source=name, engine=ENGINE, events=events, traces=count, results=results,
                  seconds=time.perf_counter() - started)
