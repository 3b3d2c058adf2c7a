"""QUERY_MESSAGE and VIEW_MESSAGE_BY_ID (``QueryMessageProcessor`` of RocketMQ 4.9.8).

QUERY_MESSAGE (``queryMessage``): header topic, key, maxNum, beginTimestamp, endTimestamp. With the ext field
``_UNIQUE_KEY_QUERY`` equal to ``true`` (a query by unique key, ``MixAll.UNIQUE_MSG_QUERY_FLAG``) maxNum becomes
``defaultQueryMaxNum`` (32). The store's index answers (``refimpl/index.py``); found messages are SUCCESS with the
stored messages concatenated as the body, nothing is QUERY_NOT_FOUND "can not find message, maybe time range not
correct". Both carry ``indexLastUpdateTimestamp`` / ``indexLastUpdatePhyoffset`` (0 when nothing was found).

Bad input as a 4.9.8 broker answers it (checked on the wire): the header decoder enforces nothing, so a missing topic
or key is Java's ``"null"`` in the index key (and finds nothing), an unknown or invalid topic finds nothing; a missing
or non-numeric maxNum (unless the unique-key flag replaced it), beginTimestamp or endTimestamp is a
NullPointerException, a negative maxNum an IllegalArgumentException ("Illegal Capacity: -1" from the result list),
both SYSTEM_ERROR with the exception's text (4.9.8 appends the throwing stack frame, left out here).

VIEW_MESSAGE_BY_ID (``viewMessageById``): the client decodes the offset message id (store host + commit-log offset)
and sends the offset; the message stored there is the body; an offset where no message starts (past the log, deleted,
negative, inside a message) is SYSTEM_ERROR "can not find message by the offset, N"; a missing or non-numeric offset a
NullPointerException. (4.9.8 reads whatever size the 4 bytes at an offset inside a message claim, which is almost
always past the file, so not found; here the offset must start a message.)
"""

from __future__ import annotations

from rocketspec.refimpl.broker.services import BrokerServices
from rocketspec.refimpl.remoting import Channel, RemotingCommand, java_null_unboxed
from rocketspec.spec.protocol import DEFAULT_QUERY_MAX_NUM, UNIQUE_MSG_QUERY_FLAG, ResponseCode


def _java_number(request: RemotingCommand, name: str) -> int | None:
    """A numeric header field as Java's decoder leaves it: None when missing or not a number."""
    value = request.field(name)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def query_message(broker: BrokerServices, request: RemotingCommand, channel: Channel) -> RemotingCommand:
    """QUERY_MESSAGE: the messages the index finds for the topic and key."""
    header = "QueryMessageRequestHeader"
    topic = request.field("topic", "null")  # Java's string concatenation of a null topic / key
    key = request.field("key", "null")
    max_num = _java_number(request, "maxNum")
    if request.field(UNIQUE_MSG_QUERY_FLAG) == "true":
        max_num = DEFAULT_QUERY_MAX_NUM
    begin = _java_number(request, "beginTimestamp")
    end = _java_number(request, "endTimestamp")
    for value, getter, unboxing in ((max_num, "getMaxNum", "Integer.intValue"),
                                    (begin, "getBeginTimestamp", "Long.longValue"),
                                    (end, "getEndTimestamp", "Long.longValue")):
        if value is None:
            return request.response(ResponseCode.SYSTEM_ERROR, remark=java_null_unboxed(header, getter, unboxing))
    assert max_num is not None and begin is not None and end is not None
    if max_num < 0:
        return request.response(ResponseCode.SYSTEM_ERROR,
                                remark=f"java.lang.IllegalArgumentException: Illegal Capacity: {max_num}")
    result = broker.index.query(topic, key, max_num, begin, end)
    fields = {
        "indexLastUpdateTimestamp": result.index_last_update_timestamp,
        "indexLastUpdatePhyoffset": result.index_last_update_phy_offset,
    }
    if result.buffer_total_size > 0:
        return request.response(ResponseCode.SUCCESS, fields, body=b"".join(result.messages))
    return request.response(ResponseCode.QUERY_NOT_FOUND, fields,
                            remark="can not find message, maybe time range not correct")


def view_message_by_id(broker: BrokerServices, request: RemotingCommand, channel: Channel) -> RemotingCommand:
    """VIEW_MESSAGE_BY_ID: the message stored at the commit-log offset."""
    offset = _java_number(request, "offset")
    if offset is None:
        return request.response(ResponseCode.SYSTEM_ERROR,
                                remark=java_null_unboxed("ViewMessageRequestHeader", "getOffset", "Long.longValue"))
    data = broker.store.look_message_bytes(offset)
    if data is None:
        return request.response(ResponseCode.SYSTEM_ERROR, remark=f"can not find message by the offset, {offset}")
    return request.response(ResponseCode.SUCCESS, body=data)


__all__ = ["query_message", "view_message_by_id"]
