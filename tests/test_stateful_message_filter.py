"""Lockstep: the message_filter spec (FILTER-*) drives the reference implementation's broker and push consumers.

Each run draws the broker's enablePropertyFilter and the consumers' expression type (``tests/dimensions.py``): with
TAG every consumer subscribes with a tag expression (``*``, ``A || B``, tags whose ``String.hashCode`` collide,
blanks and control characters ``String.trim`` takes off), with SQL92 most subscribe with a selector of the grammar
(comparisons, AND / OR / NOT, BETWEEN, IN, IS [NOT] NULL, literals of every type, properties that are absent, text
4.9.8 ignores or refuses). One broker, a topic of two queues, up to three push consumers of one group (each with
postSubscriptionWhenPull or not), a producer sending messages with tags and user properties of every type.

Rules start consumers and re-subscribe them (driven through the spec: ``ConsumerStarts``, ``Subscribe``), send,
heartbeat, lose a consumer's next heartbeat and let time pass. Everything the broker and the consumers then do is
read off the implementation in order (``filter_observer``) and stepped through the spec as the action it is, which
must be enabled: each message stored (``Store``), CHECK_CLIENT_CONFIG answered (``CheckClientConfig``), heartbeat
registered (``Heartbeat``), rebalance (``Rebalanced``), pull processed (``Pull``: its answer, code, messages and
nextBeginOffset, must be the spec's ``pull_answer``) and message handed to a listener (``Deliver``). After every
rule the projections compare what each listener got, what waits for a listener, the group's registered
subscriptions and clients, its filter data, the consumers' CHECK_CLIENT_CONFIG outcomes and the last pull answers.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

import pytest
from filter_observer import BrokerObserver, Seen, answer_of
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from lockstep import LockstepMachine, machine_test, pinned, variant_caught, variant_needs
from sql92_examples import EXAMPLES, VALUES, selectors, typed_pool, typed_selectors

from rocketspec.refimpl import Cluster
from rocketspec.refimpl.broker import filter as filter_module
from rocketspec.refimpl.broker import sql92 as sql92_module
from rocketspec.refimpl.broker import sql92_values as values_module
from rocketspec.refimpl.client import consumer_config as consumer_config_module
from rocketspec.refimpl.client import pull_api as pull_api_module
from rocketspec.refimpl.client.consumer_config import MessageSelector, check_client_in_broker
from rocketspec.refimpl.client.consumer_config import SubscriptionData as ConsumerSubscription
from rocketspec.refimpl.client.push_consumer import PushConsumer
from rocketspec.refimpl.message import Message, MessageExt
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec import message_filter as spec
from rocketspec.spec.java import string_hash as java_string_hash
from rocketspec.spec.protocol import (
    EXPRESSION_TYPE_SQL92,
    EXPRESSION_TYPE_TAG,
    PULL_BATCH_SIZE,
    PULL_FLAG_SUBSCRIPTION,
    ConsumeStatus,
    RequestCode,
    ResponseCode,
)
from rocketspec.spec.queues import MessageQueue

TOPIC, GROUP = spec.TOPIC, spec.GROUP
QUEUES = 2
MAX_CONSUMERS = 3
# After each rule: past the first periodic heartbeat of a new client (1 s); a pull, its answer and its consumption
# take milliseconds of simulated time.
SETTLE_MS = 1_100
CHECK_TIMEOUT_MS = 3_000
PROBE_GROUP = "CG_PROBE"  # the group probe_pull pulls as (never registered: its pulls carry their subscription)
# Tags, two pairs of which share a String.hashCode ("Aa"/"BB", "AaBB"/"BBAa").
TAGS = ("A", "B", "Aa", "BB", "AaBB", "BBAa")
TAG_EXPRESSIONS = ("*", "", " ", "A || B", "Aa", "BB || A", "||", "A ||", "||A", " * ", "A |||| B", "AaBB")
# Tags String.trim takes control characters off (and leaves other Unicode spaces on).
TRIMMED = ("\x01Aa\x02", "A\u00a0", "\u3000A", " \x1fB || \x0bAa\x0c", "BB\u2003 || A")
# Selectors that compile (LIKE is no keyword of 4.9.8's grammar: "a LIKE 'x'" is the property a, cast to a boolean),
# and some that do not (or are empty: FilterAPI.build refuses those).
SQL_EXPRESSIONS = ("a > 1", "TAGS = 'Aa'", "a IS NULL", "a BETWEEN 1 AND 5", "b IN ('x', '1')", "NOT (a = 1)",
                   "a LIKE 'x'", "TRUE", "a > 1.5 OR b IS NOT NULL", "TAGS IN ('A', 'BB') AND a <> 2",
                   "c_1 IS NOT NULL AND NOT c_1 = 'x'", "A = TRUE OR b < 0", "a NOT BETWEEN -1 AND 1.5")
BAD_SQL = ("a >", "", "a = 'x", "1", "a > 'x'", "a BETWEEN 2 AND 1", "a ! 1", "a = 1 /* c", "(a = 1", "a IN (1)",
           "9999999999999999999 = a", "a > 1e400", "a > 0.0", "a NOT b", "a = \u00e9", "a = 'x\n", "a IN ('x', 1)",
           "a IS 1", "NOT", "a = \t#")
# User property values: not blank (Message.putUserProperty refuses those); numbers as Java parses them or not.
PROPERTY_VALUES = (*(v for v in VALUES if v.strip()), "+", "-", "NaNd", "0x1.8p1", "  2.5 ", "-0", "1E1", "5")
PROPERTIES = st.dictionaries(st.sampled_from(("a", "b", "A", "c_1")), st.sampled_from(PROPERTY_VALUES), max_size=3)
MESSAGES = st.lists(st.tuples(st.integers(0, QUEUES - 1), st.one_of(st.none(), st.sampled_from(TAGS)), PROPERTIES),
                    min_size=1, max_size=5)
# The parts of the projection, each named with the clauses that decide it.
RECEIVED = "what each listener got, by queue in queue order (FILTER-2, FILTER-3, FILTER-16, FILTER-23, FILTER-26)"
WAITING = "messages of owned queues no listener got (FILTER-26)"
REGISTERED = "the group's registered subscriptions: type, expression, version (FILTER-22, FILTER-24)"
CLIENTS = "the group's registered clients (FILTER-22)"
FILTER_DATA = "the group's filter data: expression, version (FILTER-18)"
CHECKS = "CHECK_CLIENT_CONFIG refusals a start threw (FILTER-17, FILTER-25)"
ANSWERS = "the last pull answer per consumer and queue (FILTER-19, FILTER-20, FILTER-21, FILTER-22, FILTER-23)"


# Built once: hypothesis validates and caches every strategy object it is given.
TAG_STRATEGY = st.one_of(st.sampled_from(TAG_EXPRESSIONS), st.sampled_from(TRIMMED),
                         st.lists(st.sampled_from(TAGS), min_size=1, max_size=3).map(" || ".join))
# Mostly selectors that compile: one subscription that does not spoils the whole group's filter data.
_TYPED = typed_selectors()
_REFUSED = typed_selectors(refused=True)
_POOL = st.sampled_from(typed_pool())
SQL_STRATEGY = st.one_of(_POOL, _POOL, _POOL, _POOL, _POOL, _TYPED, _TYPED, st.sampled_from(SQL_EXPRESSIONS),
                         selectors(), st.sampled_from(BAD_SQL))
# What check_subscription asks about: the selectors 4.9.8's jar was run on (every way to fail the lexer, the parser
# and the type checks), the machine's own, and generated ones.
CHECK_POOL = tuple(dict.fromkeys((*(e for e, _p, _r in EXAMPLES), *BAD_SQL, *SQL_EXPRESSIONS)))
CHECKED_SQL = st.lists(st.one_of(st.sampled_from(CHECK_POOL), st.sampled_from(CHECK_POOL), selectors(), _REFUSED),
                       min_size=1, max_size=6)
# What probe_pull filters with: mostly selectors that compile.
PROBED_SQL = st.lists(st.one_of(_POOL, _POOL, _POOL, _TYPED, st.sampled_from(CHECK_POOL)), min_size=1, max_size=6)
KIND_STRATEGY = st.integers(0, 3)
BOOLEANS = st.booleans()


def _selector(kind: str, expression: str) -> MessageSelector:
    return MessageSelector.by_sql(expression) if kind == EXPRESSION_TYPE_SQL92 else MessageSelector.by_tag(expression)


def _pull_clauses(code: int | None) -> str:
    if code in (ResponseCode.SUBSCRIPTION_NOT_EXIST, ResponseCode.SUBSCRIPTION_NOT_LATEST):
        return "FILTER-22"
    if code in (ResponseCode.FILTER_DATA_NOT_EXIST, ResponseCode.FILTER_DATA_NOT_LATEST):
        return "FILTER-20"
    if code == ResponseCode.SYSTEM_ERROR:
        return "FILTER-21"
    if code == ResponseCode.SUBSCRIPTION_PARSE_FAILED:
        return "FILTER-19"
    return "FILTER-2/FILTER-16/FILTER-23"


class MessageFilterMachine(LockstepMachine):
    """Push consumers of one group with tag and SQL92 subscriptions on one broker, stepped with the spec's filter
    machine (FILTER-1..26)."""

    TABLE = spec.TRANSITIONS
    DIMENSIONS = ("broker.enablePropertyFilter", "consumer.expressionType")
    # SQL92 on a broker that serves it is where most of the filter's rules are: drawn twice as often.
    VALUES: ClassVar[dict[str, st.SearchStrategy[Any]]] = {
        "broker.enablePropertyFilter": st.sampled_from((False, True, True)),
        "consumer.expressionType": st.sampled_from((EXPRESSION_TYPE_TAG, EXPRESSION_TYPE_SQL92, EXPRESSION_TYPE_SQL92)),
    }
    DRIVEN = (spec.ConsumerStarts, spec.Subscribe)
    OBSERVED = (spec.Store, spec.CheckClientConfig, spec.Heartbeat, spec.Rebalanced, spec.Pull, spec.Deliver)

    def __init__(self) -> None:
        super().__init__()
        self.cluster: Cluster | None = None
        self.consumers: dict[str, PushConsumer] = {}
        self.got: dict[str, dict[tuple[int, int], str]] = {}
        self.spec_answers: dict[str, tuple[int | None, tuple[int, ...], int | None]] = {}
        self.system_answers: dict[str, tuple[int | None, tuple[int, ...], int | None]] = {}
        self.sent = 0
        self.lost: dict[str, Any] = {}

    # ------------------------------------------------------------------------------------------------ setup
    def setup(self, config: dict[str, Any], data: st.DataObject) -> None:
        """One broker with the drawn enablePropertyFilter, the topic, a producer; no consumer yet."""
        enable = config["broker.enablePropertyFilter"]
        self.cluster = Cluster(brokers=1, clock="simulated", wire_codec="json", seed=5, keep_events=False,
                               enable_property_filter=enable)
        self.cluster.create_topic(TOPIC, QUEUES)
        self.observer = BrokerObserver(self.cluster.broker("broker-a"), self.cluster.events, TOPIC, GROUP)
        self.broker_addr = self.cluster.broker("broker-a").config.addr
        self.producer = self.cluster.producer("PG")
        # check_subscription asks a broker of the topic through the producer's client: it knows the route.
        self.cluster.runtime.wait(self.producer.instance.update_topic_route(TOPIC))
        self.begin(spec.FilterState(enable, TOPIC, GROUP, ((),) * QUEUES))
        self._settle()
        # Every run has a consumer and messages from the start.
        self._start(*self._selector(data), data.draw(BOOLEANS, label="postSubscriptionWhenPull"))
        self._send(data.draw(MESSAGES, label="messages"))

    def teardown(self) -> None:
        if self.cluster is not None:
            self.cluster.close()

    def _selector(self, data: st.DataObject) -> tuple[str, str]:
        if self.config["consumer.expressionType"] == EXPRESSION_TYPE_TAG or data.draw(KIND_STRATEGY) == 0:
            return EXPRESSION_TYPE_TAG, data.draw(TAG_STRATEGY, label="tag expression")
        return EXPRESSION_TYPE_SQL92, data.draw(SQL_STRATEGY, label="SQL92 expression")

    # ------------------------------------------------------------------------------------------------ rules
    @precondition(lambda self: self.cluster is not None and len(self.consumers) < MAX_CONSUMERS)
    @rule(data=st.data(), post=st.booleans())
    def start_consumer(self, data: st.DataObject, post: bool) -> None:
        """A push consumer subscribes (``MessageSelector.bySql`` or by tag) and starts (FILTER-24, FILTER-25)."""
        self._start(*self._selector(data), post)

    def _start(self, kind: str, expression: str, post: bool) -> None:
        cluster = self.cluster
        assert cluster is not None
        name = f"c{len(self.consumers) + 1}"
        client_id = f"127.0.0.1@{name}"
        version = cluster.now_ms()
        action = spec.ConsumerStarts(client_id, kind, expression, version, post)
        try:
            consumer = cluster.push_consumer(GROUP, cast(Any, {TOPIC: _selector(kind, expression)}),
                                             self._listener(client_id), instance_name=name,
                                             post_subscription_when_pull=post)
        except ValueError as error:
            if self.can(action):
                self.fail(f"FILTER-24: subscribing {kind} {expression!r} threw {error!r}; the spec builds it")
            self.observer.take()
            return
        if not self.can(action):
            self.fail(f"FILTER-1/FILTER-24: subscribing {kind} {expression!r} worked; FilterAPI.build throws")
        self.consumers[client_id] = consumer
        self.got[client_id] = {}
        self.drive(action, f"{kind} {expression!r}")
        self._settle()

    @precondition(lambda self: self.consumers)
    @rule(data=st.data(), index=st.integers(0, MAX_CONSUMERS - 1))
    def resubscribe(self, data: st.DataObject, index: int) -> None:
        """A started consumer subscribes the topic again: a new version (FILTER-24)."""
        cluster = self.cluster
        assert cluster is not None
        client_id = sorted(self.consumers)[index % len(self.consumers)]
        kind, expression = self._selector(data)
        consumer = self.state.consumer(client_id)
        if consumer is not None and any(s.version >= cluster.now_ms() for s in consumer.history if s.topic == TOPIC):
            cluster.advance(1)  # a consumer's versions are the times it subscribed: one later millisecond
        action = spec.Subscribe(client_id, kind, expression, cluster.now_ms())
        try:
            self.consumers[client_id].subscribe(TOPIC, _selector(kind, expression))
        except ValueError as error:
            if self.can(action):
                self.fail(f"FILTER-24: re-subscribing {kind} {expression!r} threw {error!r}; the spec builds it")
            self._settle()
            return
        if not self.can(action):
            self.fail(f"FILTER-1/FILTER-24: re-subscribing {kind} {expression!r} worked; FilterAPI.build throws")
        self.drive(action, f"{kind} {expression!r}")
        self._settle()

    @precondition(lambda self: len(self.consumers) > 1)
    @rule(data=st.data())
    def resubscribe_together(self, data: st.DataObject) -> None:
        """Every consumer subscribes again in the same millisecond, each with its own expression: versions that tie
        (the broker keeps the first it registers, FILTER-18, FILTER-22)."""
        cluster = self.cluster
        assert cluster is not None
        cluster.advance(1)
        for client_id in sorted(self.consumers):
            kind, expression = self._selector(data)
            action = spec.Subscribe(client_id, kind, expression, cluster.now_ms())
            try:
                self.consumers[client_id].subscribe(TOPIC, _selector(kind, expression))
            except ValueError:
                if self.can(action):
                    self.fail(f"FILTER-24: re-subscribing {kind} {expression!r} threw; the spec builds it")
                continue
            if not self.can(action):
                self.fail(f"FILTER-1/FILTER-24: re-subscribing {kind} {expression!r} worked; FilterAPI.build throws")
            self.drive(action, f"{kind} {expression!r}")
        self._settle()

    @precondition(lambda self: self.cluster is not None)
    @rule(messages=MESSAGES)
    def send(self, messages: list[tuple[int, str | None, dict[str, str]]]) -> None:
        """The producer sends messages with tags and user properties to queues; the broker's store is observed."""
        self._send(messages)

    @precondition(lambda self: self.cluster is not None and self.consumers)
    @rule(messages=MESSAGES)
    def send_more(self, messages: list[tuple[int, str | None, dict[str, str]]]) -> None:
        """Sending again (messages are what every filter works on: twice the weight of the other rules)."""
        self._send(messages)

    def _send(self, messages: list[tuple[int, str | None, dict[str, str]]]) -> None:
        for queue, tags, props in messages:
            self.sent += 1
            message = Message(TOPIC, f"m{self.sent}".encode(), tags=tags, properties=dict(props))
            self.producer.send(message, queue=MessageQueue(TOPIC, "broker-a", queue))
        self._settle()

    @precondition(lambda self: self.cluster is not None)
    @rule(data=st.data(), topic=st.sampled_from((TOPIC, TOPIC, "NoRouteTopic")), lost=st.booleans())
    def check_subscription(self, data: st.DataObject, topic: str, lost: bool) -> None:
        """Another client checks subscriptions as a start does (``checkClientInBroker``, FILTER-25): each answered as
        FILTER-17 says, a refusal with the compile error or the unsupported type as its remark; a topic without a
        route is not checked, a request that gets no answer is a failure."""
        kind, expression = self._selector(data)
        if kind == EXPRESSION_TYPE_SQL92:
            for checked in data.draw(CHECKED_SQL, label="SQL92 expressions checked"):
                self._check(topic, kind, checked, lost)
                lost = False
        else:
            self._check(topic, kind, expression, lost)
        self._settle()

    def _check(self, topic: str, kind: str, expression: str, lost: bool) -> None:
        cluster = self.cluster
        assert cluster is not None
        sub = ConsumerSubscription(topic=topic, sub_string=expression or "*", sub_version=cluster.now_ms(),
                                   expression_type=kind)
        client = self.producer.instance.client_id
        drop = cluster.faults.drop("broker-a", "CHECK_CLIENT_CONFIG", client=client, times=1) if lost else None
        future = check_client_in_broker(self.producer.instance, GROUP, [sub], CHECK_TIMEOUT_MS)
        error = cluster.runtime.wait(future)
        if drop is not None:
            lost = drop.fired > 0
            cluster.faults.remove(drop)
        expected = spec.check_client_config(True, kind, sub.sub_string, self.config["broker.enablePropertyFilter"])
        if topic != TOPIC or spec.is_tag_type(kind):
            expected = ResponseCode.SUCCESS  # nothing to ask, or no broker to ask
        elif lost:
            if error is None or error.code != -1 or not error.message.startswith("Check client in broker error"):
                self.fail(f"FILTER-25: a CHECK_CLIENT_CONFIG without an answer ended with {error!r}")
            return
        code = ResponseCode.SUCCESS if error is None else error.code
        if code != expected:
            self.fail(f"FILTER-17: CHECK_CLIENT_CONFIG of {kind} {expression!r} answered {code}; the spec: {expected}")
        if expected == ResponseCode.SYSTEM_ERROR and error is not None and not error.message.endswith(
                f"The broker does not support consumer to filter message by {kind}"):
            self.fail(f"FILTER-17: the refusal says {error.message!r}")
        if expected == ResponseCode.SUBSCRIPTION_PARSE_FAILED and error is not None and error.message.endswith(
                "DESC: None"):
            self.fail(f"FILTER-17: a refusal of {expression!r} without the compile error")

    @precondition(lambda self: self.cluster is not None)
    @rule(data=st.data(), offset=st.integers(0, 3))
    def probe_pull(self, data: st.DataObject, offset: int) -> None:
        """Another client pulls every queue with the subscription bit (a lite pull consumer's way): the broker filters
        with the expression the pull carries, compiled for it alone (FILTER-19), whatever the group registered."""
        cluster = self.cluster
        assert cluster is not None
        kind, expression = self._selector(data)
        expressions = data.draw(PROBED_SQL, label="SQL92 expressions pulled") if kind == EXPRESSION_TYPE_SQL92 \
            else [expression]
        for probed in expressions:
            for queue_id in range(QUEUES):
                start = min(offset, len(self.state.queues[queue_id]))
                action = spec.Pull(PROBE_GROUP, TOPIC, queue_id, start, 0, (kind, probed), False)
                request = RemotingCommand.request(RequestCode.PULL_MESSAGE, {
                    "consumerGroup": PROBE_GROUP, "topic": TOPIC, "queueId": queue_id, "queueOffset": start,
                    "maxMsgNums": PULL_BATCH_SIZE, "sysFlag": PULL_FLAG_SUBSCRIPTION,
                    "commitOffset": 0, "suspendTimeoutMillis": 0, "subscription": probed, "subVersion": 0,
                    "expressionType": kind})
                response = cluster.runtime.wait(self.producer.instance.invoke(self.broker_addr, request,
                                                                            CHECK_TIMEOUT_MS))
                answer, used = spec.pull_answer(self.state, action)
                expected = (int(answer.code) if answer.code is not None else None, answer.found, answer.next_begin
                            if answer.code in (ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY,
                                               ResponseCode.PULL_NOT_FOUND) else None)
                actual = answer_of(response)
                if expected[2] is None:
                    actual = (actual[0], actual[1], None)
                if actual != expected:
                    self.fail(f"FILTER-19/{_pull_clauses(expected[0])}: a pull posting {kind} {probed!r} of queue "
                              f"{queue_id} from {start} was answered {actual}; the spec answers {expected}, filtering "
                              f"with {used}")
        self._settle()

    @precondition(lambda self: self.consumers)
    @rule(index=st.integers(0, MAX_CONSUMERS - 1))
    def heartbeat(self, index: int) -> None:
        """A consumer's client heartbeats now (as its 30 s task does): its current subscriptions (FILTER-22)."""
        consumer = self.consumers[sorted(self.consumers)[index % len(self.consumers)]]
        consumer.instance.send_heartbeat_to_all_brokers()
        self._settle()

    @precondition(lambda self: self.consumers)
    @rule(index=st.integers(0, MAX_CONSUMERS - 1))
    def heartbeat_lost(self, index: int) -> None:
        """A registered consumer's next heartbeat is lost: the broker keeps the older subscription (FILTER-22)."""
        cluster = self.cluster
        assert cluster is not None
        registered = sorted(c for c in self.consumers if c in self.state.clients)
        if registered:
            client = registered[index % len(registered)]
            pending = self.lost.get(client)
            # One lost heartbeat at a time: two minutes without one, the broker drops the client (not modelled).
            if pending is None or pending.fired >= 1:
                self.lost[client] = cluster.faults.drop("broker-a", "HEART_BEAT", client=client, times=1)
        self._settle()

    @precondition(lambda self: self.cluster is not None)
    @rule(ms=st.sampled_from((5_000, 20_000, 31_000)))
    def time_passes(self, ms: int) -> None:
        """Time passes: periodic heartbeats and rebalances, held pulls answered when their time is up."""
        cluster = self.cluster
        assert cluster is not None
        cluster.advance(ms)
        self._settle()

    # ------------------------------------------------------------------------------------------------ observing
    def _listener(self, client_id: str) -> Any:
        def listener(msgs: list[MessageExt], context: Any) -> ConsumeStatus:
            for msg in msgs:
                self.got[client_id][(msg.queue_id, msg.queue_offset)] = msg.body.decode("utf-8")
            return ConsumeStatus.CONSUME_SUCCESS

        return listener

    def _settle(self) -> None:
        cluster = self.cluster
        assert cluster is not None
        # A fixed time, not run_until_idle: a consumer whose pulls the broker refuses (FILTER_DATA_NOT_EXIST, say)
        # never commits, so the broker's probe would keep the run busy for a simulated day.
        cluster.advance(SETTLE_MS)
        for seen in self.observer.take():
            self._replay(seen)

    def _replay(self, seen: Seen) -> None:
        if seen.kind == "store":
            queue_id, offset, message = seen.action
            if offset != len(self.state.queues[queue_id]):
                self.fail(f"FILTER-23: the broker stored {message.body} at offset {offset} of queue {queue_id}; "
                          f"the spec's queue has {len(self.state.queues[queue_id])}")
            self.observe(spec.Store(queue_id, message), f"stored {message.body} tags={message.tags!r}")
        elif seen.kind == "check":
            if self.state.consumer(seen.node) is None:
                return  # check_subscription's own request: judged by the rule
            self.observe(seen.action, "CHECK_CLIENT_CONFIG")
            consumer = self.state.consumer(seen.node)
            assert consumer is not None and seen.response is not None
            if consumer.check is None or seen.response.code != consumer.check:
                self.fail(f"FILTER-17/FILTER-25: CHECK_CLIENT_CONFIG of {seen.action.subscription} answered "
                          f"{ResponseCode(seen.response.code).name}; the spec answers {consumer.check}")
        elif seen.kind == "pull":
            if seen.action.client_id != self.producer.instance.client_id:
                self._pull(seen)  # probe_pull's own requests are judged by the rule
        elif seen.kind == "heartbeat":
            self.observe(seen.action, "heartbeat")
            for sub in seen.action.subscriptions:
                tags = frozenset(spec.subscription_tags(sub.expression)) if spec.is_tag_type(sub.expression_type) \
                    else frozenset()
                wanted = (tags, frozenset(java_string_hash(t) for t in tags))
                if seen.extra.get(sub.topic) != wanted:
                    self.fail(f"FILTER-1/FILTER-24: the heartbeat reports tags and codes {seen.extra.get(sub.topic)} "
                              f"for {sub}; FilterAPI.buildSubscriptionData makes {wanted}")
        else:
            self.observe(seen.action, seen.kind)

    def _pull(self, seen: Seen) -> None:
        action: spec.Pull = seen.action
        if not self.can(action):
            self.observe(action, "pull")  # fails, saying why
        answer, used = spec.pull_answer(self.state, action)
        expected = (None if answer.code is None else int(answer.code), answer.found,
                    None if answer.code is None or answer.code not in (
                        ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY, ResponseCode.PULL_NOT_FOUND)
                    else answer.next_begin)
        actual = answer_of(seen.response)
        if actual[2] is not None and expected[2] is None:
            actual = (actual[0], actual[1], None)  # an error answer's header is not the filter's business
        self.observe(action, f"pull {action.topic}:{action.queue_id}@{action.offset}")
        key = f"{action.client_id} {action.topic}:{action.queue_id}"
        self.spec_answers[key], self.system_answers[key] = expected, actual
        if expected != actual:
            self.fail(f"{_pull_clauses(expected[0])}: {action} was answered (code, offsets, nextBeginOffset) "
                      f"{actual}; the spec answers {expected}, filtering with {used}")

    # ------------------------------------------------------------------------------------------------ projections
    def project_spec(self) -> dict[str, Any]:
        state = self.state
        received: dict[str, dict[int, list[str]]] = {}
        waiting: dict[str, list[tuple[str, int, int]]] = {}
        for consumer in state.consumers:
            view: dict[int, list[str]] = {}
            for entry in sorted(consumer.received):
                message = state.message(entry)
                view.setdefault(entry[1], []).append(message.body if message else "?")
            received[consumer.client_id] = view
            waiting[consumer.client_id] = sorted(e for e in consumer.pending if (e[0], e[1]) in consumer.owned)
        return {
            RECEIVED: received,
            WAITING: waiting,
            REGISTERED: {s.topic: (s.expression_type, s.expression, s.version) for s in state.registered or ()},
            CLIENTS: sorted(state.clients),
            FILTER_DATA: {topic: (d.expression, d.version) for topic, d in state.filters},
            CHECKS: {c.client_id: None if c.check in (None, ResponseCode.SUCCESS) else int(c.check)
                     for c in state.consumers},
            ANSWERS: dict(self.spec_answers),
        }

    def project_system(self) -> dict[str, Any]:
        assert self.cluster is not None
        broker = self.cluster.broker("broker-a")
        received: dict[str, dict[int, list[str]]] = {}
        waiting: dict[str, list[tuple[str, int, int]]] = {}
        for client_id, consumer in self.consumers.items():
            view: dict[int, list[str]] = {}
            for (queue_id, _offset), body in sorted(self.got[client_id].items()):
                view.setdefault(queue_id, []).append(body)
            received[client_id] = view
            table = consumer.rebalance.process_queue_table if consumer.rebalance is not None else {}
            waiting[client_id] = sorted((mq.topic, mq.queue_id, int(o)) for mq, pq in table.items()
                                        for o in pq.msg_tree)
        info = broker.consumers.get(GROUP)
        filters = broker.filters.snapshot()
        return {
            RECEIVED: received,
            WAITING: waiting,
            REGISTERED: {} if info is None else {
                t: (s.expression_type, s.sub_string, s.sub_version) for t, s in info.subscriptions.items()},
            CLIENTS: [] if info is None else sorted(c.client_id for c in info.channels.values()),
            FILTER_DATA: {t: (d.expression, d.client_version) for (t, g), d in filters.items() if g == GROUP},
            CHECKS: {c: None if k.check_error is None else k.check_error.code for c, k in self.consumers.items()},
            ANSWERS: dict(self.system_answers),
        }


test_message_filter_machine = machine_test(MessageFilterMachine, 40, 30)
# The configuration most of the filter's rules need, SQL92 on a broker that serves it, run on its own too: hypothesis
# draws the run's configuration early and then mostly mutates what it drew, so the main run may see it seldom.
SQL92_MACHINE = pinned(MessageFilterMachine, {"broker.enablePropertyFilter": True, "consumer.expressionType": "SQL92"})
test_message_filter_machine_sql92 = machine_test(SQL92_MACHINE, 40, 30)


# ---------------------------------------------------------------------------------------------------- mutants
MUTANT_EXAMPLES, MUTANT_STEPS = 60, 25
# Each breaks one rule of the implementation; the machine must find a failing program (and name the clause).
MUTANTS: dict[str, tuple[type[LockstepMachine], Any, str, str, tuple[str, ...]]] = {
    "client_does_not_refilter": (
        MessageFilterMachine, pull_api_module, "if subscription.tags_set and not subscription.class_filter_mode:",
        "if False:", ("FILTER-3", "FILTER-26")),
    "python_strip_for_java_trim": (
        MessageFilterMachine, consumer_config_module, "trimmed = trim(tag)", "trimmed = tag.strip()",
        ("FILTER-1", "FILTER-24")),
    "equal_version_replaces_filter_data": (
        SQL92_MACHINE, filter_module, "if old is not None and client_version <= old.client_version:",
        "if old is not None and client_version < old.client_version:", ("FILTER-18",)),
    "invalid_expression_keeps_old_filter_data": (
        SQL92_MACHINE, filter_module, "            self._table.pop(key, None)\n            return False",
        "            return False", ("FILTER-18",)),
    "null_is_false": (
        SQL92_MACHINE, sql92_module, "        return None if v is None else not v",
        "        return True if v is None else not v", ("FILTER-2/FILTER-16/FILTER-23", "FILTER-26")),
    "string_numbers_never_convert": (
        SQL92_MACHINE, values_module,
        "            elif isinstance(right, str):\n                right = _from_string(right, left)",
        "            elif isinstance(right, str):\n                return -1", ("FILTER-2/FILTER-16/FILTER-23",)),
    "check_ignores_the_expression": (
        SQL92_MACHINE, filter_module, "        compile_expression(expression_type, str(expression))\n",
        "        pass\n", ("FILTER-17", "FILTER-25")),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_caught(name: str) -> None:
    machine, module, old, new, clauses = MUTANTS[name]
    variant_caught(machine, module, old, new, clauses, examples=MUTANT_EXAMPLES, steps=MUTANT_STEPS)


# ------------------------------------------------------------------------------------------ configuration variants
# For each dimension the machine draws, a broken copy that only a non-default value of it reveals: the machine catches
# it, and the machine with that dimension pinned to its default does not (slow: two searches each).
VARIANTS = {
    # Without enablePropertyFilter the check refuses SQL92 anyway: refusing it with the switch on shows only then.
    "broker.enablePropertyFilter": (
        filter_module, "    if not broker.config.enable_property_filter:\n        return request.response(",
        "    if True:\n        return request.response(", ("FILTER-17", "FILTER-25")),
    # Tag subscriptions never reach the commit-log filter: SQL92 ones that filter nothing show only with SQL92.
    "consumer.expressionType": (
        filter_module, "class_filter_mode or is_tag_type(subscription.expression_type) or data is None:",
        "class_filter_mode or True:", ("FILTER-2/FILTER-16/FILTER-23", "FILTER-26")),
}


def test_every_dimension_has_a_variant() -> None:
    assert set(VARIANTS) == set(MessageFilterMachine.DIMENSIONS)


@pytest.mark.slow
@pytest.mark.parametrize("dimension", sorted(VARIANTS))
def test_variant_needs_a_non_default_configuration(dimension: str) -> None:
    module, old, new, clauses = VARIANTS[dimension]
    variant_needs(MessageFilterMachine, dimension, module, old, new, clauses, examples=MUTANT_EXAMPLES,
                  steps=MUTANT_STEPS)
