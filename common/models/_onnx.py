"""ONNX models, the kind that travels: checked in a child process before anyone keeps one.

An ONNX file is a graph for a runtime the caller did not write, from the
network: loading it in the master's own process would let one bad file take
the master down (a graph whose constant folding allocates gigabytes, a load
that never ends, a crash in native code). So ``inspect_onnx`` hands the bytes
to a child process (``_onnx_child.py``, started by ``common/_bounded_child.py``)
bounded by ``ONNX_LIMITS`` (time and address space; its process group is
killed after) and gets back the model's record::

    {"kind": "onnx/1", "sha256": HEX, "size": BYTES, "ir_version": N,
     "producer": "skl2onnx 1.17", "opsets": {"ai.onnx": 17, ...},
     "inputs": [{"name": "x", "type": "tensor(float)", "shape": ["batch", 3]}],
     "outputs": [...]}

or an ``OnnxModelError`` with the reason: over ``MAX_ONNX_BYTES``, not an
ONNX model, truncated, a graph that does not load in ``onnxruntime``, a load
over the time or memory limit. ``model_kind`` tells the two kinds apart by
content: a JSON anomaly document starts with ``{``, anything else is taken
for ONNX (and refused by the check if it is not).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from headwater.common._bounded_child import ChildLimits, run_bounded

from ._artifact import ModelError, sha256

ONNX_KIND = "onnx/1"
JSON_KIND = "json"
MAX_ONNX_BYTES = 64 << 20
"""The largest ONNX model the registry keeps (64 MiB; the JSON kind has its own bound)."""
ONNX_LIMITS = ChildLimits(time_s=30.0, memory_bytes=1 << 30)
"""What checking one model may take: 30 s and 1 GiB of address space."""
_CHILD = "headwater.common.models._onnx_child"
# one thread for numpy's BLAS too: its per-core threads would spend the address space bound
_ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
_WHITESPACE = b" \t\r\n"
_RECORD = ("ir_version", "producer", "opsets", "inputs", "outputs")  # what the child tells


class OnnxModelError(ModelError):
    """An ONNX model refused (``too_large``: over ``MAX_ONNX_BYTES``)."""

    def __init__(self, message: str, too_large: bool = False) -> None:
        super().__init__(message)
        self.too_large = too_large


def model_kind(data: bytes) -> str:
    """``JSON_KIND`` for a JSON document (its first non-blank byte is ``{``), else
    ``ONNX_KIND``."""
    head = bytes(data[:4096]).lstrip(_WHITESPACE)
    return JSON_KIND if head.startswith(b"{") else ONNX_KIND


async def inspect_onnx(data: bytes, limits: ChildLimits = ONNX_LIMITS) -> dict[str, Any]:
    """The record of the ONNX model ``data``, checked in a child process under ``limits``;
    OnnxModelError saying why it is refused. Runs on the event loop without blocking it."""
    if not data:
        raise OnnxModelError("the model is empty: send its bytes")
    if len(data) > MAX_ONNX_BYTES:
        raise OnnxModelError(
            f"the ONNX model is {len(data)} bytes; the limit is {MAX_ONNX_BYTES}", too_large=True
        )
    got = await run_bounded(_CHILD, [], bytes(data), limits, env=_ONE_THREAD)
    if got.timed_out:
        raise OnnxModelError(f"loading the model took longer than {limits.time_s:g} s, the limit")
    answer = got.answer if isinstance(got.answer, dict) else {}
    if isinstance(answer.get("error"), str):
        raise OnnxModelError(answer["error"])
    if isinstance(answer.get("model"), dict):
        model = {k: answer["model"].get(k) for k in _RECORD}
        return {"kind": ONNX_KIND, "sha256": sha256(data), "size": len(data), **model}
    if got.code is not None and got.code < 0:
        raise OnnxModelError(
            f"the process loading the model was killed by {got.signal_name()} (it may have "
            f"run out of memory: the limit is {limits.memory_mib()} MiB)"
        )
    raise OnnxModelError(
        f"the process loading the model ended (exit code {got.code}) without an answer"
    )


def check_onnx(data: bytes, limits: ChildLimits = ONNX_LIMITS) -> dict[str, Any]:
    """``inspect_onnx`` for a synchronous caller (the CLI, a training job): blocks the
    calling thread until the child is done."""
    import asyncio  # here: an instance importing the models never checks one

    with ThreadPoolExecutor(1, thread_name_prefix="headwater-onnx") as pool:
        return pool.submit(asyncio.run, inspect_onnx(data, limits)).result()
