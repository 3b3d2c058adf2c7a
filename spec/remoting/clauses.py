"""Remoting: the clause table: every rule of the area with its ID, statement and sources."""

from __future__ import annotations

from rocketspec.spec.clauses import Clause, ClauseTable

CLAUSES = ClauseTable(
    area="remoting",
    prefix="WIRE",
    clauses=(
        Clause(
            "WIRE-1",
            "A frame is an int32 length (of what follows it), an int32 mark whose high byte is the serialize type "
            "(0 JSON, 1 ROCKETMQ) and low 24 bits the header length, the header, then the body (the rest).",
            "RemotingCommand.encode/decode; RemotingCommand.markProtocolType",
        ),
        Clause(
            "WIRE-2",
            "A JSON header is one object: code, language (the LanguageCode name), version, opaque, flag, remark "
            "(absent when null) and extFields, a map whose values a peer reads as strings.",
            "RemotingSerializable.encode/decode (fastjson); RemotingCommand.headerDecode",
        ),
        Clause(
            "WIRE-3",
            "A ROCKETMQ header is int16 code, int8 language, int16 version, int32 opaque, int32 flag, int32 remark "
            "length and UTF-8 remark (length 0: null), int32 extFields length and entries of int16 key length, key, "
            "int32 value length, value.",
            "RocketMQSerializable.rocketMQProtocolEncode/rocketMQProtocolDecode",
        ),
        Clause(
            "WIRE-4",
            "Flag bit 0 marks a response and bit 1 a oneway request; a response carries its request's opaque and "
            "is written in its request's serialize type.",
            "RemotingCommand.markResponseType/markOnewayRPC; NettyRemotingAbstract.processRequestCommand",
        ),
        Clause(
            "WIRE-5",
            "A oneway request is never answered; another request gets at most one response, and a caller sees it "
            "only while it still waits (a response after the timeout is dropped).",
            "NettyRemotingAbstract.processResponseCommand (responseTable); invokeSyncImpl; scanResponseTable",
        ),
        Clause(
            "WIRE-6",
            "A frame over 16 MiB (its length field included), or whose header length runs past it, is refused and the "
            "connection closed.",
            "NettyDecoder (FRAME_MAX_LENGTH 16777216); RemotingCommand.decode",
        ),
        Clause(
            "WIRE-7",
            "A frame with the response bit that a server receives is taken as the response to a request of the "
            "server's own under that opaque: it is never processed as a request nor answered (one that matches no "
            "request is dropped).",
            "NettyRemotingAbstract.processMessageReceived (RESPONSE_COMMAND), processResponseCommand",
        ),
        Clause(
            "WIRE-8",
            "Each copy of a request that reaches the server is processed on its own and, unless oneway, answered "
            "under the request's opaque; the caller is given the first response that arrives while it waits, and "
            "every later one is dropped.",
            "NettyRemotingAbstract.processRequestCommand; processResponseCommand (responseTable.remove)",
        ),
        Clause(
            "WIRE-9",
            "A pull response's body is stored messages back to back, each read field by field (totalSize, magic, "
            "bodyCRC, queueId, flag, queueOffset, physicalOffset, sysFlag, bornTimestamp, bornHost 4 or 16 bytes "
            "and port, storeTimestamp, storeHost and port, reconsumeTimes, preparedTransactionOffset, bodyLength "
            "and body, int8 topic length and topic, int16 properties length and properties); reading stops at the "
            "first message that cannot be read whole.",
            "MessageDecoder.decode/decodes (clientDecode)",
        ),
        Clause(
            "WIRE-10",
            "Properties travel as one UTF-8 string of name, \\x01, value entries joined by \\x02; an entry under "
            "three characters long, or whose name or value is empty, is dropped when read, and a later entry of a "
            "name replaces an earlier one.",
            "MessageDecoder.messageProperties2String/string2messageProperties",
        ),
        Clause(
            "WIRE-11",
            "A SEND_BATCH_MESSAGE body is the messages back to back, each totalSize, magic 0, bodyCRC 0, flag, "
            "int32 body length and body, int16 properties length and properties.",
            "MessageDecoder.encodeMessage/encodeMessages/decodeMessages",
        ),
        Clause(
            "WIRE-12",
            "A request whose code a server has no processor for is answered by a broker with "
            "REQUEST_CODE_NOT_SUPPORTED and remark ' request type <code> not supported', and not answered at all "
            "by a name server.",
            "AdminBrokerProcessor.getUnknownCmdResponse (the broker's default processor); "
            "DefaultRequestProcessor.processRequest (returns null)",
        ),
        Clause(
            "WIRE-13",
            "A stored message's offset message id is the uppercase hex of its store host's address bytes, its store "
            "port as an int32 and its commit-log offset as an int64.",
            "MessageDecoder.createMessageId / decodeMessageId",
        ),
        Clause(
            "WIRE-14",
            "A broker also serves its port - 2 (the VIP channel) with every processor of its main port but "
            "PULL_MESSAGE's: a pull there is answered REQUEST_CODE_NOT_SUPPORTED with remark ' request type 11 not "
            "supported' by the default processor; any other request as on the main port.",
            "BrokerController.initialize (fastRemotingServer on listenPort - 2), registerProcessor; "
            "AdminBrokerProcessor.getUnknownCmdResponse; MixAll.brokerVIPChannel",
        ),
        Clause(
            "WIRE-15",
            "A request its executor's queue has no room for is answered at once SYSTEM_BUSY '[OVERLOAD]system busy, "
            "start flow control for a while' (a oneway one is lost); one that waited in the queue as long as its "
            "executor's limit is answered SYSTEM_BUSY '[TIMEOUT_CLEAN_QUEUE]broker busy, ...' with the time it "
            "waited and the queue's size, unprocessed; a request given room and taken in time is processed. Both "
            "answers are the server's own commands (WIRE-17).",
            "NettyRemotingAbstract.processRequestCommand (RejectedExecutionException); "
            "BrokerFastFailure.cleanExpiredRequestInQueue",
        ),
        Clause(
            "WIRE-16",
            "A server closes a connection with no traffic either way for serverChannelMaxIdleTimeSeconds "
            "(120 s by default; 0 never).",
            "NettyRemotingServer.start (IdleStateHandler(0, 0, serverChannelMaxIdleTimeSeconds)); "
            "NettyConnectManageHandler.userEventTriggered (ALL_IDLE)",
        ),
        Clause(
            "WIRE-17",
            "A command a peer creates itself, a request it sends (a broker's NOTIFY_CONSUMER_IDS_CHANGED, "
            "CHECK_TRANSACTION_STATE, GET_CONSUMER_RUNNING_INFO) or a flow-control answer (WIRE-15), is written in "
            "its own serialize type (JSON unless rocketmq.serialize.type says ROCKETMQ), whatever its peer speaks; "
            "only a processor's answer takes its request's (WIRE-4).",
            "RemotingCommand (serializeTypeConfigInThisServer, the serializeTypeCurrentRPC initializer); "
            "NettyRemotingAbstract.processRequestCommand (setSerializeTypeCurrentRPC in the processor's callback "
            "only); RequestTask.returnResponse",
        ),
        Clause(
            "WIRE-18",
            "When a client's connection closes, every caller still waiting for the response to a request sent on it "
            "is failed at once, without a response, and no response reaches it afterwards (a request may still be "
            "read and processed by the server).",
            "NettyRemotingClient.NettyConnectManageHandler.close (closeChannel, failFast); "
            "NettyRemotingAbstract.failFast/requestFail",
        ),
        Clause(
            "WIRE-19",
            "A message id is read as hex digit pairs (a character outside 0-9A-F, upper-cased, counts as -1; an odd "
            "last character is ignored): an address of 4 bytes for a 32-character id, of 16 otherwise, an int32 "
            "port, which must be 0..65535, then the int64 commit-log offset; an empty id, too few bytes or a port "
            "out of range fail the request.",
            "MessageDecoder.decodeMessageId; UtilAll.string2bytes; InetSocketAddress.checkPort",
        ),
    ),
)
