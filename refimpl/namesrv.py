"""The name server: brokers register their topics, clients ask for routes (``NamesrvController``,
``DefaultRequestProcessor``, ``RouteInfoManager`` of 4.9.8).

State (``RouteInfoManager``): topic → broker name → ``QueueData``; broker name → ``BrokerData`` (addresses by broker
id); cluster → broker names; broker address → live info (last registration, data version, channel, HA address);
broker address → filter servers. A broker registering re-applies its topic configs only when it is new or its
``DataVersion`` changed, and only for the master (id 0). Every 10 s (first after 5 s) brokers silent for more than
120 s are dropped, their channel closed and their routes removed as when the channel closes (``onChannelDestroy``).

Cleanup leaves nothing behind, whatever names and clusters an address registered under. Where 4.9.8 leaks (a server
that runs for months must not), this one departs from it:

- ``onChannelDestroy`` removes the address from the first broker name listing it and the emptied name from the first
  cluster listing it, and forgets only the first address registered through the channel. An address registered under
  two broker names (or a name under two clusters, or two addresses over one connection) left the others behind with
  no live entry, so no expiry ever removed them and cluster-info answers grew without end. Here every address of the
  channel is forgotten, under every broker name, and an emptied name leaves every cluster.
- ``unregisterBroker`` drops the address's live entry even when the address is still listed (under another broker
  name, or under another id than the one unregistered), leaving that listing nothing to expire it; here the live and
  filter-server entries stay while the address is still listed. An emptied name leaves every cluster, not only the
  one named in the request.
- ``scanNotActiveBroker`` removes the expired entry and then runs ``onChannelDestroy``, which, searching by channel,
  may forget another address of the same channel instead of the expired one; here the expired address is forgotten,
  then the other addresses of its (closed) channel.

A stopped name server (``shutdown``) forgets its route tables and its configuration updates, and keeps its KV
config (4.9.8 reloads ``kvConfig.json`` at start); ``start`` again listens and schedules its scans from scratch. The
node it listens as (``node``) names it for fault rules when a cluster has several.

Invariant (tests/test_refimpl_namesrv.py): every listed address has a live entry (so expiry or its channel's close
reaches it), no broker data, cluster or topic is left empty, clusters and topics name only listed broker names, and
filter servers belong to live addresses.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import attrs

from rocketspec.refimpl.events import EventLog
from rocketspec.refimpl.namesrv_admin import NamesrvAdmin
from rocketspec.refimpl.remoting import Channel, HeaderError, Network, RemotingCommand, dispatch
from rocketspec.refimpl.route import (
    BrokerData,
    DataVersion,
    QueueData,
    RegisterBrokerBody,
    TopicConfig,
    TopicRouteData,
    cluster_info_json,
    dumps_java,
    loads_lenient,
)
from rocketspec.refimpl.runtime import Runtime, Timer
from rocketspec.spec.protocol import (
    BROKER_CHANNEL_EXPIRED_MS,
    DEFAULT_NAMESRV_PORT,
    MASTER_ID,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    NAMESRV_SCAN_INITIAL_DELAY_MS,
    NAMESRV_SCAN_INTERVAL_MS,
    VERSION_V3_0_11,
    VERSION_V4_9_4,
    RequestCode,
    ResponseCode,
    suggest_todo,
)

NAMESRV_NODE = "namesrv"
DEFAULT_NAMESRV_ADDR = f"127.0.0.1:{DEFAULT_NAMESRV_PORT}"


@attrs.define
class BrokerLiveInfo:
    last_update_ms: int
    data_version: DataVersion
    channel: Any
    ha_server_addr: str


class NameServer:
    """A RocketMQ name server listening on ``addr`` of a ``Network`` (node ``namesrv``)."""

    def __init__(self, runtime: Runtime, network: Network, events: EventLog | None = None,
                 addr: str = DEFAULT_NAMESRV_ADDR, node: str = NAMESRV_NODE) -> None:
        self.runtime = runtime
        self.network = network
        self.events = events
        self.addr = addr
        self.node = node
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.broker_addr_table: dict[str, BrokerData] = {}
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}
        self.filter_server_table: dict[str, list[str]] = {}
        self.running = False
        self._scan_timer: Timer | None = None
        self._handlers: dict[int, Callable[[RemotingCommand, Channel], RemotingCommand | None]] = {
            RequestCode.REGISTER_BROKER: self._register_broker,
            RequestCode.UNREGISTER_BROKER: self._unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self._get_route_info,
            RequestCode.GET_BROKER_CLUSTER_INFO: self._get_cluster_info,
            RequestCode.QUERY_DATA_VERSION: self._query_data_version,
        }
        # KV config, topic lists and topic deletion (namesrv_admin.py).
        self.admin = NamesrvAdmin(self)
        self._handlers.update(self.admin.handlers())

    # lifecycle ------------------------------------------------------------------------------------------------------
    def start(self) -> None:
        if self.running:
            return
        self.network.listen(self.addr, self.node, self)
        self._scan_timer = self.runtime.call_every(NAMESRV_SCAN_INTERVAL_MS, self._scan_tick,
                                                   initial_delay_ms=NAMESRV_SCAN_INITIAL_DELAY_MS)
        self.running = True

    def shutdown(self) -> None:
        """Stop listening; the route tables live in memory only and are gone with the process, and the next start
        has the configuration the process started with; the KV config stays (``kvConfig.json``)."""
        if not self.running:
            return
        self.running = False
        if self._scan_timer is not None:
            self._scan_timer.cancel()
        self.network.unlisten(self.addr)
        self.topic_queue_table.clear()
        self.broker_addr_table.clear()
        self.cluster_addr_table.clear()
        self.broker_live_table.clear()
        self.filter_server_table.clear()
        self.admin.reset_config()

    def _scan_tick(self) -> None:
        # Looked up on each tick (not bound at start), so that a wrapper installed later sees every scan.
        self.scan_not_active_brokers()

    # server ---------------------------------------------------------------------------------------------------------
    def handle(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        # DefaultRequestProcessor.processRequest returns null for a code it does not know: no answer (BRK-19).
        return dispatch(self._handlers, request, channel, answer_unknown=False)

    def channel_closed(self, channel: Channel) -> None:
        self.on_channel_destroy(channel.remote_addr, channel)

    # RouteInfoManager -----------------------------------------------------------------------------------------------
    def register_broker(self, cluster: str, broker_addr: str, broker_name: str, broker_id: int, ha_server_addr: str,
                        body: RegisterBrokerBody, channel: Any) -> tuple[str | None, str | None]:
        """``RouteInfoManager.registerBroker``; returns ``(haServerAddr, masterAddr)`` for a slave, else Nones."""
        self.cluster_addr_table.setdefault(cluster, set()).add(broker_name)
        register_first = False
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            register_first = True
            broker_data = BrokerData(cluster, broker_name, {})
            self.broker_addr_table[broker_name] = broker_data
        # Slave switched to master: one address keeps one id.
        for bid, addr in list(broker_data.broker_addrs.items()):
            if addr == broker_addr and bid != broker_id:
                del broker_data.broker_addrs[bid]
        old_addr = broker_data.broker_addrs.get(broker_id)
        broker_data.broker_addrs[broker_id] = broker_addr
        register_first = register_first or old_addr is None

        if broker_id == MASTER_ID:
            live = self.broker_live_table.get(broker_addr)
            if live is None or live.data_version != body.data_version or register_first:
                for config in body.topic_config_table.values():
                    self._create_and_update_queue_data(broker_name, config)

        self.broker_live_table[broker_addr] = BrokerLiveInfo(self.runtime.now_ms(), body.data_version, channel,
                                                             ha_server_addr)
        if body.filter_server_list is not None:
            if body.filter_server_list:
                self.filter_server_table[broker_addr] = list(body.filter_server_list)
            else:
                self.filter_server_table.pop(broker_addr, None)

        if broker_id != MASTER_ID:
            master = broker_data.broker_addrs.get(MASTER_ID)
            if master is not None:
                master_live = self.broker_live_table.get(master)
                if master_live is not None:
                    return master_live.ha_server_addr, master
        return None, None

    def _create_and_update_queue_data(self, broker_name: str, config: TopicConfig) -> None:
        queue_data = QueueData(broker_name, config.read_queue_nums, config.write_queue_nums, config.perm,
                               config.topic_sys_flag)
        self.topic_queue_table.setdefault(config.topic_name, {})[broker_name] = queue_data

    def unregister_broker(self, cluster: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        """``RouteInfoManager.unregisterBroker``: the broker id leaves the broker name; the address's live and filter
        entries go once no broker name lists it (4.9.8 drops them at once, see the module docstring)."""
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is not None:
            broker_data.broker_addrs.pop(broker_id, None)
        if not self._listed(broker_addr):
            self.broker_live_table.pop(broker_addr, None)
            self.filter_server_table.pop(broker_addr, None)
        if broker_data is not None and not broker_data.broker_addrs:
            self._remove_broker_name(broker_name)

    def _listed(self, addr: str) -> bool:
        return any(addr in broker_data.broker_addrs.values() for broker_data in self.broker_addr_table.values())

    def _remove_broker_name(self, broker_name: str) -> None:
        """A broker name without addresses: its broker data, its place in every cluster (an empty cluster goes) and
        its queue data in every topic (``removeTopicByBrokerName``; a topic left without queue data goes)."""
        self.broker_addr_table.pop(broker_name, None)
        for cluster, names in list(self.cluster_addr_table.items()):
            names.discard(broker_name)
            if not names:
                del self.cluster_addr_table[cluster]
        self._remove_topics_of(broker_name)

    def _remove_topics_of(self, broker_name: str) -> None:
        for topic in list(self.topic_queue_table):
            queue_datas = self.topic_queue_table[topic]
            queue_datas.pop(broker_name, None)
            if not queue_datas:
                del self.topic_queue_table[topic]

    def pickup_topic_route(self, topic: str) -> TopicRouteData | None:
        """``RouteInfoManager.pickupTopicRouteData``: None unless both queue data and broker data are found."""
        queue_datas = self.topic_queue_table.get(topic)
        if queue_datas is None:
            return None
        route = TopicRouteData(queue_datas=[attrs.evolve(q) for q in queue_datas.values()])
        for name in sorted(queue_datas):
            broker_data = self.broker_addr_table.get(name)
            if broker_data is None:
                continue
            clone = broker_data.clone()
            route.broker_datas.append(clone)
            if self.filter_server_table:
                for addr in clone.broker_addrs.values():
                    servers = self.filter_server_table.get(addr)
                    if servers is not None:
                        route.filter_server_table[addr] = list(servers)
        return route if route.broker_datas else None

    def scan_not_active_brokers(self) -> int:
        """``scanNotActiveBroker``: drop brokers whose last registration is more than 120 s old, closing their
        channel; the other addresses registered through that channel go with it."""
        removed = 0
        now = self.runtime.now_ms()
        for addr, live in list(self.broker_live_table.items()):
            if self.broker_live_table.get(addr) is not live:
                continue  # already forgotten with an earlier address of the same channel
            if live.last_update_ms + BROKER_CHANNEL_EXPIRED_MS < now:
                if live.channel is not None:
                    live.channel.close()
                self._forget_address(addr)
                self._forget_channel(live.channel)
                removed += 1
        return removed

    def on_channel_destroy(self, remote_addr: str, channel: Any) -> None:
        """``onChannelDestroy``: forget every address registered through ``channel``, else the one at
        ``remote_addr``, under every broker name."""
        if not self._forget_channel(channel) and remote_addr:
            self._forget_address(remote_addr)

    def _forget_channel(self, channel: Any) -> bool:
        if channel is None:
            return False
        found = [addr for addr, live in self.broker_live_table.items() if live.channel is channel]
        for addr in found:
            self._forget_address(addr)
        return bool(found)

    def _forget_address(self, addr: str) -> None:
        """The address's live and filter entries, the address under every broker name, then every emptied name."""
        self.broker_live_table.pop(addr, None)
        self.filter_server_table.pop(addr, None)
        for name, broker_data in list(self.broker_addr_table.items()):
            for bid in [bid for bid, listed in broker_data.broker_addrs.items() if listed == addr]:
                del broker_data.broker_addrs[bid]
            if not broker_data.broker_addrs:
                self._remove_broker_name(name)

    # request handlers -----------------------------------------------------------------------------------------------
    def _register_broker(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        broker_name = request.require("brokerName")
        broker_addr = request.require("brokerAddr")
        cluster = request.require("clusterName")
        ha_server_addr = request.require("haServerAddr")
        broker_id = request.require_int("brokerId")
        compressed = request.bool_field("compressed")
        crc = request.int_field("bodyCrc32", 0) or 0
        if crc != 0 and (zlib.crc32(request.body or b"") & 0x7FFFFFFF) != crc:
            return request.response(ResponseCode.SYSTEM_ERROR, remark="crc32 not match")
        if request.body is None:
            body = RegisterBrokerBody()
        else:
            try:
                if request.version >= VERSION_V3_0_11:
                    body = RegisterBrokerBody.decode(request.body, compressed)
                else:
                    # Brokers before V3_0_11 send the TopicConfigSerializeWrapper itself, without filter servers.
                    wrapper = loads_lenient(request.body)
                    if not isinstance(wrapper, dict):
                        raise ValueError("not an object")
                    body = RegisterBrokerBody.from_wrapper(wrapper, None)
            except (ValueError, TypeError, AttributeError) as error:
                raise HeaderError(f"Failed to decode RegisterBrokerBody: {error}") from None
        ha, master = self.register_broker(cluster, broker_addr, broker_name, broker_id, ha_server_addr, body,
                                          channel)
        # The ORDER_TOPIC_CONFIG KV namespace rides along: brokers set their topics' order flags from it.
        return request.response(ResponseCode.SUCCESS, {"haServerAddr": ha, "masterAddr": master},
                                body=self.admin.kv.order_topic_body())

    def _unregister_broker(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        self.unregister_broker(request.require("clusterName"), request.require("brokerAddr"),
                               request.require("brokerName"), request.require_int("brokerId"))
        return request.response(ResponseCode.SUCCESS)

    def _get_route_info(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        topic = request.require("topic")
        route = self.pickup_topic_route(topic)
        if route is None:
            return request.response(
                ResponseCode.TOPIC_NOT_EXIST,
                remark=f"No topic route info in name server for the topic: {topic}{suggest_todo()}",
            )
        if self.admin.order_message_enable:  # NamesrvConfig.orderMessageEnable: the ORDER_TOPIC_CONFIG entry
            route.order_topic_conf = self.admin.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
        standard = request.version >= VERSION_V4_9_4 or request.bool_field("acceptStandardJsonOnly")
        return request.response(ResponseCode.SUCCESS, body=route.to_json(standard=standard))

    def _get_cluster_info(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        return request.response(ResponseCode.SUCCESS,
                                body=cluster_info_json(self.broker_addr_table, self.cluster_addr_table))

    def _query_data_version(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """QUERY_DATA_VERSION: has the broker's topic config changed? Unchanged refreshes its liveness."""
        broker_addr = request.require("brokerAddr")
        request.require("brokerName")
        request.require("clusterName")
        request.require_int("brokerId")
        try:
            version = DataVersion.from_dict(loads_lenient(request.body or b"{}"))
        except (ValueError, TypeError, AttributeError) as error:
            raise HeaderError(f"bad DataVersion body: {error}") from None
        live = self.broker_live_table.get(broker_addr)
        changed = live is None or live.data_version != version
        if not changed and live is not None:
            live.last_update_ms = self.runtime.now_ms()
        body = dumps_java(live.data_version.to_dict()) if live is not None else None
        return request.response(ResponseCode.SUCCESS, {"changed": changed}, body=body)
