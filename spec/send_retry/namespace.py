"""Send retry: the client namespace (``ClientConfig.namespace``): how a resource name is wrapped and unwrapped.

A client with a namespace sees its topics and groups under their plain names while brokers and name servers see them
as ``namespace%name`` (``%RETRY%namespace%group`` for a retry topic). The producer applies it to its group and to the
topic of each message (SEND-26, in the machine); these are the naming rules (SEND-25).
"""

from __future__ import annotations

from rocketspec.spec.protocol import (
    DLQ_GROUP_TOPIC_PREFIX,
    NAMESPACE_SEPARATOR,
    RETRY_GROUP_TOPIC_PREFIX,
    SYS_CONSUMER_GROUP_PREFIX,
    SYSTEM_TOPIC_PREFIX,
    SYSTEM_TOPICS,
)
from rocketspec.spec.send_retry.clauses import CLAUSES


def _system_resource(resource: str) -> bool:
    """A system topic of a client's ``TopicValidator`` (its set, or the ``rmq_sys_`` prefix) or a system group
    (``CID_RMQ_SYS_``): names a namespace never touches."""
    return (resource in SYSTEM_TOPICS or resource.startswith(SYSTEM_TOPIC_PREFIX)
            or resource.startswith(SYS_CONSUMER_GROUP_PREFIX))


def _split_prefix(resource: str) -> tuple[str, str]:
    """``(%RETRY% or %DLQ% or "", the rest)``: the prefix stays outside the namespace."""
    for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX):
        if resource.startswith(prefix):
            return prefix, resource[len(prefix):]
    return "", resource


def _carries(resource: str, namespace: str) -> bool:
    """Whether ``resource``, past its prefix, starts with ``namespace%`` (``isAlreadyWithNamespace``)."""
    return _split_prefix(resource)[1].startswith(namespace + NAMESPACE_SEPARATOR)


# The oracles call these uncontracted forms, so that CrossHair runs them rather than assuming their postconditions.


def wrap(namespace: str | None, resource: str | None) -> str | None:
    if not namespace or not resource:
        return resource
    if _system_resource(resource) or _carries(resource, namespace):
        return resource
    prefix, rest = _split_prefix(resource)
    return prefix + namespace + NAMESPACE_SEPARATOR + rest


def unwrapped(resource: str | None, namespace: str | None) -> str | None:
    if not resource or not namespace or not _carries(resource, namespace):
        return resource
    if _system_resource(resource):
        return resource
    prefix, rest = _split_prefix(resource)
    cut = rest.find(NAMESPACE_SEPARATOR)  # the first separator: a namespace holding one is cut there
    return prefix + rest[cut + 1:] if cut > 0 else resource


def _round_trips(namespace: str, resource: str, wrapped: str) -> bool:
    """Unwrapping what was wrapped gives the name back, unless the wrapped name reads as a system resource (a
    namespace starting ``rmq_sys_``), which RocketMQ leaves wrapped."""
    return wrapped == resource or _system_resource(wrapped) or unwrapped(wrapped, namespace) == resource


@CLAUSES.oracle("SEND-25")
def wrap_namespace(namespace: str | None, resource: str | None) -> str | None:
    """``NamespaceUtil.wrapNamespace``: ``resource`` (a topic or group) under ``namespace`` (SEND-25).

    An empty or null namespace or resource, a system topic or group, and a name that already carries
    ``namespace%`` (after a ``%RETRY%`` / ``%DLQ%`` prefix) are returned as they are; otherwise the prefix, if any,
    then ``namespace%``, then the rest: ``("ns", "T")`` gives ``ns%T``, ``("ns", "%RETRY%G")`` gives ``%RETRY%ns%G``.

    A namespace holding ``%`` is outside these contracts: RocketMQ takes one, but its names then neither stay put
    when wrapped again nor unwrap to what they were.

    pre: namespace is None or (len(namespace) <= 4 and "%" not in namespace)
    pre: resource is None or len(resource) <= 10
    post: __return__ == resource or (bool(namespace) and bool(resource))
    post: __return__ is None or resource is None or _split_prefix(__return__)[0] == _split_prefix(resource)[0]
    post: __return__ == resource or __return__ == _split_prefix(resource)[0] + namespace + "%" + _split_prefix(resource)[1]
    post: not __return__ or not namespace or _system_resource(__return__) or _carries(__return__, namespace)
    post: wrap(namespace, __return__) == __return__
    post: __return__ is None or not namespace or _round_trips(namespace, resource, __return__)
    """  # noqa: E501
    return wrap(namespace, resource)


@CLAUSES.oracle("SEND-25")
def without_namespace(resource: str | None, namespace: str | None) -> str | None:
    """``NamespaceUtil.withoutNamespace(resource, namespace)``: ``resource`` with ``namespace`` taken off (SEND-25).

    Only a name that carries ``namespace%`` after its ``%RETRY%`` / ``%DLQ%`` prefix changes, and only if it is not a
    system resource: the prefix is kept and everything up to the first ``%`` after it goes (``ns%T`` gives ``T``,
    ``%RETRY%ns%G`` gives ``%RETRY%G``). An empty or null name or namespace, and a name under another namespace
    or none, are returned as they are.

    pre: namespace is None or len(namespace) <= 4
    pre: resource is None or len(resource) <= 12
    post: __return__ == resource or (bool(namespace) and bool(resource) and _carries(resource, namespace))
    post: __return__ is None or resource is None or len(__return__) <= len(resource)
    post: __return__ is None or __return__.startswith(_split_prefix(resource)[0])
    post: __return__ is None or resource is None or resource.endswith(_split_prefix(__return__)[1])
    """
    return unwrapped(resource, namespace)
