"""Logical plan validation and physical planning."""

from ._physical import (
    InstancePlacement,
    PhysicalPlan,
    pack_round_robin,
    task_ids,
    upstream_spouts,
)
from ._validate import validate

__all__ = [
    "InstancePlacement",
    "PhysicalPlan",
    "pack_round_robin",
    "task_ids",
    "upstream_spouts",
    "validate",
]
