"""Logical plan validation and physical planning."""

from ._domains import (
    add_domain_arguments,
    boundary,
    cloud_part,
    domain_args,
    edge_part,
    for_domain,
    has_edge,
)
from ._loader import load_topology
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
    "add_domain_arguments",
    "boundary",
    "cloud_part",
    "domain_args",
    "edge_part",
    "for_domain",
    "has_edge",
    "load_topology",
    "pack_round_robin",
    "plan_from_json",
    "plan_to_json",
    "restrict",
    "revise_plan",
    "task_ids",
    "upstream_spouts",
    "validate",
]
