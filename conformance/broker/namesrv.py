"""Broker conformance cases: the name server (registration, routes, cluster info, topic lists, KV config).

Registration is checked with a fake broker the case registers itself (REGISTER_BROKER on its own connection, under a
unique broker and cluster name and an address nothing listens on), so no real broker is disturbed: the case
unregisters it (and closes its connection, which a name server also treats as the broker leaving) when it ends.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import UNSERVED_REQUEST_CODE, answer_within, expect_remark_names, queue_datas
from rocketspec.conformance.context import BrokerContext, answer_text
from rocketspec.conformance.model import CaseList, Level
from rocketspec.conformance.wire import ConnectionClosed, Unreachable, WireClient
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import (
    AUTO_CREATE_TOPIC_KEY,
    BROKER_CHANNEL_EXPIRED_MS,
    DEFAULT_PERM,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    NAMESRV_SCAN_INTERVAL_MS,
    PERM_INHERIT,
    PERM_READ,
    TOPIC_SYS_FLAG_UNIT,
    TOPIC_SYS_FLAG_UNIT_SUB,
    VERSION_V4_9_4,
    RequestCode,
    ResponseCode,
)

cases = CaseList("broker/namesrv")
CASES = cases.cases

# How long the name server's silence is listened to.
NO_ANSWER_WAIT_S = 1.0
# Where a fake broker claims to listen: a loopback port nothing serves (the name server never dials a broker).
FAKE_HOST = "127.0.0.1"
FAKE_PORT_BASE = 1


class FakeBroker:
    """A broker identity registered by the case itself: cluster, name, address, on one recorded connection."""

    def __init__(self, ctx: BrokerContext, client: WireClient, cluster: str, name: str, addr: str) -> None:
        self.ctx = ctx
        self.client = client
        self.cluster = cluster
        self.name = name
        self.addr = addr
        self.registered: dict[int, str] = {}

    def register(self, topics: Mapping[str, Mapping[str, object]] | None = None, *, broker_id: int = 0,
                 addr: str | None = None, ha_addr: str | None = None, data_version: int = 1,
                 filter_servers: Sequence[str] = ()) -> Any:
        self.registered[broker_id] = addr or self.addr
        answer = self.client.request(requests.register_broker(
            self.cluster, self.name, addr or self.addr, broker_id, topics=topics, ha_addr=ha_addr,
            data_version=data_version, filter_servers=filter_servers))
        self.ctx.expect_code(answer, ResponseCode.SUCCESS, f"REGISTER_BROKER {self.name} (id {broker_id})")
        return answer

    def unregister(self, *, broker_id: int = 0, addr: str | None = None) -> None:
        answer = self.client.request(requests.unregister_broker(self.cluster, self.name, addr or self.addr,
                                                                broker_id))
        self.ctx.expect_code(answer, ResponseCode.SUCCESS, f"UNREGISTER_BROKER {self.name} (id {broker_id})")
        self.registered.pop(broker_id, None)


@contextmanager
def fake_broker(ctx: BrokerContext, port_offset: int = 0) -> Iterator[FakeBroker]:
    """A fake broker on a connection of its own; every id it registered is unregistered (on a fresh connection:
    the case may have been stopped) and its connection closed when the block ends."""
    client = ctx.namesrv()
    fake = FakeBroker(ctx, client, ctx.name("fakecluster"), ctx.name("fake"),
                      f"{FAKE_HOST}:{FAKE_PORT_BASE + port_offset}")
    try:
        yield fake
    finally:
        client.close()
        if fake.registered:
            try:
                with WireClient(ctx.target.namesrv, ctx.target.timeout_s) as cleanup:
                    for broker_id, addr in fake.registered.items():
                        cleanup.request(requests.unregister_broker(fake.cluster, fake.name, addr, broker_id))
            except (OSError, TimeoutError, ConnectionClosed, Unreachable):
                pass


def broker_datas(answer: Any) -> dict[str, dict[str, Any]]:
    """A route answer's broker data by broker name, with brokerAddrs keyed by the broker id as text."""
    body = requests.json_body(answer) or {}
    found: dict[str, dict[str, Any]] = {}
    for data in body.get("brokerDatas") or []:
        addrs = {str(k): v for k, v in (data.get("brokerAddrs") or {}).items()}
        found[data.get("brokerName")] = {**data, "brokerAddrs": addrs}
    return found


def route_code(ctx: BrokerContext, topic: str) -> int:
    return ctx.namesrv().request(requests.route(topic)).code


def cluster_info(ctx: BrokerContext) -> dict[str, Any]:
    answer = ctx.namesrv().request(requests.cluster_info())
    ctx.expect_code(answer, ResponseCode.SUCCESS, "GET_BROKER_CLUSTER_INFO")
    body: dict[str, Any] = requests.json_body(answer)  # JSON; a dict once the expect below passes
    ctx.expect(isinstance(body, dict), "a ClusterInfo JSON object", repr(answer.body[:200] if answer.body else None))
    return body


@cases.case("route-topic-not-exist", clauses=("NS-3",),
            requirement="GET_ROUTEINFO_BY_TOPIC for a topic no broker registered answers TOPIC_NOT_EXIST")
def route_topic_not_exist(ctx: BrokerContext) -> None:
    """NS-3: a topic without queue data has no route: TOPIC_NOT_EXIST, the remark naming the topic."""
    topic = ctx.name("absent")
    answer = ctx.namesrv().request(requests.route(topic))
    ctx.expect_code(answer, ResponseCode.TOPIC_NOT_EXIST, f"GET_ROUTEINFO_BY_TOPIC {topic}")
    expect_remark_names(ctx, answer, topic)


@cases.case("route-after-create", clauses=("NS-1", "NS-2"),
            requirement="a topic created on every master is routed with each master's queue data")
def route_after_create(ctx: BrokerContext) -> None:
    """NS-1, NS-2: each master registers the new topic; the route has one queue data per master and the masters'
    broker data with their addresses."""
    topic = ctx.topic(queues=3)
    answer = ctx.namesrv().request(requests.route(topic))
    ctx.expect_code(answer, ResponseCode.SUCCESS)
    queues = {name: (q["readQueueNums"], q["writeQueueNums"]) for name, q in queue_datas(answer).items()}
    ctx.expect_equal(queues, {b.name: (3, 3) for b in ctx.brokers}, "queue data by broker")
    addrs = {name: data["brokerAddrs"].get("0") for name, data in broker_datas(answer).items()}
    ctx.expect_equal(addrs, {b.name: b.addr for b in ctx.brokers}, "master address by broker")


@cases.case("register-fake-broker-route", clauses=("NS-1", "NS-2"),
            requirement="REGISTER_BROKER of a master makes its topic configs the topics' queue data in the route")
def register_fake_broker_route(ctx: BrokerContext) -> None:
    """NS-1, NS-2: a master (id 0) registering a topic config with 3 read / 2 write queues and perm RW is routed with
    exactly that queue data, and the broker data names its cluster and address."""
    topic = ctx.name("fakerouted")
    with fake_broker(ctx) as fake:
        fake.register({topic: {"readQueueNums": 3, "writeQueueNums": 2, "perm": DEFAULT_PERM, "topicSysFlag": 0}})
        answer = ctx.namesrv().request(requests.route(topic))
        ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_ROUTEINFO_BY_TOPIC {topic}")
        queue = queue_datas(answer).get(fake.name)
        ctx.expect(queue is not None, f"queue data of {fake.name}", f"queue data of {sorted(queue_datas(answer))}")
        assert queue is not None
        got = (queue.get("readQueueNums"), queue.get("writeQueueNums"), queue.get("perm"), queue.get("topicSysFlag"))
        ctx.expect_equal(got, (3, 2, DEFAULT_PERM, 0), "(readQueueNums, writeQueueNums, perm, topicSysFlag)")
        data = broker_datas(answer).get(fake.name)
        ctx.expect(data is not None, f"broker data of {fake.name}", f"broker data of {sorted(broker_datas(answer))}")
        assert data is not None
        ctx.expect_equal((data.get("cluster"), data["brokerAddrs"]), (fake.cluster, {"0": fake.addr}),
                         "(cluster, brokerAddrs)")


@cases.case("unregister-removes-route", clauses=("NS-4", "NS-3", "NS-6"),
            requirement="UNREGISTER_BROKER of a broker's only address removes its broker data and its topics' routes")
def unregister_removes_route(ctx: BrokerContext) -> None:
    """NS-4: after UNREGISTER_BROKER the broker name has no address left: it leaves the cluster info, and a topic
    only it served loses its queue data: no route any more (NS-3: TOPIC_NOT_EXIST) and off the topic list (NS-6)."""
    topic = ctx.name("fakegone")
    with fake_broker(ctx) as fake:
        fake.register({topic: {}})
        ctx.expect_equal(route_code(ctx, topic), ResponseCode.SUCCESS, f"route code of {topic} while registered")
        fake.unregister()
        answer = ctx.namesrv().request(requests.route(topic))
        ctx.expect_code(answer, ResponseCode.TOPIC_NOT_EXIST, f"GET_ROUTEINFO_BY_TOPIC {topic} after unregistering")
        listed = ctx.namesrv().request(requests.all_topic_list())
        ctx.expect(topic not in set((requests.json_body(listed) or {}).get("topicList") or []),
                   f"{topic} (its queue data gone) not in GET_ALL_TOPIC_LIST_FROM_NAMESERVER", "it is still listed")
        info = cluster_info(ctx)
        ctx.expect(fake.name not in (info.get("brokerAddrTable") or {}), f"{fake.name} gone from brokerAddrTable",
                   f"it is still there: {(info.get('brokerAddrTable') or {}).get(fake.name)}")
        ctx.expect(fake.cluster not in (info.get("clusterAddrTable") or {}),
                   f"{fake.cluster} (no broker left) gone from clusterAddrTable",
                   f"clusterAddrTable[{fake.cluster}] = {(info.get('clusterAddrTable') or {}).get(fake.cluster)}")


@cases.case("unregister-keeps-other-brokers", clauses=("NS-4", "NS-2"),
            requirement="unregistering one broker removes only its queue data from a topic other brokers serve")
def unregister_keeps_other_brokers(ctx: BrokerContext) -> None:
    """NS-4: a topic served by a real master and the fake broker keeps the master's queue data (and route) when the
    fake broker unregisters."""
    topic = ctx.topic(queues=2, brokers=[0])
    with fake_broker(ctx) as fake:
        fake.register({topic: {"readQueueNums": 1, "writeQueueNums": 1}})
        answer = ctx.namesrv().request(requests.route(topic))
        ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_ROUTEINFO_BY_TOPIC {topic}")
        ctx.expect_equal(sorted(queue_datas(answer)), sorted([ctx.brokers[0].name, fake.name]),
                         "broker names with queue data while both are registered")
        fake.unregister()
        answer = ctx.namesrv().request(requests.route(topic))
        ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_ROUTEINFO_BY_TOPIC {topic} after the fake left")
        ctx.expect_equal(sorted(queue_datas(answer)), [ctx.brokers[0].name], "broker names with queue data")
        ctx.expect_equal(sorted(broker_datas(answer)), [ctx.brokers[0].name], "broker names with broker data")


@cases.case("closed-channel-removes-broker", clauses=("NS-4",),
            requirement="a broker whose connection to the name server closes is removed as by UNREGISTER_BROKER")
def closed_channel_removes_broker(ctx: BrokerContext) -> None:
    """NS-4: the name server forgets the broker registered on a connection once that connection closes; its topics
    lose their route."""
    topic = ctx.name("fakeclosed")
    with fake_broker(ctx) as fake:
        fake.register({topic: {}})
        ctx.expect_equal(route_code(ctx, topic), ResponseCode.SUCCESS, f"route code of {topic} while registered")
        fake.client.close()
        ctx.wait_until(lambda: route_code(ctx, topic) == ResponseCode.TOPIC_NOT_EXIST, 5.0,
                       what=f"the route of {topic} to vanish after the fake broker's connection closed")


@cases.case("slave-learns-master", clauses=("NS-1",),
            requirement="a slave's REGISTER_BROKER answers the master's address and HA address; it adds no queue data")
def slave_learns_master(ctx: BrokerContext) -> None:
    """NS-1: a slave (id 1) of a registered master gets masterAddr and haServerAddr in the answer; only the master's
    topic configs make queue data, and the broker data lists both addresses by id."""
    topic = ctx.name("fakeslave")
    slave_topic = ctx.name("fakeslaveonly")
    with fake_broker(ctx) as fake:
        ha = f"{FAKE_HOST}:{FAKE_PORT_BASE + 2}"
        slave_addr = f"{FAKE_HOST}:{FAKE_PORT_BASE + 3}"
        fake.register({topic: {}}, ha_addr=ha)
        answer = fake.register({topic: {}, slave_topic: {}}, broker_id=1, addr=slave_addr)
        ctx.expect_equal((answer.field("masterAddr"), answer.field("haServerAddr")), (fake.addr, ha),
                         "the slave's answer (masterAddr, haServerAddr)")
        route = ctx.namesrv().request(requests.route(topic))
        ctx.expect_code(route, ResponseCode.SUCCESS, f"GET_ROUTEINFO_BY_TOPIC {topic}")
        data = broker_datas(route).get(fake.name) or {}
        ctx.expect_equal(data.get("brokerAddrs"), {"0": fake.addr, "1": slave_addr}, "brokerAddrs")
        ctx.expect_equal(route_code(ctx, slave_topic), ResponseCode.TOPIC_NOT_EXIST,
                         f"route code of {slave_topic} (registered by the slave only)")


@cases.case("cluster-info", clauses=("NS-5",),
            requirement="GET_BROKER_CLUSTER_INFO lists each broker name's cluster and addresses by id, and clusters")
def cluster_info_tables(ctx: BrokerContext) -> None:
    """NS-5: brokerAddrTable maps each broker name to its cluster and brokerAddrs (id -> address);
    clusterAddrTable maps each cluster to its broker names; a newly registered broker shows in both."""
    with fake_broker(ctx) as fake:
        fake.register({})
        info = cluster_info(ctx)
        table = info.get("brokerAddrTable") or {}
        clusters = {k: set(v) for k, v in (info.get("clusterAddrTable") or {}).items()}
        known = [(b.name, b.cluster, b.addr) for b in ctx.brokers]
        for name, cluster, addr in [*known, (fake.name, fake.cluster, fake.addr)]:
            data = table.get(name) or {}
            addrs = {str(k): v for k, v in (data.get("brokerAddrs") or {}).items()}
            ctx.expect_equal((data.get("cluster"), addrs.get("0")), (cluster, addr),
                             f"brokerAddrTable[{name}] (cluster, master address)")
            ctx.expect(name in clusters.get(cluster, set()), f"clusterAddrTable[{cluster}] to hold {name}",
                       f"clusterAddrTable[{cluster}] = {sorted(clusters.get(cluster, set()))}")
        ctx.expect_equal(clusters.get(fake.cluster), {fake.name}, f"clusterAddrTable[{fake.cluster}]")


@cases.case("topic-list", clauses=("NS-6",),
            requirement="GET_ALL_TOPIC_LIST_FROM_NAMESERVER lists every topic that has queue data")
def topic_list(ctx: BrokerContext) -> None:
    """NS-6: a routed topic (created on a master, or registered by a broker) is in the topic list; a topic that
    was never registered is not."""
    topic = ctx.topic(queues=1, brokers=[0])
    absent = ctx.name("absent")
    answer = ctx.namesrv().request(requests.all_topic_list())
    ctx.expect_code(answer, ResponseCode.SUCCESS, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER")
    topics = set((requests.json_body(answer) or {}).get("topicList") or [])
    ctx.expect(topic in topics, f"{topic} in topicList", f"{len(topics)} topics without it")
    ctx.expect(absent not in topics, f"{absent} not in topicList", "it is listed")


@cases.case("delete-topic-in-namesrv", clauses=("NS-6", "NS-3"),
            requirement="DELETE_TOPIC_IN_NAMESRV removes the topic's route and takes it off the topic list")
def delete_topic_in_namesrv(ctx: BrokerContext) -> None:
    """NS-6: after DELETE_TOPIC_IN_NAMESRV the topic has no queue data: no route (TOPIC_NOT_EXIST) and not listed."""
    topic = ctx.topic(queues=1, brokers=[0])
    namesrv = ctx.namesrv()
    answer = namesrv.request(requests.delete_topic_in_namesrv(topic))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"DELETE_TOPIC_IN_NAMESRV {topic}")
    ctx.expect_code(namesrv.request(requests.route(topic)), ResponseCode.TOPIC_NOT_EXIST,
                    f"GET_ROUTEINFO_BY_TOPIC {topic} after the delete")
    topics = set((requests.json_body(namesrv.request(requests.all_topic_list())) or {}).get("topicList") or [])
    ctx.expect(topic not in topics, f"{topic} not in topicList", "it is still listed")


@cases.case("kv-config", clauses=("NS-7",),
            requirement="PUT_KV_CONFIG stores a value GET_KV_CONFIG answers; after DELETE_KV_CONFIG it is not found")
def kv_config(ctx: BrokerContext) -> None:
    """NS-7: a value put under (namespace, key) is answered in the value field; PUT again replaces it; after the
    delete GET answers QUERY_NOT_FOUND."""
    namespace, key = ctx.name("kvns"), ctx.name("kvkey")
    namesrv = ctx.namesrv()
    try:
        ctx.expect_code(namesrv.request(requests.put_kv_config(namespace, key, "v1")), ResponseCode.SUCCESS,
                        "PUT_KV_CONFIG")
        ctx.expect_code(namesrv.request(requests.put_kv_config(namespace, key, "v2")), ResponseCode.SUCCESS,
                        "PUT_KV_CONFIG (again)")
        answer = namesrv.request(requests.get_kv_config(namespace, key))
        ctx.expect_code(answer, ResponseCode.SUCCESS, "GET_KV_CONFIG")
        ctx.expect_equal(answer.field("value"), "v2", "GET_KV_CONFIG value")
    finally:
        deleted = namesrv.request(requests.delete_kv_config(namespace, key))
    ctx.expect_code(deleted, ResponseCode.SUCCESS, "DELETE_KV_CONFIG")
    ctx.expect_code(namesrv.request(requests.get_kv_config(namespace, key)), ResponseCode.QUERY_NOT_FOUND,
                    "GET_KV_CONFIG after the delete")


@cases.case("kv-config-missing", clauses=("NS-7",),
            requirement="GET_KV_CONFIG of a key never put answers QUERY_NOT_FOUND naming namespace and key")
def kv_config_missing(ctx: BrokerContext) -> None:
    """NS-7: no value for (namespace, key): QUERY_NOT_FOUND, remark "No config item, Namespace: <ns> Key: <key>"."""
    namespace, key = ctx.name("kvns"), ctx.name("kvkey")
    answer = ctx.namesrv().request(requests.get_kv_config(namespace, key))
    ctx.expect_code(answer, ResponseCode.QUERY_NOT_FOUND, "GET_KV_CONFIG of a missing key")
    ctx.expect(namespace in (answer.remark or "") and key in (answer.remark or ""),
               "a remark naming the namespace and the key", repr(answer.remark))


@cases.case("kv-config-remark", clauses=("NS-7",), level=Level.SHOULD,
            requirement="a missing KV item's remark is exactly 4.9.8's \"No config item, Namespace: N Key: K\"")
def kv_config_remark(ctx: BrokerContext) -> None:
    """NS-7 (4.9.8 text): the QUERY_NOT_FOUND remark of GET_KV_CONFIG."""
    namespace, key = ctx.name("kvns"), ctx.name("kvkey")
    answer = ctx.namesrv().request(requests.get_kv_config(namespace, key))
    ctx.expect_equal(answer.remark, f"No config item, Namespace: {namespace} Key: {key}", "remark")


@cases.case("write-perm-wipe-add", clauses=("NS-9",),
            requirement="WIPE_WRITE_PERM_OF_BROKER drops the write bit of a broker's queue data; ADD sets it back")
def write_perm_wipe_add(ctx: BrokerContext) -> None:
    """NS-9 (on a fake broker only): wiping clears the write bit of its queue data in every topic and answers how
    many topics changed (wipeTopicCount); adding answers addTopicCount and the queue data is read-write again."""
    topics = [ctx.name("fakeperm"), ctx.name("fakeperm")]
    with fake_broker(ctx) as fake:
        fake.register({t: {} for t in topics})
        namesrv = ctx.namesrv()
        answer = namesrv.request(requests.wipe_write_perm(fake.name))
        ctx.expect_code(answer, ResponseCode.SUCCESS, "WIPE_WRITE_PERM_OF_BROKER")
        ctx.expect_equal(answer.field("wipeTopicCount"), "2", "wipeTopicCount")
        for topic in topics:
            perm = (queue_datas(namesrv.request(requests.route(topic))).get(fake.name) or {}).get("perm")
            ctx.expect_equal(perm, PERM_READ, f"perm of {fake.name} in the route of {topic} after the wipe")
        answer = namesrv.request(requests.add_write_perm(fake.name))
        ctx.expect_code(answer, ResponseCode.SUCCESS, "ADD_WRITE_PERM_OF_BROKER")
        ctx.expect_equal(answer.field("addTopicCount"), "2", "addTopicCount")
        perm = (queue_datas(namesrv.request(requests.route(topics[0]))).get(fake.name) or {}).get("perm")
        ctx.expect_equal(perm, DEFAULT_PERM, f"perm of {fake.name} in the route of {topics[0]} after the add")


@cases.case("broker-expiry", clauses=("NS-8", "NS-4", "NS-5"), slow=True,
            requirement="a broker that does not register again within 120 s is removed from the name server")
def broker_expiry(ctx: BrokerContext) -> None:
    """NS-8: the name server scans every 10 s and drops a broker whose last REGISTER_BROKER is older than 120 s
    (BROKER_CHANNEL_EXPIRED_TIME), as by NS-4, closing its connection. The fake broker registers as a slave
    (id 1, so that nothing routes to it and a concurrent run's discovery, which takes masters only, ignores it) and
    stays silent; it only reads the cluster info on its connection, which keeps the connection from idling out. It
    must stay in brokerAddrTable until close to 120 s and be gone within 120 s plus two scans (NS-5)."""
    expiry_s = BROKER_CHANNEL_EXPIRED_MS / 1000
    bound_s = expiry_s + 2 * NAMESRV_SCAN_INTERVAL_MS / 1000 + 5
    if ctx.remaining() < bound_s + 5:
        ctx.skip(f"waits up to {bound_s:g} s for the 120 s broker expiry; the case budget is {ctx.remaining():.0f} s")
    with fake_broker(ctx) as fake:
        fake.register({}, broker_id=1)
        registered = time.monotonic()

        def listed() -> bool:
            try:
                answer = fake.client.request(requests.cluster_info())
            except (ConnectionClosed, TimeoutError):  # the name server closes an expired broker's connection
                answer = ctx.namesrv().request(requests.cluster_info())
            return fake.name in ((requests.json_body(answer) or {}).get("brokerAddrTable") or {})

        gone_after: float | None = None
        while time.monotonic() - registered < bound_s:
            if not listed():
                gone_after = time.monotonic() - registered
                break
            time.sleep(1.0)
        ctx.expect(gone_after is not None, f"{fake.name} gone from brokerAddrTable within {bound_s:g} s of its last "
                   "registration", "it is still there")
        assert gone_after is not None
        ctx.expect(gone_after >= expiry_s - 5, f"{fake.name} kept until about {expiry_s:g} s of silence",
                   f"it vanished after {gone_after:.0f} s")


@cases.case("unknown-code-not-answered", clauses=("NS-10",), level=Level.SHOULD,
            requirement="the name server answers nothing to a request code it does not serve, and goes on serving "
                        "the connection")
def unknown_code_not_answered(ctx: BrokerContext) -> None:
    """NS-10: 4.9.8's DefaultRequestProcessor returns null for a code it does not know, so no response is written
    (a broker answers REQUEST_CODE_NOT_SUPPORTED instead: BRK-19). SHOULD: a client times out either way."""
    namesrv = ctx.namesrv()
    request = RemotingCommand.request(UNSERVED_REQUEST_CODE, {"topic": ctx.name("topic")})
    namesrv.send(request)
    answer = answer_within(namesrv, request.opaque, NO_ANSWER_WAIT_S)
    ctx.expect(answer is None, f"no answer to request code {UNSERVED_REQUEST_CODE} within {NO_ANSWER_WAIT_S:g} s",
               "" if answer is None else answer_text(answer))
    route = namesrv.request(requests.route(ctx.name("absent")))
    ctx.expect_code(route, ResponseCode.TOPIC_NOT_EXIST, "GET_ROUTEINFO_BY_TOPIC on the same connection")


# ------------------------------------------------------------------------------------ route body forms (NS-11)
def strict_json(answer: RemotingCommand) -> Any:
    """The body read as standard JSON (None when it is not)."""
    try:
        return json.loads((answer.body or b"").decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None


@cases.case("route-standard-json", clauses=("NS-11", "NS-2"),
            requirement="a route answer to a V4_9_4+ request, or one with acceptStandardJsonOnly, is standard JSON "
                        "carrying the same route")
def route_standard_json(ctx: BrokerContext) -> None:
    """NS-11: a request at version V4_9_4 or later, and an older one with acceptStandardJsonOnly=true, get a body
    that is standard JSON (quoted broker-id keys, pure ASCII); every form read leniently is the same route."""
    topic = ctx.topic(queues=2)
    namesrv = ctx.namesrv()
    forms = {"4.9.8 request": namesrv.request(requests.route(topic)),
             "V4_9_4 request": namesrv.request(requests.route(topic, version=VERSION_V4_9_4)),
             "version 0 with acceptStandardJsonOnly": namesrv.request(
                 requests.route(topic, version=0, accept_standard_json=True))}
    routes = []
    for what, answer in forms.items():
        ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_ROUTEINFO_BY_TOPIC {topic} ({what})")
        ctx.expect(strict_json(answer) is not None, f"a standard JSON route body ({what})",
                   repr((answer.body or b"")[:200]))
        ctx.expect((answer.body or b"").isascii(), f"a pure-ASCII body ({what})", "non-ASCII bytes")
        routes.append(requests.json_body(answer))
    old = namesrv.request(requests.route(topic, version=0))
    ctx.expect_code(old, ResponseCode.SUCCESS, f"GET_ROUTEINFO_BY_TOPIC {topic} (version 0)")
    routes.append(requests.json_body(old))
    ctx.expect(all(r == routes[0] for r in routes), "every form carries the same route",
               f"{len({json.dumps(r, sort_keys=True) for r in routes})} different routes")


@cases.case("route-fastjson-form-for-old-clients", clauses=("NS-11",), level=Level.SHOULD,
            requirement="a route answer to a request older than V4_9_4 is fastjson's form: broker ids as bare numbers")
def route_fastjson_form_for_old_clients(ctx: BrokerContext) -> None:
    """NS-11 (4.9.8 form): without acceptStandardJsonOnly, a request at version 0 gets
    ``"brokerAddrs":{0:"<addr>"}``, which standard JSON does not read (fastjson and the lenient reader do)."""
    topic = ctx.topic(queues=1, brokers=[0])
    answer = ctx.namesrv().request(requests.route(topic, version=0))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_ROUTEINFO_BY_TOPIC {topic} (version 0)")
    body = (answer.body or b"").decode("utf-8", "replace")
    ctx.expect('{0:"' in body, 'brokerAddrs with a bare 0 key ({0:"<addr>"})', repr(body[:200]))


# ------------------------------------------------------------------------------------------ filter servers (NS-12)
def filter_table(ctx: BrokerContext, topic: str) -> dict[str, Any]:
    answer = ctx.namesrv().request(requests.route(topic))
    ctx.expect_code(answer, ResponseCode.SUCCESS, f"GET_ROUTEINFO_BY_TOPIC {topic}")
    table: dict[str, Any] = (requests.json_body(answer) or {}).get("filterServerTable") or {}
    return {k: v for k, v in table.items() if v}


@cases.case("register-filter-servers", clauses=("NS-12", "NS-1"),
            requirement="a registration's filterServerList is its address's filter servers in the route; an empty "
                        "list removes them")
def register_filter_servers(ctx: BrokerContext) -> None:
    """NS-12: a fake master registering two filter servers is routed with filterServerTable {addr: [both]}; a
    registration with other servers replaces them; one with an empty list leaves no filter servers."""
    topic = ctx.name("fakefilter")
    first = [f"{FAKE_HOST}:{FAKE_PORT_BASE + 4}", f"{FAKE_HOST}:{FAKE_PORT_BASE + 5}"]
    second = [f"{FAKE_HOST}:{FAKE_PORT_BASE + 6}"]
    with fake_broker(ctx) as fake:
        fake.register({topic: {}}, filter_servers=first)
        ctx.expect_equal(filter_table(ctx, topic), {fake.addr: first}, "filterServerTable")
        fake.register({topic: {}}, filter_servers=second, data_version=2)
        ctx.expect_equal(filter_table(ctx, topic), {fake.addr: second}, "filterServerTable after a new list")
        fake.register({topic: {}}, data_version=3)
        ctx.expect_equal(filter_table(ctx, topic), {}, "filterServerTable after an empty list")


# ------------------------------------------------------------------------------------------ data versions (NS-13)
@cases.case("query-data-version", clauses=("NS-13",),
            requirement="QUERY_DATA_VERSION answers changed=false only for the DataVersion a live address registered, "
                        "with the name server's DataVersion in the body")
def query_data_version(ctx: BrokerContext) -> None:
    """NS-13: after a registration with DataVersion (7, 7), QUERY_DATA_VERSION with that version answers
    changed=false and the body (7, 7); with another version changed=true and the same body; for an address that is
    not live changed=true and no body; a body that is not a DataVersion is SYSTEM_ERROR."""
    namesrv = ctx.namesrv()
    with fake_broker(ctx) as fake:
        fake.register({}, data_version=7)

        def ask(version: bytes, addr: str = fake.addr) -> RemotingCommand:
            return namesrv.request(requests.query_data_version(fake.cluster, fake.name, addr, 0, version))

        def held(answer: RemotingCommand) -> object:
            body = requests.json_body(answer) or {}
            return (body.get("timestamp"), body.get("counter")) if isinstance(body, dict) else body

        same = ask(requests.data_version_body(7, 7))
        ctx.expect_code(same, ResponseCode.SUCCESS, "QUERY_DATA_VERSION with the registered version")
        ctx.expect_equal(same.field("changed"), "false", "changed (the registered version)")
        ctx.expect_equal(held(same), (7, 7), "the DataVersion in the body")
        other = ask(requests.data_version_body(8, 8))
        ctx.expect_code(other, ResponseCode.SUCCESS, "QUERY_DATA_VERSION with another version")
        ctx.expect_equal(other.field("changed"), "true", "changed (another version)")
        ctx.expect_equal(held(other), (7, 7), "the DataVersion in the body")
        gone = ask(requests.data_version_body(7, 7), f"{FAKE_HOST}:{FAKE_PORT_BASE + 7}")
        ctx.expect_code(gone, ResponseCode.SUCCESS, "QUERY_DATA_VERSION for an address not registered")
        ctx.expect_equal((gone.field("changed"), gone.body or None), ("true", None), "(changed, body)")
        bad = ask(b"not a data version")
        ctx.expect_code(bad, ResponseCode.SYSTEM_ERROR, "QUERY_DATA_VERSION with a body that does not decode")


# ----------------------------------------------------------------------------------------- topic lists (NS-14)
def listed_topics(ctx: BrokerContext, request: RemotingCommand, what: str) -> tuple[set[str], Any]:
    answer = ctx.namesrv().request(request)
    ctx.expect_code(answer, ResponseCode.SUCCESS, what)
    body = requests.json_body(answer) or {}
    return set(body.get("topicList") or []), body.get("brokerAddr")


@cases.case("topic-lists", clauses=("NS-14",),
            requirement="GET_TOPICS_BY_CLUSTER, GET_SYSTEM_TOPIC_LIST_FROM_NS and the unit topic lists answer the "
                        "topics their flags and cluster select")
def topic_lists(ctx: BrokerContext) -> None:
    """NS-14: a fake master registers four topics with topicSysFlag 0, UNIT, UNIT_SUB and both: its cluster's
    topics are exactly those four (an unknown cluster has none); the system topic list names the fake cluster and
    broker with some registered address; GET_UNIT_TOPIC_LIST holds the UNIT ones, GET_HAS_UNIT_SUB_TOPIC_LIST the
    UNIT_SUB ones and GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST the one with UNIT_SUB only."""
    flags = {"plain": 0, "unit": TOPIC_SYS_FLAG_UNIT, "unitsub": TOPIC_SYS_FLAG_UNIT_SUB,
             "both": TOPIC_SYS_FLAG_UNIT | TOPIC_SYS_FLAG_UNIT_SUB}
    topics = {kind: ctx.name(f"fake{kind}") for kind in flags}
    with fake_broker(ctx) as fake:
        fake.register({topics[kind]: {"topicSysFlag": flag} for kind, flag in flags.items()})
        mine = set(topics.values())
        listed, _ = listed_topics(ctx, requests.topics_by_cluster(fake.cluster),
                                  f"GET_TOPICS_BY_CLUSTER {fake.cluster}")
        ctx.expect_equal(listed, mine, f"topics of cluster {fake.cluster}")
        unknown = ctx.name("nocluster")
        listed, _ = listed_topics(ctx, requests.topics_by_cluster(unknown), f"GET_TOPICS_BY_CLUSTER {unknown}")
        ctx.expect_equal(listed, set(), f"topics of the unknown cluster {unknown}")
        listed, addr = listed_topics(ctx, requests.topic_list_request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS),
                                  "GET_SYSTEM_TOPIC_LIST_FROM_NS")
        ctx.expect({fake.cluster, fake.name} <= listed, f"{fake.cluster} and {fake.name} in the system topic list",
                   f"{sorted(listed)[:20]}")
        addrs = {str(a) for data in (cluster_info(ctx).get("brokerAddrTable") or {}).values()
                 for a in (data.get("brokerAddrs") or {}).values()}
        ctx.expect(addr in addrs, "brokerAddr: the address of a registered broker", repr(addr))
        expected = {RequestCode.GET_UNIT_TOPIC_LIST: {topics["unit"], topics["both"]},
                    RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: {topics["unitsub"], topics["both"]},
                    RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: {topics["unitsub"]}}
        for code, want in expected.items():
            name = RequestCode(code).name
            listed, _ = listed_topics(ctx, requests.topic_list_request(code), name)
            ctx.expect_equal(listed & mine, want, f"the fake broker's topics in {name}")


# ----------------------------------------------------------------------------------- name server config (NS-15)
def namesrv_settings(ctx: BrokerContext, client: WireClient) -> dict[str, str]:
    answer = client.request(requests.namesrv_config())
    ctx.expect_code(answer, ResponseCode.SUCCESS, "GET_NAMESRV_CONFIG")
    return requests.properties_body(answer)


@cases.case("namesrv-config", clauses=("NS-15", "NS-7"),
            requirement="GET_NAMESRV_CONFIG answers the configuration; UPDATE_NAMESRV_CONFIG refuses the black list "
                        "and sets known keys, orderMessageEnable taking effect on the next route")
def namesrv_config(ctx: BrokerContext) -> None:
    """NS-15: the configuration lists listenPort (the name server's port) and configBlackList; an update naming
    configStorePath answers NO_PERMISSION "Can not update config in black list." and changes nothing else in the
    body; an update of clusterTest to "TRUE" reads back true, an integer that does not parse is ignored; with
    orderMessageEnable=true a topic's ORDER_TOPIC_CONFIG entry is its route's orderTopicConf (NS-7). Every value
    changed is restored in a finally block, on a fresh connection."""
    client = ctx.namesrv()
    before = namesrv_settings(ctx, client)
    port = ctx.target.namesrv.rpartition(":")[2]
    ctx.expect_equal(before.get("listenPort"), port, "listenPort")
    ctx.expect("configBlackList" in before and "orderMessageEnable" in before and "clusterTest" in before,
               "configBlackList, orderMessageEnable and clusterTest listed", f"keys {sorted(before)}")
    if before.get("orderMessageEnable") != "false" or before.get("clusterTest") != "false":
        ctx.skip("the name server runs with orderMessageEnable or clusterTest on; the case sets and restores them "
                 "from off")
    idle = before.get("serverChannelMaxIdleTimeSeconds")
    refused = client.request(requests.update_namesrv_config({"clusterTest": "true", "configStorePath": "/tmp/x"}))
    ctx.expect_code(refused, ResponseCode.NO_PERMISSION, "UPDATE_NAMESRV_CONFIG naming configStorePath")
    ctx.expect_equal(refused.remark, "Can not update config in black list.", "remark")
    ctx.expect_equal(namesrv_settings(ctx, client).get("clusterTest"), "false", "clusterTest after the refusal")
    topic = ctx.topic(queues=1, brokers=[0])
    conf = f"{ctx.brokers[0].name}:1"
    try:
        answer = client.request(requests.update_namesrv_config(
            {"clusterTest": "TRUE", "serverChannelMaxIdleTimeSeconds": "not-a-number", ctx.name("unknown"): "1"}))
        ctx.expect_code(answer, ResponseCode.SUCCESS, "UPDATE_NAMESRV_CONFIG clusterTest=TRUE")
        after = namesrv_settings(ctx, client)
        ctx.expect_equal((after.get("clusterTest"), after.get("serverChannelMaxIdleTimeSeconds")), ("true", idle),
                         "(clusterTest, serverChannelMaxIdleTimeSeconds) after the update")
        ctx.expect_code(client.request(requests.put_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, topic, conf)),
                        ResponseCode.SUCCESS, "PUT_KV_CONFIG ORDER_TOPIC_CONFIG")
        plain = requests.json_body(client.request(requests.route(topic))) or {}
        ctx.expect(plain.get("orderTopicConf") is None, "no orderTopicConf while orderMessageEnable=false",
                   repr(plain.get("orderTopicConf")))
        answer = client.request(requests.update_namesrv_config({"orderMessageEnable": "true"}))
        ctx.expect_code(answer, ResponseCode.SUCCESS, "UPDATE_NAMESRV_CONFIG orderMessageEnable=true")
        ordered = requests.json_body(client.request(requests.route(topic))) or {}
        ctx.expect_equal(ordered.get("orderTopicConf"), conf, "orderTopicConf with orderMessageEnable=true")
    finally:
        with WireClient(ctx.target.namesrv, ctx.target.timeout_s) as cleanup:
            cleanup.request(requests.update_namesrv_config({"clusterTest": "false", "orderMessageEnable": "false"}))
            cleanup.request(requests.delete_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, topic))


# ----------------------------------------------------------------------------------- broker registration (NS-17)
@cases.case("broker-registers-topic-table", clauses=("NS-17", "NS-13", "NS-1"),
            requirement="a master registers its topic table under its DataVersion, TBW102 only with "
                        "autoCreateTopicEnable")
def broker_registers_topic_table(ctx: BrokerContext) -> None:
    """NS-17: after a topic is created on the first master, the name server holds the DataVersion the broker's
    GET_ALL_TOPIC_CONFIG answers (QUERY_DATA_VERSION with it answers changed=false, NS-13) and routes the topic with
    its queue counts and perm; TBW102 is routed for the master with defaultTopicQueueNums queues and perm
    inherit|read|write when autoCreateTopicEnable, and not at all for it otherwise."""
    broker = ctx.brokers[0]
    topic = ctx.topic(queues=3, brokers=[0], wait_route=False)
    client = ctx.broker(0)
    namesrv = ctx.namesrv()

    def registered() -> bool:
        answer = client.request(requests.all_topic_config())
        version = (requests.json_body(answer) or {}).get("dataVersion") or {}
        body = requests.data_version_body(int(version.get("timestamp", -1)), int(version.get("counter", -1)))
        held = namesrv.request(requests.query_data_version(broker.cluster, broker.name, broker.addr, 0, body))
        return held.field("changed") == "false"

    ctx.wait_until(registered, 10.0, what=f"the name server to hold {broker.name}'s topic-table DataVersion")
    queue = queue_datas(namesrv.request(requests.route(topic))).get(broker.name) or {}
    ctx.expect_equal((queue.get("readQueueNums"), queue.get("writeQueueNums"), queue.get("perm")),
                     (3, 3, DEFAULT_PERM), f"{broker.name}'s queue data of {topic}")
    default = queue_datas(namesrv.request(requests.route(AUTO_CREATE_TOPIC_KEY))).get(broker.name)
    if ctx.setting_bool("autoCreateTopicEnable"):
        nums = ctx.setting_int("defaultTopicQueueNums")
        got = None if default is None else (default.get("readQueueNums"), default.get("writeQueueNums"),
                                            default.get("perm"))
        ctx.expect_equal(got, (nums, nums, DEFAULT_PERM | PERM_INHERIT),
                         f"{broker.name}'s queue data of {AUTO_CREATE_TOPIC_KEY} (autoCreateTopicEnable)")
    else:
        ctx.expect(default is None, f"no {AUTO_CREATE_TOPIC_KEY} queue data of {broker.name} "
                   "(autoCreateTopicEnable=false)", repr(default))
