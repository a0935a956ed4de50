"""The DSL's scoring step: ``Streamlet.score``, a frame of records scored in one model run.

``stream.score(name, model, inputs=..., output=...)`` scores each record with
the ONNX model of the name ``model`` that the component's package ships for
this agent (a rollout's ``headwater_models.json``, see
``headwater.common.plan._package_models``). The step heads a component of its
own (the steps after it may fuse into it): its config carries the step's
declaration (``SCORE_CONFIG``, a ``ScoreSpec``) and, once a rollout names it,
its models file entry (``MODEL_CONFIG``), so a new model is a ``replace`` of this
component alone, at a checkpoint barrier, state carried.

At open the step loads its model (the runtime's ``live_scorer``, installed here
with ``install_live_scorer`` when the runtime is imported: the DSL does not know
the runtime). For a frame it reads each record's inputs as numbers, runs the
model once for all the rows, and emits each record with its score and the
version that scored it. A record whose inputs are missing, not numbers, or not
finite goes to the dead letters with the reason; the frame goes on. With no
model rolled out yet the records pass unscored (score None, version ""),
counted ``unscored``: a pipeline deployed before its first model flows rather
than stalls. Counters: ``scored``, ``unscored``, ``score_us`` (microseconds in
model runs, summed), ``out_of_range`` (scores outside the entry's ``range``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from numbers import Real
from typing import Any, Protocol

from .._exceptions import DeadLetter, HeadwaterError
from .._ids import name_problem
from ..api import Context
from ..models._score_spec import ScoreSpec
from ._ops import Op, Out, Side

Inputs = Sequence[str | int] | Callable[[Any], Sequence[float]]
Output = str | Callable[[Any, Any, str], Any]


class LiveScorer(Protocol):
    """What the runtime's ``live_scorer`` gives: the model this node scores with, if any."""

    version: str
    range: tuple[float, float] | None

    @property
    def loaded(self) -> bool: ...

    def run(self, rows: Sequence[Sequence[float]]) -> list[Any]: ...


Loader = Callable[[Mapping[str, Any], ScoreSpec], LiveScorer]
_loader: Loader | None = None


def install_live_scorer(loader: Loader) -> None:
    """Called once by the runtime when it is imported: how a scoring step loads its model."""
    global _loader
    _loader = loader


class _Unreadable(Exception):
    """A record's inputs are not a row of numbers (its reason)."""


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise _Unreadable(f"input {where} is {type(value).__name__} {_short(value)}, not a number")
    try:
        x = float(value)
    except OverflowError:  # an int past float's range, e.g. 10**400 from a JSON reading
        raise _Unreadable(f"input {where} is {_short(value)}, too large for a float") from None
    if not math.isfinite(x):
        raise _Unreadable(f"input {where} is {x}, not a finite number")
    return x


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def row_reader(inputs: Inputs, width: int) -> Callable[[Any], list[float]]:
    """A function from a record to its row of ``width`` floats; ``_Unreadable`` says why not."""
    if callable(inputs):
        fn = inputs

        def from_fn(value: Any) -> list[float]:
            try:
                got = list(fn(value))
            except Exception as exc:
                reason = f"the inputs function raised {type(exc).__name__}: {exc}"
                raise _Unreadable(reason) from None
            if len(got) != width:
                raise _Unreadable(f"the inputs function gave {len(got)} values, not {width}")
            return [_number(x, f"#{i}") for i, x in enumerate(got)]

        return from_fn
    fields = tuple(inputs)
    if all(isinstance(f, str) for f in fields):

        def from_dict(value: Any) -> list[float]:
            if not isinstance(value, Mapping):
                raise _Unreadable(f"the record is a {type(value).__name__}, not a dict")
            try:
                return [_number(value[f], repr(f)) for f in fields]
            except KeyError as exc:
                raise _Unreadable(f"the record has no input {exc.args[0]!r}") from None

        return from_dict

    def from_list(value: Any) -> list[float]:
        if not isinstance(value, list | tuple):
            raise _Unreadable(f"the record is a {type(value).__name__}, not a list or tuple")
        try:
            return [_number(value[i], f"[{i}]") for i in fields]  # type: ignore[index]
        except IndexError:
            raise _Unreadable(f"the record has {len(value)} items; inputs {list(fields)}") from None

    return from_list


def writer(output: Output, version_field: str | None) -> Callable[[Any, Any, str], Any]:
    """``write(value, score, version)``: the record with its score and version; a dict gets
    ``output`` and ``version_field`` set (a new dict), a list or tuple both appended."""
    if callable(output):
        return output
    key = output

    def write(value: Any, score: Any, version: str) -> Any:
        if isinstance(value, Mapping):
            new = {**value, key: score}
            if version_field is not None:
                new[version_field] = version
            return new
        tail = [score] if version_field is None else [score, version]
        if isinstance(value, tuple):
            return (*value, *tail)
        return [*value, *tail]

    return write


def spec_of(
    model: str, inputs: Inputs, output: Output, take: str | None, width: int | None
) -> ScoreSpec:
    """The step's declaration; HeadwaterError when the arguments cannot make one."""
    problem = name_problem(model, "model name") if isinstance(model, str) else None
    if not isinstance(model, str) or problem:
        raise HeadwaterError(f"score: {problem or f'model is a name (a string), not {model!r}'}")
    if not (output is None or isinstance(output, str) or callable(output)):
        raise HeadwaterError(f"score: output is a field name or a function, not {output!r}")
    if take is not None and not isinstance(take, str):
        raise HeadwaterError(f"score: take is the name of a model output, not {take!r}")
    if isinstance(inputs, str | bytes) or not (callable(inputs) or isinstance(inputs, Iterable)):
        raise HeadwaterError(
            f"score: inputs is a list (e.g. inputs=['{inputs}'] for one field), not {inputs!r}"
            if isinstance(inputs, str)
            else f"score: inputs is a list of keys or indexes, or a function, not {inputs!r}"
        )
    if callable(inputs):
        if not isinstance(width, int) or isinstance(width, bool) or width < 1:
            raise HeadwaterError("score: inputs given as a function need width=N (values per row)")
        counted: tuple[str | int, ...] | int = width
    else:
        counted = tuple(inputs)
        kinds = {type(f) for f in counted}
        if not counted or not (kinds == {str} or kinds == {int}):
            raise HeadwaterError(
                "score: inputs is a list of a dict record's keys, or of a list record's "
                "indexes, or a function (with width=N)"
            )
        if width is not None and width != len(counted):
            raise HeadwaterError(f"score: width={width!r} but {len(counted)} inputs are named")
    name = output if isinstance(output, str) else "<function>"
    return ScoreSpec(model, counted, name, take)


class ScoreOp(Op):
    """Scores a frame's records in one model run (heads its component: ``process_frame``)."""

    def __init__(
        self,
        name: str,
        spec: ScoreSpec,
        inputs: Inputs,
        output: Output,
        version_field: str | None,
    ) -> None:
        super().__init__(name)
        self.spec = spec
        self.read = row_reader(inputs, spec.width)
        self.write = writer(output, version_field)

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        if _loader is None:
            raise HeadwaterError("a scoring step opened before the runtime was imported")
        self.live = _loader(ctx.config, self.spec)

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        self.process_frame(out, [[key, value]])

    def process_frame(self, out: Out, entries: Iterable[Sequence[Any]]) -> None:
        """Score ``entries`` (``[key, value]`` records) with one model run; emit each."""
        keys, values, rows = [], [], []
        read = self.read
        for key, value in entries:
            try:
                rows.append(read(value))
            except _Unreadable as exc:
                self._dead(value, str(exc))
                continue
            keys.append(key)
            values.append(value)
        if not values:
            return
        live, ctx = self.live, self.ctx
        if not live.loaded:
            ctx.incr("unscored", len(values))
            self._emit(out, keys, values, [None] * len(values), "")
            return
        t0 = time.perf_counter_ns()
        try:
            scores: list[Any] = live.run(rows)
        except Exception:  # one record's row may make the model raise: find it, run the rest
            scores = []
            for value, row in zip(values, rows, strict=True):
                try:
                    scores.extend(live.run([row]))
                except Exception as exc:
                    scores.append(_FAILED)
                    self._dead(value, f"the model raised on this record: {exc}")
        ctx.incr("score_us", (time.perf_counter_ns() - t0) // 1000)
        scored = sum(1 for s in scores if s is not _FAILED)
        if scored:
            ctx.incr("scored", scored)
        if live.range is not None:
            lo, hi = live.range
            outside = sum(1 for s in scores if s is not _FAILED and not _within(s, lo, hi))
            if outside:
                ctx.incr("out_of_range", outside)
        self._emit(out, keys, values, scores, live.version)

    def _emit(
        self, out: Out, keys: list[Any], values: list[Any], scores: list[Any], version: str
    ) -> None:
        write, retry, name = self.write, self.retry, self.name
        for key, value, score in zip(keys, values, scores, strict=True):
            if score is _FAILED:
                continue
            try:
                new = write(value, score, version)
            except Exception as exc:
                retry(name, partial(_again, out, write, key, value, score, version), exc, value)
                continue
            out(key, new)

    def _dead(self, value: Any, reason: str) -> None:
        error = DeadLetter(f"score {self.name!r}: {reason}")
        self.retry(self.name, partial(_raise, error), error, value)


_FAILED = object()


def _within(score: Any, lo: float, hi: float) -> bool:
    if isinstance(score, list):
        return all(lo <= s <= hi for s in score)
    return bool(lo <= score <= hi)


def _again(out: Out, write: Callable[..., Any], key: Any, value: Any, score: Any, v: str) -> None:
    out(key, write(value, score, v))


def _raise(error: Exception) -> None:
    raise error
