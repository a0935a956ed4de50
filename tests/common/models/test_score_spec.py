"""A scoring step's declaration, and the check of a model's record against it."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.common.models import ScoreSpec, mismatch


def _record(inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": "onnx/1", "name": "m", "inputs": inputs, "outputs": outputs}


X = {"name": "x", "type": "tensor(float)", "shape": [None, 3]}
Y = {"name": "variable", "type": "tensor(float)", "shape": [None, 1]}


def test_the_declaration_round_trips() -> None:
    for spec in (ScoreSpec("m", ("a", "b", 2)), ScoreSpec("m", 4, "out", "label")):
        assert ScoreSpec.parse(spec.doc()) == spec
    with pytest.raises(ValueError, match="declaration"):
        ScoreSpec.parse('{"model": "m"}')


def test_a_model_that_fits() -> None:
    assert mismatch(ScoreSpec("m", ("a", "b", "c")), _record([X], [Y])) is None
    symbolic = {**X, "shape": ["batch", "n"]}
    assert mismatch(ScoreSpec("m", 7), _record([symbolic], [Y])) is None


@pytest.mark.parametrize(
    ("spec", "record", "says"),
    [
        (ScoreSpec("m", ("a", "b")), _record([X], [Y]), "takes 3 values per row; the step gives 2"),
        (ScoreSpec("m", 3), _record([X, X], [Y]), "takes 2 inputs"),
        (
            ScoreSpec("m", 3),
            _record([{**X, "type": "tensor(string)"}], [Y]),
            "is not a float tensor",
        ),
        (ScoreSpec("m", 3), _record([{**X, "shape": [1, 3]}], [Y]), "fixed batch of 1"),
        (ScoreSpec("m", 3, take="label"), _record([X], [Y]), "no output 'label'"),
        (
            ScoreSpec("m", 3),
            _record([X], [{"name": "p", "type": "seq(map(int64,tensor(float)))", "shape": None}]),
            "zipmap=False",
        ),
        (ScoreSpec("m", 3), {"kind": "gated-linear/1"}, "scores onnx/1 models"),
    ],
)
def test_a_model_that_does_not_fit_is_named(
    spec: ScoreSpec, record: dict[str, Any], says: str
) -> None:
    problem = mismatch(spec, record)
    assert problem is not None and says in problem


def test_a_declaration_made_by_hand_is_checked() -> None:
    """A heronpy bolt makes its ScoreSpec itself (no DSL step to check it): one field given
    as a bare string is not three inputs 'r', 'm', 's'."""
    assert ScoreSpec("v", ["a", "b"]) == ScoreSpec("v", ("a", "b"))  # type: ignore[arg-type]  # a list: a tuple
    for inputs in ("rms", (), ("a", 1.5), (True,), 0, True, None):
        with pytest.raises(ValueError, match="a scoring step's inputs are a dict record's keys"):
            ScoreSpec("v", inputs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a scoring step's model is a name, not ''"):
        ScoreSpec("", ("a",))
