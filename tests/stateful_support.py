"""Shared settings and helpers for the stateful (spec drives the implementation) tests.

Sizes follow the hypothesis profile: ``ci`` (the default, bounded and deterministic) runs few, short programs; ``deep``
(``pytest --hypothesis-profile=deep`` or ``HYPOTHESIS_PROFILE=deep``) runs many long ones.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")


def _active_profile() -> str:
    # pytest's --hypothesis-profile loads the profile after import; read it back from the settings in force.
    return "deep" if settings.default.max_examples >= 1000 or PROFILE == "deep" else "ci"


def stateful_settings(examples: int = 20, steps: int = 25) -> settings:
    """Settings for one machine: ``examples`` x ``steps`` in ci, 50x as many programs of 4x the length in deep."""
    deep = _active_profile() == "deep"
    return settings(
        max_examples=examples * 50 if deep else examples,
        stateful_step_count=steps * 4 if deep else steps,
        deadline=None,
        derandomize=not deep,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )


def hypothesis_finds_failure(
    machine: type[RuleBasedStateMachine], examples: int = 60, steps: int = 30
) -> BaseException:
    """Run ``machine`` (against a broken implementation) and return the failure hypothesis found.

    Raises AssertionError when every program passes: a mutant the machine cannot catch is a defect of the machine.
    """
    # Finding *a* failing program is all that matters here: no shrinking, no explain phase (they cost minutes).
    search = settings(stateful_settings(examples, steps), max_examples=examples, stateful_step_count=steps,
                      derandomize=True, phases=[Phase.explicit, Phase.generate], report_multiple_bugs=False)
    try:
        run_state_machine_as_test(machine, settings=search)
    except Exception as failure:  # the machine's check (or the implementation) failed: the mutant is caught
        return failure
    raise AssertionError(f"{machine.__name__} passed against a broken implementation: the mutant survived")


def failure_text(failure: BaseException) -> str:
    """A failure's text, with every sub-exception of a group (hypothesis may report distinct failures so)."""
    group = getattr(failure, "exceptions", None)  # an ExceptionGroup (the exceptiongroup backport on 3.10)
    if isinstance(group, tuple):
        return "\n".join(failure_text(e) for e in group)
    return str(failure)
