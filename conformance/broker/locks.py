"""Broker conformance cases: orderly-consumer queue locks (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ).

The broker keeps one holder per (consumer group, queue) (``RebalanceLockManager``, REB-17): LOCK_BATCH_MQ grants a
queue that is free, expired (60 s without renewal) or already the caller's, and answers in ``lockOKMQSet`` the
requested queues the caller holds afterwards; a queue another client holds is left out (BRK-16). UNLOCK_BATCH_MQ
answers SUCCESS and frees only the caller's locks. Holders are client ids (the body's ``clientId``), not connections.
Lock expiry waits on the fixed 60 s of RocketMQ 4.x, so that case is slow (``--long``).
"""

from __future__ import annotations

import time

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import new_client_id
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.model import CaseList
from rocketspec.conformance.wire import WireClient
from rocketspec.spec.protocol import BROKER_LOCK_EXPIRY_MS, RequestCode, ResponseCode

cases = CaseList("broker/locks")
CASES = cases.cases

Queue = tuple[str, str, int]  # (topic, brokerName, queueId)

# The expiry case polls this often and gives up this long after the 60 s (RocketMQ's timer is checked per request,
# so the lock is free on the first request after it lapses).
EXPIRY_POLL_S = 1.0
EXPIRY_MARGIN_S = 10.0
# An early grant is one this much before the 60 s (the suite measures from after the lock's answer arrived).
EXPIRY_EARLY_TOLERANCE_S = 2.0


def _queues(ctx: BrokerContext, count: int = 4) -> tuple[str, list[Queue]]:
    """A group and ``count`` queues of a new orderly topic on the first master."""
    topic = ctx.topic(count, brokers=[0], order=True)
    return ctx.group(), [(topic, ctx.brokers[0].name, q) for q in range(count)]


def _lock(ctx: BrokerContext, client: WireClient, group: str, client_id: str, queues: list[Queue]) -> list[Queue]:
    """LOCK_BATCH_MQ; the queues of ``lockOKMQSet``, sorted."""
    answer = client.request(requests.lock_batch(group, client_id, queues))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"LOCK_BATCH_MQ of {client_id}")
    body = requests.json_body(answer) or {}
    return sorted((q.get("topic"), q.get("brokerName"), q.get("queueId")) for q in body.get("lockOKMQSet") or [])


def _unlock(ctx: BrokerContext, client: WireClient, group: str, client_id: str, queues: list[Queue]) -> None:
    answer = client.request(requests.lock_batch(group, client_id, queues, code=RequestCode.UNLOCK_BATCH_MQ))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"UNLOCK_BATCH_MQ of {client_id}")


def _ids(queues: list[Queue]) -> list[int]:
    return sorted(q[2] for q in queues)


def _two_clients(ctx: BrokerContext) -> tuple[str, list[Queue], WireClient, str, WireClient, str]:
    """A group, its queues, and two clients on connections of their own, the first holding queues 0 and 1:
    (group, queues, first, first's id, second, second's id)."""
    group, queues = _queues(ctx)
    first, second = ctx.broker(0), ctx.broker(0)
    first_id, second_id = new_client_id(ctx, "l1"), new_client_id(ctx, "l2")
    _lock(ctx, first, group, first_id, queues[:2])
    return group, queues, first, first_id, second, second_id


@cases.case("lock-free-queues-granted", clauses=("BRK-16", "REB-17"),
            requirement="LOCK_BATCH_MQ on free queues grants all of them in lockOKMQSet")
def lock_free_queues_granted(ctx: BrokerContext) -> None:
    group, queues = _queues(ctx)
    locked = _lock(ctx, ctx.broker(0), group, new_client_id(ctx, "l1"), queues[:3])
    ctx.expect_equal(locked, sorted(queues[:3]), "lockOKMQSet for 3 free queues")


@cases.case("lock-held-refused", clauses=("BRK-16", "REB-17"),
            requirement="a queue another client holds is left out of the second client's lockOKMQSet")
def lock_held_refused(ctx: BrokerContext) -> None:
    group, queues, _, _, second, second_id = _two_clients(ctx)
    locked = _lock(ctx, second, group, second_id, queues[1:3])
    ctx.expect_equal(_ids(locked), [2], "queue ids granted to the second client (queue 1 is held by the first)")


@cases.case("lock-relock-same-client", clauses=("BRK-16", "REB-17"),
            requirement="the holder locking its queues again is granted them again")
def lock_relock_same_client(ctx: BrokerContext) -> None:
    group, queues, first, first_id, second, second_id = _two_clients(ctx)
    _lock(ctx, second, group, second_id, queues[1:3])
    ctx.expect_equal(_ids(_lock(ctx, first, group, first_id, queues)), [0, 1, 3],
                     "queue ids granted to the holder of 0 and 1 (2 is the other client's)")


@cases.case("unlock-frees-for-other-client", clauses=("BRK-16", "REB-17"),
            requirement="after UNLOCK_BATCH_MQ by the holder another client is granted the queues")
def unlock_frees_for_other_client(ctx: BrokerContext) -> None:
    group, queues, first, first_id, second, second_id = _two_clients(ctx)
    ctx.expect_equal(_lock(ctx, second, group, second_id, queues[:2]), [], "lockOKMQSet while the first holds both")
    _unlock(ctx, first, group, first_id, queues[:2])
    ctx.expect_equal(_lock(ctx, second, group, second_id, queues[:2]), sorted(queues[:2]),
                     "lockOKMQSet of the second client after the first unlocked")


@cases.case("unlock-by-other-client-ignored", clauses=("BRK-16", "REB-17"),
            requirement="UNLOCK_BATCH_MQ by a client that does not hold the queues leaves the holder's locks")
def unlock_by_other_client_ignored(ctx: BrokerContext) -> None:
    group, queues, _, _, second, second_id = _two_clients(ctx)
    _unlock(ctx, second, group, second_id, queues[:2])
    ctx.expect_equal(_lock(ctx, second, group, second_id, queues[:2]), [],
                     "lockOKMQSet of the second client after its own unlock of the first's queues")


@cases.case("lock-held-by-client-id", clauses=("BRK-16", "REB-17"),
            requirement="a lock belongs to the client id: the same id on another connection is granted it")
def lock_held_by_client_id(ctx: BrokerContext) -> None:
    """REB-17: the holder is the body's clientId; a client reconnecting (new connection, same id) keeps its locks."""
    group, queues = _queues(ctx)
    holder = new_client_id(ctx, "l1")
    first = ctx.broker(0)
    _lock(ctx, first, group, holder, queues[:2])
    first.close()
    ctx.expect_equal(_lock(ctx, ctx.broker(0), group, holder, queues[:2]), sorted(queues[:2]),
                     "lockOKMQSet of the same client id on a new connection")


@cases.case("locks-per-group", clauses=("BRK-16", "REB-17"),
            requirement="the same queue is locked independently by clients of two different groups")
def locks_per_group(ctx: BrokerContext) -> None:
    group, queues = _queues(ctx, 1)
    other = ctx.group()
    _lock(ctx, ctx.broker(0), group, new_client_id(ctx, "l1"), queues)
    ctx.expect_equal(_lock(ctx, ctx.broker(0), other, new_client_id(ctx, "l2"), queues), queues,
                     "lockOKMQSet of a client of another group")


@cases.case("lock-expires", clauses=("BRK-16", "REB-17", "REB-18"), slow=True,
            requirement="a lock not renewed for 60 s is granted to another client")
def lock_expires(ctx: BrokerContext) -> None:
    """REB-17: the broker lock lives 60 s (REBALANCE_LOCK_MAX_LIVE_TIME, not configurable) from its last lock
    request; the next client asking after that takes it over, and not (much) before."""
    expiry_s = BROKER_LOCK_EXPIRY_MS / 1000
    needed = expiry_s + EXPIRY_MARGIN_S
    if ctx.remaining() < needed + 5:
        ctx.skip(f"waits up to {needed:g} s for the 60 s lock expiry; run with --timeout {needed + 20:g} or more")
    group, queues = _queues(ctx, 1)
    holder, other = ctx.broker(0), ctx.broker(0)
    _lock(ctx, holder, group, new_client_id(ctx, "l1"), queues)
    locked_at = time.monotonic()
    other_id = new_client_id(ctx, "l2")

    def taken_over() -> float | None:
        if _lock(ctx, other, group, other_id, queues) == queues:
            return time.monotonic() - locked_at
        return None

    elapsed = ctx.wait_until(taken_over, needed, what="another client to be granted the lock after 60 s",
                             interval=EXPIRY_POLL_S)
    ctx.expect(elapsed >= expiry_s - EXPIRY_EARLY_TOLERANCE_S,
               f"the lock kept from the other client for {expiry_s:g} s", f"granted after {elapsed:.1f} s")
