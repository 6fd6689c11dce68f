"""Argument types the command line shares (robot_ik_nn/cli/, view/cli.py, hardware/cli.py and the
emulators): each turns a word into a value or raises argparse.ArgumentTypeError naming the problem.

A leaf: it imports nothing of the package, so any part of the command line can use it without an
import circle.
"""

from __future__ import annotations

import argparse
import math


def count(text: str) -> int:
    """A whole number of at least 1 (a count of targets, steps, processes ...)."""
    return whole(text, 1)


def count0(text: str) -> int:
    """A whole number of at least 0."""
    return whole(text, 0)


def port(text: str) -> int:
    """A TCP port: a whole number from 1 to 65535."""
    value = whole(text, 1)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is at most 65535, got {value}")
    return value


def positive(text: str) -> float:
    """A finite number above 0 (minutes, seconds, milliseconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return value


def whole(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
    return value
