"""What the name_server lockstep machine found in the reference name server, each checked against a real 4.9.8 name
server (``bin/cluster.sh start DIR 0 PORT``, requests over a socket) before it was fixed; kept as plain examples."""

from __future__ import annotations

import json
import zlib

from rocketspec.refimpl.events import EventLog
from rocketspec.refimpl.namesrv import NameServer
from rocketspec.refimpl.remoting import Network, RemotingClient, RemotingCommand
from rocketspec.refimpl.runtime import SimulatedRuntime
from rocketspec.spec.protocol import RequestCode, ResponseCode

NS = "127.0.0.1:9876"


class World:
    def __init__(self) -> None:
        self.runtime = SimulatedRuntime(seed=1)
        self.network = Network(self.runtime, EventLog(self.runtime.now_ms))
        self.namesrv = NameServer(self.runtime, self.network, None, NS)
        self.namesrv.start()
        self.client: RemotingClient = self.network.client("admin")

    def ask(self, code: int, fields: dict[str, object] | None = None, body: bytes | None = None) -> RemotingCommand:
        return self.runtime.wait(self.client.invoke(NS, RemotingCommand.request(code, fields or {}, body), 3000))

    def config(self) -> dict[str, str]:
        text = (self.ask(RequestCode.GET_NAMESRV_CONFIG).body or b"").decode()
        return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_a_compressed_body_cut_short_is_refused() -> None:
    """NS-1: a chunk shorter than its length fails the whole body (RegisterBrokerBody.readBytes throws "End of
    compressed data has reached"), the filter servers' chunk too; before, its error was taken for the filter list's
    JSON error and the registration went through with no filter servers. Only unparseable JSON there is forgiven."""
    w = World()
    servers = json.dumps(["10.0.0.9:30000"]).encode()
    version = json.dumps({"counter": 1, "timestamp": 1}).encode()
    entry = b"T 4 4 6 SINGLE_TAG"

    def body(listed: bytes, length: int) -> bytes:
        raw = (len(version).to_bytes(4, "big") + version + (1).to_bytes(4, "big") + len(entry).to_bytes(4, "big")
               + entry + length.to_bytes(4, "big") + listed)
        return zlib.compress(raw)

    fields = {"brokerName": "b", "brokerAddr": "10.0.0.9:20911", "clusterName": "C", "haServerAddr": "h",
              "brokerId": 0, "compressed": True}
    short = w.ask(RequestCode.REGISTER_BROKER, fields, body(servers[:5], len(servers)))
    assert short.code == ResponseCode.SYSTEM_ERROR and "Failed to decode RegisterBrokerBody" in (short.remark or "")
    forgiven = w.ask(RequestCode.REGISTER_BROKER, fields, body(b"[oops", 5))
    assert forgiven.code == ResponseCode.SUCCESS


def test_update_namesrv_config_as_4_9_8() -> None:
    """NS-15: rocketmqHome is always black-listed (DefaultRequestProcessor.initConfigBlackList); an integer that
    does not parse leaves the property as it was and a boolean is true only for "true" in any case
    (MixAll.properties2Object); undecodable bytes are read as U+FFFD, not refused."""
    w = World()
    refused = w.ask(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"rocketmqHome=/x\n")
    assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
    w.ask(RequestCode.UPDATE_NAMESRV_CONFIG,
          body=b"serverWorkerThreads=abc\norderMessageEnable=TRUE\nclusterTest=yes\n")
    assert w.ask(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"\xff\xfeproductEnvName=bin\n").code == ResponseCode.SUCCESS
    config = w.config()
    assert (config["serverWorkerThreads"], config["orderMessageEnable"], config["clusterTest"]) == (
        "8", "true", "false")
    assert config["productEnvName"] == "center"  # the key read was "\ufffd\ufffdproductEnvName": unknown, ignored


def test_a_restarted_name_server_has_the_configuration_it_started_with_and_its_kv_config() -> None:
    """NS-18: a restart is a new process: the command line's configuration, kvConfig.json's KV config."""
    w = World()
    w.ask(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")
    w.ask(RequestCode.PUT_KV_CONFIG, {"namespace": "N", "key": "k", "value": "v"})
    w.runtime.submit(w.namesrv.shutdown)
    w.runtime.submit(w.namesrv.start)
    assert w.config()["orderMessageEnable"] == "false"
    assert w.ask(RequestCode.GET_KV_CONFIG, {"namespace": "N", "key": "k"}).ext_fields["value"] == "v"
