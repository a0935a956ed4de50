"""Argument types of the CLI: a bad value is argparse's usage error saying what to give.

``whole(1)`` takes 1, 2, ...; ``number(0, above=True)`` any number over 0;
``number(0, 1, what="a rate")`` one from 0 to 1. The message names the value
and the range, e.g. ``'0': must be 1 or more, got 0``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def whole(lo: int, hi: int | None = None, what: str = "a whole number") -> Callable[[str], int]:
    """A parser of whole numbers from ``lo`` (to ``hi``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if value < lo or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(_range(value, lo, hi, False))
        return value

    return parse


def number(
    lo: float, hi: float | None = None, *, above: bool = False, what: str = "a number"
) -> Callable[[str], float]:
    """A parser of finite numbers from ``lo`` (over ``lo`` if ``above``) (to ``hi``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        low = value <= lo if above else value < lo
        if not math.isfinite(value) or low or (hi is not None and value > hi):
            raise argparse.ArgumentTypeError(_range(value, lo, hi, above))
        return value

    return parse


def _range(value: float, lo: float, hi: float | None, above: bool) -> str:
    if hi is not None:
        return f"must be from {lo:g} to {hi:g}, got {value:g}"
    return (
        f"must be more than {lo:g}, got {value:g}"
        if above
        else (f"must be {lo:g} or more, got {value:g}")
    )


POSITIVE_INT = whole(1)
SECONDS = number(0, above=True, what="a number of seconds")


def masters(text: str) -> str:
    """``HOST:PORT`` or several, comma-separated (standby masters): each one checked."""
    given = [a.strip() for a in text.split(",")]
    for address in given:
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise argparse.ArgumentTypeError(
                f"{address!r} is not HOST:PORT (give the master's gRPC address, or every "
                "master's, comma-separated: a:7070,b:7070)"
            )
    return ",".join(given)
