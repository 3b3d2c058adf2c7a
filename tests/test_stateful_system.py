"""The whole system under one stateful machine: every area's rules mixed, checked end to end against the spec.

``SystemMachine`` drives a simulated ``Cluster`` of 2 brokers (flush ``sync``, small commit-log segments) with topics
``T0`` (2 queues per broker) and ``T1`` (1 queue per broker), a plain producer ``PG``, a transactional producer
``TPG`` and push consumers (clustering) of two groups: ``G0`` (concurrent, subscribes T0 and T1) and ``G1``
(concurrent or orderly, drawn at start; subscribes T0 with ``TagB || TagNeg``, TagNeg's Java hash code negative),
and up to two broadcasting consumers of ``G2`` (T1), each of which must get every acknowledged message of T1 and none
of which commits an offset to a broker.
Every command crosses the frame codec (JSON or binary header, drawn; or none). The brokers run with the default
settings or with some changed (``BROKER_OPTIONS``: short delay tables, short polling, no consumer-change
notification). Rules: sends (sync, async, batch,
tags, delay levels up to 18 and one past it), transactions
with every executor / check-back outcome, listener outcomes (success or RECONSUME_LATER for the first n deliveries),
consumers joining, leaving and crashing, broker crash-restart (with or without time down), deletion of the oldest
commit-log segments, faults (fail, drop, lost response, duplicate) on any client request code, time passing, and
``settle`` (faults cleared, every group given a consumer, ``run_until_idle``).

The implementation's transitions are observed through its event log (a subscriber sees every event as it is
emitted) and through a recording allocation strategy; the checks are the spec's oracles and end-to-end consequences
of its clauses:

- no acknowledged message is lost (OFF-17, OFF-19, RETRY-7, RETRY-27, TXN-22): at ``settle`` every SEND_OK message
  (every committed transaction) was consumed successfully by every group whose subscription selects its tags or is
  in the group's DLQ, unless the data holding it was deleted (PULL-3, PULL-6) or its half message discarded (TXN-23);
- a group gets only messages its subscription selects (FILTER-2, FILTER-3), and a delayed send reaches its topic no
  earlier than its level's delay after it was parked, a level past the table's being its last (RETRY-2, RETRY-3);
- a committed offset passes only handled messages (OFF-17): consumed successfully, handed to the retry topic / DLQ,
  or deleted;
- duplicates only for an allowed cause (OFF-12, OFF-17, REB-20, TXN-11, SEND-2, SEND-3): a message consumed
  successfully is delivered again to the group only if it was stored more than once (a retried send, a duplicated
  send back or END_TRANSACTION), or since it was stored two live consumers of the group allocated its queue (or its
  original's, each sending a copy back) at once (views that did not agree), or a fault, a broker restart, a
  deletion, a consumer joining / leaving / crashing, an OFFSET_ILLEGAL correction or a change of a consumer's
  allocation happened (counted by cause in ``DUPLICATE_CAUSES``);
- a committed offset moves back only after such a cause (OFF-8, OFF-12, PULL-22, REB-10): the lower value is stale,
  so one of them must have happened since the committed offset last rose above it;
- every allocation equals ``rebalance.allocate`` on the same queues and ids (REB-1 to REB-5); once the live consumers
  of a group agree on queues and ids no queue has two owners and none is left out (REB-20); after ``settle`` each
  live consumer owns exactly its allocation (REB-20, REB-21);
- a transaction is resolved (committed or rolled back by the broker) at most once unless its END_TRANSACTION was
  duplicated or a check re-appended its half message (TXN-11, TXN-25), and a message whose producer did not commit
  it is never stored in its topic nor delivered (TXN-22);
- every answered pull follows ``pull_correction.response_code`` / ``bounds_decision`` (PULL-2 to PULL-5, PULL-10) and
  its next offset stays within [min, max], beyond the requested one when FOUND (PULL-25);
- a send makes at most ``send_retry.attempt_limit`` attempts (SEND-1) and a retry goes to another broker while both
  brokers are up (SEND-8, SEND-13).

Mutant tests break one rule of the implementation (an allocation off by one, a rolled-back half message committed, a
failed message acknowledged, a send retried on the broker that just failed) and show the machine fails. A finding of
the machine (consume-queue entries lost by deleting segments before a crash) has its regression test.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import hypothesis.strategies as st
import pytest
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from mutation import refimpl_mutant
from stateful_support import hypothesis_finds_failure, stateful_settings

from rocketspec.refimpl import Cluster, ConsumeStatus, Message, NotIdle, SendStatus, TransactionState
from rocketspec.refimpl.broker import transaction as refimpl_transaction
from rocketspec.refimpl.client import allocate as refimpl_allocate
from rocketspec.refimpl.client import consume_service as refimpl_consume_service
from rocketspec.refimpl.client import consumer_config as refimpl_consumer_config
from rocketspec.refimpl.client import latency as refimpl_latency
from rocketspec.refimpl.client import push_consumer as refimpl_push_consumer
from rocketspec.refimpl.client import rebalance as refimpl_rebalance
from rocketspec.refimpl.client.errors import MQBrokerError, MQClientError
from rocketspec.refimpl.client.push_consumer import PushConsumer
from rocketspec.refimpl.events import (
    ClientLifecycle,
    Event,
    FaultInject,
    MessageStored,
    OffsetCommit,
    PullResponseEvent,
    RebalanceAssign,
    SendAttempt,
    SendBack,
    TxnCheck,
    TxnEnd,
)
from rocketspec.refimpl.frame import WIRE_CODECS as FRAME_TYPES
from rocketspec.refimpl.frame import decode, encode
from rocketspec.refimpl.remoting import RemotingCommand, RemotingError
from rocketspec.refimpl.store import records as refimpl_store_records
from rocketspec.spec import consume_retry, message_filter, pull_correction, remoting, send_retry
from rocketspec.spec import rebalance as spec_rebalance
from rocketspec.spec.protocol import (
    DEFAULT_PERM,
    DELAY_LEVEL_MILLIS,
    PERM_READ,
    PERM_WRITE,
    SCHEDULE_TOPIC,
    TRANS_HALF_TOPIC,
    CommunicationMode,
    GetMessageStatus,
    Property,
    RequestCode,
    dlq_topic,
    retry_topic,
)
from rocketspec.spec.queues import MessageQueue

BROKERS = ("broker-a", "broker-b")
TOPICS = {"T0": 2, "T1": 1}  # queues per broker
GROUPS = ("G0", "G1")
SUBSCRIPTIONS = {"G0": ("T0", "T1"), "G1": ("T0",)}
# A broadcasting group: each of its consumers gets every message of its topic, offsets kept by the client.
BROADCAST_GROUP, BROADCAST_TOPIC = "G2", "T1"
# Tags sends draw from; TagNeg's Java hashCode is negative (-1797390410), the tags code a consume queue keeps for it.
TAGS = ("TagA", "TagB", "TagNeg")
# Subscription expressions per group and topic: G1 filters by tag (the broker by hash code, the client by name).
EXPRESSIONS = {"G0": {"T0": "*", "T1": "*"}, "G1": {"T0": "TagB || TagNeg"}}
MAX_RECONSUME = 2  # maxReconsumeTimes of every consumer: the DLQ after 3 failed deliveries (RETRY-6, RETRY-7)
MAX_CONSUMERS = 3
STRATEGIES = ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH")
# The network's frame codec round trip (Cluster(wire_codec=...)): mostly on, as components see commands under serve.
WIRE_CODECS = ("json", "rocketmq", "json", None)
# Broker settings a program runs with: the defaults (drawn most), or non-default ones the rules depend on: a short
# delay table of 4 levels (levels above it clamp to its last), short polling instead of long polling, no
# NOTIFY_CONSUMER_IDS_CHANGED (consumers rebalance on their 20 s timer only), a shorter short-polling wait. (Flush stays
# synchronous: an asynchronous one may lose the unflushed tail in a crash, which the no-loss check does not allow.)
#: 18 levels of seconds: every level and one past the last is cheap to simulate (the default table's last is 2 h).
SHORT_TABLE = " ".join(f"{n}s" for n in range(1, 19))
BROKER_OPTIONS: tuple[dict[str, Any], ...] = (
    {}, {"message_delay_level": SHORT_TABLE}, {"message_delay_level": SHORT_TABLE},
    {"message_delay_level": "1s 3s 10s 1m"},
    {"long_polling_enable": False},
    {"notify_consumer_ids_changed_enable": False},
    {"message_delay_level": "2s 4s", "short_polling_time_ms": 500},
)
# Request codes a fault may hit; the ones on the paths of messages and offsets are listed twice (drawn more often).
FAULT_REQUESTS = (
    "SEND_MESSAGE", "SEND_MESSAGE", "PULL_MESSAGE", "CONSUMER_SEND_MSG_BACK", "CONSUMER_SEND_MSG_BACK",
    "UPDATE_CONSUMER_OFFSET", "END_TRANSACTION", "END_TRANSACTION", "QUERY_CONSUMER_OFFSET", "HEART_BEAT",
    "GET_CONSUMER_LIST_BY_GROUP", "LOCK_BATCH_MQ", "GET_ROUTEINFO_BY_TOPIC",
)
FAULT_KINDS = ("fail", "fail", "fail_busy", "drop", "drop_response", "duplicate")
SETTLE_LIMIT_MS = 6 * 3_600_000
SETTLE_ROUNDS, SETTLE_ROUND_MS = 8, 35_000
PADDING = b"x" * 400
# A retry may stay on the last broker when a broker was down (the route lists one broker) within this long.
ROUTE_STALE_MS = 200_000
_SEND_ERRORS = (MQClientError, MQBrokerError, RemotingError)

# Redeliveries of successfully consumed messages, by allowed cause, over every run in this process.
DUPLICATE_CAUSES: Counter[str] = Counter()


def benchmark_notes() -> str:
    """What benchmarks/stateful_steps.py prints after running this module's machine: the redeliveries by cause."""
    causes = ", ".join(f"{cause} {n}" for cause, n in DUPLICATE_CAUSES.most_common()) or "none"
    return f"redeliveries of consumed messages by allowed cause: {causes}"


def _selects(group: str, topic: str, tags: str | None) -> bool:
    """Whether ``group``'s subscription of ``topic`` selects a message tagged ``tags`` (FILTER: by name at the client;
    the broker's hash-code filter passes at least these). A group's retry topic is subscribed with ``*``."""
    return message_filter.client_tag_matches(EXPRESSIONS[group].get(topic, "*"), tags)


class _Strategy:
    """A recording allocation strategy: the implementation's own strategy, every call checked against the spec."""

    def __init__(self, name: str, on_allocate: Callable[..., None]) -> None:
        self.inner = refimpl_allocate.make_strategy(name)
        self.name = self.inner.name
        self._on_allocate = on_allocate

    def allocate(self, group: str, consumer_id: str, queues: Sequence[MessageQueue],
                 consumer_ids: Sequence[str]) -> list[MessageQueue]:
        result = self.inner.allocate(group, consumer_id, queues, consumer_ids)
        self._on_allocate(self.name, group, consumer_id, tuple(queues), tuple(consumer_ids), list(result))
        return result

    def __repr__(self) -> str:
        return f"_Strategy({self.name})"


@attrs.define
class _Txn:
    """A transaction's plan: the local transaction's answer and, when that is UNKNOW, the check-back's answer."""

    executor: TransactionState
    check: TransactionState
    ran: bool = False  # the local transaction ran (the half message was SEND_OK)

    def decision(self) -> TransactionState:
        """What the application decided: the executor's answer, else the checker's; a half message whose send
        failed (the executor never ran) is rolled back by the checker."""
        if not self.ran:
            return TransactionState.ROLLBACK_MESSAGE
        return self.executor if self.executor is not TransactionState.UNKNOW else self.check


@attrs.define
class _Sent:
    key: str
    topic: str
    how: str
    msg_id: str | None = None
    acked: bool = False
    txn: _Txn | None = None
    tags: str | None = None
    delay_level: int = 0


class SystemMachine(RuleBasedStateMachine):
    """Every area at once on a 2-broker cluster; see the module docstring for the rules and the checks."""

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.violations: list[str] = []

    # ============================================================================================== set-up
    @initialize(seed=st.integers(0, 2**16), orderly=st.booleans(),
                strategy0=st.sampled_from(STRATEGIES), strategy1=st.sampled_from(STRATEGIES),
                consumers0=st.integers(1, MAX_CONSUMERS), consumers1=st.integers(1, MAX_CONSUMERS),
                codec=st.sampled_from(WIRE_CODECS), broker_options=st.sampled_from(BROKER_OPTIONS),
                broadcasters=st.integers(0, 2))
    def start(self, seed: int, orderly: bool, strategy0: str, strategy1: str, consumers0: int,
              consumers1: int, codec: str | None, broker_options: dict[str, Any], broadcasters: int) -> None:
        """The cluster, both producers, and ``consumers0`` / ``consumers1`` consumers of G0 / G1 (G1 orderly or
        not, each group with its allocation strategy); every command goes through the frame codec (JSON or binary
        header) unless ``codec`` is None; the brokers run with ``broker_options`` (defaults, or some changed)."""
        self.strategy = {"G0": strategy0, "G1": strategy1}
        self.orderly = {"G0": False, "G1": orderly}
        self.fail_below = {g: 0 for g in GROUPS}  # the listener fails deliveries with reconsumeTimes below this
        self.live: dict[str, list[PushConsumer]] = {g: [] for g in GROUPS}
        self.sent: dict[str, _Sent] = {}
        self.key_of: dict[str, str] = {}  # msg id (UNIQ_KEY) -> key (the body)
        self.counter = 0
        # Observations, all stamped with the event-log position (seq) they happened at.
        self.first_delivery: dict[tuple[str, str], int] = {}
        self.success: dict[tuple[str, str], int] = {}
        self.sendbacks: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.dlq: dict[tuple[str, str], int] = {}
        self.exempt: dict[tuple[str, str], str] = {}
        self.copies: Counter[tuple[str, str]] = Counter()  # (topic, msg id) -> stored copies
        self.origin: dict[str, int] = {}  # msg id -> when it was first stored in its topic
        self.parked: dict[str, int] = {}  # msg id -> when (ms) it was first stored in the schedule topic
        self.reshaped: dict[tuple[str, str], int] = {}  # (topic, broker) -> queues it must get back at settle
        self.reshaped_ms: int | None = None  # when a topic was last reshaped (simulated ms)
        self.origin_queue: dict[str, MessageQueue] = {}  # msg id -> the queue it was first stored in
        self.overlaps: dict[tuple[str, MessageQueue], list[list[Any]]] = {}  # [start, end or None] seqs
        self.records: dict[str, list[tuple[int, str, str]]] = defaultdict(list)  # broker -> (clo, topic, msg id)
        self.queue_msgs: dict[tuple[str, str, int], dict[int, tuple[str, int, str | None]]] = defaultdict(dict)
        self.verified: dict[tuple[str, str, str, int], int] = {}
        self.commit_history: dict[tuple[str, str, str, int], list[tuple[int, int]]] = defaultdict(list)
        self.disturb_seq: list[int] = []
        self.disturb: list[tuple[str, str | None]] = []
        self.assigned: dict[tuple[str, str], tuple[str, ...]] = {}
        self.allocations: dict[tuple[str, str, str], tuple[frozenset[MessageQueue], tuple[str, ...],
                                                            frozenset[MessageQueue]]] = {}
        self.resolutions: Counter[str] = Counter()
        self.checked: set[str] = set()
        self.discarded: set[str] = set()
        self.end_duplicated = False
        self.attempts: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.broker_down_ms: int | None = None  # when a broker was last stopped (simulated ms)
        self.settles = 0

        self.cluster = Cluster(brokers=len(BROKERS), clock="simulated", seed=seed,
                               segment_bytes=4096, keep_events=True, wire_codec=codec,
                               **{"flush": "sync", **broker_options})
        self.cluster.events.subscribe(self._on_event)
        self.frames = 0
        if codec is not None:
            self.cluster.network.wire = self._wire(FRAME_TYPES[codec])
        for topic, queues in TOPICS.items():
            self.cluster.create_topic(topic, queues=queues)
        self.producer = self.cluster.producer("PG")
        self.txn_producer = self.cluster.transaction_producer("TPG", self._execute, self._check)
        for group, count in zip(GROUPS, (consumers0, consumers1), strict=True):
            for _ in range(count):
                self._start_consumer(group)
        # Broadcasting consumers of G2 (they stay for the whole program): what each one consumed, by client id.
        self.broadcast: dict[str, set[str]] = {}
        for _ in range(broadcasters):
            consumer = self.cluster.push_consumer(
                BROADCAST_GROUP, {BROADCAST_TOPIC: "*"}, self._broadcast_listener(len(self.broadcast)),
                consume_from_where="CONSUME_FROM_FIRST_OFFSET", message_model="BROADCASTING")
            self.broadcast[consumer.instance.client_id] = set()

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.events.unsubscribe(self._on_event)
            self.cluster.close()
            self.cluster = None

    def _wire(self, kind: int) -> Callable[[RemotingCommand], RemotingCommand]:
        """The network's frame round trip, with every frame also read by the spec's ``parse_frame``: what a 4.9.8
        peer reads must be what the far end is handed (WIRE-1..3)."""

        def carry(command: RemotingCommand) -> RemotingCommand:
            data = encode(command, kind)
            seen = decode(data[4:])[0]
            peer = remoting.parse_frame(data)
            self.frames += 1
            if isinstance(peer, remoting.Refused):
                self._violation(f"WIRE-1..3: a 4.9.8 peer refuses the frame of {command}: {peer.reason}")
            elif (peer.code, peer.language, peer.version, peer.opaque, peer.flag, peer.remark, dict(peer.ext_fields),
                  peer.body) != (seen.code, seen.language, seen.version, seen.opaque, seen.flag, seen.remark,
                                 seen.ext_fields, seen.body or b""):
                self._violation(f"WIRE-1..3: a 4.9.8 peer reads {peer}, the far end is handed {seen}")
            return seen

        return carry

    # ============================================================================================== helpers
    @property
    def seq(self) -> int:
        """The position in the event log now (the seq the next event gets)."""
        assert self.cluster is not None
        return len(self.cluster.events.events)

    def _violate(self, text: str) -> None:
        self.violations.append(f"[seq {self.seq}, t={self.cluster.now_ms() if self.cluster else 0}] {text}")

    def _disturbed(self, kind: str, group: str | None = None) -> None:
        self.disturb_seq.append(self.seq)
        self.disturb.append((kind, group))

    def _disturbance_since(self, since: int, group: str) -> str | None:
        """An allowed cause of a redelivery / an offset moving back recorded after ``since`` (for ``group``)."""
        for i in range(bisect.bisect_right(self.disturb_seq, since), len(self.disturb_seq)):
            kind, g = self.disturb[i]
            if g is None or g == group:
                return kind
        return None

    def _next_key(self) -> str:
        self.counter += 1
        return f"m{self.counter}"

    @staticmethod
    def _body(key: str) -> bytes:
        """The key, padded so that a few messages fill a commit-log segment (deletion then matters)."""
        return f"{key}|".encode() + PADDING

    @staticmethod
    def _key(body: bytes) -> str:
        return body.split(b"|", 1)[0].decode()

    def _start_consumer(self, group: str) -> None:
        assert self.cluster is not None
        consumer = self.cluster.push_consumer(
            group, dict(EXPRESSIONS[group]), self._listener(group),
            consume_from_where="CONSUME_FROM_FIRST_OFFSET", max_reconsume_times=MAX_RECONSUME,
            orderly=self.orderly[group], allocate_strategy=_Strategy(self.strategy[group], self._on_allocate))
        self.live[group].append(consumer)

    def _groups_of(self, topic: str, tags: str | None) -> list[str]:
        """The groups a message of ``topic`` tagged ``tags`` is for: subscribed, their expression selecting it."""
        return [g for g in GROUPS if topic in SUBSCRIPTIONS[g] and _selects(g, topic, tags)]

    def _broadcast_listener(self, index: int) -> Callable[[list[Any]], ConsumeStatus]:
        def listener(msgs: list[Any]) -> ConsumeStatus:
            got = list(self.broadcast.values())[index]
            got.update(msg.msg_id for msg in msgs)
            return ConsumeStatus.CONSUME_SUCCESS

        return listener

    def _broadcast_lost(self) -> list[str]:
        """Broadcasting: every acknowledged message of the topic reaches every consumer of the group, unless its data
        was deleted (OFF-17, OFF-19 with the client's local offsets)."""
        lost = []
        for sent in self.sent.values():
            if not sent.acked or sent.msg_id is None or sent.topic != BROADCAST_TOPIC:
                continue
            if sent.msg_id in self.discarded or (BROADCAST_GROUP, sent.msg_id) in self.exempt:
                continue
            for cid, got in self.broadcast.items():
                if sent.msg_id not in got:
                    lost.append(f"OFF-17 (broadcasting): acknowledged {sent.key} ({sent.how}) in {sent.topic} never "
                                f"consumed by {cid} of {BROADCAST_GROUP}")
        return lost

    # ============================================================================================== application code
    def _listener(self, group: str) -> Callable[[list[Any]], ConsumeStatus]:
        def listener(msgs: list[Any]) -> ConsumeStatus:
            try:
                return consume(msgs)
            except Exception as error:  # the implementation would take it for a failed consumption: report it
                self._violate(f"the listener of {group} raised {error!r}")
                return ConsumeStatus.RECONSUME_LATER

        def consume(msgs: list[Any]) -> ConsumeStatus:
            status = ConsumeStatus.CONSUME_SUCCESS
            for msg in msgs:
                key = self._key(msg.body)
                sent = self.sent.get(key)
                mid = msg.msg_id
                self.key_of.setdefault(mid, key)
                self.first_delivery.setdefault((group, mid), self.seq)
                if sent is None:
                    self._violate(f"{group} got a message nobody sent: {key!r}")
                elif sent.txn is not None and sent.txn.decision() is not TransactionState.COMMIT_MESSAGE:
                    self._violate(f"TXN-22: {group} got {key} whose transaction was not committed ({sent.txn})")
                elif not _selects(group, sent.topic, msg.tags):
                    self._violate(f"FILTER-2/FILTER-3: {group} subscribes {sent.topic} with "
                                  f"{EXPRESSIONS[group][sent.topic]!r} and got {key} tagged {msg.tags!r}")
                if msg.reconsume_times < self.fail_below[group]:
                    status = ConsumeStatus.RECONSUME_LATER
            if status is ConsumeStatus.CONSUME_SUCCESS:
                for msg in msgs:
                    self._consumed(group, msg.msg_id, msg.queue)
            return status

        return listener

    def _consumed(self, group: str, mid: str, queue: MessageQueue) -> None:
        previous = self.success.get((group, mid))
        if previous is None:
            self.success[(group, mid)] = self.seq
            return
        # A redelivery of a message this group already consumed: find its allowed cause. Whoever delivers it again
        # read a start offset at or below it, so after it was stored, or owned its queue together with another
        # consumer of the group (views that did not agree, REB-20).
        since = self.origin.get(mid, -1)
        cause: str | None
        if self.copies[("", mid)] > 1 or self.copies[(retry_topic(group), mid)] > self._retry_levels(group, mid):
            cause = "stored more than once"
        elif any(self._overlap_since(group, q, since) for q in (queue, self.origin_queue.get(mid))):
            # Two owners of its queue (or of its original's: each sent back a copy of it) consumed it.
            cause = "two owners"
        else:
            cause = self._disturbance_since(since, group)
        if cause is None:
            self._violate(f"OFF-17/REB-20: {group} consumed {mid} ({self.key_of.get(mid)}) again with no fault, "
                          "restart, deletion, consumer change, rebalance or second owner since it was stored")
        else:
            DUPLICATE_CAUSES[cause.split(":")[0]] += 1

    def _overlap_since(self, group: str, queue: MessageQueue | None, since: int) -> bool:
        """Whether two live consumers of ``group`` allocated ``queue`` at some moment after ``since``."""
        return any(end is None or end > since for _start, end in self.overlaps.get((group, queue), ()))

    def _update_overlaps(self, group: str) -> None:
        """Open / close the periods in which two live consumers' latest allocations share a queue."""
        owners: Counter[MessageQueue] = Counter()
        for consumer in self.live[group]:
            cid = consumer.instance.client_id
            for topic in (*SUBSCRIPTIONS[group], retry_topic(group)):
                latest = self.allocations.get((group, topic, cid))
                if latest is not None:
                    owners.update(latest[2])
        for (g, queue), periods in self.overlaps.items():
            if g == group and periods[-1][1] is None and owners[queue] <= 1:
                periods[-1][1] = self.seq
        for queue, n in owners.items():
            periods = self.overlaps.get((group, queue))
            if n > 1 and (periods is None or periods[-1][1] is not None):
                self.overlaps.setdefault((group, queue), []).append([self.seq, None])

    def _retry_levels(self, group: str, mid: str) -> int:
        return len(self.sendbacks.get((group, mid), ()))

    def _execute(self, msg: Message, arg: object) -> TransactionState:
        sent = self.sent[self._key(msg.body)]
        assert sent.txn is not None
        sent.txn.ran = True
        mid = msg.properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        if mid:
            self.key_of[mid] = sent.key
        return sent.txn.executor

    def _check(self, msg: Any) -> TransactionState:
        sent = self.sent[self._key(msg.body)]
        assert sent.txn is not None
        self.key_of.setdefault(msg.msg_id, sent.key)
        if not sent.txn.ran:
            return TransactionState.ROLLBACK_MESSAGE
        return sent.txn.decision()

    # ============================================================================================== observations
    def _on_event(self, event: Event) -> None:
        handler = _HANDLERS.get(type(event))
        if handler is None:
            return
        try:
            handler(self, event)
        except Exception as error:  # a bug of the machine itself must fail the run, not the implementation's loop
            self._violate(f"checking {event!r} raised {error!r}")

    def _on_stored(self, ev: MessageStored) -> None:
        self.copies[(ev.topic, ev.msg_id)] += 1
        if ev.topic == SCHEDULE_TOPIC:
            self.parked.setdefault(ev.msg_id, ev.ts_ms)
        elif ev.topic in TOPICS and ev.msg_id in self.parked:
            # RETRY-2 / RETRY-3: a delayed send reaches its topic no earlier than its level's delay after it was
            # parked (a level above the table's is its last, 2 h).
            sent = self.sent.get(self.key_of.get(ev.msg_id, ""))
            if sent is not None and sent.delay_level >= 1:
                table = self.cluster.delay_level_millis if self.cluster is not None else ()
                due = self.parked[ev.msg_id] + consume_retry.delay_millis(sent.delay_level, table)
                if ev.ts_ms < due:
                    self._violate(f"RETRY-3: {sent.key} (delay level {sent.delay_level}) stored in {ev.topic} "
                                  f"{due - ev.ts_ms} ms before it was due")
        if ev.topic in TOPICS:
            self.copies[("", ev.msg_id)] += 1  # copies in any user topic
            self.origin.setdefault(ev.msg_id, self.seq)
            self.origin_queue.setdefault(ev.msg_id, MessageQueue(ev.topic, ev.broker, ev.queue_id))
        self.records[ev.broker].append((ev.commit_log_offset, ev.topic, ev.msg_id))
        if ev.topic in TOPICS or ev.topic.startswith("%RETRY%"):
            self.queue_msgs[(ev.broker, ev.topic, ev.queue_id)][ev.offset] = (ev.msg_id, self.seq, ev.tags)
        if ev.topic in TOPICS:
            sent = self.sent.get(self.key_of.get(ev.msg_id, ""))
            if sent is not None and sent.txn is not None and sent.txn.decision() is not TransactionState.COMMIT_MESSAGE:
                self._violate(f"TXN-22: {sent.key} stored in {ev.topic} but its transaction was not committed")
        for group in GROUPS:
            if ev.topic == dlq_topic(group):
                self.dlq.setdefault((group, ev.msg_id), self.seq)

    def _on_sendback(self, ev: SendBack) -> None:
        if ev.via != "local":
            self.sendbacks[(ev.group, ev.msg_id)].append(self.seq)

    def _on_commit(self, ev: OffsetCommit) -> None:
        """OFF-17: the committed offset passes only handled messages; OFF-8 / PULL-22: it moves back only after an
        allowed correction."""
        if ev.group == BROADCAST_GROUP:
            self._violate(f"OFF-9/OFF-17: broadcasting group {ev.group} committed {ev.offset} of {ev.topic} to "
                          f"{ev.broker}; its offsets are the clients' own")
        if ev.group not in GROUPS:
            return
        key = (ev.group, ev.broker, ev.topic, ev.queue_id)
        history = self.commit_history[key]
        if ev.previous is not None and ev.offset < ev.previous:
            # The lower value can only be stale: written by a consumer that read its start offset while the
            # committed offset was at most this value. That period began when the offset last rose above it.
            i = len(history)
            while i > 0 and history[i - 1][1] > ev.offset:
                i -= 1
            while i > 0 and history[i - 1][1] <= ev.offset:
                i -= 1
            since = history[i - 1][0] if i > 0 else -1
            queue = MessageQueue(ev.topic, ev.broker, ev.queue_id)
            cause = "two owners" if self._overlap_since(ev.group, queue, since) else self._disturbance_since(
                since, ev.group)
            if cause is None:
                self._violate(f"OFF-8/PULL-22: {ev.group} offset of {ev.broker}:{ev.topic}:{ev.queue_id} moved back "
                              f"{ev.previous} -> {ev.offset} with no correction, rebalance, second owner, fault or "
                              "restart")
        history.append((self.seq, ev.offset))
        start = self.verified.get(key, 0)
        if ev.offset <= start:
            return
        stored = self.queue_msgs.get((ev.broker, ev.topic, ev.queue_id), {})
        retry = ev.topic == retry_topic(ev.group)
        for offset in range(start, ev.offset):
            entry = stored.get(offset)
            if entry is None:
                continue  # not a message of this run (or not stored yet: the offset runs ahead of nothing)
            mid, stored_seq, tags = entry
            g = ev.group
            handled = (
                (g, mid) in self.success or (g, mid) in self.dlq or (g, mid) in self.exempt
                or (not retry and not _selects(g, ev.topic, tags))  # filtered out: not the group's to consume
                or any(s > stored_seq or not retry for s in self.sendbacks.get((g, mid), ()))
            )
            if not handled:
                self._violate(f"OFF-17: {g} committed {ev.offset} on {ev.broker}:{ev.topic}:{ev.queue_id} past "
                              f"offset {offset} ({mid}, {self.key_of.get(mid)}), neither consumed nor sent back")
        self.verified[key] = ev.offset

    def _on_pull(self, ev: PullResponseEvent) -> None:
        """PULL-2..5, PULL-10, PULL-25 on every pull a broker answers."""
        if ev.node not in BROKERS:
            if ev.status == "OFFSET_ILLEGAL":
                self._disturbed("offset-illegal", ev.group)
            return
        if ev.status not in GetMessageStatus.__members__:
            return  # a check failed before the store (PULL-16, PULL-17)
        status = GetMessageStatus[ev.status]
        expected = pull_correction.response_code(status, requested_offset=ev.offset, suspend=False).code
        if ev.code != expected:
            self._violate(f"PULL-10: {ev.status} at {ev.offset} answered {ev.code}, spec {expected}")
        if ev.min_offset is None or ev.max_offset is None or ev.next_offset is None:
            return
        if status is not GetMessageStatus.NO_MATCHED_LOGIC_QUEUE:
            decision = pull_correction.bounds_decision(ev.offset, ev.min_offset, ev.max_offset)
            if decision is not None and status is not GetMessageStatus.OFFSET_FOUND_NULL:
                if (decision.status, decision.next_begin_offset) != (status, ev.next_offset):
                    self._violate(f"PULL-2..5: pull at {ev.offset} of [{ev.min_offset}, {ev.max_offset}] answered "
                                  f"{status.name} next {ev.next_offset}, spec {decision}")
            if not ev.min_offset <= ev.next_offset <= ev.max_offset:
                self._violate(f"PULL-25: next offset {ev.next_offset} outside [{ev.min_offset}, {ev.max_offset}]")
        if status is GetMessageStatus.FOUND and ev.next_offset <= ev.offset:
            self._violate(f"PULL-25: FOUND at {ev.offset} with next offset {ev.next_offset}")

    def _on_assign(self, ev: RebalanceAssign) -> None:
        if ev.group not in GROUPS:
            return
        key = (ev.node, ev.topic)
        if self.assigned.get(key) != ev.queues:
            self.assigned[key] = ev.queues
            self._disturbed("rebalance", ev.group)

    def _on_allocate(self, strategy: str, group: str, cid: str, queues: tuple[MessageQueue, ...],
                     cids: tuple[str, ...], result: list[MessageQueue]) -> None:
        try:
            self._check_allocation(strategy, group, cid, queues, cids, result)
        except Exception as error:  # never into the implementation: it would take the error for the strategy's
            self._violate(f"checking the allocation of {cid} raised {error!r}")

    def _check_allocation(self, strategy: str, group: str, cid: str, queues: tuple[MessageQueue, ...],
                          cids: tuple[str, ...], result: list[MessageQueue]) -> None:
        """REB-1..5: the implementation's allocation is the spec's on the same inputs."""
        expected = spec_rebalance.allocate(strategy, cid, queues, cids)
        if sorted(result) != sorted(expected) or len(result) != len(set(result)):
            self._violate(f"REB-1/REB-3: {strategy} gave {cid} {sorted(result)} of {sorted(queues)} with {cids}; "
                          f"spec {sorted(expected)}")
        if queues:
            self.allocations[(group, queues[0].topic, cid)] = (frozenset(queues), tuple(sorted(cids)),
                                                               frozenset(result))
            self._update_overlaps(group)

    def _on_attempt(self, ev: SendAttempt) -> None:
        """SEND-1: attempts per send; SEND-8 / SEND-13: a retry avoids the broker that failed."""
        if ev.group not in ("PG", "TPG"):
            return
        brokers = self.attempts[(ev.group, ev.msg_id)]
        brokers.append(ev.broker)
        mode = CommunicationMode[ev.mode] if ev.mode in CommunicationMode.__members__ else CommunicationMode.SYNC
        if len(brokers) > send_retry.attempt_limit(mode):
            self._violate(f"SEND-1: {ev.msg_id} sent {len(brokers)} times in {ev.mode}")
        # A route may list one writable broker for a while after a broker went down or a topic was reshaped.
        recent_down = any(t is not None and ev.ts_ms - t <= ROUTE_STALE_MS
                          for t in (self.broker_down_ms, self.reshaped_ms))
        if len(brokers) >= 2 and brokers[-1] == brokers[-2] and not recent_down:
            self._violate(f"SEND-13: retry of {ev.msg_id} went to {ev.broker} again with both brokers up")

    def _on_txn_end(self, ev: TxnEnd) -> None:
        """TXN-11/TXN-25: resolved at most once unless duplicated or re-appended; TXN-22: only commits commit."""
        if ev.node not in BROKERS or ev.result not in ("COMMITTED", "ROLLED_BACK"):
            return
        self.resolutions[ev.msg_id] += 1
        if self.resolutions[ev.msg_id] > 1 and not self.end_duplicated and ev.msg_id not in self.checked:
            self._violate(f"TXN-25: transaction {ev.msg_id} resolved {self.resolutions[ev.msg_id]} times with no "
                          "duplicated END_TRANSACTION and no check")
        sent = self.sent.get(self.key_of.get(ev.msg_id, ""))
        if ev.result == "COMMITTED" and sent is not None and sent.txn is not None \
                and sent.txn.decision() is not TransactionState.COMMIT_MESSAGE:
            self._violate(f"TXN-22: {sent.key} committed by the broker; the producer decided {sent.txn.decision()}")

    def _on_txn_check(self, ev: TxnCheck) -> None:
        if ev.action == "check":
            self.checked.add(ev.msg_id)
        elif ev.action == "discard":
            self.discarded.add(ev.msg_id)

    def _on_fault(self, ev: FaultInject) -> None:
        self._disturbed(f"fault:{ev.action}", None)
        if ev.code == RequestCode.END_TRANSACTION and ev.action == "duplicate":
            self.end_duplicated = True

    def _on_lifecycle(self, ev: ClientLifecycle) -> None:
        if ev.group in GROUPS:
            self._disturbed(f"consumer-{ev.action}", ev.group)

    # ============================================================================================== rules: sending
    @rule(topic=st.sampled_from(sorted(TOPICS)), mode=st.sampled_from(("sync", "async", "batch")),
          delay_level=st.sampled_from((0, 0, 0, 1, 3, 7, 18, 20)), count=st.integers(1, 3),
          first_fails=st.sampled_from((False, False, True)), tags=st.sampled_from(TAGS))
    def send(self, topic: str, mode: str, delay_level: int, count: int, first_fails: bool, tags: str) -> None:
        """``count`` plain sends: SYNC, ASYNC (acknowledged when the callback sees SEND_OK) or one batch of
        ``count``; sync and async sends carry ``delay_level`` (RETRY-2, RETRY-3; a batch has none). With
        ``first_fails`` the producer's next attempt gets SYSTEM_ERROR (retried in SYNC, SEND-4; ends an ASYNC send,
        SEND-7)."""
        assert self.cluster is not None
        if first_fails:
            self.cluster.faults.fail("*", "SEND_MESSAGE", code="SYSTEM_ERROR", times=1,
                                     client=self.producer.client_id)
        if mode == "batch":
            msgs = [Message(topic, self._body(self._next_key()), tags=tags) for _ in range(count)]
            for m in msgs:
                key = self._key(m.body)
                self.sent[key] = _Sent(key, topic, "batch", tags=tags)
            try:
                result = self.producer.send_batch(msgs)
            except _SEND_ERRORS:
                return
            for m in msgs:
                self._acked(self._key(m.body), m.properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
                            result.status)
            return
        if self.cluster.delay_level_millis == DELAY_LEVEL_MILLIS:
            delay_level = min(delay_level, 4)  # 30 s: the default table's higher levels would simulate hours
        for _ in range(count):
            key = self._next_key()
            msg = Message(topic, self._body(key), delay_level=delay_level, tags=tags)
            self.sent[key] = _Sent(key, topic, f"{mode}/delay{delay_level}", tags=tags, delay_level=delay_level)
            if mode == "sync":
                try:
                    result = self.producer.send(msg)
                except _SEND_ERRORS:
                    continue
                self._acked(key, result.msg_id, result.status)
            else:
                self.producer.send_async(msg, self._async_callback(key))

    def _async_callback(self, key: str) -> Callable[[Any, BaseException | None], None]:
        def callback(result: Any, error: BaseException | None) -> None:
            if error is None and result is not None:
                self._acked(key, result.msg_id, result.status)

        return callback

    def _acked(self, key: str, mid: str | None, status: SendStatus) -> None:
        sent = self.sent[key]
        if mid:
            sent.msg_id = mid
            self.key_of[mid] = key
        sent.acked = status is SendStatus.SEND_OK and mid is not None

    @rule(topic=st.sampled_from(sorted(TOPICS)),
          executor=st.sampled_from((TransactionState.COMMIT_MESSAGE, TransactionState.ROLLBACK_MESSAGE,
                                    TransactionState.UNKNOW)),
          check=st.sampled_from((TransactionState.COMMIT_MESSAGE, TransactionState.ROLLBACK_MESSAGE,
                                 TransactionState.UNKNOW)))
    def send_transaction(self, topic: str, executor: TransactionState, check: TransactionState) -> None:
        """A transactional send: the local transaction answers ``executor``; if UNKNOW, the check-back answers
        ``check`` (TXN-4, TXN-19, TXN-21); a committed one is acknowledged."""
        key = self._next_key()
        txn = _Txn(executor, check)
        self.sent[key] = _Sent(key, topic, "txn", txn=txn)
        try:
            result = self.txn_producer.send_in_transaction(Message(topic, self._body(key)))
        except _SEND_ERRORS:
            return
        self.key_of[result.msg_id] = key
        self.sent[key].msg_id = result.msg_id
        self.sent[key].acked = result.status is SendStatus.SEND_OK and txn.decision() is TransactionState.COMMIT_MESSAGE

    # ============================================================================================== rules: consumers
    @rule(group=st.sampled_from(GROUPS), fail_below=st.integers(0, MAX_RECONSUME + 1))
    def listener_outcome(self, group: str, fail_below: int) -> None:
        """From now on ``group``'s listener answers RECONSUME_LATER to deliveries with reconsumeTimes below
        ``fail_below`` (RETRY-13): 0 consumes everything, MAX_RECONSUME + 1 sends everything to the DLQ."""
        self.fail_below[group] = fail_below

    @precondition(lambda self: any(len(v) < MAX_CONSUMERS for v in self.live.values()))
    @rule(group=st.sampled_from(GROUPS))
    def join(self, group: str) -> None:
        """A consumer of ``group`` starts (REB: every consumer rebalances)."""
        if len(self.live[group]) < MAX_CONSUMERS:
            self._start_consumer(group)

    @precondition(lambda self: any(self.live.values()))
    @rule(group=st.sampled_from(GROUPS), index=st.integers(0, MAX_CONSUMERS - 1), crash=st.booleans())
    def leave(self, group: str, index: int, crash: bool) -> None:
        """A consumer of ``group`` shuts down (offsets persisted, REB-23) or crashes (nothing persisted)."""
        assert self.cluster is not None
        if not self.live[group]:
            return
        consumer = self.live[group].pop(index % len(self.live[group]))
        if crash:
            self._disturbed("consumer-crash", group)
            self.cluster.crash_client(consumer)
        else:
            consumer.shutdown()
        self._update_overlaps(group)

    # ============================================================================================== rules: brokers
    @rule(broker=st.sampled_from(BROKERS), down_ms=st.sampled_from((0, 0, 5_000, 40_000)))
    def crash_restart(self, broker: str, down_ms: int) -> None:
        """``broker`` crashes (flush sync: every acknowledged message is on its disk) and starts again after
        ``down_ms``."""
        assert self.cluster is not None
        self._disturbed("broker-restart")
        self.broker_down_ms = self.cluster.now_ms()
        self.cluster.stop_broker(broker, crash=True)
        if down_ms:
            self.cluster.advance(down_ms)
        self.cluster.start_broker(broker)
        self.broker_down_ms = self.cluster.now_ms()
        self._disturbed("broker-restart")

    @rule(topic=st.sampled_from(sorted(TOPICS)), broker=st.sampled_from(BROKERS),
          shape=st.sampled_from(("more_write", "more_read", "read_only", "write_only")))
    def reshape_topic(self, topic: str, broker: str, shape: str) -> None:
        """An admin changes the topic on one broker: more write than read queues (producers fill a queue consumers
        do not read yet), more read than write queues, read-only (producers go to the other broker or fail) or
        write-only (consumers drop the broker's queues). ``settle`` gives it read-write queues enough for every queue
        written, so what was stored there is due again."""
        assert self.cluster is not None
        config = self.cluster.broker(broker).topics.get(topic)
        if config is None:
            return
        n = max(config.read_queue_nums, config.write_queue_nums)
        read, write, perm = {"more_write": (n, n + 1, DEFAULT_PERM), "more_read": (n + 1, n, DEFAULT_PERM),
                             "read_only": (n, n, PERM_READ), "write_only": (n, n, PERM_WRITE)}[shape]
        self.cluster.create_topic(topic, read_queues=read, write_queues=write, perm=perm, brokers=[broker])
        self.reshaped[(topic, broker)] = max(read, write, self.reshaped.get((topic, broker), 0))
        self.reshaped_ms = self.cluster.now_ms()
        self._disturbed("topic-reshaped")

    def _restore_topics(self) -> None:
        """settle: every reshaped topic back to read-write, as many read as write queues, none fewer than ever."""
        assert self.cluster is not None
        for (topic, broker), n in sorted(self.reshaped.items()):
            self.cluster.create_topic(topic, read_queues=n, write_queues=n, perm=DEFAULT_PERM, brokers=[broker])
            self.reshaped_ms = self.cluster.now_ms()
        self.reshaped.clear()

    @rule(broker=st.sampled_from(BROKERS), segments=st.integers(1, 2))
    def delete_old_data(self, broker: str, segments: int) -> None:
        """The oldest commit-log segments of ``broker`` are deleted: what they held may be lost to groups that had
        not consumed it (PULL-3, PULL-6), and consumers behind correct their offsets."""
        assert self.cluster is not None
        deleted = self.cluster.delete_old_data(broker, segments)
        if not deleted:
            return
        self._disturbed("delete-old-data")
        low = self.cluster.broker(broker).store.commit_log_min_offset()
        kept = []
        for clo, topic, mid in self.records[broker]:
            if clo >= low:
                kept.append((clo, topic, mid))
                continue
            groups = [g for g in GROUPS if topic in (retry_topic(g), dlq_topic(g))]
            if not groups and (topic in TOPICS or topic in (SCHEDULE_TOPIC, TRANS_HALF_TOPIC)):
                groups = [*GROUPS, BROADCAST_GROUP]
            for g in groups:
                self.exempt.setdefault((g, mid), f"deleted from {topic} on {broker}")
        self.records[broker] = kept

    # ============================================================================================== rules: faults, time
    @rule(kind=st.sampled_from(FAULT_KINDS), node=st.sampled_from(("*", *BROKERS)),
          request=st.sampled_from(FAULT_REQUESTS), times=st.integers(1, 3))
    def fault(self, kind: str, node: str, request: str, times: int) -> None:
        """The next ``times`` ``request``s to ``node`` fail (SYSTEM_ERROR / SYSTEM_BUSY), are lost, lose their
        response, or are delivered twice."""
        assert self.cluster is not None
        faults = self.cluster.faults
        if kind == "fail":
            faults.fail(node, request, code="SYSTEM_ERROR", times=times)
        elif kind == "fail_busy":
            faults.fail(node, request, code="SYSTEM_BUSY", times=times)
        elif kind == "drop":
            faults.drop(node, request, times=times)
        elif kind == "drop_response":
            faults.drop(node, request, times=times, response=True)
        else:
            faults.duplicate(node, request, times=times)

    @rule(ms=st.sampled_from((100, 1_000, 5_000, 20_000, 60_000)))
    def time_passes(self, ms: int) -> None:
        """Simulated time passes: deliveries, retries, delayed messages, checks, rebalances."""
        assert self.cluster is not None
        self.cluster.advance(ms)

    @rule()
    def settle(self) -> None:
        """Faults cleared and every group given a live consumer, the cluster runs until idle and rebalances settle;
        then nothing acknowledged is lost and each live consumer owns exactly its allocation."""
        assert self.cluster is not None
        self.settles += 1
        self.cluster.faults.clear()
        self._restore_topics()
        for group in GROUPS:
            if not self.live[group]:
                self._start_consumer(group)
        problems: list[str] = []
        for _round in range(SETTLE_ROUNDS):
            try:
                self.cluster.run_until_idle(SETTLE_LIMIT_MS)
            except NotIdle as error:
                self._violate(f"liveness: {error}")
                return
            problems = self._assignment_problems() + self._lost() + self._broadcast_lost()
            if not problems:
                break
            # Idle is not settled yet: a restarted broker learns its consumers at their next heartbeat (30 s) and
            # a consumer retries a failed pull after 3 s, both on daemon timers run_until_idle does not wait for.
            self.cluster.advance(SETTLE_ROUND_MS)
        for problem in problems:
            self._violate(problem)

    def _route_queues(self, topic: str) -> set[MessageQueue]:
        assert self.cluster is not None
        queues = set()
        for name, broker in self.cluster.brokers.items():
            config = broker.topics.get(topic)
            if config is not None and config.perm & PERM_READ:
                queues |= {MessageQueue(topic, name, q) for q in range(config.read_queue_nums)}
        return queues

    def _assignment_problems(self) -> list[str]:
        """REB-20 / REB-21 after settling: views agree with the brokers and each consumer owns its allocation."""
        problems = []
        for group in GROUPS:
            live = self.live[group]
            cids = sorted(c.instance.client_id for c in live)
            for topic in (*SUBSCRIPTIONS[group], retry_topic(group)):
                view = self._route_queues(topic)
                owners: Counter[MessageQueue] = Counter()
                for consumer in live:
                    seen = set(consumer.rebalance.topic_subscribe_info.get(topic, ()))
                    if seen != view:
                        problems.append(f"REB-20: {consumer.instance.client_id} sees {sorted(seen)} of {topic}, the "
                                        f"brokers serve {sorted(view)}")
                        continue
                    owned = {mq for mq, pq in consumer.rebalance.process_queue_table.items()
                             if mq.topic == topic and not pq.dropped}
                    owners.update(owned)
                    expected = set(spec_rebalance.allocate(self.strategy[group], consumer.instance.client_id,
                                                           sorted(view), cids)) if view else set()
                    if owned != expected:
                        problems.append(f"REB-20: {consumer.instance.client_id} owns {sorted(owned)} of {topic}; "
                                        f"allocation {sorted(expected)} with {cids}")
                if live and not problems and view and set(owners) != view:
                    problems.append(f"REB-20: queues of {topic} without an owner in {group}: "
                                    f"{sorted(view - set(owners))}")
        return problems

    def _lost(self) -> list[str]:
        """OFF-17 / OFF-19 / RETRY-7 / TXN-22: every acknowledged message consumed by each subscribed group, in its
        DLQ, or exempt (its data deleted, its half message discarded)."""
        lost = []
        for sent in self.sent.values():
            if not sent.acked or sent.msg_id is None:
                continue
            mid = sent.msg_id
            if mid in self.discarded:
                continue
            for group in self._groups_of(sent.topic, sent.tags):
                key = (group, mid)
                if key in self.success or key in self.dlq or key in self.exempt:
                    continue
                lost.append(f"OFF-17 (no loss): acknowledged {sent.key} ({sent.how}, {mid}) in {sent.topic} never "
                            f"consumed by {group} nor in its DLQ (listener fails below {self.fail_below[group]})")
        return lost

    # ============================================================================================== invariants
    @invariant()
    def implementation_transitions_allowed(self) -> None:
        """Every transition observed since the last step is one the spec allows (see the module docstring)."""
        if self.violations:
            raise AssertionError("\n".join(self.violations[:5]))

    @invariant()
    def no_queue_with_two_owners_once_views_agree(self) -> None:
        """REB-20: when every live consumer of a group last allocated from the same queues and the ids of exactly
        the live consumers, the allocations partition the queues."""
        if self.cluster is None:
            return
        for group in GROUPS:
            cids = tuple(sorted(c.instance.client_id for c in self.live[group]))
            if not cids:
                continue
            for topic in (*SUBSCRIPTIONS[group], retry_topic(group)):
                latest = [self.allocations.get((group, topic, cid)) for cid in cids]
                if any(a is None for a in latest):
                    continue
                views = {(a[0], a[1]) for a in latest if a is not None}
                if len(views) != 1:
                    continue
                queues, ids = views.pop()
                if ids != cids:
                    continue
                owned = Counter(q for a in latest if a is not None for q in a[2])
                if set(owned) != set(queues) or any(n > 1 for n in owned.values()):
                    raise AssertionError(f"REB-20: {group} agrees on {sorted(queues)} and {cids} but owns {owned}")


_HANDLERS: dict[type, Callable[[SystemMachine, Any], None]] = {
    MessageStored: SystemMachine._on_stored,
    SendBack: SystemMachine._on_sendback,
    OffsetCommit: SystemMachine._on_commit,
    PullResponseEvent: SystemMachine._on_pull,
    RebalanceAssign: SystemMachine._on_assign,
    SendAttempt: SystemMachine._on_attempt,
    TxnEnd: SystemMachine._on_txn_end,
    TxnCheck: SystemMachine._on_txn_check,
    FaultInject: SystemMachine._on_fault,
    ClientLifecycle: SystemMachine._on_lifecycle,
}

CI_EXAMPLES, CI_STEPS = 100, 40
SystemMachine.TestCase.settings = stateful_settings(CI_EXAMPLES, CI_STEPS)
TestSystem = SystemMachine.TestCase


# ================================================================================================== findings
def test_deleting_segments_then_crashing_keeps_queue_offsets() -> None:
    """Found by the system machine: segments deleted before the periodic flush took the only source of their
    messages' consume-queue entries; a crash then lost those entries, the queue's max offset fell back and new
    messages got offsets consumers had already committed past (lost to them, OFF-17). The store now flushes the
    consume queues before deleting segments, as RocketMQ's mapped consume queues survive a process crash."""
    with Cluster(brokers=1, seed=3, flush="sync", segment_bytes=4096) as cluster:
        cluster.create_topic("T", queues=1)
        cluster.create_topic("U", queues=1)
        producer = cluster.producer("PG")
        for _ in range(6):
            producer.send(Message("T", PADDING))
        for _ in range(20):  # fill later segments, so that every message of T is in one that goes
            producer.send(Message("U", PADDING))
        assert cluster.delete_old_data("broker-a", segments=10) >= 1
        cluster.restart_broker("broker-a", crash=True)
        assert cluster.broker("broker-a").store.max_offset("T", 0) == 6
        assert producer.send(Message("T", b"new")).queue_offset == 6


# ================================================================================================== sensitivity
MUTANT_EXAMPLES, MUTANT_STEPS = 150, 30


@pytest.mark.parametrize(
    ("module", "old", "new", "clause"),
    [
        pytest.param(refimpl_allocate, "elif mod > 0 and index < mod:", "elif mod > 0 and index <= mod:", "REB-",
                     id="allocation-off-by-one"),
        pytest.param(refimpl_transaction, "if header.commit_or_rollback == TRANSACTION_ROLLBACK_TYPE:",
                     "if header.commit_or_rollback == -1:", "TXN-22", id="rolled-back-half-committed"),
        pytest.param(refimpl_consume_service, "            ack_index = -1\n",
                     "            ack_index = len(msgs) - 1\n", "OFF-17", id="failed-message-acknowledged"),
        pytest.param(refimpl_latency, "if mq.broker_name != last_broker:", "if mq.broker_name == last_broker:",
                     "SEND-13", id="retry-to-the-same-broker"),
        pytest.param(refimpl_consumer_config, "data.code_set.add(java_string_hash(trimmed))",
                     "data.code_set.add(java_string_hash(trimmed) & 0xFFFFFFFF)", "OFF-17",
                     id="negative-tag-hash-unsigned-in-the-subscription"),
        pytest.param(refimpl_push_consumer, "if self.config.message_model is MessageModel.BROADCASTING:\n"
                     "            self.offset_store = LocalFileOffsetStore(",
                     "if self.config.message_model is None:\n            self.offset_store = LocalFileOffsetStore(",
                     "OFF-9", id="broadcasting-offsets-committed-to-the-broker"),
        pytest.param(refimpl_rebalance,
                     "        if self.message_model is MessageModel.BROADCASTING:\n            if mq_set",
                     "        if self.message_model is None:\n            if mq_set", "OFF-17",
                     id="broadcasting-queues-shared-like-clustering"),
        pytest.param(refimpl_store_records, "level = min(int(text), len(delays))",
                     "level = min(int(text), len(delays) - 1)", "RETRY-3", id="top-delay-level-clamped-one-too-low"),
    ],
)
def test_system_machine_catches_mutant(module: Any, old: str, new: str, clause: str) -> None:
    """A deliberately broken rule of the implementation makes the system machine fail, naming the clause."""
    with refimpl_mutant(module, old, new):
        failure = hypothesis_finds_failure(SystemMachine, MUTANT_EXAMPLES, MUTANT_STEPS)
    assert clause in str(failure), str(failure)
