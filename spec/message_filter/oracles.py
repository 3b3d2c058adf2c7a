"""Message filter: the oracle functions: the normative decisions, with their contracts (checked by CrossHair)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from rocketspec.spec.message_filter.clauses import CLAUSES
from rocketspec.spec.message_filter.sql92 import sql92_compiles, sql92_matches
from rocketspec.spec.message_filter.tags import (
    broker_tag_matches,
    client_tag_matches,
    is_tag_type,
    subscription_tags,  # noqa: F401  (a contract names it: CrossHair evaluates it here)
    tags_code,
)
from rocketspec.spec.protocol import (
    CONSUME_QUEUE_ENTRY_BYTES,
    EXPRESSION_TYPE_SQL92,
    EXPRESSION_TYPE_TAG,
    MAX_FILTER_SCAN_BYTES,
    MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY,
    SUB_ALL,
    ResponseCode,
)


# ------------------------------------------------------------------------------------------- broker decisions
@CLAUSES.oracle("FILTER-17")
def check_client_config(
    has_subscription: bool, expression_type: str | None, expression: str | None, enable_property_filter: bool
) -> ResponseCode:
    """The code of a CHECK_CLIENT_CONFIG answer (FILTER-17).

    pre: expression is None or len(expression) <= 8
    post: has_subscription or __return__ is ResponseCode.SUCCESS
    post: not is_tag_type(expression_type) or __return__ is ResponseCode.SUCCESS
    post: enable_property_filter or is_tag_type(expression_type) or not has_subscription or __return__ is ResponseCode.SYSTEM_ERROR
    post: __return__ is not ResponseCode.SUCCESS or not has_subscription or is_tag_type(expression_type) or sql92_compiles(expression)
    """  # noqa: E501
    if not has_subscription or is_tag_type(expression_type):
        return ResponseCode.SUCCESS
    if not enable_property_filter:
        return ResponseCode.SYSTEM_ERROR
    if expression_type != EXPRESSION_TYPE_SQL92 or not sql92_compiles(expression):
        return ResponseCode.SUBSCRIPTION_PARSE_FAILED
    return ResponseCode.SUCCESS


@attrs.frozen
class FilterData:
    """``ConsumerFilterData`` of one group and topic: the expression (it compiled), the client's version and the
    expression type."""

    expression: str
    version: int
    expression_type: str = EXPRESSION_TYPE_SQL92


@CLAUSES.oracle("FILTER-18")
def register_filter_data(
    old: FilterData | None, expression_type: str | None, expression: str | None, version: int
) -> FilterData | None:
    """The group's filter data for a topic after a heartbeat subscribing with this expression (FILTER-18).

    pre: expression is None or len(expression) <= 8
    pre: old is None or sql92_compiles(old.expression)
    post: __return__ is None or sql92_compiles(__return__.expression)
    post: old is None or __return__ is None or __return__.version >= old.version
    post: old is None or version > old.version or __return__ == old
    post: __return__ is None or __return__ == old or __return__.version == version
    """
    if is_tag_type(expression_type) or not expression:
        return old
    compiles = expression_type == EXPRESSION_TYPE_SQL92 and sql92_compiles(expression)
    new = FilterData(expression, version, str(expression_type)) if compiles else None
    if old is None:
        return new
    if version <= old.version:
        return old
    if expression == old.expression and expression_type == old.expression_type:
        return attrs.evolve(old, version=version)
    # "new expression compile error, remove old, let client report error"
    return new


@CLAUSES.oracle("FILTER-19", "FILTER-20", "FILTER-21")
def pull_filter_answer(
    has_subscription_flag: bool,
    expression_type: str | None,
    expression: str | None,
    filter_data: FilterData | None,
    request_sub_version: int,
    enable_property_filter: bool,
) -> ResponseCode | None:
    """The code a pull is answered with by the filter checks, or None when it goes on to the store (FILTER-19,
    FILTER-20, FILTER-21). ``expression_type``/``expression`` are the request's with the subscription bit, else the
    registered subscription's.

    post: not is_tag_type(expression_type) or __return__ is None
    post: enable_property_filter or is_tag_type(expression_type) or __return__ is not None
    post: has_subscription_flag or is_tag_type(expression_type) or filter_data is not None or __return__ is ResponseCode.FILTER_DATA_NOT_EXIST
    post: __return__ is not None or is_tag_type(expression_type) or has_subscription_flag or filter_data.version >= request_sub_version
    """  # noqa: E501
    if is_tag_type(expression_type):
        return None
    if has_subscription_flag:
        if not expression:
            return ResponseCode.SUBSCRIPTION_PARSE_FAILED
    else:
        if filter_data is None:
            return ResponseCode.FILTER_DATA_NOT_EXIST
        if filter_data.version < request_sub_version:
            return ResponseCode.FILTER_DATA_NOT_LATEST
    if not enable_property_filter:
        return ResponseCode.SYSTEM_ERROR
    return None


# ------------------------------------------------------------------------------------- subscriptions and pulls
@attrs.frozen
class Subscription:
    """``SubscriptionData`` as a consumer builds it and a heartbeat reports it: the topic, the expression type, the
    expression (``subString``: ``*`` for every tag) and the version (the time it was built)."""

    topic: str
    expression_type: str
    expression: str
    version: int


def _separators_only(expression: str) -> bool:
    return all(piece == "" for piece in expression.split("||"))


@CLAUSES.oracle("FILTER-1", "FILTER-24")
def build_subscription(
    topic: str, expression_type: str | None, expression: str | None, version: int
) -> Subscription | None:
    """``FilterAPI.build``: the subscription a consumer makes of ``expression``, or None where the build throws
    (FILTER-1, FILTER-24).

    A TAG (or null) type subscribes to every tag for null, empty or ``*``, else to the tags of FILTER-1 (a string
    of ``||`` separators only throws "subString split error"); any other type needs a non-empty expression, kept
    as it is.

    pre: expression is None or len(expression) <= 6
    post: __return__ is None or (__return__.topic, __return__.version) == (topic, version)
    post: expression_type in (None, "TAG") or expression or __return__ is None
    post: expression_type not in (None, "TAG") or expression not in (None, "", "*") or __return__ == Subscription(topic, "TAG", "*", version)
    post: __return__ is None or expression_type in (None, "TAG") or __return__.expression == expression
    post: __return__ is not None or expression_type not in (None, "TAG") or subscription_tags(expression) == ()
    """  # noqa: E501
    if expression_type is None or expression_type == EXPRESSION_TYPE_TAG:
        if expression is None or expression == "" or expression == SUB_ALL:
            return Subscription(topic, EXPRESSION_TYPE_TAG, SUB_ALL, version)
        if _separators_only(expression):
            return None
        return Subscription(topic, EXPRESSION_TYPE_TAG, expression, version)
    if not expression:
        return None
    return Subscription(topic, expression_type, expression, version)


@CLAUSES.oracle("FILTER-22")
def register_subscriptions(
    registered: tuple[Subscription, ...] | None, heartbeat: tuple[Subscription, ...]
) -> tuple[Subscription, ...]:
    """The group's subscriptions at the broker after a heartbeat reporting ``heartbeat`` (FILTER-22), by topic.

    ``registered`` is None when the broker has no consumer of the group.

    pre: len(heartbeat) <= 3 and len({s.topic for s in heartbeat}) == len(heartbeat)
    pre: registered is None or (len(registered) <= 3 and len({s.topic for s in registered}) == len(registered))
    post: [s.topic for s in __return__] == sorted(s.topic for s in heartbeat)
    post: all(s in heartbeat or s in (registered or ()) for s in __return__)
    post: all(r.version >= o.version for r in __return__ for o in (registered or ()) if o.topic == r.topic)
    post: all(any(r == h or r.version >= h.version for r in __return__) for h in heartbeat)
    """
    old = {s.topic: s for s in registered or ()}
    out: list[Subscription] = []
    for sub in sorted(heartbeat, key=lambda s: s.topic):
        kept = old.get(sub.topic)
        out.append(sub if kept is None or sub.version > kept.version else kept)
    return tuple(out)


@CLAUSES.oracle("FILTER-22")
def registration_answer(
    registered: tuple[Subscription, ...] | None, topic: str, request_version: int
) -> ResponseCode | None:
    """The code a pull without the subscription bit gets from the group's registered subscriptions, or None when
    it goes on to the filter checks (FILTER-22).

    pre: registered is None or len(registered) <= 2
    post: registered is not None or __return__ is ResponseCode.SUBSCRIPTION_NOT_EXIST
    post: __return__ is not None or any(s.topic == topic and s.version >= request_version for s in registered)
    post: __return__ is not ResponseCode.SUBSCRIPTION_NOT_LATEST or any(s.topic == topic for s in registered)
    """
    if registered is None:
        return ResponseCode.SUBSCRIPTION_NOT_EXIST
    found = [s for s in registered if s.topic == topic]
    if not found:
        return ResponseCode.SUBSCRIPTION_NOT_EXIST
    if found[0].version < request_version:
        return ResponseCode.SUBSCRIPTION_NOT_LATEST
    return None


@attrs.frozen
class PullAnswer:
    """What a pull that reached the store gets: the code (None: held, not answered), the queue offsets of the
    messages returned and ``nextBeginOffset``."""

    code: ResponseCode | None
    found: tuple[int, ...] = ()
    next_begin: int = 0


def _kept_run(kept: tuple[bool, ...], offset: int, answer: PullAnswer) -> bool:
    """The found entries are exactly the kept ones in [offset, next_begin)."""
    return list(answer.found) == [i for i in range(offset, answer.next_begin) if kept[i]]


@CLAUSES.oracle("FILTER-23")
def scan_queue(kept: tuple[bool, ...], offset: int, max_msgs: int, suspend: bool) -> PullAnswer:
    """The store's answer to a pull from ``offset`` of a queue whose entries the filter keeps or not (``kept[i]``
    for the entry at offset i), asking for ``max_msgs``; ``suspend``: the request has the suspend bit and the broker
    may still hold it (FILTER-23).

    pre: 0 <= offset <= len(kept) <= 40
    pre: 1 <= max_msgs <= 40
    post: offset <= __return__.next_begin <= len(kept)
    post: _kept_run(kept, offset, __return__)
    post: len(__return__.found) <= min(max_msgs, MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY)
    post: (__return__.code is ResponseCode.SUCCESS) == (len(__return__.found) > 0)
    post: __return__.code is not None or (suspend and offset == len(kept))
    post: __return__.code is not ResponseCode.PULL_RETRY_IMMEDIATELY or __return__.next_begin == len(kept) > offset
    post: __return__.next_begin == len(kept) or len(__return__.found) == min(max_msgs, MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY)
    """  # noqa: E501
    if offset == len(kept):
        return PullAnswer(None if suspend else ResponseCode.PULL_NOT_FOUND, (), offset)
    limit = min(max_msgs, MAX_TRANSFER_COUNT_ON_MESSAGE_IN_MEMORY)
    # maxFilterMessageCount: the scan reads at most this many bytes of consume queue.
    end = min(len(kept), offset + max(MAX_FILTER_SCAN_BYTES, max_msgs * CONSUME_QUEUE_ENTRY_BYTES)
              // CONSUME_QUEUE_ENTRY_BYTES)
    found: list[int] = []
    index = offset
    while index < end:
        if len(found) >= limit:
            break  # isTheBatchFull is asked before the entry is read: it is not scanned
        if kept[index]:
            found.append(index)
        index += 1
    if not found:
        # NO_MATCHED_MESSAGE: PULL_RETRY_IMMEDIATELY, from past what was read.
        return PullAnswer(ResponseCode.PULL_RETRY_IMMEDIATELY, (), index)
    return PullAnswer(ResponseCode.SUCCESS, tuple(found), index)


@CLAUSES.oracle("FILTER-2", "FILTER-16")
def broker_keeps(
    expression_type: str, expression: str, filter_expression: str | None, tags: str | None,
    properties: Mapping[str, str],
) -> bool:
    """Whether the broker's filter keeps a stored message with ``tags`` and ``properties`` for a subscription of
    ``expression_type``/``expression`` whose SQL92 filter data is ``filter_expression`` (None: none) (FILTER-2,
    FILTER-16): a tag subscription by the tags code at the consume queue, any other by the filter data.

    pre: len(expression) <= 6 and (filter_expression is None or len(filter_expression) <= 6)
    pre: len(properties) <= 2
    post: not is_tag_type(expression_type) or __return__ == broker_tag_matches(expression, tags_code(tags))
    post: is_tag_type(expression_type) or filter_expression is not None or __return__
    """
    if is_tag_type(expression_type):
        return broker_tag_matches(expression, tags_code(tags))
    if filter_expression is None:
        return True
    return sql92_matches(filter_expression, properties)


@CLAUSES.oracle("FILTER-3", "FILTER-26")
def client_keeps(subscription: Subscription, tags: str | None) -> bool:
    """Whether a push consumer hands its listener a pulled message with ``tags`` under ``subscription`` (FILTER-3,
    FILTER-26): a tag subscription by its tag set, any other keeps every message.

    pre: len(subscription.expression) <= 6
    post: is_tag_type(subscription.expression_type) or __return__
    post: not is_tag_type(subscription.expression_type) or __return__ == client_tag_matches(subscription.expression, tags)
    """  # noqa: E501
    if is_tag_type(subscription.expression_type):
        return client_tag_matches(subscription.expression, tags)
    return True
