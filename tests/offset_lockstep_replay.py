"""The offset_commit lockstep machine's replay: what the reference implementation did since the last step (its events
and the hooks' notes, in order), as spec actions, each of which must be enabled where the spec is.

Most map one to one. Some need the story around them: a clustering read of a queue's offset is stepped when the
broker answers it (its QUERY_CONSUMER_OFFSET, noted with the client it came from), a broadcasting one at once (the
file is read on the spot); a consume request finishes at its first ConsumeResult and writes its result at once, or,
when it sent messages back (clustering, RECONSUME_LATER), after the last SendBack; a drop is a correction when the
ProcessQueue waits for one (OFF-23), and part of a reset while one is applied (OFF-26).
"""

from __future__ import annotations

from typing import Any

from offset_lockstep_support import Note

from rocketspec.refimpl.events import ConsumeResult, MessageStored, OffsetCommit, PullRequestEvent, PullResponseEvent
from rocketspec.refimpl.events import SendBack as SendBackEvent
from rocketspec.spec import offset_commit as spec
from rocketspec.spec.queues import MessageQueue

GROUP = "CG"
WRITING_STATUSES = ("NO_NEW_MSG", "NO_MATCHED_MSG")


class Replay:
    """Mixed into the machine, which provides the recorder, ``state``, ``observe``, ``drive``, ``fail``, the slot
    and queue lookups and the replay's bookkeeping (``pending_reads``, ``released``, ``sending_back``,
    ``backs_left``, ``applying``)."""

    recorder: Any
    spec_config: spec.Config
    pending_reads: set[tuple[int, int]]
    released: dict[tuple[str, MessageQueue, int], tuple[tuple[int, ...], bool, bool, bool]]
    sending_back: dict[tuple[str, str, int], tuple[int, int, tuple[int, ...]]]
    backs_left: dict[tuple[int, int, tuple[int, ...]], int]
    applying: set[int]

    def _replay(self) -> None:
        for entry in self.recorder.new():
            if isinstance(entry, Note):
                slot = self._slot(entry.data.get("client", ""))  # type: ignore[attr-defined]
                if slot is not None and not self.state.clients[slot].alive:  # type: ignore[attr-defined]
                    continue  # what a stopped client's callbacks still do changes nothing
                getattr(self, f"_note_{entry.kind}")(entry)
            elif isinstance(entry, MessageStored):
                self._stored(entry)
            elif isinstance(entry, PullRequestEvent):
                self._pull_sent(entry)
            elif isinstance(entry, PullResponseEvent):
                self._pull_failed(entry)
            elif isinstance(entry, ConsumeResult):
                self._consume_result(entry)
            elif isinstance(entry, SendBackEvent):
                self._sent_back(entry)
            elif isinstance(entry, OffsetCommit) and entry.group == GROUP:
                queue = self._queue(MessageQueue(entry.topic, entry.broker, entry.queue_id))  # type: ignore[attr-defined]
                if queue is not None:
                    self.observe(spec.CommitArrives(queue, entry.offset), "a commit reaches the broker")  # type: ignore[attr-defined]

    def _lane_of(self, client: str, mq: MessageQueue) -> tuple[int, int] | None:
        slot, queue = self._slot(client), self._queue(mq)  # type: ignore[attr-defined]
        return None if slot is None or queue is None else (slot, queue)

    # ------------------------------------------------------------------------------------------------ events
    def _stored(self, event: MessageStored) -> None:
        queue = self._queue(MessageQueue(event.topic, event.broker, event.queue_id))  # type: ignore[attr-defined]
        if queue is None:
            return
        expected = self.state.queues[queue].max_offset  # type: ignore[attr-defined]
        if event.offset != expected:
            self.fail(f"OFF-22: a message stored in {event.broker}:{event.topic}:{event.queue_id} at offset "  # type: ignore[attr-defined]
                      f"{event.offset}; the queue's max offset is {expected}")
        self.observe(spec.MessageStored(queue, event.ts_ms), "a message is stored")  # type: ignore[attr-defined]

    def _pull_sent(self, event: PullRequestEvent) -> None:
        lane = self._lane_of(event.node, MessageQueue(event.topic, event.broker, event.queue_id))
        if lane is not None and event.group == GROUP:
            self.observe(spec.PullSent(*lane, event.offset, event.commit_offset), "a pull is sent")  # type: ignore[attr-defined]

    def _pull_failed(self, event: PullResponseEvent) -> None:
        lane = self._lane_of(event.node, MessageQueue(event.topic, event.broker, event.queue_id))
        if lane is None or event.status != "ERROR" or not self.state.clients[lane[0]].alive:  # type: ignore[attr-defined]
            return  # a dead client's pulls fail with it
        held = self.state.lane(*lane).held  # type: ignore[attr-defined]
        if held is not None and not held.dropped and held.pull == event.offset:
            self.observe(spec.PullFailed(*lane, event.offset), f"the pull fails (code {event.code})")  # type: ignore[attr-defined]
        else:
            self.observe(spec.StalePullAnswered(*lane, event.offset, "ERROR"), "a stale pull fails")  # type: ignore[attr-defined]

    def _consume_result(self, event: ConsumeResult) -> None:
        mq = MessageQueue(event.topic, event.broker, event.queue_id)
        found = self.released.pop((event.node, mq, event.offset), None)
        lane = self._lane_of(event.node, mq)
        if found is None or lane is None:
            self.fail(f"OFF-4: a consume result for {mq} offset {event.offset} at {event.node} that no listener "  # type: ignore[attr-defined]
                      "returned while its ProcessQueue was held")
        assert found is not None and lane is not None
        offsets, success, first, live = found
        if not first:
            return
        if not live:
            if self.spec_config.orderly:
                return  # an orderly listener of a dropped ProcessQueue returned: its commit writes nothing
            self.fail(f"OFF-4, OFF-12: the result of {mq} offset {event.offset} at {event.node} was processed; its "  # type: ignore[attr-defined]
                      "ProcessQueue was dropped when the listener returned")
        if (event.status in ("CONSUME_SUCCESS", "SUCCESS")) != success:
            self.fail(f"OFF-4: the listener returned {'CONSUME_SUCCESS' if success else 'RECONSUME_LATER'}, the "  # type: ignore[attr-defined]
                      f"consumer took it as {event.status}")
        if self.spec_config.orderly:
            held = self.state.lane(*lane).held  # type: ignore[attr-defined]
            if held is not None and not held.dropped and held.pq.taken == offsets:
                self.observe(spec.OrderlyConsumed(*lane, success), "an orderly listener returned")  # type: ignore[attr-defined]
            return  # else its ProcessQueue was dropped meanwhile: the commit writes nothing
        self.observe(spec.ConsumeFinished(*lane, offsets, success), "a listener returned")  # type: ignore[attr-defined]
        if success or not self.spec_config.clustering:
            self.observe(spec.OffsetUpdated(*lane, offsets), "its removeMessage result is written")  # type: ignore[attr-defined]
        else:
            self.backs_left[(*lane, offsets)] = len(offsets)

    def _sent_back(self, event: SendBackEvent) -> None:
        if event.broker is not None:
            return  # the broker's row of the copy it made
        found = self.sending_back.pop((event.node, event.msg_id, event.reconsume_times), None)
        if found is None:
            return
        if event.via == "local":
            self.fail("OFF-4: a send-back failed (not modelled by this machine: its brokers accept them)")  # type: ignore[attr-defined]
        left = self.backs_left.get(found)
        if left is None:
            return
        if left > 1:
            self.backs_left[found] = left - 1
            return
        del self.backs_left[found]
        update = spec.OffsetUpdated(*found)
        if self.can(update):  # type: ignore[attr-defined]
            self.observe(update, "sent back; its removeMessage result is written")  # type: ignore[attr-defined]

    # ------------------------------------------------------------------------------------------------ notes
    def _note_heartbeat(self, note: Note) -> None:
        slot = self._slot(note["client"])  # type: ignore[attr-defined]
        if slot is not None and self.state.clients[slot].alive:  # type: ignore[attr-defined]
            self.observe(spec.Heartbeat(slot, note["broker"]), "a heartbeat")  # type: ignore[attr-defined]

    def _note_read(self, note: Note) -> None:
        lane = self._lane_of(note["client"], note["mq"])
        if lane is None:
            return
        if self.spec_config.clustering:
            self.pending_reads.add(lane)
        else:
            self.observe(spec.OffsetRead(*lane), "removeDirtyOffset, the file read")  # type: ignore[attr-defined]

    def _note_query(self, note: Note) -> None:
        lane = self._lane_of(note["client"], note["mq"])
        if lane is None or note["group"] != GROUP:
            return
        if lane not in self.pending_reads:
            self.fail(f"OFF-13: {note['client']} read {note['mq']} without adding it")  # type: ignore[attr-defined]
        self.pending_reads.discard(lane)
        self.observe(spec.OffsetRead(*lane), "removeDirtyOffset, the broker's answer")  # type: ignore[attr-defined]
        reading = self.state.lane(*lane).reading  # type: ignore[attr-defined]
        if reading is None or reading[0] != note["offset"]:
            self.fail(f"OFF-7: the broker answered {note['offset']} (code {note['code']}) for {note['mq']}; the spec "  # type: ignore[attr-defined]
                      f"reads {reading}")

    def _note_batch(self, note: Note) -> None:
        lane = self._lane_of(note["client"], note["mq"])
        if lane is None or not self.spec_config.orderly:
            return
        self.observe(spec.TakeMessages(*lane), "an orderly batch is taken")  # type: ignore[attr-defined]
        held = self.state.lane(*lane).held  # type: ignore[attr-defined]
        if held is None or held.pq.taken != note["offsets"]:
            self.fail(f"OFF-15: the orderly consumer took {note['offsets']}, the spec "  # type: ignore[attr-defined]
                      f"{None if held is None else held.pq.taken}")

    def _note_start(self, note: Note) -> None:
        lane = self._lane_of(note["client"], note["mq"])
        if lane is None:
            return
        start = note["start"]
        held = self.state.lane(*lane).held  # type: ignore[attr-defined]
        if held is not None and not held.started:
            # An orderly first pull's read of the offset (the local file's, on the spot) and its start (OFF-31).
            self.observe(spec.LockedRead(*lane), "the first pull after the lock reads the offset")  # type: ignore[attr-defined]
            self.observe(spec.LockedStart(*lane, start), "and pulls from its start")  # type: ignore[attr-defined]
            return
        if lane in self.pending_reads:
            # No broker answered the read: a fault made it an error answer (-1) or lost it (-2, the queue left out).
            self.pending_reads.discard(lane)
            failed = spec.StoreRead.FAILED if start == -1 else spec.StoreRead.NOT_FOUND
            self.observe(spec.OffsetRead(*lane, failed), f"the read is answered {failed.name}")  # type: ignore[attr-defined]
            if start == -1:
                return
        if start is None or start < 0:
            self.fail(f"OFF-13: the start of {note['mq']} at {note['client']} failed ({start}): not modelled by "  # type: ignore[attr-defined]
                      "this machine")
        self.observe(spec.QueueAssigned(*lane, start), "the ProcessQueue is added")  # type: ignore[attr-defined]

    def _note_pull_answer(self, note: Note) -> None:
        lane = self._lane_of(note["client"], note["mq"])
        if lane is None:
            return
        status = note["status"]
        if not note["live"]:
            self.observe(spec.StalePullAnswered(*lane, note["offset"], status, note["empty"]),  # type: ignore[attr-defined]
                         "a pull of a dropped ProcessQueue is answered")
        elif status == "FOUND":
            self.observe(spec.PullFound(*lane, note["count"], note["max_offset"]), "FOUND")  # type: ignore[attr-defined]
        elif status in WRITING_STATUSES:
            self.observe(spec.PullNoNewMessage(*lane, note["max_offset"]), status)  # type: ignore[attr-defined]
        elif status == "OFFSET_ILLEGAL":
            self.observe(spec.PullOffsetMoved(*lane, note["next_offset"]), status)  # type: ignore[attr-defined]
        else:
            self.fail(f"a pull answered {status}: not modelled by this machine")  # type: ignore[attr-defined]

    def _note_persist_all(self, note: Note) -> None:
        slot = self._slot(note["client"])  # type: ignore[attr-defined]
        if slot is not None and not note["shutdown"]:
            self.observe(spec.PersistAll(slot), "persistAll")  # type: ignore[attr-defined]

    def _note_drop(self, note: Note) -> None:
        lane = self._lane_of(note["client"], note["mq"])
        if lane is None or lane[0] in self.applying:
            return
        held = self.state.lane(*lane).held  # type: ignore[attr-defined]
        if held is not None and held.dropped and held.moved_to is not None:
            self.observe(spec.OffsetCorrected(*lane), "the OFFSET_ILLEGAL correction")  # type: ignore[attr-defined]
        else:
            self.observe(spec.QueueDropped(*lane), "the queue leaves the client")  # type: ignore[attr-defined]

    def _note_group_created(self, note: Note) -> None:
        if note["group"] == GROUP:
            self.observe(spec.GroupCreated(note["broker"]), "the broker creates the group's settings")  # type: ignore[attr-defined]

    def _note_broker_persist(self, note: Note) -> None:
        self.observe(spec.OffsetsPersisted(note["broker"]), "the broker persists its offsets")  # type: ignore[attr-defined]

    def _resetting(self, note: Note) -> int | None:
        """The slot of the consumer a reset note is about, while that consumer runs (a stopped one's reset does
        nothing: its process state is gone)."""
        slot = self._slot(note["client"])  # type: ignore[attr-defined]
        if slot is None or note["consumer"] is not self.consumers[slot] or not note["consumer"].alive():  # type: ignore[attr-defined]
            return None
        return int(slot)

    def _note_reset_begin(self, note: Note) -> None:
        slot = self._resetting(note)
        if slot is not None:
            self.observe(spec.ResetReceived(slot), "RESET_CONSUMER_CLIENT_OFFSET received")  # type: ignore[attr-defined]

    def _note_reset_apply(self, note: Note) -> None:
        slot = self._resetting(note)
        if slot is not None:
            self.observe(spec.ResetApplied(slot), "the reset applies, 10 s later")  # type: ignore[attr-defined]
            self.applying.add(slot)

    def _note_reset_done(self, note: Note) -> None:
        slot = self._slot(note["client"])  # type: ignore[attr-defined]
        self.applying.discard(slot)

    def _note_admin(self, note: Note) -> None:
        action = self.admin_action(note["broker"], note["code"], note["fields"], note.ts_ms)  # type: ignore[attr-defined]
        if action is not None:
            self.drive(action, "an admin request is handled")  # type: ignore[attr-defined]
