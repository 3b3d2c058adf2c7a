"""argparse value types shared by the command line's sub-commands: a bad value is a one-line usage error."""

from __future__ import annotations

import argparse
import math


def _number(text: str, kind: type, what: str) -> int | float:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None


def positive_float(text: str) -> float:
    value = float(_number(text, float, "a number"))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def positive_int(text: str) -> int:
    value = int(_number(text, int, "a whole number"))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def non_negative_int(text: str) -> int:
    value = int(_number(text, int, "a whole number"))
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return value


def non_negative_float(text: str) -> float:
    value = float(_number(text, float, "a number"))
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0: {text}")
    return value
