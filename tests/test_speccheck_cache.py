"""``spec check`` reuses a result while nothing that decides it has changed, and says so.

CrossHair and the explorer are replaced by counting stand-ins (the real explorer at a small bound): the tests count
what a second run does again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from rocketspec import checkcache, speccheck
from rocketspec.checkcache import CACHE_ENV, CheckCache, cache_dir, source_digests
from rocketspec.cli import main
from rocketspec.contracts import CrosshairRun
from rocketspec.spec.explorer import Exploration, Model
from rocketspec.spec.explorer import explore as real_explore

AREAS = ["remoting", "pull_correction"]


class Counting:
    """Stand-ins for ``run_crosshair`` and ``explore`` that note what they were asked to do."""

    def __init__(self) -> None:
        self.crosshair: list[tuple[str, ...]] = []
        self.explored: list[str] = []

    def run_crosshair(self, targets: Sequence[str], per_condition_timeout: float, **_: object) -> CrosshairRun:
        self.crosshair.append(tuple(targets))
        return CrosshairRun(" ".join(targets), 0, (), "", per_condition_timeout)

    def explore(self, model: Model, max_states: int = 0, progress: object = None) -> Exploration:  # type: ignore[type-arg]
        self.explored.append(model.area)
        return real_explore(model, max_states=50)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Counting]:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    fake = Counting()
    monkeypatch.setattr(speccheck, "run_crosshair", fake.run_crosshair)
    monkeypatch.setattr(speccheck, "explore", fake.explore)
    yield fake


def run(cache: CheckCache) -> list[speccheck.AreaReport]:
    return speccheck.check_areas(AREAS, max_states=50, jobs=1, cache=cache)


def test_the_cache_lives_where_the_setting_says(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "rocketspec"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "rocketspec"


def test_a_warm_run_takes_every_result_from_the_cache(counting: Counting) -> None:
    cold = run(CheckCache())
    assert sorted(counting.explored) == sorted(AREAS) and len(counting.crosshair) == len(AREAS)
    assert not any(r.explore_cached or r.crosshair_cached for r in cold)
    counting.explored.clear()
    counting.crosshair.clear()
    warm = run(CheckCache())
    assert counting.explored == [] and counting.crosshair == []
    for before, after in zip(cold, warm, strict=True):
        assert after.explore_cached and after.crosshair_cached == after.crosshair_modules > 0
        assert after.exploration == before.exploration
        assert [c.result for c in after.clauses] == [c.result for c in before.clauses]
        head = speccheck.format_report(after, width=200).splitlines()[0]
        assert "(cached)" in head, head


def test_a_changed_source_reruns_only_what_depends_on_it(counting: Counting, monkeypatch: pytest.MonkeyPatch) -> None:
    run(CheckCache())
    counting.explored.clear()
    counting.crosshair.clear()
    changed = "rocketspec.spec.remoting.oracles"

    def edited(modules: Sequence[str]) -> dict[str, str]:
        digests = source_digests(modules)
        if changed in digests:
            digests[changed] = "edited"
        return digests

    monkeypatch.setattr(checkcache, "source_digests", edited)
    reports = {r.area: r for r in run(CheckCache())}
    assert counting.explored == ["remoting"]
    # The remoting modules that import the oracles are checked again; its clause table (which does not) is not.
    assert len(counting.crosshair) == 1
    assert changed in counting.crosshair[0] and "rocketspec.spec.remoting.clauses" not in counting.crosshair[0]
    assert reports["pull_correction"].explore_cached
    assert reports["pull_correction"].crosshair_cached == reports["pull_correction"].crosshair_modules
    assert not reports["remoting"].explore_cached
    assert 0 < reports["remoting"].crosshair_cached < reports["remoting"].crosshair_modules


def test_no_cache_runs_everything(counting: Counting, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "check", *AREAS, "--max-states", "50"]) == 1  # incomplete at 50 states: fails, cached
    counting.explored.clear()
    counting.crosshair.clear()
    main(["spec", "check", *AREAS, "--max-states", "50"])
    assert counting.explored == [] and counting.crosshair == []
    assert "(cached)" in capsys.readouterr().out
    main(["spec", "check", *AREAS, "--max-states", "50", "--no-cache"])
    assert sorted(counting.explored) == sorted(AREAS) and len(counting.crosshair) == len(AREAS)
    assert "(cached)" not in capsys.readouterr().out


@pytest.mark.parametrize("garbage", ["", "{not json", '{"format": 1}', '{"format": 1, "key": "x", "value": []}',
                                     '{"format": 1, "key": "KEY", "value": {"returncode": "x", "states": null}}'])
def test_a_corrupt_cache_entry_is_a_miss(counting: Counting, tmp_path: Path, garbage: str) -> None:
    run(CheckCache())
    entries = sorted((tmp_path / "cache").glob("*.json"))
    assert entries
    for entry in entries:
        entry.write_text(garbage.replace("KEY", entry.stem.split("-", 1)[1]), encoding="utf-8")
    counting.explored.clear()
    counting.crosshair.clear()
    run(CheckCache())
    assert sorted(counting.explored) == sorted(AREAS) and len(counting.crosshair) == len(AREAS)


def test_an_unwritable_cache_is_no_cache(counting: Counting, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    run(CheckCache(blocker / "cache"))  # its parent is a file: nothing can be stored, nothing fails
    run(CheckCache(blocker / "cache"))
    assert len(counting.explored) == 2 * len(AREAS)


def test_the_key_covers_the_imported_spec_modules_transitively() -> None:
    digests = source_digests(["rocketspec.spec.remoting.machine"])
    # The machine imports the oracles, which import java; and the transition table, which imports the explorer.
    for module in ("rocketspec.spec.remoting.machine", "rocketspec.spec.remoting.oracles",
                   "rocketspec.spec.remoting.clauses", "rocketspec.spec.java", "rocketspec.spec.protocol",
                   "rocketspec.spec.transitions", "rocketspec.spec.explorer"):
        assert len(digests[module]) == 64, module
    assert "rocketspec.spec.remoting.invariants" not in digests
    # The oracles import the protocol in parentheses that hold a ")" in a comment: that import counts too.
    assert "rocketspec.spec.protocol" in source_digests(["rocketspec.spec.remoting.oracles"])
    assert not any(m.startswith("rocketspec.refimpl") or m == "attrs" for m in digests)


def test_the_settings_are_part_of_the_key() -> None:
    cache = CheckCache(Path("/nonexistent"))
    module = "rocketspec.spec.remoting.oracles"
    assert cache.crosshair_key(module, 4.0, 40) == cache.crosshair_key(module, 4.0, 40)
    assert cache.crosshair_key(module, 4.0, 40) != cache.crosshair_key(module, 5.0, 40)
    assert cache.crosshair_key(module, 4.0, 40) != cache.crosshair_key(module, 4.0, 0)
    assert cache.explore_key("rocketspec.spec.remoting", 10) != cache.explore_key("rocketspec.spec.remoting", 11)
