"""mqadmin (``MQAdminStartup`` of the real 4.9.8 installation) against the real cluster and against `serve`.

Each command runs on both targets at once; their outputs must have the same shape: the same header lines and column
names, the same number of rows where that is deterministic, the same values where they are (addresses, times and
client ids normalized). Commands are grouped so the module stays within about a minute and a half.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from realcluster import JavaDriver, RealCluster, mqadmin

from rocketspec.refimpl.route import loads_lenient
from rocketspec.refimpl.served import ServedCluster

pytestmark = pytest.mark.xdist_group("rocketmq-real")

_ADDR = re.compile(r"\d+\.\d+\.\d+\.\d+:\d+")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[ #]\d{2}:\d{2}:\d{2}(?:[.,:]\d{3})?")
_CLIENT_ID = re.compile(r"\d+\.\d+\.\d+\.\d+@[\w.-]+")


def clean(output: str) -> list[str]:
    """Output lines without logback's status lines, addresses, times and client ids normalized, blanks collapsed."""
    lines = []
    for line in output.splitlines():
        if "|-" in line or not line.strip():
            continue
        line = _CLIENT_ID.sub("<client>", _TIME.sub("<time>", _ADDR.sub("<addr>", line)))
        lines.append(" ".join(line.split()))
    return lines


class Admin:
    """Runs one mqadmin command on both targets at once; ``{a}`` in an argument is that target's broker-a."""

    def __init__(self, home: Path, real: RealCluster, served: ServedCluster, work: Path) -> None:
        self.home = home
        self.targets = {"real": (real.namesrv_addr, real.broker_addrs["broker-a"]),
                        "serve": (served.namesrv_addr, served.broker_addrs["broker-a"])}
        self.work = work

    def one(self, target: str, *args: str) -> str:
        namesrv, broker_a = self.targets[target]
        done = mqadmin(self.home, namesrv, *(a.replace("{a}", broker_a) for a in args),
                       user_home=self.work / target)
        return done.stdout + done.stderr

    def both(self, *args: str) -> tuple[str, str]:
        with ThreadPoolExecutor(2) as pool:
            real = pool.submit(self.one, "real", *args)
            served = pool.submit(self.one, "serve", *args)
            return real.result(), served.result()

    def same(self, *args: str, key: Callable[[list[str]], Any] = lambda lines: lines) -> tuple[list[str], list[str]]:
        real, served = self.both(*args)
        r, s = clean(real), clean(served)
        assert key(r) == key(s), f"mqadmin {' '.join(args)} differs:\nreal:\n{real}\nserve:\n{served}"
        return r, s


@pytest.fixture(scope="module")
def admin(rocketmq_home: Path, real_rocketmq: RealCluster, served_for_java: ServedCluster) -> Iterator[Admin]:
    with tempfile.TemporaryDirectory(prefix="rocketspec-mqadmin-") as work:
        yield Admin(rocketmq_home, real_rocketmq, served_for_java, Path(work))


def _name(prefix: str) -> str:
    return f"{prefix}_{int(time.time() * 1000) % 10_000_000}"


def _keys(lines: list[str]) -> list[str]:
    """``key : value`` / ``key= value`` lines → sorted keys (the disk-ratio key names a path). A broker reports
    ``scheduleMessageOffset_N`` for each delay level that has held a message since it started: which levels depends
    on what ran on the cluster before, so those keys are left out."""
    keys = set()
    for line in lines:
        key = re.split(r"\s*[:=]", line, maxsplit=1)[0].strip()
        if not key.startswith("scheduleMessageOffset_"):
            keys.add("commitLogDiskRatio_<path>" if key.startswith("commitLogDiskRatio_") else key)
    return sorted(keys)


def _route(output: str) -> dict[str, Any]:
    """topicRoute's JSON with addresses blanked and lists sorted (the name server's HashMap order differs)."""
    route = loads_lenient(_ADDR.sub("a", output[output.index("{"):]))
    for field in ("brokerDatas", "queueDatas"):
        route[field] = sorted(route[field], key=lambda item: item["brokerName"])
    return route


def _no_tps(lines: list[str]) -> list[str]:
    """consumerProgress without its "Consume TPS" line (the real broker's is a moving rate) and without the rows of
    the group's retry topic: a broker lists its %RETRY% queue once the consumer committed an offset for it, which
    depends on whether the consumer had pulled that queue when its 5 s offset persistence ran, on either target."""
    return [line for line in lines if not line.startswith(("Consume TPS:", "%RETRY%"))]


def test_topic_commands(admin: Admin) -> None:
    topic = _name("MqaTopic")
    admin.same("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2", key=sorted)
    real, served = admin.both("topicList", "-c")  # fetchAllTopicList, then route and consumers per topic
    assert [line for line in clean(real) if topic in line] == [line for line in clean(served) if topic in line]
    assert clean(real)[0] == clean(served)[0]
    route_real, route_served = admin.both("topicRoute", "-t", topic)
    assert _route(route_real) == _route(route_served)
    lines, _ = admin.same("topicStatus", "-t", topic)
    assert lines[0].startswith("#Broker Name #QID #Min Offset #Max Offset #Last Updated") and len(lines) == 5
    lines, _ = admin.same("deleteTopic", "-c", "DefaultCluster", "-t", topic)
    assert lines[-1] == f"delete topic [{topic}] from NameServer success."
    real, served = admin.both("topicRoute", "-t", topic)
    # Both fail the same way (the exception's message differs by nothing but addresses).
    assert [line for line in clean(real) if "DESC" in line or "No topic route" in line][:1] == \
        [line for line in clean(served) if "DESC" in line or "No topic route" in line][:1]


def test_cluster_and_broker_commands(admin: Admin) -> None:
    lines, served = admin.same("clusterList", key=lambda ls: [ls[0]] + [" ".join(line.split()[:5]) for line in ls[1:]])
    assert lines[0].startswith("#Cluster Name #Broker Name #BID #Addr #Version") and len(lines) == len(served) == 3
    admin.same("brokerStatus", "-b", "{a}", key=_keys)
    real_cfg, _ = admin.same("getBrokerConfig", "-b", "{a}", key=lambda ls: [ls[0], *_keys(ls[1:])])
    assert len(real_cfg) > 150
    admin.same("updateBrokerConfig", "-b", "{a}", "-k", "maxMessageSize", "-v", "4194304")
    admin.same("updateSubGroup", "-c", "DefaultCluster", "-g", _name("MqaSG"), key=sorted)
    admin.same("getNamesrvConfig", key=lambda ls: [ls[0], *_keys(ls[1:])])


def test_consumer_commands(admin: Admin, java_driver: JavaDriver) -> None:
    """A Java producer and push consumer stay connected (``admin.hold``) while mqadmin looks at them."""
    topic, group, producer = _name("MqaCTopic"), _name("MqaCG"), _name("MqaPG")
    holders = {}
    for target, (namesrv, _) in admin.targets.items():
        holders[target] = subprocess.Popen(
            java_driver.command(namesrv, "admin.hold", {"topic": topic, "group": group, "producerGroup": producer,
                                                          "holdMs": 180_000}),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for target, proc in holders.items():
            assert proc.stdout is not None
            ready = proc.stdout.readline()  # bounded: the scenario's own waits end within 60 s
            assert ready.strip() == "READY", f"{target}: hold scenario did not get ready: {ready!r}"
        lines, _ = admin.same("consumerProgress", "-g", group, key=_no_tps)
        assert lines[0].startswith("#Topic #Broker Name #QID #Broker Offset #Consumer Offset #Diff #LastTime")
        assert "Diff Total: 0" in lines
        retry_rows = [line for target in admin.both("consumerProgress", "-g", group) for line in clean(target)
                      if line.startswith("%RETRY%")]
        assert all(line.split()[3:6] == ["0", "0", "0"] for line in retry_rows)  # offsets and diff of an empty queue
        lines, _ = admin.same("consumerProgress", "-g", group, "-s", "true", key=_no_tps)
        assert "#Client IP" in lines[0]
        lines, _ = admin.same("consumerConnection", "-g", group, key=sorted)  # subscriptions in HashMap order
        assert f"{topic} *" in lines and "MessageModel: CLUSTERING" in lines
        lines, _ = admin.same("producerConnection", "-g", producer, "-t", topic)
        assert len(lines) == 1 and "<client>" in lines[0]
        lines, _ = admin.same("getConsumerStatus", "-g", group, "-t", topic, key=sorted)
        # 4.9.8's client cannot decode ProducerTableInfo (no default constructor): the command fails on both alike.
        lines, _ = admin.same("producer", "-b", "{a}", key=lambda ls: [line for line in ls if "JSONException" in line])
        assert any("JSONException" in line for line in lines)
        admin.same("brokerConsumeStats", "-b", "{a}", key=lambda ls: sorted(line for line in ls if topic in line))
        lines, _ = admin.same("queryCq", "-t", topic, "-q", "0", "-i", "0", "-g", group,
                              key=lambda ls: [re.sub(r"(physicOffset=|subVersion\":)\d+", r"\1N", line) for line in ls])
        assert "max: 1, min: 0" in lines
        lines, _ = admin.same("resetOffsetByTime", "-g", group, "-t", topic, "-s", "0", key=sorted)
        assert sum(1 for line in lines if line.startswith("broker-")) == 4
    finally:
        for proc in holders.values():
            proc.kill()
            proc.wait(timeout=30)
