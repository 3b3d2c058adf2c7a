"""What the sensitivity tests of the broker cases share: run selected cases on a fresh served cluster, and check that
a reference broker with one rule broken fails the case that checks the rule while another case still passes.

A sensitivity test module names the cases it checks in ``CASES`` and gets the unbroken outcomes once per module
(``unbroken = unbroken_fixture(CASES)``); each test breaks ONE refimpl rule (``monkeypatch``, or ``refimpl_mutant``
/ ``mutant`` from ``tests/mutation.py``; the served cluster runs in this process, so it runs the broken rule) and
calls :func:`expect_caught`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from realcluster import SERVED_OPTIONS

from rocketspec.conformance.broker import BROKER_CASES
from rocketspec.conformance.context import BrokerContext
from rocketspec.conformance.model import Outcome, select
from rocketspec.conformance.runner import run_cases
from rocketspec.conformance.target import Target, discover
from rocketspec.refimpl.served import ServedCluster

BUDGET_S = 30.0
FAILING = {Outcome.FAILED, Outcome.NON_STRICT}
Outcomes = dict[str, Outcome]


def outcomes(patterns: Sequence[str]) -> Outcomes:
    """Run the selected cases on a fresh served cluster (with the refimpl as patched at the time of the call)."""
    with ServedCluster(brokers=2, **SERVED_OPTIONS) as cluster:
        target: Target = discover(cluster.namesrv_addr)
        results = run_cases(select(BROKER_CASES, patterns), lambda case, budget: BrokerContext(target, case, budget),
                            BUDGET_S)
    return {r.case.id: r.outcome for r in results}


def unbroken_fixture(cases: Sequence[str]) -> Callable[[], Outcomes]:
    """A module-scoped fixture ``unbroken``: the outcomes of ``cases`` on the unbroken reference broker."""

    @pytest.fixture(scope="module")
    def unbroken() -> Outcomes:
        return outcomes(cases)

    return unbroken


def expect_caught(unbroken: Outcomes, caught: str, still_passing: str) -> None:
    """Run ``caught`` and ``still_passing`` on the reference broker as broken now: ``caught`` fails (or is
    non-strict) while ``still_passing`` passes; both passed on the unbroken one."""
    broken = outcomes([caught, still_passing])
    assert unbroken[caught] is Outcome.PASSED, unbroken
    assert unbroken[still_passing] is Outcome.PASSED, unbroken
    assert broken[caught] in FAILING, broken
    assert broken[still_passing] is Outcome.PASSED, broken
