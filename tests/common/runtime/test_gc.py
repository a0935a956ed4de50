"""An instance process's garbage collector: frozen once loaded, a wide young generation."""

from __future__ import annotations

import gc
import weakref

from headwater.common.runtime._gc import YOUNG, tune_for_records


def test_what_is_loaded_is_frozen_and_young_collections_come_later() -> None:
    before = gc.get_threshold()
    try:
        tune_for_records()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG, before[1], before[2])
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


class _Loaded:
    cycle: object


def test_garbage_left_by_loading_is_not_frozen() -> None:
    """A cycle that loading left unreachable is collected, not kept for good by the freeze."""
    before = gc.get_threshold()
    left = _Loaded()
    left.cycle = left
    gone = weakref.ref(left)
    del left
    try:
        tune_for_records()
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
