"""An ONNX model loaded for scoring: ``Scorer``, one onnxruntime session, a frame at a time.

The edge's scoring steps (the DSL's ``Streamlet.score``, ``ScoreBolt``) score
with it. ``load_scorer(data, spec)`` makes the session from the model's bytes
(CPU provider only, one intra-op and one inter-op thread: gateways are small)
and checks the model against the step's declaration (``mismatch`` on the
session's own inputs and outputs, in the record shape ``inspect_onnx`` gives),
so a model that does not fit raises at load, naming the inputs and outputs and
their types, and never per record. ``Scorer.run(rows)`` scores a frame's rows
in one session run: an output shaped ``[batch]`` or ``[batch, 1]`` gives a
number per row, ``[batch, k]`` a list of k.

onnxruntime is the ``onnx`` extra (``pip install 'headwater[onnx]'``), imported
only when a model is loaded; without it the load raises a ``ModelError`` that
says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._artifact import ModelError, sha256
from ._onnx import ONNX_KIND
from ._score_spec import FLOAT_TYPES, ScoreSpec, mismatch

INSTALL = "pip install 'headwater[onnx]'"


def _runtime() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise ModelError(
            f"scoring an ONNX model needs onnxruntime, which is not installed here: {INSTALL}"
        ) from None
    return onnxruntime


def _ports(args: Sequence[Any]) -> list[dict[str, Any]]:
    return [
        {
            "name": a.name,
            "type": a.type,
            "shape": [d if isinstance(d, int | str) else None for d in (a.shape or [])],
        }
        for a in args
    ]


class Scorer:
    """One ONNX model's session: ``run(rows)`` scores rows of floats, ``record`` is the
    model's inputs and outputs as the registry records them."""

    def __init__(self, session: Any, record: dict[str, Any], spec: ScoreSpec) -> None:
        import numpy  # onnxruntime's own dependency: here whenever a session is

        self._np = numpy
        self.session = session
        self.record = record
        self.input = record["inputs"][0]["name"]
        self.dtype = FLOAT_TYPES[record["inputs"][0]["type"]]
        names = [p["name"] for p in record["outputs"]]
        self.output = spec.take if spec.take is not None else names[0]
        self.width = spec.width

    def run(self, rows: Sequence[Sequence[float]]) -> list[Any]:
        """The score of each row (one session run for all): a number per row for an output
        shaped ``[batch]`` or ``[batch, 1]``, a list of k for ``[batch, k]``; ModelError
        when a value is beyond the input's type (1e300 for ``tensor(float)``: inf)."""
        if not rows:
            return []
        np = self._np
        with np.errstate(over="ignore"):  # a finite double past float32's range: inf
            batch = np.asarray(rows, dtype=self.dtype).reshape(len(rows), self.width)
        if not np.isfinite(batch).all():
            raise ModelError(
                f"an input is beyond the range of the model's {self.dtype} input "
                f"(±{float(np.finfo(self.dtype).max):.3g})"
            )
        (out,) = self.session.run([self.output], {self.input: batch})
        out = self._np.asarray(out)
        if out.ndim == 0 or out.shape[0] != len(rows):
            raise ModelError(
                f"the model gave output {self.output!r} shaped {list(out.shape)} for "
                f"{len(rows)} rows; a scoring step takes [batch] or [batch, k]"
            )
        flat = out.reshape(len(rows), -1)
        if flat.shape[1] == 1:
            return list(flat[:, 0].tolist())
        return list(flat.tolist())


def load_scorer(data: bytes, spec: ScoreSpec, name: str | None = None) -> Scorer:
    """A scorer for the ONNX model ``data`` that fits ``spec``; ModelError saying why not
    (onnxruntime missing, the graph does not load, its inputs or outputs do not fit)."""
    ort = _runtime()
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only
    try:
        session = ort.InferenceSession(bytes(data), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # whatever onnxruntime raises: a reason
        raise ModelError(f"the model does not load in onnxruntime: {exc}") from None
    record = {
        "kind": ONNX_KIND,
        "name": name or spec.model,
        "sha256": sha256(data),
        "inputs": _ports(session.get_inputs()),
        "outputs": _ports(session.get_outputs()),
    }
    problem = mismatch(spec, record)
    if problem is not None:
        raise ModelError(problem)
    return Scorer(session, record, spec)
