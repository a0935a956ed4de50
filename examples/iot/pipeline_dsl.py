"""The IoT pipeline written in the DSL (see headwater/_demo/iot_dsl.py).

IOT_LOG=/path/to/ingest/log IOT_OUT=/path/to/out headwater run examples/iot/pipeline_dsl.py

IOT_LOG: the durable log of readings (an agent's --ingest-log; required unless the
topology runs on agents); IOT_OUT: the output folder (default: ./iot-out).
"""

from headwater._demo.iot_dsl import topology

__all__ = ["topology"]
