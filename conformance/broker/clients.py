"""Broker conformance cases: heartbeats, consumer lists, NOTIFY_CONSUMER_IDS_CHANGED and UNREGISTER_CLIENT.

HEART_BEAT (``ClientManageProcessor.heartBeat``, BRK-13) registers the connection's consumer groups (with their
subscriptions, message model and consume type; %RETRY%<group> is created for each) and producer groups.
GET_CONSUMER_LIST_BY_GROUP answers the client ids of the group's live connections, SYSTEM_ERROR "no consumer for this
group" when there are none. When a group's connections change (a new client's heartbeat, UNREGISTER_CLIENT, a
connection closing) the broker sends NOTIFY_CONSUMER_IDS_CHANGED, oneway, to each consumer connection of the group
(BRK-14): that request arrives on the consumer's own connection, where these cases wait for it. UNREGISTER_CLIENT
removes the client from the groups its header names (BRK-15).
"""

from __future__ import annotations

from typing import Any

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import new_client_id
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.model import CaseList, Level
from rocketspec.conformance.wire import WireClient
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import DEFAULT_PERM, RPC_ONEWAY_FLAG, RequestCode, ResponseCode, retry_topic

cases = CaseList("broker/clients")
CASES = cases.cases

# How long a notification may take to arrive, and how long a connection must stay quiet to count as drained.
NOTIFY_WAIT_S = 3.0
QUIET_S = 0.4
# How long the broker may take to notice a closed connection, or to route a topic it created.
CHANGE_WAIT_S = 5.0


def _join(ctx: BrokerContext, client: WireClient, client_id: str, group: str, topic: str) -> None:
    """A consumer heartbeat of ``client_id`` into ``group`` subscribing to ``topic`` (all tags)."""
    answer = client.request(requests.heartbeat(client_id, consumer_groups={group: [requests.subscription_json(topic)]}))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"HEART_BEAT of {client_id} into {group}")


def _consumer_ids(ctx: BrokerContext, client: WireClient, group: str) -> list[str] | None:
    """The group's consumer ids (sorted), or None when the broker answers that it has none."""
    answer = client.request(requests.consumer_list(group))
    if answer.code == ResponseCode.SYSTEM_ERROR:
        return None
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_CONSUMER_LIST_BY_GROUP {group}")
    body = requests.json_body(answer) or {}
    return sorted(body.get("consumerIdList") or [])


def _drain(client: WireClient) -> None:
    """Forget the notifications that reached ``client`` so far (those of its own and earlier joins)."""
    client.server_requests.clear()
    while client.wait_request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, QUIET_S) is not None:
        pass


def _expect_notified(ctx: BrokerContext, client: WireClient, group: str, why: str) -> RemotingCommand:
    """The NOTIFY_CONSUMER_IDS_CHANGED for ``group`` that must reach ``client`` (the first consumer) after ``why``."""
    notify = client.wait_request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, NOTIFY_WAIT_S)
    ctx.expect(notify is not None, f"NOTIFY_CONSUMER_IDS_CHANGED for {group} on the first consumer's connection "
               f"within {NOTIFY_WAIT_S:g} s after {why}", "no such request arrived")
    assert notify is not None
    ctx.expect_equal(notify.field("consumerGroup"), group, "the notification's consumerGroup")
    return notify


def _expect_not_notified(ctx: BrokerContext, client: WireClient, why: str) -> None:
    """No NOTIFY_CONSUMER_IDS_CHANGED reaches ``client`` (the first consumer) within 1 s (``why`` says when)."""
    notify = client.wait_request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 1.0)
    ctx.expect(notify is None, f"no NOTIFY_CONSUMER_IDS_CHANGED {why}", "the first consumer was notified")


def _unregister(ctx: BrokerContext, client: WireClient, client_id: str, group: str) -> None:
    """UNREGISTER_CLIENT of ``client_id``'s consumer of ``group`` on ``client``, requiring SUCCESS."""
    answer = client.request(requests.unregister_client(client_id, consumer_group=group))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"UNREGISTER_CLIENT {client_id} from {group}")


def _two_consumers(ctx: BrokerContext) -> tuple[str, str, WireClient, str, WireClient, str]:
    """A group with two consumers on their own connections; the first one's notifications drained."""
    topic = ctx.topic(2, brokers=[0])
    group = ctx.group()
    first, second = ctx.broker(0), ctx.broker(0)
    first_id, second_id = new_client_id(ctx, "c1"), new_client_id(ctx, "c2")
    _join(ctx, first, first_id, group, topic)
    _join(ctx, second, second_id, group, topic)
    _drain(first)
    return topic, group, first, first_id, second, second_id


# --------------------------------------------------------------------------------------------- consumer lists
@cases.case("consumer-list-none", clauses=("BRK-13",),
            requirement="GET_CONSUMER_LIST_BY_GROUP for a group without live consumers answers SYSTEM_ERROR")
def consumer_list_none(ctx: BrokerContext) -> None:
    group = ctx.group()
    answer = ctx.broker(0).request(requests.consumer_list(group))
    ctx.expect_code(answer, ResponseCode.SYSTEM_ERROR, f"GET_CONSUMER_LIST_BY_GROUP {group} (no consumer)")


@cases.case("consumer-list-none-remark", clauses=("BRK-13",), level=Level.SHOULD,
            requirement="the answer for a group without consumers says 'no consumer for this group, <group>'")
def consumer_list_none_remark(ctx: BrokerContext) -> None:
    group = ctx.group()
    answer = ctx.broker(0).request(requests.consumer_list(group))
    ctx.expect_equal(answer.remark, f"no consumer for this group, {group}", "remark")


@cases.case("consumer-list-one", clauses=("BRK-13",),
            requirement="after one consumer's heartbeat GET_CONSUMER_LIST_BY_GROUP answers its client id")
def consumer_list_one(ctx: BrokerContext) -> None:
    topic = ctx.topic(1, brokers=[0])
    group = ctx.group()
    client_id = new_client_id(ctx, "c1")
    _join(ctx, ctx.broker(0), client_id, group, topic)
    ctx.expect_equal(_consumer_ids(ctx, ctx.broker(0), group), [client_id], f"consumerIdList of {group}")


@cases.case("consumer-list-two", clauses=("BRK-13",),
            requirement="two consumers heartbeating on two connections are both in the consumer list")
def consumer_list_two(ctx: BrokerContext) -> None:
    _, group, _, first_id, _, second_id = _two_consumers(ctx)
    ctx.expect_equal(_consumer_ids(ctx, ctx.broker(0), group), sorted([first_id, second_id]),
                     f"consumerIdList of {group}")


@cases.case("producer-is-not-consumer", clauses=("BRK-13",),
            requirement="a producer heartbeat registers no consumer: its group has no consumer list")
def producer_is_not_consumer(ctx: BrokerContext) -> None:
    group = ctx.name("pgroup")
    client = ctx.broker(0)
    answer = client.request(requests.heartbeat(new_client_id(ctx, "p"), producer_groups=[group]))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"HEART_BEAT of producer group {group}")
    ctx.expect_equal(_consumer_ids(ctx, client, group), None, f"consumer ids of producer group {group}")
    answer = client.request(requests.producer_connection_list(group))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_PRODUCER_CONNECTION_LIST {group}")


@cases.case("heartbeat-registers-subscription", clauses=("BRK-13",),
            requirement="a consumer heartbeat registers its subscription, message model and consume type")
def heartbeat_registers_subscription(ctx: BrokerContext) -> None:
    """BRK-13, read back with GET_CONSUMER_CONNECTION_LIST (what mqadmin consumerConnection shows)."""
    topic = ctx.topic(1, brokers=[0])
    group = ctx.group()
    client = ctx.broker(0)
    client_id = new_client_id(ctx, "c1")
    answer = client.request(requests.heartbeat(
        client_id, consumer_groups={group: [requests.subscription_json(topic, "TagA || TagB")]},
        message_model="BROADCASTING", consume_type="CONSUME_ACTIVELY"))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"HEART_BEAT of {client_id}")
    answer = client.request(requests.consumer_connection_list(group))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_CONSUMER_CONNECTION_LIST {group}")
    body = requests.json_body(answer) or {}
    subscription = (body.get("subscriptionTable") or {}).get(topic) or {}
    seen = (body.get("messageModel"), body.get("consumeType"), sorted(subscription.get("tagsSet") or []),
            sorted(c.get("clientId") for c in body.get("connectionSet") or []))
    ctx.expect_equal(seen, ("BROADCASTING", "CONSUME_ACTIVELY", ["TagA", "TagB"], [client_id]),
                     "(messageModel, consumeType, tags of the subscription, client ids)")


@cases.case("heartbeat-creates-retry-topic", clauses=("BRK-13",),
            requirement="a consumer heartbeat creates %RETRY%<group> on the broker, routed by the name server")
def heartbeat_creates_retry_topic(ctx: BrokerContext) -> None:
    """BRK-13: the retry topic gets the group's retryQueueNums (1) queues, read-write."""
    topic = ctx.topic(1, brokers=[0])
    group = ctx.group()
    retry = retry_topic(group)
    namesrv = ctx.namesrv()
    answer = namesrv.request(requests.route(retry))
    ctx.expect_code(answer, ResponseCode.TOPIC_NOT_EXIST, f"GET_ROUTEINFO_BY_TOPIC {retry} before any heartbeat")
    _join(ctx, ctx.broker(0), new_client_id(ctx, "c1"), group, topic)

    def routed() -> dict[str, Any] | None:
        found = namesrv.request(requests.route(retry))
        return requests.json_body(found) if found.code == ResponseCode.SUCCESS else None

    route = ctx.wait_until(routed, CHANGE_WAIT_S, what=f"the name server to route {retry}")
    queues = [(q.get("brokerName"), q.get("readQueueNums"), q.get("writeQueueNums"), q.get("perm"))
              for q in route.get("queueDatas") or []]
    ctx.expect_equal(queues, [(ctx.brokers[0].name, 1, 1, DEFAULT_PERM)], f"queue data of {retry}")


# ------------------------------------------------------------------------------------------------ notifications
@cases.case("notify-on-new-consumer", clauses=("BRK-14",),
            requirement="a second client's heartbeat into the group sends NOTIFY_CONSUMER_IDS_CHANGED, oneway, "
                        "to the first")
def notify_on_new_consumer(ctx: BrokerContext) -> None:
    topic = ctx.topic(1, brokers=[0])
    group = ctx.group()
    first, second = ctx.broker(0), ctx.broker(0)
    _join(ctx, first, new_client_id(ctx, "c1"), group, topic)
    _drain(first)
    _join(ctx, second, new_client_id(ctx, "c2"), group, topic)
    notify = _expect_notified(ctx, first, group, "a second consumer joined")
    ctx.expect(bool(notify.flag & RPC_ONEWAY_FLAG), "a oneway request (flag bit 2)", f"flag {notify.flag}")


@cases.case("no-notify-on-repeated-heartbeat", clauses=("BRK-14",), level=Level.SHOULD,
            requirement="a heartbeat that changes neither the group's clients nor its topics notifies no one")
def no_notify_on_repeated_heartbeat(ctx: BrokerContext) -> None:
    topic, group, first, _, second, second_id = _two_consumers(ctx)
    _join(ctx, second, second_id, group, topic)
    _expect_not_notified(ctx, first, "within 1 s of a repeated heartbeat")


@cases.case("notify-on-unregister", clauses=("BRK-14", "BRK-15"),
            requirement="UNREGISTER_CLIENT of one consumer sends NOTIFY_CONSUMER_IDS_CHANGED to the other")
def notify_on_unregister(ctx: BrokerContext) -> None:
    _, group, first, _, second, second_id = _two_consumers(ctx)
    _unregister(ctx, second, second_id, group)
    _expect_notified(ctx, first, group, "the second consumer unregistered")


@cases.case("notify-on-connection-close", clauses=("BRK-14",),
            requirement="closing one consumer's connection sends NOTIFY_CONSUMER_IDS_CHANGED to the other")
def notify_on_connection_close(ctx: BrokerContext) -> None:
    _, group, first, _, second, _ = _two_consumers(ctx)
    second.close()
    _expect_notified(ctx, first, group, "the second consumer's connection closed")


# --------------------------------------------------------------------------------------------- leaving a group
@cases.case("unregister-removes-consumer", clauses=("BRK-15", "BRK-13"),
            requirement="UNREGISTER_CLIENT removes the client from the consumer list; the last one leaves none")
def unregister_removes_consumer(ctx: BrokerContext) -> None:
    _, group, first, first_id, second, second_id = _two_consumers(ctx)
    _unregister(ctx, second, second_id, group)
    ctx.expect_equal(_consumer_ids(ctx, first, group), [first_id], f"consumerIdList of {group} after one left")
    _unregister(ctx, first, first_id, group)
    ctx.expect_equal(_consumer_ids(ctx, first, group), None,
                     f"consumer ids of {group} after both left (None: SYSTEM_ERROR)")


@cases.case("unregister-other-group-kept", clauses=("BRK-15",),
            requirement="UNREGISTER_CLIENT naming one group leaves the client's other consumer groups registered")
def unregister_other_group_kept(ctx: BrokerContext) -> None:
    topic = ctx.topic(1, brokers=[0])
    kept, left = ctx.group(), ctx.group()
    client = ctx.broker(0)
    client_id = new_client_id(ctx, "c1")
    subscriptions = [requests.subscription_json(topic)]
    answer = client.request(requests.heartbeat(client_id, consumer_groups={kept: subscriptions, left: subscriptions}))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"HEART_BEAT of {client_id} into two groups")
    _unregister(ctx, client, client_id, left)
    seen = {g: _consumer_ids(ctx, client, g) for g in (kept, left)}
    ctx.expect_equal(seen, {kept: [client_id], left: None}, "consumer ids by group")


@cases.case("unregister-producer", clauses=("BRK-15",),
            requirement="UNREGISTER_CLIENT naming a producer group removes the client's producer connection")
def unregister_producer(ctx: BrokerContext) -> None:
    group = ctx.name("pgroup")
    client = ctx.broker(0)
    client_id = new_client_id(ctx, "p")
    ctx.expect_code(client.request(requests.heartbeat(client_id, producer_groups=[group])), ResponseCode.SUCCESS,
                    f"HEART_BEAT of producer {client_id}")
    ctx.expect_code(client.request(requests.unregister_client(client_id, producer_group=group)), ResponseCode.SUCCESS,
                    f"UNREGISTER_CLIENT {client_id} from {group}")
    answer = client.request(requests.producer_connection_list(group))
    connections: list[dict[str, Any]] = []
    if answer.code == ResponseCode.SUCCESS:  # 4.9.8 keeps the emptied group; SYSTEM_ERROR (unknown group) is fine
        connections = (requests.json_body(answer) or {}).get("connectionSet") or []
    ctx.expect_equal([c.get("clientId") for c in connections], [], f"producer connections of {group}")


@cases.case("closed-connection-leaves-group", clauses=("BRK-13", "BRK-14"),
            requirement="a consumer whose connection closed is no longer in the consumer list")
def closed_connection_leaves_group(ctx: BrokerContext) -> None:
    _, group, first, first_id, second, _ = _two_consumers(ctx)
    second.close()
    ctx.wait_until(lambda: _consumer_ids(ctx, first, group) == [first_id], CHANGE_WAIT_S,
                   what=f"consumerIdList of {group} to drop the closed connection's client")


# ------------------------------------------------------------------------------------------- 4.9.8 particulars
@cases.case("notify-on-subscription-change", clauses=("BRK-14",), level=Level.SHOULD,
            requirement="a heartbeat adding a topic to the group's subscriptions notifies the group's consumers")
def notify_on_subscription_change(ctx: BrokerContext) -> None:
    """BRK-14 (4.9.8 ``registerConsumer``): a changed topic set counts as a change like a new client; a changed
    expression of the same topic does not."""
    topic, group, first, _, second, second_id = _two_consumers(ctx)
    other = ctx.topic(1, brokers=[0])
    subscriptions = [requests.subscription_json(topic), requests.subscription_json(other)]
    answer = second.request(requests.heartbeat(second_id, consumer_groups={group: subscriptions}))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"HEART_BEAT of {second_id} adding {other}")
    _expect_notified(ctx, first, group, f"the second consumer subscribed to {other} as well")


@cases.case("no-notify-when-group-disables", clauses=("BRK-14",), level=Level.SHOULD,
            requirement="a group with notifyConsumerIdsChangedEnable=false is not notified of joins and unregisters")
def no_notify_when_group_disables(ctx: BrokerContext) -> None:
    topic = ctx.topic(1, brokers=[0])
    group = ctx.group(notify_ids_changed=False)
    first, second = ctx.broker(0), ctx.broker(0)
    second_id = new_client_id(ctx, "c2")
    _join(ctx, first, new_client_id(ctx, "c1"), group, topic)
    _join(ctx, second, second_id, group, topic)
    _unregister(ctx, second, second_id, group)
    _expect_not_notified(ctx, first, "for a group that disabled it")


@cases.case("notify-on-close-when-group-disables", clauses=("BRK-14",), level=Level.SHOULD,
            requirement="a closed connection notifies the group's consumers even when the group disabled "
                        "notifications")
def notify_on_close_when_group_disables(ctx: BrokerContext) -> None:
    """BRK-14 (4.9.8 ``doChannelCloseEvent``): the close path ignores the group's notify flag (only the broker-wide
    notifyConsumerIdsChangedEnable applies)."""
    topic = ctx.topic(1, brokers=[0])
    group = ctx.group(notify_ids_changed=False)
    first, second = ctx.broker(0), ctx.broker(0)
    _join(ctx, first, new_client_id(ctx, "c1"), group, topic)
    _join(ctx, second, new_client_id(ctx, "c2"), group, topic)
    _drain(first)
    second.close()
    _expect_notified(ctx, first, group, "the second consumer's connection closed")


@cases.case("unregister-acts-on-its-connection", clauses=("BRK-15",), level=Level.SHOULD,
            requirement="UNREGISTER_CLIENT removes the consumer of the connection it arrives on, not others with "
                        "the client id")
def unregister_acts_on_its_connection(ctx: BrokerContext) -> None:
    """BRK-15 (4.9.8 ``unregisterConsumer``): the group's entries are keyed by connection, so one client id on two
    connections is listed twice, and an unregister sent on a third connection removes neither."""
    topic = ctx.topic(1, brokers=[0])
    group = ctx.group()
    client_id = new_client_id(ctx, "same")
    first, second, third = ctx.broker(0), ctx.broker(0), ctx.broker(0)
    _join(ctx, first, client_id, group, topic)
    _join(ctx, second, client_id, group, topic)
    ctx.expect_equal(_consumer_ids(ctx, third, group), [client_id, client_id], "consumerIdList (one id, two "
                     "connections)")
    ctx.expect_code(third.request(requests.unregister_client(client_id, consumer_group=group)), ResponseCode.SUCCESS,
                    f"UNREGISTER_CLIENT {client_id} on a connection without a heartbeat")
    ctx.expect_equal(_consumer_ids(ctx, third, group), [client_id, client_id], "consumerIdList after it")
    ctx.expect_code(second.request(requests.unregister_client(client_id, consumer_group=group)), ResponseCode.SUCCESS,
                    f"UNREGISTER_CLIENT {client_id} on its second connection")
    ctx.expect_equal(_consumer_ids(ctx, third, group), [client_id], "consumerIdList after that")


# ---------------------------------------------------------------------------------------- producer tables (BRK-29)
def producer_ids(ctx: BrokerContext, client: WireClient, group: str) -> list[str] | None:
    """The client ids of GET_PRODUCER_CONNECTION_LIST for ``group``; None when it answers the group does not exist."""
    answer = client.request(requests.producer_connection_list(group))
    if answer.code == ResponseCode.SYSTEM_ERROR:
        ctx.expect_equal(answer.remark, f"the producer group[{group}] not exist", "remark")
        return None
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_PRODUCER_CONNECTION_LIST {group}")
    return sorted(c.get("clientId") for c in (requests.json_body(answer) or {}).get("connectionSet") or [])


def producer_info(ctx: BrokerContext, client: WireClient, group: str) -> list[str] | None:
    answer = client.request(requests.all_producer_info())
    ctx.expect_code(answer, ResponseCode.SUCCESS, "GET_ALL_PRODUCER_INFO")
    data = (requests.json_body(answer) or {}).get("data") or {}
    if group not in data:
        return None
    return sorted(p.get("clientId") for p in data[group] or [])


@cases.case("producer-registrations", clauses=("BRK-29", "BRK-15"),
            requirement="producer heartbeats are listed by GET_PRODUCER_CONNECTION_LIST and GET_ALL_PRODUCER_INFO; "
                        "UNREGISTER_CLIENT of the last one drops the group, a closed connection leaves it empty")
def producer_registrations(ctx: BrokerContext) -> None:
    """BRK-29: a group never registered is SYSTEM_ERROR "the producer group[<g>] not exist"; two producers' heartbeats
    list both client ids in both answers; UNREGISTER_CLIENT of one leaves the other, of the last one drops the group
    (not exist again); in a second group, a producer whose connection closes leaves the group with no connection."""
    group, closing_group = ctx.name("pgroup"), ctx.name("pgroup")
    reader = ctx.broker(0)
    ctx.expect_equal(producer_ids(ctx, reader, group), None, f"producer connections of {group} before any heartbeat")
    clients = {new_client_id(ctx, "p"): ctx.broker(0) for _ in range(2)}
    for client_id, client in clients.items():
        ctx.expect_code(client.request(requests.heartbeat(client_id, producer_groups=[group])), ResponseCode.SUCCESS,
                        f"HEART_BEAT of producer {client_id}")
    ids = sorted(clients)
    ctx.expect_equal(producer_ids(ctx, reader, group), ids, f"producer connections of {group}")
    ctx.expect_equal(producer_info(ctx, reader, group), ids, f"GET_ALL_PRODUCER_INFO's {group}")
    for index, (client_id, client) in enumerate(clients.items()):
        ctx.expect_code(client.request(requests.unregister_client(client_id, producer_group=group)),
                        ResponseCode.SUCCESS, f"UNREGISTER_CLIENT {client_id} from {group}")
        left = sorted(list(clients)[index + 1:])
        ctx.expect_equal(producer_ids(ctx, reader, group), left or None,
                         f"producer connections of {group} after unregistering {index + 1}")
    ctx.expect_equal(producer_info(ctx, reader, group), None, f"GET_ALL_PRODUCER_INFO's {group} once emptied")
    closing = ctx.broker(0)
    closing_id = new_client_id(ctx, "p")
    ctx.expect_code(closing.request(requests.heartbeat(closing_id, producer_groups=[closing_group])),
                    ResponseCode.SUCCESS, f"HEART_BEAT of producer {closing_id}")
    closing.close()
    ctx.wait_until(lambda: producer_ids(ctx, reader, closing_group) == [], CHANGE_WAIT_S,
                   what=f"{closing_group} left without connections (and kept) after the connection closed")
