"""Message filter: the state machine: frozen state, actions, the transition table, ``enabled`` and ``step``.

The machine is one consumer group on one broker: the topic's queues and what is stored in them, the group's push
consumers (each with its subscriptions, what its pulls brought and what its listener got), the group's
subscriptions the broker registered from heartbeats and its SQL92 filter data. The consumers are started and
re-subscribe (driven: the machine's environment); the broker stores messages, answers CHECK_CLIENT_CONFIG,
registers heartbeats and answers pulls, and the consumers rebalance and hand messages to their listeners (the
implementation's own actions, observed).
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from rocketspec.spec.message_filter.clauses import CLAUSES
from rocketspec.spec.message_filter.oracles import (
    FilterData,
    PullAnswer,
    Subscription,
    broker_keeps,
    build_subscription,
    check_client_config,
    client_keeps,
    pull_filter_answer,
    register_filter_data,
    register_subscriptions,
    registration_answer,
    scan_queue,
)
from rocketspec.spec.message_filter.tags import is_tag_type
from rocketspec.spec.protocol import (
    DEFAULT_RETRY_QUEUE_NUMS,
    EXPRESSION_TYPE_SQL92,
    EXPRESSION_TYPE_TAG,
    PULL_BATCH_SIZE,
    SUB_ALL,
    ResponseCode,
    retry_topic,
)
from rocketspec.spec.transitions import Transition, TransitionTable

TOPIC = "TopicTest"
GROUP = "CG"


# ---------------------------------------------------------------------------------------------------------- state
@attrs.frozen
class Message:
    """A stored message: its body, tags and every property the broker stored (``TAGS`` included)."""

    body: str
    tags: str | None = None
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def props(self) -> dict[str, str]:
        return dict(self.properties)


Entry = tuple[str, int, int]  # (topic, queue id, queue offset)


@attrs.frozen(cache_hash=True)
class Consumer:
    """One push consumer of the group: its current subscriptions (by topic) and every one it has had (a pull in
    flight or held at the broker carries an older version), whether it posts its subscription with each pull, the
    queues it owns, what its pulls brought that its listener has not had yet (``pending``) and what its listener
    got (``received``), and its CHECK_CLIENT_CONFIG answer."""

    client_id: str
    subscriptions: tuple[Subscription, ...]
    history: frozenset[Subscription]
    post_subscription: bool = False
    owned: frozenset[tuple[str, int]] = frozenset()
    pending: frozenset[Entry] = frozenset()
    received: frozenset[Entry] = frozenset()
    check: ResponseCode | None = None

    def sent_under(self, topic: str, version: int) -> Subscription | None:
        """The subscription of ``topic`` a pull with subVersion ``version`` was sent under: one the consumer had,
        or its current one with its version raised to ``version`` (``raised``)."""
        for sub in self.history:
            if sub.topic == topic and sub.version == version:
                return sub
        current = self.current(topic)
        if current is not None and version > current.version:
            return attrs.evolve(current, version=version)
        return None

    def current(self, topic: str) -> Subscription | None:
        for sub in self.subscriptions:
            if sub.topic == topic:
                return sub
        return None

    def raised(self, sub: Subscription) -> Consumer:
        """The consumer once a rebalance raised its subscription of ``sub.topic`` to ``sub``'s version."""
        if sub in self.history:
            return self
        subs = tuple(sub if s.topic == sub.topic else s for s in self.subscriptions)
        return attrs.evolve(self, subscriptions=subs, history=self.history | {sub})

    def reports(self, subs: tuple[Subscription, ...]) -> bool:
        """Whether a heartbeat reporting ``subs`` is this consumer's: its current subscriptions, each at its
        version or a later one a rebalance raised it to."""
        if tuple(s.topic for s in subs) != tuple(s.topic for s in self.subscriptions):
            return False
        return all(r == s or (attrs.evolve(r, version=s.version) == s and r.version > s.version)
                   for r, s in zip(subs, self.subscriptions, strict=True))


@attrs.frozen(cache_hash=True)
class FilterState:
    """The group on the broker: the broker's enablePropertyFilter, the topic's queues, the registered subscriptions
    (None: no consumer of the group known), the clients registered, the filter data by topic and the consumers (by
    client id). A pull's answer is ``pull_answer`` of the state it comes in."""

    enable_property_filter: bool
    topic: str = TOPIC
    group: str = GROUP
    queues: tuple[tuple[Message, ...], ...] = ((),)
    registered: tuple[Subscription, ...] | None = None
    clients: frozenset[str] = frozenset()
    filters: tuple[tuple[str, FilterData], ...] = ()
    consumers: tuple[Consumer, ...] = ()

    # Views (the diagrams and the invariants read them).
    @property
    def filter_data(self) -> FilterData | None:
        """The group's filter data for the topic."""
        return self.filter_of(self.topic)

    @property
    def sub_version(self) -> int:
        """The topic's registered subscription version (0: none)."""
        sub = self.registered_of(self.topic)
        return 0 if sub is None else sub.version

    @property
    def clock(self) -> int:
        """The latest subscription version so far (versions are times)."""
        return max((s.version for c in self.consumers for s in c.history), default=0)

    @property
    def retry(self) -> str:
        return retry_topic(self.group)

    def filter_of(self, topic: str) -> FilterData | None:
        return dict(self.filters).get(topic)

    def registered_of(self, topic: str) -> Subscription | None:
        for sub in self.registered or ():
            if sub.topic == topic:
                return sub
        return None

    def consumer(self, client_id: str) -> Consumer | None:
        for consumer in self.consumers:
            if consumer.client_id == client_id:
                return consumer
        return None

    def queue_count(self, topic: str) -> int:
        """The read queues of ``topic``: the topic's, or the retry topic's (created by the first heartbeat)."""
        if topic == self.topic:
            return len(self.queues)
        return DEFAULT_RETRY_QUEUE_NUMS if topic == self.retry else 0

    def stored(self, topic: str, queue_id: int) -> tuple[Message, ...]:
        """The messages of a queue (nothing is sent to the retry topic here)."""
        return self.queues[queue_id] if topic == self.topic else ()

    def message(self, entry: Entry) -> Message | None:
        topic, queue_id, offset = entry
        queue = self.stored(topic, queue_id) if 0 <= queue_id < self.queue_count(topic) else ()
        return queue[offset] if 0 <= offset < len(queue) else None


def _with_consumer(state: FilterState, consumer: Consumer) -> FilterState:
    others = tuple(c for c in state.consumers if c.client_id != consumer.client_id)
    return attrs.evolve(state, consumers=tuple(sorted((*others, consumer), key=lambda c: c.client_id)))


# -------------------------------------------------------------------------------------------------------- actions
@attrs.frozen
class ConsumerStarts:
    """A push consumer of the group subscribes the topic with an expression of a type, at ``version`` (the time),
    and starts (with postSubscriptionWhenPull or not)."""

    client_id: str
    expression_type: str
    expression: str
    version: int
    post_subscription: bool = False


@attrs.frozen
class Subscribe:
    """A started consumer subscribes the topic again, at a later ``version``."""

    client_id: str
    expression_type: str
    expression: str
    version: int


@attrs.frozen
class Store:
    """The broker stores a message at the end of one of the topic's queues."""

    queue_id: int
    message: Message


@attrs.frozen
class CheckClientConfig:
    """The broker answers a consumer's CHECK_CLIENT_CONFIG for one of its subscriptions."""

    client_id: str
    subscription: Subscription


@attrs.frozen
class Heartbeat:
    """The broker registers a consumer's heartbeat, which reports these subscriptions."""

    client_id: str
    subscriptions: tuple[Subscription, ...]


@attrs.frozen
class Rebalanced:
    """A consumer's rebalance of a topic gave it these queue ids."""

    client_id: str
    topic: str
    queue_ids: frozenset[int]


@attrs.frozen
class Pull:
    """The broker processes a consumer's PULL_MESSAGE: a queue, an offset, the subVersion, the subscription it
    posts (type and expression; None without the subscription bit), whether it may be held (the suspend bit, on
    its first processing; False when a held pull is run again) and maxMsgNums."""

    client_id: str
    topic: str
    queue_id: int
    offset: int
    sub_version: int
    subscription: tuple[str, str] | None = None
    suspend: bool = True
    max_msgs: int = PULL_BATCH_SIZE


@attrs.frozen
class Deliver:
    """A consumer's listener gets a message its pulls brought."""

    client_id: str
    topic: str
    queue_id: int
    offset: int


Action = ConsumerStarts | Subscribe | Store | CheckClientConfig | Heartbeat | Rebalanced | Pull | Deliver


# ------------------------------------------------------------------------------------------------------- guards
def _starts_enabled(state: FilterState, action: ConsumerStarts) -> bool:
    return (state.consumer(action.client_id) is None and action.version >= 0
            and build_subscription(state.topic, action.expression_type, action.expression, action.version) is not None)


def _subscribe_enabled(state: FilterState, action: Subscribe) -> bool:
    consumer = state.consumer(action.client_id)
    if consumer is None or any(s.version >= action.version for s in consumer.history if s.topic == state.topic):
        return False
    return build_subscription(state.topic, action.expression_type, action.expression, action.version) is not None


def _store_enabled(state: FilterState, action: Store) -> bool:
    return 0 <= action.queue_id < len(state.queues) and action.message.props.get("TAGS") == action.message.tags


def _check_enabled(state: FilterState, action: CheckClientConfig) -> bool:
    consumer = state.consumer(action.client_id)
    return consumer is not None and consumer.check is None and action.client_id not in state.clients \
        and action.subscription in consumer.subscriptions and not is_tag_type(action.subscription.expression_type)


def _heartbeat_enabled(state: FilterState, action: Heartbeat) -> bool:
    consumer = state.consumer(action.client_id)
    return consumer is not None and consumer.reports(action.subscriptions)


def _rebalanced_enabled(state: FilterState, action: Rebalanced) -> bool:
    return state.consumer(action.client_id) is not None and state.queue_count(action.topic) > 0 and all(
        0 <= q < state.queue_count(action.topic) for q in action.queue_ids)


def _pull_enabled(state: FilterState, action: Pull) -> bool:
    consumer = state.consumer(action.client_id)
    if consumer is None or not 0 <= action.queue_id < state.queue_count(action.topic):
        return False
    if not 0 <= action.offset <= len(state.stored(action.topic, action.queue_id)):
        return False
    sub = consumer.sent_under(action.topic, action.sub_version)
    if sub is None or action.max_msgs != PULL_BATCH_SIZE:
        return False
    posted = (sub.expression_type, sub.expression) if consumer.post_subscription else None
    return action.subscription == posted


def _deliver_enabled(state: FilterState, action: Deliver) -> bool:
    consumer = state.consumer(action.client_id)
    return consumer is not None and (action.topic, action.queue_id, action.offset) in consumer.pending


# ------------------------------------------------------------------------------------------------------ effects
def _starts(state: FilterState, action: ConsumerStarts) -> FilterState:
    """A consumer that subscribes with a subscription FilterAPI.build makes (FILTER-24) starts: in clustering mode
    it also subscribes its group's retry topic with ``*``, at the same time (FILTER-24); its CHECK_CLIENT_CONFIG,
    heartbeats, rebalances and pulls follow (FILTER-25)."""
    sub = build_subscription(state.topic, action.expression_type, action.expression, action.version)
    assert sub is not None
    retry = Subscription(state.retry, EXPRESSION_TYPE_TAG, SUB_ALL, action.version)
    subs = tuple(sorted((sub, retry), key=lambda s: s.topic))
    consumer = Consumer(action.client_id, subs, frozenset(subs), action.post_subscription)
    return _with_consumer(state, consumer)


def _subscribe(state: FilterState, action: Subscribe) -> FilterState:
    """A new subscription of the topic replaces the consumer's current one; pulls already sent keep the version
    they were sent with (FILTER-24)."""
    consumer = state.consumer(action.client_id)
    sub = build_subscription(state.topic, action.expression_type, action.expression, action.version)
    assert consumer is not None and sub is not None
    subs = tuple(sorted((sub, *(s for s in consumer.subscriptions if s.topic != state.topic)), key=lambda s: s.topic))
    consumer = attrs.evolve(consumer, subscriptions=subs, history=consumer.history | {sub})
    return _with_consumer(state, consumer)


def _store(state: FilterState, action: Store) -> FilterState:
    """A message is stored at the end of a queue, with its tags and properties (FILTER-2 codes its tags)."""
    queues = list(state.queues)
    queues[action.queue_id] = (*queues[action.queue_id], action.message)
    return attrs.evolve(state, queues=tuple(queues))


def _check(state: FilterState, action: CheckClientConfig) -> FilterState:
    """The broker answers a start's CHECK_CLIENT_CONFIG for a non-tag subscription, once, before the consumer's
    first heartbeat (FILTER-17, FILTER-25)."""
    consumer = state.consumer(action.client_id)
    assert consumer is not None
    sub = action.subscription
    code = check_client_config(True, sub.expression_type, sub.expression, state.enable_property_filter)
    return _with_consumer(state, attrs.evolve(consumer, check=code))


def _heartbeat(state: FilterState, action: Heartbeat) -> FilterState:
    """A heartbeat reports the consumer's current subscriptions (a rebalance may have raised their versions,
    FILTER-24) and registers the client and them (FILTER-22), and for each non-tag one the group's filter data of
    its topic (FILTER-18)."""
    consumer = state.consumer(action.client_id)
    assert consumer is not None
    for sub in action.subscriptions:
        consumer = consumer.raised(sub)
    state = _with_consumer(state, consumer)
    filters = dict(state.filters)
    for sub in action.subscriptions:
        data = register_filter_data(filters.get(sub.topic), sub.expression_type, sub.expression, sub.version)
        if data is None:
            filters.pop(sub.topic, None)
        else:
            filters[sub.topic] = data
    return attrs.evolve(
        state, registered=register_subscriptions(state.registered, action.subscriptions),
        clients=state.clients | {action.client_id}, filters=tuple(sorted(filters.items())))


def _rebalanced(state: FilterState, action: Rebalanced) -> FilterState:
    """The consumer owns the queues its rebalance gave it; what an earlier ownership of a queue it owns again had
    not consumed was dropped with that queue (FILTER-26)."""
    consumer = state.consumer(action.client_id)
    assert consumer is not None
    now = frozenset((action.topic, q) for q in action.queue_ids)
    gained = now - consumer.owned
    owned = frozenset(o for o in consumer.owned if o[0] != action.topic) | now
    pending = frozenset(e for e in consumer.pending if (e[0], e[1]) not in gained)
    return _with_consumer(state, attrs.evolve(consumer, owned=owned, pending=pending))


def pull_answer(state: FilterState, action: Pull) -> tuple[PullAnswer, tuple[str, str | None] | None]:
    """The broker's answer to ``action`` in ``state`` and what it filtered with (FILTER-19, FILTER-20, FILTER-21,
    FILTER-22, FILTER-23): the subscription checks, then the filter checks, then the queue read through the filter
    (the tags code of FILTER-2, the SQL92 filter data of FILTER-16)."""
    if action.subscription is not None:
        kind, expression = action.subscription
        sub = build_subscription(action.topic, kind, expression, action.sub_version)
        if sub is None:
            return PullAnswer(ResponseCode.SUBSCRIPTION_PARSE_FAILED), None
        # Compiled for this pull only: one that does not compile has no filter data (FILTER-19).
        data = register_filter_data(None, kind, expression, action.sub_version)
    else:
        code = registration_answer(state.registered, action.topic, action.sub_version)
        if code is not None:
            return PullAnswer(code), None
        found = state.registered_of(action.topic)
        assert found is not None
        sub, data = found, state.filter_of(action.topic)
    code = pull_filter_answer(action.subscription is not None, sub.expression_type, sub.expression, data,
                              action.sub_version, state.enable_property_filter)
    if code is not None:
        return PullAnswer(code), None
    queue = state.stored(action.topic, action.queue_id)
    sql = None if data is None else data.expression
    kept = tuple(broker_keeps(sub.expression_type, sub.expression, sql, m.tags, m.props) for m in queue)
    filtered_by = (sub.expression_type, sub.expression if is_tag_type(sub.expression_type) else sql)
    return scan_queue(kept, action.offset, action.max_msgs, action.suspend), filtered_by


def _pull(state: FilterState, action: Pull) -> FilterState:
    """The broker answers the pull (``pull_answer``: FILTER-19, FILTER-20, FILTER-21, FILTER-22, FILTER-23); what a
    SUCCESS brings and the subscription the pull was sent under keeps at the client waits for the consumer's listener
    (FILTER-3, FILTER-26). Nothing registered changes (FILTER-20); a version the consumer's current subscription was
    raised to is the consumer's from now on (FILTER-24)."""
    answer, _filtered_by = pull_answer(state, action)
    consumer = state.consumer(action.client_id)
    assert consumer is not None
    sub = consumer.sent_under(action.topic, action.sub_version)
    assert sub is not None
    consumer = consumer.raised(sub)
    state = _with_consumer(state, consumer)
    if answer.code is not ResponseCode.SUCCESS:
        return state
    queue = state.stored(action.topic, action.queue_id)
    kept = {(action.topic, action.queue_id, o) for o in answer.found if client_keeps(sub, queue[o].tags)}
    return _with_consumer(state, attrs.evolve(consumer, pending=consumer.pending | kept))


def _deliver(state: FilterState, action: Deliver) -> FilterState:
    """The listener gets a message a pull brought that the client's filter kept (FILTER-3, FILTER-26)."""
    consumer = state.consumer(action.client_id)
    assert consumer is not None
    entry = (action.topic, action.queue_id, action.offset)
    return _with_consumer(state, attrs.evolve(consumer, pending=consumer.pending - {entry},
                                              received=consumer.received | {entry}))


# --------------------------------------------------------------------------------------------------- candidates
@attrs.frozen
class Bounds:
    """What a model tries: the client ids, the subscriptions (type, expression), the messages stored in turn (at
    most ``max_messages``), the highest version, whether consumers post their subscription with pulls, whether the
    retry topic is pulled (its queue stays empty), whether a consumer gives its queues up, which consumers
    re-subscribe, rebalance and pull (the others only heartbeat their subscriptions)."""

    clients: tuple[str, ...] = ("c1", "c2")
    # "Aa" and "BB" have the same String.hashCode: the broker keeps m0 for "Aa", the client drops it (FILTER-3).
    expressions: tuple[tuple[str, str], ...] = (
        (EXPRESSION_TYPE_TAG, "Aa"), (EXPRESSION_TYPE_SQL92, "a > 1"), (EXPRESSION_TYPE_SQL92, "a >"))
    messages: tuple[Message, ...] = (
        Message("m0", "BB", (("TAGS", "BB"), ("a", "2"))),
        Message("m1", "Aa", (("TAGS", "Aa"), ("a", "1"))),
    )
    max_messages: int = 1
    max_version: int = 2
    post_subscription: tuple[bool, ...] = (False,)
    retry_pulls: bool = False
    give_up: bool = False
    resubscribe: tuple[str, ...] = ("c1",)
    rebalancing: tuple[str, ...] = ("c1",)
    pulling: tuple[str, ...] = ("c1",)


def _starts_candidates(state: FilterState, bounds: Bounds) -> Iterator[ConsumerStarts]:
    for client in bounds.clients:
        if state.consumer(client) is None:
            for kind, expression in bounds.expressions:
                for version in sorted({max(state.clock, 1), state.clock + 1}):
                    if version <= bounds.max_version:
                        for post in bounds.post_subscription:
                            yield ConsumerStarts(client, kind, expression, version, post)
            return  # consumers start in the order of their ids


def _subscribe_candidates(state: FilterState, bounds: Bounds) -> Iterator[Subscribe]:
    version = state.clock + 1
    if version <= bounds.max_version:
        for consumer in state.consumers:
            if consumer.client_id not in bounds.resubscribe:
                continue
            for kind, expression in bounds.expressions:
                yield Subscribe(consumer.client_id, kind, expression, version)


def _store_candidates(state: FilterState, bounds: Bounds) -> Iterator[Store]:
    count = sum(len(q) for q in state.queues)
    if count < min(bounds.max_messages, len(bounds.messages)):
        for queue_id in range(len(state.queues)):
            yield Store(queue_id, bounds.messages[count])


def _check_candidates(state: FilterState, bounds: Bounds) -> Iterator[CheckClientConfig]:
    for consumer in state.consumers:
        for sub in consumer.subscriptions:
            yield CheckClientConfig(consumer.client_id, sub)


def _heartbeat_candidates(state: FilterState, bounds: Bounds) -> Iterator[Heartbeat]:
    for consumer in state.consumers:
        yield Heartbeat(consumer.client_id, consumer.subscriptions)


def _rebalanced_candidates(state: FilterState, bounds: Bounds) -> Iterator[Rebalanced]:
    # A consumer takes every queue, or (another consumer joined) gives them up.
    everything = frozenset(range(len(state.queues)))
    for consumer in state.consumers:
        if consumer.client_id not in bounds.rebalancing:
            continue
        owns = frozenset(q for t, q in consumer.owned if t == state.topic)
        for queue_ids in ((everything,) if not owns else (frozenset(),) if bounds.give_up else ()):
            yield Rebalanced(consumer.client_id, state.topic, queue_ids)


def _pull_candidates(state: FilterState, bounds: Bounds) -> Iterator[Pull]:
    for consumer in state.consumers:
        if consumer.client_id not in bounds.pulling:
            continue
        for sub in sorted(consumer.history, key=lambda s: (s.topic, s.version)):
            if sub.topic != state.topic and not bounds.retry_pulls:
                continue
            posted = (sub.expression_type, sub.expression) if consumer.post_subscription else None
            for queue_id in range(state.queue_count(sub.topic)):
                end = len(state.stored(sub.topic, queue_id))
                # From the start (the filter decides), and at the end: held, or run again after being held.
                tries = ((0, True), (end, True), (end, False)) if end else ((0, True), (0, False))
                for offset, suspend in tries:
                    yield Pull(consumer.client_id, sub.topic, queue_id, offset, sub.version, posted, suspend)


def _deliver_candidates(state: FilterState, bounds: Bounds) -> Iterator[Deliver]:
    for consumer in state.consumers:
        for topic, queue_id, offset in sorted(consumer.pending):
            yield Deliver(consumer.client_id, topic, queue_id, offset)


# ---------------------------------------------------------------------------------------------------- the machine
TRANSITIONS: TransitionTable[FilterState, Action, Bounds] = TransitionTable("message_filter", CLAUSES, (
    Transition(ConsumerStarts, _starts_enabled, _starts, _starts_candidates, ("FILTER-24", "FILTER-25")),
    Transition(Subscribe, _subscribe_enabled, _subscribe, _subscribe_candidates, ("FILTER-24",)),
    Transition(Store, _store_enabled, _store, _store_candidates, ("FILTER-2",)),
    Transition(CheckClientConfig, _check_enabled, _check, _check_candidates, ("FILTER-17", "FILTER-25"),
               label="check client config"),
    Transition(Heartbeat, _heartbeat_enabled, _heartbeat, _heartbeat_candidates, ("FILTER-18", "FILTER-22")),
    Transition(Rebalanced, _rebalanced_enabled, _rebalanced, _rebalanced_candidates, ("FILTER-26",)),
    Transition(Pull, _pull_enabled, _pull, _pull_candidates,
               ("FILTER-3", "FILTER-19", "FILTER-20", "FILTER-21", "FILTER-22", "FILTER-23", "FILTER-26")),
    Transition(Deliver, _deliver_enabled, _deliver, _deliver_candidates, ("FILTER-3", "FILTER-26")),
))

#: Whether an action can happen in a state (its transition's guard).
enabled = TRANSITIONS.enabled
#: The state after an enabled action (its transition's effect).
step = TRANSITIONS.step

