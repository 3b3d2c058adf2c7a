"""The broker under test, as the suite learns it over the wire: its name server, its masters and their settings.

``discover`` asks the name server for the cluster (GET_BROKER_CLUSTER_INFO) and each master for its configuration
(GET_BROKER_CONFIG). Cases that wait on broker timers (delay levels, the transaction check, long polling) read those
settings here, so a target configured with short intervals is checked in seconds; the report lists every setting a
case used. What the target lists is noted before the run, and what the run added is deleted after it
(``conformance.cleanup``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping

import attrs

from rocketspec.conformance import cleanup, requests
from rocketspec.conformance.wire import ConnectionClosed, Unreachable, WireClient
from rocketspec.refimpl.frame import FrameError
from rocketspec.refimpl.route import loads_lenient
from rocketspec.spec.protocol import ResponseCode


class TargetError(Exception):
    """The target cannot be tested at all (unreachable, not RocketMQ, no broker): reported in one line."""


@attrs.frozen
class Broker:
    """A master broker of the target: its name, address, cluster and configuration (``key=value`` text)."""

    name: str
    addr: str
    cluster: str
    config: Mapping[str, str] = attrs.field(factory=dict)


# Settings the suite reads, with RocketMQ 4.9.8's defaults for a target that does not report one.
DEFAULT_SETTINGS: dict[str, str] = {
    "messageDelayLevel": "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
    "transactionTimeOut": "6000",
    "transactionCheckInterval": "60000",
    "transactionCheckMax": "15",
    "longPollingEnable": "true",
    "shortPollingTimeMills": "1000",
    "maxMessageSize": "4194304",
    "autoCreateTopicEnable": "true",
    "autoCreateSubscriptionGroup": "true",
    "enablePropertyFilter": "false",
    "notifyConsumerIdsChangedEnable": "true",
    "brokerPermission": "6",
    "defaultTopicQueueNums": "8",
    "clusterTopicEnable": "true",
    "brokerTopicEnable": "true",
    "storeReplyMessageEnable": "true",
    "aclEnable": "false",
}


@attrs.define
class Target:
    """A name server address and what discovery found behind it."""

    namesrv: str
    brokers: list[Broker]
    timeout_s: float
    unreachable: list[str] = attrs.Factory(list)
    created_topics: set[str] = attrs.Factory(set)
    created_groups: set[str] = attrs.Factory(set)
    settings_used: dict[str, str] = attrs.Factory(dict)
    before: cleanup.Inventory | None = None
    _lock: threading.Lock = attrs.Factory(threading.Lock)

    def setting(self, name: str, broker: int = 0) -> str:
        """A broker setting (the first master's unless ``broker`` says otherwise), recorded for the report (a
        setting of broker i > 0 as ``name (broker-b)``)."""
        config = self.brokers[broker].config if broker < len(self.brokers) else {}
        value = config.get(name, DEFAULT_SETTINGS.get(name))
        if value is None:
            raise KeyError(f"the target does not report {name}")
        # Broker i > 0 of a target whose cases pick a broker by its settings: the report names that broker.
        key = name if broker == 0 else f"{name} ({self.brokers[broker].name})"
        with self._lock:
            self.settings_used[key] = value if name in config else f"{value} (4.9.8 default; not reported)"
        return value

    def setting_int(self, name: str, broker: int = 0) -> int:
        return int(self.setting(name, broker))

    def setting_bool(self, name: str, broker: int = 0) -> bool:
        return self.setting(name, broker).strip().lower() == "true"

    def take_inventory(self) -> None:
        """Note what the target lists before the run, so that :meth:`cleanup` deletes only what the run added."""
        self.before = cleanup.take_inventory(self.namesrv, [b.addr for b in self.brokers], self.timeout_s)

    def cleanup(self, deadline: float | None = None) -> frozenset[str]:
        """Delete every name the run made that the target lists (``conformance.cleanup``: topics, the retry and
        dead-letter topics of the run's groups, subscription groups and their offsets, the name server's topics),
        within ``deadline`` (``time.monotonic``) if one is given; the names still there afterwards (a target that
        refuses to delete keeps them)."""
        before = self.before if self.before is not None else cleanup.Inventory(None, {})
        return cleanup.clean(self.namesrv, [b.addr for b in self.brokers], before, self.created_topics,
                             self.created_groups, self.timeout_s, deadline)


def _cluster_info(namesrv: str, timeout: float) -> dict[str, object]:
    try:
        client = WireClient(namesrv, timeout)
    except ValueError as error:
        raise TargetError(str(error)) from None
    except Unreachable as error:
        raise TargetError(str(error)) from None
    try:
        with client:
            answer = client.request(requests.cluster_info())
    except Unreachable as error:
        raise TargetError(str(error)) from None
    except TimeoutError:
        raise TargetError(f"{namesrv} did not answer GET_BROKER_CLUSTER_INFO within {timeout:g} s: "
                          "is it a RocketMQ name server?") from None
    except (FrameError, ConnectionClosed, UnicodeDecodeError):
        raise TargetError(f"{namesrv} does not speak the RocketMQ remoting protocol") from None
    if answer.code != ResponseCode.SUCCESS:
        raise TargetError(f"{namesrv} answered GET_BROKER_CLUSTER_INFO with code {answer.code}"
                          f" ({answer.remark or 'no remark'}): is it a RocketMQ name server?")
    try:
        info = loads_lenient(answer.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise TargetError(f"{namesrv} answered GET_BROKER_CLUSTER_INFO with a body that is not JSON") from None
    if not isinstance(info, dict):
        raise TargetError(f"{namesrv} answered GET_BROKER_CLUSTER_INFO with a body that is not a ClusterInfo")
    return info


def _broker_config(addr: str, timeout: float) -> dict[str, str] | None:
    """The broker's configuration; None when no RocketMQ broker answers at ``addr``."""
    try:
        with WireClient(addr, timeout) as client:
            answer = client.request(requests.broker_config())
    except (Unreachable, TimeoutError, FrameError, ConnectionClosed, OSError, ValueError):
        return None
    if answer.code != ResponseCode.SUCCESS:
        return {}
    return requests.properties_body(answer)


def discover(namesrv: str, timeout: float = 5.0) -> Target:
    """The target behind ``namesrv``: every master broker registered there, with its configuration."""
    info = _cluster_info(namesrv, timeout)
    table = info.get("brokerAddrTable") or {}
    if not isinstance(table, dict):
        raise TargetError(f"{namesrv} answered a ClusterInfo without a brokerAddrTable")
    brokers: list[Broker] = []
    unreachable: list[str] = []
    for name in sorted(table):
        data = table[name]
        addrs = data.get("brokerAddrs") if isinstance(data, dict) else None
        if not isinstance(addrs, dict):
            continue
        master = addrs.get("0")  # loads_lenient reads fastjson's bare 0 key as "0"
        if not isinstance(master, str):
            continue
        config = _broker_config(master, timeout)
        if config is None:
            # A registration whose broker is gone (it expires after 120 s) is not part of the target.
            unreachable.append(f"{name}@{master}")
            continue
        brokers.append(Broker(name, master, str(data.get("cluster", "")), config))
    if not brokers:
        if unreachable:
            raise TargetError(f"no master broker registered at {namesrv} can be reached: {', '.join(unreachable)}")
        raise TargetError(f"no master broker is registered at {namesrv}")
    return Target(namesrv, brokers, timeout, unreachable=unreachable)


def describe(target: Target) -> str:
    names = ", ".join(f"{b.name}@{b.addr}" for b in target.brokers)
    gone = f" (registered but unreachable, left out: {', '.join(target.unreachable)})" if target.unreachable else ""
    return f"name server {target.namesrv}; masters {names}{gone}"


def settings_json(target: Target) -> str:
    return json.dumps(target.settings_used, sort_keys=True)
