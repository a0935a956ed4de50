"""heronpy's ``StatefulComponent``: ``init_state(state)`` and ``pre_save(checkpoint_id)``.

Under ``EFFECTIVELY_ONCE`` the state handed to ``init_state`` is restored from
the last complete checkpoint, and whatever ``pre_save`` puts into it is
snapshotted with the checkpoint.
"""

from __future__ import annotations

from headwater.common.api._state import StatefulComponent

__all__ = ["StatefulComponent"]
