"""The broker's runtime and configuration admin requests (``AdminBrokerProcessor`` of 4.9.8): what ``mqadmin
brokerStatus``, ``clusterList``, ``getBrokerConfig`` and ``updateBrokerConfig`` send.

- GET_BROKER_RUNTIME_INFO answers a ``KVTable`` with the key set of a 4.9.8 broker (``prepareRuntimeInfo`` and the
  store's ``getRuntimeInfo``). Values come from this broker where it has them (version, boot time and uptime, commit
  log offsets, earliest message time, messages stored, schedule offsets, disk usage of the data directory); thread
  pool sizes are RocketMQ's configured capacities with empty queues, and the TPS / latency statistics, which the
  reference broker does not sample, read 0.
- GET_BROKER_CONFIG answers every property of a 4.9.8 broker (``BrokerConfig``, ``NettyServerConfig``,
  ``NettyClientConfig``, ``MessageStoreConfig``) as ``key=value`` lines, with this broker's values for the settings
  it has (``BrokerConfig`` fields mapped to their Java names) and RocketMQ's defaults for the rest; the header
  field ``version`` is the configuration's data version.
- UPDATE_BROKER_CONFIG takes a properties body. Black-listed keys are NO_PERMISSION; unknown keys are ignored; a
  known key takes a value that parses as its Java type (``MixAll.properties2Object``; others are ignored). Settings
  the reference broker has change at once; ``brokerPermission`` also bumps the topic data version and re-registers
  with the name servers before the answer. Other settings are only reported back, as in Java for the many that are
  read once at start-up.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import Any

from rocketspec.refimpl.broker.config_settings import BROKER_SETTINGS
from rocketspec.refimpl.broker.config_settings import LIVE_SETTINGS as _LIVE
from rocketspec.refimpl.broker.services import BrokerServices
from rocketspec.refimpl.properties import parse_properties
from rocketspec.refimpl.remoting import Channel, RemotingCommand
from rocketspec.refimpl.route import dumps_java
from rocketspec.refimpl.runtime import when_all
from rocketspec.refimpl.store import FileDisk
from rocketspec.spec.protocol import VERSION_V4_9_8, RequestCode, ResponseCode, version_desc

# Every property a 4.9.8 broker reports, with its default (machine-specific ones blank: filled from the broker).
JAVA_DEFAULTS: dict[str, str] = {
    "accessMessageInMemoryMaxRatio": "40",
    "aclEnable": "false",
    "adminBrokerThreadPoolNums": "16",
    "autoCreateSubscriptionGroup": "true",
    "autoCreateTopicEnable": "true",
    "autoDeleteUnusedStats": "false",
    "bitMapLengthConsumeQueueExt": "112",
    "brokerClusterName": "DefaultCluster",
    "brokerFastFailureEnable": "true",
    "brokerIP1": "127.0.0.1",
    "brokerIP2": "",
    "brokerId": "0",
    "brokerName": "broker-a",
    "brokerPermission": "6",
    "brokerRole": "ASYNC_MASTER",
    "brokerTopicEnable": "true",
    "channelNotActiveInterval": "60000",
    "checkCRCOnRecover": "true",
    "cleanFileForciblyEnable": "true",
    "cleanResourceInterval": "10000",
    "clientAsyncSemaphoreValue": "65535",
    "clientCallbackExecutorThreads": "2",
    "clientChannelMaxIdleTimeSeconds": "120",
    "clientCloseSocketIfTimeout": "true",
    "clientManageThreadPoolNums": "32",
    "clientManagerThreadPoolQueueCapacity": "1000000",
    "clientOnewaySemaphoreValue": "65535",
    "clientPooledByteBufAllocatorEnable": "false",
    "clientSocketRcvBufSize": "0",
    "clientSocketSndBufSize": "0",
    "clientWorkerThreads": "4",
    "clusterTopicEnable": "true",
    "commercialBaseCount": "1",
    "commercialBigCount": "1",
    "commercialEnable": "true",
    "commercialTimerCount": "1",
    "commercialTransCount": "1",
    "commitCommitLogLeastPages": "4",
    "commitCommitLogThoroughInterval": "200",
    "commitIntervalCommitLog": "200",
    "compressedRegister": "false",
    "configBlackList": "configBlackList;brokerConfigPath",
    "connectTimeoutMillis": "3000",
    "consumerFallbehindThreshold": "17179869184",
    "consumerManageThreadPoolNums": "32",
    "consumerManagerThreadPoolQueueCapacity": "1000000",
    "debugLockEnable": "false",
    "defaultQueryMaxNum": "32",
    "defaultTopicQueueNums": "8",
    "deleteCommitLogFilesInterval": "100",
    "deleteConsumeQueueFilesInterval": "100",
    "deleteWhen": "04",
    "destroyMapedFileIntervalForcibly": "120000",
    "disableConsumeIfConsumerReadSlowly": "false",
    "diskFallRecorded": "true",
    "diskMaxUsedSpaceRatio": "75",
    "duplicationEnable": "false",
    "enableCalcFilterBitMap": "false",
    "enableConsumeQueueExt": "false",
    "enableDLegerCommitLog": "false",
    "enableDetailStat": "true",
    "enableLmq": "false",
    "enableMultiDispatch": "false",
    "enablePropertyFilter": "false",
    "enableScheduleAsyncDeliver": "false",
    "enableScheduleMessageStats": "true",
    "endTransactionPoolQueueCapacity": "100000",
    "endTransactionThreadPoolNums": "12",
    "expectConsumerNumUseFilter": "32",
    "fastFailIfNoBufferInStorePool": "false",
    "fetchNamesrvAddrByAddressServer": "false",
    "fileReservedTime": "72",
    "filterDataCleanTimeSpan": "86400000",
    "filterServerNums": "0",
    "filterSupportRetry": "false",
    "flushCommitLogLeastPages": "4",
    "flushCommitLogThoroughInterval": "10000",
    "flushCommitLogTimed": "true",
    "flushConsumeQueueLeastPages": "2",
    "flushConsumeQueueThoroughInterval": "60000",
    "flushConsumerOffsetHistoryInterval": "60000",
    "flushConsumerOffsetInterval": "5000",
    "flushDelayOffsetInterval": "10000",
    "flushDiskType": "ASYNC_FLUSH",
    "flushIntervalCommitLog": "500",
    "flushIntervalConsumeQueue": "1000",
    "flushLeastPagesWhenWarmMapedFile": "4096",
    "forceRegister": "true",
    "haHousekeepingInterval": "20000",
    "haListenPort": "10912",
    "haSendHeartbeatInterval": "5000",
    "haSlaveFallbehindMax": "268435456",
    "haTransferBatchSize": "32768",
    "heartbeatThreadPoolNums": "2",
    "heartbeatThreadPoolQueueCapacity": "50000",
    "highSpeedMode": "false",
    "isEnableBatchPush": "false",
    "isolateLogEnable": "false",
    "listenPort": "10911",
    "longPollingEnable": "true",
    "mappedFileSizeCommitLog": "1073741824",
    "mappedFileSizeConsumeQueue": "6000000",
    "mappedFileSizeConsumeQueueExt": "50331648",
    "maxDelayTime": "40",
    "maxErrorRateOfBloomFilter": "20",
    "maxHashSlotNum": "5000000",
    "maxIndexNum": "20000000",
    "maxLmqConsumeQueueNum": "20000",
    "maxMessageSize": "4194304",
    "maxMsgsNumBatch": "64",
    "maxTransferBytesOnMessageInDisk": "65536",
    "maxTransferBytesOnMessageInMemory": "262144",
    "maxTransferCountOnMessageInDisk": "8",
    "maxTransferCountOnMessageInMemory": "32",
    "messageDelayLevel": "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
    "messageIndexEnable": "true",
    "messageIndexSafe": "false",
    "messageStorePlugIn": "",
    "msgTraceTopicName": "RMQ_SYS_TRACE_TOPIC",
    "namesrvAddr": "",
    "notifyConsumerIdsChangedEnable": "true",
    "offsetCheckInSlave": "false",
    "osPageCacheBusyTimeOutMills": "1000",
    "processReplyMessageThreadPoolNums": "20",
    "pullMessageThreadPoolNums": "20",
    "pullThreadPoolQueueCapacity": "100000",
    "putMessageFutureThreadPoolNums": "2",
    "putMsgIndexHightWater": "600000",
    "putThreadPoolQueueCapacity": "10000",
    "queryMessageThreadPoolNums": "10",
    "queryThreadPoolQueueCapacity": "20000",
    "redeleteHangedFileInterval": "120000",
    "regionId": "DefaultRegion",
    "registerBrokerTimeoutMills": "6000",
    "registerNameServerPeriod": "30000",
    "rejectTransactionMessage": "false",
    "replyThreadPoolQueueCapacity": "10000",
    "rocketmqHome": "",
    "scheduleAsyncDeliverMaxPendingLimit": "2000",
    "scheduleAsyncDeliverMaxResendNum2Blocked": "3",
    "sendMessageThreadPoolNums": "2",
    "sendThreadPoolQueueCapacity": "10000",
    "serverAsyncSemaphoreValue": "64",
    "serverCallbackExecutorThreads": "0",
    "serverChannelMaxIdleTimeSeconds": "120",
    "serverOnewaySemaphoreValue": "256",
    "serverPooledByteBufAllocatorEnable": "true",
    "serverSelectorThreads": "3",
    "serverSocketBacklog": "1024",
    "serverSocketRcvBufSize": "0",
    "serverSocketSndBufSize": "0",
    "serverWorkerThreads": "8",
    "shortPollingTimeMills": "1000",
    "slaveReadEnable": "false",
    "slaveTimeout": "3000",
    "startAcceptSendRequestTimeStamp": "0",
    "storePathCommitLog": "",
    "storePathRootDir": "",
    "storeReplyMessageEnable": "true",
    "syncFlushTimeout": "5000",
    "traceOn": "true",
    "traceTopicEnable": "false",
    "transactionCheckInterval": "60000",
    "transactionCheckMax": "15",
    "transactionTimeOut": "6000",
    "transferMsgByHeap": "true",
    "transientStorePoolEnable": "false",
    "transientStorePoolSize": "5",
    "useEpollNativeSelector": "false",
    "useReentrantLockWhenPutMessage": "true",
    "useTLS": "false",
    "waitTimeMillsInHeartbeatQueue": "31000",
    "waitTimeMillsInPullQueue": "5000",
    "waitTimeMillsInSendQueue": "200",
    "waitTimeMillsInTransactionQueue": "3000",
    "warmMapedFileEnable": "false",
    "writeBufferHighWaterMark": "0",
    "writeBufferLowWaterMark": "0",
}
# String properties whose default looks like a number (kept as text, not parsed).
_STRING_KEYS = frozenset({"deleteWhen", "messageDelayLevel", "messageStorePlugIn", "brokerIP1", "brokerIP2",
                          "namesrvAddr", "regionId", "msgTraceTopicName", "configBlackList"})
# AdminBrokerProcessor.initConfigBlackList: always refused, plus BrokerConfig.configBlackList's entries.
_ALWAYS_BLACK = ("brokerConfigPath", "rocketmqHome", "configBlackList")


def _java_bool(text: str) -> bool:
    return text.strip().lower() == "true"


def _java_int(text: str) -> int:
    """``Integer.parseInt`` / ``Long.parseLong``: an optional sign and digits, nothing else."""
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError(text)
    return int(text)


def _human_bytes(size: int) -> str:
    """``MixAll.humanReadableByteCount(bytes, si=false)``."""
    if size < 1024:
        return f"{size} B"
    exp = 0
    value = float(size)
    while value >= 1024 and exp < 6:
        value /= 1024
        exp += 1
    return f"{size / 1024 ** exp:.1f} {'KMGTPE'[exp - 1]}iB"


class RuntimeAdmin:
    """Runtime-info and configuration handlers of one broker; ``handlers()`` goes into its dispatch table."""

    def __init__(self, broker: BrokerServices) -> None:
        self.broker = broker
        self.boot_ms = broker.runtime.now_ms()
        # Configuration.dataVersion and the properties only reported (no live counterpart here).
        self.version_counter = 0
        self.version_ms = self.boot_ms
        self.reported: dict[str, str] = {}

    def handlers(self) -> dict[int, Any]:
        return {
            RequestCode.GET_BROKER_RUNTIME_INFO: self.get_runtime_info,
            RequestCode.GET_BROKER_CONFIG: self.get_broker_config,
            RequestCode.UPDATE_BROKER_CONFIG: self.update_broker_config,
        }

    # ---------------------------------------------------------------------------------------------- runtime info
    def _root(self) -> str:
        disk = self.broker.disk
        return disk.root if isinstance(disk, FileDisk) else os.getcwd()

    def runtime_info(self) -> dict[str, str]:
        """``prepareRuntimeInfo``: the key set of a 4.9.8 master, with this broker's values."""
        broker = self.broker
        store = broker.store
        now = broker.runtime.now_ms()
        up = max(0, now - self.boot_ms)
        messages = store.stats()["messages"]
        size_total = store.stats()["bytes"]
        root = self._root()
        try:
            usage = shutil.disk_usage(root)
            ratio = f"{usage.used / usage.total:.2f}" if usage.total else "0.0"
            capacity = f"Total : {_human_bytes(usage.total)}, Free : {_human_bytes(usage.free)}."
        except OSError:
            ratio, capacity = "-1.0", "Total : 0 B, Free : 0 B."
        info = {
            "bootTimestamp": str(self.boot_ms),
            "runtime": (f"[ {up // 86_400_000} days, {up % 86_400_000 // 3_600_000} hours, "
                        f"{up % 3_600_000 // 60_000} minutes, {up % 60_000 // 1000} seconds ]"),
            "putMessageEntireTimeMax": "0",
            "putMessageTimesTotal": str(max(1, messages)),
            "putMessageFailedTimes": "0",
            "putMessageSizeTotal": str(size_total),
            "putMessageDistributeTime": "[<=0ms]:0 [0~10ms]:0 [10~50ms]:0 [50~100ms]:0 [100~200ms]:0 [200~500ms]:0 "
                                        "[500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 ",
            "putMessageAverageSize": str(size_total / max(1, messages)),
            "dispatchMaxBuffer": "0",
            "getMessageEntireTimeMax": "0",
            "putTps": "0.0 0.0 0.0",
            "getFoundTps": "0.0 0.0 0.0",
            "getMissTps": "0.0 0.0 0.0",
            "getTotalTps": "0.0 0.0 0.0",
            "getTransferedTps": "0.0 0.0 0.0",
            "putLatency99": "0.00",
            "putLatency999": "0.00",
            "commitLogDiskRatio": ratio,
            f"commitLogDiskRatio_{os.path.join(root, 'commitlog')}": ratio,
            "consumeQueueDiskRatio": ratio,
            "commitLogMinOffset": str(store.commit_log_min_offset() if messages else -1),
            "commitLogMaxOffset": str(store.commit_log_max_offset()),
            "brokerVersionDesc": version_desc(VERSION_V4_9_8),
            "brokerVersion": str(VERSION_V4_9_8),
            "msgPutTotalYesterdayMorning": "0",
            "msgPutTotalTodayMorning": "0",
            "msgPutTotalTodayNow": str(messages),
            "msgGetTotalYesterdayMorning": "0",
            "msgGetTotalTodayMorning": "0",
            "msgGetTotalTodayNow": "0",
            "sendThreadPoolQueueSize": "0",
            "sendThreadPoolQueueCapacity": JAVA_DEFAULTS["sendThreadPoolQueueCapacity"],
            "pullThreadPoolQueueSize": "0",
            "pullThreadPoolQueueCapacity": JAVA_DEFAULTS["pullThreadPoolQueueCapacity"],
            "queryThreadPoolQueueSize": "0",
            "queryThreadPoolQueueCapacity": JAVA_DEFAULTS["queryThreadPoolQueueCapacity"],
            "EndTransactionQueueSize": "0",
            "EndTransactionThreadPoolQueueCapacity": JAVA_DEFAULTS["endTransactionPoolQueueCapacity"],
            "dispatchBehindBytes": "0",
            "pageCacheLockTimeMills": "0",
            "sendThreadPoolQueueHeadWaitTimeMills": "0",
            "pullThreadPoolQueueHeadWaitTimeMills": "0",
            "queryThreadPoolQueueHeadWaitTimeMills": "0",
            "earliestMessageTimeStamp": str(store.earliest_message_time()),
            "startAcceptSendRequestTimeStamp": "0",
            "remainTransientStoreBufferNumbs": "2147483647",
            "remainHowManyDataToFlush": "0 B",
            "commitLogDirCapacity": capacity,
        }
        # ScheduleMessageService.buildRunningStats: "offset,maxOffset" per delay level that has an offset.
        for level, offset in sorted(broker.schedule.offset_table.items()):
            high = store.max_offset("SCHEDULE_TOPIC_XXXX", level - 1)
            info[f"scheduleMessageOffset_{level}"] = f"{offset},{high}"
        return info

    def get_runtime_info(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getBrokerRuntimeInfo``: the runtime info as a ``KVTable``."""
        return request.response(ResponseCode.SUCCESS, body=dumps_java({"table": self.runtime_info()}))

    # --------------------------------------------------------------------------------------------- configuration
    def all_configs(self) -> dict[str, str]:
        """``Configuration.getAllConfigs``: RocketMQ's defaults, what was set by UPDATE_BROKER_CONFIG, and this
        broker's own settings."""
        broker = self.broker
        config = broker.config
        props = dict(JAVA_DEFAULTS)
        props.update(self.reported)
        root = broker.disk.root if isinstance(broker.disk, FileDisk) else ""
        props.update({
            "brokerName": config.broker_name,
            "brokerId": str(config.broker_id),
            "brokerIP1": config.host,
            "brokerIP2": config.host,
            "listenPort": str(config.port),
            "haListenPort": str(config.port + 1),
            "namesrvAddr": broker.namesrv_addr or "",
            "brokerRole": "ASYNC_MASTER" if config.is_master else "SLAVE",
            "storePathRootDir": root,
            "storePathCommitLog": os.path.join(root, "commitlog") if root else "",
        })
        for key, setting in BROKER_SETTINGS.items():
            props[key] = setting.show(getattr(config, setting.attr))
        return props

    def _version_json(self) -> str:
        return dumps_java({"counter": self.version_counter, "timestamp": self.version_ms}).decode("utf-8")

    def get_broker_config(self, request: RemotingCommand, channel: Channel) -> RemotingCommand:
        """``getBrokerConfig``: every property as ``key=value`` lines; ``version`` = the data version JSON."""
        body = "".join(f"{key}={value}\n" for key, value in self.all_configs().items()).encode("utf-8")
        return request.response(ResponseCode.SUCCESS, {"version": self._version_json()}, body=body)

    def update_broker_config(self, request: RemotingCommand, channel: Channel) -> RemotingCommand | None:
        """``updateBrokerConfig``: apply the properties body (see the module docstring); no body: SUCCESS."""
        broker = self.broker
        if request.body is None:
            return request.response(ResponseCode.SUCCESS)
        try:
            props = parse_properties(request.body.decode("utf-8"))
        except ValueError:  # not UTF-8, or a malformed \uxxxx escape: string2Properties answers null
            return request.response(ResponseCode.SYSTEM_ERROR, remark="string2Properties error")
        black = set(_ALWAYS_BLACK) | {k for k in self.all_configs().get("configBlackList", "").split(";") if k}
        if black & set(props):
            return request.response(ResponseCode.NO_PERMISSION, remark="Can not update config in black list.")
        for key, text in props.items():
            self._set(key, text)
        self.version_counter += 1
        self.version_ms = broker.runtime.now_ms()
        response = request.response(ResponseCode.SUCCESS)
        if "brokerPermission" not in props:
            return response
        # The permission is registered at once (registerBrokerAll(false, false, true)) before the answer.
        broker.topics.data_version.next_version(broker.runtime.now_ms())
        futures = broker.register_to_namesrv(check_order_config=False)
        if not futures:
            return response
        when_all(futures, lambda: None if request.is_oneway else channel.send_response(response))
        return None

    def _set(self, key: str, text: str) -> None:
        """``properties2Object``: a known key takes a value that parses as its type; anything else is ignored."""
        config = self.broker.config
        live = _LIVE.get(key)
        if live is not None and hasattr(config, live[0]):
            attr, parse, _show = live
            try:
                setattr(config, attr, parse(text))
            except (ValueError, TypeError):
                pass
            if attr == "file_reserved_ms":
                self.broker.store.file_reserved_ms = config.file_reserved_ms
            return
        default = JAVA_DEFAULTS.get(key)
        if default is None:
            return
        try:
            if key in _STRING_KEYS:
                value = text
            elif default in ("true", "false"):
                value = "true" if _java_bool(text) else "false"
            elif re.fullmatch(r"-?\d+", default):
                value = str(_java_int(text))
            else:
                value = text
        except ValueError:
            return
        self.reported[key] = value
