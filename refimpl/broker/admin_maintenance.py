"""The broker's maintenance admin requests (``AdminBrokerProcessor`` of 4.9.8) that ``admin_topics.py``,
``admin_consumers.py`` and ``admin_runtime.py`` do not serve: what ``mqadmin cleanExpiredCQ``,
``deleteExpiredCommitLog``, ``resumeCheckHalfMessage``, ``statsAll`` / ``viewBrokerStatsData``, the ACL commands
and ``DefaultMQAdminExt.getAllProducerInfo`` / ``MQClientAPIImpl.queryCorrectionOffset`` send.

- CLEAN_EXPIRED_CONSUMEQUEUE destroys the consume queues whose messages have all left the commit log
  (``MessageStore.clean_expired_consume_queues``); SUCCESS.
- DELETE_EXPIRED_COMMITLOG only arms the store's cleaner (``executeDeleteFilesManually``): its next 20 runs (one
  every 10 s) delete expired commit-log files whatever the hour; SUCCESS at once.
- QUERY_CORRECTION_OFFSET answers, per queue of the topic, the least committed offset over the groups whose offset
  is still in the queue. As in 4.9.8 it first *removes* the offsets of the ``filterGroups`` groups (of every topic)
  from the broker's table (``queryMinOffsetInAllGroup`` iterates a live key set), and its comparison with
  ``compareGroup`` looks up ``compareGroup@topic`` (the arguments are swapped), which is normally absent.
- GET_ALL_PRODUCER_INFO answers a ``ProducerTableInfo``: per producer group, each connection as a ``ProducerInfo``.
- VIEW_BROKER_STATS_DATA answers the minute / hour / day snapshots of one stats item (``stats.py``), or
  SYSTEM_ERROR ``The stats <name> <key> not exist``.
- RESUME_CHECK_HALF_MESSAGE reads the message at the id's commit-log offset and appends it again to the half topic
  (queue 0) with TRANSACTION_CHECK_TIMES=0, so the transaction check starts counting again; SYSTEM_ERROR when the
  id or the message is bad, or the put fails.
- The ACL requests answer what a 4.9.8 broker with ``aclEnable=false`` (the default) answers: it has no access
  validator, so the updates fail with their own codes and Java's NullPointerException text (JDK 17's helpful
  message, as the real broker runs on it) and GET_BROKER_CLUSTER_ACL_INFO is never answered (the exception is
  logged and the processor returns null).

A header field these requests lack is read as null, as 4.9.8 does: ``RemotingCommand.decodeCommandCustomHeader``
logs the "the custom field <x> is null" error of a ``@CFNotNull`` field and goes on (its catch covers the check), so
each request answers what its code does with nulls.
"""

from __future__ import annotations

import math
from typing import Any

from rocketspec.refimpl.broker.admin_consumers import _language
from rocketspec.refimpl.broker.offsets import offset_key
from rocketspec.refimpl.broker.services import BrokerServices
from rocketspec.refimpl.broker.sql92 import java_double_str
from rocketspec.refimpl.broker.stats import StatsItem, StatsSnapshot
from rocketspec.refimpl.message import decode_offset_message_id, decode_stored_message
from rocketspec.refimpl.remoting import Channel, RemotingCommand
from rocketspec.refimpl.route import RawJson, dumps_java
from rocketspec.refimpl.store import MessageToStore
from rocketspec.spec.java import is_blank
from rocketspec.spec.protocol import (
    TRANS_HALF_TOPIC,
    Property,
    PutMessageStatus,
    RequestCode,
    ResponseCode,
)

# CleanCommitLogService.MAX_MANUAL_DELETE_FILE_TIMES: cleaner runs that delete whatever the hour after the request.
MAX_MANUAL_DELETE_FILE_TIMES = 20
_JAVA_LONG_MAX = (1 << 63) - 1
# What NettyRemotingAbstract answers (exceptionSimpleDesc) when queryMinOffsetInAllGroup compares a null topic.
_NULL_TOPIC_REMARK = ('java.lang.NullPointerException: Cannot invoke "String.equals(Object)" because "<parameter1>" '
                      "is null, org.apache.rocketmq.broker.offset.ConsumerOffsetManager.queryMinOffsetInAllGroup("
                      "ConsumerOffsetManager.java:204)")
_RESUME_FAILED = "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."
# The NullPointerException texts of a 4.9.8 broker on JDK 17 without an access validator (aclEnable=false).
_NPE = 'Cannot invoke "org.apache.rocketmq.acl.AccessValidator.{call}" because "<local{slot}>" is null'
ACL_UPDATE_REMARK = _NPE.format(call="updateAccessConfig(org.apache.rocketmq.common.PlainAccessConfig)", slot=6)
ACL_DELETE_REMARK = _NPE.format(call="deleteAccessConfig(String)", slot=6)
ACL_WHITE_ADDRS_REMARK = _NPE.format(call="updateGlobalWhiteAddrsConfig(java.util.List, String)", slot=5)


def _java_str(text: str | None) -> str:
    """A string as Java's ``+`` and ``%s`` write it: null as "null"."""
    return "null" if text is None else text


def _java_double(value: float) -> RawJson:
    """A double as fastjson writes it: ``Double.toString``, NaN and infinities as null."""
    return RawJson("null" if math.isnan(value) or math.isinf(value) else java_double_str(value))


def _stats_item_json(snapshot: StatsSnapshot) -> dict[str, Any]:
    """``BrokerStatsItem``."""
    return {"avgpt": _java_double(snapshot.avgpt), "sum": snapshot.sum, "tps": _java_double(snapshot.tps)}


class MaintenanceAdmin:
    """Maintenance admin handlers of one broker; ``handlers()`` goes into its dispatch table."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        # CleanCommitLogService.manualDeleteFileSeveralTimes.
        self.manual_delete_times = 0

    def handlers(self) -> dict[int, Any]:
        return {
            RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: self.clean_expired_consume_queue,
            RequestCode.DELETE_EXPIRED_COMMITLOG: self.delete_expired_commit_log,
            RequestCode.QUERY_CORRECTION_OFFSET: self.query_correction_offset,
            RequestCode.GET_ALL_PRODUCER_INFO: self.get_all_producer_info,
            RequestCode.VIEW_BROKER_STATS_DATA: self.view_broker_stats_data,
            RequestCode.RESUME_CHECK_HALF_MESSAGE: self.resume_check_half_message,
            RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: self.update_and_create_acl_config,
            RequestCode.DELETE_ACL_CONFIG: self.delete_acl_config,
            RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: self.update_global_white_addrs_config,
            RequestCode.GET_BROKER_CLUSTER_ACL_INFO: self.get_broker_cluster_acl_info,
        }

    # ------------------------------------------------------------------------------------------- store upkeep
    def clean_expired_consume_queue(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``cleanExpiredConsumeQueue`` → ``DefaultMessageStore.cleanExpiredConsumerQueue``."""
        self.broker.store.clean_expired_consume_queues()
        return request.response(ResponseCode.SUCCESS)

    def delete_expired_commit_log(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``deleteExpiredCommitLog`` → ``executeDeleteFilesManually``: arm the cleaner; nothing is deleted here."""
        self.manual_delete_times = MAX_MANUAL_DELETE_FILE_TIMES
        return request.response(ResponseCode.SUCCESS)

    def take_manual_delete(self) -> bool:
        """One cleaner run (``Broker.clean_expired_files``, every 10 s): whether it deletes whatever the hour; each
        such run uses up one of the times ``DELETE_EXPIRED_COMMITLOG`` granted (``deleteExpiredFiles``)."""
        if self.manual_delete_times <= 0:
            return False
        self.manual_delete_times -= 1
        return True

    # ----------------------------------------------------------------------------------------------- offsets
    def query_correction_offset(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``queryCorrectionOffset``: ``{"correctionOffsets": {queueId: offset}}`` (bare keys)."""
        filter_groups = request.field("filterGroups")
        compare_group = request.field("compareGroup")
        topic = request.field("topic")
        table = self.broker.consumer_offsets.table
        if not is_blank(filter_groups):
            assert filter_groups is not None
            for group in filter_groups.split(","):
                # ConsumerOffsetManager.queryMinOffsetInAllGroup removes through offsetTable.keySet(): the offsets
                # really go (a 4.9.8 bug kept on purpose: an admin tool sees the same broker afterwards).
                for key in [k for k in table if k.split("@")[1:2] == [group]]:
                    del table[key]
        correction: dict[int, int] = {}
        if topic is None and table:
            # topic.equals(...) on the first offset entry.
            return request.response(ResponseCode.SYSTEM_ERROR, remark=_NULL_TOPIC_REMARK)
        for key, queues in table.items():
            if key.split("@")[0] != topic:
                continue
            for queue_id, offset in queues.items():
                if offset >= self.broker.store.min_offset(topic, queue_id):
                    correction[queue_id] = min(offset, correction.get(queue_id, _JAVA_LONG_MAX))
        # queryOffset(topic, compareGroup) against queryOffset(group, topic): the key looked up is compareGroup@topic.
        compare = table.get(offset_key(_java_str(compare_group), _java_str(topic)))
        for queue_id, offset in (compare or {}).items():
            if queue_id not in correction:  # Java unboxes the missing value: NullPointerException
                return request.response(ResponseCode.SYSTEM_ERROR, remark="java.lang.NullPointerException")
            correction[queue_id] = _JAVA_LONG_MAX if correction[queue_id] > offset else correction[queue_id]
        return request.response(ResponseCode.SUCCESS,
                                body=dumps_java({"correctionOffsets": correction}, standard=False))

    # -------------------------------------------------------------------------------------------- producers
    def get_all_producer_info(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getAllProducerInfo`` → ``ProducerManager.getProducerTable``: groups with at least one connection; the
        address is ``Channel.remoteAddress().toString()`` (``/ip:port``)."""
        data: dict[str, list[dict[str, Any]]] = {}
        for group, channels in self.broker.producers.table.items():
            for info in channels.values():
                data.setdefault(group, []).append({
                    "clientId": info.client_id, "language": _language(info.language),
                    "lastUpdateTimestamp": info.last_update, "remoteIP": f"/{info.channel.remote_addr}",
                    "version": info.version,
                })
        return request.response(ResponseCode.SUCCESS, body=dumps_java({"data": data}))

    # ------------------------------------------------------------------------------------------------ stats
    def view_broker_stats_data(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``ViewBrokerStatsData``: a ``BrokerStatsData`` of the item's minute, hour and day snapshots."""
        name = request.field("statsName")
        key = request.field("statsKey")
        item = self.broker.stats.item(name, key)
        if item is None:
            return request.response(ResponseCode.SYSTEM_ERROR,
                                    remark=f"The stats <{_java_str(name)}> <{_java_str(key)}> not exist")
        body = {
            "statsDay": _stats_item_json(StatsItem.snapshot(item.day)),
            "statsHour": _stats_item_json(StatsItem.snapshot(item.hour)),
            "statsMinute": _stats_item_json(StatsItem.snapshot(item.minute)),
        }
        return request.response(ResponseCode.SUCCESS, body=dumps_java(body))

    # ---------------------------------------------------------------------------------------- transactions
    def resume_check_half_message(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``resumeCheckHalfMessage``: the message at the id's offset, decoded as ``MessageDecoder.decode`` does
        (body inflated, sysFlag kept), appended to the half topic's queue 0 with TRANSACTION_CHECK_TIMES=0."""
        broker = self.broker
        msg_id = request.field("msgId")
        try:
            if msg_id is None:
                raise ValueError("no msgId")
            _host, _port, offset = decode_offset_message_id(msg_id)
            data = broker.store.look_message_bytes(offset)
            if data is None:
                raise ValueError("no message at the offset")
            msg, _size = decode_stored_message(data, 0, broker_name=broker.name)
        except ValueError:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=_RESUME_FAILED)
        properties = dict(msg.properties)
        properties[Property.TRANSACTION_CHECK_TIMES] = "0"
        result = broker.put_message(MessageToStore(
            topic=TRANS_HALF_TOPIC,
            queue_id=0,
            body=msg.body,
            flag=msg.flag,
            properties=properties,
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            reconsume_times=msg.reconsume_times,
        ))
        if result is None or result.status is not PutMessageStatus.PUT_OK:
            return request.response(ResponseCode.SYSTEM_ERROR,
                                    remark="Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")
        return request.response(ResponseCode.SUCCESS)

    # -------------------------------------------------------------------------------------------------- ACL
    def update_and_create_acl_config(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``updateAndCreateAccessConfig`` without an access validator: UPDATE_AND_CREATE_ACL_CONFIG_FAILED."""
        return request.response(ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED, remark=ACL_UPDATE_REMARK)

    def delete_acl_config(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``deleteAccessConfig`` without an access validator: DELETE_ACL_CONFIG_FAILED."""
        return request.response(ResponseCode.DELETE_ACL_CONFIG_FAILED, remark=ACL_DELETE_REMARK)

    def update_global_white_addrs_config(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``updateGlobalWhiteAddrsConfig`` without an access validator: UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED."""
        return request.response(ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED, remark=ACL_WHITE_ADDRS_REMARK)

    def get_broker_cluster_acl_info(self, request: RemotingCommand, channel: Channel) -> None:
        """``getBrokerAclConfigVersion`` without an access validator: the NullPointerException is caught and logged,
        the processor returns null, and the request is never answered (the caller times out)."""
        return None
