"""The examples as a newcomer runs them: what they do with the defaults they ship with."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from headwater.testing import TestContext

ROOT = Path(__file__).resolve().parent.parent


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_word_count_spout_is_paced_so_a_run_keeps_counting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """By default each spout task emits at most 50 lines a second: the 3,000 lines of the
    two tasks take 30 s, longer than the README's 20 s run (a clock of the test's own)."""
    monkeypatch.delenv("WORDCOUNT_RATE", raising=False)
    monkeypatch.delenv("WORDCOUNT_REPEAT", raising=False)
    wordcount = _load(ROOT / "examples/iot/wordcount.py", "wordcount_paced")
    now = [1000.0]
    monkeypatch.setattr(wordcount.time, "monotonic", lambda: now[0])
    ctx = TestContext(wordcount.topology, "lines")
    spout = wordcount.Lines()
    spout.open(ctx)
    assert len(spout.todo) == 1500  # its half of 500 x 6 lines
    for _ in range(100):  # however often it is asked within one instant: one line
        spout.next_tuple()
    assert len(ctx.emitted) == 1
    now[0] += 1.0
    for _ in range(100):
        spout.next_tuple()
    assert len(ctx.emitted) == 51  # 50 a second
    now[0] += 3600.0  # after a long pause (deactivated), a second's lines at most
    for _ in range(1000):
        spout.next_tuple()
    assert len(ctx.emitted) == 101
