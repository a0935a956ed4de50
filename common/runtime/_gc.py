"""The cyclic garbage collector in an instance process, tuned for streams of records.

CPython collects its youngest generation after 700 more container objects
(lists, dicts, tuples) were made than freed, and the older ones after enough of
those collections. A decoded frame's records live until the whole frame is
processed, so at the default every frame's records outlive young collections,
get promoted, and keep triggering full collections, each of which walks every
object of the process: the interpreter's, the imported libraries' and the
topology's, tens of thousands of them. In the word-count bench that was about
a third of the counting instance's CPU.

So an instance process, once its topology is loaded, moves what it holds into
the permanent generation (``gc.freeze``: never walked again, still freed by
reference counting) and collects its youngest generation after ``YOUNG``
container objects instead of 700: ten frames' records at the default batch
size (word count ran the same at 5,000 and 50,000, and a young collection's
pause grows with the threshold). Cyclic garbage is still collected, a little
later; what loading left is collected before the freeze, which would
otherwise keep it for the life of the process.
"""

from __future__ import annotations

import gc

YOUNG = 10_000


def tune_for_records() -> None:
    """Freeze what the process holds now and widen the youngest generation."""
    # collect first: cyclic garbage left by loading (imports, the topology file) would be
    # frozen with the rest, and a frozen object is never collected
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG, older, oldest)
