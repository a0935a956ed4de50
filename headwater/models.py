"""Models a component runs: the anomaly model's artifact and the version its package ships.

>>> from headwater.models import live_model
>>> live_model({})  # a component whose package ships no model for it
(None, '')

``live_model(ctx.config)`` at a component's ``open`` gives the model its package ships
for it on this node (``headwater models rollout``; the default or a canary version by the
agent's labels), checked and loaded, and its version; it raises when that model does not
load, so a rollout shipping it rolls back. ``AnomalyModel.flag(sensor, prev, value)``
scores a reading; ``headwater spark train`` writes the artifact (``dump_model``).
"""

from headwater.common.models import AnomalyModel, ModelError, dump_model, load_model
from headwater.common.runtime._models import live_model

__all__ = ["AnomalyModel", "ModelError", "dump_model", "live_model", "load_model"]
