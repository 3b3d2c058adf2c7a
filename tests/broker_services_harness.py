"""A real broker on a simulated runtime with one raw remoting client, for the broker service tests."""

from __future__ import annotations

import json
from typing import Any

from rocketspec.refimpl.broker.broker import Broker
from rocketspec.refimpl.broker.config import BrokerConfig
from rocketspec.refimpl.events import EventLog
from rocketspec.refimpl.message import MessageExt, decode_offset_message_id, encode_properties
from rocketspec.refimpl.remoting import Network, RemotingCommand
from rocketspec.refimpl.runtime import SimulatedRuntime
from rocketspec.refimpl.store import MemoryDisk
from rocketspec.spec.protocol import HEARTBEAT_BROKER_INTERVAL_MS, VERSION_V4_9_8, RequestCode

CLIENT_ID = "127.0.0.1@harness"


class BrokerHarness:
    """``broker-a`` (no name server) plus a client that records the requests the broker sends it."""

    def __init__(self, *, seed: int = 0, **config: Any) -> None:
        self.runtime = SimulatedRuntime(seed)
        self.events = EventLog(self.runtime.now_ms)
        self.network = Network(self.runtime, self.events, latency_ms=1)
        self.disk = MemoryDisk()
        self.config = BrokerConfig(broker_name="broker-a", **config)
        self.broker = Broker(self.config, self.runtime, self.network, self.events, None, disk=self.disk)
        self.broker.start()
        self.received: list[RemotingCommand] = []
        self.client = self.network.client(CLIENT_ID, self)
        self.uniq = 0

    # the client's request handler ------------------------------------------------------------------------------------
    def handle(self, request: RemotingCommand, channel: Any) -> RemotingCommand | None:
        self.received.append(request)
        return None

    # requests -------------------------------------------------------------------------------------------------------
    def call(self, code: int, fields: dict[str, object], body: bytes | None = None, *,
             version: int = VERSION_V4_9_8) -> RemotingCommand:
        request = RemotingCommand.request(code, fields, body, version=version)
        return self.runtime.wait(self.client.invoke(self.broker.addr, request, 3000))

    def oneway(self, code: int, fields: dict[str, object], body: bytes | None = None) -> None:
        self.client.invoke_oneway(self.broker.addr, RemotingCommand.request(code, fields, body, oneway=True))
        self.runtime.advance(5)

    def next_uniq(self) -> str:
        self.uniq += 1
        return f"7F00000100002A9F0000000000000{self.uniq:03X}"

    def send(self, topic: str, body: bytes = b"hello", *, queue_id: int = 0, props: dict[str, str] | None = None,
             reconsume_times: int | None = None, max_reconsume_times: int | None = None, group: str = "PG",
             born_timestamp: int | None = None, version: int = VERSION_V4_9_8) -> RemotingCommand:
        """SEND_MESSAGE_V2 with a UNIQ_KEY and TAGS=tagA unless ``props`` says otherwise."""
        properties = {"UNIQ_KEY": self.next_uniq(), "TAGS": "tagA", "WAIT": "true"}
        properties.update(props or {})
        fields = {"a": group, "b": topic, "c": "TBW102", "d": 4, "e": queue_id, "f": 0,
                  "g": self.runtime.now_ms() if born_timestamp is None else born_timestamp, "h": 0,
                  "i": encode_properties(properties), "j": reconsume_times, "l": max_reconsume_times}
        return self.call(RequestCode.SEND_MESSAGE_V2, fields, body, version=version)

    def register_producer(self, group: str) -> None:
        """Heartbeat as a producer of ``group`` now and every 30 s (brokers drop clients silent for 120 s)."""
        body = json.dumps({"clientID": CLIENT_ID, "producerDataSet": [{"groupName": group}],
                           "consumerDataSet": []}).encode()
        assert self.call(RequestCode.HEART_BEAT, {}, body).code == 0

        def beat() -> None:
            self.client.invoke(self.broker.addr, RemotingCommand.request(RequestCode.HEART_BEAT, {}, body), 3000,
                               daemon=True)

        self.runtime.call_every(HEARTBEAT_BROKER_INTERVAL_MS, beat)

    # inspection -----------------------------------------------------------------------------------------------------
    def messages(self, topic: str, queue_id: int = 0) -> list[MessageExt]:
        store = self.broker.store
        low, high = store.min_offset(topic, queue_id), store.max_offset(topic, queue_id)
        found = []
        for _qo, commit_log_offset, _size, _tags in store.queue_entries(topic, queue_id, low, high - low):
            msg = store.look_message(commit_log_offset)
            assert msg is not None
            found.append(msg)
        return found

    def tags_codes(self, topic: str, queue_id: int = 0) -> list[int]:
        store = self.broker.store
        return [entry[3] for entry in store.queue_entries(topic, queue_id, 0, store.max_offset(topic, queue_id))]

    @staticmethod
    def commit_log_offset(response: RemotingCommand) -> int:
        return decode_offset_message_id(response.ext_fields["msgId"])[2]

    def restart(self, *, crash: bool = False) -> None:
        """Stop the broker (cleanly or by a crash) and start a new one on the same disk."""
        if crash:
            self.broker.crash()
        else:
            self.broker.shutdown()
        self.runtime.advance(10)
        self.broker = Broker(self.config, self.runtime, self.network, self.events, None, disk=self.disk)
        self.broker.start()
