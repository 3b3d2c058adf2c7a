"""Message filter: the clause table: every rule of the area with its ID, statement and sources."""

from __future__ import annotations

from rocketspec.spec.clauses import Clause, ClauseTable

CLAUSES = ClauseTable(
    area="message_filter",
    prefix="FILTER",
    clauses=(
        Clause(
            "FILTER-1",
            "A tag subscription that is null, empty or exactly '*' subscribes to every tag; otherwise it is split "
            "on '||', each piece trimmed, empty pieces skipped; the tag set keeps the pieces, the code set their "
            "String.hashCode.",
            "FilterAPI.buildSubscriptionData",
        ),
        Clause(
            "FILTER-2",
            "At the broker a tag subscription matches a consume-queue entry when it subscribes to every tag or "
            "the entry's tags code (as an int) is in the code set; a message without tags has code 0.",
            "ExpressionMessageFilter.isMatchedByConsumeQueue; MessageExtBrokerInner.tagsString2tagsCode",
        ),
        Clause(
            "FILTER-3",
            "At the client a pulled message is kept when the tag set is empty, else only when its tags are in the "
            "tag set (a message without tags is dropped): this removes hash collisions.",
            "PullAPIWrapper.processPullResult",
        ),
        Clause(
            "FILTER-4",
            "The expression type is a tag type when it is null, empty or TAG; any other type goes through the "
            "FilterFactory, which knows only SQL92 (case-sensitive).",
            "ExpressionType.isTagType; FilterFactory",
        ),
        Clause(
            "FILTER-5",
            "SQL92 lexing: whitespace is space, tab, CR, LF, FF; '--' to a line end and '/* */' are comments; "
            "keywords NOT AND OR BETWEEN IN TRUE FALSE NULL IS are case-insensitive; identifiers are ASCII "
            "[A-Za-z_$][A-Za-z0-9_$]*; any other character, an unterminated string or comment is a lexical error "
            "when the parser reads that token.",
            "SelectorParser.jj (TOKEN, SKIP, SPECIAL_TOKEN)",
        ),
        Clause(
            "FILTER-6",
            "SQL92 literals: decimal 0 or [1-9][0-9]* with optional L (an Integer when it fits, else a Long, beyond "
            "Long a compile error); floats with '.' or an exponent (a Double, compile error when above "
            "Double.MAX_VALUE or below Double.MIN_VALUE, so 0.0 is an error); strings in single quotes with '' for "
            "a quote; TRUE, FALSE, NULL; no hex, octal or signed literals (a sign is an operator).",
            "SelectorParser.jj (literal); ConstantExpression.createFromDecimal, createFloat",
        ),
        Clause(
            "FILTER-7",
            "SQL92 grammar, loosest first: OR, AND, then = <> IS [NOT] NULL (left-assoc), then > >= < <= "
            "[NOT] BETWEEN x AND y, [NOT] IN ('s', ...) (left-assoc), then unary + - NOT, then literal, property "
            "or parenthesis; the parse ends after the first complete expression (no end-of-input check).",
            "SelectorParser.jj (JmsSelector .. primaryExpr)",
        ),
        Clause(
            "FILTER-8",
            "A compile error: the whole expression, an OR/AND/NOT operand that is neither a boolean expression nor "
            "a property; a NULL constant in = or <>; a boolean constant compared with a non-boolean constant on its "
            "right; a string, boolean or boolean expression in < <= > >= or BETWEEN; constant BETWEEN bounds that "
            "are null or descending; IN after something other than a property.",
            "SelectorParser.asBooleanExpression; ComparisonExpression.check*, createBetween, createInFilter",
        ),
        Clause(
            "FILTER-9",
            "A property evaluates to its string value, or null when the message lacks it; a bare property used as a "
            "boolean is null when missing and FALSE otherwise (a string is never a Boolean).",
            "PropertyExpression.evaluate; MessageEvaluationContext; UnaryExpression.createBooleanCast",
        ),
        Clause(
            "FILTER-10",
            "Comparison of two values of different types converts: numbers widen (Integer < Long < Double); a "
            "string next to a number is parsed as that number's type (Integer.valueOf, Long.valueOf, "
            "Double.valueOf) and next to a Boolean by Boolean.valueOf; a Boolean left of a string throws; other "
            "pairs compare as 'less'; a failed parse throws.",
            "ComparisonExpression.__compare",
        ),
        Clause(
            "FILTER-11",
            "= evaluates both sides: null = null is TRUE, null on the left only gives null, on the right only "
            "FALSE; otherwise equal values or a comparison result of 0 give TRUE; <> is NOT of =; IS NULL is TRUE "
            "exactly when the value is null and IS NOT NULL its negation.",
            "ComparisonExpression.doCreateEqual, createNotEqual, createIsNull, createIsNotNull",
        ),
        Clause(
            "FILTER-12",
            "< <= > >= give null when the left side is null (the right is not evaluated) or the right is null; two "
            "strings are both parsed as doubles (failure throws); else the converted comparison decides.",
            "ComparisonExpression.evaluate",
        ),
        Clause(
            "FILTER-13",
            "x BETWEEN a AND b is x >= a AND x <= b; x NOT BETWEEN a AND b is x < a OR x > b.",
            "ComparisonExpression.createBetween, createNotBetween",
        ),
        Clause(
            "FILTER-14",
            "IN / NOT IN: null when the property is missing, otherwise TRUE when membership of its string in the "
            "list differs from NOT.",
            "UnaryExpression.createInExpression",
        ),
        Clause(
            "FILTER-15",
            "AND and OR are three-valued and short-circuit: AND is FALSE as soon as the left is FALSE (the right is "
            "not evaluated), then FALSE if the right is FALSE, null if either is null, else TRUE; OR dually; NOT "
            "null is null; unary minus of a non-number is null.",
            "LogicExpression.createAND, createOR; UnaryExpression.createNOT, createNegate",
        ),
        Clause(
            "FILTER-16",
            "The broker keeps a message for an SQL92 filter exactly when evaluation returns TRUE: null, FALSE or an "
            "exception means no match; a subscription without compiled filter data filters nothing.",
            "ExpressionMessageFilter.isMatchedByCommitLog",
        ),
        Clause(
            "FILTER-17",
            "CHECK_CLIENT_CONFIG answers SUCCESS without a subscription or for a tag type; SYSTEM_ERROR 'The "
            "broker does not support consumer to filter message by <type>' without enablePropertyFilter; "
            "SUBSCRIPTION_PARSE_FAILED (remark: the compile error) when the type is unknown or the expression does "
            "not compile; else SUCCESS.",
            "ClientManageProcessor.checkClientConfig",
        ),
        Clause(
            "FILTER-18",
            "A heartbeat registers filter data per subscribed topic for non-tag types with a non-empty expression: "
            "new data only when it compiles; a version not above the stored one changes nothing; a newer version "
            "with the same expression only raises the version; a newer version with another expression replaces "
            "the data, or removes it when the new expression does not compile.",
            "ConsumerFilterManager.register, FilterDataMapByTopic.register",
        ),
        Clause(
            "FILTER-19",
            "A pull with the subscription bit and a non-tag type with an empty expression answers "
            "SUBSCRIPTION_PARSE_FAILED; with a non-empty expression the broker compiles it for this pull only, and "
            "one that does not compile filters nothing.",
            "PullMessageProcessor.processRequest; FilterAPI.build; ConsumerFilterManager.build",
        ),
        Clause(
            "FILTER-20",
            "A pull without the subscription bit whose registered subscription is not a tag type needs the group's "
            "filter data: none answers FILTER_DATA_NOT_EXIST, a version below the request's subVersion "
            "FILTER_DATA_NOT_LATEST (both after the SUBSCRIPTION_NOT_EXIST / NOT_LATEST checks).",
            "PullMessageProcessor.processRequest",
        ),
        Clause(
            "FILTER-21",
            "Then a non-tag subscription on a broker without enablePropertyFilter answers SYSTEM_ERROR 'The broker "
            "does not support consumer to filter message by <type>'.",
            "PullMessageProcessor.processRequest; BrokerConfig.enablePropertyFilter",
        ),
        Clause(
            "FILTER-22",
            "A heartbeat registers the group's subscriptions: a topic without one takes the heartbeat's, a "
            "registered one is replaced only by a higher subVersion, a topic the heartbeat does not list is removed; "
            "a pull without the subscription bit needs the group (else SUBSCRIPTION_NOT_EXIST), the topic's "
            "subscription (else SUBSCRIPTION_NOT_EXIST) and a registered subVersion not below the request's (else "
            "SUBSCRIPTION_NOT_LATEST), and filters by the registered subscription, whichever consumer sent it.",
            "ConsumerManager.registerConsumer; ConsumerGroupInfo.updateSubscription; "
            "PullMessageProcessor.processRequest",
        ),
        Clause(
            "FILTER-23",
            "A pull past the checks reads the queue from its offset: at the queue's end it is PULL_NOT_FOUND with "
            "nextBeginOffset the offset (held unanswered when it has the suspend bit and may be suspended); otherwise "
            "up to max(16000, 20 * maxMsgNums) bytes of consume queue are read, each entry tested by tags code "
            "(FILTER-2), then by the SQL92 filter data (FILTER-16), and the first min(maxMsgNums, 32) kept come back "
            "with SUCCESS and nextBeginOffset one past the last of them when the batch is full, else past what was "
            "read; none kept is PULL_RETRY_IMMEDIATELY with nextBeginOffset past what was read.",
            "DefaultMessageStore.getMessage, isTheBatchFull; PullMessageProcessor.processRequest",
        ),
        Clause(
            "FILTER-24",
            "A push consumer subscribes with FilterAPI.build: a TAG or null type builds FILTER-1's tag subscription "
            "(a string of '||' separators only is an error), another type needs a non-empty expression (else an "
            "error) and has no tags; the subVersion is the time it is built, raised to the time of every rebalance "
            "that changes the consumer's queues of the topic; it replaces the topic's subscription, start adds the "
            "retry topic's '*' (clustering), every heartbeat reports the current subscriptions, and a pull carries "
            "the subVersion (with postSubscriptionWhenPull also the expression and type) of the subscription it "
            "was sent under.",
            "DefaultMQPushConsumerImpl.subscribe, copySubscription, pullMessage; FilterAPI.build; "
            "RebalancePushImpl.messageQueueChanged",
        ),
        Clause(
            "FILTER-25",
            "A push consumer's start sends CHECK_CLIENT_CONFIG with each non-tag subscription to a broker of its "
            "topic (FILTER-17); an answer other than SUCCESS makes start throw with that code, and the consumer runs "
            "on (it heartbeats and rebalances on its periodic schedule).",
            "DefaultMQPushConsumerImpl.start; MQClientInstance.checkClientInBroker; "
            "MQClientAPIImpl.checkClientInBroker",
        ),
        Clause(
            "FILTER-26",
            "A push consumer hands its listener the messages of a SUCCESS pull that the subscription the pull was sent "
            "under keeps at the client (FILTER-3; a non-tag subscription keeps all) and nothing else; every one of a "
            "queue it still owns is handed over, while a queue a rebalance took away drops what it had not consumed.",
            "PullAPIWrapper.processPullResult; DefaultMQPushConsumerImpl.pullMessage; "
            "ConsumeMessageConcurrentlyService.ConsumeRequest.run",
        ),
    ),
)
