"""The official Apache RocketMQ 4.9.8 Java client: the same program against the real 4.9.8 cluster and `serve`.

Each test runs one scenario of the driver (``tests/realclients/java``, compiled with ``javac`` against the real
installation's ``lib/*``) on both targets and compares what the client observed: results, properties, order, counts
and error codes. A difference fails the test unless it is documented in docs/serve.md as deliberate, and then the
test asserts it. Needs the real installation (tests/realcluster.py says how it is found).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from javacompare import VOLATILE, Targets, assert_same
from realcluster import JavaDriver, RealCluster

from rocketspec.refimpl.served import ServedCluster

pytestmark = pytest.mark.xdist_group("rocketmq-real")


@pytest.fixture(scope="module")
def targets(java_driver: JavaDriver, real_rocketmq: RealCluster, served_for_java: ServedCluster) -> Iterator[Targets]:
    yield Targets(java_driver, real_rocketmq, served_for_java)


def test_sync_send(targets: Targets) -> None:
    real, served = targets.both("producer.syncSend", count=4)
    for obs in (real, served):
        assert [r["status"] for r in obs["results"]] == ["SEND_OK"] * 4
    assert_same(real, served, volatile={"msgId", "offsetMsgId", "broker", "queueId", "queueOffset"})


def test_async_and_oneway_sends_all_arrive_once(targets: Targets) -> None:
    real, served = targets.both("producer.asyncAndOneway", count=20)
    assert real["finished"] and real["outcomes"] == {"SEND_OK": 20} and len(real["received"]) == 40
    assert_same(real, served)


def test_batch_is_one_result_and_separate_messages(targets: Targets) -> None:
    """A batch's messages are stored one by one with the batch's properties appended to each (the stored size shows
    WAIT twice, as CommitLog.MessageExtBatchEncoder writes it); a mixed-topic batch is refused by the client."""
    real, served = targets.both("producer.batch")
    assert real["ids"] == 3 and [m["body"] for m in real["messages"]] == ["batch-0", "batch-1", "batch-2"]
    assert_same(real, served)


def test_producer_errors(targets: Targets) -> None:
    """Auto-created topics get 4 queues; bad names, big bodies, unwritable topics and unknown brokers fail alike."""
    real, served = targets.both("producer.errors")
    assert real["autoCreate"] == "SEND_OK" and real["tooLarge"]["code"] == 13
    assert_same(real, served)


def test_orderly_send_and_consume(targets: Targets) -> None:
    """Per key one queue, per queue strict order, a suspended message redelivered before any later one."""
    real, served = targets.both("producer.orderly", per=10)
    assert all(bodies == [f"{k}:{i}" for i in range(10)] for k, bodies in real["perKey"].items())
    assert_same(real, served)


def test_transactions_commit_rollback_and_check_back(targets: Targets) -> None:
    real, served = targets.both("producer.transactions")
    assert real["received"] == ["commit", "unknown-commit"]
    assert real["checked"] == ["unknown-commit", "unknown-rollback"]
    # The producer picks queues round-robin from a random start: which queue id a message lands on is chance.
    assert_same(real, served, volatile=VOLATILE | {"queueId"})


def test_clustering_consumers_share_the_queues(targets: Targets) -> None:
    real, served = targets.both("consumer.clustering")
    assert real == {"total": 40, "distinct": 40, "bothGotSome": True}
    assert_same(real, served)


def test_broadcasting_consumers_each_get_everything(targets: Targets) -> None:
    real, served = targets.both("consumer.broadcasting")
    assert real["first"] == real["second"] and len(real["first"]) == 12
    assert_same(real, served)


def test_tag_filtering(targets: Targets) -> None:
    real, served = targets.both("consumer.tags")
    assert len(real["some"]) == 6 and len(real["all"]) == 12
    assert_same(real, served)


def test_retry_comes_back_with_reconsume_times(targets: Targets) -> None:
    """RECONSUME_LATER: back from %RETRY% after the (1 s) delay level, under the original topic, reconsumeTimes 1.
    How soon depends on the client's route polling on both targets, so only the lower bound is compared."""
    real, served = targets.both("consumer.retry")
    assert real["reconsumeTimes"] == {f"r{i}": [0, 1] for i in range(3)} and real["backAfterAtLeast900ms"]
    assert_same(real, served, volatile={"slowestBackMs"})


def test_dead_letter_after_max_reconsume_times(targets: Targets) -> None:
    real, served = targets.both("consumer.deadLetter")
    assert real["deliveries"] == ["0", "1", "2"] and real["dlqMaxOffset"] == 1
    assert_same(real, served)


def test_delay_levels(targets: Targets) -> None:
    """Delay level 2 (1 s here) holds the message at least that long; a level past the table is the last level."""
    real, served = targets.both("consumer.delayed")
    assert real["received"] == ["later", "now"] and real["delayedAtLeast900ms"]
    assert_same(real, served, volatile={"delayedUnder10s"})


def test_pull_consumer_statuses_and_offsets(targets: Targets) -> None:
    """FOUND / NO_NEW_MSG / OFFSET_ILLEGAL, tag filtering at the broker, stored offsets, offsets by time
    (ConsumeQueue.getOffsetInQueueByTime: nearest entry, the last one for a future time), unknown topics."""
    real, served = targets.both("consumer.pull")
    assert real["pastMax"]["status"] == "OFFSET_ILLEGAL" and real["searchFuture"] == 4
    assert_same(real, served)


def test_lite_pull_consumer(targets: Targets) -> None:
    """Ten messages over two brokers' two queues each (3, 3, 2, 2); a seek to offset 1 on each queue leaves six."""
    real, served = targets.both("consumer.litePull")
    assert len(real["subscribed"]) == 10 and real["beforeSeekCount"] == 10 and real["afterSeekCount"] == 6
    assert_same(real, served)


def test_consume_progress_through_admin(targets: Targets) -> None:
    real, served = targets.both("consumer.offsets")
    assert real == {"lagPerQueue": [0], "consumed": 6}
    assert_same(real, served)


def test_new_group_from_last_offset_reads_what_is_in_memory(targets: Targets) -> None:
    """ConsumerManageProcessor.queryConsumerOffset: no offset, min offset 0 and the first message in memory: 0."""
    real, served = targets.both("consumer.fromLastOffset")
    assert len(real["received"]) == 6
    assert_same(real, served)


def test_vip_channel(targets: Targets) -> None:
    """A producer with vipChannelEnabled sends to port - 2, where brokers also listen (BrokerController)."""
    real, served = targets.both("producer.vipChannel")
    assert real == {"status": "SEND_OK", "received": ["vip"]}
    assert_same(real, served)
