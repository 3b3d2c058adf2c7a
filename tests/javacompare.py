"""Run one Java driver scenario against the real 4.9.8 cluster and against `serve`, and compare what the client saw.

``Targets.both(scenario, **args)`` runs the scenario on both targets at once (with one name suffix unique to the call,
so topics and groups never collide across tests) and returns ``(real, served)``. ``assert_same`` compares
two observations after ``normalize`` removed what legitimately varies between any two runs (message ids, hosts,
timestamps, commit-log positions: ``VOLATILE``); a difference fails with the paths that differ. A documented,
deliberate difference is asserted by the test itself, never hidden here.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from realcluster import JavaDriver, RealCluster

from rocketspec.refimpl.served import ServedCluster

# Fields whose values differ between any two runs of the same program on the same broker.
VOLATILE = frozenset({
    "msgId", "offsetMsgId", "bornHost", "storeHost", "bornTimestamp", "storeTimestamp", "commitLogOffset",
    "transactionId", "UNIQ_KEY", "CONSUME_START_TIME", "MIN_OFFSET", "MAX_OFFSET", "ORIGIN_MESSAGE_ID",
    "__transactionId__", "TRAN_PREPARED_QUEUE_OFFSET", "REAL_QID", "clientId", "bodyCRC", "elapsedMs",
})
_run = itertools.count(1)


class Targets:
    def __init__(self, driver: JavaDriver, real: RealCluster, served: ServedCluster) -> None:
        self.driver = driver
        self.real = real
        self.served = served

    def suffix(self) -> str:
        return f"_{os.getpid()}_{next(_run)}"

    def run(self, target: str, scenario: str, **args: Any) -> dict[str, Any]:
        namesrv = self.real.namesrv_addr if target == "real" else self.served.namesrv_addr
        args.setdefault("suffix", self.suffix())
        return self.driver.run(namesrv, scenario, **args)

    def both(self, scenario: str, **args: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        # One suffix for both targets: they are different clusters, and equal names compare equal.
        args.setdefault("suffix", self.suffix())
        with ThreadPoolExecutor(2) as pool:
            real = pool.submit(self.run, "real", scenario, **dict(args))
            served = pool.submit(self.run, "serve", scenario, **dict(args))
            return real.result(), served.result()


def normalize(value: Any, volatile: Iterable[str] = VOLATILE, suffixes: Iterable[str] = ()) -> Any:
    """VALUE with volatile fields replaced by a presence marker and run suffixes cut from names."""
    drop = frozenset(volatile)
    cuts = tuple(suffixes)
    if isinstance(value, dict):
        return {k: ("<set>" if v not in (None, "") else v) if k in drop else normalize(v, drop, cuts)
                for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v, drop, cuts) for v in value]
    if isinstance(value, str):
        for cut in cuts:
            value = value.replace(cut, "")
        return value
    return value


def differences(real: Any, served: Any, path: str = "$") -> list[str]:
    if isinstance(real, dict) and isinstance(served, dict):
        out = []
        for key in sorted(set(real) | set(served)):
            if key not in served:
                out.append(f"{path}.{key}: real {json.dumps(real[key])}, serve has none")
            elif key not in real:
                out.append(f"{path}.{key}: serve {json.dumps(served[key])}, real has none")
            else:
                out.extend(differences(real[key], served[key], f"{path}.{key}"))
        return out
    if isinstance(real, list) and isinstance(served, list) and len(real) == len(served):
        return [d for i, (a, b) in enumerate(zip(real, served, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    if real != served:
        return [f"{path}: real {json.dumps(real)[:300]}, serve {json.dumps(served)[:300]}"]
    return []


def assert_same(real: Any, served: Any, volatile: Iterable[str] = VOLATILE) -> None:
    """Fail with every path where the normalized observations differ."""
    found = differences(normalize(real, volatile), normalize(served, volatile))
    assert not found, "serve differs from RocketMQ 4.9.8:\n  " + "\n  ".join(found[:40])
