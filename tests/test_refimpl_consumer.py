"""Push and lite pull consumers end to end: simulated runtime, network, name server, brokers, producer, consumers.

Runs through the ``Cluster`` facade, which wires exactly those parts; the assertions look at what the consumers
deliver, what the brokers store and commit, and the events the consumers emit.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rocketspec.refimpl.client.consume_service import ConsumeConcurrentlyContext
from rocketspec.refimpl.client.consumer_config import ConsumerConfig
from rocketspec.refimpl.client.errors import MQClientError
from rocketspec.refimpl.cluster import Cluster
from rocketspec.refimpl.events import (
    ConsumeDeliver,
    ConsumeResult,
    OffsetUpdate,
    PullRequestEvent,
    PullResponseEvent,
    RebalanceAssign,
    SendBack,
)
from rocketspec.refimpl.message import Message
from rocketspec.spec.protocol import (
    DELAY_LEVEL_MILLIS,
    PULL_FLAG_COMMIT_OFFSET,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    dlq_topic,
    retry_topic,
)
from rocketspec.spec.queues import MessageQueue


def collecting(seen: list, status: object = ConsumeStatus.CONSUME_SUCCESS):
    def listener(msgs):
        seen.extend(msgs)
        return status

    return listener


def send_n(producer: Any, topic: str, n: int, prefix: str = "m") -> set[str]:
    return {producer.send(Message(topic, f"{prefix}{i}".encode())).msg_id for i in range(n)}


def test_clustering_consumers_split_the_queues_and_consume_everything() -> None:
    with Cluster(brokers=2, seed=3) as cluster:
        cluster.create_topic("T", queues=4)
        producer = cluster.producer("PG")
        seen: list = []
        consumers = [cluster.push_consumer("CG", "T", collecting(seen), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
                     for _ in range(2)]
        cluster.advance(100)
        sent = send_n(producer, "T", 40)
        cluster.run_until_idle()
        assert {m.msg_id for m in seen} == sent
        owned = [c.assignment()["T"] for c in consumers]
        assert len(owned[0]) == len(owned[1]) == 4 and not owned[0] & owned[1]
        assert sum(cluster.committed_offsets("CG", "T").values()) == 40
        # Every delivery is followed by its result; offsets only move forward with increaseOnly updates.
        delivered = Counter(e.msg_id for e in cluster.events_of(ConsumeDeliver))
        results = Counter(e.msg_id for e in cluster.events_of(ConsumeResult))
        assert delivered == results
        assigns = [e for e in cluster.events_of(RebalanceAssign) if e.topic == "T"]
        assert assigns and all(e.strategy == "AVG" for e in assigns)


def test_join_and_leave_rebalance_the_group() -> None:
    with Cluster(brokers=1, seed=5) as cluster:
        cluster.create_topic("T", queues=6)
        producer = cluster.producer("PG")
        seen: list = []
        first = cluster.push_consumer("CG", "T", collecting(seen))
        cluster.advance(100)
        assert len(first.assignment()["T"]) == 6
        second = cluster.push_consumer("CG", "T", collecting(seen))
        third = cluster.push_consumer("CG", "T", collecting(seen))
        cluster.advance(1_000)
        sizes = sorted(len(c.assignment()["T"]) for c in (first, second, third))
        assert sizes == [2, 2, 2]
        union = set().union(*(c.assignment()["T"] for c in (first, second, third)))
        assert len(union) == 6
        second.shutdown()
        cluster.advance(1_000)
        left = [first.assignment()["T"], third.assignment()["T"]]
        assert sorted(len(a) for a in left) == [3, 3] and not left[0] & left[1]
        sent = send_n(producer, "T", 30)
        cluster.run_until_idle()
        assert sent <= {m.msg_id for m in seen}
        latest = [e for e in cluster.events_of(RebalanceAssign) if e.node == third.instance.client_id
                  and e.topic == "T"][-1]
        assert len(latest.consumers) == 2


def test_crashed_consumer_queues_are_taken_over() -> None:
    with Cluster(brokers=1, seed=6) as cluster:
        cluster.create_topic("T", queues=4)
        producer = cluster.producer("PG")
        seen: list = []
        survivor = cluster.push_consumer("CG", "T", collecting(seen))
        victim = cluster.push_consumer("CG", "T", collecting([]))
        cluster.advance(1_000)
        assert len(survivor.assignment()["T"]) == 2
        cluster.crash_client(victim)
        sent = send_n(producer, "T", 20)
        cluster.run_until_idle()
        assert len(survivor.assignment()["T"]) == 4
        assert sent <= {m.msg_id for m in seen}


def test_broadcasting_delivers_to_every_consumer_with_local_offsets(tmp_path: Path) -> None:
    with Cluster(brokers=2, seed=11) as cluster:
        cluster.create_topic("T", queues=2)
        seen_a: list = []
        seen_b: list = []
        a = cluster.push_consumer("BG", "T", collecting(seen_a), message_model="BROADCASTING",
                                  offset_store_dir=str(tmp_path))
        cluster.push_consumer("BG", "T", collecting(seen_b, ConsumeStatus.RECONSUME_LATER),
                              message_model="BROADCASTING", offset_store_dir=str(tmp_path))
        producer = cluster.producer("PG")
        sent = send_n(producer, "T", 12)
        cluster.run_until_idle()
        assert {m.msg_id for m in seen_a} == sent
        # Broadcasting never sends failures back: each message is seen exactly once.
        assert sorted(m.msg_id for m in seen_b) == sorted(sent)
        assert not cluster.events_of(SendBack)
        assert cluster.committed_offsets("BG", "T") == {}
        stored = tmp_path / a.instance.client_id / "BG" / "offsets.json"
        assert stored.exists()
        assert sum(a.offsets().values()) == 12


def test_reconsume_later_comes_back_after_the_delay_level_with_one_more_reconsume() -> None:
    with Cluster(brokers=1, seed=2) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        deliveries: list = []

        def fail_twice(msgs):
            deliveries.extend((cluster.now_ms(), m.reconsume_times, m.topic) for m in msgs)
            return ConsumeStatus.RECONSUME_LATER if msgs[0].reconsume_times < 2 else ConsumeStatus.CONSUME_SUCCESS

        consumer = cluster.push_consumer("CG", "T", fail_twice)
        cluster.advance(100)
        producer.send(Message("T", b"retry me"))
        cluster.run_until_idle()
        assert [r for _, r, _ in deliveries] == [0, 1, 2]
        assert {t for _, _, t in deliveries} == {"T"}  # the retry topic is hidden (resetRetryAndNamespace)
        first_gap = deliveries[1][0] - deliveries[0][0]
        second_gap = deliveries[2][0] - deliveries[1][0]
        assert DELAY_LEVEL_MILLIS[2] <= first_gap <= DELAY_LEVEL_MILLIS[2] + 1_000
        assert DELAY_LEVEL_MILLIS[3] <= second_gap <= DELAY_LEVEL_MILLIS[3] + 1_000
        backs = [e for e in cluster.events_of(SendBack) if e.node == consumer.instance.client_id]
        assert [(b.via, b.target, b.reconsume_times, b.delay_level) for b in backs] == [
            ("broker", retry_topic("CG"), 1, 0), ("broker", retry_topic("CG"), 2, 0)]


def test_send_back_falls_back_to_the_client_producer() -> None:
    with Cluster(brokers=1, seed=7) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        deliveries: list = []

        def fail_twice(msgs):
            deliveries.extend((cluster.now_ms(), m.reconsume_times, m.topic, m.queue.topic) for m in msgs)
            return ConsumeStatus.RECONSUME_LATER if len(deliveries) < 3 else ConsumeStatus.CONSUME_SUCCESS

        consumer = cluster.push_consumer("CG", "T", fail_twice)
        cluster.advance(100)
        cluster.faults.fail("broker-a", "CONSUMER_SEND_MSG_BACK", times=2)
        sent = producer.send(Message("T", b"x"))
        cluster.run_until_idle()
        # The client sends to %RETRY%CG itself with DELAY 3 + reconsumeTimes; the message keeps its id.
        assert [(r, t, q) for _, r, t, q in deliveries] == [
            (0, "T", "T"), (1, "T", retry_topic("CG")), (2, "T", retry_topic("CG"))]
        backs = [(b.via, b.delay_level, b.reconsume_times, b.msg_id) for b in cluster.events_of(SendBack)]
        assert backs == [("client", 3, 1, sent.msg_id), ("client", 4, 2, sent.msg_id)]
        assert DELAY_LEVEL_MILLIS[3] <= deliveries[2][0] - deliveries[1][0] <= DELAY_LEVEL_MILLIS[3] + 1_000
        assert consumer.offsets()[MessageQueue("T", "broker-a", 0)] == 1


def test_local_retry_when_every_send_back_fails() -> None:
    with Cluster(brokers=1, seed=8) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        deliveries: list = []

        def fail_once(msgs):
            deliveries.extend((cluster.now_ms(), m.reconsume_times) for m in msgs)
            return ConsumeStatus.RECONSUME_LATER if len(deliveries) == 1 else ConsumeStatus.CONSUME_SUCCESS

        cluster.push_consumer("CG", "T", fail_once)
        cluster.advance(100)
        producer.send(Message("T", b"x"))
        cluster.faults.fail("broker-a", "CONSUMER_SEND_MSG_BACK")
        cluster.faults.fail("broker-a", "SEND_MESSAGE_V2")
        cluster.run_until_idle()
        assert [r for _, r in deliveries] == [0, 1]
        assert 5_000 <= deliveries[1][0] - deliveries[0][0] <= 5_100
        assert [b.via for b in cluster.events_of(SendBack)] == ["local"]
        assert list(cluster.committed_offsets("CG", "T").values()) == [1]


def test_ack_index_acknowledges_a_prefix_of_the_batch() -> None:
    with Cluster(brokers=1, seed=9) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        for i in range(3):
            producer.send(Message("T", str(i).encode()))
        calls: list = []

        def partial(msgs, context: ConsumeConcurrentlyContext):
            calls.append([(m.body, m.reconsume_times) for m in msgs])
            if len(msgs) == 3:
                context.ack_index = 0
            return ConsumeStatus.CONSUME_SUCCESS

        cluster.push_consumer("CG", "T", partial, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                              consume_message_batch_max_size=3)
        cluster.run_until_idle()
        assert calls[0] == [(b"0", 0), (b"1", 0), (b"2", 0)]
        redelivered = sorted(b for call in calls[1:] for b, r in call if r == 1)
        assert redelivered == [b"1", b"2"]
        statuses = [e.status for e in cluster.events_of(ConsumeResult)][:3]
        assert statuses == ["CONSUME_SUCCESS", "RECONSUME_LATER", "RECONSUME_LATER"]


def test_orderly_consumption_keeps_queue_order_and_holds_broker_locks() -> None:
    with Cluster(brokers=1, seed=12) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        order: dict[int, list[int]] = {}
        suspended = {"left": 2}

        def orderly(msgs):
            for m in msgs:
                if suspended["left"] and int(m.body) == 3:
                    suspended["left"] -= 1
                    return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                order.setdefault(m.queue_id, []).append(int(m.body))
            return ConsumeOrderlyStatus.SUCCESS

        consumer = cluster.push_consumer("OG", "T", orderly, orderly=True,
                                         consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.advance(100)
        queues = sorted(consumer.assignment()["T"])
        for i in range(20):
            producer.send(Message("T", str(i).encode()), queue=queues[i % 2])
        cluster.run_until_idle()
        assert order[0] == list(range(0, 20, 2)) and order[1] == list(range(1, 20, 2))
        deliveries = [e for e in cluster.events_of(ConsumeDeliver) if e.queue_id == 1 and e.offset == 1]
        assert [d.reconsume_times for d in deliveries] == [0, 1, 2]
        assert sum(cluster.committed_offsets("OG", "T").values()) == 20
        locks = cluster.broker("broker-a").locks
        assert {locks.holder("OG", mq) for mq in queues} == {consumer.instance.client_id}
        consumer.shutdown()
        cluster.run_until_idle()
        assert {locks.holder("OG", mq) for mq in queues} == {None}


def test_orderly_second_consumer_waits_for_the_lock() -> None:
    with Cluster(brokers=1, seed=13) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        seen: list = []
        first = cluster.push_consumer("OG", "T", collecting(seen, ConsumeOrderlyStatus.SUCCESS), orderly=True)
        cluster.advance(100)
        second = cluster.push_consumer("OG", "T", collecting(seen, ConsumeOrderlyStatus.SUCCESS), orderly=True)
        cluster.advance(25_000)
        owned = [first.assignment().get("T", set()), second.assignment().get("T", set())]
        assert sorted(len(o) for o in owned) == [1, 1] and not owned[0] & owned[1]
        sent = send_n(producer, "T", 10)
        cluster.run_until_idle()
        assert {m.msg_id for m in seen} == sent


def test_offsets_are_persisted_and_resumed_after_a_clean_restart() -> None:
    with Cluster(brokers=1, seed=14) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        first_seen: list = []
        consumer = cluster.push_consumer("CG", "T", collecting(first_seen),
                                         consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        first = send_n(producer, "T", 10, "a")
        cluster.run_until_idle()
        assert {m.msg_id for m in first_seen} == first
        consumer.shutdown()
        cluster.run_until_idle()
        assert sum(cluster.committed_offsets("CG", "T").values()) == 10
        later = send_n(producer, "T", 6, "b")
        again: list = []
        cluster.push_consumer("CG", "T", collecting(again), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.run_until_idle()
        assert {m.msg_id for m in again} == later


def test_pulls_commit_the_in_memory_offset() -> None:
    with Cluster(brokers=1, seed=15) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        cluster.push_consumer("CG", "T", collecting([]), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        send_n(producer, "T", 3)
        cluster.run_until_idle()
        send_n(producer, "T", 1, "x")
        cluster.run_until_idle()
        pulls = [e for e in cluster.events_of(PullRequestEvent) if e.topic == "T"]
        assert any(p.commit_offset is not None and p.commit_offset > 0 for p in pulls)
        assert PULL_FLAG_COMMIT_OFFSET == 1
        updates = [e for e in cluster.events_of(OffsetUpdate) if e.topic == "T"]
        assert [u.offset for u in updates][-1] == 4


def with_head_deleted(seed: int) -> tuple[Cluster, int]:
    """A cluster whose one queue of T held 120 messages and lost its first two segments; and its min offset now."""
    cluster = Cluster(brokers=1, seed=seed, segment_bytes=4096)
    cluster.create_topic("T", queues=1)
    producer = cluster.producer("PG")
    for i in range(120):
        producer.send(Message("T", b"y" * 100 + str(i).encode()))
    assert cluster.delete_old_data("broker-a", segments=2) == 2
    low = cluster.broker("broker-a").store.min_offset("T", 0)
    assert low > 0
    return cluster, low


def test_offset_illegal_is_corrected_after_old_data_is_deleted() -> None:
    cluster, low = with_head_deleted(seed=4)
    with cluster:
        seen: list = []
        cluster.push_consumer("CG", "T", collecting(seen), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.run_until_idle()
        assert sorted(m.queue_offset for m in seen) == list(range(low, 120))
        illegal = [e for e in cluster.events_of(PullResponseEvent)
                   if e.status == "OFFSET_ILLEGAL" and e.node != "broker-a"]
        assert illegal and illegal[0].next_offset == low
        assert list(cluster.committed_offsets("CG", "T").values()) == [120]


def test_broadcasting_consumer_corrects_an_illegal_offset_and_resumes() -> None:
    """``DefaultMQPushConsumerImpl``, OFFSET_ILLEGAL: 10 s later the offset is set to the broker's next begin offset
    and the queue dropped; the next rebalance adds it back and consumption resumes from there. Broadcasting: the
    offsets live in the client only, so nothing on the broker says messages are still owed."""
    cluster, low = with_head_deleted(seed=5)
    with cluster:
        seen: list = []
        cluster.push_consumer("CG", "T", collecting(seen), consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                              message_model="BROADCASTING")
        cluster.run_until_idle()
        assert sorted(m.queue_offset for m in seen) == list(range(low, 120))


def test_new_group_starts_at_zero_while_the_first_message_is_in_memory() -> None:
    """The broker answers QUERY_CONSUMER_OFFSET with 0 for a group without offset while offset 0 of the queue is
    still stored: CONSUME_FROM_LAST_OFFSET then reads the old messages too."""
    with Cluster(brokers=1, seed=16) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        old = send_n(producer, "T", 8, "old")
        seen: list = []
        cluster.push_consumer("CG", "T", collecting(seen))
        cluster.advance(100)
        new = send_n(producer, "T", 4, "new")
        cluster.run_until_idle()
        assert {m.msg_id for m in seen} == old | new


def test_consume_from_last_offset_skips_older_messages() -> None:
    with Cluster(brokers=1, seed=16, segment_bytes=4096) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        for i in range(80):
            producer.send(Message("T", b"z" * 100 + str(i).encode()))
        cluster.delete_old_data("broker-a", segments=1)
        seen: list = []
        cluster.push_consumer("CG", "T", collecting(seen))
        cluster.advance(100)
        new = send_n(producer, "T", 4, "new")
        cluster.run_until_idle()
        assert {m.msg_id for m in seen} == new


def test_consume_from_timestamp_searches_the_offset() -> None:
    with Cluster(brokers=1, seed=16, segment_bytes=4096) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        for i in range(80):
            producer.send(Message("T", b"z" * 100 + str(i).encode()))
        cluster.delete_old_data("broker-a", segments=1)
        cluster.advance(60_000)
        since = cluster.now_ms()
        later = send_n(producer, "T", 5, "later")
        seen: list = []
        cluster.push_consumer("CG", "T", collecting(seen), consume_from_where="CONSUME_FROM_TIMESTAMP",
                              consume_timestamp_ms=since)
        cluster.run_until_idle()
        assert {m.msg_id for m in seen} == later


def test_tag_expression_filters_messages() -> None:
    with Cluster(brokers=1, seed=17) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        seen: list = []
        cluster.push_consumer("CG", {"T": "A || C"}, collecting(seen))
        cluster.advance(100)
        for tag in "ABCABCD":
            producer.send(Message("T", tag.encode(), tags=tag))
        cluster.run_until_idle()
        assert sorted(m.tags for m in seen) == ["A", "A", "C", "C"]


def test_consume_duration_keeps_messages_in_flight() -> None:
    with Cluster(brokers=1, seed=18) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        seen: list = []
        consumer = cluster.push_consumer("CG", "T", collecting(seen), consume_duration_ms=2_000,
                                         consume_thread_max=1)
        cluster.advance(100)
        send_n(producer, "T", 3)
        start = cluster.now_ms()
        cluster.run_until_idle()
        results = [e.ts_ms - start for e in cluster.events_of(ConsumeResult)]
        assert len(results) == 3 and results[-1] >= 5_900
        assert [b - a for a, b in itertools.pairwise(results)] == [2_000, 2_000]
        assert consumer.offsets()


def test_lite_pull_consumer_poll_commit_and_seek() -> None:
    with Cluster(brokers=1, seed=19) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        sent = send_n(producer, "T", 10)
        consumer = cluster.lite_pull_consumer("LG", "T", consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                              auto_commit=False, pull_batch_size=10)
        got: list = []
        for _ in range(20):
            got.extend(consumer.poll(timeout_ms=1_000))
            if len(got) >= 10:
                break
        assert {m.msg_id for m in got} == sent
        assert consumer.poll(timeout_ms=500) == []
        consumer.commit()
        cluster.advance(100)
        assert sum(cluster.committed_offsets("LG", "T").values()) == 10
        mq = MessageQueue("T", "broker-a", 0)
        assert consumer.committed(mq) == sum(1 for m in got if m.queue_id == 0)
        assert consumer.fetch_message_queues("T") == {MessageQueue("T", "broker-a", i) for i in range(2)}
        consumer.seek_to_begin(mq)
        again: list = []
        for _ in range(10):
            again.extend(consumer.poll(timeout_ms=1_000))
            if again:
                break
        assert again and min(m.queue_offset for m in again) == 0 and {m.queue_id for m in again} == {0}
        with pytest.raises(MQClientError):
            consumer.seek(mq, 1_000)
        consumer.shutdown()
        with pytest.raises(MQClientError):
            consumer.poll(timeout_ms=10)


def poll_all(consumer: Any, want: int, rounds: int = 20) -> list:
    got: list = []
    for _ in range(rounds):
        got.extend(consumer.poll(timeout_ms=1_000))
        if len(got) >= want:
            break
    return got


def test_lite_pull_resumes_from_the_committed_offset() -> None:
    """``DefaultLitePullConsumerImpl.nextPullOffset``: with no seek and no pull offset yet, a queue starts where
    ``computePullFromWhere`` says: the group's committed offset, not the queue's start."""
    with Cluster(brokers=1, seed=21) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        mq = MessageQueue("T", "broker-a", 0)
        for i in range(6):
            producer.send(Message("T", str(i).encode()), queue=mq)
        first = cluster.lite_pull_consumer("LG", "T", consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                           auto_commit=False, pull_batch_size=3)
        got = first.poll(timeout_ms=1_000)
        assert [int(m.body) for m in got] == [0, 1, 2]
        first.commit()
        cluster.advance(100)
        first.shutdown()
        cluster.run_until_idle()
        assert cluster.committed_offsets("LG", "T") == {mq: 3}
        second = cluster.lite_pull_consumer("LG", "T", consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        assert [int(m.body) for m in poll_all(second, 3)] == [3, 4, 5]


def test_offset_queries_go_to_the_known_master_without_asking_the_name_server() -> None:
    """``MQAdminImpl.maxOffset``/``minOffset``: the master's address comes from the client's route table; the name
    server is asked only when the broker is not known (``findBrokerAddressInPublish`` returned null)."""
    with Cluster(brokers=1, seed=23) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        mq = MessageQueue("T", "broker-a", 0)
        for i in range(4):
            producer.send(Message("T", str(i).encode()), queue=mq)
        consumer = cluster.lite_pull_consumer("LG", queues=[mq], consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        assert [int(m.body) for m in poll_all(consumer, 4)] == [0, 1, 2, 3]
        route_queries = cluster.faults.drop("namesrv", "GET_ROUTEINFO_BY_TOPIC")
        consumer.seek_to_begin(mq)
        assert [int(m.body) for m in poll_all(consumer, 4)] == [0, 1, 2, 3]
        consumer.seek_to_end(mq)
        assert route_queries.fired == 0


def test_lite_pull_timestamp_defaults_to_half_an_hour_ago() -> None:
    """``DefaultLitePullConsumer.consumeTimestamp`` defaults to 30 minutes before the start; the queue's offset is
    the entry whose store time is nearest to it (``ConsumeQueue.getOffsetInQueueByTime``). The queue's oldest
    messages are deleted first: while offset 0 is stored the broker answers a new group's offset query with 0
    (``ConsumerManageProcessor.queryConsumerOffset``) and the timestamp is never used."""
    with Cluster(brokers=1, seed=22, segment_bytes=4096) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        mq = MessageQueue("T", "broker-a", 0)
        stored: dict[int, int] = {}
        cluster.advance(10 * 60_000)
        for i in range(120):  # one message a minute for two hours
            stored[i] = cluster.now_ms()
            producer.send(Message("T", str(i).encode()), queue=mq)
            cluster.advance(60_000)
        assert cluster.delete_old_data("broker-a", segments=1) == 1
        assert 0 < cluster.broker("broker-a").store.min_offset("T", 0) < 60
        start = cluster.now_ms()
        consumer = cluster.lite_pull_consumer("LG", "T", consume_from_where="CONSUME_FROM_TIMESTAMP",
                                              pull_batch_size=32)
        got = poll_all(consumer, 1, rounds=5)
        target = start - 30 * 60_000
        nearest = min(stored, key=lambda i: (abs(stored[i] - target), i))
        assert got and int(got[0].body) == nearest


def test_lite_pull_assign_and_auto_commit() -> None:
    with Cluster(brokers=1, seed=20) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        mq = MessageQueue("T", "broker-a", 1)
        for i in range(6):
            producer.send(Message("T", str(i).encode()), queue=mq)
        consumer = cluster.lite_pull_consumer("LG", queues=[mq], consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                              auto_commit_interval_ms=1_000)
        got: list = []
        for _ in range(10):
            got.extend(consumer.poll(timeout_ms=1_000))
            if len(got) >= 6:
                break
        assert [int(m.body) for m in got] == list(range(6))
        assert consumer.assignment() == {mq}
        consumer.poll(timeout_ms=1_500)  # waits past the auto-commit interval
        consumer.poll(timeout_ms=10)  # a poll after the interval commits what was polled
        cluster.run_until_idle()
        assert cluster.committed_offsets("LG", "T") == {mq: 6}
        with pytest.raises(MQClientError):
            consumer.subscribe("T", "*")


def test_consumer_config_is_validated() -> None:
    with pytest.raises(ValueError):
        ConsumerConfig(group="bad group!").validate()
    with pytest.raises(ValueError):
        ConsumerConfig(group="DEFAULT_CONSUMER").validate()
    with pytest.raises(ValueError):
        ConsumerConfig(group="G", pull_batch_size=0).validate()
    with pytest.raises(ValueError):
        ConsumerConfig(group="G", consume_message_batch_max_size=1025).validate()
    with pytest.raises(ValueError):
        ConsumerConfig(group="G", consumer_timeout_ms_when_suspend=1, broker_suspend_max_time_ms=2).validate()
    ConsumerConfig(group="G").validate()


def test_dead_letter_after_max_reconsume_times() -> None:
    with Cluster(brokers=1, seed=21) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        deliveries: list = []

        def always_fail(msgs):
            deliveries.extend(m.reconsume_times for m in msgs)
            return ConsumeStatus.RECONSUME_LATER

        cluster.push_consumer("CG", "T", always_fail, max_reconsume_times=2)
        cluster.advance(100)
        sent = producer.send(Message("T", b"poison"))
        cluster.run_until_idle()
        assert deliveries == [0, 1, 2]
        assert [m.msg_id for m in cluster.messages(dlq_topic("CG"))] == [sent.msg_id]
        assert cluster.events_of(SendBack)[-1].target == dlq_topic("CG")


def orderly_suspending(cluster: Cluster, seen: list, suspends: Any, max_reconsume_times: int) -> Any:
    """Topic T, and an orderly consumer of group OG that records (body, reconsume times) of each delivery and
    suspends the queue for 500 ms whenever ``suspends(msgs)``; the consumer, once it has started."""
    cluster.create_topic("T", queues=1)

    def listener(msgs: list[Any]) -> ConsumeOrderlyStatus:
        seen.extend((m.body, m.reconsume_times) for m in msgs)
        if suspends(msgs):
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return ConsumeOrderlyStatus.SUCCESS

    consumer = cluster.push_consumer("OG", "T", listener, orderly=True, max_reconsume_times=max_reconsume_times,
                                     suspend_current_queue_time_ms=500)
    cluster.advance(100)
    return consumer


def test_orderly_message_past_the_limit_goes_to_the_dead_letter_queue() -> None:
    with Cluster(brokers=1, seed=22) as cluster:
        seen: list = []
        consumer = orderly_suspending(cluster, seen, lambda msgs: msgs[0].body == b"bad", 2)
        producer = cluster.producer("PG")
        bad = producer.send(Message("T", b"bad"))
        producer.send(Message("T", b"good"))
        cluster.run_until_idle()
        assert seen == [(b"bad", 0), (b"bad", 1), (b"bad", 2), (b"good", 0)]
        backs = [e for e in cluster.events_of(SendBack) if e.node == consumer.instance.client_id]
        assert [(b.via, b.target, b.reconsume_times) for b in backs] == [("client", dlq_topic("OG"), 2)]
        assert [m.msg_id for m in cluster.messages(dlq_topic("OG"))] == [bad.msg_id]
        assert cluster.committed_offsets("OG", "T") == {MessageQueue("T", "broker-a", 0): 2}


def test_orderly_message_whose_dead_letter_send_fails_is_consumed_again_one_more_time() -> None:
    """Past the limit the orderly consumer sends the message to the DLQ; when that fails it suspends and hands the
    message to the listener again with one more reconsume time (checkReconsumeTimes / sendMessageBack false)."""
    with Cluster(brokers=1, seed=22) as cluster:
        seen: list = []
        orderly_suspending(cluster, seen, lambda _msgs: len(seen) < 4, 1)
        producer = cluster.producer("PG")
        producer.send(Message("T", b"bad"))
        # The consumer's DLQ send fails, every attempt of it (its producer tries 3 times).
        cluster.faults.fail("broker-a", "SEND_MESSAGE_V2", times=3)
        cluster.run_until_idle()
        assert seen[:3] == [(b"bad", 0), (b"bad", 1), (b"bad", 2)]


def test_a_stopped_broker_does_not_keep_the_simulation_busy() -> None:
    with Cluster(brokers=2, seed=23) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        seen: list = []
        cluster.push_consumer("CG", "T", collecting(seen))
        cluster.advance(100)
        send_n(producer, "T", 4, "before")
        cluster.run_until_idle()
        cluster.stop_broker("broker-b")
        after = {producer.send(Message("T", b"after"), queue=MessageQueue("T", "broker-a", 0)).msg_id}
        cluster.run_until_idle(timeout_ms=600_000)
        assert after <= {m.msg_id for m in seen}
        assert len(seen) == 5


def test_lite_pull_on_the_real_clock() -> None:
    with Cluster(brokers=1, clock="real") as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        sent = send_n(producer, "T", 3)
        consumer = cluster.lite_pull_consumer("LG", "T", consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        got: list = []
        for _ in range(50):
            got.extend(consumer.poll(timeout_ms=200))
            if len(got) >= 3:
                break
        assert {m.msg_id for m in got} == sent
        consumer.shutdown()


def test_broadcasting_offsets_survive_a_clean_restart_of_the_same_client_id() -> None:
    with Cluster(brokers=1, seed=24) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        seen: list = []
        consumer = cluster.push_consumer("BG", "T", collecting(seen), message_model="BROADCASTING",
                                         instance_name="bc", consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        first = send_n(producer, "T", 5, "a")
        cluster.run_until_idle()
        assert {m.msg_id for m in seen} == first
        consumer.shutdown()
        cluster.run_until_idle()
        later = send_n(producer, "T", 3, "b")
        again: list = []
        cluster.push_consumer("BG", "T", collecting(again), message_model="BROADCASTING", instance_name="bc",
                              consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.run_until_idle()
        assert {m.msg_id for m in again} == later


def test_orderly_handover_waits_for_the_running_batch() -> None:
    with Cluster(brokers=1, seed=25) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        by_consumer: dict[str, list[tuple[int, int]]] = {"a": [], "b": []}

        def recorder(name: str):
            def listener(msgs):
                by_consumer[name].extend((m.queue_id, m.queue_offset) for m in msgs)
                return ConsumeOrderlyStatus.SUCCESS

            return listener

        cluster.push_consumer("OG", "T", recorder("a"), orderly=True, consume_duration_ms=3_000,
                              consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.advance(100)
        queues = [MessageQueue("T", "broker-a", i) for i in range(2)]
        for i in range(12):
            producer.send(Message("T", str(i).encode()), queue=queues[i % 2])
        cluster.advance(4_000)
        b = cluster.push_consumer("OG", "T", recorder("b"), orderly=True,
                                  consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.run_until_idle()
        assert len(b.assignment()["T"]) == 1
        for name, seen in by_consumer.items():
            for qid in (0, 1):
                offsets = [o for q, o in seen if q == qid]
                assert offsets == sorted(offsets), name  # each consumer keeps the queue's order
        consumed = {item for seen in by_consumer.values() for item in seen}
        assert consumed == {(q, o) for q in (0, 1) for o in range(6)}
        assert sum(cluster.committed_offsets("OG", "T").values()) == 12


def test_orderly_queue_stays_while_its_consume_lock_is_busy() -> None:
    """``RebalancePushImpl.removeUnnecessaryMessageQueue``: an orderly queue given to another member is removed from
    the process-queue table only once its consume lock is free within 1 s; while a batch runs, the queue stays
    (dropped, the broker lock kept) and a later rebalance tries again (``updateProcessQueueTableInRebalance``)."""
    with Cluster(brokers=1, seed=25) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        a = cluster.push_consumer("OG", "T", collecting([], ConsumeOrderlyStatus.SUCCESS), orderly=True,
                                  consume_duration_ms=5_000, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.advance(100)
        queues = [MessageQueue("T", "broker-a", i) for i in range(2)]
        for i in range(12):
            producer.send(Message("T", str(i).encode()), queue=queues[i % 2])
        cluster.advance(1_000)
        b = cluster.push_consumer("OG", "T", collecting([], ConsumeOrderlyStatus.SUCCESS), orderly=True,
                                  consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.advance(1_500)  # A was told, rebalanced, and waited 1 s for the consume lock
        table = a.rebalance.process_queue_table
        given = [mq for mq, pq in table.items() if pq.dropped]
        assert len(given) == 1 and table[given[0]].try_unlock_times == 1
        assert cluster.broker("broker-a").locks.holder("OG", given[0]) is not None
        cluster.run_until_idle()
        assert given[0] not in a.rebalance.process_queue_table
        assert b.assignment()["T"] == {given[0]}


def test_a_successful_batch_acknowledges_every_message_without_an_ack_index() -> None:
    """``ackIndex`` starts at Integer.MAX_VALUE: a batch the listener consumes without touching it is acknowledged
    whole (none goes back, the offset passes all of it)."""
    with Cluster(brokers=1, seed=9) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        for i in range(4):
            producer.send(Message("T", str(i).encode()))
        calls: list[list[bytes]] = []

        def whole(msgs: list[Any], context: ConsumeConcurrentlyContext) -> ConsumeStatus:
            calls.append([m.body for m in msgs])
            return ConsumeStatus.CONSUME_SUCCESS

        cluster.push_consumer("CG", "T", whole, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                              consume_message_batch_max_size=4)
        cluster.run_until_idle()
        assert calls == [[b"0", b"1", b"2", b"3"]]
        assert [e.status for e in cluster.events_of(ConsumeResult)] == ["CONSUME_SUCCESS"] * 4
        assert cluster.events_of(SendBack) == []


#: ConsumerConfig options checkConfig bounds, with their inclusive ranges (DefaultMQPushConsumerImpl.checkConfig and
#: the lite pull consumer's): each bound is accepted, one past it refused.
CONSUMER_RANGES = {
    "consume_thread_max": (1, 1000), "consume_concurrently_max_span": (1, 65535),
    "pull_threshold_for_queue": (1, 65535), "pull_threshold_size_for_queue_mib": (1, 1024),
    "pull_interval_ms": (0, 65535), "consume_message_batch_max_size": (1, 1024), "pull_batch_size": (1, 1024),
    "max_reconsume_times": (-(2**31), 2**31 - 1), "suspend_current_queue_time_ms": (-(2**31), 2**31 - 1),
    "consume_duration_ms": (0, 2**31 - 1), "consume_timeout_minutes": (1, 2**31 - 1),
    "pull_threshold_for_all": (1, 2**31 - 1), "poll_timeout_ms": (0, 2**31 - 1),
    "pull_time_delay_ms_when_exception": (0, 2**31 - 1),
}


@pytest.mark.parametrize("name", sorted(CONSUMER_RANGES))
def test_consumer_options_accept_their_bounds_and_refuse_one_past(name: str) -> None:
    low, high = CONSUMER_RANGES[name]
    for value in (low, high):
        ConsumerConfig(group="G", **{name: value}).validate()
    for value in (low - 1, high + 1):
        with pytest.raises(ValueError):
            ConsumerConfig(group="G", **{name: value}).validate()


def test_advancing_a_real_clock_sleeps_that_long() -> None:
    with Cluster(brokers=1, clock="real") as cluster:
        before = cluster.now_ms()
        cluster.advance(30)
        assert cluster.now_ms() - before >= 30

