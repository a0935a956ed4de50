"""Portable model artifacts: a JSON document of parameters, loaded and scored without Spark.

``headwater spark train`` writes one (``dump_model``); the master's registry
stores it by version; the edge's anomaly component loads it (``load_model``)
and calls ``flag`` per reading. See docs/design.md, "The anomaly model and its
artifact". ONNX models are the second kind: ``check_onnx`` checks one in a
child process and gives its record (docs/design.md, "Model kinds and the
registry record"). ``to_onnx`` exports a fitted scikit-learn or Spark MLlib model
to ONNX bytes (``_export.py``; the converters are the ``train`` extra).
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
from ._export import INPUT, ExportError, to_onnx
from ._onnx import (
    JSON_KIND,
    MAX_ONNX_BYTES,
    ONNX_KIND,
    ONNX_LIMITS,
    OnnxModelError,
    check_onnx,
    inspect_onnx,
    model_kind,
)
from ._score_spec import SCORE_CONFIG, ScoreSpec, mismatch

__all__ = [
    "FORMAT",
    "INPUT",
    "JSON_KIND",
    "KIND",
    "MAX_BYTES",
    "MAX_ONNX_BYTES",
    "MAX_SENSORS",
    "NAME",
    "ONNX_KIND",
    "ONNX_LIMITS",
    "SCORE_CONFIG",
    "AnomalyModel",
    "ExportError",
    "ModelError",
    "OnnxModelError",
    "ScoreSpec",
    "check_doc",
    "check_onnx",
    "dump_model",
    "inspect_onnx",
    "load_model",
    "mismatch",
    "model_kind",
    "sha256",
    "to_onnx",
]
