"""The checks a rollout request passes before any edit: its values, and the model's fit.

``check_values``: the watch, bounds and waves are in range. ``check_fit``: the
model fits the component it is rolled out to, judged from the component's
config in the running revision (the master's described topology):

- a component with a scoring step's declaration (``SCORE_CONFIG``, a
  ``ScoreSpec``) takes an ONNX model of the name it declares whose inputs and
  outputs fit it (``mismatch``, naming them and their types): a JSON model,
  another model's name, or an ONNX model that does not fit is refused (409);
- a component without one takes a JSON model (the IoT example's anomaly step):
  an ONNX model is refused (409), there is nothing there to score with it.

``output_range``: the range ``[lo, hi]`` a version's metadata says its output
stays in (``{"output_range": [lo, hi]}``), which the entry passes to the
scoring step (it counts scores outside as ``out_of_range``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from headwater.common.models import ONNX_KIND
from headwater.common.models._rollout_waves import waves_problem
from headwater.common.models._score_spec import SCORE_CONFIG, ScoreSpec, mismatch

from ._rollout_record import RolloutError

MAX_WATCH_S = 86_400.0


def check_values(
    watch_s: float, max_anomaly_rate: float, max_errors: int, waves: Sequence[float]
) -> None:
    """RolloutError (400) for a value out of its range."""
    if not 0 <= watch_s <= MAX_WATCH_S:
        raise RolloutError(f"watch must be from 0 to {MAX_WATCH_S:.0f} seconds")
    if not 0.0 <= max_anomaly_rate <= 1.0:
        raise RolloutError("max_anomaly_rate must be from 0 to 1")
    if max_errors < 0:
        raise RolloutError("max_errors must be 0 or more")
    problem = waves_problem(list(waves))
    if problem is not None:
        raise RolloutError(problem)


def check_fit(
    model: str,
    version: int,
    meta: Mapping[str, Any],
    component: str,
    config: Mapping[str, Any] | None,
) -> bool:
    """RolloutError (409) when version ``version`` of ``model`` (its registry ``meta``) does
    not fit ``component`` (its ``config``; None: not known here); whether the component is a
    scoring step."""
    kind = meta.get("kind")
    what = f"{model} v{version}"
    if config is None:
        if kind == ONNX_KIND:
            raise RolloutError(
                f"the master does not know {component!r}'s configuration, so it cannot check "
                f"that {what} fits its scoring step; resubmit the topology",
                409,
            )
        return False
    declared = config.get(SCORE_CONFIG)
    if not declared:
        if kind == ONNX_KIND:
            raise RolloutError(
                f"{what} is an ONNX model but component {component!r} has no scoring step "
                "(.score(...)) to score it with; roll it out to a scoring step",
                409,
            )
        return False
    try:
        spec = ScoreSpec.parse(str(declared))
    except ValueError as exc:
        raise RolloutError(f"component {component!r}: {exc}", 409) from None
    problem = mismatch(spec, {**meta, "name": model})
    if problem is not None:
        raise RolloutError(
            f"{what} does not fit the scoring step {component!r}: {problem}; nothing was changed",
            409,
        )
    if spec.model != model:
        raise RolloutError(
            f"component {component!r} scores with model {spec.model!r}, not {model!r}", 409
        )
    return True


def output_range(meta: Mapping[str, Any]) -> list[float] | None:
    """The ``[lo, hi]`` the version's user metadata expects its output in, or None;
    RolloutError (409) when the metadata has one that is not two ordered numbers."""
    user = meta.get("metadata")
    if not isinstance(user, dict) or "output_range" not in user:
        return None
    bounds = user["output_range"]
    if (
        isinstance(bounds, list)
        and len(bounds) == 2
        and all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
        and bounds[0] <= bounds[1]
    ):
        return [float(bounds[0]), float(bounds[1])]
    raise RolloutError(
        f"the version's metadata has output_range {str(bounds)[:80]}; it must be [low, high], "
        "two numbers, low <= high",
        409,
    )
