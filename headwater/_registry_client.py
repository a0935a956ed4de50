"""Registering a model from code: ``register`` and ``Registry``, the master's model registry
reached over its REST API with an admin's token (``POST /api/v1/models/NAME/versions``).

``headwater.models`` re-exports them; a Spark job reaches the registry as
``ctx.register(...)`` when it was run with a master (``headwater spark run --master URL
--token ...``; docs/design.md, "Training as jobs"). ``training_meta`` builds the metadata
a registered version records: the dataset and data range it was trained on, its
evaluation figures and ``output_range``, the scores' ``[lo, hi]`` on the training data
(what a rollout guard compares the edge's scores with), checked against the registry's
bound (``MAX_META_BYTES`` of compact JSON) before anything is sent.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from headwater._master_client import Client
from headwater.common._exceptions import HeadwaterError

MAX_META_BYTES = 2048
"""The registry's bound on a version's metadata (compact JSON), the master's own."""
_EXAMPLES = {
    "data_range": '{"from_ts": ..., "to_ts": ..., "rows": ...}',
    "evaluation": '{"auc": 0.91}',
}


@dataclass(frozen=True)
class Registry:
    """The model registry of the master at ``url``, called with the admin ``token`` (or a
    submitted job's own token, which may register ``models`` only)."""

    url: str
    token: str
    cacert: str | None = None
    models: tuple[str, ...] | None = None  # a job's token: the names it may register

    def __repr__(self) -> str:  # never the token (a job's log, a traceback)
        return f"Registry({self.url!r})"

    @classmethod
    def from_env(cls) -> Registry | None:
        """The master of ``HEADWATER_MASTER`` with ``HEADWATER_TOKEN``, trusting
        ``HEADWATER_CACERT``, as the CLI takes them; None when no master is named."""
        url = os.environ.get("HEADWATER_MASTER")
        if not url:
            return None
        token = os.environ.get("HEADWATER_TOKEN")
        if not token:
            raise HeadwaterError(
                f"HEADWATER_MASTER={url} names a master but no token: registering a model "
                "needs an admin token (HEADWATER_TOKEN=TOKEN)"
            )
        return cls(url.rstrip("/"), token.strip(), os.environ.get("HEADWATER_CACERT"))

    def register(
        self, data: bytes | str | Path, name: str, *, meta: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Register ``data`` (the model's bytes, or a file's path) as the next version of
        ``name``, with ``meta``; the version's record as the registry keeps it (name,
        version, sha256, kind, inputs and outputs for ONNX, metadata)."""
        if self.models is not None and name not in self.models:
            declared = ", ".join(self.models) or "none"
            raise HeadwaterError(
                f"this job may register models {declared} only (headwater spark submit "
                f"--registers NAME declares them); not {name!r}"
            )
        body = _bytes(data)
        path = f"/api/v1/models/{quote(name, safe='')}/versions"
        if meta is not None:
            path += "?" + urlencode({"meta": meta_text(meta)})
        client = Client(self.url, self.token, self.cacert)
        made = client.call("POST", path, body)
        record: dict[str, Any] = client.call(
            "GET", f"/api/v1/models/{quote(name, safe='')}/{int(made['version'])}"
        )
        return record


def register(
    data: bytes | str | Path,
    name: str,
    *,
    meta: Mapping[str, Any] | None = None,
    master: str | None = None,
    token: str | None = None,
    cacert: str | None = None,
) -> dict[str, Any]:
    """Register a model with the master's registry; see ``Registry.register``. ``master``
    and ``token`` default to the environment's (``Registry.from_env``)."""
    if master is None:
        found = Registry.from_env()
        if found is None:
            raise HeadwaterError(
                "name the master: register(..., master=URL, token=TOKEN) or "
                "HEADWATER_MASTER=URL with HEADWATER_TOKEN=TOKEN"
            )
        registry = found if token is None else Registry(found.url, token, found.cacert)
    else:
        token = token or os.environ.get("HEADWATER_TOKEN")
        if not token:
            raise HeadwaterError("registering a model needs an admin token: token=TOKEN")
        registry = Registry(master.rstrip("/"), token, cacert or os.environ.get("HEADWATER_CACERT"))
    return registry.register(data, name, meta=meta)


def training_meta(
    *,
    dataset: str,
    data_range: Mapping[str, Any],
    evaluation: Mapping[str, Any],
    output_range: Iterable[float],
    **more: Any,
) -> dict[str, Any]:
    """A version's metadata: ``dataset`` (its name), ``data_range`` (e.g. ``{"from_ts":
    ..., "to_ts": ..., "rows": ...}``), ``evaluation`` (figures on the holdout),
    ``output_range`` ([lo, hi] of the scores on the training data) and ``more``;
    HeadwaterError when it is not JSON or over ``MAX_META_BYTES``."""
    try:
        lo, hi = (float(x) for x in output_range)
    except (TypeError, ValueError):
        raise HeadwaterError(
            f"output_range {str(output_range)[:80]}: give [lo, hi], two finite numbers, "
            "lo <= hi (the scores' range on the training data)"
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        raise HeadwaterError(f"output_range [{lo}, {hi}]: two finite numbers, lo <= hi")
    for what, given in (("data_range", data_range), ("evaluation", evaluation)):
        if not isinstance(given, Mapping):
            raise HeadwaterError(
                f"{what} is a dict (e.g. {_EXAMPLES[what]}), not {str(given)[:80]}"
            )
    meta = {
        "dataset": dataset,
        "data_range": dict(data_range),
        "evaluation": dict(evaluation),
        "output_range": [lo, hi],
        **more,
    }
    meta_text(meta)
    return meta


def meta_text(meta: Mapping[str, Any]) -> str:
    """``meta`` as the compact JSON the registry takes; HeadwaterError when it cannot be."""
    if not isinstance(meta, Mapping):
        raise HeadwaterError('meta must be a JSON object (a dict), e.g. {"dataset": "..."}')
    try:
        text = json.dumps(dict(meta), separators=(",", ":"), allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise HeadwaterError(f"meta is not JSON: {exc}") from None
    if len(text.encode()) > MAX_META_BYTES:
        raise HeadwaterError(
            f"meta is {len(text.encode())} bytes of JSON, over the registry's "
            f"{MAX_META_BYTES}: keep the dataset, data range and a few figures"
        )
    return text


def _bytes(data: bytes | str | Path) -> bytes:
    if isinstance(data, bytes | bytearray):
        return bytes(data)
    try:
        return Path(data).read_bytes()
    except OSError as exc:
        raise HeadwaterError(f"cannot read the model {str(data)!r}: {exc.strerror}") from None
