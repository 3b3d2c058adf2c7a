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
            "A frame whose length is over 16 MiB, or whose header length runs past it, is refused and the "
            "connection closed.",
            "NettyDecoder (FRAME_MAX_LENGTH 16777216); RemotingCommand.decode",
        ),
    ),
)
