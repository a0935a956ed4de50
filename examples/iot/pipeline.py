"""The IoT pipeline (see headwater/_demo/iot_pipeline.py, which `headwater demo` runs).

IOT_LOG=/path/to/ingest/log IOT_OUT=/path/to/out headwater run examples/iot/pipeline.py
"""

from headwater._demo.iot_pipeline import topology

__all__ = ["topology"]
