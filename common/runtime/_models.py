"""The model a component runs on this node, from its own package: ``live_model``.

At open a component (the IoT example's anomaly step) reads its entry of the
package's ``headwater_models.json`` (its config carries it, see
``headwater.common.plan._package_models``), picks
the default or the canary version by the agent's labels, reads
``models/<sha256>.json`` beside the topology file, checks its SHA-256 and
loads it. Anything wrong raises: the step does not open, so a replace that
ships a model this edge cannot load fails and rolls back rather than falling
back silently to the hand-set detector.

The instance process says where its topology file is, the agent's labels and its id
(``HEADWATER_TOPOLOGY_FILE``, ``HEADWATER_LABELS``, ``HEADWATER_AGENT_ID``;
``common/runtime/instance.py``); a task
on a thread (the small footprints) has its own (``TASK_PACKAGE``), read first.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._exceptions import HeadwaterError
from ..models import ONNX_KIND, AnomalyModel, load_model
from ..plan._package_models import MODEL_CONFIG, model_bytes, pick


def live_model(config: Mapping[str, Any]) -> tuple[AnomalyModel | None, str]:
    """The model this instance runs and its version as text; ``(None, "")`` for none.

    Raises HeadwaterError when the package names a model that cannot be read or loaded."""
    from .instance import TOPOLOGY_FILE_ENV  # the instance process's entry point: lazily

    entry = config.get(MODEL_CONFIG)
    if not entry:
        return None, ""
    doc = json.loads(entry)
    chosen = pick(doc, _labels(), agent_id())
    if chosen is None:
        return None, ""
    kind = chosen.get("kind") or doc.get("kind")
    if kind == ONNX_KIND:
        raise HeadwaterError(
            f"model {chosen['name']!r} is of kind {kind!r}; this step loads the JSON "
            "anomaly model (an ONNX model is scored by a scoring step: Streamlet.score)"
        )
    file = _topology_file()
    if not file:
        raise HeadwaterError(
            "this component runs a model but its process does not know its package "
            f"({TOPOLOGY_FILE_ENV} is not set)"
        )
    data = model_bytes(Path(file).parent, chosen["sha256"])
    return load_model(data), str(chosen["version"])


def _topology_file() -> str | None:
    """The topology file of the task running on this thread (its package's), if known."""
    from .instance import TASK_PACKAGE, TOPOLOGY_FILE_ENV

    return getattr(TASK_PACKAGE, "file", None) or os.environ.get(TOPOLOGY_FILE_ENV)


def agent_id() -> str:
    """The id of the agent running this task ("" outside an edge container), by which a
    rollout's wave picks a version (``AGENT_ID_ENV``; a task on a thread has its own)."""
    from .instance import AGENT_ID_ENV, TASK_PACKAGE

    return getattr(TASK_PACKAGE, "agent", None) or os.environ.get(AGENT_ID_ENV) or ""


def _labels() -> dict[str, str]:
    """The agent's labels (``LABELS_ENV``, JSON); HeadwaterError when they are not an
    object of label: text (the process was started wrongly: no model is better than one
    picked by labels misread)."""
    from .instance import LABELS_ENV, TASK_PACKAGE

    text = getattr(TASK_PACKAGE, "labels", None) or os.environ.get(LABELS_ENV) or "{}"
    try:
        labels = json.loads(text)
    except (ValueError, RecursionError):
        labels = None
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        raise HeadwaterError(
            f"{LABELS_ENV} must be a JSON object of label: text, not {text[:80]!r}"
        )
    return labels
