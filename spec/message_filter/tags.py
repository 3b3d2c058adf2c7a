"""Message filter: the tag oracles: a subscription's tags and codes, the broker's and the client's tag match."""

from __future__ import annotations

from rocketspec.spec.java import string_hash as java_string_hash
from rocketspec.spec.message_filter.clauses import CLAUSES
from rocketspec.spec.protocol import EXPRESSION_TYPE_TAG, SUB_ALL


# ----------------------------------------------------------------------------------------------------------- tags
@CLAUSES.oracle("FILTER-1")
def subscription_tags(sub_string: str | None) -> tuple[str, ...]:
    """The tag set of a tag subscription, in order, duplicates kept once; empty = every tag (FILTER-1).

    post: all(t != "" and t == java_trim(t) for t in __return__)
    post: sub_string not in (None, "", "*") or __return__ == ()
    post: len(set(__return__)) == len(__return__)
    """
    if sub_string is None or sub_string == SUB_ALL or sub_string == "":
        return ()
    tags: list[str] = []
    for piece in sub_string.split("||"):
        # Java's String.trim strips chars <= ' ' (not Python's whitespace set).
        tag = java_trim(piece)
        if tag and tag not in tags:
            tags.append(tag)
    return tuple(tags)


def java_trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


@CLAUSES.oracle("FILTER-2")
def tags_code(tags: str | None) -> int:
    """The tags code the broker stores in a message's consume-queue entry: 0 without tags (or empty ones), else the
    tags' ``String.hashCode`` (FILTER-2).

    post: -2**31 <= __return__ < 2**31
    post: tags not in (None, "") or __return__ == 0
    post: tags is None or __return__ == java_string_hash(tags)
    """
    if tags is None or tags == "":
        return 0
    return java_string_hash(tags)


@CLAUSES.oracle("FILTER-2")
def broker_tag_matches(sub_string: str | None, tags_code: int) -> bool:
    """Whether the broker's consume-queue filter keeps an entry with ``tags_code`` (FILTER-2).

    The code set holds the int hash of every subscribed tag; the stored code is compared as ``Long.intValue``.

    pre: -2**63 <= tags_code < 2**63
    post: sub_string not in (None, "", "*") or __return__
    post: not __return__ or sub_string in (None, "", "*") or any(java_string_hash(t) == _as_int(tags_code) for t in subscription_tags(sub_string))
    """  # noqa: E501
    if sub_string is None or sub_string == SUB_ALL or sub_string == "":
        return True
    codes = {java_string_hash(t) for t in subscription_tags(sub_string)}
    return _as_int(tags_code) in codes


def _as_int(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@CLAUSES.oracle("FILTER-3")
def client_tag_matches(sub_string: str | None, tags: str | None) -> bool:
    """Whether the client keeps a pulled message whose tags are ``tags`` (FILTER-3).

    post: subscription_tags(sub_string) != () or __return__
    post: tags is not None or not __return__ or subscription_tags(sub_string) == ()
    """
    wanted = subscription_tags(sub_string)
    if not wanted:
        return True
    return tags is not None and tags in wanted


@CLAUSES.oracle("FILTER-4")
def is_tag_type(expression_type: str | None) -> bool:
    """``ExpressionType.isTagType``: null, empty or ``TAG`` (FILTER-4).

    post: __return__ == (expression_type in (None, "", "TAG"))
    post: expression_type != "SQL92" or not __return__
    """
    return expression_type is None or expression_type == "" or expression_type == EXPRESSION_TYPE_TAG
