"""The result cache of ``rocketspec spec check``: a result is reused while nothing that decides it has changed.

A result is stored under a hash of everything that decides it:

- a CrossHair run of one checked module: the source of that module and of every spec module it imports,
  transitively, within ``rocketspec.spec`` (imports inside functions too); the file's path (the results name it);
  the CrossHair, solver (z3) and Python versions; the per-condition timeout and the iteration limit;
- an exploration of one area: the sources of the area's package (every module of it) and of the spec modules they
  import, transitively, within ``rocketspec.spec`` (the explorer itself among them); the state bound.

Entries are JSON files in :func:`cache_dir` (``$ROCKETSPEC_CACHE_DIR``, else ``$XDG_CACHE_HOME/rocketspec``, else
``~/.cache/rocketspec``). An entry that cannot be read or does not hold what it must is a miss (the check runs
again), never an error; a cache that cannot be written is no cache. Only what can be trusted again is stored: no
CrossHair run that crashed or timed out, no exploration that found a counterexample.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import pkgutil
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from rocketspec.contracts import ConditionResult, CrosshairRun
from rocketspec.spec.explorer import Exploration

CACHE_ENV = "ROCKETSPEC_CACHE_DIR"
#: Bumped when an entry's layout changes: older entries then simply miss.
FORMAT = 1
#: The package whose modules' sources key the results (the spec is pure: nothing outside it decides a result but
#: the libraries CrossHair and the explorer run on).
SPEC_PACKAGE = "rocketspec.spec"


def cache_dir() -> Path:
    """Where results are stored: ``$ROCKETSPEC_CACHE_DIR``, ``$XDG_CACHE_HOME/rocketspec``, ``~/.cache/rocketspec``."""
    forced = os.environ.get(CACHE_ENV)
    if forced:
        return Path(forced)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "rocketspec"


@functools.lru_cache(maxsize=4096)
def _origin(module: str) -> str | None:
    """The source file of ``module``, if it is a module of the spec with one (remembered: every ``from P import
    name`` asks whether ``P.name`` is a module, and where the files are does not change while a check runs)."""
    if module != SPEC_PACKAGE and not module.startswith(SPEC_PACKAGE + "."):
        return None
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if found is None or not found.origin or not found.origin.endswith(".py"):
        return None
    return found.origin


#: An import statement at the start of a line (any indentation: imports inside functions count too), with a
#: parenthesised list over several lines. Only these are parsed where they parse alone: parsing whole modules made
#: every run's keys slow.
_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+[.\w]+[ \t]+import[ \t]*(?:\([^)]*\)|[^\n]*)|import[ \t]+[^\n]*)", re.M)


def _import_nodes(source: bytes) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of ``source``. Each statement the pattern finds is parsed alone; if one does not parse
    (a ``)`` in a comment inside its parentheses, or prose in a docstring) the whole module is parsed instead, so
    that no import is ever missed."""
    nodes: list[ast.Import | ast.ImportFrom] = []
    for match in _IMPORT.finditer(source):
        try:
            statement = ast.parse(match.group(0).strip())
        except SyntaxError:
            return [n for n in ast.walk(ast.parse(source)) if isinstance(n, (ast.Import, ast.ImportFrom))]
        nodes += [n for n in statement.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return nodes


@functools.lru_cache(maxsize=1024)
def _imported(module: str, digest: str, source: bytes, is_package: bool) -> frozenset[str]:
    """The spec modules ``source`` imports (anywhere in it); ``from P import name`` counts ``P.name`` when that is
    a module. Remembered by the source's ``digest``: a run computes the keys of many modules over the same files."""
    names: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in _import_nodes(source):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        else:
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(n for n in names if _origin(n) is not None)


def source_digests(modules: Iterable[str]) -> dict[str, str]:
    """The SHA-256 of the source of each of ``modules`` and of every spec module they import, transitively."""
    digests: dict[str, str] = {}
    todo = list(modules)
    while todo:
        module = todo.pop()
        if module in digests:
            continue
        origin = _origin(module)
        if origin is None:
            digests[module] = "-"  # not a spec module with a source: its name is all that counts
            continue
        source = Path(origin).read_bytes()
        digests[module] = hashlib.sha256(source).hexdigest()
        todo.extend(_imported(module, digests[module], source, origin.endswith("__init__.py")) - digests.keys())
    return dict(sorted(digests.items()))


def package_modules(package: str) -> list[str]:
    """``package`` and every module in it (one level: the areas are flat packages), or the module alone."""
    found = importlib.util.find_spec(package)
    if found is None or found.submodule_search_locations is None:
        return [package]
    return [package, *(f"{package}.{info.name}" for info in pkgutil.iter_modules(found.submodule_search_locations))]


def _digest(parts: Mapping[str, object]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def crosshair_version() -> str:
    """CrossHair's version and that of the solver it runs on (both decide what it confirms)."""
    versions = []
    for dist in ("crosshair-tool", "z3-solver"):
        try:
            versions.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{dist} absent")
    return ", ".join(versions)


class CheckCache:
    """Stored CrossHair runs (per checked module) and explorations (per area) under ``root``.

    ``read`` false: nothing stored is used (``--no-cache``), fresh results are still stored.
    """

    def __init__(self, root: Path | None = None, *, read: bool = True) -> None:
        self.root = cache_dir() if root is None else root
        self.read = read

    # ---------------------------------------------------------------------------------------------------- keys
    def crosshair_key(self, module: str, per_condition_timeout: float, iterations: int) -> str:
        return _digest({
            "format": FORMAT, "kind": "crosshair", "module": module, "file": _origin(module) or "",
            "sources": source_digests([module]), "crosshair": crosshair_version(),
            "python": sys.version, "timeout": per_condition_timeout, "iterations": iterations,
        })

    def explore_key(self, area_package: str, max_states: int) -> str:
        return _digest({
            "format": FORMAT, "kind": "explore", "area": area_package,
            "sources": source_digests(package_modules(area_package)), "python": sys.version,
            "max_states": max_states,
        })

    # -------------------------------------------------------------------------------------------------- storage
    def _path(self, kind: str, key: str) -> Path:
        return self.root / f"{kind}-{key}.json"

    def _load(self, kind: str, key: str) -> dict[str, object] | None:
        if not self.read:
            return None
        try:
            entry = json.loads(self._path(kind, key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
            return None
        value = entry.get("value")
        return value if isinstance(value, dict) else None

    def _store(self, kind: str, key: str, value: Mapping[str, object]) -> None:
        text = json.dumps({"format": FORMAT, "key": key, "value": value})
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            # Written aside and renamed: a reader (another run) sees the whole entry or none.
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=f".{kind}-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(tmp, self._path(kind, key))
        except OSError:
            return  # a cache that cannot be written is no cache, not a failed check

    # ------------------------------------------------------------------------------------------------ CrossHair
    def get_crosshair(self, key: str) -> tuple[int, tuple[ConditionResult, ...]] | None:
        """A module's stored CrossHair return code and condition results, or ``None``."""
        value = self._load("crosshair", key)
        if value is None:
            return None
        code, raw = value.get("returncode"), value.get("results")
        if code not in (0, 1) or not isinstance(code, int) or not isinstance(raw, list):
            return None
        results = []
        for item in raw:
            if not (isinstance(item, list) and len(item) == 4 and isinstance(item[1], int)
                    and all(isinstance(item[i], str) for i in (0, 2, 3))):
                return None
            results.append(ConditionResult(item[0], item[1], item[2], item[3]))
        return code, tuple(results)

    def put_crosshair(self, key: str, returncode: int, results: Iterable[ConditionResult]) -> None:
        if returncode not in (0, 1):
            return
        self._store("crosshair", key, {
            "returncode": returncode, "results": [[r.path, r.line, r.level, r.message] for r in results]})

    # ------------------------------------------------------------------------------------------------- explorer
    def get_exploration(self, key: str) -> tuple[Exploration, float] | None:
        """An area's stored exploration and the seconds it took, or ``None``."""
        value = self._load("explore", key)
        if value is None:
            return None
        try:
            exploration = Exploration(
                area=_text(value.get("area")), bounds=_text(value.get("bounds")),
                states=_count(value.get("states")), transitions=_count(value.get("transitions")),
                depth=_count(value.get("depth")), complete=_flag(value.get("complete")),
                invariants=_texts(value.get("invariants")), clauses=_texts(value.get("clauses")), violations=(),
            )
            seconds = value.get("seconds")
            if not isinstance(seconds, (int, float)):
                raise ValueError("seconds")
        except ValueError:
            return None
        return exploration, float(seconds)

    def put_exploration(self, key: str, exploration: Exploration, seconds: float) -> None:
        if exploration.violations:
            return  # a counterexample is what the user works on: it is found again, not remembered
        self._store("explore", key, {
            "area": exploration.area, "bounds": exploration.bounds, "states": exploration.states,
            "transitions": exploration.transitions, "depth": exploration.depth, "complete": exploration.complete,
            "invariants": list(exploration.invariants), "clauses": list(exploration.clauses), "seconds": seconds,
        })


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"not a count: {value!r}")
    return value


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"not a text: {value!r}")
    return value


def _texts(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError(f"not a list: {value!r}")
    return tuple(_text(v) for v in value)


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"not a flag: {value!r}")
    return value


def split_run(run: CrosshairRun, files: Mapping[str, str]) -> dict[str, tuple[int, tuple[ConditionResult, ...]]] | None:
    """One run over several modules as each module's own (return code, results); ``files`` maps each module to its
    source file. ``None`` when a result lies in none of them (it could not be stored under one module's key)."""
    by_file = {os.path.realpath(path): module for module, path in files.items()}
    per_module: dict[str, list[ConditionResult]] = {module: [] for module in files}
    for result in run.results:
        module = by_file.get(os.path.realpath(result.path))
        if module is None:
            return None
        per_module[module].append(result)
    return {module: (1 if any(r.failed for r in results) else 0, tuple(results))
            for module, results in per_module.items()}


def module_file(module: str) -> str | None:
    """The source file of a spec module (what CrossHair's results name)."""
    return _origin(module)


__all__ = ["CACHE_ENV", "CheckCache", "cache_dir", "crosshair_version", "module_file", "package_modules",
           "source_digests", "split_run"]
