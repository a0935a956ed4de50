"""Fitted models exported to ONNX bytes: scikit-learn (skl2onnx) and Spark MLlib (onnxmltools).

``to_onnx(model)`` gives the bytes of an ONNX graph with one float input, ``input``,
shaped ``[None, n]`` (a batch of rows of ``n`` features, in the order the model was
fitted on), that the registry takes (``headwater models register``) and an edge
step scores with ``onnxruntime``:

- a scikit-learn estimator or ``Pipeline`` (anything ``skl2onnx`` converts):
  ``n`` is its ``n_features_in_``; a classifier's outputs are numeric tensors
  (``label`` and ``probabilities``, ``zipmap=False``), never a list of maps;
- a Spark MLlib model or ``PipelineModel`` (what ``onnxmltools.convert_sparkml``
  converts): a pipeline that begins with a ``VectorAssembler`` over ``n`` numeric
  columns is converted from its next stage on, with the assembled vector as the one
  input (the columns' order is the assembler's ``inputCols``); a bare model takes
  its features vector (``n``: its ``numFeatures``). A stage the converter gets wrong
  (``MISCONVERTED``: ``GBTRegressionModel``) is refused. Outputs are the converter's:
  ``prediction`` (float for a regression, int64 for a classifier) and, for
  classifiers, ``probability``. A stage the converter does not know is refused
  with its name and the list of those it knows.

The converters are imported here, when called: they are in the ``train`` extra
(``pip install 'headwater[train]'``), which a gateway never installs.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any

from .._exceptions import HeadwaterError

INPUT = "input"
"""The name of an exported graph's one input."""

_EXTRA = "pip install 'headwater[train]'"
# stages onnxmltools converts into a graph that scores otherwise than Spark (checked with
# PySpark 4.1 and onnxmltools 1.16): refused rather than shipped wrong
MISCONVERTED = {
    "GBTRegressionModel": "onnxmltools' converter gives a graph whose scores differ from "
    "Spark's (by several units on a plain regression): use a RandomForestRegressor or a "
    "DecisionTreeRegressor, or a scikit-learn GradientBoostingRegressor",
}


class ExportError(HeadwaterError):
    """A model that cannot be exported to ONNX, with the reason and what to do."""


def to_onnx(model: Any, n_features: int | None = None, *, spark: Any = None) -> bytes:
    """``model`` (fitted scikit-learn or Spark MLlib) as ONNX bytes; see the module doc.
    ``n_features`` when the model does not tell it; ``spark`` the session a Spark tree
    model's conversion needs (default: the active one)."""
    if _is_spark(model):
        return _from_spark(model, n_features, spark)
    if _is_sklearn(model):
        return _from_sklearn(model, n_features)
    raise ExportError(
        f"cannot export a {type(model).__module__}.{type(model).__name__} to ONNX: give a "
        "fitted scikit-learn estimator or a fitted Spark MLlib model or PipelineModel"
    )


def _width(given: Any, told: Any, model: Any) -> int | None:
    """The input's width: ``given`` (``n_features``) or what the model ``told``; None when
    neither says; ExportError when ``given`` is no count or not what the model was fitted
    on (a graph declared wider than its coefficients loads, then fails on every row)."""
    fitted = told if isinstance(told, int) and not isinstance(told, bool) and told >= 1 else None
    if given is None:
        return fitted
    if not isinstance(given, int) or isinstance(given, bool) or given < 1:
        raise ExportError(f"n_features is a number of features (1, 2, ...), not {given!r}")
    if fitted is not None and given != fitted:
        raise ExportError(
            f"n_features={given} but the {type(model).__name__} takes {fitted} features: "
            f"leave n_features out, or give {fitted}"
        )
    return given


def _is_spark(model: Any) -> bool:
    return type(model).__module__.startswith("pyspark.ml")


def _is_sklearn(model: Any) -> bool:
    return type(model).__module__.startswith("sklearn.") or hasattr(model, "get_params")


def _needs(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ExportError(
            f"exporting to ONNX needs {module.partition('.')[0]} ({exc}): {_EXTRA}"
        ) from None


# -- scikit-learn ----------------------------------------------------------------------


def _from_sklearn(model: Any, n_features: int | None) -> bytes:
    skl2onnx = _needs("skl2onnx")
    types = _needs("skl2onnx.common.data_types")
    n = _width(n_features, getattr(model, "n_features_in_", None), model)
    if n is None:
        raise ExportError(
            f"the {type(model).__name__} does not tell its number of features (is it "
            "fitted?): fit it, or give n_features"
        )
    final = model.steps[-1][1] if hasattr(model, "steps") else model
    options = {id(final): {"zipmap": False}} if hasattr(final, "predict_proba") else None
    try:
        onx = skl2onnx.convert_sklearn(
            model,
            initial_types=[(INPUT, types.FloatTensorType([None, n]))],
            options=options,
        )
    except Exception as exc:  # the converter's own words: an unknown estimator, unfitted...
        raise ExportError(
            f"skl2onnx cannot convert the {type(model).__name__}: {_line(exc)}"
        ) from None
    return bytes(onx.SerializeToString())


# -- Spark MLlib -----------------------------------------------------------------------


def _from_spark(model: Any, n_features: int | None, spark: Any) -> bytes:
    onnxmltools = _needs("onnxmltools")
    _needs("pandas")  # onnxmltools' Spark converters import it
    ops = _needs("onnxmltools.convert.sparkml.ops_names")
    types = _needs("onnxmltools.convert.common.data_types")
    from pyspark.ml import PipelineModel
    from pyspark.ml.feature import VectorAssembler
    from pyspark.sql import SparkSession

    stages = list(model.stages) if isinstance(model, PipelineModel) else [model]
    if not stages:
        raise ExportError("the PipelineModel has no stage: nothing to export")
    if isinstance(stages[0], VectorAssembler):
        assembler, stages = stages[0], stages[1:]
        n = _width(n_features, len(assembler.getInputCols()), assembler)
        if not stages:
            raise ExportError("the PipelineModel only assembles features: it predicts nothing")
    else:
        n = _width(n_features, getattr(stages[0], "numFeatures", None), stages[0])
    if n is None:
        raise ExportError(
            f"the {type(stages[0]).__name__} does not tell its number of features: give n_features"
        )
    known = ops.sparkml_operator_name_map
    for stage in stages:
        if type(stage).__name__ in MISCONVERTED:
            raise ExportError(
                f"a Spark {type(stage).__name__} stage: {MISCONVERTED[type(stage).__name__]}"
            )
        if type(stage) not in known:
            names = sorted(t.__name__ for t in known)
            raise ExportError(
                f"onnxmltools cannot convert a Spark {type(stage).__name__} stage; it "
                f"converts: {', '.join(names)}"
            )
    first = stages[0]
    param = next((p for p in ("featuresCol", "inputCol") if first.hasParam(p)), None)
    if param is None:
        raise ExportError(
            f"the Spark {type(first).__name__} stage reads no features column (featuresCol "
            "or inputCol): begin the pipeline with a VectorAssembler or a model"
        )
    features = first.getOrDefault(param)
    target = stages[0] if len(stages) == 1 else PipelineModel(stages)
    session = spark or SparkSession.getActiveSession()
    try:
        # some converters print their nodes; pandas 3 warns of their copy=
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            onx = onnxmltools.convert_sparkml(
                target,
                "headwater-export",
                [(features, types.FloatTensorType([None, n]))],
                spark_session=session,
            )
    except Exception as exc:
        raise ExportError(
            f"onnxmltools cannot convert the Spark {type(target).__name__}: {_line(exc)}"
        ) from None
    _rename_input(onx.graph, features, INPUT)
    return bytes(onx.SerializeToString())


def _rename_input(graph: Any, old: str, new: str) -> None:
    """The graph's input ``old`` named ``new``, in the input and in every node that reads it."""
    if old == new:
        return
    for value in graph.input:
        if value.name == old:
            value.name = new
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
