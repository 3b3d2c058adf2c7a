"""Message codecs and ids of the reference implementation (refimpl/message.py)."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketspec.refimpl.message import (
    BatchEntry,
    Message,
    MessageExt,
    UniqueIdGenerator,
    body_crc,
    decode_batch,
    decode_offset_message_id,
    decode_properties,
    decode_stored_message,
    decode_stored_messages,
    encode_batch,
    encode_properties,
    encode_stored_message,
    java_string_hash,
    offset_message_id,
    tags_code,
)
from rocketspec.spec import protocol
from rocketspec.spec.protocol import Property
from rocketspec.spec.queues import MessageQueue

# ---- hashes -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("TagA", 2598919),
        ("hello", 99162322),
        ("hello world", 1794106052),
        ("polygenelubricants", -(2**31)),  # the well-known Integer.MIN_VALUE hash
        ("Aa", 2112),
        ("BB", 2112),
        ("中文", 646394),
        ("\U0001F600", 1772899),  # one code point, two UTF-16 units (0xD83D, 0xDE00)
    ],
)
def test_java_string_hash_matches_java(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


@given(st.text(max_size=40))
def test_java_string_hash_is_the_utf16_polynomial(text: str) -> None:
    units = struct.unpack(f">{len(text.encode('utf-16-be', 'surrogatepass')) // 2}H",
                          text.encode("utf-16-be", "surrogatepass"))
    h = 0
    for unit in units:
        h = (31 * h + unit) % 2**32
    assert java_string_hash(text) == (h - 2**32 if h >= 2**31 else h)
    assert -(2**31) <= java_string_hash(text) < 2**31


def test_tags_code() -> None:
    assert tags_code(None) == 0
    assert tags_code("") == 0
    assert tags_code("TagA") == java_string_hash("TagA")


# ---- properties -------------------------------------------------------------------------------------------------

_names = st.text(st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)), min_size=1, max_size=12)
_values = st.text(st.characters(blacklist_characters="\x02", blacklist_categories=("Cs",)), min_size=1, max_size=20)


@given(st.dictionaries(_names, _values, max_size=8))
def test_properties_round_trip(props: dict[str, str]) -> None:
    text = encode_properties(props)
    assert decode_properties(text) == props
    assert decode_properties(text + protocol.PROPERTY_SEPARATOR) == props  # trailing separator tolerated


def test_properties_layout_and_java_quirks() -> None:
    assert encode_properties({"TAGS": "A", "KEYS": "k1 k2"}) == "TAGS\x01A\x02KEYS\x01k1 k2"
    assert encode_properties({}) == ""
    assert encode_properties({"A": None}) == ""  # type: ignore[dict-item]
    assert decode_properties("") == {}
    # Empty names or values and pieces without a separator are dropped (string2messageProperties).
    assert decode_properties("A\x01\x02\x01v\x02junk\x02B\x01b\x02") == {"B": "b"}
    assert decode_properties("K\x01a\x01b") == {"K": "a\x01b"}


# ---- message ids ------------------------------------------------------------------------------------------------


def test_offset_message_id_layout() -> None:
    msg_id = offset_message_id("127.0.0.1", 10911, 100)
    assert msg_id == "7F00000100002A9F0000000000000064"
    assert decode_offset_message_id(msg_id) == ("127.0.0.1", 10911, 100)
    assert decode_offset_message_id(msg_id.lower()) == ("127.0.0.1", 10911, 100)


@given(st.ip_addresses(v=4), st.integers(0, 65535), st.integers(0, 2**63 - 1))
def test_offset_message_id_round_trip(ip: object, port: int, offset: int) -> None:
    msg_id = offset_message_id(str(ip), port, offset)
    assert len(msg_id) == 32 and msg_id == msg_id.upper()
    assert decode_offset_message_id(msg_id) == (str(ip), port, offset)


def test_offset_message_id_ipv6() -> None:
    msg_id = offset_message_id("::1", 10911, 7)
    assert len(msg_id) == 56
    assert decode_offset_message_id(msg_id) == ("::1", 10911, 7)


@pytest.mark.parametrize("bad", ["", "XYZ", "7F00000100002A9F000000000000006", "G" * 32, 12345, None])
def test_decode_offset_message_id_rejects_garbage(bad: object) -> None:
    with pytest.raises(ValueError):
        decode_offset_message_id(bad)  # type: ignore[arg-type]


def test_offset_message_id_rejects_host_names() -> None:
    with pytest.raises(ValueError):
        offset_message_id("localhost", 1, 0)


JAN_2024 = 1_704_067_200_000  # 2024-01-01T00:00:00Z


def test_unique_id_layout_and_determinism() -> None:
    now = [JAN_2024 + 5_000]
    gen = UniqueIdGenerator("127.0.0.1", 1234, 0x12345678, lambda: now[0])
    first, second = gen.next_id(), gen.next_id()
    assert first == "7F000001" + "04D2" + "12345678" + "00001388" + "0000"
    assert second[-4:] == "0001" and second[:-4] == first[:-4]
    again = UniqueIdGenerator("127.0.0.1", 1234, 0x12345678, lambda: JAN_2024 + 5_000)
    assert again.next_id() == first
    raw = bytes.fromhex(first)
    assert len(raw) == 16
    ip, pid, loader, span, counter = struct.unpack(">4shiih", raw)
    assert (ip, pid, loader, span, counter) == (bytes([127, 0, 0, 1]), 1234, 0x12345678, 5000, 0)


def test_unique_id_pid_and_hash_are_truncated_like_java() -> None:
    gen = UniqueIdGenerator("10.1.2.3", 70000, -1, lambda: JAN_2024)
    assert gen.next_id()[:20] == "0A010203" + f"{70000 & 0xFFFF:04X}" + "FFFFFFFF"


def test_unique_id_counter_wraps_and_month_rolls() -> None:
    now = [JAN_2024 + 31 * 86_400_000 - 1]  # last ms of January
    gen = UniqueIdGenerator("127.0.0.1", 1, 2, lambda: now[0])
    ids = [gen.next_id() for _ in range(0x10001)]
    assert ids[0][-4:] == "0000" and ids[0xFFFF][-4:] == "FFFF" and ids[0x10000][-4:] == "0000"
    assert int(ids[0][20:28], 16) == 31 * 86_400_000 - 1
    now[0] += 1  # 2024-02-01T00:00:00Z: the span restarts
    assert gen.next_id()[20:28] == "00000000"
    now[0] -= 500  # a small step back (NTP) is clamped to 0
    assert gen.next_id()[20:28] == "00000000"


# ---- Message ----------------------------------------------------------------------------------------------------


def test_message_keeps_tags_keys_delay_in_properties() -> None:
    msg = Message("T", b"x", tags="A", keys="k1")
    assert msg.properties == {Property.TAGS: "A", Property.KEYS: "k1"}
    assert (msg.tags, msg.keys, msg.delay_level, msg.flag) == ("A", "k1", 0, 0)
    msg = Message("T", b"x", keys=["k1", "k2"], delay_level=3, flag=7, properties={"P": "v"})
    assert msg.properties == {"P": "v", Property.KEYS: "k1 k2", Property.DELAY_TIME_LEVEL: "3"}
    assert msg.key_list == ["k1", "k2"] and msg.delay_level == 3 and msg.flag == 7
    msg.tags = "B"
    msg.put_property(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "ID")
    assert msg.get_property(Property.TAGS) == "B" and msg.unique_key == "ID"
    msg.put_property(Property.TAGS, "C")
    assert msg.tags == "C"
    msg.tags = None
    msg.keys = None
    assert Property.TAGS not in msg.properties and Property.KEYS not in msg.properties
    msg.delay_level = 2
    assert msg.properties[Property.DELAY_TIME_LEVEL] == "2"
    assert msg.wait_store_msg_ok
    msg.wait_store_msg_ok = False
    assert msg.properties[Property.WAIT_STORE_MSG_OK] == "false" and not msg.wait_store_msg_ok
    msg.remove_property("P")
    assert "P" not in msg.properties


def test_message_copies_properties_and_normalises_body() -> None:
    props = {"A": "1"}
    msg = Message("T", bytearray(b"ab"), properties=props)
    msg.put_property("B", "2")
    assert props == {"A": "1"}
    assert isinstance(msg.body, bytes) and msg.body == b"ab"
    assert Message("T", b"x", tags="A") == Message("T", b"x", properties={"TAGS": "A"})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"topic": "", "body": b"x"},
        {"topic": 5, "body": b"x"},
        {"topic": "T", "body": "text"},
        {"topic": "T", "body": b"x", "delay_level": -1},
        {"topic": "T", "body": b"x", "properties": {"A": 1}},
        {"topic": "T", "body": b"x", "keys": ["a", 2]},
    ],
)
def test_message_validation(kwargs: dict[str, object]) -> None:
    with pytest.raises((TypeError, ValueError)):
        Message(**kwargs)  # type: ignore[arg-type]


# ---- stored layout ----------------------------------------------------------------------------------------------


def _stored(**overrides: object) -> bytes:
    fields: dict[str, object] = {
        "topic": "TopicTest", "queue_id": 3, "body": b"hello", "flag": 9,
        "properties": {Property.TAGS: "TagA", Property.KEYS: "k1 k2", Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "U1"},
        "sys_flag": 0, "born_timestamp": 1111, "born_host": "10.0.0.7:5555", "store_timestamp": 2222,
        "store_host": "127.0.0.1:10911", "reconsume_times": 2, "prepared_transaction_offset": 77,
        "queue_offset": 42, "commit_log_offset": 4096,
    }
    fields.update(overrides)
    return encode_stored_message(**fields)  # type: ignore[arg-type]


def test_stored_layout_is_message_decoder_layout() -> None:
    data = _stored()
    props = encode_properties({Property.TAGS: "TagA", Property.KEYS: "k1 k2",
                               Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "U1"}).encode()
    assert len(data) == 91 + 5 + len("TopicTest") + len(props)
    (total, magic, crc, queue_id, flag, queue_offset, phy, sys_flag, born_ts) = struct.unpack_from(">iIiiiqqiq", data)
    assert (total, magic, queue_id, flag, sys_flag, born_ts) == (len(data), 0xDAA320A7, 3, 9, 0, 1111)
    assert crc == zlib.crc32(b"hello") & 0x7FFFFFFF == body_crc(b"hello")
    assert (queue_offset, phy) == (42, 4096)
    assert data[20:28] == struct.pack(">q", 42) and data[28:36] == struct.pack(">q", 4096)
    assert data[48:56] == bytes([10, 0, 0, 7]) + struct.pack(">i", 5555)
    assert struct.unpack_from(">q", data, 56)[0] == 2222
    assert data[64:72] == bytes([127, 0, 0, 1]) + struct.pack(">i", 10911)
    assert struct.unpack_from(">iqi", data, 72) == (2, 77, 5)
    assert data[88:93] == b"hello"
    assert data[93] == len("TopicTest") and data[94:103] == b"TopicTest"
    assert struct.unpack_from(">h", data, 103)[0] == len(props) and data[105:] == props


def test_decode_stored_message_fields() -> None:
    msg, size = decode_stored_message(_stored(), broker_name="broker-a")
    assert size == msg.store_size
    assert isinstance(msg, MessageExt)
    assert msg.topic == "TopicTest" and msg.body == b"hello" and msg.tags == "TagA" and msg.keys == ("k1", "k2")
    assert msg.msg_id == "U1"
    assert msg.offset_msg_id == offset_message_id("127.0.0.1", 10911, 4096)
    assert msg.queue == MessageQueue("TopicTest", "broker-a", 3) and msg.queue_id == 3
    assert (msg.queue_offset, msg.commit_log_offset, msg.reconsume_times) == (42, 4096, 2)
    assert (msg.born_timestamp, msg.store_timestamp, msg.born_host, msg.store_host) == (
        1111, 2222, "10.0.0.7:5555", "127.0.0.1:10911")
    assert (msg.sys_flag, msg.flag, msg.prepared_transaction_offset, msg.broker_name) == (0, 9, 77, "broker-a")
    assert msg.body_crc == body_crc(b"hello")
    assert msg.get_property(Property.TAGS) == "TagA" and msg.unique_key == "U1"
    without_uniq, _ = decode_stored_message(_stored(properties={}))
    assert without_uniq.msg_id == without_uniq.offset_msg_id and without_uniq.tags is None and without_uniq.keys == ()


def test_properties_may_be_given_as_text() -> None:
    assert _stored(properties="TAGS\x01X") == _stored(properties={"TAGS": "X"})


_props = st.dictionaries(_names, _values, max_size=5)


@given(
    topic=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40),
    queue_id=st.integers(0, 2**31 - 1),
    body=st.binary(max_size=300),
    flag=st.integers(-(2**31), 2**31 - 1),
    props=_props,
    sys_flag=st.sampled_from([0, 0x2, 0x4, 0x8, 0xC, 0x80]),
    born_timestamp=st.integers(0, 2**62),
    store_timestamp=st.integers(0, 2**62),
    born_ip=st.ip_addresses(v=4),
    born_port=st.integers(0, 65535),
    reconsume_times=st.integers(0, 1000),
    prepared=st.integers(0, 2**62),
    queue_offset=st.integers(0, 2**62),
    phy=st.integers(0, 2**62),
)
def test_stored_message_round_trip(
    topic: str, queue_id: int, body: bytes, flag: int, props: dict[str, str], sys_flag: int, born_timestamp: int,
    store_timestamp: int, born_ip: object, born_port: int, reconsume_times: int, prepared: int, queue_offset: int,
    phy: int,
) -> None:
    if len(topic.encode()) > 127:
        topic = topic[:20]
    data = encode_stored_message(
        topic=topic, queue_id=queue_id, body=body, flag=flag, properties=props, sys_flag=sys_flag,
        born_timestamp=born_timestamp, born_host=f"{born_ip}:{born_port}", store_timestamp=store_timestamp,
        store_host="192.168.0.1:10911", reconsume_times=reconsume_times, prepared_transaction_offset=prepared,
        queue_offset=queue_offset, commit_log_offset=phy,
    )
    msg, size = decode_stored_message(b"junk" + data, 4, broker_name="b")
    assert size == len(data) == msg.store_size
    assert (msg.topic, msg.queue_id, msg.body, msg.flag, msg.properties, msg.sys_flag) == (
        topic, queue_id, body, flag, props, sys_flag)
    assert (msg.born_timestamp, msg.store_timestamp, msg.born_host, msg.store_host) == (
        born_timestamp, store_timestamp, f"{born_ip}:{born_port}", "192.168.0.1:10911")
    assert (msg.reconsume_times, msg.prepared_transaction_offset, msg.queue_offset, msg.commit_log_offset) == (
        reconsume_times, prepared, queue_offset, phy)
    assert decode_offset_message_id(msg.offset_msg_id) == ("192.168.0.1", 10911, phy)


def test_ipv6_hosts_set_the_sysflag_bits() -> None:
    data = _stored(born_host="[::1]:5555", store_host="[fe80::2]:10911")
    assert len(data) == len(_stored()) + 24
    msg, _ = decode_stored_message(data)
    assert msg.sys_flag == protocol.SYSFLAG_BORNHOST_V6 | protocol.SYSFLAG_STOREHOST_V6
    assert (msg.born_host, msg.store_host, msg.store_timestamp, msg.body) == (
        "[::1]:5555", "[fe80::2]:10911", 2222, b"hello")
    assert len(msg.offset_msg_id) == 56


def test_compressed_body_is_inflated_for_consumers_only() -> None:
    raw = b"compress me " * 100
    data = _stored(body=zlib.compress(raw), sys_flag=protocol.SYSFLAG_COMPRESSED)
    assert decode_stored_message(data)[0].body == raw
    assert decode_stored_message(data, decompress=False)[0].body == zlib.compress(raw)
    broken = _stored(body=b"not zlib", sys_flag=protocol.SYSFLAG_COMPRESSED)
    with pytest.raises(ValueError):
        decode_stored_message(broken)


def test_decode_stored_message_rejects_bad_input() -> None:
    data = _stored()
    with pytest.raises(ValueError, match="magic"):
        decode_stored_message(data[:4] + b"\x00\x00\x00\x00" + data[8:])
    with pytest.raises(ValueError):
        decode_stored_message(data[:-1])  # truncated
    with pytest.raises(ValueError):
        decode_stored_message(data[:50])
    with pytest.raises(ValueError):  # size field larger than the fields
        decode_stored_message(struct.pack(">i", len(data) + 1) + data[4:] + b"\x00")
    with pytest.raises(ValueError):  # size field smaller than the fields
        decode_stored_message(struct.pack(">i", len(data) - 1) + data[4:])


def test_encode_stored_message_rejects_oversized_fields() -> None:
    with pytest.raises(ValueError):
        _stored(topic="T" * 128)
    with pytest.raises(ValueError):
        _stored(properties={"P": "v" * 40000})


def test_decode_stored_messages_concatenated() -> None:
    body = _stored(queue_offset=1) + _stored(queue_offset=2, body=b"") + _stored(queue_offset=3)
    msgs = decode_stored_messages(body, "broker-b")
    assert [m.queue_offset for m in msgs] == [1, 2, 3]
    assert msgs[1].body == b"" and all(m.broker_name == "broker-b" for m in msgs)
    assert decode_stored_messages(b"", "b") == []
    with pytest.raises(ValueError):
        decode_stored_messages(body + b"\x00\x00", "b")


# ---- batch ------------------------------------------------------------------------------------------------------


def test_batch_layout() -> None:
    body = encode_batch([Message("T", b"abc", tags="A", flag=5)])
    props = b"TAGS\x01A"
    assert body == struct.pack(">iiiii", 22 + 3 + len(props), 0, 0, 5, 3) + b"abc" + struct.pack(">h", 6) + props
    assert decode_batch(body) == [BatchEntry(5, b"abc", {"TAGS": "A"})]


@given(st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), st.binary(max_size=200), _props), max_size=6))
def test_batch_round_trip(items: list[tuple[int, bytes, dict[str, str]]]) -> None:
    entries = [BatchEntry(flag, body, props) for flag, body, props in items]
    assert decode_batch(encode_batch(entries)) == entries


def test_decode_batch_rejects_malformed_bodies() -> None:
    good = encode_batch([Message("T", b"abc", tags="A")])
    for bad in (good[:-1], good + b"\x00", struct.pack(">i", 99) + good[4:], good[:20] + b"\xff\xff",
                good[:16] + struct.pack(">i", -1) + good[20:]):
        with pytest.raises(ValueError):
            decode_batch(bad)
    assert decode_batch(b"") == []
    with pytest.raises(ValueError):
        encode_batch([Message("T", b"x", properties={"P": "v" * 40000})])
