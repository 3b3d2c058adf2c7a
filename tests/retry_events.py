"""The consume_retry lockstep machine's reading of the implementation (see ``retry_lockstep``): its events, in order,
each turned into the spec action it is, the clock moved to the event first (``TimePasses``).

``Pulled`` (the client's pull that found messages), ``Deliver`` / ``LocalReconsume`` (the ``ConsumeDeliver`` events of
one listener call), ``ListenerReturns`` (its ``ConsumeResult`` events, with the answer the listener gave),
``BrokerAnswers`` (the client's ``SendBack`` via broker), ``SendBackFails`` (the client's own send to ``%RETRY%G``
starts), ``FallbackStored`` / ``FallbackFails`` (the client's ``SendBack`` via client / local), ``DeadLetterSent`` (the
orderly dead-letter send's final result), ``ScheduleDelivers`` (a parked copy put to its real topic). Every copy the
broker stores is checked against the copy the spec's step made (where, and with which count).
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any

import attrs
from lockstep import LockstepMachine

from rocketspec.refimpl import Cluster
from rocketspec.refimpl.events import (
    ConsumeDeliver,
    ConsumeResult,
    Event,
    MessageStored,
    PullResponseEvent,
    SendAttempt,
    SendBack,
    SendResultEvent,
)
from rocketspec.spec import consume_retry as cr
from rocketspec.spec.protocol import ConsumeOrderlyStatus, ConsumeStatus, Property

BROKER = "broker-a"


@attrs.frozen
class Call:
    """One listener call: the batch as the listener saw it and what it answered."""

    shown: tuple[tuple[int, int, str, cr.Props], ...]  # per message: chain, reconsumeTimes, topic, properties
    action: cr.ListenerReturns




class RetryEvents(LockstepMachine):
    """The event side of the consume_retry lockstep machine: a cluster, a consumer of G, and the events read so far."""

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.client_id = ""
        self.listener_form = ""
        self.uniq: dict[str, int] = {}
        self.calls: deque[Call] = deque()  # listener calls whose deliveries were not read yet
        self.answering: list[tuple[Call, list[str]]] = []  # calls delivered, with the results read so far
        self.cursor = 0
        self.delivering: list[ConsumeDeliver] = []
        self.attempts: dict[int, int] = {}
        # chain -> the last copy the broker stored (time, key, reconsumeTimes), until the send that made it is seen.
        self.copies: dict[int, tuple[int, cr.Key, int]] = {}
        self.broker_at: dict[int, int] = {}
        self.spec_received: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
        # Sends whose answer has not reached the consumer yet (the broker already decided): a rule ends once there
        # are none, so that both sides are compared between protocol steps.
        self.in_flight: set[tuple[str, int]] = set()
        self.received: dict[int, list[tuple[Any, ...]]] = defaultdict(list)

    @property
    def orderly(self) -> bool:
        return bool(self.config["consumer.orderly"])

    def _quiesce(self) -> None:
        """Let the answers of sends the broker already handled reach the consumer (a few ms of network)."""
        assert self.cluster is not None
        for _ in range(50):
            if not self.in_flight:
                return
            self.cluster.advance(1)
            self._drain()
        self.fail(f"RETRY-15, RETRY-16: sends never answered: {sorted(self.in_flight)}")

    def _catch_up(self) -> None:
        assert self.cluster is not None
        self._time_to(self.cluster.now_ms())

    def _time_to(self, ts: int) -> None:
        if ts > self.state.now_ms:
            self.observe(cr.TimePasses(ts - self.state.now_ms), "the clock")

    def _drain(self) -> None:
        assert self.cluster is not None
        events = self.cluster.events.events
        while self.cursor < len(events):
            event = events[self.cursor]
            self.cursor += 1
            self._event(event)

    def _chain_of(self, msg_id: str) -> int | None:
        return self.uniq.get(msg_id)

    def _in_flight(self, chain: int, stage: cr.Stage) -> cr.Key | None:
        for batch in self.state.batches:
            if batch.answered and batch.pending and batch.stage is stage:
                held = self.state.holding(batch.pending[0])
                if held is not None and held.chain == chain:
                    return batch.pending[0]
        return None

    def _event(self, event: Event) -> None:
        if isinstance(event, ConsumeDeliver) and event.group == cr.GROUP:
            self.delivering.append(event)
            if self.calls and len(self.delivering) == len(self.calls[0].action.members):
                self._delivered()
        elif isinstance(event, ConsumeResult) and event.group == cr.GROUP:
            self._result(event)
        elif isinstance(event, PullResponseEvent) and event.node == self.client_id and event.status == "FOUND":
            self._pulled(event)
        elif isinstance(event, MessageStored):
            self._stored(event)
        elif isinstance(event, SendAttempt) and event.node == self.client_id and event.topic == cr.RETRY:
            self._attempt(event)
        elif isinstance(event, SendResultEvent) and event.node == self.client_id and event.topic == cr.RETRY:
            if event.final and self.orderly:
                self._dead_letter_done(event)
        elif isinstance(event, SendBack) and event.group == cr.GROUP:
            self._send_back(event)

    def _pulled(self, event: PullResponseEvent) -> None:
        if not event.count:
            return
        offsets = tuple(range(event.offset, event.offset + event.count))
        if event.next_offset != event.offset + event.count:
            self.fail(f"RETRY-31: a pull of {event.topic} from {event.offset} found {event.count} messages, next "
                      f"{event.next_offset}")
        self._time_to(event.ts_ms)
        self.observe(cr.Pulled(event.topic, event.queue_id, offsets), f"pulled {event.count}")

    def _stored(self, event: MessageStored) -> None:
        if event.topic == cr.TOPIC:
            self.uniq[event.msg_id] = len(self.state.chains)
            self._time_to(event.ts_ms)
            self.drive(cr.Publish(event.queue_id), f"m{len(self.state.chains)} stored at offset {event.offset}")
            return
        chain = self._chain_of(event.msg_id)
        if chain is None:
            return
        if event.topic in (cr.RETRY, cr.DLQ):
            self._time_to(event.ts_ms)
            for action in self.TABLE.enabled_actions(self.state, cr.Bounds(), [cr.ScheduleDelivers]):
                parked = self.state.find((cr.SCHEDULE, action.level - 1, action.offset))
                if parked is not None and parked.chain == chain and parked.real[0] == event.topic:
                    self.observe(action, f"m{chain} due")
                    return
            if event.topic == cr.RETRY:
                self.fail(f"RETRY-3, RETRY-7, RETRY-8: m{chain} stored in {cr.RETRY} at {event.offset} out of turn "
                          "(the spec parked no copy of it for %RETRY%G that is due)")
        if event.topic in (cr.SCHEDULE, cr.DLQ):  # a new copy: the send that made it is observed next
            self.copies[chain] = (event.ts_ms, (event.topic, event.queue_id, event.offset), event.reconsume_times)

    def _stored_at(self, chain: int) -> int | None:
        copy = self.copies.get(chain)
        return None if copy is None else copy[0]

    def _observe_copy(self, action: Any, chain: int, note: str) -> None:
        """Observe a send that made a copy of ``chain``: the spec stores it where, and with the count, the broker
        did (the transition's clauses name the rule)."""
        before = len(self.state.stored)
        self.observe(action, note)
        made = self.copies.pop(chain, None)
        new = self.state.stored[before:]
        spec = (new[0].key, new[0].reconsume_times) if new else None
        if made is not None and spec != made[1:]:
            self.fail(f"{', '.join(self.TABLE.clauses_of(action))}: m{chain}'s copy is stored at {made[1]} with "
                      f"reconsumeTimes {made[2]}; the spec stores {spec}")

    def _delivered(self) -> None:
        """One listener call's deliveries: a local re-consume of a waiting group, else a batch from the store."""
        call, batch, self.delivering = self.calls.popleft(), self.delivering, []
        keys = tuple((e.topic, e.queue_id, e.offset) for e in batch)
        if call.action.members != keys:
            self.fail(f"RETRY-28, RETRY-29: the listener saw {call!r}, the events a batch {keys}")
        self._time_to(batch[0].ts_ms)
        if any(w.members[:len(keys)] == keys for w in self.state.waiting) and not self.orderly:
            self.observe(cr.LocalReconsume(keys), "local re-consume")
        else:
            self.observe(cr.Deliver(keys[0][0], keys[0][1], tuple(k[2] for k in keys)), "delivered")
        for key, (chain, times, topic, props) in zip(keys, call.shown, strict=True):
            held = self.state.holding(key)
            assert held is not None
            self.spec_received[held.chain].append(
                (key, held.reconsume_times, cr.visible_topic(key[0], dict(held.properties).get(Property.RETRY_TOPIC),
                                                             cr.GROUP), held.properties))
            self.received[chain].append((key, times, topic, props))
        self.answering.append((call, []))

    def _result(self, event: ConsumeResult) -> None:
        key = (event.topic, event.queue_id, event.offset)
        entry = next((e for e in self.answering if key in e[0].action.members), None)
        if entry is None:
            self.fail(f"RETRY-13, RETRY-21: a result for {key}, which no listener call the spec knows holds")
        call, statuses = entry
        statuses.append(event.status)
        action = call.action
        if len(statuses) < len(action.members):
            return
        self.answering.remove(entry)
        if self.orderly:
            ok = action.status is ConsumeOrderlyStatus.SUCCESS
            expected = [(ConsumeOrderlyStatus.SUCCESS if ok else
                         ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT).name] * len(action.members)
        else:
            assert not isinstance(action.status, ConsumeOrderlyStatus)
            outcome = cr.after_listener(action.status, len(action.members), self.state.config.message_model,
                                        action.ack_index)
            expected = [(ConsumeStatus.CONSUME_SUCCESS if i < outcome.succeeded else
                         ConsumeStatus.RECONSUME_LATER).name for i in range(len(action.members))]
        if statuses != expected:
            self.fail(f"RETRY-13, RETRY-21: the listener answered {action!r} ({self.listener_form}), the consumer "
                      f"took it as {statuses}, the spec says {expected}")
        self._time_to(event.ts_ms)
        self.observe(action, f"the listener's answer for {action.members}")

    def _attempt(self, event: SendAttempt) -> None:
        chain = self._chain_of(event.msg_id)
        if chain is None:
            return
        self.attempts[chain] = event.attempt
        self.in_flight.add(("own", chain))
        if event.attempt == 1 and not self.orderly:
            self._back_failed(chain, event.ts_ms)

    def _back_failed(self, chain: int, ts: int) -> None:
        key = self._in_flight(chain, cr.Stage.BROKER)
        if key is not None:
            self._time_to(ts)
            self.observe(cr.SendBackFails(key), f"m{chain}'s send back failed")

    def _dead_letter_done(self, event: SendResultEvent) -> None:
        chain = self._chain_of(event.msg_id)
        key = self._in_flight(chain, cr.Stage.DEAD_LETTER) if chain is not None else None
        if chain is None or key is None:
            self.fail(f"RETRY-21: a dead-letter send of m{chain} the spec does not make: {event!r}")
        self._time_to(event.ts_ms)
        self.in_flight.discard(("own", chain))
        if event.status == "SEND_OK":
            outcome = cr.DeadLetterOutcome.RETRIED if event.attempt > 1 else cr.DeadLetterOutcome.STORED
            self._observe_copy(cr.DeadLetterSent(key, outcome, self._stored_at(chain)), chain, f"m{chain} dead letter")
        else:
            self.observe(cr.DeadLetterSent(key, cr.DeadLetterOutcome.FAILED), f"m{chain} dead letter failed")

    def _send_back(self, event: SendBack) -> None:
        chain = self._chain_of(event.msg_id)
        if chain is None:
            return
        if event.node == BROKER:
            self.broker_at[chain] = event.ts_ms
            self.in_flight.add(("back", chain))
            return
        if event.node != self.client_id or self.orderly:
            return
        self._time_to(event.ts_ms)
        self.in_flight.discard(("back" if event.via == "broker" else "own", chain))
        if event.via == "broker":
            key = self._in_flight(chain, cr.Stage.BROKER)
            if key is None:
                self.fail(f"RETRY-15: m{chain} sent back, the spec has no send back in flight")
            self._observe_copy(cr.BrokerAnswers(key, self.broker_at.pop(chain, None)), chain, f"m{chain} sent back")
            return
        self._back_failed(chain, event.ts_ms)  # an own send that could not even start (no route): no attempt
        key = self._in_flight(chain, cr.Stage.FALLBACK)
        if key is None:
            self.fail(f"RETRY-16: m{chain}'s own send ({event.via}), the spec has none in flight")
        if event.via == "client":
            retried = self.attempts.get(chain, 1) > 1
            self._observe_copy(cr.FallbackStored(key, retried, self._stored_at(chain)), chain,
                               f"m{chain} fallback stored")
        else:
            self.observe(cr.FallbackFails(key), f"m{chain} fallback failed")

