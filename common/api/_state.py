"""State that survives crashes: what a component keeps, checkpointed with every barrier.

An instance's state is two things, snapshotted together at each checkpoint:

* ``State``: a mapping of the instance's own values (heronpy's ``HashMapState``
  API: ``put``/``get``/``enumerate``/``clear`` work too);
* ``KeyedState`` objects (``ctx.keyed_state(name)``): one value per key of a
  fields-grouped input, so that a restore with other parallelism can hand each
  key to the task that now owns it.

These are part of the component contract (``init_state``, ``Context.keyed_state``);
how they are snapshotted and stored is the runtime's (``headwater.common.state``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any


class State(MutableMapping[Any, Any]):
    """The checkpointed state of one instance."""

    def __init__(self, data: dict[Any, Any] | None = None) -> None:
        self._data: dict[Any, Any] = dict(data or {})

    def __getitem__(self, key: Any) -> Any:
        return self._data[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._data[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"State({self._data!r})"

    # the mapping methods a record's path calls, straight to the dict (MutableMapping's
    # generic ones go through __getitem__ and an exception for a missing key)
    def get(self, key: Any, default: Any = None) -> Any:
        return self._data.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    # heronpy's State API
    def put(self, key: Any, value: Any) -> None:
        self._data[key] = value

    def enumerate(self) -> Any:
        """As heronpy's ``HashMapState.enumerate``: (index, key) pairs."""
        return enumerate(self._data)


# values that cannot change in place (any other may be changed through a reference)
IMMUTABLE = frozenset({int, float, str, bytes, bool, type(None), tuple, frozenset, complex})


class KeyedState(State):
    """Values scoped to the keys of a fields-grouped input (one ``KeyedState`` per name).

    It notes the keys written or deleted since the runtime last took them
    (``_dirty``), so that a checkpoint snapshots only what changed, and the keys
    whose value is mutable (a list, a Counter: ``_mutable``), which every
    snapshot carries, since their value may change in place.
    """

    tracked = True
    """Whether it notes changed and mutable keys (``UntrackedKeyedState`` does not)."""

    def __init__(self, data: dict[Any, Any] | None = None) -> None:
        super().__init__(data)
        self._dirty: set[Any] = set()
        self._mutable: set[Any] = {k for k, v in self._data.items() if v.__class__ not in IMMUTABLE}

    def __setitem__(self, key: Any, value: Any) -> None:
        self._data[key] = value
        self._dirty.add(key)
        if value.__class__ not in IMMUTABLE:
            self._mutable.add(key)
        elif self._mutable:
            self._mutable.discard(key)

    def put(self, key: Any, value: Any) -> None:
        self[key] = value

    def accessors(self) -> tuple[Callable[[Any, Any], Any], Callable[[Any, Any], None]]:
        """``(get, put)`` for a record's hot path, bound once: the dict's own ``get``, and a
        ``put`` that notes the key as ``__setitem__`` does, one call instead of two."""
        # the dirty set is emptied in place (``take_changed``), never replaced: ``mark`` stays true
        data, mutable, mark = self._data, self._mutable, self._dirty.add

        def put(key: Any, value: Any) -> None:
            data[key] = value
            mark(key)
            if value.__class__ not in IMMUTABLE:
                mutable.add(key)
            elif mutable:
                mutable.discard(key)

        return data.get, put

    def put_parts(self) -> tuple[dict[Any, Any], set[Any], set[Any]]:
        """``accessors``' ``put`` in parts, for a compiled loop that writes it inline (no
        call per record): the dict, the set of keys written since the last snapshot (added
        to, never replaced; a superset does no harm: a key in it that is not in the dict is
        a deletion), and the set of keys whose value is mutable (kept as ``put`` keeps it,
        with ``IMMUTABLE``)."""
        return self._data, self._dirty, self._mutable

    def take_changed(self) -> set[Any]:
        """The keys written or deleted since the last call (emptied in place: ``accessors``
        holds the set)."""
        changed = set(self._dirty)
        self._dirty.clear()
        return changed

    def __delitem__(self, key: Any) -> None:
        del self._data[key]
        self._dirty.add(key)
        self._mutable.discard(key)

    def clear(self) -> None:
        self._dirty.update(self._data)
        self._data.clear()
        self._mutable.clear()


class UntrackedKeyedState(KeyedState):
    """The ``KeyedState`` of a task that never takes a snapshot (a topology that is not
    exactly-once: no checkpoint barrier, no live edit, no move reaches it). It notes no
    changed or mutable keys, which only a snapshot reads, so a write is the dict's alone."""

    tracked = False

    def __setitem__(self, key: Any, value: Any) -> None:
        self._data[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._data[key]

    def clear(self) -> None:
        self._data.clear()

    def accessors(self) -> tuple[Callable[[Any, Any], Any], Callable[[Any, Any], None]]:
        return self._data.get, self._data.__setitem__


class StatefulComponent:
    """Mixin for components with state (heronpy's ``StatefulComponent``).

    ``init_state(state)`` is called before ``initialize``/``open`` with the
    restored state (empty on a clean start); ``pre_save(checkpoint_id)`` just
    before each snapshot, to copy fields into the state.
    """

    def init_state(self, stateful_state: State) -> None:
        pass

    def pre_save(self, checkpoint_id: Any) -> None:
        pass
