"""Installing a locked npm client (ali-ons) for the tests that drive it, once per lockfile, shared by sessions.

``install_driver(source, npm)`` runs ``npm ci`` of ``source``'s ``package.json`` / ``package-lock.json`` into
``<cache>/<hash of those files>`` (``$ROCKETSPEC_JS_CACHE``, else ``$XDG_CACHE_HOME/rocketspec/realclient-js`` or
``~/.cache/rocketspec/realclient-js``) unless a finished install is there, and copies ``source/driver.js`` in afresh
(it is not part of the hash). A file lock serialises parallel sessions; a failed install fails the test.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

INSTALL_FILES = ("package.json", "package-lock.json")
INSTALL_TIMEOUT_S = 300


def cache_root() -> Path:
    explicit = os.environ.get("ROCKETSPEC_JS_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "rocketspec" / "realclient-js"


def install_driver(source: Path, npm: str) -> Path:
    """The installed copy of ``source/driver.js``, next to its ``node_modules``."""
    digest = hashlib.sha256()
    for name in INSTALL_FILES:
        digest.update((source / name).read_bytes())
    key = digest.hexdigest()[:16]
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    target = root / key
    marker = target / ".installed"
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        installed = marker.is_file() and (target / "node_modules" / "ali-ons" / "package.json").is_file()
        if not installed:
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            for name in INSTALL_FILES:
                shutil.copyfile(source / name, target / name)
            command = [npm, "ci", "--no-audit", "--no-fund", "--prefer-offline", "--prefix", str(target)]
            try:
                done = subprocess.run(command, cwd=target, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                                      check=False)
            except subprocess.TimeoutExpired:
                pytest.fail(f"`{' '.join(command)}` did not finish within {INSTALL_TIMEOUT_S} s")
            if done.returncode != 0:
                pytest.fail(f"`{' '.join(command)}` failed ({done.returncode}):\n{done.stderr[-3000:]}")
            marker.write_text(key)
        # Two drivers share one install when their lockfiles match: each gets its own file name.
        name = f"driver-{hashlib.sha256(str(source).encode()).hexdigest()[:8]}.js"
        staged = target / f"{name}.tmp"
        shutil.copyfile(source / "driver.js", staged)
        os.replace(staged, target / name)
    return target / name
