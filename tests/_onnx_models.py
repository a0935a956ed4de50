"""Small ONNX models for tests, built by hand with ``onnx.helper`` (no training, no converter)."""

from __future__ import annotations

from onnx import TensorProto, helper

OPSET = 17
IR_VERSION = 8


def _model(nodes: list[object], inputs: list[object], outputs: list[object], **kw: object) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs, **kw)  # type: ignore[arg-type]
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="headwater-tests"
    )
    model.ir_version = IR_VERSION
    return model.SerializeToString()


def linear() -> bytes:
    """``score = features @ [0.5, -1, 2]``: features float [batch, 3] -> score float [batch, 1]."""
    weights = helper.make_tensor("w", TensorProto.FLOAT, [3, 1], [0.5, -1.0, 2.0])
    return _model(
        [helper.make_node("MatMul", ["features", "w"], ["score"])],
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("score", TensorProto.FLOAT, ["batch", 1])],
        initializer=[weights],
    )


def unknown_op() -> bytes:
    """A well-formed protobuf whose one node is an operator no runtime has: raises at load."""
    return _model(
        [helper.make_node("NoSuchOp", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )


def memory_bomb() -> bytes:
    """About 200 bytes whose load allocates 768 MiB: onnxruntime folds the constant
    ``ConstantOfShape([12288, 16384])`` (under its own 1 GiB folding bound) when it loads."""
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [12288, 16384])
    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    return _model(
        [
            helper.make_node("ConstantOfShape", ["shape"], ["big"], value=one),
            helper.make_node("ReduceSum", ["big"], ["total"], keepdims=0),
            helper.make_node("Add", ["x", "total"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[shape],
    )


def large(mib: int) -> bytes:
    """``y = x + sum(w)`` with a float initializer ``w`` of ``mib`` MiB: a big, valid model."""
    n = mib << 18  # floats of 4 bytes
    weights = helper.make_tensor("w", TensorProto.FLOAT, [n], b"\x00" * (4 * n), raw=True)
    return _model(
        [
            helper.make_node("ReduceSum", ["w"], ["total"], keepdims=0),
            helper.make_node("Add", ["x", "total"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        initializer=[weights],
    )


def linear_double() -> bytes:
    """``linear`` in doubles: features double [batch, 3] -> score double [batch]."""
    weights = helper.make_tensor("w", TensorProto.DOUBLE, [3], [0.5, -1.0, 2.0])
    return _model(
        [
            helper.make_node("Mul", ["features", "w"], ["scaled"]),
            helper.make_node("ReduceSum", ["scaled", "axes"], ["score"], keepdims=0),
        ],
        [helper.make_tensor_value_info("features", TensorProto.DOUBLE, ["batch", 3])],
        [helper.make_tensor_value_info("score", TensorProto.DOUBLE, ["batch"])],
        initializer=[weights, helper.make_tensor("axes", TensorProto.INT64, [1], [1])],
    )


def fixed_batch() -> bytes:
    """``linear`` with a batch of exactly 1: a scoring step refuses it."""
    weights = helper.make_tensor("w", TensorProto.FLOAT, [3, 1], [0.5, -1.0, 2.0])
    return _model(
        [helper.make_node("MatMul", ["features", "w"], ["score"])],
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("score", TensorProto.FLOAT, [1, 1])],
        initializer=[weights],
    )
