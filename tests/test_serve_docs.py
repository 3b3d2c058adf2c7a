"""docs/serve.md lists every request code the reference name server and broker serve, and nothing they do not."""

from __future__ import annotations

import re
from pathlib import Path

from rocketspec.refimpl import Cluster
from rocketspec.spec.protocol import RequestCode

DOC = Path(__file__).resolve().parent.parent / "docs" / "serve.md"
ROW = re.compile(r"^\| (\d+) \| ([A-Z0-9_]+) \|", re.MULTILINE)


def _tables() -> tuple[dict[int, str], dict[int, str]]:
    text = DOC.read_text()
    section = text[text.index("### Request codes served"):text.index("### Known differences from RocketMQ 4.9.8")]
    namesrv_part, broker_part = section.split("\nBroker (", 1)
    return ({int(c): n for c, n in ROW.findall(namesrv_part)}, {int(c): n for c, n in ROW.findall(broker_part)})


def _served(handlers: dict[int, object]) -> dict[int, str]:
    return {int(code): RequestCode(code).name for code in handlers}


def test_every_served_request_code_is_documented() -> None:
    documented_namesrv, documented_broker = _tables()
    with Cluster(brokers=1, clock="simulated", seed=1) as cluster:
        namesrv = _served(cluster.namesrv._handlers)
        broker = _served(cluster.brokers["broker-a"]._handlers)
    assert documented_namesrv == namesrv
    assert documented_broker == broker
