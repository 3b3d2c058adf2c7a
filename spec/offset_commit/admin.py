"""Offset commit: the guards and effects of the admin requests that change or report the group's offsets
(``mqadmin`` and ``DefaultMQAdminExt``: resetOffsetByTime, consumerProgress, brokerConsumeStats, queryCq time spans,
consumerConnection, getConsumerStatus, cloneGroupOffset, deleteSubGroup, updating and querying one offset) and of the
client's reset (OFF-25, OFF-26, OFF-27, OFF-28, OFF-29, OFF-30).

A report's answer becomes the state's ``answer`` (its rows as the lockstep machine compares them); a change acts on
the group's offsets. The group's topic is the first queue's topic; ``CLONE_GROUP_OFFSET`` copies to one other group.
"""

from __future__ import annotations

from typing import Any

from rocketspec.spec.offset_commit.broker import consume_stats_row, consume_time_span, reset_target
from rocketspec.spec.offset_commit.oracles import NO_OFFSET, ProcessQueueState, broker_query_offset, update_offset
from rocketspec.spec.offset_commit.state import (
    AdminCommit,
    AllOffsetsAsked,
    Answer,
    BrokerConsumeStatsAsked,
    ConnectionsAsked,
    ConsumerStatusAsked,
    ConsumeStatsAsked,
    GroupDeleted,
    OffsetQueried,
    OffsetResetAsked,
    OffsetsCloned,
    OffsetState,
    OtherGroupUpdated,
    ResetApplied,
    ResetReceived,
    TimeSpanAsked,
    but,
)
from rocketspec.spec.offset_commit.steps import forget, held_stale, persist_entry, start_commit, valid, waive
from rocketspec.spec.protocol import ResponseCode

# The answer rows of ALL offsets name the group: the consumers' own, or the one its offsets were cloned to.
OWN_GROUP = "group"
CLONE_GROUP = "clone"


def _topic(state: OffsetState) -> str:
    return state.config.queues[0].topic


def _online(state: OffsetState, broker: str) -> tuple[int, ...]:
    """The clients online at ``broker`` (OFF-29)."""
    return tuple(c for c, client in enumerate(state.clients) if client.alive and broker in client.online)


def _queues_of(state: OffsetState, broker: str, topic: str) -> tuple[int, ...]:
    return tuple(q for q in state.config.on(broker) if state.config.queues[q].topic == topic)


def _group_topics(state: OffsetState, broker: str) -> tuple[str, ...]:
    """The topics the group has offsets of on ``broker`` (ConsumerOffsetManager.whichTopicByConsumer)."""
    queues = state.config.queues
    return tuple(sorted({queues[q].topic for q in state.config.on(broker) if state.queues[q].stored != NO_OFFSET}))


def _known(state: OffsetState, action: Any) -> bool:
    return action.broker in state.config.brokers


def _answered(state: OffsetState, answer: Answer) -> OffsetState:
    return but(state, answer=answer)


# --- Changes ------------------------------------------------------------------------------------------------


def _queue_known(state: OffsetState, action: OffsetQueried) -> bool:
    return valid(state, 0, action.queue)


def _admin_commit_enabled(state: OffsetState, action: AdminCommit) -> bool:
    return valid(state, 0, action.queue) and action.offset >= 0


def _admin_commit(state: OffsetState, action: AdminCommit) -> OffsetState:
    """An admin's UPDATE_CONSUMER_OFFSET travels to the broker and commits like any other (OFF-30, OFF-8); what it
    skips is given up."""
    state = but(start_commit(state, action.queue, action.offset), admin=state.admin + 1)
    if state.config.clustering:
        state = waive(state, 0, action.queue, action.offset)
    return _answered(state, Answer("UPDATE_CONSUMER_OFFSET", ResponseCode.SUCCESS))


def _cloned(state: OffsetState, action: OffsetsCloned) -> OffsetState:
    """CLONE_GROUP_OFFSET: the other group gets a copy of the group's offsets of the topic on the broker, when the
    group has any there (OFF-30)."""
    queues = _queues_of(state, action.broker, _topic(state))
    if any(state.queues[q].stored != NO_OFFSET for q in queues):
        for q in queues:
            state = state.with_queue(q, but(state.queues[q], cloned=state.queues[q].stored))
    return _answered(but(state, admin=state.admin + 1), Answer("CLONE_GROUP_OFFSET", ResponseCode.SUCCESS))


def _group_deleted(state: OffsetState, action: GroupDeleted) -> OffsetState:
    """DELETE_SUBSCRIPTIONGROUP with removeOffset: the group's settings go (written at once) and its offsets on
    the broker with them, which the table's next persist writes (OFF-30)."""
    for q in state.config.on(action.broker):
        state = state.with_queue(q, but(state.queues[q], stored=NO_OFFSET))
    state = but(state, group_at=state.group_at - {action.broker},
                         group_saved=state.group_saved - {action.broker}, admin=state.admin + 1)
    return _answered(state, Answer("DELETE_SUBSCRIPTIONGROUP", ResponseCode.SUCCESS))


def _other_group_updated(state: OffsetState, action: OtherGroupUpdated) -> OffsetState:
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP of another group: the broker writes its whole subscription group table,
    the group's settings with it when it knows them (OFF-22)."""
    saved = state.group_saved | {action.broker} if action.broker in state.group_at \
        else state.group_saved - {action.broker}
    return but(state, group_saved=saved)


def _reset_enabled(state: OffsetState, action: OffsetResetAsked) -> bool:
    # One reset at a time: a client applies resets one after the other (resetOffset is synchronized).
    return _known(state, action) and all(c.reset_sent is None and c.reset is None for c in state.clients)


def _reset_asked(state: OffsetState, action: OffsetResetAsked) -> OffsetState:
    """INVOKE_BROKER_TO_RESET_OFFSET (OFF-25, OFF-21): per write queue of the topic the offset at the timestamp,
    kept at the committed one unless forced or lower; SYSTEM_ERROR when a queue was never committed,
    CONSUMER_NOT_ONLINE without an online client, else every online client is sent the offsets."""
    state = but(state, admin=state.admin + 1)
    queues = _queues_of(state, action.broker, _topic(state))
    targets = [reset_target(state.queues[q].times, state.queues[q].stored, action.timestamp, action.force)
               for q in queues]
    if any(t is None for t in targets):
        return _answered(state, Answer("INVOKE_BROKER_TO_RESET_OFFSET", ResponseCode.SYSTEM_ERROR))
    online = _online(state, action.broker)
    if not online:
        return _answered(state, Answer("INVOKE_BROKER_TO_RESET_OFFSET", ResponseCode.CONSUMER_NOT_ONLINE))
    sent = tuple((q, t) for q, t in zip(queues, targets, strict=True) if t is not None)
    for c in online:
        state = state.with_client(c, but(state.clients[c], reset_sent=sent))
    return _answered(state, Answer("INVOKE_BROKER_TO_RESET_OFFSET", ResponseCode.SUCCESS, sent))


def _reset_received_enabled(state: OffsetState, action: ResetReceived) -> bool:
    return 0 <= action.client < len(state.clients) and state.clients[action.client].alive and \
        state.clients[action.client].reset_sent is not None


def _reset_received(state: OffsetState, action: ResetReceived) -> OffsetState:
    """A client told to reset suspends pulling and marks the listed ProcessQueues it holds dropped, clearing them:
    their consume requests go, a pull in flight becomes stale (OFF-26); what they cached is given up."""
    client = state.clients[action.client]
    assert client.reset_sent is not None
    for queue, _offset in client.reset_sent:
        lane = state.lanes[action.client][queue]
        held = lane.held
        if held is None:
            continue
        cleared = ProcessQueueState((), (), 0, held.pq.consuming)
        stale = held_stale(lane, but(held, pq=cleared))
        state = state.with_lane(action.client, queue, but(lane, held=but(
            held, pq=cleared, requests=(), pull=None, dropped=True, moved_to=None), stale=stale))
        # What the ProcessQueue cached is consumed again only if the reset's offset leads back to it: given up.
        state = waive(state, action.client, queue, held.next_offset)
    return state.with_client(action.client, but(client, paused=True, reset=client.reset_sent,
                                                         reset_sent=None))


def _reset_applied_enabled(state: OffsetState, action: ResetApplied) -> bool:
    return 0 <= action.client < len(state.clients) and state.clients[action.client].alive and \
        state.clients[action.client].reset is not None


def _reset_applied(state: OffsetState, action: ResetApplied) -> OffsetState:
    """10 s later each listed queue still in processQueueTable gets updateOffset(offset, false), persist(mq),
    removeOffset(mq) and leaves the table; then the client resumes (and rebalances) (OFF-26). What a forward reset
    skips is given up."""
    client = state.clients[action.client]
    assert client.reset is not None
    for queue, offset in client.reset:
        lane = state.lanes[action.client][queue]
        if lane.held is None:
            continue
        state = state.with_lane(action.client, queue, but(lane, memory=update_offset(lane.memory, offset,
                                                                                              False)))
        state = forget(persist_entry(state, action.client, queue), action.client, queue)
        state = state.with_lane(action.client, queue, but(state.lanes[action.client][queue], held=None))
        state = waive(state, action.client, queue, offset)
    return state.with_client(action.client, but(state.clients[action.client], paused=False, reset=None))


# --- Reports ------------------------------------------------------------------------------------------------


def _queried(state: OffsetState, action: OffsetQueried) -> OffsetState:
    """QUERY_CONSUMER_OFFSET asked by an admin: as a consumer's read, OFF-7."""
    code, offset = broker_query_offset(state.queues[action.queue].stored, 0, False)
    return _answered(state, Answer("QUERY_CONSUMER_OFFSET", code, ((offset,),)))


def _stats_rows(state: OffsetState, broker: str, topics: tuple[str, ...]) -> tuple[tuple[object, ...], ...]:
    rows: list[tuple[object, ...]] = []
    for topic in topics:
        for q in _queues_of(state, broker, topic):
            qs = state.queues[q]
            rows.append((topic, state.config.queues[q].queue_id, *consume_stats_row(qs.times, qs.stored)))
    return tuple(sorted(rows, key=repr))


def _consume_stats(state: OffsetState, action: ConsumeStatsAsked) -> OffsetState:
    """GET_CONSUME_STATS (OFF-27): rows (topic, queueId, brokerOffset, consumerOffset, lastTimestamp) for the topic
    asked, else for each topic the group has offsets of on the broker (every topic of the machine's group is
    subscribed, so none is left out)."""
    topics = (action.topic,) if action.topic else _group_topics(state, action.broker)
    return _answered(state, Answer("GET_CONSUME_STATS", ResponseCode.SUCCESS,
                                   _stats_rows(state, action.broker, topics)))


def _broker_stats(state: OffsetState, action: BrokerConsumeStatsAsked) -> OffsetState:
    """GET_BROKER_CONSUME_STATS (OFF-27): the group's rows as GET_CONSUME_STATS gives them when the broker knows
    its subscription settings, and the lag they add up to."""
    rows = _stats_rows(state, action.broker, _group_topics(state, action.broker)) \
        if action.broker in state.group_at else ()
    total = sum(int(str(r[2])) - int(str(r[3])) for r in rows)
    return _answered(state, Answer("GET_BROKER_CONSUME_STATS", ResponseCode.SUCCESS, rows, total))


def _all_offsets(state: OffsetState, action: AllOffsetsAsked) -> OffsetState:
    """GET_ALL_CONSUMER_OFFSET (OFF-27): the broker's table, (group, topic, queueId, offset) per entry of the
    group and of the group its offsets were cloned to."""
    rows: list[tuple[object, ...]] = []
    for q in state.config.on(action.broker):
        mq, qs = state.config.queues[q], state.queues[q]
        if qs.stored != NO_OFFSET:
            rows.append((OWN_GROUP, mq.topic, mq.queue_id, qs.stored))
        if qs.cloned != NO_OFFSET:
            rows.append((CLONE_GROUP, mq.topic, mq.queue_id, qs.cloned))
    return _answered(state, Answer("GET_ALL_CONSUMER_OFFSET", ResponseCode.SUCCESS, tuple(sorted(rows, key=repr))))


def _time_span(state: OffsetState, action: TimeSpanAsked) -> OffsetState:
    """QUERY_CONSUME_TIME_SPAN (OFF-28): (queueId, min, max, consume time, delay) per write queue of the topic."""
    rows = []
    for q in _queues_of(state, action.broker, action.topic):
        qs = state.queues[q]
        rows.append((state.config.queues[q].queue_id, *consume_time_span(qs.times, qs.stored, action.now_ms)))
    return _answered(state, Answer("QUERY_CONSUME_TIME_SPAN", ResponseCode.SUCCESS, tuple(sorted(rows))))


def _connections(state: OffsetState, action: ConnectionsAsked) -> OffsetState:
    """GET_CONSUMER_CONNECTION_LIST (OFF-29): the online clients and the group's message model and
    consumeFromWhere; CONSUMER_NOT_ONLINE when no client is online there."""
    online = _online(state, action.broker)
    if not online:
        return _answered(state, Answer("GET_CONSUMER_CONNECTION_LIST", ResponseCode.CONSUMER_NOT_ONLINE))
    config = state.config
    rows = (("settings", config.message_model.name, config.consume_from_where.name),
            *(("client", c) for c in online))
    return _answered(state, Answer("GET_CONSUMER_CONNECTION_LIST", ResponseCode.SUCCESS, rows))


def _consumer_status(state: OffsetState, action: ConsumerStatusAsked) -> OffsetState:
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (OFF-29): (client, queue, memory entry) of each online client's memory
    entries of the topic; SYSTEM_ERROR when no client is online there."""
    online = _online(state, action.broker)
    if not online:
        return _answered(state, Answer("INVOKE_BROKER_TO_GET_CONSUMER_STATUS", ResponseCode.SYSTEM_ERROR))
    topic = _topic(state)
    rows = tuple((c, q, lane.memory) for c in online for q, lane in enumerate(state.lanes[c])
                 if lane.memory != NO_OFFSET and state.config.queues[q].topic == topic)
    return _answered(state, Answer("INVOKE_BROKER_TO_GET_CONSUMER_STATUS", ResponseCode.SUCCESS, rows))
