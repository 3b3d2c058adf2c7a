"""Broker conformance cases: message filtering on the broker (tags and SQL92) and CHECK_CLIENT_CONFIG.

A tag subscription ('*', 'a', 'a || b') is matched against each consume-queue entry's tags code (FILTER-1,
FILTER-2); an SQL92 one against each stored message's properties, a message kept only when the expression is TRUE
(FILTER-16). A pull carrying its subscription compiles an SQL92 expression for that pull only (FILTER-19); one
without relies on the group's registered subscription and filter data (FILTER-20). SQL92 needs
enablePropertyFilter (FILTER-17, FILTER-21): each case that needs it on (or off, to see the refusal) runs on the first
master that has it so, and is skipped, with the reason, on a target with none.
Tag hash-code collisions are the send area's (BRK-9).
"""

from __future__ import annotations

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import bodies, consumer_heartbeat, dispatched, setup
from rocketspec.conformance.broker.pull import expect_offsets
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.model import CaseList, Level
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.message_filter import sql92_compiles, sql92_matches
from rocketspec.spec.protocol import EXPRESSION_TYPE_SQL92, ResponseCode

cases = CaseList("broker/filter")
CASES = cases.cases

# The messages SQL92 cases filter: body -> user property "a" (None: the message lacks it).
SQL_MESSAGES: tuple[tuple[bytes, str | None], ...] = ((b"a=3", "3"), (b"a=10", "10"), (b"no a", None),
                                                       (b"a=abc", "abc"), (b"a=7", "7"))
SQL_EXPRESSION = "a > 5"
SQL_MATCHES = [b"a=10", b"a=7"]


def send_tagged(ctx: BrokerContext, client: WireClient, topic: str, tags: list[str | None]) -> None:
    """One message per entry of ``tags`` (body = the tag, or 'untagged'), then wait until they are dispatched."""
    for tag in tags:
        ctx.send(client, topic, (tag or "untagged").encode(), 0, tags=tag)
    dispatched(ctx, client, topic, 0, len(tags))


def send_sql_messages(ctx: BrokerContext, client: WireClient, topic: str) -> None:
    for body, value in SQL_MESSAGES:
        extra = {} if value is None else {"a": value}
        ctx.send(client, topic, body, 0, properties=requests.message_properties(extra=extra))
    dispatched(ctx, client, topic, 0, len(SQL_MESSAGES))


def property_filter_broker(ctx: BrokerContext, enabled: bool = True) -> int:
    """The first master whose enablePropertyFilter is ``enabled`` (SQL92 served, or refused: FILTER-21); the case
    is skipped when no master has it."""
    wanted = "true" if enabled else "false"

    def lacks(index: int) -> str | None:
        if ctx.setting_bool("enablePropertyFilter", index) == enabled:
            return None
        return f"the target reports enablePropertyFilter={'false' if enabled else 'true'}" + (
            ": SQL92 filtering is off (FILTER-21)" if enabled else ": the refusal cannot be seen")

    return ctx.broker_where(f"a master with enablePropertyFilter={wanted}", lacks)


def sql_pull(group: str, topic: str, expression: str, **options: object) -> RemotingCommand:
    return requests.pull(group, topic, 0, 0, subscription=expression, expression_type=EXPRESSION_TYPE_SQL92,
                         **options)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------- tags
@cases.case("tag-single", clauses=("FILTER-1", "FILTER-2", "PULL-8", "PULL-27"),
            requirement="a pull subscribed to one tag answers only the messages with that tag (not untagged ones) "
                        "and nextBeginOffset past every entry scanned")
def tag_single(ctx: BrokerContext) -> None:
    """FILTER-2: an entry matches when its tags code is in the subscription's code set; an untagged message has
    code 0 and does not match a tag subscription."""
    client, topic, group = setup(ctx)
    send_tagged(ctx, client, topic, ["a", "b", None, "a", "c"])
    answer = client.request(requests.pull(group, topic, 0, 0, subscription="a"))
    ctx.expect_code(answer, ResponseCode.SUCCESS, "PULL_MESSAGE subscribed to tag a")
    ctx.expect_equal(bodies(ctx, answer), [b"a", b"a"], "message bodies")
    expect_offsets(ctx, answer, 5, 0, 5)


@cases.case("tag-or-trimmed", clauses=("FILTER-1", "FILTER-2"),
            requirement="a subscription 'a || c' (pieces trimmed) answers the messages tagged a or c")
def tag_or_trimmed(ctx: BrokerContext) -> None:
    """FILTER-1: the expression is split on '||', each piece trimmed, empty pieces skipped."""
    client, topic, group = setup(ctx)
    send_tagged(ctx, client, topic, ["a", "b", "c", "d"])
    for expression in (" a ||c ", "a||c||", "c || || a"):
        answer = client.request(requests.pull(group, topic, 0, 0, subscription=expression))
        ctx.expect_code(answer, ResponseCode.SUCCESS, f"PULL_MESSAGE subscribed to {expression!r}")
        ctx.expect_equal(bodies(ctx, answer), [b"a", b"c"], f"message bodies for {expression!r}")


@cases.case("tag-star-all", clauses=("FILTER-1", "FILTER-2"),
            requirement="a subscription '*' or empty answers every message, tagged or not")
def tag_star_all(ctx: BrokerContext) -> None:
    """FILTER-1: null, empty or '*' subscribes to every tag."""
    client, topic, group = setup(ctx)
    send_tagged(ctx, client, topic, ["a", None, "b"])
    for expression in ("*", ""):
        answer = client.request(requests.pull(group, topic, 0, 0, subscription=expression))
        ctx.expect_code(answer, ResponseCode.SUCCESS, f"PULL_MESSAGE subscribed to {expression!r}")
        ctx.expect_equal(bodies(ctx, answer), [b"a", b"untagged", b"b"], f"message bodies for {expression!r}")


@cases.case("tag-no-match", clauses=("FILTER-2", "PULL-9", "PULL-10", "PULL-25"),
            requirement="a pull whose tag matches none of the messages answers PULL_RETRY_IMMEDIATELY with "
                        "nextBeginOffset past them")
def tag_no_match(ctx: BrokerContext) -> None:
    """PULL-9: a scan that takes nothing because entries were filtered out is NO_MATCHED_MESSAGE; PULL-10:
    PULL_RETRY_IMMEDIATELY; next = offset + entries scanned, so the consumer moves past them."""
    client, topic, group = setup(ctx)
    send_tagged(ctx, client, topic, ["b", "c", None])
    answer = client.request(requests.pull(group, topic, 0, 0, subscription="a"))
    ctx.expect_code(answer, ResponseCode.PULL_RETRY_IMMEDIATELY, "PULL_MESSAGE of tag a over b, c, untagged")
    expect_offsets(ctx, answer, 3, 0, 3)
    answer = client.request(requests.pull(group, topic, 0, 1, subscription="a"))
    ctx.expect_code(answer, ResponseCode.PULL_RETRY_IMMEDIATELY, "PULL_MESSAGE of tag a from offset 1")
    ctx.expect_equal(answer.int_field("nextBeginOffset"), 3, "nextBeginOffset from offset 1")


@cases.case("tag-no-match-remark", clauses=("PULL-9",), level=Level.SHOULD,
            requirement="a pull that only filtered entries out carries the remark NO_MATCHED_MESSAGE")
def tag_no_match_remark(ctx: BrokerContext) -> None:
    """4.9.8 answers the store status name as the remark."""
    client, topic, group = setup(ctx)
    send_tagged(ctx, client, topic, ["b"])
    answer = client.request(requests.pull(group, topic, 0, 0, subscription="a"))
    ctx.expect_equal(answer.remark, "NO_MATCHED_MESSAGE", "the remark")


# --------------------------------------------------------------------------------------------------------- SQL92
@cases.case("sql92-match", clauses=("FILTER-16", "FILTER-19", "FILTER-9", "FILTER-12"),
            requirement="an SQL92 pull answers exactly the messages whose properties make the expression TRUE "
                        "(a missing property or a failed conversion is no match)")
def sql92_match(ctx: BrokerContext) -> None:
    """FILTER-19: the expression is compiled for this pull; FILTER-16: kept only when evaluation is TRUE — a
    missing property (null) and 'abc' > 5 (a conversion error) are no match."""
    broker = property_filter_broker(ctx)
    client, topic, group = setup(ctx, broker=broker)
    send_sql_messages(ctx, client, topic)
    answer = client.request(sql_pull(group, topic, SQL_EXPRESSION))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"PULL_MESSAGE SQL92 {SQL_EXPRESSION!r}")
    ctx.expect_equal(bodies(ctx, answer), SQL_MATCHES, "message bodies")
    expect_offsets(ctx, answer, len(SQL_MESSAGES), 0, len(SQL_MESSAGES))


@cases.case("sql92-no-match", clauses=("FILTER-16", "PULL-9", "PULL-10"),
            requirement="an SQL92 pull that matches nothing answers PULL_RETRY_IMMEDIATELY with nextBeginOffset "
                        "past the messages")
def sql92_no_match(ctx: BrokerContext) -> None:
    """FILTER-16 + PULL-9: every message filtered out → NO_MATCHED_MESSAGE → PULL_RETRY_IMMEDIATELY."""
    broker = property_filter_broker(ctx)
    client, topic, group = setup(ctx, broker=broker)
    send_sql_messages(ctx, client, topic)
    answer = client.request(sql_pull(group, topic, "a = 'nothing' OR b IS NOT NULL"))
    ctx.expect_code(answer, ResponseCode.PULL_RETRY_IMMEDIATELY, "PULL_MESSAGE SQL92 matching nothing")
    expect_offsets(ctx, answer, len(SQL_MESSAGES), 0, len(SQL_MESSAGES))


@cases.case("sql92-empty-expression", clauses=("FILTER-19", "PULL-17"),
            requirement="an SQL92 pull with the subscription flag and an empty expression answers "
                        "SUBSCRIPTION_PARSE_FAILED")
def sql92_empty_expression(ctx: BrokerContext) -> None:
    """FILTER-19: a non-tag type with an empty expression fails the subscription parse."""
    client, topic, group = setup(ctx, messages=1)
    answer = client.request(sql_pull(group, topic, ""))
    ctx.expect_code(answer, ResponseCode.SUBSCRIPTION_PARSE_FAILED, "PULL_MESSAGE SQL92 with expression ''")


@cases.case("sql92-not-compiling-filters-nothing", clauses=("FILTER-19", "FILTER-4", "FILTER-8", "FILTER-16"),
            requirement="an SQL92 pull whose expression does not compile (or of an unknown type) filters nothing")
def sql92_not_compiling(ctx: BrokerContext) -> None:
    """FILTER-19: compiled for this pull only; 'a >' is a compile error (FILTER-8), and without compiled filter data
    nothing is filtered (FILTER-16). An
    unknown expression type has no filter (FILTER-4) and likewise filters nothing."""
    broker = property_filter_broker(ctx)
    client, topic, group = setup(ctx, broker=broker)
    send_sql_messages(ctx, client, topic)
    every = [body for body, _ in SQL_MESSAGES]
    answer = client.request(sql_pull(group, topic, "a >"))
    ctx.expect_code(answer, ResponseCode.SUCCESS, "PULL_MESSAGE SQL92 'a >'")
    ctx.expect_equal(bodies(ctx, answer), every, "message bodies for 'a >'")
    answer = client.request(requests.pull(group, topic, 0, 0, subscription=SQL_EXPRESSION, expression_type="XPATH"))
    ctx.expect_code(answer, ResponseCode.SUCCESS, "PULL_MESSAGE of expression type XPATH")
    ctx.expect_equal(bodies(ctx, answer), every, "message bodies for type XPATH")


@cases.case("sql92-registered-subscription", clauses=("FILTER-18", "FILTER-20", "FILTER-16"),
            requirement="a pull without the subscription flag filters with the group's SQL92 subscription "
                        "registered by a heartbeat")
def sql92_registered(ctx: BrokerContext) -> None:
    """FILTER-18: a heartbeat registers the group's compiled expression; FILTER-20: a pull without the
    subscription bit uses it."""
    broker = property_filter_broker(ctx)
    client, topic, group = setup(ctx, broker=broker)
    send_sql_messages(ctx, client, topic)
    version = requests.now_ms()
    subscription = requests.subscription_json(topic, SQL_EXPRESSION, EXPRESSION_TYPE_SQL92, version)
    consumer_heartbeat(ctx, client, group, subscription, "HEART_BEAT with an SQL92 subscription")
    answer = client.request(requests.pull(group, topic, 0, 0, with_subscription=False, sub_version=version,
                                          expression_type=EXPRESSION_TYPE_SQL92))
    ctx.expect_code(answer, ResponseCode.SUCCESS, "PULL_MESSAGE without the subscription flag")
    ctx.expect_equal(bodies(ctx, answer), SQL_MATCHES, "message bodies")


@cases.case("sql92-filter-data-not-exist", clauses=("FILTER-18", "FILTER-20"),
            requirement="a pull without the subscription flag for a group whose SQL92 subscription did not compile "
                        "answers FILTER_DATA_NOT_EXIST")
def sql92_filter_data_not_exist(ctx: BrokerContext) -> None:
    """FILTER-18: an expression that does not compile registers no filter data; FILTER-20: the pull then needs it."""
    client, topic, group = setup(ctx, messages=1)
    version = requests.now_ms()
    consumer_heartbeat(ctx, client, group, requests.subscription_json(topic, "a >", EXPRESSION_TYPE_SQL92, version),
                       "HEART_BEAT with an SQL92 subscription that does not compile")
    answer = client.request(requests.pull(group, topic, 0, 0, with_subscription=False, sub_version=version,
                                          expression_type=EXPRESSION_TYPE_SQL92))
    ctx.expect_code(answer, ResponseCode.FILTER_DATA_NOT_EXIST, "PULL_MESSAGE without the subscription flag")


@cases.case("sql92-property-filter-disabled", clauses=("FILTER-21", "PULL-17"),
            requirement="without enablePropertyFilter an SQL92 pull answers SYSTEM_ERROR 'The broker does not "
                        "support consumer to filter message by SQL92'")
def sql92_property_filter_disabled(ctx: BrokerContext) -> None:
    """FILTER-21: a non-tag subscription needs enablePropertyFilter."""
    broker = property_filter_broker(ctx, enabled=False)
    client, topic, group = setup(ctx, messages=1, broker=broker)
    answer = client.request(sql_pull(group, topic, SQL_EXPRESSION))
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, "PULL_MESSAGE SQL92 without enablePropertyFilter")
    expected = f"The broker does not support consumer to filter message by {EXPRESSION_TYPE_SQL92}"
    ctx.expect_equal(answer.remark, expected, "the remark")


# ------------------------------------------------------------------------------------------- CHECK_CLIENT_CONFIG
@cases.case("check-client-config-tag", clauses=("FILTER-17",),
            requirement="CHECK_CLIENT_CONFIG answers SUCCESS without a subscription and for a tag subscription")
def check_client_config_tag(ctx: BrokerContext) -> None:
    """FILTER-17: nothing to check for a tag type (whatever enablePropertyFilter says)."""
    topic = ctx.name("topic")
    group = ctx.group(create=False)
    client = ctx.broker(0)
    answer = client.request(requests.check_client_config(group, None))
    ctx.expect_code(answer, ResponseCode.SUCCESS, "CHECK_CLIENT_CONFIG without a subscription")
    answer = client.request(requests.check_client_config(group, requests.subscription_json(topic, "a || b")))
    ctx.expect_code(answer, ResponseCode.SUCCESS, "CHECK_CLIENT_CONFIG for tags 'a || b'")


@cases.case("check-client-config-sql92", clauses=("FILTER-17", "FILTER-4"),
            requirement="with enablePropertyFilter CHECK_CLIENT_CONFIG answers SUCCESS for an SQL92 expression that "
                        "compiles, SUBSCRIPTION_PARSE_FAILED for one that does not or an unknown type")
def check_client_config_sql92(ctx: BrokerContext) -> None:
    """FILTER-17: the expression is compiled by the type's filter; the compile error is the remark."""
    broker = property_filter_broker(ctx)
    topic = ctx.name("topic")
    group = ctx.group(create=False)
    client = ctx.broker(broker)
    checks = [("a > 5 AND b IN ('x', 'y')", EXPRESSION_TYPE_SQL92, ResponseCode.SUCCESS),
              ("a >", EXPRESSION_TYPE_SQL92, ResponseCode.SUBSCRIPTION_PARSE_FAILED),
              ("a > 5", "XPATH", ResponseCode.SUBSCRIPTION_PARSE_FAILED)]
    for expression, kind, code in checks:
        answer = client.request(requests.check_client_config(
            group, requests.subscription_json(topic, expression, kind)))
        ctx.expect_code(answer, code, f"CHECK_CLIENT_CONFIG {kind} {expression!r}")
        if code == ResponseCode.SUBSCRIPTION_PARSE_FAILED and kind == EXPRESSION_TYPE_SQL92:
            ctx.expect(bool(answer.remark), "a remark with the compile error", repr(answer.remark))


@cases.case("check-client-config-disabled", clauses=("FILTER-17",),
            requirement="without enablePropertyFilter CHECK_CLIENT_CONFIG answers SYSTEM_ERROR for an SQL92 "
                        "subscription")
def check_client_config_disabled(ctx: BrokerContext) -> None:
    """FILTER-17: 'The broker does not support consumer to filter message by SQL92'."""
    broker = property_filter_broker(ctx, enabled=False)
    group = ctx.group(create=False)
    answer = ctx.broker(broker).request(requests.check_client_config(
        group, requests.subscription_json(ctx.name("topic"), SQL_EXPRESSION, EXPRESSION_TYPE_SQL92)))
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, "CHECK_CLIENT_CONFIG SQL92 without enablePropertyFilter")
    expected = f"The broker does not support consumer to filter message by {EXPRESSION_TYPE_SQL92}"
    ctx.expect_equal(answer.remark, expected, "the remark")


# ------------------------------------------------------------------------------------------- SQL92 semantics
# Messages for the semantics cases: body -> user properties. The expected answer of each selector is the spec's
# oracle (sql92_matches), which was checked selector by selector against 4.9.8's own filter module.
SEMANTICS_MESSAGES: tuple[tuple[bytes, dict[str, str]], ...] = (
    (b"m0", {"a": "3", "s": "abc"}),
    (b"m1", {"a": "10", "s": "xyz"}),
    (b"m2", {}),
    (b"m3", {"a": "abc"}),
    (b"m4", {"a": "7", "b": "7"}),
    (b"m5", {"a": "3000000000", "s": "abc", "f": "2.5"}),
    (b"m6", {"a": "true", "f": "0.5"}),
)
SEMANTICS_SELECTORS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # case name -> (clauses, selectors)
    "sql92-comparisons": (("FILTER-10", "FILTER-11", "FILTER-12", "FILTER-16"), (
        "a > 5", "a = 3", "a <> 3", "a >= 7", "a < 7.5", "a = b", "a = 3000000000", "f > 1", "f <= 0.5",
        "s = 'abc'", "s <> 'abc'", "a = TRUE",
    )),
    "sql92-null-between-in": (("FILTER-9", "FILTER-13", "FILTER-14", "FILTER-16"), (
        "a IS NULL", "a IS NOT NULL", "s IS NULL", "a BETWEEN 3 AND 7", "a NOT BETWEEN 3 AND 7",
        "s IN ('abc', 'q')", "s NOT IN ('abc')", "f BETWEEN 0 AND 1",
    )),
    "sql92-logic-and-literals": (("FILTER-5", "FILTER-6", "FILTER-7", "FILTER-15", "FILTER-16"), (
        "a > 5 AND s = 'xyz'", "a > 5 OR s IS NULL", "NOT (a = 3)", "NOT a = 3 OR a IS NULL", "TRUE",
        "a = 7L", "/* comment */ a = 7 -- to the end\n", "a > 2.5E0", "(a = 3 OR a = 7) AND b IS NULL",
        "s = 'ab''c' OR a = 10", "a = 3 OR a = 10 AND s = 'abc'",
    )),
}


def _semantics_case(name: str, clauses: tuple[str, ...], selectors: tuple[str, ...]) -> None:
    def run(ctx: BrokerContext) -> None:
        broker = property_filter_broker(ctx)
        client, topic, group = setup(ctx, broker=broker)
        for body, props in SEMANTICS_MESSAGES:
            ctx.send(client, topic, body, 0, properties=requests.message_properties(extra=props))
        dispatched(ctx, client, topic, 0, len(SEMANTICS_MESSAGES))
        wrong: list[str] = []
        for selector in selectors:
            if not sql92_compiles(selector):
                raise AssertionError(f"the case's selector {selector!r} does not compile")
            expected = [b for b, props in SEMANTICS_MESSAGES if sql92_matches(selector, props)]
            answer = client.request(sql_pull(group, topic, selector))
            got = bodies(ctx, answer) if answer.code == ResponseCode.SUCCESS else []
            if answer.code not in (ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY) or got != expected:
                wrong.append(f"{selector!r}: expected {[b.decode() for b in expected]}, answered "
                             f"{answer.code} {[b.decode() for b in got]}")
        ctx.expect(not wrong, "every selector keeps exactly the messages it evaluates TRUE on",
                   "; ".join(wrong))

    run.__name__ = name.replace("-", "_")
    run.__doc__ = (f"FILTER-16: an SQL92 pull keeps a message exactly when the selector evaluates TRUE on its "
                   f"properties; the selectors exercise {', '.join(c for c in clauses if c != 'FILTER-16')}.")
    cases.case(name, clauses=clauses,
               requirement="SQL92 selectors keep exactly the messages 4.9.8's evaluation makes TRUE "
                           f"({len(selectors)} selectors over {len(SEMANTICS_MESSAGES)} messages)")(run)


for _name, (_clauses, _selectors) in SEMANTICS_SELECTORS.items():
    _semantics_case(_name, _clauses, _selectors)
