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

ONNX models are scored by a scoring step: the DSL's ``Streamlet.score``, or, in a
topology of components, ``ScoreBolt(model, inputs)`` (its component's config:
``ScoreBolt.config(model, inputs)``). A bolt of your own calls
``live_scorer(ctx, ScoreSpec(model, inputs))`` at open: the model its package ships
for it here, checked against the declaration (``load_scorer``; onnxruntime is
``pip install 'headwater[onnx]'``), with ``run(rows)`` (one model run for a frame's
rows) and ``version`` ("" and ``loaded`` false while no model is rolled out):

>>> from headwater.models import ScoreSpec, live_scorer
>>> scorer = live_scorer({}, ScoreSpec("vibration", ("rms", "peak")))
>>> scorer.loaded, scorer.version
(False, '')

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
    SCORE_CONFIG,
    AnomalyModel,
    ExportError,
    ModelError,
    ScoreSpec,
    check_doc,
    dump_model,
    load_model,
    to_onnx,
)
from headwater.common.models._scorer import Scorer, load_scorer
from headwater.common.runtime._models import live_model
from headwater.common.runtime._scoring import LiveScorer, ScoreBolt, live_scorer

__all__ = [
    "FORMAT",
    "INPUT",
    "KIND",
    "MAX_META_BYTES",
    "MAX_SENSORS",
    "NAME",
    "SCORE_CONFIG",
    "AnomalyModel",
    "ExportError",
    "LiveScorer",
    "ModelError",
    "Registry",
    "ScoreBolt",
    "ScoreSpec",
    "Scorer",
    "check_doc",
    "dump_model",
    "live_model",
    "live_scorer",
    "load_model",
    "load_scorer",
    "register",
    "to_onnx",
    "training_meta",
]
