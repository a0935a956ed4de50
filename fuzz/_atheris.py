"""A small typed face on atheris (it ships no type information), shared by the harnesses.

Each harness is a script: ``python fuzz/fuzz_frames.py [libFuzzer flags] [corpus dirs]``
fuzzes its target, and ``python fuzz/fuzz_frames.py --seeds DIR`` writes its seed inputs
into DIR (``scripts/fuzz`` does both). A harness's ``one_input`` must raise only on a
finding: an exception the target's contract does not allow, which libFuzzer reports with
the input that caused it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import atheris  # type: ignore[import-untyped]


class DataProvider(Protocol):
    """The part of ``atheris.FuzzedDataProvider`` the harnesses use (atheris names it)."""

    def ConsumeBytes(self, count: int) -> bytes: ...
    def ConsumeIntInRange(self, lo: int, hi: int) -> int: ...
    def ConsumeUnicodeNoSurrogates(self, count: int) -> str: ...
    def ConsumeBool(self) -> bool: ...
    def remaining_bytes(self) -> int: ...


def provider(data: bytes) -> DataProvider:
    """Structured values drawn from a fuzzer's input."""
    fdp: DataProvider = atheris.FuzzedDataProvider(data)
    return fdp


def instrument(*packages: str) -> AbstractContextManager[None]:
    """Instrument ``packages`` for coverage as they are imported inside the ``with``."""
    manager: AbstractContextManager[None] = atheris.instrument_imports(include=list(packages))
    return manager


def chunks(fdp: DataProvider, count: int) -> Iterator[bytes]:
    """Up to ``count`` byte strings of fuzzer-chosen lengths (the rest of the input last)."""
    for _ in range(count):
        if not fdp.remaining_bytes():
            return
        yield fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64))
    yield fdp.ConsumeBytes(fdp.remaining_bytes())


def value(fdp: DataProvider, depth: int = 0) -> Any:
    """A value the wire codec carries (None, bool, int, float, str, bytes, list, dict)."""
    pick = fdp.ConsumeIntInRange(0, 7 if depth < 3 else 5)
    if pick == 0:
        return None
    if pick == 1:
        return fdp.ConsumeBool()
    if pick == 2:
        return fdp.ConsumeIntInRange(-(2**63), 2**64 - 1)
    if pick == 3:
        return fdp.ConsumeIntInRange(-(2**31), 2**31) / 7
    if pick == 4:
        return fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 12))
    if pick == 5:
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 12))
    n = fdp.ConsumeIntInRange(0, 4)
    if pick == 6:
        return [value(fdp, depth + 1) for _ in range(n)]
    return {fdp.ConsumeUnicodeNoSurrogates(8): value(fdp, depth + 1) for _ in range(n)}


def main(one_input: Callable[[bytes], None], seeds: Callable[[], Iterable[bytes]]) -> None:
    """Write the seeds (``--seeds DIR``), or fuzz ``one_input`` with libFuzzer's arguments."""
    if len(sys.argv) == 3 and sys.argv[1] == "--seeds":
        folder = Path(sys.argv[2])
        folder.mkdir(parents=True, exist_ok=True)
        for i, seed in enumerate(seeds()):
            (folder / f"seed-{i:03d}").write_bytes(seed)
        return
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
