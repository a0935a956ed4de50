"""The child process that checks an ONNX model (``_onnx.inspect_onnx`` starts it).

Reads the model's bytes on standard input under the limits ``child_start``
sets, and answers one JSON document: ``{"model": RECORD}`` or ``{"error":
REASON}``. First a walk of the protobuf's top-level fields (``wire_summary``:
is it an ONNX ``ModelProto`` at all, is it cut short; its IR version, producer
and opsets, without the ``onnx`` package), then a real load in
``onnxruntime`` (CPU, one thread), whose session gives the graph's inputs and
outputs with their element types and shapes.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import Any

from headwater.common._bounded_child import child_answer, child_start

from ._artifact import ModelError

_MODULE = "headwater.common.models._onnx_child"
_ERROR_CHARS = 600
# ModelProto's fields (onnx.proto) and the wire type each must have: 0 varint, 2 bytes
_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}
_NOT_ONNX = "not an ONNX model"


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """The varint at ``at`` and the offset after it; IndexError past the end."""
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift >= 70:
            raise ValueError("a varint longer than 10 bytes")


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field, wire type, value) of each top-level field; value: an int or the bytes.
    IndexError when the data ends inside a field, ValueError for what protobuf is not."""
    out: list[tuple[int, int, Any]] = []
    at = 0
    while at < len(data):
        tag, at = _varint(data, at)
        field, wire = tag >> 3, tag & 7
        if field == 0 or wire not in (0, 1, 2, 5):
            raise ValueError(f"byte {at}: field {field} of wire type {wire}")
        value: Any
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise IndexError(f"field {field} claims {size} bytes; {len(data) - at} remain")
            value, at = data[at : at + size], at + size
        else:
            width = 8 if wire == 1 else 4
            if at + width > len(data):
                raise IndexError(f"field {field} claims {width} bytes; {len(data) - at} remain")
            value, at = int.from_bytes(data[at : at + width], "little"), at + width
        out.append((field, wire, value))
    return out


def wire_summary(data: bytes) -> dict[str, Any]:
    """IR version, producer and opsets of an ONNX model's bytes; ModelError saying why the
    bytes are not an ONNX model, or are one cut short."""
    try:
        fields = _fields(data)
    except IndexError as exc:
        if _starts_like_a_model(data):
            raise ModelError(f"the ONNX model is truncated: {exc}") from None
        raise ModelError(f"{_NOT_ONNX}: its bytes are not an ONNX protobuf") from None
    except ValueError:
        raise ModelError(f"{_NOT_ONNX}: its bytes are not an ONNX protobuf") from None
    for field, wire, _ in fields:
        if field in _FIELDS and _FIELDS[field] != wire:
            raise ModelError(f"{_NOT_ONNX}: field {field} has the wrong wire type")
    present = {f for f, _, _ in fields}
    if 1 not in present or 7 not in present:
        raise ModelError(f"{_NOT_ONNX}: it has no {'graph' if 1 in present else 'IR version'}")
    text = {f: v.decode("utf-8", "replace")[:200] for f, w, v in fields if f in (2, 3)}
    opsets: dict[str, int] = {}
    for field, _, value in fields:
        if field == 8:
            try:
                parts = {f: v for f, _, v in _fields(value)}
            except (IndexError, ValueError):
                raise ModelError(f"{_NOT_ONNX}: an opset_import is not a protobuf") from None
            domain = parts.get(1, b"")
            name = domain.decode("utf-8", "replace")[:100] if isinstance(domain, bytes) else ""
            version = parts.get(2, 0)
            opsets[name or "ai.onnx"] = version if isinstance(version, int) else 0
    return {
        "ir_version": next(v for f, _, v in fields if f == 1),
        "producer": f"{text.get(2, '')} {text.get(3, '')}".strip(),
        "opsets": opsets,
    }


def _starts_like_a_model(data: bytes) -> bool:
    """Whether the first tag is one of ModelProto's fields with its wire type: a model cut
    short still starts as one, garbage rarely does."""
    try:
        tag, _ = _varint(data, 0)
    except (IndexError, ValueError):
        return False
    return _FIELDS.get(tag >> 3) == tag & 7


def _ports(args: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "name": a.name,
            "type": a.type,
            "shape": [d if isinstance(d, int | str) else None for d in (a.shape or [])],
        }
        for a in args
    ]


def _loaded(data: bytes) -> dict[str, Any]:
    record = wire_summary(data)
    try:
        import onnxruntime as ort
    except ImportError:
        raise ModelError(
            "onnxruntime is not installed where the model is checked: pip install 'headwater[onnx]'"
        ) from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only
    try:
        session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except MemoryError:
        raise
    except Exception as exc:
        text = str(exc)
        if "bad_alloc" in text:
            raise MemoryError from None
        raise ModelError(f"the graph does not load in onnxruntime: {text}") from None
    return {
        **record,
        "inputs": _ports(session.get_inputs()),
        "outputs": _ports(session.get_outputs()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m {_MODULE}")
    parser.add_argument("--memory", type=int, required=True)
    parser.add_argument("--parent", type=int, default=0)
    args = parser.parse_args(argv)
    out = child_start(args.memory, args.parent)
    try:
        data = sys.stdin.buffer.read()
        child_answer(out, {"model": _loaded(data)})
    except MemoryError:
        mib = args.memory / (1 << 20)
        child_answer(out, {"error": f"loading the model needs more than {mib:g} MiB, the limit"})
    except ModelError as exc:
        child_answer(out, {"error": str(exc)[:_ERROR_CHARS]})
    except BaseException as exc:  # whatever onnxruntime raises: a reason, not a traceback
        traceback.print_exc()
        reason = f"checking the model failed: {type(exc).__name__}: {exc}"
        child_answer(out, {"error": reason[:_ERROR_CHARS]})


if __name__ == "__main__":
    main()
