"""Deliberately broken copies of spec modules, to show that the checks can fail.

``mutant(module, old, new)`` copies a module's source with exactly one textual substitution into a fresh
module under a temporary directory and imports it. Tests then run the explorer or CrossHair on the copy
and assert that the broken rule is caught.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import inspect
import itertools
import re
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from rocketspec.contracts import CONDITION_TIMEOUT_S, CrosshairRun, run_crosshair

_counter = itertools.count()
_root = Path(tempfile.mkdtemp(prefix="rocketspec-mutants-"))
# Each test process makes one; a CI machine runs the suite often, so the copies go when the process ends.
atexit.register(shutil.rmtree, _root, ignore_errors=True)


def mutant(module: ModuleType, old: str, new: str) -> ModuleType:
    """Import a copy of ``module`` in which ``old`` (which must occur exactly once) is replaced by ``new``.

    A package (a spec area: ``clauses``, ``oracles``, ``machine``, ...) is copied whole under a fresh name, its
    modules importing each other's copies, so that a rule broken in ``oracles`` is the one its ``machine`` runs."""
    name = f"rocketspec_mutant_{module.__name__.rsplit('.', 1)[-1]}_{next(_counter)}"
    if not hasattr(module, "__path__"):
        source = inspect.getsource(module)
        count = source.count(old)
        if count != 1:
            raise AssertionError(f"mutation target occurs {count} times in {module.__name__}: {old!r}")
        path = _root / f"{name}.py"
        path.write_text(source.replace(old, new), encoding="utf-8")
        return _load(name, path)
    sources = {p: p.read_text(encoding="utf-8") for p in sorted(Path(module.__path__[0]).glob("*.py"))}
    count = sum(text.count(old) for text in sources.values())
    if count != 1:
        raise AssertionError(f"mutation target occurs {count} times in {module.__name__}: {old!r}")
    own = re.compile(re.escape(module.__name__) + r"(?=[.\s])")
    (_root / name).mkdir()
    for path, text in sources.items():
        (_root / name / path.name).write_text(own.sub(name, text.replace(old, new)), encoding="utf-8")
    return _load(name, _root / name / "__init__.py")


def _load(name: str, path: Path) -> ModuleType:
    package = [str(path.parent)] if path.name == "__init__.py" else None
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=package)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def crosshair_mutant(mod: ModuleType, function: str,
                     per_condition_timeout: float = CONDITION_TIMEOUT_S) -> CrosshairRun:
    """Run CrossHair on one function of a mutant module, with the settings of ``spec check``."""
    return run_crosshair(f"{mod.__name__}.{function}", per_condition_timeout, extra_paths=[str(_root)])


def _functions(namespace: dict[str, object], module_name: str, prefix: str = "") -> dict[str, object]:
    """Plain functions and methods defined in a module (by qualified name), including properties' getters."""
    found: dict[str, object] = {}
    for name, value in namespace.items():
        wrapped = getattr(value, "__wrapped__", None)  # a functools.lru_cache (or other wraps) of a function
        if not inspect.isfunction(value) and inspect.isfunction(wrapped) and wrapped.__module__ == module_name:
            found[prefix + name] = wrapped
        elif inspect.isfunction(value) and value.__module__ == module_name:
            found[prefix + name] = value
        elif isinstance(value, (staticmethod, classmethod)) and inspect.isfunction(value.__func__):
            found[prefix + name] = value.__func__
        elif isinstance(value, property) and value.fget is not None:
            found[prefix + name] = value.fget
        elif inspect.isclass(value) and value.__module__ == module_name and not prefix:
            found.update(_functions(dict(vars(value)), module_name, f"{name}."))
    return found


class refimpl_mutant:
    """Break one rule of a live module in place: ``with refimpl_mutant(module, old, new): ...``.

    The module's source with ``old`` (exactly once) replaced by ``new`` is compiled; every function or method whose
    code changed gets the mutated code object swapped into the *existing* function object, so every caller — other
    modules that imported it, instances already built — runs the broken rule. Leaving the block restores the code.
    """

    def __init__(self, module: ModuleType, old: str, new: str) -> None:
        source = inspect.getsource(module)
        count = source.count(old)
        if count != 1:
            raise AssertionError(f"mutation target occurs {count} times in {module.__name__}: {old!r}")
        self.module = module
        namespace: dict[str, object] = {"__name__": module.__name__, "__file__": module.__file__}
        exec(compile(source.replace(old, new), module.__file__ or module.__name__, "exec"), namespace)
        live = _functions(vars(module), module.__name__)
        mutated = _functions(namespace, module.__name__)
        self._swaps = []
        for name, func in mutated.items():
            target = live.get(name)
            if target is None:
                raise AssertionError(f"mutation adds {name}; only changes to existing functions are supported")
            if target.__code__.co_code != func.__code__.co_code or target.__code__.co_consts != func.__code__.co_consts:
                self._swaps.append((target, target.__code__, func.__code__))
        if not self._swaps:
            raise AssertionError(f"mutation {old!r} -> {new!r} changes no function of {module.__name__}")
        # Caches in front of a swapped function hold results of the other code: emptied on the way in and out.
        self._caches = [v for v in vars(module).values() if callable(getattr(v, "cache_clear", None))
                        and any(getattr(v, "__wrapped__", None) is target for target, _o, _n in self._swaps)]

    def __enter__(self) -> refimpl_mutant:
        for target, _old, new in self._swaps:
            target.__code__ = new
        for cache in self._caches:
            cache.cache_clear()
        return self

    def __exit__(self, *exc: object) -> None:
        for target, old, _new in self._swaps:
            target.__code__ = old
        for cache in self._caches:
            cache.cache_clear()
