"""Models a component runs: the anomaly model's artifact and the version its package ships.

>>> from headwater.models import live_model
>>> live_model({})  # a component whose package ships no model for it
(None, '')

``live_model(ctx.config)`` at a component's ``open`` gives the model its package ships
for it on this node (``headwater models rollout``; the default or a canary version by the
agent's labels), checked and loaded, and its version; it raises when that model does not
load, so a rollout shipping it rolls back. ``AnomalyModel.flag(sensor, prev, value)``
scores a reading. A training job builds the artifact's document (``FORMAT``, ``KIND``,
at most ``MAX_SENSORS`` sensors, a name matching ``NAME``), checks it (``check_doc``) and
writes it (``dump_model``): the IoT example's ``examples/iot/anomaly_train.py``, which
``headwater spark train`` runs.

A model of the user's own travels as ONNX: ``to_onnx(model)`` exports a fitted
scikit-learn estimator or Spark MLlib model (or ``PipelineModel``) to ONNX bytes with
one float input ``INPUT`` ("input") shaped ``[None, n]`` (``pip install
'headwater[train]'``); ``register(data, name, meta=training_meta(...), master=URL,
token=TOKEN)`` registers it with the master's registry (``Registry``; in a Spark job,
``ctx.register``) and returns the version's record. See docs/design.md, "Training as jobs".
"""

from headwater._registry_client import MAX_META_BYTES, Registry, register, training_meta
from headwater.common.models import (
    FORMAT,
    INPUT,
    KIND,
    MAX_SENSORS,
    NAME,
    AnomalyModel,
    ExportError,
    ModelError,
    check_doc,
    dump_model,
    load_model,
    to_onnx,
)
from headwater.common.runtime._models import live_model

__all__ = [
    "FORMAT",
    "INPUT",
    "KIND",
    "MAX_META_BYTES",
    "MAX_SENSORS",
    "NAME",
    "AnomalyModel",
    "ExportError",
    "ModelError",
    "Registry",
    "check_doc",
    "dump_model",
    "live_model",
    "load_model",
    "register",
    "to_onnx",
    "training_meta",
]
