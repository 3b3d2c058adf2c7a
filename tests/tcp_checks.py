"""The checks the socket server's lockstep machine (``test_stateful_tcp.py``) makes of every frame and message: read
by the spec's readers and by refimpl's codecs alike (WIRE-1..WIRE-3, WIRE-9, WIRE-10, WIRE-11, WIRE-13)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rocketspec.refimpl.frame import FrameError, decode
from rocketspec.refimpl.message import decode_stored_messages
from rocketspec.refimpl.remoting import RemotingCommand
from rocketspec.refimpl.served import FaultFileError, ServedCluster, fault_rule, load_fault_file
from rocketspec.spec import remoting as wire
from rocketspec.spec.protocol import SYSFLAG_COMPRESSED, Property, RequestCode, ResponseCode, SerializeType

#: The properties a send carries that a pull must give back as the spec reads them (WIRE-10).
CHECKED_PROPERTIES = ("user", Property.TAGS, Property.KEYS)


def _view(frame: wire.Frame) -> tuple[Any, ...]:
    return (int(frame.serialize_type), frame.code, frame.opaque, frame.flag, frame.remark, dict(frame.ext_fields),
            frame.body)


def request_disagreement(read: wire.Frame, command: RemotingCommand, serialize: SerializeType) -> str | None:
    """How the spec's reading of the frame the codec wrote for ``command`` differs from ``command`` (WIRE-1..3)."""
    sent = (int(serialize), command.code, command.opaque, command.flag, command.remark, dict(command.ext_fields),
            command.body or b"")
    if _view(read) != sent:
        return f"WIRE-1/WIRE-2/WIRE-3: the codec wrote a frame the spec reads otherwise\n  sent: {sent}\n" \
               f"  spec reads: {_view(read)}"
    return None


def read_both(raw: bytes) -> tuple[wire.Frame | None, RemotingCommand | None, str | None]:
    """A frame the server wrote (length prefix included) read by ``parse_frame`` and by the codec's ``decode``: both
    must read it, and the same command (WIRE-1, WIRE-2, WIRE-3)."""
    read = wire.parse_frame(raw)
    if isinstance(read, wire.Refused):
        return None, None, f"WIRE-1/WIRE-6: the server wrote a frame a 4.9.8 peer refuses ({read.reason}): {raw[:80]!r}"
    try:
        command, kind = decode(raw[4:])
    except FrameError as error:
        return None, None, f"WIRE-1: the codec cannot read a frame the server wrote ({error}): {raw[:80]!r}"
    codec = (int(kind), command.code, command.opaque, command.flag, command.remark, command.ext_fields,
             command.body or b"")
    if codec != _view(read):
        return None, None, f"WIRE-2/WIRE-3: a frame the server wrote read two ways differs\n  spec:  {_view(read)}\n" \
                           f"  codec: {codec}"
    return read, command, None


def sent_messages(command: RemotingCommand) -> tuple[tuple[bytes, dict[str, str]], ...]:
    """The messages a send carries, as the spec reads them: bodies and properties (WIRE-10, WIRE-11)."""
    if command.code == RequestCode.SEND_BATCH_MESSAGE:
        batch = wire.parse_batch_body(command.body or b"")
        assert not isinstance(batch, wire.Refused), batch
        return tuple((m.body, dict(m.properties)) for m in batch)
    if command.code == RequestCode.SEND_MESSAGE_V2:
        return ((command.body or b"", dict(wire.parse_properties(command.ext_fields.get("i", "")))),)
    return ()


def _inflated(message: wire.StoredMessage) -> bytes:
    return zlib.decompress(message.body) if message.sys_flag & SYSFLAG_COMPRESSED else message.body


def check_messages(call: Any, command: RemotingCommand, calls: Iterable[Any], commit_offsets: list[int]) -> str | None:
    """The messages a pull or a view answered with, read by the spec and by the codec (WIRE-9, WIRE-10): the same,
    each one a send carried, with the properties the spec reads from that send (WIRE-10) and the offset message id
    its send was answered with (WIRE-13). Keeps the commit-log offsets (for views)."""
    if call.what not in ("pull", "view") or command.code != ResponseCode.SUCCESS or not command.body:
        return None
    stored = wire.parse_stored_messages(command.body)
    spec_read = [(m.topic, m.queue_id, m.queue_offset, m.sys_flag, _inflated(m), dict(m.properties),
                  m.commit_log_offset) for m in stored]
    decoded = decode_stored_messages(command.body, "broker-a")
    codec_read = [(m.topic, m.queue_id, m.queue_offset, m.sys_flag, m.body, m.properties, m.commit_log_offset)
                  for m in decoded]
    if spec_read != codec_read:
        return f"WIRE-9/WIRE-10: the messages of an answer read two ways differ\n  spec:  {spec_read}\n" \
               f"  codec: {codec_read}"
    sends = {body: (other, props) for other in calls for body, props in other.sent}
    for message in stored:
        commit_offsets.append(message.commit_log_offset)
        found = sends.get(message.body)
        if found is None:
            return f"WIRE-9: a pull gave back a message no send carried: {message.body!r}"
        send, props = found
        read = dict(message.properties)
        differ = [k for k in CHECKED_PROPERTIES if read.get(k) != props.get(k)]
        if differ:
            return f"WIRE-10: a message's properties {read} are not those its send carried {props} ({differ})"
        ids = {i for answer in send.commands if answer.code == ResponseCode.SUCCESS
               for i in answer.ext_fields.get("msgId", "").split(",")}
        msg_id = wire.offset_message_id(message.store_host, message.store_port, message.commit_log_offset)
        if ids and msg_id not in ids:
            return f"WIRE-13: offset message id {msg_id} is none of those its send was answered with: {sorted(ids)}"
    return None


# ------------------------------------------------------------------------------------------------------ operators
#: Fault rules an operator may write wrong (``rocketspec serve --faults``) and what the server says of each.
BAD_FAULT_RULES: tuple[tuple[object, str], ...] = (
    ([1], "a fault rule must be an object"),
    ({"action": "fail", "colour": 1}, "unknown key(s) colour"),
    ({"action": "explode"}, "fault action must be one of"),
    ({"action": "drop", "target": ""}, "fault target must be"),
    ({"action": "drop", "times": -1}, "times must be a non-negative integer"),
    ({"action": "delay", "ms": True}, "ms must be a non-negative integer"),
    ({"action": "delay"}, "a delay fault needs ms > 0"),
    ({"action": "drop", "probability": 2}, "probability must be a number within [0, 1]"),
    ({"action": "drop", "client": 5}, "client must be a client address"),
    ({"action": "drop", "request": 1.5}, "request must be a RequestCode name or number"),
    ({"action": "drop", "request": "NO_SUCH_REQUEST"}, "unknown request code"),
    ({"action": "fail", "code": True}, "code must be a ResponseCode name or number"),
    ({"action": "fail", "code": "NO_SUCH_CODE"}, "unknown response code"),
)
#: Fault files an operator may write wrong (None: no file), and what the server says of each.
BAD_FAULT_FILES: tuple[tuple[str | None, str], ...] = (
    (None, "cannot read fault file"),
    ("[{", "is not JSON"),
    ('{"faults": 3}', "must hold a list of rules"),
    ('[{"action": "drop"}, {"action": "explode"}]', "rule 2: fault action must be one of"),
)
#: Served clusters an operator may ask for wrong, and what the server says of each.
BAD_SERVERS: tuple[tuple[dict[str, Any], str], ...] = (
    ({"brokers": 0}, "brokers must be a positive integer"),
    ({"port": 70000}, "port must be within 0..65535"),
    ({"broker_ports": [0, 0]}, "broker_ports has 2 ports for 1 brokers"),
    ({"broker_settings": [{}, {}]}, "broker_settings must hold one mapping per broker (1)"),
    ({"brokers": 2, "broker_settings": [{"message_delay_level": "1s"}, {}]},
     "broker_settings give the brokers different message_delay_level tables"),
    ({"broker_settings": [{"broker_name": "broker-z"}]}, "broker_settings cannot set broker_name"),
    ({"broker_settings": [{"no_such_option": 1}]}, "unknown broker option(s): no_such_option"),
    ({"limits": {"idle_close_s": 1}}, "limits must be a ServerLimits"),
    ({"clock": "simulated"}, "a served cluster runs on the real clock"),
    ({"port": "in use"}, "cannot listen on"),
)


def operator_mistake(kind: str, index: int, namesrv_port: int, tmp: Path) -> str | None:
    """Make the ``index``-th mistake of ``kind`` (``rule``, ``file``, ``server``) and check the server refuses it
    with its message; the problem if not (None: refused as it must be)."""
    wanted: str
    try:
        if kind == "rule":
            spec, wanted = BAD_FAULT_RULES[index % len(BAD_FAULT_RULES)]
            fault_rule(spec)  # type: ignore[arg-type]
        elif kind == "file":
            text, wanted = BAD_FAULT_FILES[index % len(BAD_FAULT_FILES)]
            path = tmp / f"faults-{index}.json"
            path.unlink(missing_ok=True)
            if text is not None:
                path.write_text(text, encoding="utf-8")
            load_fault_file(path)
        else:
            options, wanted = BAD_SERVERS[index % len(BAD_SERVERS)]
            if options.get("port") == "in use":
                options = {"port": namesrv_port}
            ServedCluster(**options).close()
    except (FaultFileError, ValueError, OSError) as error:
        return None if wanted in str(error) else f"the server refused {kind} {index} saying {error!s}, not {wanted!r}"
    return f"the server took {kind} mistake {index}, which it must refuse ({wanted})"
