"""The IoT pipeline written in the DSL (see headwater/_demo/iot_dsl.py).

IOT_LOG=/path/to/ingest/log IOT_OUT=/path/to/out headwater run examples/iot/pipeline_dsl.py
"""

from headwater._demo.iot_dsl import topology

__all__ = ["topology"]
