"""Steps per second of every stateful machine (``tests/test_stateful_*.py``), in the ci and, optionally, deep profile.

    .venv/bin/python benchmarks/stateful_steps.py [--deep] [--deep-fraction F] [--only NAME ...] [--json FILE]

Every module ``tests/test_stateful_*.py`` is imported and each ``RuleBasedStateMachine`` subclass it defines (one
with rules) is run once with ``run_state_machine_as_test``, under the settings its tests give it:

- ``Machine.TestCase.settings`` when the module exposes ``Machine.TestCase`` (``TestX = Machine.TestCase``) or the
  class was decorated with ``@settings``;
- else ``stateful_settings(a, b)`` read from a module function calling
  ``run_state_machine_as_test(Machine, settings=stateful_settings(a, b))`` (or, for machines run through a variable,
  the only such generic call of the module);
- else ``stateful_settings()``'s defaults (marked ``default`` in the table).

A module may define ``benchmark_notes() -> str``; its text is printed after the module's machines ran (the system
machine reports its redeliveries by cause). Steps are counted by a subclass whose ``check_invariants`` (called by
hypothesis once after the set-up and once after every step) counts its calls: steps = calls - programs. A machine
that fails is reported and the others still run.

Each profile runs in a fresh interpreter with ``HYPOTHESIS_PROFILE`` set, so the modules' settings (built at import
time by ``stateful_settings``) follow it. ``--deep-fraction F`` runs a fraction F of each machine's deep examples and
extrapolates the full deep time (steps/s is measured, the total is estimated and marked ``~``).
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
_GENERIC_CALL = re.compile(
    r"run_state_machine_as_test\(\s*(\w+)\s*,\s*settings\s*=\s*stateful_settings\(\s*(\d+)\s*,\s*(\d+)\s*\)")


# ----------------------------------------------------------------------------------------------------- worker side
def _import(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _has_rules(cls: type) -> bool:
    from hypothesis.stateful import RULE_MARKER

    return any(getattr(getattr(cls, name, None), RULE_MARKER, None) is not None for name in dir(cls))


def _machines(module: ModuleType) -> list[type]:
    """The machines a module defines (not the ones it imports), skipping bases without rules."""
    from hypothesis.stateful import RuleBasedStateMachine

    found = []
    for _name, value in vars(module).items():
        if (inspect.isclass(value) and issubclass(value, RuleBasedStateMachine) and value.__module__ == module.__name__
                and _has_rules(value)):
            found.append(value)
    return found


def _settings_for(machine: type, module: ModuleType) -> tuple[Any, str]:
    """The settings the module's tests run ``machine`` with, and where they came from."""
    from stateful_support import stateful_settings

    if getattr(machine, "_hypothesis_internal_settings_applied", False) or any(
            value is machine.TestCase for value in vars(module).values()):
        return machine.TestCase.settings, "TestCase"
    generic: list[tuple[int, int]] = []
    for _name, fn in vars(module).items():
        if not inspect.isfunction(fn) or fn.__module__ != module.__name__:
            continue
        for target, examples, steps in _GENERIC_CALL.findall(inspect.getsource(fn)):
            if target == machine.__name__:
                return stateful_settings(int(examples), int(steps)), f"{fn.__name__}"
            if target[:1].islower():
                generic.append((int(examples), int(steps)))
    if len(set(generic)) == 1:
        examples, steps = generic[0]
        return stateful_settings(examples, steps), "generic call"
    return stateful_settings(), "default"


def _run_machine(machine: type, settings: Any, fraction: float) -> dict[str, Any]:
    from hypothesis import settings as Settings
    from hypothesis.stateful import run_state_machine_as_test

    counts = {"programs": 0, "checks": 0}

    class Counted(machine):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            counts["programs"] += 1

        def check_invariants(self, *args: Any, **kwargs: Any) -> None:
            counts["checks"] += 1
            super().check_invariants(*args, **kwargs)

    Counted.__name__ = Counted.__qualname__ = machine.__name__
    examples = settings.max_examples
    if fraction < 1.0:
        settings = Settings(settings, max_examples=max(1, round(examples * fraction)))
    error = None
    started = time.perf_counter()
    try:
        run_state_machine_as_test(Counted, settings=settings)
    except BaseException as failure:  # report and go on with the other machines
        if isinstance(failure, KeyboardInterrupt):
            raise
        error = f"{type(failure).__name__}: {str(failure).splitlines()[0] if str(failure) else ''}"[:300]
    seconds = time.perf_counter() - started
    steps = counts["checks"] - counts["programs"]
    return {
        "machine": machine.__name__, "examples": examples, "steps_per_program": settings.stateful_step_count,
        "programs": counts["programs"], "steps": steps, "seconds": seconds,
        "steps_per_s": steps / seconds if seconds > 0 else 0.0, "fraction": fraction, "error": error,
    }


def worker(profile: str, only: list[str], fraction: float) -> int:
    sys.path[:0] = [str(TESTS), str(ROOT)]
    _import(TESTS / "conftest.py")  # registers and loads the ci / deep hypothesis profiles (HYPOTHESIS_PROFILE)
    for path in sorted(TESTS.glob("test_stateful_*.py")):
        try:
            module = _import(path)
        except Exception as error:
            print(json.dumps({"module": path.stem, "machine": "-", "error": f"import failed: {error!r}"}), flush=True)
            continue
        for machine in _machines(module):
            if only and machine.__name__ not in only and path.stem not in only:
                continue
            settings, source = _settings_for(machine, module)
            result = _run_machine(machine, settings, fraction if profile == "deep" else 1.0)
            result.update(module=path.stem, profile=profile, settings_from=source)
            print(json.dumps(result), flush=True)
        notes = getattr(module, "benchmark_notes", None)
        if callable(notes):
            print(json.dumps({"module": path.stem, "notes": str(notes())}), flush=True)
    return 0


# ----------------------------------------------------------------------------------------------------- driver side
def _profile_run(profile: str, only: list[str], fraction: float) -> tuple[list[dict[str, Any]], float]:
    env = dict(os.environ, HYPOTHESIS_PROFILE=profile)
    command = [sys.executable, __file__, "--worker", profile, "--deep-fraction", str(fraction), *(
        ["--only", *only] if only else [])]
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    results: list[dict[str, Any]] = []
    notes: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:
        line = line.rstrip("\n")
        if not line.startswith("{"):
            print(line, file=sys.stderr)  # hypothesis' report of a failing program
            continue
        result = json.loads(line)
        if "notes" in result:
            notes.append(f"{result['module']}: {result['notes']}")
            continue
        results.append(result)
        _print_row(result)
    process.wait()
    for note in notes:
        print(f"\n{note}")
    return results, time.perf_counter() - started


def _print_header(profile: str) -> None:
    print(f"\n### profile {profile}\n")
    print("| module | machine | settings | examples x steps | programs | steps | seconds | steps/s | result |")
    print("|---|---|---|---|---|---|---|---|---|")


def _print_row(r: dict[str, Any]) -> None:
    if "steps" not in r:
        print(f"| {r['module']} | - | - | - | - | - | - | - | {r['error']} |", flush=True)
        return
    seconds = f"{r['seconds']:.1f}"
    if r.get("fraction", 1.0) < 1.0:
        seconds += f" (~{r['seconds'] / r['fraction']:.0f} full)"
    print(f"| {r['module']} | {r['machine']} | {r['settings_from']} | {r['examples']} x {r['steps_per_program']} "
          f"| {r['programs']} | {r['steps']} | {seconds} | {r['steps_per_s']:,.0f} | {r['error'] or 'pass'} |",
          flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deep", action="store_true", help="also run every machine once in the deep profile")
    parser.add_argument("--deep-fraction", type=float, default=1.0,
                        help="run this fraction of the deep examples and extrapolate the full time (0 < F <= 1)")
    parser.add_argument("--only", nargs="*", default=[], help="machine class or module names to run")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    parser.add_argument("--worker", choices=("ci", "deep"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not 0 < args.deep_fraction <= 1:
        parser.error("--deep-fraction must be within (0, 1]")
    if args.worker:
        return worker(args.worker, args.only, args.deep_fraction)
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpu(s)")
    everything: list[dict[str, Any]] = []
    failed = False
    for profile in ("ci", "deep") if args.deep else ("ci",):
        _print_header(profile)
        results, wall = _profile_run(profile, args.only, args.deep_fraction)
        everything.extend(results)
        failed |= any(r.get("error") for r in results)
        steps = sum(r.get("steps", 0) for r in results)
        seconds = sum(r.get("seconds", 0.0) for r in results)
        estimated = sum(r.get("seconds", 0.0) / r.get("fraction", 1.0) for r in results)
        total = f"{seconds:.1f} s" if estimated == seconds else f"{seconds:.1f} s (~{estimated:.0f} s full)"
        print(f"\n{profile}: {len(results)} machine(s), {steps} steps in {total} of machine runs "
              f"({steps / seconds if seconds else 0:,.0f} steps/s); {wall:.1f} s wall with imports")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2), encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
