"""Message filtering: tags (hash codes at the broker, strings at the client) and SQL92 property selectors.

The area covers how a consumer's subscription decides which messages it gets:

* tags (``FilterAPI.buildSubscriptionData``, ``ExpressionMessageFilter.isMatchedByConsumeQueue``,
  ``PullAPIWrapper.processPullResult``): ``*`` or ``A || B``, matched by ``String.hashCode`` at the broker and by
  the tag string at the client;
* SQL92 (``org.apache.rocketmq.filter``: ``SelectorParser.jj``, ``ComparisonExpression``, ``LogicExpression``,
  ``UnaryExpression``, ``ConstantExpression``, ``PropertyExpression``; the broker's ``ExpressionMessageFilter``,
  ``MessageEvaluationContext``): the selector grammar, what compiles, and Java's evaluation of it over the
  message's stored properties (user and system properties alike, ``TAGS`` included), all strings;
* the broker's decisions around it (``ConsumerFilterManager``, ``PullMessageProcessor``,
  ``ClientManageProcessor.checkClientConfig``, ``BrokerConfig.enablePropertyFilter``, default false).

The state machine (a transition table, ``TRANSITIONS``) is one consumer group on one broker: push consumers
started and re-subscribed with tag or SQL92 expressions (that compile or not) at increasing versions, messages stored
in the topic's queues, CHECK_CLIENT_CONFIG, heartbeats registering subscriptions and filter data in any order,
rebalances, pulls (with or without the subscription bit, held or run again) read through the filter, and the
consumers' listeners getting what the client's filter keeps.

Versions: read in ``rocketmq-all-4.9.8``; the filter module and these broker classes are the same in all 4.9.x.
The SQL92 facts were checked against the 4.9.8 jar (``tests/test_refimpl_sql92.py`` runs its evaluator): a
selector is parsed without an end-of-input check, so text after a complete expression is ignored unless the lexer
reads it as a lookahead; literals are Java ``Integer``/``Long``/``Double``; a property (always a string) is
converted to the other operand's type (``Integer.valueOf``, ``Long.valueOf``, ``Double.valueOf``,
``Boolean.valueOf``) and a failed conversion makes the evaluation throw, which the broker treats as no match.

The area is a package: ``clauses``, ``tags``, ``sql92``, ``oracles``, ``machine``, ``invariants`` (see
``docs/spec-authoring.md``); every public name is importable from here."""

from __future__ import annotations

from rocketspec.spec.message_filter.clauses import (
    CLAUSES,
)
from rocketspec.spec.message_filter.invariants import (
    INVARIANTS,
    STEP_INVARIANTS,
    model,
)
from rocketspec.spec.message_filter.machine import (
    GROUP,
    TOPIC,
    TRANSITIONS,
    Action,
    Bounds,
    CheckClientConfig,
    Consumer,
    ConsumerStarts,
    Deliver,
    FilterState,
    Heartbeat,
    Message,
    Pull,
    Rebalanced,
    Store,
    Subscribe,
    enabled,
    pull_answer,
    step,
)
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
from rocketspec.spec.message_filter.sql92 import (
    JValue,
    Node,
    Sql92Result,
    sql92_compiles,
    sql92_evaluate,
    sql92_matches,
)
from rocketspec.spec.message_filter.tags import (
    broker_tag_matches,
    client_tag_matches,
    is_tag_type,
    subscription_tags,
    tags_code,
)

__all__ = [
    "CLAUSES",
    "GROUP",
    "INVARIANTS",
    "STEP_INVARIANTS",
    "TOPIC",
    "TRANSITIONS",
    "Action",
    "Bounds",
    "CheckClientConfig",
    "Consumer",
    "ConsumerStarts",
    "Deliver",
    "FilterData",
    "FilterState",
    "Heartbeat",
    "JValue",
    "Message",
    "Node",
    "Pull",
    "PullAnswer",
    "Rebalanced",
    "Sql92Result",
    "Store",
    "Subscribe",
    "Subscription",
    "broker_keeps",
    "broker_tag_matches",
    "build_subscription",
    "check_client_config",
    "client_keeps",
    "client_tag_matches",
    "enabled",
    "is_tag_type",
    "model",
    "pull_answer",
    "pull_filter_answer",
    "register_filter_data",
    "register_subscriptions",
    "registration_answer",
    "scan_queue",
    "sql92_compiles",
    "sql92_evaluate",
    "sql92_matches",
    "step",
    "subscription_tags",
    "tags_code",
]
