"""The local-process scheduler backend (``headwater run``)."""

from ._cluster import LocalCluster, state_dir

__all__ = ["LocalCluster", "state_dir"]
