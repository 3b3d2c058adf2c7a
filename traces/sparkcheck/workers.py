"""The bodies of the PySpark checker's pandas UDFs, which run on Spark's Python workers.

Module level so that the workers import them (by this module's name) and keep their memos across tasks
(:func:`_memo`). Each calls a spec oracle, importing it inside the body on the worker:

* :func:`_pull_reasons`: pull_oracle (PULL-1, PULL-2, PULL-3, PULL-4, PULL-5, PULL-10, PULL-19, PULL-25), a row
  against ``pull_correction.bounds_decision``, ``response_code`` and ``pull_status``;
* :func:`_allocate_reasons`: single_owner (a) (REB-1, REB-3, REB-4, REB-5), an assignment against
  ``rebalance.allocate``;
* :func:`_replay_owners`: single_owner (b) (REB-20, REB-21), the sequential replay of one (trace_id, group, topic)
  with ``applyInPandas`` (output schema :data:`OWNER_SCHEMA`).

The jobs that call them are in :mod:`rocketspec.traces.sparkcheck.pulls` and
:mod:`rocketspec.traces.sparkcheck.ownership`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from rocketspec.traces.sparkcheck.columns import STOPPED

SCAN_STATUSES = ("FOUND", "NO_MATCHED_MESSAGE", "MESSAGE_WAS_REMOVING", "OFFSET_FOUND_NULL")  # PULL-25
OWNER_SCHEMA = "trace_id string, seq bigint, group string, topic string, node string, reason string"

_MEMO: dict[tuple[Any, ...], Any] = {}


def _memo(key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    """``compute()``, memoised under ``key`` for the life of the worker (cleared past a million entries)."""
    try:
        return _MEMO[key]
    except KeyError:
        if len(_MEMO) > 1_000_000:
            _MEMO.clear()
        value = _MEMO[key] = compute()
        return value


def _pull_reasons(broker_side: pd.Series, offset: pd.Series, min_offset: pd.Series, max_offset: pd.Series,
                  status: pd.Series, has_next: pd.Series, next_offset: pd.Series, has_code: pd.Series,
                  code: pd.Series) -> pd.Series:
    """pull_oracle per row: why the row disagrees with the pull-correction oracles, or None."""
    from rocketspec.spec import pull_correction
    from rocketspec.spec.protocol import GetMessageStatus, ResponseCode

    def bounds(o: int, lo: int, hi: int) -> Any:
        return _memo(("bounds", o, lo, hi), lambda: pull_correction.bounds_decision(o, lo, hi))

    def codes(st: str, o: int) -> frozenset[int] | None:
        def compute() -> frozenset[int] | None:
            try:
                gms = GetMessageStatus[st]
            except KeyError:
                return None
            answers = (pull_correction.response_code(gms, requested_offset=o, suspend=s) for s in (True, False))
            return frozenset(int(a.code) for a in answers if a.code is not None)

        return _memo(("code", st, o), compute)

    def client(c: int) -> str | None:
        def compute() -> str | None:
            try:
                rc = ResponseCode(c)
            except ValueError:
                return None
            ps = pull_correction.pull_status(rc)
            return None if ps is None else ps.name

        return _memo(("pull_status", c), compute)

    out: list[str | None] = []
    for bs, o, lo, hi, st, hn, nx, hc, c in zip(
        broker_side.tolist(), offset.tolist(), min_offset.tolist(), max_offset.tolist(), status.tolist(),
        has_next.tolist(), next_offset.tolist(), has_code.tolist(), code.tolist(), strict=True,
    ):
        nxt = nx if hn else None
        reason = None
        if bs:
            decision = bounds(o, lo, hi)
            if decision is not None:
                if st != decision.status.name or nxt != decision.next_begin_offset:
                    reason = (f"bounds_decision({o}, {lo}, {hi}) gives {decision.status.name} next "
                              f"{decision.next_begin_offset}, the row has {st} next {nxt}")
            elif st not in SCAN_STATUSES or nxt is None or not lo <= nxt <= hi:
                reason = (f"offset {o} is readable in [{lo}, {hi}): status {st} next {nxt} is not a scan's "
                          f"(status one of {', '.join(SCAN_STATUSES)}, next within [{lo}, {hi}])")
            if reason is None and hc:
                allowed = codes(st, o)
                if allowed is None:
                    reason = f"status {st} is not a GetMessageStatus"
                elif c not in allowed:
                    reason = f"code {c} for {st} at offset {o}; response_code gives {sorted(allowed) or 'none'}"
        elif hc:
            expected = client(c) or "ERROR"  # None: the client raises MQBrokerException
            if expected != st:
                reason = f"code {c}: pull_status gives {expected}, the row has {st}"
        out.append(reason)
    return pd.Series(out, dtype=object)


def _allocate_reasons(strategy: pd.Series, node: pd.Series, topic: pd.Series, all_queues: pd.Series,
                      consumers: pd.Series, queues: pd.Series) -> pd.Series:
    """single_owner (a): why a rebalance.assign differs from rebalance.allocate, or None."""
    from rocketspec.spec import MessageQueue, rebalance

    def parse(q: str) -> MessageQueue:
        broker, _, qid = q.rpartition(":")
        return MessageQueue(topic=t, broker_name=broker, queue_id=int(qid))

    out: list[str | None] = []
    for s, n, t, aq, cs, qs in zip(strategy.tolist(), node.tolist(), topic.tolist(), all_queues.tolist(),
                                   consumers.tolist(), queues.tolist(), strict=True):
        key = ("allocate", s, n, t, tuple(aq), tuple(cs))

        def compute(s: str = s, n: str = n, aq: Any = aq, cs: Any = cs) -> frozenset[str] | str:
            try:
                given = rebalance.allocate(s, n, [parse(q) for q in aq], list(cs))
            except ValueError as error:
                return f"allocate raised {error}"
            return frozenset(f"{q.broker_name}:{q.queue_id}" for q in given)

        expected = _memo(key, compute)
        if isinstance(expected, str):
            out.append(expected)
        elif expected != frozenset(qs):
            out.append(f"{s} gives {sorted(expected)}, the row lists {sorted(set(qs))}")
        else:
            out.append(None)
    return pd.Series(out, dtype=object)


def _replay_owners(rows: pd.DataFrame) -> pd.DataFrame:
    """single_owner (b) for one (trace_id, group, topic): replay assignments and lifecycles in seq order."""
    rows = rows.sort_values("seq", kind="stable")
    latest: dict[str, tuple[frozenset[str], frozenset[str] | None, frozenset[str]]] = {}
    last_action: dict[str, str] = {}
    reported = False
    out = []
    for r in rows.itertuples(index=False):
        if r.kind == "rebalance.assign":
            all_q = None if r.all_queues is None else frozenset(r.all_queues)
            latest[r.node] = (frozenset(r.consumers), all_q, frozenset(r.queues))
        else:
            last_action[r.node] = r.action
        live = {n for n in latest if last_action.get(n) not in STOPPED}
        views = [latest[n] for n in live]
        agree = all(v[0] == live for v in views) and len({v[1] for v in views if v[1] is not None}) <= 1
        if not agree:
            reported = False
            continue
        owner: dict[str, str] = {}
        clash = None
        for n in sorted(live):
            for q in sorted(latest[n][2]):
                if q in owner:
                    clash = (q, owner[q], n)
                    break
                owner[q] = n
            if clash:
                break
        if clash and not reported:
            reported = True
            out.append((r.trace_id, int(r.seq), r.group, r.topic, r.node,
                        f"queue {clash[0]} owned by {clash[1]} and {clash[2]} while views agree"))
    return pd.DataFrame(out, columns=["trace_id", "seq", "group", "topic", "node", "reason"])
