"""The configuration space the lockstep machines draw from: every setting a RocketMQ 4.9.8 user can make and a client
can observe.

Each :class:`Dimension` names one setting (RocketMQ's own name: ``messageDelayLevel``, ``pullBatchSize``, ...), the
group it belongs to (broker settings, client options, wire, topology), RocketMQ 4.9.8's default and the strategy the
machines draw it from. A lockstep machine lists the dimensions it draws (``LockstepMachine.DIMENSIONS``); each run of
it draws one value of each at its start (the configuration is part of the machine's state), the default being one
draw among many. ``tests/test_lockstep_dimensions.py`` holds the registry to the issue's list: every dimension is
drawn by some machine, and (``lockstep.run_machine``) each machine's ci run draws each of its dimensions with a value
other than the default at least once, and with the default at least once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import strategies as st

from rocketspec.refimpl.broker.config import DEFAULT_MESSAGE_DELAY_LEVEL
from rocketspec.spec.protocol import (
    COMPRESS_MSG_BODY_OVER_BYTES,
    DEFAULT_PERM,
    DEFAULT_RETRY_ANOTHER_BROKER_WHEN_NOT_STORE_OK,
    DEFAULT_RETRY_TIMES_WHEN_SEND_ASYNC_FAILED,
    DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED,
    DEFAULT_SEND_LATENCY_FAULT_ENABLE,
    DEFAULT_SEND_MSG_TIMEOUT_MS,
    MAX_MESSAGE_SIZE,
    PULL_BATCH_SIZE,
    TRANSACTION_CHECK_INTERVAL_MS,
    TRANSACTION_CHECK_MAX,
    TRANSACTION_TIMEOUT_MS,
    ConsumeFromWhere,
    MessageModel,
)

BROKER = "broker settings"
CLIENT = "client options"
WIRE = "wire"
TOPOLOGY = "topology"
GROUPS = (BROKER, CLIENT, WIRE, TOPOLOGY)


@attrs.frozen
class Dimension:
    """One setting: its name, group, RocketMQ 4.9.8's default, what the machines draw and what it is."""

    name: str
    group: str = attrs.field(validator=attrs.validators.in_(GROUPS))
    default: Any
    values: st.SearchStrategy[Any] = attrs.field(repr=False)
    what: str = ""
    # Whether a drawn value is the default (a value of several parts: all of them at their default).
    is_default: Callable[[Any, Any], bool] = attrs.field(default=lambda value, default: value == default, repr=False)


def _with_default(default: Any, *others: Any) -> st.SearchStrategy[Any]:
    """The default and the other values, the default first (what hypothesis shrinks towards)."""
    return st.sampled_from((default, *others))


#: Delay-level tables: the default, shorter ones, ones with ``h`` and ``d`` units, fewer and more levels (up to the
#: 18 queues of SCHEDULE_TOPIC_XXXX).
DELAY_TABLES = (
    DEFAULT_MESSAGE_DELAY_LEVEL,
    "1s 2s",
    "1s",
    "3s 1m 1h 1d",
    "2s 5s 10s 1m 2m 1h 2h 1d 2d",
    "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 11s 12s 13s 14s 15s 16s 17s 18s",
)

#: Per-topic queue counts as (readQueueNums, writeQueueNums): equal, more read than write, more write than read.
TOPIC_QUEUES = ((4, 4), (2, 2), (1, 1), (3, 2), (2, 3), (4, 1), (1, 3))

#: Topic permissions (PermName): read-write (the default), read only (write permission wiped), write only.
TOPIC_PERMS = (DEFAULT_PERM, 4, 2)


DIMENSIONS: dict[str, Dimension] = {d.name: d for d in (
    # ---------------------------------------------------------------------------------------- broker settings
    Dimension("topic.queueNums", BROKER, (4, 4), st.sampled_from(TOPIC_QUEUES),
              "a topic's readQueueNums and writeQueueNums (TopicConfig), equal or not"),
    Dimension("topic.perm", BROKER, DEFAULT_PERM, _with_default(*TOPIC_PERMS),
              "a topic's permission (PermName: 6 read-write, 4 read only, 2 write only)"),
    Dimension("broker.wipeWritePerm", BROKER, False, st.booleans(),
              "a broker's write permission wiped at the name server (WIPE_WRITE_PERM_OF_BROKER)"),
    Dimension("broker.messageDelayLevel", BROKER, DEFAULT_MESSAGE_DELAY_LEVEL, st.sampled_from(DELAY_TABLES),
              "MessageStoreConfig.messageDelayLevel: the delay of each level, units s, m, h, d"),
    Dimension("broker.maxMessageSize", BROKER, MAX_MESSAGE_SIZE, _with_default(MAX_MESSAGE_SIZE, 64, 200, 1024),
              "MessageStoreConfig.maxMessageSize"),
    Dimension("broker.enablePropertyFilter", BROKER, False, st.booleans(),
              "BrokerConfig.enablePropertyFilter (SQL92 subscriptions served)"),
    Dimension("broker.transactionTimeOut", BROKER, TRANSACTION_TIMEOUT_MS,
              _with_default(TRANSACTION_TIMEOUT_MS, 1_000, 3_000, 10_000), "BrokerConfig.transactionTimeOut"),
    Dimension("broker.transactionCheckInterval", BROKER, TRANSACTION_CHECK_INTERVAL_MS,
              _with_default(TRANSACTION_CHECK_INTERVAL_MS, 1_000, 5_000, 20_000),
              "BrokerConfig.transactionCheckInterval"),
    Dimension("broker.transactionCheckMax", BROKER, TRANSACTION_CHECK_MAX,
              _with_default(TRANSACTION_CHECK_MAX, 0, 1, 2, 3), "BrokerConfig.transactionCheckMax"),
    Dimension("broker.flushDiskType", BROKER, "async", _with_default("async", "sync"),
              "MessageStoreConfig.flushDiskType (ASYNC_FLUSH, SYNC_FLUSH)"),
    Dimension("broker.autoCreateTopicEnable", BROKER, True, _with_default(True, False),
              "BrokerConfig.autoCreateTopicEnable"),
    # ---------------------------------------------------------------------------------------- client options
    Dimension("consumer.messageModel", CLIENT, MessageModel.CLUSTERING,
              _with_default(MessageModel.CLUSTERING, MessageModel.BROADCASTING),
              "messageModel: clustering (remote offset store) or broadcasting (local file offset store)"),
    Dimension("consumer.orderly", CLIENT, False, st.booleans(),
              "MessageListenerConcurrently or MessageListenerOrderly"),
    Dimension("consumer.allocateMessageQueueStrategy", CLIENT, "AVG",
              _with_default("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH", "CONFIG", "MACHINE_ROOM"),
              "allocateMessageQueueStrategy"),
    Dimension("consumer.consumeFromWhere", CLIENT, (ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, None),
              st.one_of(st.sampled_from([(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, None),
                                         (ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, None),
                                         (ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, None)]),
                        st.tuples(st.just(ConsumeFromWhere.CONSUME_FROM_TIMESTAMP), st.integers(0, 10**13))),
              "consumeFromWhere, with consumeTimestamp for CONSUME_FROM_TIMESTAMP (None: half an hour ago)"),
    Dimension("consumer.kind", CLIENT, "push", _with_default("push", "litePull"),
              "DefaultMQPushConsumer or DefaultLitePullConsumer"),
    Dimension("consumer.expressionType", CLIENT, "TAG", _with_default("TAG", "SQL92"),
              "a subscription's expression type (MessageSelector.byTag / bySql)"),
    Dimension("consumer.pullBatchSize", CLIENT, PULL_BATCH_SIZE, _with_default(PULL_BATCH_SIZE, 1, 2, 3),
              "pullBatchSize"),
    Dimension("consumer.consumeMessageBatchMaxSize", CLIENT, 1, _with_default(1, 2, 3, 32),
              "consumeMessageBatchMaxSize"),
    Dimension("consumer.maxReconsumeTimes", CLIENT, -1, _with_default(-1, 0, 1, 2, 3, 17, 20),
              "maxReconsumeTimes (-1: 16 concurrent, Integer.MAX_VALUE orderly)"),
    Dimension("producer.retryTimesWhenSendFailed", CLIENT, DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED,
              _with_default(DEFAULT_RETRY_TIMES_WHEN_SEND_FAILED, 0, 1, 3), "retryTimesWhenSendFailed"),
    Dimension("producer.retryTimesWhenSendAsyncFailed", CLIENT, DEFAULT_RETRY_TIMES_WHEN_SEND_ASYNC_FAILED,
              _with_default(DEFAULT_RETRY_TIMES_WHEN_SEND_ASYNC_FAILED, 0, 1, 3), "retryTimesWhenSendAsyncFailed"),
    Dimension("producer.retryAnotherBrokerWhenNotStoreOK", CLIENT, DEFAULT_RETRY_ANOTHER_BROKER_WHEN_NOT_STORE_OK,
              st.booleans(), "retryAnotherBrokerWhenNotStoreOK"),
    Dimension("producer.sendLatencyFaultEnable", CLIENT, DEFAULT_SEND_LATENCY_FAULT_ENABLE, st.booleans(),
              "sendLatencyFaultEnable"),
    Dimension("producer.sendMsgTimeout", CLIENT, DEFAULT_SEND_MSG_TIMEOUT_MS,
              _with_default(DEFAULT_SEND_MSG_TIMEOUT_MS, 1_000, 2_000, 10_000), "sendMsgTimeout"),
    Dimension("producer.maxMessageSize", CLIENT, MAX_MESSAGE_SIZE, _with_default(MAX_MESSAGE_SIZE, 8, 64),
              "DefaultMQProducer.maxMessageSize (the producer's own body limit)"),
    Dimension("producer.compressMsgBodyOverHowmuch", CLIENT, COMPRESS_MSG_BODY_OVER_BYTES,
              _with_default(COMPRESS_MSG_BODY_OVER_BYTES, 0, 16, 100), "compressMsgBodyOverHowmuch"),
    Dimension("client.vipChannelEnabled", CLIENT, False, st.booleans(),
              "sendMessageWithVIPChannel / vipChannelEnabled (the broker's port - 2)"),
    Dimension("client.unitMode", CLIENT, False, st.booleans(), "ClientConfig.unitMode"),
    Dimension("client.namespace", CLIENT, None, _with_default(None, "ns1", "MQ_INST_1"),
              "ClientConfig.namespace: resources wrapped as namespace%name"),
    Dimension("producer.group", CLIENT, "PG", _with_default("PG", "PG_OTHER", "TXN_PG_2"),
              "the (transaction) producer group the broker checks back"),
    # ---------------------------------------------------------------------------------------- wire
    Dimension("wire.serializeType", WIRE, "json", _with_default("json", "rocketmq"),
              "RemotingCommand's serializeTypeCurrentRPC: JSON or ROCKETMQ (binary) headers"),
    Dimension("wire.flags", WIRE, "request", _with_default("request", "oneway", "response"),
              "a frame's flag bits: request (0), oneway (2) and response (1)"),
    Dimension("wire.extFields", WIRE, "ascii", _with_default("ascii", "non-ascii", "empty"),
              "ext field values: ASCII, non-ASCII text (UTF-8), empty strings"),
    # ---------------------------------------------------------------------------------------- topology
    Dimension("topology.brokers", TOPOLOGY, 1, _with_default(1, 2, 3), "master brokers (broker names)"),
    Dimension("topology.slaves", TOPOLOGY, 0, _with_default(0, 1), "slave brokers per master"),
    Dimension("topology.nameServers", TOPOLOGY, 1, _with_default(1, 2), "name servers"),
)}


def dimension(name: str) -> Dimension:
    try:
        return DIMENSIONS[name]
    except KeyError:
        raise KeyError(f"no configuration dimension {name!r}; see tests/dimensions.py") from None
