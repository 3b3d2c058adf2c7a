"""Broker conformance cases: the name server (registration, routes, cluster info, topic lists, KV config).

Registration is checked with a fake broker the case registers itself (REGISTER_BROKER on its own connection, under a
unique broker and cluster name and an address nothing listens on), so no real broker is disturbed: the case
unregisters it (and closes its connection, which a name server also treats as the broker leaving) when it ends.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from rocketspec.conformance import requests
from rocketspec.conformance.broker.common import UNSERVED_REQUEST_CODE, answer_within, expect_remark_names, queue_datas
from rocketspec.conformance.context import BrokerContext, answer_text
from rocketspec.conformance.model import CaseList, Level
from rocketspec.conformance.wire import ConnectionClosed, Unreachable, WireClient
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.spec.protocol import (
    BROKER_CHANNEL_EXPIRED_MS,
    DEFAULT_PERM,
    NAMESRV_SCAN_INTERVAL_MS,
    PERM_READ,
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
                 addr: str | None = None, ha_addr: str | None = None, data_version: int = 1) -> Any:
        self.registered[broker_id] = addr or self.addr
        answer = self.client.request(requests.register_broker(
            self.cluster, self.name, addr or self.addr, broker_id, topics=topics, ha_addr=ha_addr,
            data_version=data_version))
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
