"""Lockstep: the pull-correction spec (PULL-*) drives the reference implementation's store, broker and consumers.

Each run draws its configuration (``tests/dimensions.py``): the consumer's kind (DefaultMQPushConsumer or
DefaultLitePullConsumer), pullBatchSize, consumeFromWhere (with consumeTimestamp: before the first message, among
them, past the last), the topic's read and write queue counts and its permission; the run also draws the tag
subscription, whether a lite pull consumer subscribes or is assigned its queues (one past readQueueNums when the
topic has more write queues) and whether it auto commits. The spec's ``PullState`` starts from that configuration.

The broker has small commit-log segments and consume-queue files, so that deleting old data moves queue minimums
and leaves queues whose files are gone. Rules send tagged messages (to the topic's queues and to the group's
%RETRY% queue), delete the oldest segments, let time pass, reset the group's committed offset anywhere, pull at
arbitrary offsets from another client (no suspension, with or without the subscription and commit flags, queue ids
the topic does not have), start consumers (of the same group again, or of a new one), stop or crash them, restart
the broker, and poll, commit and seek a lite pull consumer.

What the implementation does is read off it in order (``pull_hooks.Recorder``) and stepped as spec actions, each of
which must be enabled where the spec is: a message stored (``Append``), the broker's processing of each pull (its
checks and store decision, the code, next offset, min and max it answers, held or not: ``Pull``, ``Wake``,
``HoldTimeout``, ``RawPull``), the consumer's pulls and its reaction to each answer (``PullSent``, ``Answered``),
messages consumed, offsets sent and committed, rebalances and the queues they add with their start offsets,
lite pull tasks, the OFFSET_ILLEGAL fix; the time between two of them is ``TimePasses``, which the spec refuses
past a due pull, fix, wake-up or hold timeout. After every rule the projections must agree: each queue's min, max,
first readable offset and first consume-queue file; the committed offsets of the group and of the raw puller; the
group's registration; each queue's process queue, pull offset, offset-store entry (lite pull: consume and seek
offsets) and held pulls; the messages delivered, in order; the lite pull consume requests.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import pytest
from dimensions import TOPIC_PERMS
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from lockstep import LockstepMachine, machine_test, variant_caught, variant_needs
from pull_hooks import Obs, Recorder, store_view

from rocketspec.refimpl import Cluster, ConsumeStatus, Message, MQClientError
from rocketspec.refimpl.broker import pull as pull_module
from rocketspec.refimpl.client import lite_pull_consumer as lite_module
from rocketspec.refimpl.client import push_consumer as push_consumer_module
from rocketspec.refimpl.client.config import ClientConfig
from rocketspec.refimpl.client.consumer_config import ConsumerConfig
from rocketspec.refimpl.client.instance import ClientInstance
from rocketspec.refimpl.client.lite_pull_consumer import LitePullConsumer
from rocketspec.refimpl.client.push_consumer import PushConsumer
from rocketspec.refimpl.message import decode_stored_messages
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.runtime import SIMULATED_EPOCH_MS, NotIdle
from rocketspec.refimpl.store import flush as flush_module
from rocketspec.refimpl.store import reading as store_reading
from rocketspec.refimpl.store.commit_log import COMMITLOG_DIR
from rocketspec.refimpl.store.consume_queue import _CQ_ENTRY as CQ_ENTRY
from rocketspec.refimpl.store.consume_queue import CONSUME_QUEUE_DIR
from rocketspec.spec import pull_correction as spec
from rocketspec.spec.protocol import (
    CONSUME_TIMESTAMP_DEFAULT_LAG_MS,
    LITE_PULL_BROKER_SUSPEND_MAX_TIME_MS,
    PULL_FLAG_COMMIT_OFFSET,
    PULL_FLAG_SUBSCRIPTION,
    ConsumeFromWhere,
    GetMessageStatus,
    RequestCode,
    ResponseCode,
    retry_topic,
)
from rocketspec.spec.queues import MessageQueue

TOPIC = "T"
BROKER = "broker-a"
RAW_GROUP = "RAW"
TAGS = ("A", "B", "C")
EXPRESSIONS: dict[str, spec.Subscription] = {"*": None, "A || B": frozenset({"A", "B"})}
RAW_EXPRESSIONS = ("*", "A", "B || C", "a > 1", "a >", "")
# SQL92 subscriptions (served only with enablePropertyFilter): whether FilterAPI.build takes them. It does not compile
# them (ConsumerFilterManager.build only logs a failure): only an empty one is SUBSCRIPTION_PARSE_FAILED.
SQL_EXPRESSIONS = {"a > 1": True, "a >": True, "": False}
RAW_GROUPS = ("raw", "consumer", "missing topic")
MISSING_TOPIC = "NOPE"
SEGMENT_BYTES = 4096
FILE_RESERVED_MS = 60_000  # commit-log segments a minute old are expired
CQ_FILE_ENTRIES = 4
BODY = b"x" * 300  # about ten messages per commit-log segment
WAITS = (1, 10, 500, 1_000, 5_000, 10_000, 20_000)
WHERE = ("below_min", "min", "in_range", "max", "beyond_max", "zero")
# What a crash may leave past the flushed bytes (PullCorrectionMachine._tear); None: nothing.
TORN = (None, None, "partial", "crc", "prealloc", "cq_partial", "cq_dirty", "cq_zeros", "cq_stray")
G = GetMessageStatus
# consumeTimestamp values around the run's messages (stored from the simulated epoch on): before all of them, among
# the first ones, past all of them; None is the default, half an hour before the consumer starts.
TIMESTAMPS = (SIMULATED_EPOCH_MS - 3_600_000, SIMULATED_EPOCH_MS + 40, SIMULATED_EPOCH_MS + 10**9)
FROM_WHERE = st.sampled_from([
    (ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, None), (ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, None),
    (ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, None),
    *((ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, t) for t in TIMESTAMPS),
])

# The parts of the projection, each named with the clauses that decide it.
STORE = "each queue: min, max, first readable offset, first consume-queue file (PULL-1 to PULL-9, PULL-38, PULL-42)"
COMMITTED = "the group's committed offsets (PULL-18, PULL-22, PULL-24, PULL-35, PULL-39)"
RAW = "the raw puller's committed offsets (PULL-18)"
REGISTERED = "the group's subscription registered at the broker (PULL-17, PULL-38, PULL-39)"
QUEUES = "each queue: process queue, pull offset, offset store, lite consume and seek offsets (PULL-20 to PULL-24, " \
    "PULL-28 to PULL-32, PULL-34, PULL-36)"
HELD = "the pulls the broker holds, per queue (PULL-13, PULL-14, PULL-15)"
DELIVERED = "the messages delivered, per queue (PULL-20, PULL-27, PULL-34)"
STORED = "the messages stored, per queue: offset, tag, store time (PULL-1 to PULL-9, PULL-30, PULL-42)"
CACHE = "the lite pull consume requests (PULL-32, PULL-34, PULL-36)"


def _subscription(expression: str | None) -> spec.Subscription:
    if expression is None or expression.strip() in ("", "*"):
        return None
    return frozenset(t.strip() for t in expression.split("||"))


def _listener(msgs: list[Any]) -> ConsumeStatus:
    """Messages tagged C fail once (sent back to the %RETRY% queue, PULL-37); everything else is consumed."""
    if any(m.tags == "C" and m.reconsume_times == 0 for m in msgs):
        return ConsumeStatus.RECONSUME_LATER
    return ConsumeStatus.CONSUME_SUCCESS


def _status_clause(status: GetMessageStatus | None) -> str:
    return {None: "PULL-16/PULL-17", G.NO_MATCHED_LOGIC_QUEUE: "PULL-1", G.NO_MESSAGE_IN_QUEUE: "PULL-2",
            G.OFFSET_TOO_SMALL: "PULL-3", G.OFFSET_OVERFLOW_ONE: "PULL-4", G.OFFSET_OVERFLOW_BADLY: "PULL-5",
            G.OFFSET_FOUND_NULL: "PULL-6"}.get(status, "PULL-8/PULL-9")


class PullCorrectionMachine(LockstepMachine):
    """One broker's queues of one topic, a consumer (push or lite pull) and a raw puller, configured as the run draws,
    stepped with the spec's pull machine (PULL-1..39)."""

    TABLE = spec.TRANSITIONS
    DIMENSIONS = ("consumer.pullBatchSize", "consumer.kind", "consumer.consumeFromWhere", "topic.queueNums",
                  "topic.perm", "broker.flushDiskType")
    # A read-only or write-only topic leaves the consumer nothing to do: drawn one time in five each.
    VALUES: ClassVar[dict[str, st.SearchStrategy[Any]]] = {
        "consumer.consumeFromWhere": FROM_WHERE,
        "topic.perm": st.sampled_from((TOPIC_PERMS[0],) * 3 + TOPIC_PERMS[1:])}
    DRIVEN = (spec.BrokerRestart, spec.ConsumerStarts, spec.ConsumerStops, spec.Poll, spec.Commit, spec.PauseQueue,
              spec.Suspend, spec.TimePasses)
    OBSERVED = (spec.Append, spec.DeleteCommitLog, spec.DeleteConsumeQueueFile, spec.CorrectMinOffset,
                spec.OffsetReset, spec.Heartbeat, spec.Unregistered, spec.Rebalance, spec.Assign, spec.PullSent,
                spec.Pull, spec.Wake, spec.HoldTimeout, spec.Answered, spec.Consume, spec.PersistSent, spec.Persist,
                spec.DelayedFix, spec.QueueRemoved, spec.Seek, spec.RawPull, spec.QueueDestroyed, spec.Flushed,
                spec.OffsetsPersisted)

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.consumer: Any = None
        self.group = ""
        self.groups = 0
        self.clock = 0
        self.spec_delivered: dict[int, list[int]] = {}
        self.system_delivered: dict[int, list[int]] = {}
        self.sent_back: set[tuple[int, int]] = set()

    # ------------------------------------------------------------------------------------------------ setup
    def setup(self, config: dict[str, Any], data: st.DataObject) -> None:
        """A cluster of one broker and the topic as configured, a producer, a raw puller and a consumer."""
        read, write = config["topic.queueNums"]
        perm = config["topic.perm"]
        lite = config["consumer.kind"] == "litePull"
        where, timestamp = config["consumer.consumeFromWhere"]
        self.expression = data.draw(st.sampled_from(sorted(EXPRESSIONS)), label="subscription")
        assign: tuple[int, ...] | None = None
        if lite and data.draw(st.booleans(), label="the lite pull consumer is assigned its queues"):
            assign = tuple(range(read)) + ((read,) if write > read else ())
        auto_commit = data.draw(st.booleans(), label="autoCommit") if lite else True
        self.timestamp = timestamp
        self.cluster = Cluster(brokers=1, clock="simulated", seed=data.draw(st.integers(0, 255), label="seed"),
                               keep_events=False, wire_codec="json", segment_bytes=SEGMENT_BYTES,
                               cq_segment_entries=CQ_FILE_ENTRIES, file_reserved_ms=FILE_RESERVED_MS,
                               flush=config["broker.flushDiskType"])
        cluster = self.cluster
        cluster.create_topic(TOPIC, read_queues=read, write_queues=write, perm=perm)
        self.producer = cluster.producer("PG")
        self.raw = cluster.network.client("raw-puller")
        self.recorder = Recorder(cluster, BROKER, TOPIC)
        cfg = spec.Config(max_messages=10**9, cq_file_entries=CQ_FILE_ENTRIES, batch=config["consumer.pullBatchSize"],
                          consumer=spec.ConsumerKind.LITE_PULL if lite else spec.ConsumerKind.PUSH, from_where=where,
                          consume_timestamp=timestamp or 0, read_queues=read, write_queues=write, perm=perm,
                          subscription=EXPRESSIONS[self.expression], retry_queue=not lite, assign=assign,
                          auto_commit=auto_commit, flush_sync=config["broker.flushDiskType"] == "sync")
        self.recorder.take()
        self.clock = cluster.now_ms()
        self.begin(spec.initial_state(cfg, running=False))
        # Messages may be there before the consumer starts: tagged A, B, C in turn, over the writable queues.
        writable = [q for q in range(cfg.topic_queues) if cfg.writable(q)]
        for n in range(data.draw(st.sampled_from((0, 0, 3, 6, 9)), label="messages before the consumer starts")
                       if writable else 0):
            mq = self._mq(writable[n % len(writable)])
            self.producer.send(Message(TOPIC, BODY, tags=TAGS[n % len(TAGS)]), queue=mq)
        self._sync()
        self._start(True)
        self._sync()

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
        # Hypothesis may keep failing machines while it shrinks: let the cluster and its events go.
        self.cluster = None
        self.consumer = None

    @property
    def cfg(self) -> spec.Config:
        return self.state.config

    def _queue(self, topic: str, queue_id: int) -> int | None:
        """The spec's queue of a topic queue (None: not one the spec has)."""
        if topic == TOPIC and 0 <= queue_id < self.cfg.topic_queues:
            return queue_id
        if self.cfg.retry_queue and topic == retry_topic(self.group) and queue_id == 0:
            return self.cfg.topic_queues
        return None

    def _mq(self, q: int) -> MessageQueue:
        if self.cfg.is_retry(q):
            return MessageQueue(retry_topic(self.group), BROKER, 0)
        return MessageQueue(TOPIC, BROKER, q)

    # ------------------------------------------------------------------------------------------------ replay
    def _sync(self) -> None:
        """Step the spec with what the implementation did since the last rule, then let the time pass. First
        whatever is due now runs (a call that waited for its answer returns with the rest of its millisecond to
        run)."""
        assert self.cluster is not None
        self.cluster.advance(0)
        for obs in self.recorder.take():
            self._time_to(obs.ts)
            getattr(self, f"_on_{obs.kind}")(obs)
        assert self.cluster is not None
        self._time_to(self.cluster.now_ms())

    def _time_to(self, ts: int) -> None:
        ms = ts - self.clock
        if ms <= 0:
            return
        blocked = spec.blocked_by(self.state, ms)
        if blocked is not None:
            self.fail(f"{ms} ms pass (to t={ts - SIMULATED_EPOCH_MS}) without what the spec says is due: {blocked}")
        self.drive(spec.TimePasses(ms))
        self.clock = ts

    def _on_stored(self, obs: Obs) -> None:
        q = self._queue(obs.data["topic"], obs.data["queue_id"])
        if q is None:
            return
        store = self.state.queues[q].store
        if obs.data["offset"] != store.max_offset:
            self.fail(f"a message of queue {q} was stored at offset {obs.data['offset']}, the queue's max is "
                      f"{store.max_offset}")
        self.observe(spec.Append(q, obs.data["tags"], obs.ts), "a message is stored")

    def _answer(self, obs: Obs, offset: int) -> spec.Answer:
        """The broker's answer as observed: the store's result (none when a check failed first) and the response."""
        response: RemotingCommand | None = obs.data["response"]
        result = obs.data["result"]
        if result is None:
            code = ResponseCode(response.code) if response is not None else None
            return spec.Answer(offset, None, code, 0, 0, 0)
        if response is None:
            return spec.Answer(offset, result.status, None, result.next_begin_offset, result.min_offset,
                               result.max_offset)
        fields = response.ext_fields
        code = ResponseCode(response.code)
        delivered: tuple[int, ...] = ()
        if code is ResponseCode.SUCCESS:
            delivered = tuple(m.queue_offset for m in decode_stored_messages(response.body or b"", BROKER))
        status = G[response.remark] if response.remark in G.__members__ else result.status
        return spec.Answer(offset, status, code, int(fields.get("nextBeginOffset", -1)),
                           int(fields.get("minOffset", -1)), int(fields.get("maxOffset", -1)), delivered)

    def _check_answer(self, what: str, observed: spec.Answer, expected: spec.Answer) -> None:
        if observed != expected:
            clauses = sorted({_status_clause(expected.status), _status_clause(observed.status)})
            self.fail(f"{', '.join(clauses)}, PULL-10 to PULL-14: {what}: the broker answered {observed}; the spec "
                      f"decides {expected}")

    def _on_pull(self, obs: Obs) -> None:
        fields = obs.data["fields"]
        offset = int(fields["queueOffset"])
        sys_flag = int(fields["sysFlag"])
        if obs.data["client"] == self.raw.addr:
            text = fields.get("subscription")
            sql = fields.get("expressionType") == "SQL92"
            subscription = _subscription(text) if sys_flag & PULL_FLAG_SUBSCRIPTION and not sql else None
            commit = int(fields["commitOffset"]) if sys_flag & PULL_FLAG_COMMIT_OFFSET else None
            action = spec.RawPull(int(fields["queueId"]), offset, int(fields["maxMsgNums"]), subscription,
                                  bool(sys_flag & PULL_FLAG_SUBSCRIPTION), commit, self._answer(obs, offset),
                                  as_consumer=fields.get("consumerGroup") == self.group,
                                  newer=int(fields["subVersion"]) > 0, topic_exists=fields["topic"] == TOPIC,
                                  sql=sql, parses=SQL_EXPRESSIONS.get(text or "", True))
            self._check_answer(f"a raw pull at {offset} of queue {action.queue_id}", action.answer,
                               spec.raw_answer(self.state, action))
            self.observe(action, "another client's pull")
            return
        if obs.data["client"] != self.recorder.client_addr or fields.get("consumerGroup") != self.group:
            return  # a consumer that is gone
        q = self._queue(fields["topic"], int(fields["queueId"]))
        if q is None:
            self.fail(f"the consumer pulled {fields['topic']}:{fields['queueId']}, a queue it was not given (PULL-37)")
        answer = self._answer(obs, offset)
        first = obs.data["first"]
        self._check_answer(f"{'the first processing' if first else 'a held pull processed again'} of the pull at "
                           f"{offset} of queue {q}", answer, spec.consumer_answer(self.state, q, offset, first))
        if first:
            self.observe(spec.Pull(q, offset, answer), "the broker processes a pull")
            return
        wakeable = any(r.offset == offset and r.phase is spec.Phase.HELD and r.wake_by is not None
                       for r in self.state.queues[q].requests)
        if wakeable:
            self.observe(spec.Wake(q, offset, answer), "a held pull is woken")
        else:
            self.observe(spec.HoldTimeout(q, offset, answer), "a held pull times out")

    def _on_offset_update(self, obs: Obs) -> None:
        if obs.data["group"] != self.group:
            return
        q = self._queue(obs.data["topic"], obs.data["queue_id"])
        if q is None:
            return
        if obs.data["client"] == self.raw.addr:
            self.observe(spec.OffsetReset(q, obs.data["offset"]), "an operator resets the offset")
        else:
            self.observe(spec.Persist(q, obs.data["offset"]), "the broker commits an offset update")

    def _on_registered(self, obs: Obs) -> None:
        if obs.data["value"] and not self.state.registered:
            self.observe(spec.Heartbeat(), "the group registers")
        elif not obs.data["value"] and self.state.registered:
            self.observe(spec.Unregistered(), "the group is gone from the broker")

    def _consumer_queue(self, obs: Obs) -> int:
        mq: MessageQueue = obs.data["mq"]
        q = self._queue(mq.topic, mq.queue_id)
        if q is None:
            self.fail(f"the consumer works on {mq}, a queue it was not given (PULL-37)")
        return q

    def _on_sent(self, obs: Obs) -> None:
        q = self._consumer_queue(obs)
        qs = self.state.queues[q]
        if spec.live(self.state, q) and qs.live_request is None and (qs.pull_offset is not None or self.cfg.lite):
            expected = spec.next_pull_offset(self.state, q)
            if obs.data["offset"] != expected:
                clauses = "PULL-31, PULL-32, PULL-36" if self.cfg.lite else "PULL-20, PULL-21, PULL-22, PULL-23"
                self.fail(f"{clauses}: the consumer pulls queue {q} at {obs.data['offset']}; the spec's next pull "
                          f"is at {expected}")
        self.observe(spec.PullSent(q, obs.data["offset"]), "the consumer sends a pull")
        request = self.state.queues[q].requests[-1]
        if request.commit != obs.data["commit"]:
            self.fail(f"PULL-18, PULL-33: the pull of queue {q} at {obs.data['offset']} commits "
                      f"{obs.data['commit']}; the spec's carries {request.commit}")

    def _on_answered(self, obs: Obs) -> None:
        if not self.state.running:
            return  # a stopped consumer's connections close: its pulls fail, and nothing reacts
        q = self._consumer_queue(obs)
        offset = obs.data["offset"]
        request = next((r for r in self.state.queues[q].requests
                        if r.offset == offset and r.phase is spec.Phase.ANSWERED), None)
        if request is not None and request.answer is not None:
            code = request.answer.code
            status = spec.pull_status(code) if code is not None else None
            if obs.data["status"] != (status.name if status is not None else "ERROR"):
                self.fail(f"PULL-19: the answer {code!r} at {offset} of queue {q} became {obs.data['status']}; the "
                          f"spec maps it to {status}")
        self.observe(spec.Answered(q, offset), "the consumer gets the answer")

    def _on_delivered(self, obs: Obs) -> None:
        if self.cfg.lite:  # a poll's messages (a push consumer's count once the listener answered)
            self.system_delivered.setdefault(self._consumer_queue(obs), []).append(obs.data["offset"])

    def _on_consumed(self, obs: Obs) -> None:
        q = self._consumer_queue(obs)
        self.system_delivered.setdefault(q, []).append(obs.data["offset"])
        if obs.data["status"] != ConsumeStatus.CONSUME_SUCCESS.name:
            # Sent back first: the message leaves the process queue once that is done (PULL-34).
            self.sent_back.add((q, obs.data["offset"]))
            return
        if (q, obs.data["offset"]) in self.sent_back:
            # Its send-back failed: consumed again here, delivered twice.
            self.sent_back.discard((q, obs.data["offset"]))
            self.spec_delivered.setdefault(q, []).append(obs.data["offset"])
        self._consume(q, obs.data["offset"])

    def _consume(self, q: int, offset: int) -> None:
        self.observe(spec.Consume(q, offset), "a message is consumed")
        self.spec_delivered.setdefault(q, []).append(offset)

    def _on_offset(self, obs: Obs) -> None:
        q = self._consumer_queue(obs)
        qs = self.state.queues[q]
        if not self.cfg.lite and qs.fix is not None and not obs.data["increase_only"]:
            self.observe(spec.DelayedFix(q), "the OFFSET_ILLEGAL fix")
        elif obs.data["increase_only"]:
            for sq, offset in sorted(self.sent_back):
                if sq == q and offset not in obs.data["cached"]:
                    self.sent_back.discard((sq, offset))
                    self._consume(q, offset)

    def _on_persist_sent(self, obs: Obs) -> None:
        self.observe(spec.PersistSent(self._consumer_queue(obs), obs.data["offset"]),
                     "the offset store sends an offset")

    def _on_rebalanced(self, obs: Obs) -> None:
        for mq, start in obs.data["starts"]:
            q = self._queue(mq.topic, mq.queue_id)
            if q is None:
                self.fail(f"a rebalance added {mq}, a queue the consumer is not given (PULL-37)")
            expected = spec.rebalance_start(self.state, q)
            if start != expected:
                self.fail(f"PULL-24, PULL-28, PULL-29, PULL-30: a rebalance starts queue {q} at {start}; the spec at "
                          f"{expected}")
            self.observe(spec.Rebalance(q, start), "a rebalance adds the queue")

    def _on_removed(self, obs: Obs) -> None:
        self.observe(spec.QueueRemoved(self._consumer_queue(obs)), "removeProcessQueue")

    def _on_assigned(self, obs: Obs) -> None:
        self.observe(spec.Assign(self._consumer_queue(obs)), "a lite pull task starts")

    def _on_seek(self, obs: Obs) -> None:
        self.observe(spec.Seek(self._consumer_queue(obs), obs.data["offset"]), "a seek restarts the pull task")

    def _on_flushed(self, obs: Obs) -> None:
        if any(qs.store.durable < qs.store.max_offset for qs in self.state.queues):
            self.observe(spec.Flushed(), "the store flushes")

    def _on_offsets_persisted(self, obs: Obs) -> None:
        if any(qs.durable_offset != qs.broker_offset or qs.durable_raw != qs.raw_offset for qs in self.state.queues):
            self.observe(spec.OffsetsPersisted(), "the broker persists its offsets")

    def _on_destroyed(self, obs: Obs) -> None:
        for topic, queue_id in obs.data["queues"]:
            q = self._queue(topic, queue_id)
            if q is not None and self.state.queues[q].store.max_offset:
                self.observe(spec.QueueDestroyed(q), "the consume queue is destroyed")

    def _on_deleted(self, obs: Obs) -> None:
        """Old data went: each queue's data, consume-queue files and min offset, as the store had them then."""
        for q in range(self.cfg.queue_count):
            mq = self._mq(q)
            low, _high, readable, first_file = obs.data["views"].get((mq.topic, mq.queue_id), (0, 0, 0, 0))
            while self.state.queues[q].store.data_from < readable and \
                    self.can(spec.DeleteCommitLog(q)):
                self.observe(spec.DeleteCommitLog(q), "commit-log data is deleted")
            while self.state.queues[q].store.cq_from < first_file and self.can(spec.DeleteConsumeQueueFile(q)):
                self.observe(spec.DeleteConsumeQueueFile(q), "a consume-queue file is deleted")
            if low != self.state.queues[q].store.min_offset:
                self.observe(spec.CorrectMinOffset(q), "the min offset is corrected")

    # ------------------------------------------------------------------------------------------------ consumers
    def _settle(self) -> None:
        """Let the consumer's start-offset queries finish before the store changes (they read it in steps)."""
        assert self.cluster is not None
        for _ in range(50):
            if not self.recorder.computing:
                return
            self.cluster.advance(1)

    def _start(self, fresh: bool) -> None:
        assert self.cluster is not None
        cluster = self.cluster
        if fresh:
            self.groups += 1
        self.group = f"CG{self.groups}"
        lite = self.cfg.lite
        timestamp = self.timestamp
        if timestamp is None and self.cfg.from_where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
            self.spec.state = attrs.evolve(self.state, config=attrs.evolve(
                self.cfg, consume_timestamp=cluster.now_ms() - CONSUME_TIMESTAMP_DEFAULT_LAG_MS))
        self.drive(spec.ConsumerStarts(fresh), f"group {self.group}")
        name = f"{self.group}-{cluster.now_ms()}"
        client = ClientConfig(instance_name=name)
        instance = ClientInstance(cluster.runtime, cluster.network, cluster.events, cluster.namesrv_addr,
                                  f"{client.client_ip}@{name}", client)
        options: dict[str, Any] = {"group": self.group, "consume_from_where": self.cfg.from_where,
                                   "consume_timestamp_ms": timestamp, "pull_batch_size": self.cfg.batch}
        if lite:
            options.update(auto_commit=self.cfg.auto_commit,
                           broker_suspend_max_time_ms=LITE_PULL_BROKER_SUSPEND_MAX_TIME_MS)
            consumer: Any = LitePullConsumer(instance, ConsumerConfig(**options))
            if self.cfg.assign is not None:
                consumer.set_sub_expression_for_assign(TOPIC, self.expression)
                consumer.assign([MessageQueue(TOPIC, BROKER, q) for q in self.cfg.assign])
            else:
                consumer.subscribe(TOPIC, self.expression)
        else:
            consumer = PushConsumer(instance, ConsumerConfig(**options), _listener)
            consumer.subscribe(TOPIC, self.expression)
        self.recorder.watch_consumer(consumer, self.group, lite)
        self.consumer = consumer
        cluster.runtime.submit(consumer.start)
        cluster.advance(20)
        self._settle()

    def _ready(self) -> bool:
        return self.cluster is not None and self.spec is not None

    # ------------------------------------------------------------------------------------------------ rules
    def _writable(self) -> list[int]:
        cfg = self.cfg
        queues = [q for q in range(cfg.topic_queues) if cfg.writable(q)]
        if cfg.retry_queue and self.state.registered:
            queues.append(cfg.topic_queues)
        return queues

    @precondition(lambda self: self._ready() and self._writable())
    @rule(queue=st.integers(0, 5), tags=st.lists(st.sampled_from(TAGS), min_size=1, max_size=5))
    def send(self, queue: int, tags: list[str]) -> None:
        """Tagged messages to one queue (the topic's, or the group's %RETRY% queue)."""
        writable = self._writable()
        q = writable[queue % len(writable)]
        mq = self._mq(q)
        self._settle()
        for tag in tags:
            try:
                self.producer.send(Message(mq.topic, BODY, tags=tag), queue=mq)
            except MQClientError:
                continue
        self._sync()

    @precondition(lambda self: self._ready() and any(self.cfg.writable(q) for q in range(self.cfg.topic_queues)))
    @rule(queue=st.integers(0, 5), tags=st.lists(st.sampled_from(TAGS), min_size=1, max_size=4))
    def send_batch(self, queue: int, tags: list[str]) -> None:
        """A batch of tagged messages to one of the topic's queues (SEND_BATCH_MESSAGE: consecutive offsets)."""
        writable = [q for q in range(self.cfg.topic_queues) if self.cfg.writable(q)]
        mq = self._mq(writable[queue % len(writable)])
        self._settle()
        try:
            self.producer.send_batch([Message(TOPIC, BODY, tags=tag) for tag in tags], queue=mq)
        except MQClientError:
            pass
        self._sync()

    @precondition(lambda self: self._ready())
    @rule()
    def until_idle(self) -> None:
        """Time passes until nothing is pending: the consumer has what the broker has, its offsets are persisted."""
        assert self.cluster is not None
        try:
            self.cluster.run_until_idle(120_000)
        except NotIdle:
            pass
        self._sync()

    @precondition(lambda self: self._ready())
    @rule(segments=st.integers(1, 2))
    def delete_old_data(self, segments: int) -> None:
        """The oldest commit-log segments go; consume-queue files and the min offsets follow (PULL-3, PULL-6)."""
        assert self.cluster is not None
        self._settle()
        self._sync()
        self.cluster.delete_old_data(BROKER, segments)
        self._sync()

    @precondition(lambda self: self._ready())
    @rule(ms=st.sampled_from(WAITS))
    def time_passes(self, ms: int) -> None:
        """Time passes: long polling, the OFFSET_ILLEGAL fix, rebalances, persistence, error back-offs."""
        assert self.cluster is not None
        self.cluster.advance(ms)
        self._sync()

    def _offset(self, q: int, where: str, delta: int) -> int:
        store = self.state.queues[q].store
        low, high = store.min_offset, store.max_offset
        return {"below_min": max(0, low - 1 - delta), "min": low,
                "in_range": low + delta % (high - low) if high > low else low, "max": high,
                "beyond_max": high + 1 + delta, "zero": 0}[where]

    @precondition(lambda self: self._ready())
    @rule(queue=st.integers(-1, 5), where=st.sampled_from(WHERE), delta=st.integers(0, 6),
          expression=st.sampled_from(RAW_EXPRESSIONS), max_msgs=st.sampled_from((1, 2, 32)),
          subscription=st.booleans(), commit=st.booleans(), group=st.sampled_from(RAW_GROUPS))
    def raw_pull(self, queue: int, where: str, delta: int, expression: str, max_msgs: int, subscription: bool,
                 commit: bool, group: str) -> None:
        """Another client's PULL_MESSAGE at any offset of any queue id, without suspension: as group RAW, or as the
        consumer's group asking for a newer subscription, of a topic that does not exist, with an SQL92 subscription
        the broker does not serve (PULL-1 to PULL-18)."""
        assert self.cluster is not None
        q = queue if queue < self.cfg.topic_queues else self.cfg.read_queues
        offset = self._offset(q, where, delta) if 0 <= q < self.cfg.topic_queues else delta
        flag = (PULL_FLAG_SUBSCRIPTION if subscription else 0) | (PULL_FLAG_COMMIT_OFFSET if commit else 0)
        kind = "SQL92" if expression in SQL_EXPRESSIONS else "TAG"
        request = RemotingCommand.request(RequestCode.PULL_MESSAGE, {
            "consumerGroup": self.group if group == "consumer" else RAW_GROUP,
            "topic": MISSING_TOPIC if group == "missing topic" else TOPIC, "queueId": q, "queueOffset": offset,
            "maxMsgNums": max_msgs, "sysFlag": flag, "commitOffset": delta, "suspendTimeoutMillis": 1_000,
            "subscription": expression, "subVersion": 2**62 if group == "consumer" else 0, "expressionType": kind})
        self.raw.invoke(self.cluster.broker(BROKER).addr, request, 3_000, daemon=True)
        self.cluster.advance(3)
        self._sync()

    @precondition(lambda self: self._ready())
    @rule(queue=st.integers(0, 5), where=st.sampled_from(("below_min", "in_range", "beyond_max")),
          delta=st.integers(0, 6))
    def reset_offset(self, queue: int, where: str, delta: int) -> None:
        """An operator sets the group's committed offset anywhere, in the queue or not (UPDATE_CONSUMER_OFFSET), as
        mqadmin resetOffset does with the consumer down: a running one is shut down first and started again after,
        so it starts there and corrects an offset outside the queue (PULL-3, PULL-5, PULL-22, PULL-24, PULL-32)."""
        assert self.cluster is not None
        running = self.state.running
        if running:
            if not self._quiet():
                return
            self._stop(False)
            self._sync()
        q = queue % self.cfg.topic_queues
        request = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, {
            "consumerGroup": self.group, "topic": TOPIC, "queueId": q, "commitOffset": self._offset(q, where, delta)})
        self.raw.invoke(self.cluster.broker(BROKER).addr, request, 3_000, daemon=True)
        self.cluster.advance(3)
        self._sync()
        if running:
            self._start(False)
            self._sync()

    @precondition(lambda self: self._ready() and not self.state.running)
    @rule(fresh=st.booleans())
    def start_consumer(self, fresh: bool) -> None:
        """A consumer starts: of the same group (it resumes from the committed offsets) or of a new one (it starts
        where consumeFromWhere says, PULL-28, PULL-29, PULL-30)."""
        self._start(fresh)
        self._sync()

    @precondition(lambda self: self._ready() and self.state.running and spec.quiet(self.state))
    @rule(crash=st.booleans())
    def stop_consumer(self, crash: bool) -> None:
        """The consumer shuts down (its offsets persisted) or crashes (nothing persisted) (PULL-39)."""
        self._stop(crash)
        self._sync()

    def _quiet(self) -> bool:
        """Wait (a millisecond at a time) until none of the consumer's pulls is on the wire."""
        assert self.cluster is not None
        for _ in range(20):
            self._sync()
            if spec.quiet(self.state):
                return True
            self.cluster.advance(1)
        self._sync()
        return spec.quiet(self.state)

    def _stop(self, crash: bool) -> None:
        assert self.cluster is not None
        self._sync()
        before = self.state
        self.drive(spec.ConsumerStops(crash), "crash" if crash else "shutdown")
        consumer = self.consumer
        if crash:
            self.cluster.crash_client(consumer)
        else:
            self.cluster.runtime.submit(consumer.shutdown)
        during = self.recorder.take()
        # What the stop sends is the spec's ConsumerStops (its effect); the rest happens after it.
        sent = sorted((self._consumer_queue(o), o.data["offset"]) for o in during if o.kind == "persist_sent")
        self.recorder.log[:0] = [o for o in during if o.kind != "persist_sent"]
        owed = sorted((q, qs.memory_offset) for q, qs in enumerate(before.queues)
                      if not crash and qs.pq is not None and qs.memory_offset is not None)
        if sent != owed:
            self.fail(f"PULL-39: the {'crash' if crash else 'shutdown'} sent the offsets {sent}; the spec {owed}")
        self.recorder.forget_consumer()
        self.consumer = None
        for q, offset in self.sent_back:  # delivered to the listener, never sent back: nothing more happens
            self.spec_delivered.setdefault(q, []).append(offset)
        self.sent_back.clear()
        self.cluster.advance(10)

    @precondition(lambda self: self._ready() and any(self.cfg.writable(q) for q in range(self.cfg.topic_queues)))
    @rule(queue=st.integers(0, 5), count=st.integers(8, 14), segments=st.integers(1, 2), crash=st.booleans(),
          fresh=st.booleans())
    def fall_behind(self, queue: int, count: int, segments: int, crash: bool, fresh: bool) -> None:
        """The consumer is down while messages come and old data goes, then starts again: behind the queue's min
        offset (OFFSET_TOO_SMALL, corrected: PULL-3, PULL-22, PULL-24, PULL-32), or, of a new group, where
        consumeFromWhere says on a queue that lost data (PULL-28, PULL-29, PULL-30)."""
        assert self.cluster is not None
        if self.state.running:
            if not self._quiet():
                return
            self._stop(crash)
        writable = [q for q in range(self.cfg.topic_queues) if self.cfg.writable(q)]
        mq = self._mq(writable[queue % len(writable)])
        for n in range(count):
            self.producer.send(Message(TOPIC, BODY, tags=TAGS[n % len(TAGS)]), queue=mq)
        self.cluster.delete_old_data(BROKER, segments)
        self._sync()
        self._start(fresh)
        self._sync()

    @precondition(lambda self: self._ready())
    @rule(crash=st.booleans(), queue=st.integers(0, 5), just_sent=st.integers(0, 3), torn=st.sampled_from(TORN))
    def restart_broker(self, crash: bool, queue: int, just_sent: int, torn: str | None) -> None:
        """The broker restarts from its store: held pulls and registrations are gone, the rest stays (PULL-38); or it
        crashes (a power loss): what it had not flushed or persisted is gone too (PULL-42). ``just_sent`` messages
        come right before it goes, before any periodic flush: with SYNC_FLUSH their commit-log records are on the
        disk past the checkpoint, and recovery checks them and dispatches them again into the consume queue the
        crash cut back; with ASYNC_FLUSH a crash loses them. A crash may leave torn writes past what was flushed
        (``torn``, see ``_tear``): recovery cuts them, and the store is as the spec's crash leaves it."""
        assert self.cluster is not None
        self._settle()
        self._sync()
        writable = [q for q in range(self.cfg.topic_queues) if self.cfg.writable(q)]
        if just_sent and writable:
            mq = self._mq(writable[queue % len(writable)])
            for n in range(just_sent):
                try:
                    self.producer.send(Message(TOPIC, BODY, tags=TAGS[n % len(TAGS)]), queue=mq)
                except MQClientError:
                    continue
            self._sync()
        self.drive(spec.BrokerRestart(crash))
        if crash and torn is not None:
            self.cluster.stop_broker(BROKER, crash=True)
            self._tear(torn, queue)
            broker = self.cluster.start_broker(BROKER)
        else:
            broker = self.cluster.restart_broker(BROKER, crash=crash)
        self.recorder.watch_broker(broker)
        self._sync()

    def _tear(self, torn: str, queue: int) -> None:
        """What a power loss can leave on the disk past what was flushed (the stopped broker's disk): the start of a
        commit-log record (``partial``), a whole record whose body did not all reach the disk (``crc``: its CRC
        fails), part of a consume-queue entry (``cq_partial``), or a consume-queue entry whose commit-log record never
        made it (``cq_dirty``: it points past the commit log's end); a file that grew but whose bytes did not reach
        the disk: zeros (``prealloc``: the next commit-log segment, as the allocate service leaves it; ``cq_zeros``: a
        consume-queue entry); a consume-queue file past a gap (``cq_stray``). Recovery (``recoverAbnormally``,
        ConsumeQueue ``load``, ``recover`` and ``truncateDirtyLogicFiles``) drops all of them (PULL-44)."""
        assert self.cluster is not None
        disk = self.cluster._disks[BROKER]  # the crashed broker's disk, as the power loss left it
        if torn in ("partial", "crc", "prealloc"):
            segments = disk.list_files(COMMITLOG_DIR)
            data = bytes(disk.view(segments[-1])) if segments else b""
            if torn == "prealloc":
                base = int(segments[-1][len(COMMITLOG_DIR):]) if segments else 0
                disk.append(f"{COMMITLOG_DIR}{base + SEGMENT_BYTES if segments else 0:020d}", b"\x00" * 64)
                return
            size = int.from_bytes(data[:4], "big") if len(data) >= 4 else 0
            if not 0 < size <= len(data):
                return
            record = bytearray(data[:size])
            if torn == "partial":
                disk.append(segments[-1], bytes(record[:size // 3]))
            else:
                record[size // 2] ^= 0x01
                disk.append(segments[-1], bytes(record))
            return
        mq = self._mq(queue % self.cfg.topic_queues)
        folder = f"{CONSUME_QUEUE_DIR}{mq.topic}/{mq.queue_id}/"
        files = disk.list_files(folder)
        if not files:
            return
        file_bytes = CQ_FILE_ENTRIES * CQ_ENTRY.size
        last, length = files[-1], disk.size(files[-1])
        if torn == "cq_partial":
            disk.append(last, b"\x00" * 7)
        elif torn == "cq_zeros" and length % CQ_ENTRY.size == 0 and length < file_bytes:
            disk.append(last, bytes(CQ_ENTRY.size))  # the file grew, its data did not reach the disk
        elif torn == "cq_stray":  # a file beyond one that is not there: not where the queue goes on
            disk.append(f"{folder}{int(last[len(folder):]) + 2 * file_bytes:020d}", CQ_ENTRY.pack(0, len(BODY), 0))
        elif torn == "cq_dirty" and length % CQ_ENTRY.size == 0:
            path = last if length < file_bytes else f"{folder}{int(last[len(folder):]) + file_bytes:020d}"
            disk.append(path, CQ_ENTRY.pack(10**12, len(BODY) + 150, 0))

    def _nothing_comes(self) -> bool:
        """No consume request can come without a new message: every live pull is held (or none is out)."""
        return all(r.phase is spec.Phase.HELD for qs in self.state.queues for r in qs.requests) and \
            not any(qs.pull_in is not None and spec.live(self.state, q) for q, qs in enumerate(self.state.queues))

    @precondition(lambda self: self._ready() and self.state.running and self.cfg.lite)
    @rule(wait=st.sampled_from((0, 0, 200, 3_000)))
    def poll(self, wait: int) -> None:
        """poll: an auto commit when due, then the oldest consume request; waiting ``wait`` ms for one when there is
        none (only where none can come, so that the poll returns nothing) (PULL-34)."""
        self._sync()
        self._poll(wait)
        self._sync()

    @precondition(lambda self: self._ready() and self.state.running and self.cfg.lite)
    @rule(rounds=st.integers(1, 4))
    def drain(self, rounds: int) -> None:
        """The user's poll loop: poll without waiting while the consumer has consume requests, up to ``rounds``
        times, time passing between two polls (PULL-34)."""
        assert self.cluster is not None
        for _ in range(rounds):
            self._sync()
            self._poll(0)
            self._sync()
            self.cluster.advance(WAITS[2])
            self._sync()
            if not self.state.cache:
                return

    def _poll(self, wait: int) -> None:
        if self.state.cache or not self._nothing_comes():
            wait = 0
        expected = spec.taken(self.state)
        self.drive(spec.Poll())
        got = self.consumer.poll(wait)
        offsets = [(self._queue(m.queue.topic, m.queue.queue_id), m.queue_offset) for m in got]
        want = [(expected[0], o) for o in expected[1]] if expected is not None else []
        if offsets != want:
            self.fail(f"PULL-34: poll returned {offsets}; the spec returns {want}")
        for q, offset in want:  # the implementation's are its ConsumeDeliver events
            self.spec_delivered.setdefault(q, []).append(offset)

    @precondition(lambda self: self._ready() and self.state.running and self.cfg.lite)
    @rule(persist=st.booleans(), given=st.one_of(st.none(), st.lists(
        st.tuples(st.integers(0, 5), st.sampled_from(("consumed", "min", "max", "unset"))), max_size=3)))
    def commit(self, persist: bool, given: list[tuple[int, str]] | None) -> None:
        """commitSync: the consume offsets into the offset store, or offsets given (commitSync(Map, persist)); sent
        now with ``persist``, which forgets the other queues' offsets (PULL-35)."""
        self._sync()
        offsets: dict[int, int] | None = None
        if given is not None:
            offsets = {}
            for queue, which in given:
                q = queue % self.cfg.topic_queues
                qs = self.state.queues[q]
                offsets[q] = {"consumed": qs.consume_offset if qs.consume_offset is not None else -1,
                              "min": qs.store.min_offset, "max": qs.store.max_offset, "unset": -1}[which]
        self.drive(spec.Commit(persist, None if offsets is None else tuple(sorted(offsets.items()))))
        self.consumer.commit(None if offsets is None else {self._mq(q): o for q, o in offsets.items()},
                             persist=persist)
        self._sync()

    @precondition(lambda self: self._ready() and self.state.running and not self.cfg.lite)
    @rule(times=st.integers(1, 3), code=st.sampled_from((ResponseCode.SYSTEM_ERROR, ResponseCode.SYSTEM_BUSY)))
    def send_back_fails(self, times: int, code: ResponseCode) -> None:
        """The broker refuses the next send-backs: the consumer sends the failed messages to the %RETRY% topic
        itself (sendMessageBack's fallback); they reach the %RETRY% queue after the delay all the same."""
        assert self.cluster is not None
        self.cluster.faults.fail(BROKER, "CONSUMER_SEND_MSG_BACK", code=int(code), times=times)

    @precondition(lambda self: self._ready() and self.state.running and self.cfg.lite)
    @rule()
    def lite_misuse(self) -> None:
        """What a lite pull consumer refuses: subscribe and assign mixed, an empty assignment, an assign expression
        once started, a negative poll timeout (DefaultLitePullConsumerImpl's checks); nothing changes."""
        assert self.cluster is not None
        consumer = self.consumer
        calls: list[tuple[str, Any]] = [
            ("assign" if self.cfg.assign is None else "subscribe",
             (lambda: consumer.assign([self._mq(0)])) if self.cfg.assign is None
             else (lambda: consumer.subscribe(TOPIC, "*"))),
            ("assign([])", lambda: consumer.assign([])),
            ("setSubExpressionForAssign", lambda: consumer.set_sub_expression_for_assign(TOPIC, "A")),
            ("subscribe('')", lambda: consumer.subscribe("", "*")),
            ("poll(-1)", lambda: consumer.poll(-1)),
        ]
        for name, call in calls:
            try:
                call()
            except (MQClientError, ValueError):
                continue
            self.fail(f"the lite pull consumer took {name}")
        self._sync()

    @precondition(lambda self: self._ready() and self.state.running and self.cfg.lite)
    @rule(queue=st.integers(0, 5), where=st.sampled_from(WHERE), delta=st.integers(0, 3))
    def seek(self, queue: int, where: str, delta: int) -> None:
        """seek: refused outside [min, max] or for a queue not assigned, else the queue restarts there (PULL-36).
        Mostly one of the queues the consumer has (``queue`` < 4), else any of the topic's."""
        self._sync()
        assigned = [q for q in range(self.cfg.topic_queues) if self.state.queues[q].assigned]
        q = assigned[queue % len(assigned)] if assigned and queue < 4 else queue % self.cfg.topic_queues
        offset = self._offset(q, where, delta)
        allowed = spec.enabled(self.state, spec.Seek(q, offset))
        store = self.state.queues[q].store
        try:
            if where == "min" and offset == store.min_offset:
                self.consumer.seek_to_begin(self._mq(q))
            elif where == "max" and offset == store.max_offset:
                self.consumer.seek_to_end(self._mq(q))
            else:
                self.consumer.seek(self._mq(q), offset)
            refused = None
        except MQClientError as error:
            refused = error
        if allowed == (refused is not None):
            self.fail(f"PULL-36: seek({q}, {offset}) {'was refused: ' + str(refused) if refused else 'went ahead'}; "
                      f"the spec {'allows' if allowed else 'refuses'} it (min {self.state.queues[q].store.min_offset},"
                      f" max {self.state.queues[q].store.max_offset}, assigned {self.state.queues[q].assigned})")
        self._sync()

    @precondition(lambda self: self._ready() and self.state.running and self.cfg.lite)
    @rule(queue=st.integers(0, 5), paused=st.booleans())
    def pause_queue(self, queue: int, paused: bool) -> None:
        """pause / resume one of the lite pull consumer's queues (PULL-40)."""
        self._sync()
        q = queue % self.cfg.topic_queues
        self.drive(spec.PauseQueue(q, paused))
        (self.consumer.pause if paused else self.consumer.resume)([self._mq(q)])
        self._sync()

    @precondition(lambda self: self._ready() and self.state.running and not self.cfg.lite)
    @rule(suspended=st.booleans())
    def suspend(self, suspended: bool) -> None:
        """suspend / resume the push consumer (PULL-40)."""
        self._sync()
        self.drive(spec.Suspend(suspended))
        (self.consumer.suspend if suspended else self.consumer.resume)()
        self._sync()

    @precondition(lambda self: self._ready() and self.state.running)
    @rule(queue=st.integers(0, 5))
    def queries(self, queue: int) -> None:
        """What the consumer says it has: its queues, its offset store, a lite pull consumer's committed offset and
        the queues its route gives (PULL-24, PULL-35, PULL-37)."""
        self._sync()
        state, consumer = self.state, self.consumer
        owned = {self._mq(q) for q, qs in enumerate(state.queues) if (qs.assigned if self.cfg.lite else qs.pq)}
        assignment = consumer.assignment()
        got = assignment if self.cfg.lite else {mq for mqs in assignment.values() for mq in mqs}
        memory = {self._mq(q): qs.memory_offset for q, qs in enumerate(state.queues) if qs.memory_offset is not None}
        offsets = {mq: o for mq, o in consumer.offsets().items() if self._queue(mq.topic, mq.queue_id) is not None}
        if got != owned or offsets != memory:
            self.fail(f"the consumer says it owns {sorted(got)} with offsets {offsets}; the spec {sorted(owned)}, "
                      f"{memory}")
        if self.cfg.lite:
            q = queue % self.cfg.topic_queues
            if state.queues[q].memory_offset is not None and state.queues[q].assigned:
                committed = consumer.committed(self._mq(q))
                if committed != state.queues[q].memory_offset:
                    self.fail(f"PULL-35: committed({q}) is {committed}; the spec's offset store has "
                              f"{state.queues[q].memory_offset}")
            expected = {MessageQueue(TOPIC, BROKER, i) for i in spec.consumer_queue_ids(self.cfg.read_queues,
                                                                                         self.cfg.perm)}
            try:
                queues = consumer.fetch_message_queues(TOPIC)
            except MQClientError:
                queues = set()
            if queues != expected:
                self.fail(f"PULL-37: fetchMessageQueues gives {sorted(queues)}; the spec {sorted(expected)}")
        self._sync()

    @precondition(lambda self: self._ready())
    @rule(queue=st.integers(0, 5), pick=st.integers(-3, 12), shift=st.sampled_from((-1, 0, 0, 1)))
    def search_offset(self, queue: int, pick: int, shift: int) -> None:
        """Another client asks SEARCH_OFFSET_BY_TIMESTAMP (what offsetForTimestamp and mqadmin ask), at a message's
        store time, a millisecond either side of it, or before or after all of them: the broker answers the queue's
        offset by time (PULL-30); and GET_EARLIEST_MSG_STORETIME, the store time of the queue's first message
        (PULL-43)."""
        assert self.cluster is not None
        self._settle()
        self._sync()
        q = queue % self.cfg.queue_count
        store = self.state.queues[q].store
        if pick < 0 or not store.times:
            timestamp = TIMESTAMPS[pick % len(TIMESTAMPS)]
        else:
            timestamp = store.times[pick % len(store.times)] + shift
        mq = self._mq(q)
        request = RemotingCommand.request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {
            "topic": mq.topic, "queueId": mq.queue_id, "timestamp": timestamp})
        future = self.raw.invoke(self.cluster.broker(BROKER).addr, request, 3_000, daemon=True)
        self.cluster.advance(3)
        if future.done() and future.exception() is None:
            got = int(future.result().ext_fields.get("offset", -1))
            expected = spec.offset_by_time(store.times, store.cq_from, store.min_offset, store.data_from, timestamp)
            # Unresolved (issue 28's note): once the head of a queue was deleted (its min offset or its consume-queue
            # files past 0), refimpl's answer and the spec's part by one in some corners (a time before the first
            # message left, a partly deleted file); which one 4.9.8 gives is not yet checked on the real broker, so
            # only queues never deleted from are compared here.
            deleted = store.min_offset > 0 or store.cq_from > 0 or store.data_from > 0
            if got != expected and not deleted:
                self.fail(f"PULL-30: SEARCH_OFFSET_BY_TIMESTAMP {timestamp - SIMULATED_EPOCH_MS} of queue {q} answers "
                          f"{got}; the spec {expected} (store times {store.times}, min {store.min_offset}, data from "
                          f"{store.data_from}, consume-queue files from {store.cq_from})")
        request = RemotingCommand.request(RequestCode.GET_EARLIEST_MSG_STORETIME, {
            "topic": mq.topic, "queueId": mq.queue_id})
        future = self.raw.invoke(self.cluster.broker(BROKER).addr, request, 3_000, daemon=True)
        self.cluster.advance(3)
        if future.done() and future.exception() is None:
            got = int(future.result().ext_fields.get("timestamp", -2))
            expected = spec.earliest_time(self.state, q)
            if got != expected:
                self.fail(f"PULL-43: GET_EARLIEST_MSG_STORETIME of queue {q} answers {got}; the spec {expected}")
        self._sync()

    def _admin(self, code: RequestCode) -> None:
        assert self.cluster is not None
        self.raw.invoke(self.cluster.broker(BROKER).addr, RemotingCommand.request(code, {}), 3_000, daemon=True)
        self.cluster.advance(3)

    @precondition(lambda self: self._ready())
    @rule()
    def delete_expired(self) -> None:
        """An operator asks for expired commit-log segments to go (DELETE_EXPIRED_COMMITLOG): the cleaner's next
        runs delete those a minute old (PULL-3, PULL-6)."""
        self._settle()
        self._sync()
        self._admin(RequestCode.DELETE_EXPIRED_COMMITLOG)
        self._sync()

    @precondition(lambda self: self._ready())
    @rule(unused=st.booleans())
    def clean_consume_queues(self, unused: bool) -> None:
        """An operator cleans the consume queues: those whose messages are all gone (CLEAN_EXPIRED_CONSUMEQUEUE,
        PULL-41), or those of topics the broker does not know (CLEAN_UNUSED_TOPIC: none of the machine's)."""
        self._settle()
        self._sync()
        self._admin(RequestCode.CLEAN_UNUSED_TOPIC if unused else RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
        self._sync()

    # ------------------------------------------------------------------------------------------------ projections
    def project_spec(self) -> dict[str, Any]:
        state = self.state
        queues = {}
        for q, qs in enumerate(state.queues):
            pq = qs.pq
            view: tuple[Any, ...] = (None if pq is None else (pq.dropped, tuple(sorted(pq.cached))), qs.pull_offset,
                                     qs.memory_offset)
            if self.cfg.lite:
                view += (qs.assigned, qs.consume_offset, qs.seek)
            queues[q] = view
        return {
            STORE: {q: (qs.store.min_offset, qs.store.max_offset, qs.store.data_from, qs.store.cq_from)
                    for q, qs in enumerate(state.queues)},
            COMMITTED: {q: qs.broker_offset for q, qs in enumerate(state.queues)},
            RAW: {q: qs.raw_offset for q, qs in enumerate(state.queues) if not self.cfg.is_retry(q)},
            REGISTERED: state.registered,
            QUEUES: queues,
            HELD: {q: sorted(r.offset for r in qs.requests if r.phase is spec.Phase.HELD)
                   for q, qs in enumerate(state.queues)},
            DELIVERED: self._spec_delivered(),
            CACHE: list(state.cache),
            STORED: {q: [(o, qs.store.tags[o], qs.store.times[o])
                         for o in range(qs.store.first_readable, qs.store.max_offset)]
                     for q, qs in enumerate(state.queues)},
        }

    def _spec_delivered(self) -> dict[int, list[int]]:
        """The messages the spec consumed, and those the listener failed that are being sent back."""
        out = {q: list(offsets) for q, offsets in self.spec_delivered.items()}
        for q, offset in self.sent_back:
            out.setdefault(q, []).append(offset)
        return {q: sorted(offsets) for q, offsets in out.items()}

    def project_system(self) -> dict[str, Any]:
        assert self.cluster is not None
        broker = self.cluster.broker(BROKER)
        store = broker.store
        consumer = self.consumer if self.state.running else None
        stores, committed, raw, queues, held, stored = {}, {}, {}, {}, {}, {}
        for q in range(self.cfg.queue_count):
            mq = self._mq(q)
            low, high, readable, first_file = store_view(store, mq.topic, mq.queue_id)
            stores[q] = (low, high, readable, first_file)
            stored[q] = [(offset, message.tags, store.message_store_timestamp(mq.topic, mq.queue_id, offset))
                         for offset, phy, _size, _tags in store.queue_entries(mq.topic, mq.queue_id, low, high - low)
                         if (message := store.look_message(phy)) is not None]
            offset = broker.consumer_offsets.query(self.group, mq.topic, mq.queue_id)
            committed[q] = None if offset < 0 else offset
            if not self.cfg.is_retry(q):
                offset = broker.consumer_offsets.query(RAW_GROUP, mq.topic, mq.queue_id)
                raw[q] = None if offset < 0 else offset
            queues[q] = self._consumer_view(consumer, mq)
            held[q] = sorted(h.offset for h in broker.puller.hold.table.get((mq.topic, mq.queue_id), ())
                             if h.channel.remote_addr == self.recorder.client_addr)
        cache = [] if consumer is None or not self.cfg.lite else [
            (self._queue(r.mq.topic, r.mq.queue_id), tuple(m.queue_offset for m in r.msgs)) for r in consumer.cache]
        delivered = {q: sorted(offsets) for q, offsets in self.system_delivered.items()}
        return {STORE: stores, COMMITTED: committed, RAW: raw, REGISTERED: self.recorder.registered,
                QUEUES: queues, HELD: held, DELIVERED: delivered, CACHE: cache, STORED: stored}

    def _consumer_view(self, consumer: Any, mq: MessageQueue) -> tuple[Any, ...]:
        lite = self.cfg.lite
        if consumer is None or consumer.offset_store is None:
            return (None, None, None) + ((False, None, None) if lite else ())
        memory = consumer.offset_store.table.get(mq)
        pq = consumer.rebalance.process_queue_table.get(mq)
        if not lite:
            request = consumer._pull_requests.get(mq)
            pull = request.next_offset if pq is not None and request is not None else None
            return (None if pq is None else (pq.dropped, tuple(pq.msg_tree.keys())), pull, memory)
        state = consumer.assigned.get(mq)
        if state is not None:
            pq = state.pq

        def unset(value: int) -> int | None:
            return None if value == -1 else value

        view = (None if pq is None else (pq.dropped, tuple(pq.msg_tree.keys())),
                unset(state.pull_offset) if state is not None else None, memory)
        if state is None:
            return (*view, False, None, None)
        return (*view, True, unset(state.consume_offset), unset(state.seek_offset))


test_pull_correction_machine = machine_test(PullCorrectionMachine, 80, 40)


# ---------------------------------------------------------------------------------------------------- mutants
MUTANT_EXAMPLES, MUTANT_STEPS = 100, 30
# Each breaks one rule of the implementation; the machine must find a failing program (and name the clause).
MUTANTS = {
    "too_small_corrected_to_the_request": (
        store_reading, "GetMessageResult(GetMessageStatus.OFFSET_TOO_SMALL, min_offset,",
        "GetMessageResult(GetMessageStatus.OFFSET_TOO_SMALL, offset,", ("PULL-3",)),
    "overflow_badly_to_min": (
        store_reading, "GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset,",
        "GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_BADLY, min_offset,", ("PULL-5",)),
    "empty_queue_codes_swapped": (
        pull_module, "ResponseCode.PULL_OFFSET_MOVED if header.queue_offset != 0 else ResponseCode.PULL_NOT_FOUND",
        "ResponseCode.PULL_NOT_FOUND if header.queue_offset != 0 else ResponseCode.PULL_OFFSET_MOVED",
        ("PULL-2", "PULL-10")),
    "illegal_fix_increase_only": (
        push_consumer_module, "self.offset_store.update_offset(mq, request.next_offset, False)",
        "self.offset_store.update_offset(mq, request.next_offset, True)", ("PULL-22",)),
    "fix_after_five_seconds": (
        push_consumer_module, "self._task_later(OFFSET_ILLEGAL_REMOVE_DELAY_MS, fix, daemon=False)",
        "self._task_later(OFFSET_ILLEGAL_REMOVE_DELAY_MS // 2, fix, daemon=False)", ("PULL-22",)),
    "commit_flag_with_offset_zero": (
        push_consumer_module, "commit_enable = commit_offset > 0", "commit_enable = commit_offset >= 0",
        ("PULL-18",)),
    "lite_pull_ignores_a_seek": (
        lite_module, "            state.seek_offset = offset\n            task = PullTask(mq)",
        "            task = PullTask(mq)", ("PULL-36", "PULL-31")),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name: str) -> None:
    module, old, new, clauses = MUTANTS[name]
    variant_caught(PullCorrectionMachine, module, old, new, clauses, examples=MUTANT_EXAMPLES, steps=MUTANT_STEPS)


# ------------------------------------------------------------------------------------------ configuration variants
# For each dimension the machine draws, a broken copy that only a non-default value of it reveals: the machine catches
# it, and the machine with that dimension pinned to its default does not (slow: two searches each).
VARIANTS = {
    "consumer.pullBatchSize": (
        push_consumer_module, "offset, self.config.pull_batch_size, sys_flag, commit_offset,",
        "offset, 32, sys_flag, commit_offset,", ("PULL-8",)),
    "consumer.kind": (
        lite_module, "                    state.pull_offset = result.next_begin_offset",
        "                    state.pull_offset = result.next_begin_offset if result.status is not "
        "PullStatus.OFFSET_ILLEGAL else state.pull_offset", ("PULL-32",)),
    "consumer.consumeFromWhere": (
        store_reading, "            return right\n        if right_time == -1:",
        "            return right + 1\n        if right_time == -1:", ("PULL-28", "PULL-30")),
    "topic.queueNums": (
        pull_module, "if header.queue_id < 0 or header.queue_id >= topic_config.read_queue_nums:",
        "if header.queue_id < 0 or header.queue_id >= topic_config.write_queue_nums:", ("PULL-16",)),
    "topic.perm": (
        pull_module, "        if not topic_config.perm & PERM_READ:", "        if False:", ("PULL-16",)),
    "broker.flushDiskType": (
        flush_module, "        if not self._group_commit:\n            self._flush_commit_log()",
        "        if not self._group_commit:\n            pass", ("PULL-42",)),
}


def test_every_dimension_has_a_variant() -> None:
    assert set(VARIANTS) == set(PullCorrectionMachine.DIMENSIONS)


@pytest.mark.slow
@pytest.mark.parametrize("dimension", sorted(VARIANTS))
def test_variant_needs_a_non_default_configuration(dimension: str) -> None:
    module, old, new, clauses = VARIANTS[dimension]
    variant_needs(PullCorrectionMachine, dimension, module, old, new, clauses, examples=MUTANT_EXAMPLES,
                  steps=MUTANT_STEPS)
