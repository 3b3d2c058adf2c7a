"""The broker (``BrokerController`` and its request processors in 4.9.8): a ``Server`` mapping requests to responses.

State lives in small managers the sub-services share: ``topics`` (TopicConfigManager), ``subscription_groups``,
``consumer_offsets``, ``consumers`` / ``producers`` (who is connected), ``locks`` (orderly queue locks) and the
``store``. Housekeeping runs on daemon timers: registration with the name server (at start, then every 30 s after a
10 s delay), consumer-offset persistence (every 5 s after 10 s), the client channel scan (every 10 s), the long-poll
check, the schedule service and the transaction check. ``shutdown`` persists everything and unregisters; ``crash``
loses whatever was not persisted or flushed.
"""

from __future__ import annotations

import datetime
import json
import zlib
from collections.abc import Callable
from typing import Any

from rocketspec.refimpl.acl import PlainAccessValidator
from rocketspec.refimpl.acl_config import AclConfig
from rocketspec.refimpl.broker.admin_consumers import ConsumerAdmin
from rocketspec.refimpl.broker.admin_maintenance import MaintenanceAdmin
from rocketspec.refimpl.broker.admin_runtime import RuntimeAdmin
from rocketspec.refimpl.broker.admin_topics import TopicAdmin
from rocketspec.refimpl.broker.clients import (
    ClientChannelInfo,
    ConsumerManager,
    HeartbeatData,
    ProducerManager,
)
from rocketspec.refimpl.broker.config import BrokerConfig
from rocketspec.refimpl.broker.filter import ConsumerFilterManager, check_client_config
from rocketspec.refimpl.broker.groups import SubscriptionGroupManager
from rocketspec.refimpl.broker.locks import LockBatchRequest, RebalanceLockManager, encode_lock_response
from rocketspec.refimpl.broker.offsets import ConsumerOffsetManager
from rocketspec.refimpl.broker.pull import PullMessageProcessor
from rocketspec.refimpl.broker.query import query_message, view_message_by_id
from rocketspec.refimpl.broker.reply import send_reply_message
from rocketspec.refimpl.broker.schedule import ScheduleService
from rocketspec.refimpl.broker.send import SendMessageProcessor
from rocketspec.refimpl.broker.sendback import consumer_send_back
from rocketspec.refimpl.broker.stats import BrokerStats
from rocketspec.refimpl.broker.topics import TopicConfig, TopicConfigManager
from rocketspec.refimpl.broker.transaction import TransactionService
from rocketspec.refimpl.events import EventLog, MessageStored, StoreDelete
from rocketspec.refimpl.index import IndexService
from rocketspec.refimpl.message import decode_offset_message_id
from rocketspec.refimpl.remoting import Channel, HeaderError, Network, RemotingClient, RemotingCommand, dispatch
from rocketspec.refimpl.runtime import Future, Runtime, Timer
from rocketspec.refimpl.store import Disk, MemoryDisk, MessageStore, MessageToStore, PutResult
from rocketspec.spec.protocol import (
    BROKER_FLUSH_CONSUMER_OFFSET_INTERVAL_MS,
    BROKER_REGISTER_INITIAL_DELAY_MS,
    CLIENT_SCAN_INTERVAL_MS,
    DEFAULT_PERM,
    MASTER_ID,
    PERM_READ,
    PERM_WRITE,
    STORE_CLEAN_RESOURCE_INTERVAL_MS,
    STORE_DELETE_WHEN_HOUR,
    STORED_PUT_STATUSES,
    MessageModel,
    Property,
    PutMessageStatus,
    RequestCode,
    ResponseCode,
    retry_topic,
)

# RegisterBrokerTimeoutMills default.
REGISTER_BROKER_TIMEOUT_MS = 6_000
# TopicSysFlag unit-sub bit (a unit-mode consumer's retry topic).
_TOPIC_SYS_FLAG_UNIT_SUB = 0x2

Handler = Callable[[RemotingCommand, Any], "RemotingCommand | None"]


class Broker:
    """A RocketMQ broker on a ``Network``: listens on ``config.addr`` as node ``config.broker_name``."""

    def __init__(
        self,
        config: BrokerConfig,
        runtime: Runtime,
        network: Network,
        events: EventLog,
        namesrv_addr: str | None,
        *,
        disk: Disk | None = None,
        acl: AclConfig | None = None,
    ) -> None:
        self.config = config
        # aclEnable: the plain ACL hook in front of every request (acl.py); None when off, as by default.
        self.acl = PlainAccessValidator(acl) if acl is not None else None
        self.runtime = runtime
        self.network = network
        self.events = events
        self.namesrv_addr = namesrv_addr
        self.name = config.broker_name
        self.addr = config.addr
        self.disk: Disk = disk if disk is not None else MemoryDisk()
        self.running = False
        self._timers: list[Timer] = []
        # Queues the store's arrival listener reported during the current put: (topic, queue id, queue offset).
        self._arrivals: list[tuple[str, int, int]] | None = None
        self._namesrv_client: RemotingClient | None = None
        # BrokerController.initialize: config files, then the store (which recovers from its files).
        self.topics = TopicConfigManager(config, runtime.now_ms, self.disk, on_created=self._on_topic_created)
        self.subscription_groups = SubscriptionGroupManager(config, runtime.now_ms, self.disk)
        self.consumer_offsets = ConsumerOffsetManager(self.name, self.disk, events)
        self.topics.load()
        self.consumer_offsets.load()
        self.subscription_groups.load()
        self.store = MessageStore(runtime, self.name, self.addr, disk=self.disk, flush=config.flush,
                                  segment_bytes=config.segment_bytes, file_reserved_ms=config.file_reserved_ms,
                                  cq_segment_entries=config.cq_segment_entries,
                                  delay_level_millis=config.delay_level_millis)
        self.store.add_arrival_listener(self._on_arrival)
        self.index = IndexService(self.store, enabled=config.message_index_enable)
        self.store.add_delete_listener(self._on_delete)
        self.consumers = ConsumerManager(self._notify_change)
        self.producers = ProducerManager(runtime.now_ms)
        self.locks = RebalanceLockManager(runtime.now_ms)
        self.sender = SendMessageProcessor(self)
        self.filters = ConsumerFilterManager()
        self.puller = PullMessageProcessor(self)
        self.schedule = ScheduleService(self)
        self.transactions = TransactionService(self)
        self.stats = BrokerStats(runtime, config.cluster_name, len(config.delay_level_millis))
        self._handlers: dict[int, Handler] = {
            RequestCode.SEND_MESSAGE: self.sender.process,
            RequestCode.SEND_MESSAGE_V2: self.sender.process,
            RequestCode.SEND_BATCH_MESSAGE: self.sender.process,
            RequestCode.PULL_MESSAGE: self.puller.process,
            RequestCode.QUERY_CONSUMER_OFFSET: self._query_consumer_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self._update_consumer_offset,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self._get_consumer_list,
            RequestCode.GET_MAX_OFFSET: self._get_max_offset,
            RequestCode.GET_MIN_OFFSET: self._get_min_offset,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self._search_offset_by_timestamp,
            RequestCode.QUERY_MESSAGE: lambda request, channel: query_message(self, request, channel),
            RequestCode.VIEW_MESSAGE_BY_ID: lambda request, channel: view_message_by_id(self, request, channel),
            RequestCode.SEND_REPLY_MESSAGE: lambda request, channel: send_reply_message(self, request, channel),
            RequestCode.SEND_REPLY_MESSAGE_V2: lambda request, channel: send_reply_message(self, request, channel),
            RequestCode.HEART_BEAT: self._heartbeat,
            RequestCode.UNREGISTER_CLIENT: self._unregister_client,
            RequestCode.CONSUMER_SEND_MSG_BACK: lambda request, channel: consumer_send_back(self, request, channel),
            RequestCode.END_TRANSACTION: lambda request, channel: self.transactions.end_transaction(request, channel),
            RequestCode.LOCK_BATCH_MQ: self._lock_batch,
            RequestCode.UNLOCK_BATCH_MQ: self._unlock_batch,
            RequestCode.CHECK_CLIENT_CONFIG: lambda request, channel: check_client_config(self, request, channel),
        }
        # Admin requests (mqadmin, DefaultMQAdminExt): admin_topics.py, admin_consumers.py, admin_runtime.py.
        self.topic_admin = TopicAdmin(self)
        self.consumer_admin = ConsumerAdmin(self)
        self.runtime_admin = RuntimeAdmin(self)
        self.maintenance_admin = MaintenanceAdmin(self)  # admin_maintenance.py
        for admin in (self.topic_admin, self.consumer_admin, self.runtime_admin, self.maintenance_admin):
            self._handlers.update(admin.handlers())

    # ------------------------------------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """``BrokerController.start``: listen, start the services, register with the name server."""
        if self.running:
            return
        self.running = True
        self.network.listen(self.addr, self.name, self)
        if self.namesrv_addr:
            self._namesrv_client = self.network.client(self.name)
        self.puller.hold.start()
        self.schedule.start()
        self.transactions.start()
        self._timers.extend(self.stats.start())
        runtime = self.runtime
        self._timers.append(runtime.call_every(self.config.register_interval_ms, self.register_to_namesrv,
                                               initial_delay_ms=BROKER_REGISTER_INITIAL_DELAY_MS))
        self._timers.append(runtime.call_every(BROKER_FLUSH_CONSUMER_OFFSET_INTERVAL_MS, self._persist_periodically,
                                               initial_delay_ms=BROKER_REGISTER_INITIAL_DELAY_MS))
        self._timers.append(runtime.call_every(CLIENT_SCAN_INTERVAL_MS, self.scan_not_active_channels))
        self._timers.append(runtime.call_every(STORE_CLEAN_RESOURCE_INTERVAL_MS, self.clean_expired_files))
        runtime.add_idle_probe(self.has_unconsumed_messages)
        self.register_to_namesrv()

    def _persist_periodically(self) -> None:
        """Every 5 s: the consumer offsets (``persistAllConsumerOffset``) and any auto-created subscription group."""
        self.consumer_offsets.persist()
        self.subscription_groups.persist_if_changed()

    def shutdown(self) -> None:
        """A clean stop: everything persisted, UNREGISTER_BROKER sent, connections closed, store closed."""
        if not self.running:
            return
        self._stop_services()
        self.schedule.persist()
        self._unregister_from_namesrv()
        self.consumer_offsets.persist()
        self.topics.persist()
        self.subscription_groups.persist()
        self.network.unlisten(self.addr)
        self.index.save()
        self.store.close()

    def crash(self) -> None:
        """A kill -9: nothing persisted, nothing unregistered; unflushed store data is lost on a ``MemoryDisk`` (a
        power loss) and kept on a ``FileDisk`` (written data is the OS's)."""
        if not self.running:
            return
        self._stop_services()
        if self._namesrv_client is not None:
            self._namesrv_client.close()
            self._namesrv_client = None
        self.network.unlisten(self.addr)
        self.index.save()
        self.store.crash()

    def _stop_services(self) -> None:
        self.running = False
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        self.runtime.remove_idle_probe(self.has_unconsumed_messages)
        self.puller.hold.shutdown()
        self.schedule.shutdown()
        self.transactions.shutdown()

    # ------------------------------------------------------------------------------------------- name server
    def _namesrv_addrs(self) -> list[str]:
        return [a for a in (self.namesrv_addr or "").split(";") if a]

    def register_to_namesrv(self, *, oneway: bool = False, check_order_config: bool = True,
                            wrapper: dict[str, Any] | None = None) -> list[Future[RemotingCommand]]:
        """``registerBrokerAll``: REGISTER_BROKER with the topic table to every name server; ``wrapper`` replaces the
        whole table (``registerIncrementBrokerData``). Returns the pending answers (none for oneway)."""
        client = self._namesrv_client
        futures: list[Future[RemotingCommand]] = []
        if client is None or not self.running:
            return futures
        body = json.dumps({
            "filterServerList": [],
            "topicConfigSerializeWrapper": wrapper or self.topics.wrapper(self.config.broker_permission),
        }, separators=(",", ":")).encode("utf-8")
        fields = {
            "brokerName": self.name,
            "brokerAddr": self.addr,
            "clusterName": self.config.cluster_name,
            "haServerAddr": self.config.ha_addr,
            "brokerId": self.config.broker_id,
            "compressed": False,
            "bodyCrc32": zlib.crc32(body) & 0x7FFFFFFF,
        }
        for addr in self._namesrv_addrs():
            request = RemotingCommand.request(RequestCode.REGISTER_BROKER, fields, body, oneway=oneway)
            if oneway:
                client.invoke_oneway(addr, request)
                continue
            future = client.invoke(addr, request, REGISTER_BROKER_TIMEOUT_MS, daemon=True)
            if check_order_config:
                future.add_done_callback(self._on_registered)
            futures.append(future)
        return futures

    def _on_registered(self, future: Future[RemotingCommand]) -> None:
        """Apply the name server's order-topic table (``updateOrderTopicConfig``) when it sends one."""
        if future.exception() is not None or not self.running:
            return
        response = future.result()
        if response.code != ResponseCode.SUCCESS or not response.body:
            return
        try:
            kv = json.loads(response.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return
        table = kv.get("table") if isinstance(kv, dict) else None
        if isinstance(table, dict):
            self.topics.update_order_topics(set(table))

    def _unregister_from_namesrv(self) -> None:
        """``unregisterBrokerAll`` (oneway), then close the connection once the request has gone out."""
        client = self._namesrv_client
        self._namesrv_client = None
        if client is None:
            return
        for addr in self._namesrv_addrs():
            client.invoke_oneway(addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, {
                "brokerName": self.name,
                "brokerAddr": self.addr,
                "clusterName": self.config.cluster_name,
                "brokerId": self.config.broker_id,
            }, oneway=True))
        self.runtime.call_later(2 * self.network.latency_ms + 1, client.close)

    def _on_topic_created(self) -> None:
        # registerBrokerAll(false, true, true): a oneway registration so the new route is visible at once.
        self.register_to_namesrv(oneway=True, check_order_config=False)

    # ------------------------------------------------------------------------------------------- server side
    def handle(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        """Dispatch a request; unknown codes, bad headers and unexpected failures become error responses. With ACL
        on, every request is checked first, as 4.9.8's RPC hook checks it before looking for a processor."""
        if self.acl is not None:
            refused = self.acl.refusal(request, channel.remote_addr)
            if refused is not None:
                return None if request.is_oneway else refused
        return dispatch(self._handlers, request, channel)

    def channel_closed(self, channel: Channel) -> None:
        """``ClientHousekeepingService.onChannelClose``: the client leaves every producer and consumer group."""
        if not self.running:
            return
        self.producers.channel_closed(channel)
        self.consumers.channel_closed(channel)
        self.puller.hold.channel_closed(channel)

    def scan_not_active_channels(self) -> None:
        """``scanExceptionChannel``: drop clients silent for too long and close their connections."""
        now = self.runtime.now_ms()
        expired = self.config.client_channel_expired_ms
        for channel in self.producers.scan_not_active(now, expired) + self.consumers.scan_not_active(now, expired):
            channel.close()

    def _notify_change(self, group: str, channels: list[Channel]) -> None:
        """``DefaultConsumerIdsChangeListener`` CHANGE: NOTIFY_CONSUMER_IDS_CHANGED (oneway) to every consumer."""
        if not self.config.notify_consumer_ids_changed_enable:
            return
        for channel in channels:
            channel.invoke_oneway(RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                                                          {"consumerGroup": group}, oneway=True))

    def notify_consumer_ids_changed(self, group: str) -> None:
        info = self.consumers.get(group)
        self._notify_change(group, info.all_channels() if info is not None else [])

    # ------------------------------------------------------------------------------------------------- state
    def is_writeable(self) -> bool:
        return bool(self.config.broker_permission & PERM_WRITE)

    def is_readable(self) -> bool:
        return bool(self.config.broker_permission & PERM_READ)

    def is_master(self) -> bool:
        return self.config.broker_id == MASTER_ID

    def create_topic(self, topic: str, read_queue_nums: int, write_queue_nums: int, perm: int = DEFAULT_PERM,
                     order: bool = False) -> TopicConfig:
        """Create or update a topic (admin path; the caller registers with the name server)."""
        config = TopicConfig(topic, read_queue_nums, write_queue_nums, perm, order=order)
        self.topics.update(config)
        return config

    def group_offsets(self, group: str, topic: str) -> dict[int, int]:
        return self.consumer_offsets.offsets(group, topic)

    # ------------------------------------------------------------------------------------------------- store
    def put_message(self, msg: MessageToStore) -> PutResult:
        """Store one message and record it (``MessageStored``); a slave refuses (SERVICE_NOT_AVAILABLE, the store's
        role check) and a body over ``max_message_size`` is MESSAGE_ILLEGAL (``CommitLog`` size check)."""
        refused = self._refuse([msg])
        if refused is not None:
            return refused
        self._arrivals = []
        result = self.store.put_message(msg)
        self._record(result, [msg])
        return result

    def put_messages(self, msgs: list[MessageToStore]) -> PutResult:
        """Store a batch (one queue, consecutive offsets) and record every message."""
        refused = self._refuse(msgs)
        if refused is not None:
            return refused
        self._arrivals = []
        result = self.store.put_messages(msgs)
        self._record(result, msgs)
        return result

    def _refuse(self, msgs: list[MessageToStore]) -> PutResult | None:
        if not self.is_master():
            return PutResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        if sum(len(m.body) for m in msgs) > self.config.max_message_size:
            return PutResult(PutMessageStatus.MESSAGE_ILLEGAL)
        return None

    def _record(self, result: PutResult, msgs: list[MessageToStore]) -> None:
        """One ``MessageStored`` per stored message, where the store really put it (a delayed message lands in
        SCHEDULE_TOPIC_XXXX; the arrival listener reports the queue; undispatched ones keep their own topic)."""
        arrivals, self._arrivals = self._arrivals, None
        if result.status not in STORED_PUT_STATUSES:
            return
        ids = result.offset_msg_ids or (result.offset_msg_id,)
        offsets = result.queue_offsets or (result.queue_offset,)
        commit_log_offset = result.commit_log_offset
        for i, msg in enumerate(msgs):
            if arrivals is not None and i < len(arrivals):
                topic, queue_id, queue_offset = arrivals[i]
            else:
                topic, queue_id, queue_offset = msg.topic, msg.queue_id, offsets[min(i, len(offsets) - 1)]
            offset_id = ids[min(i, len(ids) - 1)]
            if i > 0:
                commit_log_offset = decode_offset_message_id(offset_id)[2]
            self.events.emit(MessageStored(
                node=self.name,
                topic=topic,
                broker=self.name,
                queue_id=queue_id,
                offset=queue_offset,
                msg_id=msg.properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or offset_id,
                commit_log_offset=commit_log_offset,
                reconsume_times=msg.reconsume_times,
                tags=msg.properties.get(Property.TAGS),
            ))

    def _on_delete(self, topic: str, queue_id: int, min_offset: int) -> None:
        """Deleting old data moved a consume queue's min offset: consumers behind it must correct (``StoreDelete``)."""
        self.events.emit(StoreDelete(node=self.name, topic=topic, broker=self.name, queue_id=queue_id,
                                     offset=min_offset))

    def _on_arrival(self, topic: str, queue_id: int, queue_offset: int, tags_code: int) -> None:
        """``NotifyMessageArrivingListener``: wake held pulls of that queue (master with long polling only); runs
        after the put, as the reput thread does."""
        if self._arrivals is not None:
            self._arrivals.append((topic, queue_id, queue_offset))
        if not self.running or not self.is_master() or not self.config.long_polling_enable:
            return
        self.runtime.call_soon(
            lambda: self.puller.hold.notify_arriving(topic, queue_id, queue_offset + 1, tags_code))

    def clean_expired_files(self) -> None:
        """``DefaultMessageStore.cleanFilesPeriodically``: expired commit-log files go at the delete hour (04), or
        on any of the runs DELETE_EXPIRED_COMMITLOG granted."""
        now = self.runtime.now_ms()
        manual = self.maintenance_admin.take_manual_delete()
        if datetime.datetime.fromtimestamp(now / 1000, datetime.timezone.utc).hour == STORE_DELETE_WHEN_HOUR or manual:
            self.store.delete_expired_files(now)

    def has_unconsumed_messages(self) -> bool:
        """Idle probe: some clustering group with a live consumer has a subscribed queue (its retry topic included)
        whose committed offset is missing or behind the queue's max offset."""
        if not self.running:
            return False
        for info in self.consumers.groups():
            if info.message_model != MessageModel.CLUSTERING:
                continue
            if not any(channel.active for channel in info.channels):
                continue
            topics = set(info.subscriptions) | {retry_topic(info.group)}
            for topic in topics:
                topic_config = self.topics.get(topic)
                if topic_config is None:
                    continue
                for queue_id in range(topic_config.read_queue_nums):
                    max_offset = self.store.max_offset(topic, queue_id)
                    if max_offset > 0 and self.consumer_offsets.query(info.group, topic, queue_id) < max_offset:
                        return True
        return False

    # ---------------------------------------------------------------------------------------- request handlers
    def _query_consumer_offset(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``ConsumerManageProcessor.queryConsumerOffset``, with the "new group on a fresh queue" quirk: nothing
        stored, min offset ≤ 0 and offset 0 still in memory → 0 instead of QUERY_NOT_FOUND."""
        group = request.require("consumerGroup")
        topic = request.require("topic")
        queue_id = request.require_int("queueId")
        offset = self.consumer_offsets.query(group, topic, queue_id)
        if offset >= 0:
            return request.response(ResponseCode.SUCCESS, {"offset": offset})
        # checkInDiskByConsumeOffset(topic, queueId, 0) is false here: the store reads everything from memory.
        if self.store.min_offset(topic, queue_id) <= 0:
            return request.response(ResponseCode.SUCCESS, {"offset": 0})
        return request.response(ResponseCode.QUERY_NOT_FOUND,
                                remark="Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")

    def _update_consumer_offset(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        self.consumer_offsets.commit(channel.remote_addr, request.require("consumerGroup"), request.require("topic"),
                                     request.require_int("queueId"), request.require_int("commitOffset"))
        return request.response(ResponseCode.SUCCESS)

    def _get_consumer_list(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        group = request.require("consumerGroup")
        info = self.consumers.get(group)
        ids = info.client_ids() if info is not None else []
        if ids:
            return request.response(ResponseCode.SUCCESS,
                                    body=json.dumps({"consumerIdList": ids}).encode("utf-8"))
        return request.response(ResponseCode.SYSTEM_ERROR, remark=f"no consumer for this group, {group}")

    def _get_max_offset(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        offset = self.store.max_offset(request.require("topic"), request.require_int("queueId"))
        return request.response(ResponseCode.SUCCESS, {"offset": offset})

    def _get_min_offset(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        offset = self.store.min_offset(request.require("topic"), request.require_int("queueId"))
        return request.response(ResponseCode.SUCCESS, {"offset": offset})

    def _search_offset_by_timestamp(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        offset = self.store.offset_by_time(request.require("topic"), request.require_int("queueId"),
                                           request.require_int("timestamp"))
        return request.response(ResponseCode.SUCCESS, {"offset": offset})

    def _heartbeat(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``ClientManageProcessor.heartBeat``: register consumers (creating their retry topic) and producers."""
        try:
            data = HeartbeatData.decode(request.body)
        except (ValueError, TypeError, UnicodeDecodeError) as error:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=f"bad heartbeat body: {error}")
        now = self.runtime.now_ms()
        for consumer in data.consumers:
            group_config = self.subscription_groups.find_or_create(consumer.group_name)
            notify = True
            if group_config is not None:
                notify = group_config.notify_consumer_ids_changed_enable
                self.topics.create_retry_topic(consumer.group_name, group_config.retry_queue_nums,
                                               _TOPIC_SYS_FLAG_UNIT_SUB if consumer.unit_mode else 0)
            info = ClientChannelInfo(channel, data.client_id, request.language, request.version, now)
            self.consumers.register(consumer.group_name, info, consumer.consume_type, consumer.message_model,
                                    consumer.consume_from_where, consumer.subscriptions, notify, now)
            # DefaultConsumerIdsChangeListener REGISTER: every heartbeat (re)registers the group's filter data.
            self.filters.register_all(consumer.group_name, consumer.subscriptions)
        for group in data.producer_groups:
            self.producers.register(group, channel, data.client_id, language=request.language,
                                    version=request.version)
        return request.response(ResponseCode.SUCCESS)

    def _unregister_client(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        client_id = request.require("clientID")
        producer_group = request.field("producerGroup")
        if producer_group is not None:
            self.producers.unregister(producer_group, channel, client_id)
        consumer_group = request.field("consumerGroup")
        if consumer_group is not None:
            group_config = self.subscription_groups.find_or_create(consumer_group)
            notify = group_config.notify_consumer_ids_changed_enable if group_config is not None else True
            self.consumers.unregister(consumer_group, channel, notify)
        return request.response(ResponseCode.SUCCESS)

    def _lock_batch(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        try:
            body = LockBatchRequest.decode(request.body)
        except (ValueError, TypeError, UnicodeDecodeError) as error:
            raise HeaderError(f"bad lock request body: {error}") from None
        locked = self.locks.try_lock_batch(body.consumer_group, body.mq_set, body.client_id)
        return request.response(ResponseCode.SUCCESS, body=encode_lock_response(locked))

    def _unlock_batch(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        try:
            body = LockBatchRequest.decode(request.body)
        except (ValueError, TypeError, UnicodeDecodeError) as error:
            raise HeaderError(f"bad unlock request body: {error}") from None
        self.locks.unlock_batch(body.consumer_group, body.mq_set, body.client_id)
        return request.response(ResponseCode.SUCCESS)
