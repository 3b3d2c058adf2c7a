"""The remoting layer every request rides on: the frame on the wire and the request/response pairing.

Follows RocketMQ 4.9.8 ``RemotingCommand`` (``encode``, ``decode``, ``markResponseType``, ``markOnewayRPC``),
``RocketMQSerializable`` (the binary header), ``RemotingSerializable`` (the JSON header, fastjson), ``NettyDecoder``
(the 16 MiB frame limit) and ``NettyRemotingAbstract`` (``processRequestCommand`` answers in the request's opaque and
serialize type; ``processResponseCommand`` matches a response to the waiting request by opaque, once).

Two parts. :func:`parse_frame` reads a frame the way a 4.9.8 peer does and is the oracle a codec is held to: the
fields it yields are what the peer acts on. The machine is one connection: a client sends requests (oneway or not)
under opaques, the server answers, the client may give up waiting (timeout); its invariants say which responses a
caller may ever see. Abstractions: one connection, at most :data:`MAX_OPAQUES` requests, payloads left out (the
frame oracle covers them).

The area is a package: ``clauses``, ``oracles``, ``machine``, ``invariants`` (see ``docs/spec-authoring.md``);
every public name is importable from here."""

from __future__ import annotations

from rocketspec.spec.remoting.clauses import (
    CLAUSES,
)
from rocketspec.spec.remoting.invariants import (
    INVARIANTS,
    STEP_INVARIANTS,
    model,
)
from rocketspec.spec.remoting.machine import (
    TRANSITIONS,
    Action,
    Bounds,
    Call,
    CallerTimesOut,
    Config,
    ConnectionState,
    RequestArrives,
    RequestSent,
    ResponseArrives,
    ServerAnswers,
    call_of,
    enabled,
    step,
)
from rocketspec.spec.remoting.oracles import (
    MAX_OPAQUES,
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    BatchedMessage,
    Frame,
    Refused,
    StoredMessage,
    answers,
    fast_failure_answer,
    idle_closes,
    message_id_offset,
    offset_message_id,
    overload_answer,
    parse_batch_body,
    parse_frame,
    parse_properties,
    parse_stored_messages,
    properties_text,
    serialize_type_written,
    unknown_code_answer,
    vip_channel_answer,
)

__all__ = [
    "CLAUSES",
    "INVARIANTS",
    "MAX_OPAQUES",
    "NAME_VALUE_SEPARATOR",
    "PROPERTY_SEPARATOR",
    "STEP_INVARIANTS",
    "TRANSITIONS",
    "Action",
    "BatchedMessage",
    "Bounds",
    "Call",
    "CallerTimesOut",
    "Config",
    "ConnectionState",
    "Frame",
    "Refused",
    "RequestArrives",
    "RequestSent",
    "ResponseArrives",
    "ServerAnswers",
    "StoredMessage",
    "answers",
    "call_of",
    "enabled",
    "fast_failure_answer",
    "idle_closes",
    "message_id_offset",
    "model",
    "offset_message_id",
    "overload_answer",
    "parse_batch_body",
    "parse_frame",
    "parse_properties",
    "parse_stored_messages",
    "properties_text",
    "serialize_type_written",
    "step",
    "unknown_code_answer",
    "vip_channel_answer",
]
