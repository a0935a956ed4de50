"""What a scoring step asks of a model, and whether an ONNX model's record gives it.

A scoring step (the DSL's ``Streamlet.score``, or ``ScoreBolt``) declares which
model it scores with, by name, and how: the record fields that make one row of
the model's input (``inputs``: names of a dict record's keys, indexes of a list
record's items, or just a count when a function builds the row), the model
output it takes (``take``: an output's name, None for the first) and the field
it writes (``output``). The step's component carries the declaration in its
config under ``SCORE_CONFIG`` (canonical JSON, ``ScoreSpec.doc``), so the master
can check a model against it at rollout, before any agent switches
(``mismatch``), and the edge checks it again when it loads the model.

A model fits a step when it has one input, a tensor of floats (``float`` or
``double``) shaped ``[batch, n]`` with ``n`` the step's input count (or a
symbolic size) and a batch size that is not fixed, and the output taken is a
numeric tensor shaped ``[batch]`` or ``[batch, k]``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

SCORE_CONFIG = "headwater.score"
"""The component config key holding its scoring step's declaration (canonical JSON)."""
FLOAT_TYPES = {"tensor(float)": "float32", "tensor(double)": "float64"}
"""The ONNX input element types a step can feed, and the numpy dtype of each."""
NUMERIC_OUTPUTS = (
    "tensor(float)",
    "tensor(double)",
    "tensor(int64)",
    "tensor(int32)",
    "tensor(bool)",
)


@dataclass(frozen=True)
class ScoreSpec:
    """A scoring step's declaration: ``model`` by name, ``inputs`` (field names or indexes,
    or their count), the ``take``n output (None: the first) and the ``output`` field."""

    model: str
    inputs: tuple[str | int, ...] | int
    output: str = "score"
    take: str | None = None

    def __post_init__(self) -> None:
        inputs: Any = self.inputs
        if isinstance(inputs, list):  # as a tuple: one declaration, one doc
            object.__setattr__(self, "inputs", inputs := tuple(inputs))
        kinds = {type(f) for f in inputs} if isinstance(inputs, tuple) else set()
        if not (
            (type(inputs) is int and inputs >= 1)
            or (isinstance(inputs, tuple) and inputs and kinds <= {str, int})
        ):
            raise ValueError(
                f"a scoring step's inputs are a dict record's keys or a list record's indexes "
                f"(e.g. ('rms', 'peak')), or their count, not {str(inputs)[:80]!r}"
            )
        if not isinstance(self.model, str) or not self.model:
            raise ValueError(f"a scoring step's model is a name, not {self.model!r}")

    @property
    def width(self) -> int:
        """How many values make one input row."""
        return self.inputs if isinstance(self.inputs, int) else len(self.inputs)

    def doc(self) -> str:
        """The declaration as canonical JSON (the component config's value)."""
        inputs = self.inputs if isinstance(self.inputs, int) else list(self.inputs)
        body = {"model": self.model, "inputs": inputs, "output": self.output, "take": self.take}
        return json.dumps(body, sort_keys=True, separators=(",", ":"))

    @classmethod
    def parse(cls, text: str) -> ScoreSpec:
        """The declaration ``doc`` wrote; ValueError when ``text`` is not one."""
        try:
            body = json.loads(text)
            inputs = body["inputs"]
            spec = cls(
                str(body["model"]),
                inputs if isinstance(inputs, int) else tuple(inputs),
                str(body["output"]),
                body.get("take"),
            )
        except (ValueError, KeyError, TypeError, RecursionError) as exc:
            raise ValueError(f"not a scoring step's declaration: {exc}") from None
        return spec


def mismatch(spec: ScoreSpec, record: dict[str, Any]) -> str | None:
    """Why the model ``record`` (the registry's, ``inspect_onnx``'s) does not fit ``spec``,
    naming the inputs and outputs and their types; None when it fits."""
    from ._onnx import ONNX_KIND  # a sibling; imported here to keep this module light

    name = record.get("name") or spec.model
    if record.get("kind") != ONNX_KIND:
        return (
            f"model {name!r} is of kind {record.get('kind')!r}; a scoring step scores "
            f"{ONNX_KIND} models"
        )
    inputs = record.get("inputs") or []
    if len(inputs) != 1:
        shown = ", ".join(_port(p) for p in inputs) or "none"
        return f"model {name!r} takes {len(inputs)} inputs ({shown}); a scoring step feeds one"
    port = inputs[0]
    if port.get("type") not in FLOAT_TYPES:
        return (
            f"model {name!r} input {_port(port)} is not a float tensor; a scoring step "
            "feeds tensor(float) or tensor(double)"
        )
    shape = port.get("shape")
    if not isinstance(shape, list) or len(shape) != 2:
        return f"model {name!r} input {_port(port)} is not shaped [batch, n]"
    batch, width = shape
    if isinstance(batch, int):
        return (
            f"model {name!r} input {_port(port)} takes a fixed batch of {batch}; export it "
            "with a dynamic batch dimension (None)"
        )
    if isinstance(width, int) and width != spec.width:
        return (
            f"model {name!r} input {_port(port)} takes {width} values per row; the step "
            f"gives {spec.width} ({_inputs(spec)})"
        )
    outputs = record.get("outputs") or []
    names = [p.get("name") for p in outputs]
    chosen = spec.take if spec.take is not None else (names[0] if names else None)
    if chosen not in names:
        return f"model {name!r} has no output {chosen!r}; its outputs: " + (
            ", ".join(_port(p) for p in outputs) or "none"
        )
    out = outputs[names.index(chosen)]
    if out.get("type") not in NUMERIC_OUTPUTS:
        return (
            f"model {name!r} output {_port(out)} is not a numeric tensor (a classifier "
            "exported with a ZipMap? export it with zipmap=False, or take another output)"
        )
    oshape = out.get("shape")
    if isinstance(oshape, list) and len(oshape) not in (1, 2):
        return f"model {name!r} output {_port(out)} is not shaped [batch] or [batch, k]"
    return None


def _port(p: dict[str, Any]) -> str:
    shape = p.get("shape")
    dims = (
        "" if shape is None else "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"
    )
    return f"{p.get('name')!r} {p.get('type')}{dims}"


def _inputs(spec: ScoreSpec) -> str:
    if isinstance(spec.inputs, int):
        return f"{spec.inputs} values from a function"
    return ", ".join(map(str, spec.inputs))
