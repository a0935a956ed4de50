"""The topology master (run as ``python -m headwater.cloud.tmaster``)."""

from headwater.common.control import TopologyMaster

__all__ = ["TopologyMaster"]
