"""The command line's one error: bad input or a target it cannot use, reported in one line with exit status 2.

The library raises its own exceptions (``GenerateError``, ``SchemaError``, ``TargetError``, ``TapError``, ...); each
command turns the ones a user can cause into a :class:`UsageError` with the message a user needs, and
:func:`rocketspec.cli.main.main` prints it as ``rocketspec: error: <message>``.
"""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the command line, or a target or file it cannot use: one line, exit status 2."""


__all__ = ["UsageError"]
