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

The area is a package: ``clauses``, ``oracles``, ``machine`` (see ``docs/spec-authoring.md``);
every public name is importable from here."""

from __future__ import annotations

from rocketspec.spec.remoting.clauses import (
    CLAUSES,
)
from rocketspec.spec.remoting.machine import (
    INVARIANTS,
    STEP_INVARIANTS,
    Action,
    Call,
    CallerTimesOut,
    ConnectionState,
    RequestSent,
    ResponseArrives,
    ServerAnswers,
    candidate_actions,
    enabled,
    model,
    step,
)
from rocketspec.spec.remoting.oracles import (
    MAX_OPAQUES,
    Frame,
    Refused,
    answers,
    parse_frame,
)

__all__ = [
    "CLAUSES",
    "INVARIANTS",
    "MAX_OPAQUES",
    "STEP_INVARIANTS",
    "Action",
    "Call",
    "CallerTimesOut",
    "ConnectionState",
    "Frame",
    "Refused",
    "RequestSent",
    "ResponseArrives",
    "ServerAnswers",
    "answers",
    "candidate_actions",
    "enabled",
    "model",
    "parse_frame",
    "step",
]
