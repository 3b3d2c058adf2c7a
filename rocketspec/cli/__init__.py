"""The ``rocketspec`` command line (``rocketspec = rocketspec.cli:main``): see :mod:`rocketspec.cli.main`."""

from __future__ import annotations

from rocketspec.cli.errors import UsageError
from rocketspec.cli.main import build_parser, main

__all__ = ["UsageError", "build_parser", "main"]
