"""pytest fixtures for applications tested against the reference RocketMQ (registered through the ``pytest11`` entry
point, so installing rocketspec makes them available).

- ``rocketmq_cluster``: the in-process facade (``rocketspec.refimpl.cluster.Cluster``), simulated clock by default.
- ``rocketmq_server``: the cluster served over TCP for real clients (``ServedCluster``): ``namesrv_addr``,
  ``faults`` (``fail``/``delay``/``drop``/``disconnect``… per broker and request code), ``create_topic``, broker stop
  and restart, and the run recorded as a trace in ``trace_dir`` (``rocketspec traces check`` reads it).

Options come from a marker of the same name::

    @pytest.mark.rocketmq_server(brokers=2, topics={"Orders": 8}, faults=[{"action": "fail", "request": "SEND_MESSAGE",
                                 "target": "*", "code": "SYSTEM_ERROR", "times": 1}])
    def test_orders_survive_a_failing_broker(rocketmq_server):
        app = OrdersApp(namesrv=rocketmq_server.namesrv_addr)   # your application, on a real client
        ...

A fault shows what the client does with it: the 4.9.8 Java producer retries SYSTEM_ERROR (one of its
``retryResponseCodes``, SEND-4) on another broker, but hands SYSTEM_BUSY to the application as an
``MQBrokerException``. docs/serve.md has this example whole, with the Java application, run by the test suite.

``rocketmq_server`` markers take ``ServedCluster`` keyword arguments plus ``topics`` (name → queues), ``trace``
(``False`` to record nothing; the default records Parquet under the test's temporary directory) and the trace's
``trace_dir``, ``trace_format``, ``trace_id`` and ``send_mode`` (``TracedServer``'s); its events are also
kept in memory (``rocketmq_server.cluster.events``) unless ``keep_events=False``;
``rocketmq_cluster`` markers take ``Cluster`` keyword arguments plus ``topics``. Both take ``data_dir`` and
``flush`` (``"async"``, the default, or ``"sync"``: RocketMQ's flushDiskType, docs/serve.md).
- ``rocketmq_client_conformance``: runs the client conformance suite against a client project's own driver command
  (the driver contract of ``docs/conformance.md``) and fails the test with each departure, clause by clause.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from rocketspec.conformance.model import CaseResult
    from rocketspec.refimpl.cluster import Cluster
    from rocketspec.traces.served import TracedServer


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "rocketmq_cluster(**options): options of the rocketmq_cluster fixture (Cluster arguments, topics)"
    )
    config.addinivalue_line(
        "markers",
        "rocketmq_server(**options): options of the rocketmq_server fixture (ServedCluster arguments, topics, trace)",
    )


def _options(request: pytest.FixtureRequest, name: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    # The closest marker wins; a class or module marker gives defaults.
    for marker in reversed(list(request.node.iter_markers(name))):
        if marker.args:
            raise pytest.UsageError(f"@pytest.mark.{name} takes keyword options only")
        options.update(marker.kwargs)
    return options


def _topics(options: dict[str, Any], name: str) -> Mapping[str, int]:
    topics = options.pop("topics", {}) or {}
    if not isinstance(topics, Mapping) or not all(
        isinstance(t, str) and isinstance(q, int) and q > 0 for t, q in topics.items()
    ):
        raise pytest.UsageError(f"@pytest.mark.{name}(topics=...) must map topic names to queue counts")
    return topics


@pytest.fixture
def rocketmq_cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """An in-process reference cluster (simulated clock unless ``clock="real"``), closed after the test."""
    from rocketspec.refimpl.cluster import Cluster

    options = _options(request, "rocketmq_cluster")
    topics = _topics(options, "rocketmq_cluster")
    with Cluster(**options) as cluster:
        for topic, queues in topics.items():
            cluster.create_topic(topic, queues)
        yield cluster


@pytest.fixture
def rocketmq_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                    ) -> Iterator[TracedServer]:
    """The reference name server and brokers over TCP on 127.0.0.1 (free ports), closed after the test.

    ``rocketmq_server.namesrv_addr`` is what real clients are given; ``rocketmq_server.trace_dir`` holds the recorded
    trace once the test ends (``flush_trace()`` writes it early).
    """
    from rocketspec.traces.served import TracedServer

    options = _options(request, "rocketmq_server")
    topics = _topics(options, "rocketmq_server")
    out = options.pop("trace_dir", None)
    if options.pop("trace", True) and out is None:
        out = tmp_path_factory.mktemp("rocketmq-trace")
    options.setdefault("keep_events", True)  # a test is short; its assertions may read served.cluster.events
    served = TracedServer(out, fmt=options.pop("trace_format", "parquet"), trace_id=options.pop("trace_id", None),
                          send_mode=options.pop("send_mode", None), **options)
    try:
        for topic, queues in topics.items():
            served.create_topic(topic, queues)
        yield served
    finally:
        served.close()


#: What the ``rocketmq_client_conformance`` fixture gives: ``run(command, cases=(), timeout=60.0, check=True)``.
ClientConformance = Callable[..., "list[CaseResult]"]


@pytest.fixture
def rocketmq_client_conformance() -> ClientConformance:
    """Run the client conformance suite against your client's driver and fail the test on any departure.

    A driver is a program that plays one client role per process as the environment tells it (``ROCKETSPEC_ROLE``,
    ``ROCKETSPEC_NAMESRV``, ``ROCKETSPEC_TOPIC``, …) and prints one JSON event per line; ``docs/conformance.md``
    has the contract, ``conformance/drivers/`` real examples. The fixture is a function::

        def test_my_client_conforms(rocketmq_client_conformance):
            rocketmq_client_conformance("python -m myclient.rocketspec_driver", cases=["client/send", "client/txn*"])

    ``command`` is a string (split like a shell would, no shell run) or an argument list; ``cases`` are glob
    patterns or areas (all cases when empty); ``timeout`` is each case's budget in seconds. Every case runs against
    a fresh reference cluster served on loopback. With ``check`` (the default) the test fails, listing each failed
    or broken case with its clauses and ``Expected: … Actual: …``, unless every case passed or was skipped with a
    reason (a role or option the driver declares unsupported); SHOULD departures (``non-strict``) are listed but do
    not fail it. The results (``CaseResult``: ``case.id``, ``outcome``, ``expected``, ``actual``, ``detail``) are
    returned either way.
    """
    from rocketspec.conformance.client import DriverStartError, run_client_suite
    from rocketspec.conformance.model import Outcome

    def run(command: str | Sequence[str], cases: Sequence[str] = (), timeout: float = 60.0,
            check: bool = True) -> list[CaseResult]:
        try:
            results = run_client_suite(command, list(cases), timeout)
        except DriverStartError as error:
            failure = str(error)
        else:
            failure = ""
        if failure:
            pytest.fail(f"client conformance: {failure}", pytrace=False)
        if not results:
            pytest.fail(f"client conformance: no case matches {list(cases)}", pytrace=False)
        bad = [r for r in results if r.outcome in (Outcome.FAILED, Outcome.ERROR)]
        if check and bad:
            lines = [f"{len(bad)} of {len(results)} client conformance cases did not pass:"]
            for r in bad:
                why = f"Expected: {r.expected}  Actual: {r.actual}" if r.outcome is Outcome.FAILED else r.detail
                lines.append(f"  {r.outcome.value.upper()} {r.case.id} [{', '.join(r.case.clauses)}] {why}")
            pytest.fail("\n".join(lines), pytrace=False)
        return results

    return run
