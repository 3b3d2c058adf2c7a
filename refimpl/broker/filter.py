"""Property (SQL92) filtering at the broker: filter data, CHECK_CLIENT_CONFIG and the commit-log match.

* ``ConsumerFilterManager`` (4.9.8 ``ConsumerFilterManager`` / ``FilterDataMapByTopic``): every heartbeat
  registers, per subscribed topic with a non-tag expression type, the group's compiled expression and the client's
  subscription version. Only a newer version changes anything; a newer version with a new expression that does not
  compile removes the old data ("let client report error"). The data is registered whether or not the broker has
  ``enablePropertyFilter``. The dead-time bookkeeping (a group that leaves, the 24 h clean-up, the bloom filter
  bit maps of ``enableCalcFilterBitMap``) changes no answer a client sees within a run and is not kept.
* ``check_client_config`` (``ClientManageProcessor.checkClientConfig``, CHECK_CLIENT_CONFIG = 46): what a Java
  push or lite pull consumer asks at start for each non-tag subscription.
* ``commit_log_filter`` (``ExpressionMessageFilter.isMatchedByCommitLog``): the store-side test of a stored
  message's properties; without compiled filter data every message matches.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

import attrs

from rocketspec.refimpl.broker.clients import SubscriptionData, is_tag_type
from rocketspec.refimpl.broker.services import BrokerServices
from rocketspec.refimpl.broker.sql92 import Selector, SelectorError, compile_selector
from rocketspec.refimpl.message import decode_stored_message
from rocketspec.refimpl.remoting import Channel, HeaderError, RemotingCommand
from rocketspec.spec.protocol import EXPRESSION_TYPE_SQL92, ResponseCode


def unsupported_remark(expression_type: str | None) -> str:
    """The SYSTEM_ERROR remark of a broker without ``enablePropertyFilter`` (pull and CHECK_CLIENT_CONFIG)."""
    return f"The broker does not support consumer to filter message by {expression_type}"


def compile_expression(expression_type: str | None, expression: str | None) -> Selector:
    """``FilterFactory.INSTANCE.get(type).compile(expression)``: only SQL92 is registered; another type has no
    filter (Java dereferences null: a NullPointerException, whose message is the remark)."""
    if expression_type != EXPRESSION_TYPE_SQL92:
        raise SelectorError('Cannot invoke "org.apache.rocketmq.filter.FilterSpi.compile(String)" because the '
                            'return value of "org.apache.rocketmq.filter.FilterFactory.get(String)" is null')
    return compile_selector(expression)


@attrs.frozen
class FilterData:
    """``ConsumerFilterData``: one group's compiled expression on one topic, at the client's version."""

    topic: str
    group: str
    expression: str
    expression_type: str
    client_version: int
    selector: Selector

    @classmethod
    def build(cls, topic: str, group: str, expression: str | None, expression_type: str | None,
              client_version: int) -> FilterData | None:
        """``ConsumerFilterManager.build``: None for a tag type or an expression that does not compile."""
        if is_tag_type(expression_type) or expression is None:
            return None
        try:
            selector = compile_expression(expression_type, expression)
        except SelectorError:
            return None
        return cls(topic, group, expression, str(expression_type), client_version, selector)


class ConsumerFilterManager:
    """Filter data by topic and group."""

    def __init__(self) -> None:
        self._table: dict[tuple[str, str], FilterData] = {}

    def get(self, topic: str, group: str) -> FilterData | None:
        return self._table.get((topic, group))

    def snapshot(self) -> dict[tuple[str, str], FilterData]:
        """Every group's filter data by (topic, group), a copy (for inspection)."""
        return dict(self._table)

    def register_all(self, group: str, subscriptions: Iterable[SubscriptionData]) -> None:
        """``register(group, subList)``, run for every consumer of every heartbeat."""
        for sub in subscriptions:
            self.register(sub.topic, group, sub.sub_string, sub.expression_type, sub.sub_version)

    def register(self, topic: str, group: str, expression: str | None, expression_type: str | None,
                 client_version: int) -> bool:
        """``FilterDataMapByTopic.register``: whether the data changed."""
        if is_tag_type(expression_type) or not expression:
            return False
        key = (topic, group)
        old = self._table.get(key)
        if old is not None and client_version <= old.client_version:
            return False  # an older or equal version never replaces (even with another expression)
        if old is not None and old.expression == expression and old.expression_type == expression_type:
            self._table[key] = attrs.evolve(old, client_version=client_version)
            return True
        new = FilterData.build(topic, group, expression, expression_type, client_version)
        if new is None:
            self._table.pop(key, None)
            return False
        self._table[key] = new
        return True


def commit_log_filter(subscription: SubscriptionData, data: FilterData | None,
                      broker_name: str) -> Callable[[bytes], bool] | None:
    """``isMatchedByCommitLog`` for the store's scan: None (keep all) for tag subscriptions and when there is no
    compiled filter data, else a test of the stored message's properties."""
    if subscription.class_filter_mode or is_tag_type(subscription.expression_type) or data is None:
        return None
    selector = data.selector

    def matches(stored: bytes) -> bool:
        message, _size = decode_stored_message(stored, broker_name=broker_name, decompress=False)
        return selector.matches(message.properties)

    return matches


def check_client_config(broker: BrokerServices, request: RemotingCommand, channel: Channel) -> RemotingCommand:
    """``checkClientConfig``: SUCCESS without a subscription or for a tag type; without enablePropertyFilter
    SYSTEM_ERROR; an unknown type or an expression that does not compile SUBSCRIPTION_PARSE_FAILED with the
    compile error as remark; else SUCCESS. A body that is not JSON is SYSTEM_ERROR (Java's decode throws)."""
    if not request.body:
        # RemotingSerializable.decode: new String(null) (an empty body arrives as null).
        raise HeaderError('java.lang.NullPointerException: Cannot read the array length because "bytes" is null, '
                          "java.base/java.lang.String.<init>(String.java:1387)")
    try:
        body = json.loads(request.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise HeaderError(f"com.alibaba.fastjson.JSONException: {error}") from None
    if body is not None and not isinstance(body, dict):
        raise HeaderError(f"com.alibaba.fastjson.JSONException: syntax error, expect {{, actual {type(body).__name__}")
    sub = body.get("subscriptionData") if body is not None else None
    if sub is not None and not isinstance(sub, dict):
        raise HeaderError("com.alibaba.fastjson.JSONException: syntax error, expect {, fieldName subscriptionData")
    if sub is None:
        return request.response(ResponseCode.SUCCESS)
    expression_type = sub.get("expressionType")
    expression_type = None if expression_type is None else str(expression_type)
    if is_tag_type(expression_type):
        return request.response(ResponseCode.SUCCESS)
    if not broker.config.enable_property_filter:
        return request.response(ResponseCode.SYSTEM_ERROR, remark=unsupported_remark(expression_type))
    expression = sub.get("subString")
    try:
        if expression is None:
            # SelectorParser.parse(null): the parse cache rejects a null key (an NPE without a message).
            raise SelectorError("")
        compile_expression(expression_type, str(expression))
    except SelectorError as error:
        return request.response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, remark=str(error) or None)
    return request.response(ResponseCode.SUCCESS)
