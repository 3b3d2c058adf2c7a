"""What several broker areas' cases share: a topic with messages in it, waiting for the store's asynchronous dispatch,
reading a queue or a stored message back, client identities, and the answers nothing is expected for.

The real broker answers a send once the commit log has the message; its consume queue (what pulls and GET_MAX_OFFSET
read) and its index follow asynchronously (``ReputMessageService``), so cases wait, bounded, for their messages to be
dispatched before they judge a pull.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from rocketspec.conformance import requests
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.message import MessageExt
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import Property, ResponseCode

# A commit-log offset no test broker has reached (2^50 bytes, 1 PiB).
FAR_COMMIT_LOG_OFFSET = 1 << 50
# A request code no RocketMQ 4.x server serves (codes in use stay below 400).
UNSERVED_REQUEST_CODE = 9999
# How long the real broker's reput thread may take to make a stored message visible in its consume queue.
DISPATCH_WAIT_S = 5.0
DISPATCH_POLL_S = 0.02
# How often a case pulls again while it waits for a message to appear.
POLL_INTERVAL_S = 0.25


# ------------------------------------------------------------------------------------------------- identities
def new_client_id(ctx: BrokerContext, role: str) -> str:
    """A client id no other case uses, shaped as a 4.9.8 client's (``<ip>@<instance>``)."""
    return f"127.0.0.1@{ctx.name(role)}"


def consumer_heartbeat(ctx: BrokerContext, client: WireClient, group: str, subscription: dict[str, object], what: str,
                       **options: Any) -> None:
    """HEART_BEAT registering the suite's consumer of ``group`` with one subscription on ``client``; SUCCESS."""
    answer = client.request(requests.heartbeat(f"{requests.SUITE_CLIENT_ID}-{group}",
                                               consumer_groups={group: [subscription]}, **options))
    ctx.expect_code(answer, ResponseCode.SUCCESS, what)


def unique_key() -> str:
    """A fresh UNIQ_KEY (32 upper-case hex digits, as a client's MessageClientIDSetter makes)."""
    return uuid.uuid4().hex.upper()


def producer_properties(key: str, tags: str | None = "TagA", extra: dict[str, str] | None = None) -> dict[str, str]:
    """The properties a 4.9.8 producer sends: TAGS, KEYS, WAIT, UNIQ_KEY (= ``key``), then ``extra``."""
    return requests.message_properties(tags, f"k-{key}", extra={Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: key,
                                                                **(extra or {})})


# ------------------------------------------------------------------------------------------- queues and dispatch
def max_offset(client: WireClient, topic: str, queue_id: int) -> int:
    """GET_MAX_OFFSET of a queue (0 when the broker answers anything but SUCCESS)."""
    answer = client.request(requests.get_max_offset(topic, queue_id))
    if answer.code != ResponseCode.SUCCESS:
        return 0
    return int(answer.field("offset") or 0)


def dispatched(ctx: BrokerContext, client: WireClient, topic: str, queue_id: int, count: int) -> None:
    """Wait until the queue's max offset reaches ``count`` (its messages are in the consume queue)."""
    ctx.wait_until(lambda: max_offset(client, topic, queue_id) >= count, DISPATCH_WAIT_S,
                   what=f"max offset {count} of {topic}:{queue_id} (the sends dispatched)", interval=DISPATCH_POLL_S)


def fill(ctx: BrokerContext, client: WireClient, topic: str, count: int, queue_id: int = 0,
         tags: str | None = None) -> None:
    """Send ``count`` messages (bodies m0, m1, ...) to one queue and wait until the consume queue has them."""
    last = None
    for index in range(count):
        last = ctx.send(client, topic, f"m{index}".encode(), queue_id, tags=tags)
    if last is not None:
        dispatched(ctx, client, topic, queue_id, last.queue_offset + 1)


def setup(ctx: BrokerContext, queues: int = 1, messages: int = 0, *, group_options: dict[str, Any] | None = None,
          broker: int = 0, **topic_options: object) -> tuple[WireClient, str, str]:
    """A connection to a master (the first unless ``broker`` says otherwise), a new topic there with ``messages``
    messages in queue 0, and a group (``ctx.group(**group_options)``)."""
    topic = ctx.topic(queues, brokers=[broker], wait_route=False, **topic_options)  # type: ignore[arg-type]
    group = ctx.group(**(group_options or {}))
    client = ctx.broker(broker)
    fill(ctx, client, topic, messages)
    return client, topic, group


def bodies(ctx: BrokerContext, answer: RemotingCommand) -> list[bytes]:
    """The bodies of the messages in a pull answer, in order."""
    return [m.body for m in ctx.messages(answer)]


def expect_pull(ctx: BrokerContext, client: WireClient, group: str, topic: str, queue_id: int, offset: int,
                code: int, what: str, **options: object) -> RemotingCommand:
    """PULL_MESSAGE of ``topic``:``queue_id`` at ``offset``, requiring the answer ``code`` (``what`` names the pull)."""
    answer = client.request(requests.pull(group, topic, queue_id, offset, **options))  # type: ignore[arg-type]
    ctx.expect_code(answer, code, what)
    return answer


def consumer_offset(ctx: BrokerContext, client: WireClient, group: str, topic: str, queue_id: int = 0) -> int:
    """The group's stored consumer offset of the queue (QUERY_CONSUMER_OFFSET, which must answer SUCCESS)."""
    answer = client.request(requests.query_consumer_offset(group, topic, queue_id))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"QUERY_CONSUMER_OFFSET {group} {topic}:{queue_id}")
    return int(answer.require("offset"))


def commit_consumer_offset(ctx: BrokerContext, client: WireClient, group: str, topic: str, queue_id: int,
                           offset: int) -> None:
    """UPDATE_CONSUMER_OFFSET of the group's queue to ``offset``, requiring SUCCESS."""
    answer = client.request(requests.update_consumer_offset(group, topic, queue_id, offset))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"UPDATE_CONSUMER_OFFSET {group} {topic}:{queue_id} = {offset}")


# ------------------------------------------------------------------------------------------ reading messages back
def view(ctx: BrokerContext, client: WireClient, commit_log_offset: int, broker: int = 0) -> MessageExt | None:
    """The stored message at ``commit_log_offset`` (VIEW_MESSAGE_BY_ID), None when the broker has none there."""
    answer = client.request(requests.view_message(commit_log_offset))
    if answer.code != ResponseCode.SUCCESS:
        return None
    found = ctx.messages(answer, broker)
    return found[0] if found else None


def stored(ctx: BrokerContext, client: WireClient, commit_log_offset: int, what: str) -> MessageExt:
    """The stored message at ``commit_log_offset``; the case fails when there is none (``what`` names it)."""
    message = view(ctx, client, commit_log_offset)
    ctx.expect(message is not None, f"VIEW_MESSAGE_BY_ID {commit_log_offset} finds {what}", "nothing")
    assert message is not None
    return message


def pull_from(ctx: BrokerContext, client: WireClient, group: str, topic: str, queue_id: int, offset: int = 0,
              broker: int = 0) -> list[MessageExt]:
    """Every message of a queue from ``offset`` on (as many pulls as it takes; [] for a missing topic)."""
    found: list[MessageExt] = []
    while True:
        answer = client.request(requests.pull(group, topic, queue_id, offset))
        if answer.code != ResponseCode.SUCCESS:
            return found
        batch = ctx.messages(answer, broker)
        next_offset = int(answer.field("nextBeginOffset") or offset)
        if not batch or next_offset <= offset:
            return found
        found.extend(batch)
        offset = next_offset


def wait_message(ctx: BrokerContext, client: WireClient, group: str, topic: str, queue_ids: Iterable[int],
                 match: Callable[[MessageExt], bool], timeout: float, *, what: str,
                 start: dict[int, int] | None = None, broker: int = 0) -> MessageExt:
    """The first message of the queues matching ``match``, polled by pulls from ``start`` (0) for ``timeout`` s."""
    queues = list(queue_ids)
    starts = start or {}

    def poll() -> MessageExt | None:
        for queue_id in queues:
            for message in pull_from(ctx, client, group, topic, queue_id, starts.get(queue_id, 0), broker):
                if match(message):
                    return message
        return None

    return ctx.wait_until(poll, timeout, what=what, interval=POLL_INTERVAL_S)


def wait_keyed(ctx: BrokerContext, client: WireClient, group: str, topic: str, queue_id: int, key: str | None, *,
               what: str, timeout: float = DISPATCH_WAIT_S) -> MessageExt:
    """The message with UNIQ_KEY ``key`` in ``topic``:``queue_id``, waited for (``what`` names it)."""
    return wait_message(ctx, client, group, topic, [queue_id], lambda m: m.unique_key == key, timeout, what=what)


# ---------------------------------------------------------------------------------------------------- answers
def answer_within(client: WireClient, opaque: int, timeout: float) -> RemotingCommand | None:
    """The response with ``opaque`` if it comes within ``timeout`` seconds, else None."""
    try:
        return client.response_to(opaque, timeout)
    except TimeoutError:
        return None


def expect_remark_names(ctx: BrokerContext, answer: RemotingCommand, text: str) -> None:
    """The answer's remark contains ``text`` (a topic, group or queue it names)."""
    ctx.expect(text in (answer.remark or ""), f"a remark naming {text}", repr(answer.remark))


def queue_datas(answer: RemotingCommand) -> dict[str, dict[str, Any]]:
    """A route answer's queue data by broker name ({} for an answer without a route)."""
    if answer.code != ResponseCode.SUCCESS:
        return {}
    body = requests.json_body(answer) or {}
    return {q.get("brokerName"): q for q in body.get("queueDatas") or []}
