"""The client instance every producer and consumer of one client id shares (``MQClientInstance`` of 4.9.8).

It owns the connection to the network (node = client id), the topic routes and the broker address table, and the
periodic housekeeping, all daemon timers on the runtime:

- route refresh of every topic in use, every ``pollNameServerInterval`` (30 s; first after 10 ms);
- ``cleanOfflineBroker`` + heartbeat to every broker, every ``heartbeatBrokerInterval`` (30 s; first after 1 s);
- consumer offset persistence every ``persistConsumerOffsetInterval`` (5 s; first after 10 s);
- rebalance every ``rebalanceInterval`` (20 s, ``RebalanceService``), or soon after ``rebalance_immediately``
  (NOTIFY_CONSUMER_IDS_CHANGED, a consumer start), after which the 20 s wait starts over.

Like Java, the instance registers the inner producer group ``CLIENT_INNER_PRODUCER`` when it starts, so its
heartbeats always carry a producer entry; ``inner_producer()`` gives that producer (consumers use it to send a
message back to its retry topic themselves when CONSUMER_SEND_MSG_BACK fails).
"""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from rocketspec.refimpl.acl_signature import signed_fields
from rocketspec.refimpl.client.config import ClientConfig, ProducerConfig
from rocketspec.refimpl.client.offset_store import consumer_status_request, reset_offset_request
from rocketspec.refimpl.client.producer import Producer
from rocketspec.refimpl.events import ClientLifecycle, EventLog, RouteUpdate
from rocketspec.refimpl.message import UniqueIdGenerator, decode_stored_message, java_string_hash
from rocketspec.refimpl.remoting import (
    Channel,
    Network,
    RemotingClient,
    RemotingCommand,
    RemotingConnectError,
    dispatch,
)
from rocketspec.refimpl.route import TopicRouteData, route_changed, subscribe_queues
from rocketspec.refimpl.runtime import Future, Runtime, Timer, when_all
from rocketspec.spec.protocol import (
    CLIENT_INNER_PRODUCER_GROUP,
    MASTER_ID,
    Property,
    RequestCode,
    ResponseCode,
)
from rocketspec.spec.queues import MessageQueue

# MQClientInstance.startScheduledTask initial delays.
ROUTE_REFRESH_INITIAL_DELAY_MS = 10
HEARTBEAT_INITIAL_DELAY_MS = 1_000
PERSIST_INITIAL_DELAY_MS = 10_000


class ConsumerInner(Protocol):
    """What the instance needs from a registered consumer (``MQConsumerInner``)."""

    group: str

    def heartbeat_data(self) -> dict[str, Any]: ...

    def subscribed_topics(self) -> set[str]: ...

    def on_route(self, topic: str, queues: set[MessageQueue]) -> None: ...

    def do_rebalance(self) -> None: ...

    def persist_offsets(self) -> None: ...


class ProducerInner(Protocol):
    """What the instance needs from a registered producer (``MQProducerInner``)."""

    def publish_topics(self) -> set[str]: ...

    def is_publish_topic_need_update(self, topic: str) -> bool: ...

    def on_route(self, topic: str, route: TopicRouteData) -> None: ...

    def check_transaction_state(self, broker_addr: str, message: Any, request: RemotingCommand) -> None: ...


def _failed(runtime: Runtime, error: BaseException) -> Future[Any]:
    future: Future[Any] = Future()
    runtime.call_soon(lambda: future.set_exception(error))
    return future


class ClientInstance:
    """``MQClientInstance``: routes, broker addresses, heartbeats and the requests producers and consumers make."""

    def __init__(self, runtime: Runtime, network: Network, events: EventLog, namesrv_addr: str, client_id: str,
                 config: ClientConfig | None = None) -> None:
        self.runtime = runtime
        self.network = network
        self.events = events
        self.namesrv_addr = namesrv_addr
        self.client_id = client_id
        self.config = config or ClientConfig()
        self.remoting: RemotingClient = network.client(client_id, handler=self, host=self.config.client_ip)
        self.producers: dict[str, ProducerInner] = {}
        self.consumers: dict[str, ConsumerInner] = {}
        self.topic_route_table: dict[str, TopicRouteData] = {}
        self.broker_addr_table: dict[str, dict[int, str]] = {}
        self.broker_version_table: dict[str, dict[str, int]] = {}
        # Topics whose subscribe info each consumer group has been given (isSubscribeTopicNeedUpdate).
        self._subscribe_delivered: dict[str, set[str]] = {}
        self.running = False
        self.stopped = False
        self._timers: list[Timer] = []
        self._rebalance_timer: Timer | None = None
        self._rebalance_soon: Timer | None = None
        self._inner_producer: Producer | None = None
        self.heartbeat_times = 0
        self.boot_ms = runtime.now_ms()
        self._unique_ids: UniqueIdGenerator | None = None

    # lifecycle ------------------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the housekeeping (idempotent)."""
        if self.running or self.stopped:
            return
        self.running = True
        cfg = self.config
        self._timers = [
            self.runtime.call_every(cfg.poll_name_server_interval_ms, self.update_all_topic_routes,
                                    initial_delay_ms=ROUTE_REFRESH_INITIAL_DELAY_MS),
            self.runtime.call_every(cfg.heartbeat_broker_interval_ms, self._heartbeat_tick,
                                    initial_delay_ms=HEARTBEAT_INITIAL_DELAY_MS),
            self.runtime.call_every(cfg.persist_consumer_offset_interval_ms, self.persist_all_consumer_offsets,
                                    initial_delay_ms=PERSIST_INITIAL_DELAY_MS),
        ]
        self._schedule_rebalance(cfg.rebalance_interval_ms)
        # MQClientInstance.start starts the inner producer (registered, no heartbeat: no broker known yet).
        if CLIENT_INNER_PRODUCER_GROUP not in self.producers:
            self.producers[CLIENT_INNER_PRODUCER_GROUP] = self.inner_producer()

    def inner_producer(self) -> Producer:
        """The instance's own producer (group ``CLIENT_INNER_PRODUCER``), used by consumers to send back."""
        if self._inner_producer is None:
            self._inner_producer = Producer(self, ProducerConfig(group=CLIENT_INNER_PRODUCER_GROUP), inner=True)
        return self._inner_producer

    def next_unique_id(self) -> str:
        """A new UNIQ_KEY (``MessageClientIDSetter.createUniqID``; one generator per client, like one per JVM).

        The "pid" is derived from the client id and the class-loader hash drawn from the runtime's seeded generator,
        so ids are unique across clients and a simulated run is reproducible.
        """
        if self._unique_ids is None:
            self._unique_ids = UniqueIdGenerator(self.config.client_ip, java_string_hash(self.client_id),
                                                 self.runtime.random.getrandbits(32), self.runtime.now_ms)
        return self._unique_ids.next_id()

    def _stop_timers(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers = []
        for pending in (self._rebalance_timer, self._rebalance_soon):
            if pending is not None:
                pending.cancel()
        self._rebalance_timer = self._rebalance_soon = None

    def shutdown(self) -> None:
        """Clean shutdown: the inner producer unregisters, timers stop, connections close."""
        if self.stopped:
            return
        if self.running and CLIENT_INNER_PRODUCER_GROUP in self.producers:
            self.unregister_producer(CLIENT_INNER_PRODUCER_GROUP)
        self.running = False
        self.stopped = True
        self._stop_timers()
        # Let the UNREGISTER_CLIENT requests already written reach the brokers before the connections close.
        self.runtime.call_later(self.network.latency_ms + 1, self.remoting.close)

    def crash(self) -> None:
        """The process dies: timers stop and connections close at once; nothing is persisted or unregistered.
        Each producer and consumer of a running instance reports a ``crash`` (``ClientLifecycle``)."""
        if self.running:
            clients = [*((g, p) for g, p in self.producers.items() if g != CLIENT_INNER_PRODUCER_GROUP),
                       *self.consumers.items()]
            for group, client in clients:
                self.events.emit(ClientLifecycle(node=self.client_id, group=group,
                                                 role=str(getattr(client, "role", "client")), action="crash"))
        self.running = False
        self.stopped = True
        self._stop_timers()
        self.remoting.close()

    # registration ---------------------------------------------------------------------------------------------------
    def register_producer(self, group: str, producer: ProducerInner) -> None:
        if group in self.producers and self.producers[group] is not producer:
            raise ValueError(f"The producer group[{group}] has been created before, specify another name please.")
        self.producers[group] = producer

    def unregister_producer(self, group: str) -> None:
        self.producers.pop(group, None)
        self._unregister_client(group, None)

    def register_consumer(self, group: str, consumer: ConsumerInner) -> None:
        if group in self.consumers and self.consumers[group] is not consumer:
            raise ValueError(f"The consumer group[{group}] has been created before, specify another name please.")
        self.consumers[group] = consumer
        self._subscribe_delivered.setdefault(group, set())

    def unregister_consumer(self, group: str) -> None:
        self.consumers.pop(group, None)
        self._subscribe_delivered.pop(group, None)
        self._unregister_client(None, group)

    def _unregister_client(self, producer_group: str | None, consumer_group: str | None) -> None:
        """UNREGISTER_CLIENT to every known broker address (``MQClientInstance.unregisterClient``)."""
        for addrs in list(self.broker_addr_table.values()):
            for addr in list(addrs.values()):
                request = RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, {
                    "clientID": self.client_id, "producerGroup": producer_group, "consumerGroup": consumer_group,
                }, language=self.config.language, version=self.config.version)
                # The answer is only logged by Java; a failure changes nothing.
                self.invoke(addr, request, self.config.mq_client_api_timeout_ms).add_done_callback(lambda _f: None)

    # routes ---------------------------------------------------------------------------------------------------------
    def topics_in_use(self) -> set[str]:
        topics: set[str] = set()
        for consumer in list(self.consumers.values()):
            topics |= set(consumer.subscribed_topics())
        for producer in list(self.producers.values()):
            topics |= set(producer.publish_topics())
        return topics

    def update_all_topic_routes(self) -> None:
        """The periodic ``updateTopicRouteInfoFromNameServer()``: every topic of every consumer and producer."""
        for topic in sorted(self.topics_in_use()):
            self.update_topic_route(topic, daemon=True)

    def update_topic_route(self, topic: str, *, default_topic: str | None = None, default_queue_nums: int = 0,
                           daemon: bool = False) -> Future[TopicRouteData | None]:
        """GET_ROUTEINFO_BY_TOPIC for ``topic`` (or, with ``default_topic``, that topic's route with its queue counts
        capped at ``default_queue_nums``, stored for ``topic``: ``isDefault``); applies the route when it changed.

        The future gives the route the name server answered, or None when there is none or the request failed.
        """
        result: Future[TopicRouteData | None] = Future()
        ask = default_topic if default_topic is not None else topic
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": ask},
                                          language=self.config.language, version=self.config.version)

        def answered(f: Future[RemotingCommand]) -> None:
            error = f.exception()
            if error is not None:
                result.set_result(None)
                return
            response = f.result()
            if response.code != ResponseCode.SUCCESS or response.body is None:
                result.set_result(None)
                return
            try:
                route = TopicRouteData.from_json(response.body)
            except (ValueError, TypeError, AttributeError):
                result.set_result(None)
                return
            if default_topic is not None:
                for qd in route.queue_datas:
                    nums = min(default_queue_nums, qd.read_queue_nums)
                    qd.read_queue_nums = nums
                    qd.write_queue_nums = nums
            if not self.stopped:
                self._apply_route(topic, route)
            result.set_result(route)

        self.invoke(self.namesrv_addr, request, self.config.mq_client_api_timeout_ms,
                    daemon=daemon).add_done_callback(answered)
        return result

    def _is_need_update(self, topic: str) -> bool:
        """``isNeedUpdateTopicRouteInfo``: a producer lacks usable publish info or a consumer lacks subscribe info."""
        for producer in list(self.producers.values()):
            if producer.is_publish_topic_need_update(topic):
                return True
        for group, consumer in list(self.consumers.items()):
            if topic in consumer.subscribed_topics() and topic not in self._subscribe_delivered.get(group, set()):
                return True
        return False

    def _apply_route(self, topic: str, route: TopicRouteData) -> None:
        old = self.topic_route_table.get(topic)
        if not route_changed(old, route) and not self._is_need_update(topic):
            return
        for bd in route.broker_datas:
            self.broker_addr_table[bd.broker_name] = dict(bd.broker_addrs)
        for producer in list(self.producers.values()):
            producer.on_route(topic, route.clone())
        if self.consumers:
            queues = subscribe_queues(route, topic)
            for group, consumer in list(self.consumers.items()):
                consumer.on_route(topic, set(queues))
                self._subscribe_delivered.setdefault(group, set()).add(topic)
        self.topic_route_table[topic] = route.clone()
        summary = tuple(
            f"{qd.broker_name}:{i}:{qd.perm}"
            for qd in sorted(route.queue_datas, key=lambda q: q.broker_name)
            for i in range(qd.write_queue_nums)
        )
        self.events.emit(RouteUpdate(node=self.client_id, topic=topic, queues=summary))

    def topic_route(self, topic: str) -> TopicRouteData | None:
        return self.topic_route_table.get(topic)

    def find_broker_addr(self, broker_name: str, broker_id: int = MASTER_ID) -> str | None:
        """``findBrokerAddressInPublish`` for the master; the address of ``broker_id`` otherwise."""
        addrs = self.broker_addr_table.get(broker_name)
        if not addrs:
            return None
        return addrs.get(broker_id)

    def find_broker_addr_any(self, broker_name: str) -> str | None:
        """``findBrokerAddressInSubscribe(brokerName, MASTER_ID, false)``: the master, else any address."""
        addrs = self.broker_addr_table.get(broker_name)
        if not addrs:
            return None
        if MASTER_ID in addrs:
            return addrs[MASTER_ID]
        return next(iter(addrs.values()))

    def broker_names(self) -> list[str]:
        return list(self.broker_addr_table)

    def find_broker_addr_by_topic(self, topic: str) -> str | None:
        """``findBrokerAddrByTopic``: a random broker of the topic's route, its master or a random address."""
        route = self.topic_route_table.get(topic)
        if route is None or not route.broker_datas:
            return None
        bd = route.broker_datas[self.runtime.random.randrange(len(route.broker_datas))]
        master = bd.broker_addrs.get(MASTER_ID)
        if master is not None:
            return master
        addrs = list(bd.broker_addrs.values())
        return addrs[self.runtime.random.randrange(len(addrs))] if addrs else None

    def _clean_offline_brokers(self) -> None:
        """``cleanOfflineBroker``: forget broker addresses no topic route mentions any more."""
        known = {addr for route in self.topic_route_table.values() for bd in route.broker_datas
                 for addr in bd.broker_addrs.values()}
        for name in list(self.broker_addr_table):
            kept = {bid: addr for bid, addr in self.broker_addr_table[name].items() if addr in known}
            if kept:
                self.broker_addr_table[name] = kept
            else:
                del self.broker_addr_table[name]

    # requests -------------------------------------------------------------------------------------------------------
    def invoke(self, addr: str | None, request: RemotingCommand, timeout_ms: int, *, daemon: bool = False
               ) -> Future[RemotingCommand]:
        if addr is None:
            return _failed(self.runtime, RemotingConnectError("connect to null failed"))
        if self.stopped and not self.running:
            return _failed(self.runtime, RemotingConnectError(f"client {self.client_id} is shut down"))
        return self.remoting.invoke(addr, self._signed(request), timeout_ms, daemon=daemon)

    def invoke_oneway(self, addr: str | None, request: RemotingCommand) -> None:
        if addr is None or (self.stopped and not self.running):
            return
        self.remoting.invoke_oneway(addr, self._signed(request))

    def _signed(self, request: RemotingCommand) -> RemotingCommand:
        """``AclClientRPCHook.doBeforeRequest`` when the client has credentials: every request, to any server."""
        cfg = self.config
        if cfg.access_key is None or cfg.secret_key is None:
            return request
        fields = signed_fields(request.ext_fields, request.body, cfg.access_key, cfg.secret_key, cfg.security_token)
        return attrs.evolve(request, ext_fields=fields)

    def can_connect(self, addr: str | None) -> bool:
        """Whether a connection to ``addr`` can be made (a oneway write fails at once when it can't)."""
        return addr is not None and not self.stopped and self.network.node_of(addr) is not None

    # heartbeats -----------------------------------------------------------------------------------------------------
    def _heartbeat_tick(self) -> None:
        self._clean_offline_brokers()
        self.send_heartbeat_to_all_brokers(daemon=True)

    def heartbeat_body(self) -> dict[str, Any]:
        """``prepareHeartbeatData``."""
        return {
            "clientID": self.client_id,
            "consumerDataSet": [consumer.heartbeat_data() for consumer in list(self.consumers.values())],
            "producerDataSet": [{"groupName": group} for group in list(self.producers)],
        }

    def send_heartbeat_to_all_brokers(self, *, daemon: bool = False) -> Future[None]:
        """HEART_BEAT to every master (every broker address when consumers are registered)."""
        done: Future[None] = Future()
        data = self.heartbeat_body()
        if not data["producerDataSet"] and not data["consumerDataSet"]:
            done.set_result(None)
            return done
        consumer_empty = not data["consumerDataSet"]
        body = json.dumps(data, separators=(",", ":"), sort_keys=True).encode("utf-8")
        self.heartbeat_times += 1
        pending: list[Future[RemotingCommand]] = []
        for name, addrs in list(self.broker_addr_table.items()):
            for bid, addr in list(addrs.items()):
                if consumer_empty and bid != MASTER_ID:
                    continue
                request = RemotingCommand.request(RequestCode.HEART_BEAT, None, body,
                                                  language=self.config.language, version=self.config.version)
                future = self.invoke(addr, request, self.config.mq_client_api_timeout_ms, daemon=daemon)
                future.add_done_callback(functools.partial(self._heartbeat_answered, name, addr))
                pending.append(future)
        when_all(pending, lambda: done.set_result(None))
        return done

    def _heartbeat_answered(self, broker_name: str, addr: str, future: Future[RemotingCommand]) -> None:
        if future.exception() is None and future.result().code == ResponseCode.SUCCESS:
            self.broker_version_table.setdefault(broker_name, {})[addr] = future.result().version

    # consumers ------------------------------------------------------------------------------------------------------
    def find_consumer_ids(self, topic: str, group: str) -> Future[list[str]]:
        """GET_CONSUMER_LIST_BY_GROUP to a random broker of ``topic``; [] on failure."""
        result: Future[list[str]] = Future()
        self.find_consumer_id_list(topic, group).add_done_callback(lambda f: result.set_result(f.result() or []))
        return result

    def find_consumer_id_list(self, topic: str, group: str) -> Future[list[str] | None]:
        """``findConsumerIdList``: GET_CONSUMER_LIST_BY_GROUP to a random broker of ``topic``; None when no broker
        is known or the request fails (an error code, e.g. a restarted broker's "no consumer for this group", or
        no body: ``MQClientAPIImpl.getConsumerIdListByGroup`` throws), so that the rebalance skips the topic."""
        result: Future[list[str] | None] = Future()

        def ask(addr: str | None) -> None:
            if addr is None:
                result.set_result(None)
                return
            request = RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group},
                                              language=self.config.language, version=self.config.version)

            def answered(f: Future[RemotingCommand]) -> None:
                if f.exception() is not None:
                    result.set_result(None)
                    return
                response = f.result()
                if response.code != ResponseCode.SUCCESS or response.body is None:
                    result.set_result(None)
                    return
                try:
                    ids = json.loads(response.body.decode("utf-8")).get("consumerIdList") or []
                except (ValueError, AttributeError):
                    result.set_result(None)  # Java's decode throws: the id list is not known
                    return
                result.set_result([str(i) for i in ids])

            self.invoke(addr, request, self.config.mq_client_api_timeout_ms).add_done_callback(answered)

        addr = self.find_broker_addr_by_topic(topic)
        if addr is not None:
            ask(addr)
        else:
            self.update_topic_route(topic).add_done_callback(lambda _f: ask(self.find_broker_addr_by_topic(topic)))
        return result

    def persist_all_consumer_offsets(self) -> None:
        for consumer in list(self.consumers.values()):
            consumer.persist_offsets()

    def do_rebalance(self) -> None:
        for consumer in list(self.consumers.values()):
            consumer.do_rebalance()

    def _schedule_rebalance(self, delay_ms: int) -> None:
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
        self._rebalance_timer = self.runtime.call_later(delay_ms, self._rebalance_tick, daemon=True)

    def _rebalance_tick(self) -> None:
        self._rebalance_timer = None
        if not self.running:
            return
        self.do_rebalance()
        self._schedule_rebalance(self.config.rebalance_interval_ms)

    def rebalance_immediately(self) -> None:
        """``RebalanceService.wakeup``: rebalance soon, then wait the full interval again."""
        if not self.running or self._rebalance_soon is not None:
            return
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
            self._rebalance_timer = None

        def run() -> None:
            self._rebalance_soon = None
            if not self.running:
                return
            self.do_rebalance()
            self._schedule_rebalance(self.config.rebalance_interval_ms)

        self._rebalance_soon = self.runtime.call_soon(run)

    # requests from brokers ------------------------------------------------------------------------------------------
    def handle(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        """``ClientRemotingProcessor``: NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE, and the offset requests
        RESET_CONSUMER_CLIENT_OFFSET and GET_CONSUMER_STATUS_FROM_CLIENT (answered by ``offset_store``)."""
        handlers: dict[int, Callable[[RemotingCommand, Any], RemotingCommand | None]] = {
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: self._notify_consumer_ids_changed,
            RequestCode.CHECK_TRANSACTION_STATE: self._check_transaction_state,
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET: lambda request, _channel: reset_offset_request(self, request),
            RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT:
                lambda request, _channel: consumer_status_request(self, request),
        }
        return dispatch(handlers, request, channel)

    def _notify_consumer_ids_changed(self, request: RemotingCommand, channel: Channel) -> None:
        self.rebalance_immediately()
        return None

    def _check_transaction_state(self, request: RemotingCommand, channel: Channel) -> None:
        if not request.body:
            return None
        try:
            message, _size = decode_stored_message(request.body, 0)
        except (ValueError, IndexError, struct.error):  # Java logs "decode message failed" and drops it
            return None
        group = message.properties.get(Property.PRODUCER_GROUP)
        if group is None:
            return None
        producer = self.producers.get(group)
        if producer is not None:
            producer.check_transaction_state(channel.remote_addr, message, request)
        return None
