"""The topology master (run as ``python -m headwater.cloud.tmaster``)."""

from ._master import TopologyMaster

__all__ = ["TopologyMaster"]
