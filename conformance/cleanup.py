"""What a broker run leaves on its target, and deleting it: the run leaves the target as it found it.

Every name a run makes carries the run's tag (:func:`run_name`: ``rscf_<kind>_<tag>_<n>``). A name is *the run's*
when it is such a name, alone or behind the ``%RETRY%`` or ``%DLQ%`` prefix a broker puts before a group's name when
it makes that group's retry or dead-letter topic on its own (a send-back, a retry pull). After the run, what the
target lists and is the run's, and was not listed when the run began, is deleted, the way mqadmin deletes it:

- on each master, every subscription group, and every group consumer offsets are kept for (a commit from a group
  never created has offsets and no config): DELETE_SUBSCRIPTIONGROUP with ``removeOffset=true``, which 4.9.8's
  ``AdminBrokerProcessor.deleteSubscriptionGroup`` turns into ``deleteSubscriptionGroupConfig`` and
  ``ConsumerOffsetManager.removeOffset`` (every ``topic@group`` entry of the group);
- on each master, every topic: DELETE_TOPIC_IN_BROKER (``deleteTopicConfig`` and ``cleanUnusedTopic``);
- on the name server, every topic, after the masters: DELETE_TOPIC_IN_NAMESRV. A broker's registration only adds
  topics to the name server's routes, so a topic deleted from a broker stays routed until this.

A name that is not the run's is never touched, even when it appeared during the run: another user's topic, or a
topic the broker made for itself (RMQ_SYS_TRANS_HALF_TOPIC at its first transaction check, TRANS_CHECK_MAX_TIME_TOPIC
after a check-back gave up; 4.9.8 refuses to delete system topics anyway). The one system-prefixed name that is the
run's, ``rmq_sys_rscf_topic_<tag>_<n>``, is the one a case asks the broker to refuse: a broker that created it gets
it deleted. The lists are read over the wire (GET_ALL_TOPIC_LIST_FROM_NAMESERVER, GET_ALL_TOPIC_CONFIG,
GET_ALL_SUBSCRIPTIONGROUP_CONFIG, GET_ALL_CONSUMER_OFFSET); where a target does not answer one, the names the cases
recorded (their topics, their groups and those groups' retry and dead-letter topics) are deleted blindly instead.
After each pass the lists are read again, at most :data:`CLEANUP_PASSES` times: a deletion can race a broker's
registration of the topic table it read just before.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence

import attrs

from rocketspec.conformance import requests
from rocketspec.conformance.wire import TRANSPORT_ERRORS, Command, WireClient
from rocketspec.spec.protocol import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    SYSTEM_TOPIC_PREFIX,
    ResponseCode,
    dlq_topic,
    retry_topic,
)

# One run's names share this tag (the process and the start time), so a target's leftovers can be told apart by run.
RUN_TAG = f"{os.getpid() % 100000:05d}{int(time.time()) % 100000:05d}"
# A deletion can race a broker's registration (it read its topic table before the delete): look again, a few times.
CLEANUP_PASSES = 3
# Deletions sent before their answers are read: few enough that neither side's socket buffer fills.
PIPELINE = 32
# What a target that cannot be read or written at all ends with (it keeps what it holds; the run goes on).
_WIRE_ERRORS: tuple[type[Exception], ...] = (*TRANSPORT_ERRORS, ValueError, UnicodeDecodeError)


def run_name(kind: str, serial: int) -> str:
    """The ``serial``-th name of ``kind`` this run makes: ``rscf_<kind>_<tag>_<serial>`` (a valid topic and group)."""
    return f"rscf_{kind}_{RUN_TAG}_{serial}"


def is_run_name(name: str) -> bool:
    """True when ``name`` is one this run made, a group's retry or dead-letter topic of one, or the system-prefixed
    topic a case asks a broker to refuse (should a broker have created it)."""
    for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX, SYSTEM_TOPIC_PREFIX):
        name = name.removeprefix(prefix)
    return name.startswith("rscf_") and f"_{RUN_TAG}_" in name


@attrs.frozen
class Listing:
    """What one master lists: its topics, its subscription groups, and the groups it keeps consumer offsets for.

    A field is None when the broker did not answer its listing."""

    topics: frozenset[str] | None
    groups: frozenset[str] | None
    offset_groups: frozenset[str] | None


@attrs.frozen
class Inventory:
    """What a target lists: the name server's topics (None when it does not answer) and each master's listing."""

    namesrv_topics: frozenset[str] | None
    brokers: Mapping[str, Listing]


class _OutOfTime(TimeoutError):
    """The clean-up's deadline passed (after Ctrl-C it has what is left of the command's two seconds)."""


def _wait(timeout: float, deadline: float | None) -> float:
    """How long the next connection or request may wait: ``timeout``, cut to what is left before ``deadline``."""
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise _OutOfTime("the clean-up ran out of time")
    return min(timeout, left)


def _ask(client: WireClient, request: Command, deadline: float | None) -> Command | None:
    """The answer to ``request``; None when none comes in time or it cannot be read."""
    try:
        return client.request(request, timeout=_wait(client.timeout, deadline))
    except (TimeoutError, ValueError, UnicodeDecodeError):
        return None


def _member(answer: Command | None, key: str) -> object | None:
    """The ``key`` member of a SUCCESS answer's JSON body; None for any other answer."""
    if answer is None or answer.code != ResponseCode.SUCCESS:
        return None
    try:
        body = requests.json_body(answer) or {}
    except (ValueError, UnicodeDecodeError):
        return None
    return body.get(key) if isinstance(body, dict) else None


def _names(value: object | None) -> frozenset[str] | None:
    """The keys of a JSON object or the items of a JSON array; None for anything else (not a listing)."""
    if isinstance(value, (dict, list)):
        return frozenset(str(k) for k in value)
    return None


def _offset_groups(answer: Command | None) -> frozenset[str] | None:
    """The groups of a GET_ALL_CONSUMER_OFFSET answer's ``topic@group`` keys."""
    if answer is not None and answer.code == ResponseCode.SYSTEM_ERROR and not answer.body:
        return frozenset()  # 4.9.8 answers "No consumer offset in this broker" when it keeps none
    table = _names(_member(answer, "offsetTable"))
    return None if table is None else frozenset(key.rpartition("@")[2] for key in table if "@" in key)


def broker_listing(addr: str, timeout: float, deadline: float | None = None) -> Listing:
    """What the master at ``addr`` lists (every part None when it cannot be reached)."""
    try:
        with WireClient(addr, _wait(timeout, deadline)) as client:
            return Listing(_names(_member(_ask(client, requests.all_topic_config(), deadline), "topicConfigTable")),
                           _names(_member(_ask(client, requests.all_subscription_groups(), deadline),
                                          "subscriptionGroupTable")),
                           _offset_groups(_ask(client, requests.all_consumer_offsets(), deadline)))
    except _WIRE_ERRORS:
        return Listing(None, None, None)


def namesrv_topics(namesrv: str, timeout: float, deadline: float | None = None) -> frozenset[str] | None:
    """The name server's topics (GET_ALL_TOPIC_LIST_FROM_NAMESERVER); None when it does not answer."""
    try:
        with WireClient(namesrv, _wait(timeout, deadline)) as client:
            return _names(_member(_ask(client, requests.all_topic_list(), deadline), "topicList"))
    except _WIRE_ERRORS:
        return None


def take_inventory(namesrv: str, broker_addrs: Sequence[str], timeout: float,
                   deadline: float | None = None) -> Inventory:
    """What the target at ``namesrv`` with masters ``broker_addrs`` lists now."""
    return Inventory(namesrv_topics(namesrv, timeout, deadline),
                     {addr: broker_listing(addr, timeout, deadline) for addr in broker_addrs})


@attrs.frozen
class Leftovers:
    """What one pass deletes: per master its groups and topics, and the name server's topics."""

    broker_groups: Mapping[str, frozenset[str]]
    broker_topics: Mapping[str, frozenset[str]]
    namesrv_topics: frozenset[str]

    def names(self) -> frozenset[str]:
        found: set[str] = set(self.namesrv_topics)
        for part in (*self.broker_groups.values(), *self.broker_topics.values()):
            found |= part
        return frozenset(found)


def leftovers(before: Inventory, now: Inventory, recorded_topics: Iterable[str],
              recorded_groups: Iterable[str]) -> Leftovers:
    """The run's names listed ``now`` and not ``before``; where a listing is missing (now or before), the recorded
    names (a recorded group brings its retry and dead-letter topics)."""
    groups = {g for g in recorded_groups if is_run_name(g)}
    topics = {t for t in recorded_topics if is_run_name(t)} | {f(g) for g in groups for f in (retry_topic, dlq_topic)}

    def new(now_part: frozenset[str] | None, before_part: frozenset[str] | None, fallback: set[str]) -> frozenset[str]:
        if now_part is None or before_part is None:
            return frozenset(fallback)
        return frozenset(n for n in now_part - before_part if is_run_name(n))

    broker_groups: dict[str, frozenset[str]] = {}
    broker_topics: dict[str, frozenset[str]] = {}
    for addr, listing in now.brokers.items():
        earlier = before.brokers.get(addr, Listing(None, None, None))
        broker_groups[addr] = new(listing.groups, earlier.groups, groups) | new(listing.offset_groups,
                                                                               earlier.offset_groups, groups)
        broker_topics[addr] = new(listing.topics, earlier.topics, topics)
    namesrv_all = topics | {t for part in broker_topics.values() for t in part}
    return Leftovers(broker_groups, broker_topics, new(now.namesrv_topics, before.namesrv_topics, namesrv_all))


def _send_all(addr: str, commands: Sequence[Command], timeout: float, deadline: float | None) -> None:
    """Send each command to ``addr`` and read the answers (best effort: a target that refuses one keeps what it
    names). They go out :data:`PIPELINE` at a time before their answers are read: a clean-up after Ctrl-C has a
    second, and a round trip per deletion would spend it waiting."""
    if not commands:
        return
    try:
        with WireClient(addr, _wait(timeout, deadline)) as client:
            client.request_all(commands, lambda: _wait(timeout, deadline), PIPELINE)
    except _WIRE_ERRORS:
        pass


def delete(found: Leftovers, namesrv: str, timeout: float, deadline: float | None = None) -> None:
    """Delete what ``found`` names: each master's groups (with their offsets) and topics, then the name server's."""
    for addr in sorted(found.broker_groups.keys() | found.broker_topics.keys()):
        commands = [requests.delete_group(g, remove_offset=True) for g in sorted(found.broker_groups.get(addr, ()))]
        commands += [requests.delete_topic_in_broker(t) for t in sorted(found.broker_topics.get(addr, ()))]
        _send_all(addr, commands, timeout, deadline)
    _send_all(namesrv, [requests.delete_topic_in_namesrv(t) for t in sorted(found.namesrv_topics)], timeout, deadline)


def clean(namesrv: str, broker_addrs: Sequence[str], before: Inventory, recorded_topics: Iterable[str],
          recorded_groups: Iterable[str], timeout: float, deadline: float | None = None) -> frozenset[str]:
    """Delete the run's names the target lists and did not list ``before``, within ``deadline`` (``time.monotonic``)
    if one is given; the names still listed after :data:`CLEANUP_PASSES` passes (none when all are gone)."""
    found = leftovers(before, take_inventory(namesrv, broker_addrs, timeout, deadline), recorded_topics,
                      recorded_groups)
    for _ in range(CLEANUP_PASSES):
        if not found.names():
            break
        delete(found, namesrv, timeout, deadline)
        # Look again with the listings only: the recorded names, sent blindly where a listing was missing, are not
        # looked for (nothing would say whether they are gone).
        found = leftovers(before, take_inventory(namesrv, broker_addrs, timeout, deadline), (), ())
    return found.names()
