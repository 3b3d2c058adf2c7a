"""The one setting that finds a real RocketMQ: skip with the reason where there is none, fail where CI forbids it."""

from __future__ import annotations

from pathlib import Path

import pytest
import realcluster
from _pytest.outcomes import Failed, Skipped


def _absent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(realcluster.HOME_ENV, raising=False)
    monkeypatch.setattr(realcluster, "DEFAULT_HOME", tmp_path / "no-rocketmq")


def test_absent_installation_skips_with_the_reason(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _absent(monkeypatch, tmp_path)
    monkeypatch.delenv(realcluster.REQUIRE_ENV, raising=False)
    with pytest.raises(Skipped, match=realcluster.HOME_ENV):
        realcluster.require_home()


def test_absent_installation_fails_when_required(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _absent(monkeypatch, tmp_path)
    monkeypatch.setenv(realcluster.REQUIRE_ENV, "1")
    with pytest.raises(Failed, match="forbids skipping"):
        realcluster.require_home()


def test_a_setting_naming_nothing_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(realcluster.HOME_ENV, str(tmp_path))
    with pytest.raises(Failed, match="is not a RocketMQ home"):
        realcluster.rocketmq_home()


def test_the_setting_names_the_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "cluster.sh").write_text("#!/bin/sh\n")
    (tmp_path / "lib").mkdir()
    monkeypatch.setenv(realcluster.HOME_ENV, str(tmp_path))
    assert realcluster.rocketmq_home() == tmp_path
