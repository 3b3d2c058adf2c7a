"""Send retry: the clause table: every rule of the area with its ID, statement and sources."""

from __future__ import annotations

from rocketspec.spec.clauses import Clause, ClauseTable

CLAUSES = ClauseTable(
    area="send_retry",
    prefix="SEND",
    clauses=(
        Clause(
            "SEND-1",
            "A send makes at most 1 + retryTimesWhenSendFailed (default 2) attempts in SYNC mode, 1 + "
            "retryTimesWhenSendAsyncFailed (default 2) in ASYNC mode (retries made by the response "
            "callback), and exactly 1 in ONEWAY mode.",
            "DefaultMQProducerImpl.sendDefaultImpl; MQClientAPIImpl.onExceptionImpl; "
            "seed 000 §发送核心代码; seed 003 §发送失败时的重试次数",
        ),
        Clause(
            "SEND-2",
            "One sendMsgTimeout budget (default 3000 ms) covers all attempts of a send: after selecting a "
            "queue, an attempt is made only if the time spent since the send began is <= the budget; "
            "otherwise a SYNC send stops with RemotingTooMuchRequestException (call timeout) unless it holds"
            " a SendResult (SEND-6).",
            "DefaultMQProducerImpl.sendDefaultImpl (timeout < costTime); seed 000 §发送核心代码",
        ),
        Clause(
            "SEND-3",
            "In SYNC mode a RemotingException or MQClientException from an attempt is retried; an "
            "InterruptedException is thrown at once, even when a SendResult is held.",
            "DefaultMQProducerImpl.sendDefaultImpl; seed 000 §发送核心代码",
        ),
        Clause(
            "SEND-4",
            "In SYNC mode a broker error response is retried only if its code is in retryResponseCodes "
            "(TOPIC_NOT_EXIST, SERVICE_NOT_AVAILABLE, SYSTEM_ERROR, NO_PERMISSION, NO_BUYER_ID, "
            "NOT_IN_CURRENT_UNIT); any other code ends the send, returning a held SendResult or else "
            "throwing MQBrokerException.",
            "DefaultMQProducerImpl.sendDefaultImpl; DefaultMQProducer.retryResponseCodes; "
            "seed 000 §发送核心代码",
            versions="4.3.1-4.9.1: the six codes are a fixed switch; 4.9.2+: the set is configurable "
            "(addRetryResponseCode), same default",
        ),
        Clause(
            "SEND-5",
            "A send response maps SUCCESS to SEND_OK, FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT and "
            "SLAVE_NOT_AVAILABLE to the SendStatus of the same name, and any other code to "
            "MQBrokerException.",
            "MQClientAPIImpl.processSendResponse",
        ),
        Clause(
            "SEND-6",
            "A SYNC attempt whose SendStatus is not SEND_OK ends the send with that result unless "
            "retryAnotherBrokerWhenNotStoreOK (default false); then the result is held, the next attempt is "
            "made, and the last held result is returned when attempts or budget run out or a non-retried "
            "broker error follows.",
            "DefaultMQProducerImpl.sendDefaultImpl; DefaultMQProducer.retryAnotherBrokerWhenNotStoreOK; seed"
            " 000 §发送核心代码",
        ),
        Clause(
            "SEND-7",
            "In ASYNC mode an attempt that fails without a response (send failure, timeout) is retried from "
            "the callback while attempts remain; a broker error response ends the send (onException) and a "
            "non-OK SendStatus is delivered to onSuccess; a retry whose budget is spent sends no request.",
            "MQClientAPIImpl.sendMessageAsync, onExceptionImpl; NettyRemotingClient.invokeAsync; seed 003 "
            "§异步发送重试次数代码块",
            versions="4.3.1-4.9.2: an interrupted or over-budget retry ends the send at once; 4.9.3+: every "
            "exception of invokeAsync counts as a failed attempt (isolation fault item on the retry"
            " broker) and is retried while attempts remain",
        ),
        Clause(
            "SEND-8",
            "An ASYNC retry goes to the broker of a queue selected with the failed attempt's broker as last "
            "broker, reusing the first request and so its queue id.",
            "MQClientAPIImpl.onExceptionImpl (same RemotingCommand, new opaque)",
        ),
        Clause(
            "SEND-9",
            "A ONEWAY send makes one attempt and has no response: it is sent once written, and an exception "
            "ends it (InterruptedException thrown, any other as MQClientException).",
            "DefaultMQProducerImpl.sendDefaultImpl; MQClientAPIImpl.sendMessage (invokeOneway)",
        ),
        Clause(
            "SEND-10",
            "When attempts run out after retried failures, a SYNC or ONEWAY send returns a held SendResult "
            "or throws MQClientException \"Send [n] times, still failed\" carrying the last failure; an "
            "ASYNC send passes the last failure to onException.",
            "DefaultMQProducerImpl.sendDefaultImpl; MQClientAPIImpl.onExceptionImpl",
        ),
        Clause(
            "SEND-11",
            "The round-robin counter (ThreadLocalIndex, random start) advances by one per call and the call "
            "returns the new value made non-negative: & 0x7FFFFFFF (4.9.4+), Math.abs (4.9.0-4.9.3, so "
            "Integer.MIN_VALUE stays negative), or stored as Math.abs(value + 1) clamped at 0 (4.3.1).",
            "ThreadLocalIndex.incrementAndGet; seed 000 §选择队列",
            versions="4.3.1: getAndIncrement, which despite its name returns the new value; 4.9.0-4.9.3: "
            "incrementAndGet returning Math.abs; 4.9.4+: incrementAndGet masked with 0x7FFFFFFF",
        ),
        Clause(
            "SEND-12",
            "Plain round robin takes the queue at position Math.abs(next) % N (0 if negative) of the topic's"
            " queue list, N its length.",
            "TopicPublishInfo.selectOneMessageQueue(); seed 000 §选择队列; seed 003 §随机发送",
        ),
        Clause(
            "SEND-13",
            "With sendLatencyFaultEnable off and a previous broker, the first of N probes whose queue is on "
            "another broker is taken, else one more plain round robin (SEND-12); without a previous broker, "
            "plain round robin.",
            "TopicPublishInfo.selectOneMessageQueue(String); MQFaultStrategy.selectOneMessageQueue; seed 000"
            " §选择队列",
            versions="4.3.1: one counter call, probes at consecutive positions from it; 4.9.0+: one counter "
            "call per probe",
        ),
        Clause(
            "SEND-14",
            "Only with sendLatencyFaultEnable (default false) does an attempt record the fault item of its "
            "broker: latency and start = now + notAvailableDuration(30000 if isolation else latency); "
            "isolation for exceptions and error responses, none for a SendStatus answer, a written oneway, "
            "an ASYNC dispatch or an interruption that ends the send.",
            "MQFaultStrategy.updateFaultItem; LatencyFaultToleranceImpl.updateFaultItem; "
            "DefaultMQProducerImpl.sendDefaultImpl; MQClientAPIImpl.sendMessageAsync; "
            "seed 003 §发送Broker容错处理",
        ),
        Clause(
            "SEND-15",
            "notAvailableDuration(latency) is notAvailableDuration[i] for the highest i with latency >= "
            "latencyMax[i] (latencyMax 50, 100, 550, 1000, 2000, 3000, 15000 ms; durations 0, 0, 30000, "
            "60000, 120000, 180000, 600000 ms), and 0 below 50 ms.",
            "MQFaultStrategy.computeNotAvailableDuration; seed 000 §latencyMax与notAvailableDuration对应表",
        ),
        Clause(
            "SEND-16",
            "A broker with no fault item is available; one with an item is available iff now - start >= 0.",
            "LatencyFaultToleranceImpl.isAvailable, FaultItem.isAvailable; seed 003 §发送时的容错判断",
        ),
        Clause(
            "SEND-17",
            "With sendLatencyFaultEnable on, one counter call gives index and the queues at "
            "Math.abs(index++) % N (0 if negative) are probed N times; the first on an available broker is "
            "taken.",
            "MQFaultStrategy.selectOneMessageQueue; seed 000 §选择队列",
            versions="4.3.1: a probed queue is taken only if also no previous broker is given or it is on "
            "the previous broker; 4.9.0+: the previous broker is ignored",
        ),
        Clause(
            "SEND-18",
            "When no probe is available, pickOneAtLeast sorts the fault items (available first, lower "
            "latency, earlier start; ties in no set order), and takes the first if fewer than 2 items, else "
            "item whichItemWorst.next % (count / 2).",
            "LatencyFaultToleranceImpl.pickOneAtLeast, FaultItem.compareTo; seed 000 §pickOneAtLeast",
            versions="4.3.1-4.9.3: the items are shuffled before the stable sort; 4.9.4+: ConcurrentHashMap "
            "order",
        ),
        Clause(
            "SEND-19",
            "If the picked broker has writeQueueNums > 0 the result is (topic, broker, next % "
            "writeQueueNums) after one plain round robin; otherwise its item is removed and plain round "
            "robin decides; any exception also falls back to plain round robin.",
            "MQFaultStrategy.selectOneMessageQueue; TopicPublishInfo.getQueueIdByBroker",
            versions="4.3.1-4.9.7: getQueueIdByBroker ignores permissions and the fallback rewrites the "
            "round-robin queue in the topic's queue list; 4.9.8: writable queue data only, a new "
            "queue is returned",
        ),
        Clause(
            "SEND-20",
            "Each attempt of a send selects with the broker of the previous attempt of the same send as last"
            " broker; a new send starts with none, while the counters and fault table carry over.",
            "DefaultMQProducerImpl.sendDefaultImpl (lastBrokerName); seed 000 §故障延迟机制",
        ),
        Clause(
            "SEND-21",
            "A finished send (result returned, exception thrown or callback called) makes no further "
            "attempt.",
            "DefaultMQProducerImpl.sendDefaultImpl; MQClientAPIImpl.onExceptionImpl",
        ),
        Clause(
            "SEND-22",
            "The topic's queue list is the orderTopicConf entries in order if set, else for each queue data "
            "sorted by broker name that is writable and whose broker has a master, queue ids "
            "0..writeQueueNums-1.",
            "MQClientInstance.topicRouteData2TopicPublishInfo; seed 000 §TopicPublishInfo",
        ),
        Clause(
            "SEND-23",
            "A send to a topic whose queue list is empty (a route with no writable queue, or none at all) fails "
            "at once with 'No route info of this topic' and makes no attempt; a route that exists, even without a "
            "writable queue, is not replaced by the default topic's.",
            "DefaultMQProducerImpl.sendDefaultImpl / tryToFindTopicPublishInfo (isHaveTopicRouterInfo)",
        ),
        Clause(
            "SEND-24",
            "Before looking for a route the producer refuses a message whose topic is blank (Java's whitespace), "
            "longer than 127 UTF-16 units, holds a character outside %|a-zA-Z0-9_- or is one it may not send to "
            "(in that order, code -1), or whose body is null, empty or over maxMessageSize (MESSAGE_ILLEGAL); no "
            "attempt is made.",
            "Validators.checkMessage, checkTopic, isNotAllowedSendTopic; DefaultMQProducerImpl.sendDefaultImpl",
        ),
        Clause(
            "SEND-25",
            "Under a namespace (ClientConfig.namespace) a topic or group name is wrapped as namespace%name after its "
            "%RETRY% or %DLQ% prefix, if any; an empty namespace or name, a system topic (the client's TopicValidator "
            "set, rmq_sys_*), a system group (CID_RMQ_SYS_*) and a name already carrying namespace% are left as they "
            "are. Unwrapping removes everything up to the first % after the prefix, keeping the prefix, only from a "
            "name that carries namespace% there and is not a system resource; any other name is left as it is.",
            "NamespaceUtil.wrapNamespace, withoutNamespace(String, String), isAlreadyWithNamespace, isSystemResource; "
            "ClientConfig.withNamespace, withoutNamespace",
        ),
        Clause(
            "SEND-26",
            "A producer with a namespace wraps its group at start and a message's topic (SEND-25) before the checks of "
            "SEND-24, so the checks, the route lookup and every attempt's request (the topic the broker stores) see "
            "the wrapped topic; the SendResult's queue names the topic unwrapped again.",
            "DefaultMQProducer.start, send; DefaultMQProducerImpl.sendDefaultImpl, sendKernelImpl; "
            "MQClientAPIImpl.processSendResponse",
        ),
        Clause(
            "SEND-27",
            "A send to a given queue (send(msg, mq), or the queue a MessageQueueSelector returns, sendSelectImpl) "
            "makes one sendKernelImpl attempt to that queue (its topic wrapped in the namespace): the round-robin "
            "counters are not used and a SYNC or ONEWAY attempt records no fault item; a SYNC send returns the "
            "attempt's SendResult whatever its status and throws its exception as is (no retry, no 'Send [n] times'); "
            "an ASYNC send's failures without a response are retried by the callback on the same broker and queue "
            "(no topic publish info), up to retryTimesWhenSendAsyncFailed, and no dispatch is recorded. After the "
            "message checks (SEND-24), send(msg, mq) refuses a queue of another topic ('message's topic not equal "
            "mq's topic', no route lookup); sendSelectImpl looks the route up ('No route info for this topic, ' when "
            "its queue list is empty) and fails with 'select message queue threw exception.' when the selector "
            "throws or, under a namespace, returns null (queueWithNamespace(null)), and with 'select message queue "
            "return null.' when it returns null without one.",
            "DefaultMQProducerImpl.send(Message, MessageQueue, ...), sendSelectImpl, sendKernelImpl; "
            "ClientConfig.queueWithNamespace; MQClientAPIImpl.sendMessageAsync, onExceptionImpl (topicPublishInfo "
            "null)",
        ),
        Clause(
            "SEND-28",
            "SelectMessageQueueByHash selects the queue at Math.abs(arg.hashCode() % n) of the n queues it is given "
            "(Java's truncating %).",
            "SelectMessageQueueByHash.select",
        ),
        Clause(
            "SEND-29",
            "send(Collection) builds a MessageBatch: an empty batch, a message with a delay level, one on a %RETRY% "
            "topic, messages of different topics or waitStoreMsgOK, or a message the checks of SEND-24 refuse (its "
            "topic outside the namespace) fail with MQClientException 'Failed to initiate the MessageBatch' (code -1) "
            "and no attempt; otherwise the batch is sent like one message (SEND-1..26) whose topic is the first "
            "message's wrapped in the namespace and whose body is the encoded batch (per message 20 bytes of header, "
            "the body, 2 bytes and the properties text), checked again by SEND-24.",
            "DefaultMQProducer.send(Collection), batch; MessageBatch.generateFromList, encode; "
            "MessageDecoder.encodeMessages",
        ),
    ),
)
