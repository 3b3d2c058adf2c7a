"""Deliberately broken copies of spec modules, to show that the checks can fail.

``mutant(module, old, new)`` copies a module's source with exactly one textual substitution into a fresh
module under a temporary directory and imports it. Tests then run the explorer or CrossHair on the copy
and assert that the broken rule is caught.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import itertools
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from rocketspec.contracts import CrosshairRun, run_crosshair

_counter = itertools.count()
_root = Path(tempfile.mkdtemp(prefix="rocketspec-mutants-"))


def mutant(module: ModuleType, old: str, new: str) -> ModuleType:
    """Import a copy of ``module`` in which ``old`` (which must occur exactly once) is replaced by ``new``."""
    source = inspect.getsource(module)
    count = source.count(old)
    if count != 1:
        raise AssertionError(f"mutation target occurs {count} times in {module.__name__}: {old!r}")
    name = f"rocketspec_mutant_{module.__name__.rsplit('.', 1)[-1]}_{next(_counter)}"
    path = _root / f"{name}.py"
    path.write_text(source.replace(old, new), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def crosshair_mutant(mod: ModuleType, function: str, per_condition_timeout: float = 10.0) -> CrosshairRun:
    """Run CrossHair on one function of a mutant module."""
    return run_crosshair(f"{mod.__name__}.{function}", per_condition_timeout, extra_paths=[str(_root)])
