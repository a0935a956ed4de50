"""A standalone topology master (tmaster) process: ``python -m headwater.cloud.tmaster``.

The control plane of one topology's domain (``headwater.common.control``), with
its HTTP API (``_http``); not the master daemon (``headwater.cloud.master``).
"""

from headwater.common.control import TopologyMaster

__all__ = ["TopologyMaster"]
