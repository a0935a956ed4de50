"""Hot keys of a task's fields-grouped inputs: which keys its load comes from.

The executor hands every data frame to ``HotKeys.sample``, which takes the
grouping key of one tuple in ``STRIDE`` (a stride carried across frames: no
random number, nothing per tuple skipped) into a space-saving top-k
(``TopK``, Metwally et al.: at most ``TOP_K`` counters, a new key takes the
smallest one's place). Each metrics interval ``report`` gives the ``REPORTED``
top keys with their share of the tuples sampled in that interval, and starts
over. Keys are rendered with ``str()``, cut to ``KEY_CHARS`` characters: the
stmgr reports them as ``hot_key:<key>``. A component without a fields-grouped
input samples nothing (``keyed`` is empty).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..api import Topology

STRIDE = 16
TOP_K = 16
REPORTED = 5
KEY_CHARS = 64


class TopK:
    """Space-saving top-k counts (Metwally et al.'s stream summary): exact while at most ``k``
    distinct keys came; past that, a new key takes the counter that has been the smallest
    longest, with its count plus one. ``at`` holds each count's keys in the order they
    reached it, so that counter is found without a scan."""

    def __init__(self, k: int = TOP_K) -> None:
        self.k = k
        self.counts: dict[Any, int] = {}
        self.at: dict[int, dict[Any, None]] = {}  # count -> its keys, oldest first
        self.low = 0  # the smallest count (while ``counts`` holds any)
        self.total = 0

    def add(self, key: Any) -> None:
        self.add_all((key,))

    def add_all(self, keys: Iterable[Any]) -> None:
        """``add`` each of ``keys`` in turn (one call for a frame's sample). An unhashable
        key raises ``TypeError``; the keys before it are added (``total`` counts them)."""
        counts, at, k, low, added = self.counts, self.at, self.k, self.low, 0
        try:
            for key in keys:
                c = counts.get(key)
                if c is not None:  # off its count's keys, onto the next count's
                    same = at[c]
                    del same[key]
                    if not same:
                        del at[c]
                        if c == low:
                            low = c + 1
                    c += 1
                elif len(counts) < k:
                    c = low = 1
                else:  # the counter longest at the smallest count goes to the new key
                    same = at[low]
                    victim = next(iter(same))
                    del same[victim], counts[victim]
                    c = low + 1
                    if not same:
                        del at[low]
                        low = c
                counts[key] = c
                bucket = at.get(c)
                if bucket is None:
                    at[c] = {key: None}
                else:
                    bucket[key] = None
                added += 1
        finally:
            self.total += added
            self.low = low

    def shares(self, n: int = REPORTED) -> dict[str, float]:
        """The ``n`` top keys (rendered) and their shares of what was added; then reset."""
        out: dict[str, float] = {}
        if self.total:
            top = sorted(self.counts.items(), key=lambda kv: -kv[1])[:n]
            for key, count in top:
                name = str(key)[:KEY_CHARS]
                out[name] = out.get(name, 0.0) + count / self.total
        self.counts, self.at, self.low, self.total = {}, {}, 0, 0
        return out


class HotKeys:
    """One task's sampler: the key fields of each fields-grouped input and the top-k."""

    def __init__(self, keyed: dict[tuple[str, str], list[int]] | None = None) -> None:
        self.keyed = keyed or {}  # (component, stream) -> the key fields' positions
        self.phase = 0  # the index, in the next frame, of the next tuple to sample
        self.top = TopK()

    def sample(self, component: str, stream: str, entries: list[Any], rooted: bool) -> None:
        """Sample one frame's ``entries`` (values, or (values, roots) when ``rooted``)."""
        idx = self.keyed.get((component, stream))
        if idx is None:
            return
        picked = entries[self._phase(len(entries)) :: STRIDE]
        self._add(idx, [entry[0] for entry in picked] if rooted else picked)

    def sample_columns(self, component: str, stream: str, cols: list[list[Any]], n: int) -> None:
        """``sample`` for a frame of ``n`` tuples as columns (``wire/_columns.py``)."""
        idx = self.keyed.get((component, stream))
        if idx is None:
            return
        phase = self._phase(n)
        if len(idx) == 1:  # one key field: its column's sampled values are the keys
            self._add_keys(cols[idx[0]][phase::STRIDE])
        else:
            self._add(idx, zip(*(col[phase::STRIDE] for col in cols), strict=True))

    def _phase(self, n: int) -> int:
        """The index of the first tuple to sample in a frame of ``n``; the stride goes on."""
        phase = self.phase
        self.phase = (phase - n) % STRIDE
        return phase

    def _add(self, idx: list[int], picked: Iterable[Sequence[Any]]) -> None:
        if len(idx) == 1:
            self._add_keys([values[idx[0]] for values in picked])
        else:
            self._add_keys([tuple(values[i] for i in idx) for values in picked])

    def _add_keys(self, keys: list[Any]) -> None:
        """The sampled keys into the top-k; an unhashable one (a list, a map) by its
        rendering."""
        top = self.top
        while keys:
            before = top.total
            try:
                top.add_all(keys)
                return
            except TypeError:
                bad = top.total - before  # the keys before it went in
                top.add(str(keys[bad]))
                keys = keys[bad + 1 :]

    def report(self) -> dict[str, float]:
        return self.top.shares() if self.keyed else {}


def keyed_inputs(topology: Topology, component: str) -> dict[tuple[str, str], list[int]]:
    """The key fields' positions of each fields-grouped input of ``component``."""
    out: dict[tuple[str, str], list[int]] = {}
    for inp in topology.component(component).inputs:
        if inp.grouping.kind != "fields":
            continue
        stream = topology.component(inp.component).stream(inp.stream)
        if stream is not None and all(f in stream.fields for f in inp.grouping.fields):
            out[inp.component, inp.stream] = [stream.fields.index(f) for f in inp.grouping.fields]
    return out
