"""The ONNX model a scoring component runs on this node: ``live_scorer`` and ``ScoreBolt``.

At open a scoring component (the DSL's ``score`` step, or a ``ScoreBolt`` in a
topology of plain components) reads its entry of the package's
``headwater_models.json`` (its config carries it under ``MODEL_CONFIG``), picks
the default or the canary version by the agent's labels and id as ``live_model`` does,
reads ``models/<sha256>.onnx``, checks its SHA-256, and loads it for its
declaration (``ScoreSpec``, in its config under ``SCORE_CONFIG``): a model whose
inputs or outputs do not fit the step raises, so the component does not open
and the replace that shipped the model rolls back on that agent. No entry, or
none for this agent: no model (``loaded`` false, version ""), and the records
pass unscored. The version changes only by a ``replace`` of the component at a
checkpoint barrier (a rollout), which opens it again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._exceptions import HeadwaterError
from ..api import Bolt, Context, Tuple
from ..dsl._score import Inputs, Output, ScoreOp, install_live_scorer, spec_of
from ..models._onnx import JSON_KIND, ONNX_KIND
from ..models._score_spec import SCORE_CONFIG, ScoreSpec
from ..plan._package_models import MODEL_CONFIG, model_bytes, pick
from ._models import _labels, _topology_file, agent_id


class LiveScorer:
    """The model a scoring component runs here: ``run(rows)`` scores a frame's rows;
    ``version`` ("" for none), ``model`` (its name), ``range`` (the entry's expected
    output range, or None) and ``loaded`` (False: no model rolled out for this node)."""

    def __init__(
        self,
        scorer: Any = None,
        model: str = "",
        version: str = "",
        expected: tuple[float, float] | None = None,
    ) -> None:
        self.scorer, self.model, self.version, self.range = scorer, model, version, expected

    @property
    def loaded(self) -> bool:
        return self.scorer is not None

    def run(self, rows: Sequence[Sequence[float]]) -> list[Any]:
        """The score of each row, in one model run; HeadwaterError when no model is loaded."""
        if self.scorer is None:
            raise HeadwaterError("no model is rolled out for this component on this node")
        return list(self.scorer.run(rows))


def live_scorer(ctx: Context | Mapping[str, Any], spec: ScoreSpec | None = None) -> LiveScorer:
    """The model this component scores with here (``ctx`` or its config), checked against
    ``spec`` (default: the config's ``SCORE_CONFIG``); an unloaded ``LiveScorer`` for none.

    Raises HeadwaterError when the package names a model that cannot be read, is not an
    ONNX model, or does not fit the step (with the names and types)."""
    from ..models._scorer import load_scorer  # onnxruntime and numpy: only when scoring

    config: Mapping[str, Any] = ctx if isinstance(ctx, Mapping) else ctx.config
    if spec is None:
        text = config.get(SCORE_CONFIG)
        if not text:
            raise HeadwaterError(f"a scorer needs its step's declaration ({SCORE_CONFIG})")
        spec = ScoreSpec.parse(text)
    text = config.get(MODEL_CONFIG)
    if not text:
        return LiveScorer()
    entry = json.loads(text)
    chosen = pick(entry, _labels(), agent_id())
    if chosen is None:
        return LiveScorer()
    # the pick's own kind and range (a rollout sets them), else the entry's
    fields = {**{k: entry[k] for k in ("kind", "range") if k in entry}, **chosen}
    kind = fields.get("kind") or JSON_KIND
    if kind != ONNX_KIND:
        raise HeadwaterError(
            f"model {chosen['name']!r} version {chosen['version']} is of kind {kind!r}; a "
            f"scoring step scores {ONNX_KIND} models"
        )
    if chosen["name"] != spec.model:
        raise HeadwaterError(
            f"the package gives this step model {chosen['name']!r}; the step scores with "
            f"{spec.model!r}"
        )
    file = _topology_file()
    if not file:
        raise HeadwaterError(
            "this component scores with a model but its process does not know its package"
        )
    data = model_bytes(Path(file).parent, chosen["sha256"])
    try:
        scorer = load_scorer(data, spec, chosen["name"])
    except HeadwaterError as exc:
        raise HeadwaterError(
            f"model {chosen['name']!r} version {chosen['version']}: {exc}"
        ) from None
    return LiveScorer(scorer, chosen["name"], str(chosen["version"]), _range(fields))


def _range(fields: Mapping[str, Any]) -> tuple[float, float] | None:
    got = fields.get("range")
    if got is None:
        return None
    if (
        not isinstance(got, list)
        or len(got) != 2
        or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in got)
        or not got[0] <= got[1]
    ):
        raise HeadwaterError(f"the model entry's range must be [lo, hi] with lo <= hi, not {got}")
    return float(got[0]), float(got[1])


install_live_scorer(live_scorer)


class ScoreBolt(Bolt):
    """A bolt scoring each tuple with the model of a name, for topologies of components.

    Each tuple's values (a list) is the record: ``inputs`` are indexes into it (or a
    function of it giving ``width`` numbers), and the bolt emits the values with the
    score and the model version appended (declare two more output fields), or what
    ``output(values, score, version)`` gives. A frame of tuples is one model run; the
    counters and dead letters are the DSL ``score`` step's. Its component's config
    needs the declaration: ``config=ScoreBolt.config(model, inputs)`` in ``add_bolt``.
    """

    def __init__(
        self,
        model: str,
        inputs: Inputs,
        *,
        output: Output | None = None,
        take: str | None = None,
        width: int | None = None,
    ) -> None:
        spec = spec_of(model, inputs, output or "score", take, width)
        self._op = ScoreOp(model, spec, inputs, output or "score", "model_version")

    @staticmethod
    def config(
        model: str, inputs: Inputs, take: str | None = None, width: int | None = None
    ) -> dict[str, str]:
        """The component config a ScoreBolt needs: its declaration under ``SCORE_CONFIG``."""
        return {SCORE_CONFIG: spec_of(model, inputs, "score", take, width).doc()}

    def open(self, ctx: Context) -> None:
        declared = ctx.config.get(SCORE_CONFIG)
        if declared != self._op.spec.doc():
            raise HeadwaterError(
                f"component {ctx.component!r}: a ScoreBolt's component needs its declaration "
                "in its config (add_bolt(..., config=ScoreBolt.config(model, inputs))), "
                f"the same as the bolt's; it has {declared!r}"
            )
        self.ctx = ctx
        self._op.name = ctx.component
        self._op.open(ctx)
        self._emit = ctx.emitter()

    @property
    def version(self) -> str:
        """The version of the model scoring here ("" for none)."""
        return str(self._op.live.version)

    def _out(self, key: Any, value: Any) -> None:
        self._emit(list(value))

    def process(self, tup: Tuple) -> None:
        """An anchored tuple: its output is anchored to it."""
        emit = self.ctx.emit

        def out(key: Any, value: Any) -> None:
            emit(list(value), anchors=[tup])

        self._op.process_frame(out, [[None, list(tup.values)]])

    def process_values(
        self, component: str, stream: str, task: int, entries: list[list[Any]]
    ) -> None:
        """A frame's untracked tuples at once: one model run for all."""
        self._op.process_frame(self._out, [[None, list(values)] for values in entries])
