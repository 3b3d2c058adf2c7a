"""Consumer offset stores (refimpl/client/offset_store.py): RemoteBrokerOffsetStore against a real broker of the
simulated cluster, LocalFileOffsetStore on disk and in memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rocketspec.refimpl.client.config import ClientConfig
from rocketspec.refimpl.client.instance import ClientInstance
from rocketspec.refimpl.client.offset_store import (
    LocalFileOffsetStore,
    RemoteBrokerOffsetStore,
    decode_offsets,
    encode_offsets,
)
from rocketspec.refimpl.cluster import Cluster
from rocketspec.refimpl.events import EventLog, OffsetUpdate
from rocketspec.refimpl.runtime import SimulatedRuntime
from rocketspec.spec.protocol import ReadOffsetType
from rocketspec.spec.queues import MessageQueue

MQ = MessageQueue("T", "broker-a", 0)


def started_instance(cluster: Cluster, name: str = "offsets") -> ClientInstance:
    instance = ClientInstance(cluster.runtime, cluster.network, cluster.events, cluster.namesrv_addr,
                              f"127.0.0.1@{name}", ClientConfig(instance_name=name))
    instance.start()
    cluster.runtime.wait(instance.update_topic_route("T"))
    return instance


def test_update_offset_increase_only_and_events() -> None:
    with Cluster(brokers=1, seed=1) as cluster:
        cluster.create_topic("T", queues=1)
        store = RemoteBrokerOffsetStore(started_instance(cluster), "CG")
        store.update_offset(MQ, 5, True)
        store.update_offset(MQ, 3, True)  # lower: ignored
        store.update_offset(MQ, 3, False)  # forced
        store.update_offset(MQ, 3, False)  # unchanged: no event
        assert store.memory_offset(MQ) == 3
        events = [(e.offset, e.increase_only) for e in cluster.events_of(OffsetUpdate)]
        assert events == [(5, True), (3, False)]


def test_read_offset_memory_store_and_errors() -> None:
    with Cluster(brokers=1, seed=2) as cluster:
        cluster.create_topic("T", queues=2)
        instance = started_instance(cluster)
        store = RemoteBrokerOffsetStore(instance, "CG")
        wait = cluster.runtime.wait
        assert wait(store.read_offset(MQ, ReadOffsetType.READ_FROM_MEMORY)) == -1
        # Nothing committed and offset 0 not on disk: the broker answers 0 (ConsumerManageProcessor).
        assert wait(store.read_offset(MQ, ReadOffsetType.READ_FROM_STORE)) == 0
        store.remove_offset(MQ)
        cluster.faults.fail("broker-a", "QUERY_CONSUMER_OFFSET", code="QUERY_NOT_FOUND", times=1)
        assert wait(store.read_offset(MQ, ReadOffsetType.READ_FROM_STORE)) == -1
        assert store.memory_offset(MQ) == -1
        store.update_offset(MQ, 7, False)
        store.persist(MQ)
        cluster.advance(10)
        assert cluster.committed_offsets("CG", "T") == {MQ: 7}
        other = RemoteBrokerOffsetStore(instance, "CG")
        assert wait(other.read_offset(MQ, ReadOffsetType.MEMORY_FIRST_THEN_STORE)) == 7
        assert other.memory_offset(MQ) == 7 and not other.dirty([MQ])
        # Any broker error code reads as -1; a transport failure as -2.
        cluster.faults.fail("broker-a", "QUERY_CONSUMER_OFFSET", code="SYSTEM_ERROR", times=1)
        assert wait(other.read_offset(MQ, ReadOffsetType.READ_FROM_STORE)) == -1
        cluster.faults.drop("broker-a", "QUERY_CONSUMER_OFFSET", times=1)
        assert wait(other.read_offset(MQ, ReadOffsetType.READ_FROM_STORE)) == -2
        unknown = MessageQueue("T", "broker-zz", 0)
        assert wait(other.read_offset(unknown, ReadOffsetType.READ_FROM_STORE)) == -2


def test_persist_all_forgets_queues_not_given() -> None:
    with Cluster(brokers=1, seed=3) as cluster:
        cluster.create_topic("T", queues=2)
        store = RemoteBrokerOffsetStore(started_instance(cluster), "CG")
        other = MessageQueue("T", "broker-a", 1)
        store.update_offset(MQ, 4, False)
        store.update_offset(other, 9, False)
        assert store.dirty([MQ, other])
        store.persist_all({MQ})
        cluster.advance(10)
        assert cluster.committed_offsets("CG", "T") == {MQ: 4}
        assert store.clone_offset_table() == {MQ: 4}
        assert not store.dirty([MQ])


class FakeInstance:
    def __init__(self, runtime: SimulatedRuntime, client_id: str = "127.0.0.1@fake") -> None:
        self.runtime = runtime
        self.client_id = client_id
        self.events = EventLog(runtime.now_ms)


def test_local_file_store_writes_json_with_backup(tmp_path: Path) -> None:
    instance: Any = FakeInstance(SimulatedRuntime())
    store = LocalFileOffsetStore(instance, "BG", str(tmp_path))
    path = tmp_path / "127.0.0.1@fake" / "BG" / "offsets.json"
    assert store.store_path == str(path)
    store.update_offset(MQ, 3, False)
    store.persist_all({MQ})
    assert decode_offsets(path.read_text()) == {MQ: 3}
    store.update_offset(MQ, 8, True)
    store.persist(MQ)
    assert decode_offsets(path.read_text()) == {MQ: 8}
    assert decode_offsets((tmp_path / "127.0.0.1@fake" / "BG" / "offsets.json.bak").read_text()) == {MQ: 3}
    assert json.loads(path.read_text())["offsetTable"][0] == {
        "topic": "T", "brokerName": "broker-a", "queueId": 0, "offset": 8}
    # A new store (a restart) loads the file; a broken main file falls back to the backup.
    again = LocalFileOffsetStore(instance, "BG", str(tmp_path))
    again.load()
    assert again.memory_offset(MQ) == 8
    path.write_text("{not json")
    third = LocalFileOffsetStore(instance, "BG", str(tmp_path))
    assert instance.runtime.wait(third.read_offset(MQ, ReadOffsetType.READ_FROM_STORE)) == 3


def test_local_store_in_memory_survives_a_restart_on_the_same_runtime_only() -> None:
    runtime = SimulatedRuntime()
    instance: Any = FakeInstance(runtime)
    store = LocalFileOffsetStore(instance, "BG", None)
    store.update_offset(MQ, 12, False)
    store.persist_all({MQ})
    restarted = LocalFileOffsetStore(FakeInstance(runtime), "BG", None)
    restarted.load()
    assert restarted.memory_offset(MQ) == 12
    elsewhere = LocalFileOffsetStore(FakeInstance(SimulatedRuntime()), "BG", None)
    elsewhere.load()
    assert elsewhere.memory_offset(MQ) == -1
    assert encode_offsets({}) == json.dumps({"offsetTable": []}, indent=2)


def test_an_offset_is_dirty_from_zero_until_persisted() -> None:
    """``dirty``: a queue whose in-memory offset (0 included) differs from what was last persisted; none when it
    has no offset or is persisted."""
    with Cluster(brokers=1, seed=1) as cluster:
        cluster.create_topic("T", queues=1)
        store = RemoteBrokerOffsetStore(started_instance(cluster), "CG")
        assert not store.dirty([MQ])
        store.update_offset(MQ, 0, False)
        assert store.dirty([MQ])
        store.persist(MQ)
        cluster.run_until_idle()
        assert not store.dirty([MQ])
        store.update_offset(MQ, 2, True)
        assert store.dirty([MQ])
