"""The broker's ``messageDelayLevel`` (``BrokerConfig.message_delay_level``): the delay table a test double can shorten.

Level ``i`` waits the table's item ``i``; levels above the table's size wait its last item (the max level is the
table's length); consumer retries (delay level ``3 + reconsumeTimes``) use the same table. The default is RocketMQ's
18 levels, so nothing changes unless the option is given.
"""

from __future__ import annotations

import pytest

from rocketspec.refimpl import Cluster, ConsumeStatus, Message
from rocketspec.refimpl.broker.config import BrokerConfig, parse_message_delay_level
from rocketspec.spec.protocol import DELAY_LEVEL_MILLIS, SCHEDULE_TICK_MS, SCHEDULE_TOPIC, dlq_topic

SHORT = "1s 2s 3s"


def deliveries_after(cluster: Cluster, *levels: int) -> dict[bytes, int]:
    """Send one message per delay level (body = the level) and return each body's ms from send to consumption."""
    cluster.create_topic("T", queues=1)
    producer = cluster.producer("PG")
    got: dict[bytes, int] = {}

    def listener(msgs: list) -> ConsumeStatus:
        for m in msgs:
            got[m.body] = cluster.now_ms()
        return ConsumeStatus.CONSUME_SUCCESS

    cluster.push_consumer("CG", "T", listener, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    sent_at: dict[bytes, int] = {}
    for level in levels:
        body = str(level).encode()
        sent_at[body] = cluster.now_ms()
        producer.send(Message("T", body, delay_level=level))
    cluster.run_until_idle()
    return {body: got[body] - sent_at[body] for body in got}


def test_configured_table_delays_a_message_by_its_level() -> None:
    with Cluster(brokers=1, seed=31, message_delay_level=SHORT) as cluster:
        waited = deliveries_after(cluster, 2)
    assert set(waited) == {b"2"}
    assert 2_000 <= waited[b"2"] < 2_000 + SCHEDULE_TICK_MS + 500


def test_level_above_the_configured_table_clamps_to_its_last_level() -> None:
    with Cluster(brokers=1, seed=32, message_delay_level=SHORT) as cluster:
        waited = deliveries_after(cluster, 5)
        # parked in the top level's queue (level 3 -> queue 2), with DELAY rewritten to 3
        parked = cluster.brokers["broker-a"].store
        assert parked.max_offset(SCHEDULE_TOPIC, 2) == 1
        assert all(parked.max_offset(SCHEDULE_TOPIC, q) == 0 for q in (0, 1, 3, 4))
    assert 3_000 <= waited[b"5"] < 3_000 + SCHEDULE_TICK_MS + 500


def test_default_table_is_rocketmqs() -> None:
    assert BrokerConfig(broker_name="b").delay_level_millis == DELAY_LEVEL_MILLIS
    with Cluster(brokers=1, seed=33) as cluster:
        assert cluster.brokers["broker-a"].store.delay_level_millis == DELAY_LEVEL_MILLIS
        waited = deliveries_after(cluster, 2)
    assert DELAY_LEVEL_MILLIS[1] <= waited[b"2"] < DELAY_LEVEL_MILLIS[1] + SCHEDULE_TICK_MS + 500


def test_consumer_retries_use_the_configured_table() -> None:
    # Levels 3, 4, 5 differ, so retry n (delay level 3 + n - 1, clamped to 5) shows which item it waited.
    with Cluster(brokers=1, seed=34, message_delay_level="1s 1s 2s 4s 6s") as cluster:
        cluster.create_topic("T", queues=1)
        deliveries: list[tuple[int, int]] = []

        def failing(msgs: list) -> ConsumeStatus:
            deliveries.extend((cluster.now_ms(), m.reconsume_times) for m in msgs)
            return ConsumeStatus.RECONSUME_LATER

        cluster.push_consumer("CG", "T", failing, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                              max_reconsume_times=4)
        sent = cluster.producer("PG").send(Message("T", b"poison"))
        cluster.run_until_idle()
        assert [r for _, r in deliveries] == [0, 1, 2, 3, 4]
        expected = [2_000, 4_000, 6_000, 6_000]  # levels 3, 4, 5, then 6 clamped to 5
        gaps = [deliveries[n][0] - deliveries[n - 1][0] for n in range(1, len(deliveries))]
        for gap, want in zip(gaps, expected, strict=True):
            assert want <= gap <= want + 1_000, (gaps, expected)
        # the DLQ decision is the retry count, not the table
        assert [m.msg_id for m in cluster.messages(dlq_topic("CG"))] == [sent.msg_id]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        (" ", "0 levels; 1 to 18"),
        ("1s 2x", "bad delay level item '2x'"),
        ("1s  2s", "bad delay level item ''"),
        ("1.5s", "not a Java long"),
        ("s", "not a Java long"),
        ("0s", "level 1 delay must be positive"),
        ("1s -2m", "level 2 delay must be positive"),
        ("106751991167300d", "at most 2**62 ms"),
        (" ".join(["1s"] * 19), "19 levels; 1 to 18"),
    ],
)
def test_bad_strings_raise_a_clear_value_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="message_delay_level") as info:
        BrokerConfig(broker_name="b", message_delay_level=text)
    assert message in str(info.value)


@pytest.mark.parametrize("value", [None, 5, ["1s"]])
def test_a_non_string_raises_a_clear_value_error(value: object) -> None:
    with pytest.raises(ValueError, match="must be a string"):
        BrokerConfig(broker_name="b", message_delay_level=value)  # type: ignore[arg-type]


def test_a_bad_string_stops_the_cluster_from_starting() -> None:
    with pytest.raises(ValueError, match="message_delay_level"):
        Cluster(brokers=1, message_delay_level="1s 2q")


@pytest.mark.parametrize(
    ("text", "table"),
    [
        ("1s", (1_000,)),
        ("1s 2m 3h 1d", (1_000, 120_000, 10_800_000, 86_400_000)),
        ("1s 2s ", (1_000, 2_000)),  # Java's split drops trailing empty items
        (" ".join(["1s"] * 18), (1_000,) * 18),
    ],
)
def test_good_strings_parse_to_a_table_of_ms(text: str, table: tuple[int, ...]) -> None:
    assert parse_message_delay_level(text) == table
    assert BrokerConfig(broker_name="b", message_delay_level=text).delay_level_millis == table
