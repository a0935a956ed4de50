"""Logical plan validation and physical planning."""

from ._domains import boundary, cloud_part, edge_part, for_domain, has_edge
from ._physical import (
    InstancePlacement,
    PhysicalPlan,
    pack_round_robin,
    plan_from_json,
    plan_to_json,
    restrict,
    revise_plan,
    task_ids,
    upstream_spouts,
)
from ._validate import validate

__all__ = [
    "InstancePlacement",
    "PhysicalPlan",
    "boundary",
    "cloud_part",
    "edge_part",
    "for_domain",
    "has_edge",
    "pack_round_robin",
    "plan_from_json",
    "plan_to_json",
    "restrict",
    "revise_plan",
    "task_ids",
    "upstream_spouts",
    "validate",
]
