"""Message filter: the oracle functions: the normative decisions, with their contracts (checked by CrossHair)."""

from __future__ import annotations

import attrs

from rocketspec.spec.message_filter.clauses import CLAUSES
from rocketspec.spec.message_filter.sql92 import sql92_compiles
from rocketspec.spec.message_filter.tags import is_tag_type
from rocketspec.spec.protocol import EXPRESSION_TYPE_SQL92, ResponseCode


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
