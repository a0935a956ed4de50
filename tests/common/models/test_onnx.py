"""``check_onnx``: an ONNX model checked in a child process, its record or the reason it is
refused (issue 33, acceptance 3). Real onnxruntime, real child processes; models built by
hand (``tests/_onnx_models.py``)."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys

import psutil
import pytest

from headwater.common._bounded_child import ChildLimits
from headwater.common.models import (
    JSON_KIND,
    MAX_ONNX_BYTES,
    ONNX_KIND,
    ModelError,
    OnnxModelError,
    check_onnx,
    model_kind,
)
from headwater.common.models._onnx_child import wire_summary
from tests import _onnx_models
from tests._artifacts import artifact


def _refused(data: bytes, limits: ChildLimits | None = None) -> OnnxModelError:
    with pytest.raises(OnnxModelError) as caught:
        check_onnx(data) if limits is None else check_onnx(data, limits)
    assert psutil.Process().children(recursive=True) == []  # the child is gone, and its group
    return caught.value


def test_a_good_model_gives_its_record_with_exact_inputs_and_outputs() -> None:
    data = _onnx_models.linear()
    assert check_onnx(data) == {
        "kind": ONNX_KIND,
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "ir_version": 8,
        "producer": "headwater-tests",
        "opsets": {"ai.onnx": 17},
        "inputs": [{"name": "features", "type": "tensor(float)", "shape": ["batch", 3]}],
        "outputs": [{"name": "score", "type": "tensor(float)", "shape": ["batch", 1]}],
    }


def test_a_model_of_tens_of_mib_reaches_the_child_whole() -> None:
    data = _onnx_models.large(40)
    record = check_onnx(data)
    assert (record["size"], record["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())
    assert record["inputs"] == [{"name": "x", "type": "tensor(float)", "shape": [1]}]
    assert record["outputs"] == [{"name": "y", "type": "tensor(float)", "shape": [1]}]


def test_bytes_that_are_not_onnx_are_refused_as_such() -> None:
    for data in (b"this is not a model" * 10, bytes(range(256)) * 4, b"\x00" * 64):
        assert str(_refused(data)) == "not an ONNX model: its bytes are not an ONNX protobuf"
    # a protobuf, but not a model: an IR version and no graph
    assert str(_refused(b"\x08\x08")) == "not an ONNX model: it has no graph"


def test_a_truncated_model_is_refused_as_truncated() -> None:
    data = _onnx_models.linear()
    cut = data[: len(data) // 2]
    reason = str(_refused(cut))
    graph = data.index(b":")  # the graph's tag (field 7, bytes), then a one-byte length
    assert reason.startswith("the ONNX model is truncated: field 7 claims "), reason
    assert reason.endswith(f"; {len(cut) - graph - 2} remain"), reason


def test_a_graph_that_raises_at_load_is_refused_with_onnxruntimes_reason() -> None:
    reason = str(_refused(_onnx_models.unknown_op()))
    assert reason.startswith("the graph does not load in onnxruntime: "), reason
    assert "No Op registered for NoSuchOp" in reason


def test_a_model_over_the_size_limit_is_refused_before_any_child() -> None:
    exc = _refused(b"\x08\x08" + b"\x00" * (MAX_ONNX_BYTES - 1))
    assert exc.too_large
    assert (
        str(exc) == f"the ONNX model is {MAX_ONNX_BYTES + 1} bytes; the limit is {MAX_ONNX_BYTES}"
    )
    assert str(_refused(b"")) == "the model is empty: send its bytes"


def test_a_load_that_eats_memory_is_refused_at_the_memory_bound() -> None:
    data = _onnx_models.memory_bomb()
    assert len(data) < 256
    assert str(_refused(data)) == "loading the model needs more than 1024 MiB, the limit"


def test_a_load_over_the_time_bound_is_killed_and_refused() -> None:
    # no graph is slow to load cheaply: a bound shorter than starting the child is
    exc = _refused(_onnx_models.linear(), ChildLimits(time_s=0.05, memory_bytes=1 << 30))
    assert str(exc) == "loading the model took longer than 0.05 s, the limit"


def test_the_wire_walk_refuses_any_mangled_bytes_with_a_model_error() -> None:
    """``wire_summary`` (in the child) meets bytes from the network: whatever they are, it
    gives a summary or a ModelError, nothing else (seeded: the same inputs each run)."""
    rng = random.Random(33)
    good = _onnx_models.linear()
    outcomes = {"summary": 0, "refused": 0}
    for i in range(3000):
        if i % 2:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 64)))
        else:
            mangled = bytearray(good)
            for _ in range(rng.randrange(1, 4)):
                mangled[rng.randrange(len(mangled))] = rng.getrandbits(8)
            data = bytes(mangled[: rng.randrange(1, len(mangled) + 1)])
        try:
            wire_summary(data)
        except ModelError:
            outcomes["refused"] += 1
        else:
            outcomes["summary"] += 1
    assert outcomes["refused"] > 1000 and outcomes["summary"] > 0, outcomes


def test_without_onnxruntime_the_check_says_what_to_install() -> None:
    blocked = (
        "import sys; sys.modules['onnxruntime'] = None; "  # import onnxruntime: ImportError
        "from headwater.common.models._onnx_child import main; main(['--memory', str(1 << 30)])"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked],
        input=_onnx_models.linear(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, json.loads(done.stdout)) == (
        0,
        {
            "error": "onnxruntime is not installed where the model is checked: "
            "pip install 'headwater[onnx]'"
        },
    )


def test_the_kind_is_told_by_content() -> None:
    assert model_kind(artifact()) == JSON_KIND
    assert model_kind(b"\n  " + artifact()) == JSON_KIND
    assert model_kind(_onnx_models.linear()) == ONNX_KIND
    assert model_kind(b"garbage") == ONNX_KIND  # refused by the check, with its reason
