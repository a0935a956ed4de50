"""Portable model artifacts: a JSON document of parameters, loaded and scored without Spark.

``headwater spark train`` writes one (``dump_model``); the master's registry
stores it by version; the edge's anomaly component loads it (``load_model``)
and calls ``flag`` per reading. See docs/design.md, "The anomaly model and its
artifact".
"""

from ._anomaly import AnomalyModel, load_model
from ._artifact import (
    FORMAT,
    KIND,
    MAX_BYTES,
    MAX_SENSORS,
    NAME,
    ModelError,
    check_doc,
    dump_model,
    sha256,
)

__all__ = [
    "FORMAT",
    "KIND",
    "MAX_BYTES",
    "MAX_SENSORS",
    "NAME",
    "AnomalyModel",
    "ModelError",
    "check_doc",
    "dump_model",
    "load_model",
    "sha256",
]
