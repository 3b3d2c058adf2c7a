"""End-to-end scenarios on the facade: the behaviours a test-double user relies on."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from rocketspec.refimpl import (
    Cluster,
    ConsumeOrderlyStatus,
    ConsumeStatus,
    Message,
    MQBrokerError,
    SendStatus,
    TransactionState,
)
from rocketspec.refimpl.events import ConsumeDeliver, RebalanceAssign, SendAttempt, SendResultEvent, TxnCheck
from rocketspec.spec.protocol import DELAY_LEVEL_MILLIS, dlq_topic, retry_topic


def collecting(seen: list, status: object = ConsumeStatus.CONSUME_SUCCESS):
    def listener(msgs):
        seen.extend(msgs)
        return status

    return listener


def test_issue_example_runs() -> None:
    with Cluster(brokers=2, clock="simulated", seed=7) as cluster:
        cluster.create_topic("TopicTest", queues=4)
        producer = cluster.producer("PG")
        result = producer.send(Message("TopicTest", b"hello", tags="A", keys="k1"))
        assert result.status is SendStatus.SEND_OK
        assert result.queue.topic == "TopicTest" and result.queue_offset == 0 and len(result.msg_id) == 32
        seen: list = []
        cluster.push_consumer("CG", {"TopicTest": "*"}, collecting(seen),
                              consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.faults.fail("broker-a", "SEND_MESSAGE", code="SYSTEM_ERROR", times=1)
        cluster.run_until_idle()
        assert [m.body for m in seen] == [b"hello"]
        msg = seen[0]
        assert (msg.topic, msg.tags, msg.keys, msg.msg_id) == ("TopicTest", "A", ("k1",), result.msg_id)
        assert msg.queue == result.queue and msg.queue_offset == result.queue_offset and msg.reconsume_times == 0


def test_send_retried_after_broker_error_lands_on_another_broker() -> None:
    with Cluster(brokers=2, seed=1) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        # Whichever broker the first attempt picks answers SYSTEM_ERROR once.
        cluster.faults.fail("*", "SEND_MESSAGE_V2", code="SYSTEM_ERROR", times=1)
        first = producer.send(Message("T", b"x"))
        attempts = cluster.events_of(SendAttempt)
        results = cluster.events_of(SendResultEvent)
        assert len(attempts) == 2
        assert attempts[0].broker != attempts[1].broker
        assert results[0].status == "ERROR" and results[0].code == 1
        assert first.status is SendStatus.SEND_OK and first.queue.broker_name == attempts[1].broker


def test_non_retryable_broker_code_is_raised() -> None:
    with Cluster(brokers=2, seed=1) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        cluster.faults.fail("*", "SEND_MESSAGE_V2", code="MESSAGE_ILLEGAL", times=1)
        with pytest.raises(MQBrokerError) as info:
            producer.send(Message("T", b"x"))
        assert info.value.code == 13
        assert len(cluster.events_of(SendAttempt)) == 1


def test_clustering_consumers_share_queues_and_nothing_acknowledged_is_lost() -> None:
    with Cluster(brokers=2, seed=3) as cluster:
        cluster.create_topic("T", queues=4)
        producer = cluster.producer("PG")
        seen: list = []
        consumers = [
            cluster.push_consumer("CG", {"T": "*"}, collecting(seen), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
            for _ in range(2)
        ]
        sent = {producer.send(Message("T", f"m{i}".encode())).msg_id for i in range(40)}
        cluster.run_until_idle()
        assert sent <= {m.msg_id for m in seen}
        # A third consumer joins, one leaves cleanly, one crashes: every acknowledged message is still consumed.
        third = cluster.push_consumer("CG", {"T": "*"}, collecting(seen))
        sent |= {producer.send(Message("T", f"n{i}".encode())).msg_id for i in range(40)}
        consumers[0].shutdown()
        sent |= {producer.send(Message("T", f"o{i}".encode())).msg_id for i in range(40)}
        cluster.crash_client(consumers[1])
        sent |= {producer.send(Message("T", f"p{i}".encode())).msg_id for i in range(40)}
        cluster.run_until_idle()
        assert sent <= {m.msg_id for m in seen}
        assignment = third.assignment()["T"]
        assert len(assignment) == 8  # the survivor owns every queue of both brokers
        assigns = [e for e in cluster.events_of(RebalanceAssign) if e.topic == "T"]
        assert assigns


def test_no_queue_has_two_owners_once_views_agree() -> None:
    with Cluster(brokers=2, seed=5) as cluster:
        cluster.create_topic("T", queues=3)
        consumers = [cluster.push_consumer("CG", "T", collecting([]), allocate_strategy=s)
                     for s in ("AVG", "AVG", "AVG")]
        cluster.advance(25_000)
        owned = Counter(mq for c in consumers for mq in c.assignment().get("T", ()))
        assert sorted(owned.values()) == [1] * 6


def test_reconsume_later_redelivers_after_the_delay_level_and_reaches_the_dlq() -> None:
    with Cluster(brokers=1, seed=2) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        deliveries: list = []

        def failing(msgs):
            deliveries.extend((cluster.now_ms(), m.reconsume_times, m.msg_id) for m in msgs)
            return ConsumeStatus.RECONSUME_LATER

        cluster.push_consumer("CG", "T", failing, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        sent = producer.send(Message("T", b"poison"))
        cluster.run_until_idle()
        assert [r for _, r, _ in deliveries] == list(range(17))
        assert {mid for _, _, mid in deliveries} == {sent.msg_id}
        for n in range(1, 17):
            gap = deliveries[n][0] - deliveries[n - 1][0]
            expected = DELAY_LEVEL_MILLIS[2 + n - 1]  # delay level 3 + (reconsume_times - 1)
            assert expected <= gap <= expected + 1_000, (n, gap, expected)
        dlq = cluster.messages(dlq_topic("CG"))
        assert [m.msg_id for m in dlq] == [sent.msg_id]
        assert dlq[0].reconsume_times == 17  # consumerSendMsgBack adds one on the DLQ path too
        assert cluster.messages(retry_topic("CG"))


def test_deleting_old_data_makes_a_consumer_correct_its_offset() -> None:
    with Cluster(brokers=1, seed=4, segment_bytes=4096) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        for i in range(200):
            producer.send(Message("T", b"x" * 100 + str(i).encode()))
        deleted = cluster.delete_old_data("broker-a", segments=3)
        assert deleted == 3
        min_offset = cluster.broker("broker-a").store.min_offset("T", 0)
        assert min_offset > 0
        seen: list = []
        cluster.push_consumer("CG", "T", collecting(seen), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.run_until_idle()
        offsets = sorted(m.queue_offset for m in seen)
        assert offsets == list(range(min_offset, 200))
        committed = cluster.committed_offsets("CG", "T")
        assert list(committed.values()) == [200]


def test_transaction_commit_rollback_and_check_back() -> None:
    with Cluster(brokers=1, seed=6) as cluster:
        cluster.create_topic("T", queues=2)
        decisions = {b"commit": TransactionState.COMMIT_MESSAGE, b"rollback": TransactionState.ROLLBACK_MESSAGE,
                     b"unknown": TransactionState.UNKNOW, b"unknown-rollback": TransactionState.UNKNOW}
        checked: list = []

        def executor(msg, arg):
            return decisions[msg.body]

        def checker(msg):
            checked.append(msg.body)
            return TransactionState.COMMIT_MESSAGE if msg.body == b"unknown" else TransactionState.ROLLBACK_MESSAGE

        producer = cluster.transaction_producer("TPG", executor, checker)
        seen: list = []
        cluster.push_consumer("CG", "T", collecting(seen), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        results = {body: producer.send_in_transaction(Message("T", body)) for body in decisions}
        assert results[b"commit"].local_transaction_state is TransactionState.COMMIT_MESSAGE
        cluster.run_until_idle()
        assert sorted(m.body for m in seen) == [b"commit", b"unknown"]
        assert sorted(checked) == [b"unknown", b"unknown-rollback"]
        assert len(cluster.events_of(TxnCheck)) >= 2


def test_broker_restarted_from_its_data_directory_keeps_acknowledged_messages(tmp_path: Path) -> None:
    with Cluster(brokers=1, seed=8, data_dir=tmp_path, flush="sync") as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        sent = [producer.send(Message("T", f"m{i}".encode())) for i in range(30)]
        cluster.restart_broker("broker-a", crash=True)
        stored = {m.msg_id for m in cluster.messages("T")}
        assert {r.msg_id for r in sent} <= stored
        seen: list = []
        cluster.push_consumer("CG", "T", collecting(seen), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        cluster.run_until_idle()
        assert {r.msg_id for r in sent} <= {m.msg_id for m in seen}
    # A new cluster on the same directory sees the same data.
    with Cluster(brokers=1, seed=8, data_dir=tmp_path) as again:
        assert {r.msg_id for r in sent} <= {m.msg_id for m in again.messages("T")}


def test_async_flush_crash_loses_only_unflushed_messages() -> None:
    with Cluster(brokers=1, seed=9) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        early = [producer.send(Message("T", b"early")) for _ in range(5)]
        cluster.advance(1_000)  # the async flush runs
        producer.send(Message("T", b"late"))
        cluster.restart_broker("broker-a", crash=True)
        bodies = [m.body for m in cluster.messages("T")]
        assert bodies == [b"early"] * len(early)


def test_delay_level_message_is_delivered_on_time() -> None:
    with Cluster(brokers=1, seed=10) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        got: list = []
        cluster.push_consumer("CG", "T", lambda msgs: got.extend((cluster.now_ms(), m) for m in msgs)
                              or ConsumeStatus.CONSUME_SUCCESS)
        sent_at = cluster.now_ms()
        producer.send(Message("T", b"later", delay_level=3))
        cluster.run_until_idle()
        assert len(got) == 1
        assert 10_000 <= got[0][0] - sent_at <= 10_500


def test_broadcasting_delivers_every_message_to_every_consumer() -> None:
    with Cluster(brokers=2, seed=11) as cluster:
        cluster.create_topic("T", queues=2)
        seen_a: list = []
        seen_b: list = []
        cluster.push_consumer("BG", "T", collecting(seen_a), message_model="BROADCASTING")
        cluster.push_consumer("BG", "T", collecting(seen_b), message_model="BROADCASTING")
        producer = cluster.producer("PG")
        sent = {producer.send(Message("T", str(i).encode())).msg_id for i in range(20)}
        cluster.run_until_idle()
        assert {m.msg_id for m in seen_a} == sent == {m.msg_id for m in seen_b}


def by_key_number(queues, msg, arg):
    return queues[int(arg[1:]) % len(queues)]


def test_orderly_consumption_keeps_per_key_order_through_suspends() -> None:
    with Cluster(brokers=1, seed=12) as cluster:
        cluster.create_topic("T", queues=4)
        producer = cluster.producer("PG")
        order: dict[str, list[int]] = {}
        failures = {"left": 3}

        def orderly(msgs):
            for m in msgs:
                if failures["left"] and m.keys == ("k1",):
                    failures["left"] -= 1
                    return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                order.setdefault(m.keys[0], []).append(int(m.body))
            return ConsumeOrderlyStatus.SUCCESS

        cluster.push_consumer("OG", "T", orderly, orderly=True, consume_from_where="CONSUME_FROM_FIRST_OFFSET")

        for i in range(30):
            key = f"k{i % 3}"
            producer.send(Message("T", str(i).encode(), keys=key), selector=by_key_number, arg=key)
        cluster.run_until_idle()
        for key, values in order.items():
            assert values == sorted(values), key
        assert sum(len(v) for v in order.values()) == 30


def test_batch_async_and_oneway_sends() -> None:
    with Cluster(brokers=1, seed=13) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        batch = producer.send_batch([Message("T", f"b{i}".encode()) for i in range(5)])
        assert batch.status is SendStatus.SEND_OK and len(batch.msg_id.split(",")) == 5
        results: list = []
        producer.send_async(Message("T", b"async"), lambda result, error: results.append((result, error)))
        producer.send_oneway(Message("T", b"oneway"))
        cluster.run_until_idle()
        assert results and results[0][1] is None and results[0][0].status is SendStatus.SEND_OK
        assert sorted(m.body for m in cluster.messages("T")) == sorted(
            [f"b{i}".encode() for i in range(5)] + [b"async", b"oneway"])


def test_lite_pull_consumer_polls_and_commits() -> None:
    with Cluster(brokers=1, seed=14) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        sent = {producer.send(Message("T", str(i).encode())).msg_id for i in range(10)}
        consumer = cluster.lite_pull_consumer("LG", "T", consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                              auto_commit=False)
        got: list = []
        for _ in range(20):
            got.extend(consumer.poll(timeout_ms=1000))
            if len(got) >= 10:
                break
        assert {m.msg_id for m in got} == sent
        consumer.commit()
        cluster.advance(1_000)
        assert sum(cluster.committed_offsets("LG", "T").values()) == 10


def test_tag_filtering() -> None:
    with Cluster(brokers=1, seed=15) as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        seen: list = []
        cluster.push_consumer("CG", {"T": "A || C"}, collecting(seen))
        for tag in "ABCABC":
            producer.send(Message("T", tag.encode(), tags=tag))
        cluster.run_until_idle()
        assert sorted(m.tags for m in seen) == ["A", "A", "C", "C"]


def test_same_seed_gives_the_same_run() -> None:
    def run() -> list[tuple]:
        with Cluster(brokers=2, seed=21) as cluster:
            cluster.create_topic("T", queues=3)
            producer = cluster.producer("PG")
            cluster.push_consumer("CG", "T", collecting([]), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
            cluster.push_consumer("CG", "T", collecting([]), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
            cluster.faults.fail("broker-a", None, code="SYSTEM_BUSY", probability=0.2)
            for i in range(20):
                try:
                    producer.send(Message("T", str(i).encode()))
                except MQBrokerError:
                    pass
            cluster.run_until_idle()
            return [(e.kind, e.ts_ms, e.node) for e in cluster.events.events]

    assert run() == run()


def test_consumer_counts_deliveries_per_message() -> None:
    with Cluster(brokers=1, seed=16) as cluster:
        cluster.create_topic("T", queues=1)
        producer = cluster.producer("PG")
        cluster.push_consumer("CG", "T", collecting([]), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        for i in range(5):
            producer.send(Message("T", str(i).encode()))
        cluster.run_until_idle()
        deliveries = Counter(e.msg_id for e in cluster.events_of(ConsumeDeliver))
        assert set(deliveries.values()) == {1}


def test_real_clock_cluster_sends_and_consumes() -> None:
    with Cluster(brokers=1, clock="real") as cluster:
        cluster.create_topic("T", queues=2)
        producer = cluster.producer("PG")
        seen: list = []
        cluster.push_consumer("CG", "T", collecting(seen), consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        sent = {producer.send(Message("T", str(i).encode())).msg_id for i in range(10)}
        cluster.run_until_idle(timeout_ms=30_000)
        assert sent <= {m.msg_id for m in seen}


def test_bad_facade_arguments_are_clear_errors() -> None:
    with pytest.raises(ValueError):
        Cluster(brokers=0)
    with pytest.raises(ValueError):
        Cluster(clock="sundial")
    with pytest.raises(TypeError):
        Cluster(no_such_option=1)
    with Cluster() as cluster:
        with pytest.raises(TypeError):
            cluster.producer("PG", no_such_option=True)
        with pytest.raises(ValueError):
            cluster.push_consumer("CG", "T", collecting([]), message_model="SIDEWAYS")
        with pytest.raises(KeyError):
            cluster.broker("broker-z")
