"""heronpy's ``ICustomGrouping``: a structural match for ``headwater.CustomGrouping``."""

from __future__ import annotations


class ICustomGrouping:
    def prepare(
        self, context: object, component: str, stream: str, target_tasks: list[int]
    ) -> None:
        """Called once in each emitting task with the consumer's sorted task ids."""

    def choose_tasks(self, values: list[object]) -> list[int]:
        raise NotImplementedError("custom grouping must implement choose_tasks(values)")
