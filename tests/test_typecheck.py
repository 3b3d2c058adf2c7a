"""mypy passes on the package as it is installed: default checking everywhere, strict on ``spec`` and
``conformance`` (``[tool.mypy]`` in pyproject.toml).

The source folders are installed under other names (``spec/`` is ``rocketspec.spec``, ...), which mypy cannot map
itself: the test lays the package out as installed, with links, and checks it there.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rocketspec.spec import AREAS

ROOT = Path(__file__).resolve().parent.parent
SUBPACKAGES = ("spec", "refimpl", "conformance", "traces")


def installed_layout(where: Path) -> Path:
    """``where/rocketspec``: the top-level files and ``cli/`` of ``rocketspec/``, and the four source folders."""
    package = where / "rocketspec"
    package.mkdir()
    for item in (ROOT / "rocketspec").iterdir():
        if item.name != "__pycache__":
            (package / item.name).symlink_to(item)
    for name in SUBPACKAGES:
        (package / name).symlink_to(ROOT / name)
    return where


def mypy(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(where / ".mypy_cache"), "--no-error-summary", "--hide-error-context", *args],
        cwd=where, capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mypy", reason="mypy is not installed: pip install -e '.[test]'")
    return installed_layout(tmp_path_factory.mktemp("typecheck"))


def test_the_package_type_checks(layout: Path) -> None:
    done = mypy(layout, "-p", "rocketspec")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_strict_settings_apply_to_the_spec(layout: Path, tmp_path: Path) -> None:
    """The check can fail: an untyped function in a spec area is an error under the strict settings."""
    probe = tmp_path / "probe"
    probe.mkdir()
    installed_layout(probe)
    (probe / "rocketspec" / "spec").unlink()
    (probe / "rocketspec" / "spec").mkdir()
    for item in (ROOT / "spec").iterdir():
        if item.name != "__pycache__":
            (probe / "rocketspec" / "spec" / item.name).symlink_to(item)
    area = AREAS[0]
    (probe / "rocketspec" / "spec" / area).unlink()
    (probe / "rocketspec" / "spec" / area).mkdir()
    for item in (ROOT / "spec" / area).glob("*.py"):
        text = item.read_text(encoding="utf-8")
        if item.name == "oracles.py":
            text += "\n\ndef untyped(x):\n    return x\n"
        (probe / "rocketspec" / "spec" / area / item.name).write_text(text, encoding="utf-8")
    done = mypy(probe, "-m", f"rocketspec.spec.{area}.oracles")
    assert done.returncode == 1 and "untyped" in done.stdout and "no-untyped-def" in done.stdout, done.stdout
