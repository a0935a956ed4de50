"""The master's model registry: model artifacts by name, versions 1, 2, 3... on upload.

A model is code-like data that reaches the edge, so its artifact is
untrusted input: bounded, checked before it is kept (an artifact that does not
load is refused), named by a safe name, and stored as uploaded. Two kinds,
told apart by content (``model_kind``): the JSON anomaly document (``upload``
and ``register``; at most ``MAX_MODEL_BYTES``, loaded with ``load_model``)
and ONNX (``register`` only; at most ``MAX_ONNX_BYTES``, checked by
``inspect_onnx`` in a child process, never in the master's)::

    STATE/models/<name>/<version>.json        a JSON artifact's bytes
    STATE/models/<name>/<version>.onnx        an ONNX model's bytes
    STATE/models/<name>/<version>.meta.json   name, version, sha256, size, created_at,
                                              kind (the document's, or onnx/1); a JSON
                                              one's trained and evaluation; an ONNX one's
                                              inputs, outputs, ir_version, producer,
                                              opsets; the user's metadata if given

The bytes are on the master's disk (``STATE/models``) and, with a blob store the masters
share (``--blob-store``), in it too, named by their SHA-256, before the version exists; a
master that lacks a version's bytes (a standby that took over) fetches them from it,
checks them against the SHA-256 its metadata keeps, then keeps them on its disk. The
metadata is a record of the master's state (``models/NAME/VERSION.meta.json``: the same
file on local state, a znode on ZooKeeper). Versions are assigned in upload order and
never reused; the bytes are in place (the blob store, then the file by atomic rename)
before the metadata, and a version exists once its metadata does, so a crash mid-upload
leaves no half version (a blob kept for one is named by its bytes: an upload of the same
bytes reuses it). Everything is read on each request: the registry has no state in memory
and survives a restart as it is. Versions are never deleted, nor their blobs.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any

from headwater.common._exceptions import HeadwaterError
from headwater.common._ids import name_problem
from headwater.common.models import (
    ONNX_KIND,
    AnomalyModel,
    OnnxModelError,
    inspect_onnx,
    load_model,
    model_kind,
)
from headwater.common.statemgr import Blobs, LocalStateManager, StateManager, blob_name

MAX_MODEL_BYTES = 1 << 20
"""The largest JSON artifact the registry keeps."""
MAX_USER_META_BYTES = 2048
"""The largest user metadata (dataset, data range, evaluation figures) kept with a version."""
MAX_USER_META_DEPTH = 8
MAX_CHECKS = 2
"""ONNX checks at once (each a child of up to 1 GiB); more wait their turn."""
_REGISTER_HINT = (
    "upload takes JSON model documents; register a model of another kind (ONNX) with "
    "`headwater models register FILE --name NAME`"
)
_VERSION = re.compile(r"([1-9][0-9]{0,8})\.meta\.json")


class ModelRefusedError(HeadwaterError):
    """An upload the registry does not keep (``too_large``: over ``MAX_MODEL_BYTES``)."""

    def __init__(self, message: str, too_large: bool = False) -> None:
        super().__init__(message)
        self.too_large = too_large


class UnknownModelError(HeadwaterError):
    """No such model or version."""


def model_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a model (it names a folder), or None if it can."""
    return name_problem(name, "model name")


def load_artifact(data: bytes) -> AnomalyModel:
    """The loaded model; ModelRefusedError saying why when it does not load."""
    try:
        return load_model(data)
    except HeadwaterError as exc:
        raise ModelRefusedError(f"the artifact does not load: {exc}") from None


class ModelRegistry:
    """Model artifacts under ``root`` (``STATE/models``), their metadata in ``meta`` (the
    master's state seen under ``models``; by default the files beside the artifacts).
    Event-loop thread only."""

    def __init__(
        self, root: Path, meta: StateManager | None = None, blobs: Blobs | None = None
    ) -> None:
        """``blobs``: the blob store the masters share (None: the bytes on this disk alone)."""
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.meta_state = meta if meta is not None else LocalStateManager(root)
        self.blobs = blobs
        self._checks = asyncio.Semaphore(MAX_CHECKS)

    def _folder(self, name: str) -> Path:
        problem = model_name_problem(name)
        if problem is not None:
            raise ModelRefusedError(problem)
        return self.root / name

    async def upload(self, name: str, data: bytes) -> dict[str, Any]:
        """Keep the JSON artifact ``data`` as the next version of ``name``;
        ``{"name", "version", "sha256"}``."""
        folder = self._folder(name)
        if not data:
            raise ModelRefusedError("the artifact is empty: send its bytes as the body")
        try:
            record = _json_record(data)
        except ModelRefusedError as exc:
            if model_kind(data) == ONNX_KIND and not exc.too_large:  # say where it goes
                exc.args = (f"{exc}; {_REGISTER_HINT}",)
            raise
        await self._share(data)
        return self._keep(folder, data, record, ".json", None)

    async def register(
        self, name: str, data: bytes, user: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Keep ``data``, a model of either kind, as the next version of ``name``, with the
        ``user``'s metadata (``user_meta``); ``{"name", "version", "sha256", "kind"}``."""
        folder = self._folder(name)
        if not data:
            raise ModelRefusedError("the model is empty: send its bytes as the body")
        if model_kind(data) != ONNX_KIND:
            record = _json_record(data)
            await self._share(data)
            return {**self._keep(folder, data, record, ".json", user), "kind": record["kind"]}
        try:
            async with self._checks:
                record = await inspect_onnx(data)
        except OnnxModelError as exc:
            raise ModelRefusedError(str(exc), too_large=exc.too_large) from None
        record = {k: v for k, v in record.items() if k not in ("sha256", "size")}
        await self._share(data)
        return {**self._keep(folder, data, record, ".onnx", user), "kind": ONNX_KIND}

    async def _share(self, data: bytes) -> None:
        """Put ``data`` in the shared blob store (on a thread), before its version exists;
        its ``StateError`` (the REST API's 503) if it is not kept there."""
        if self.blobs is not None:
            await asyncio.to_thread(self.blobs.put, blob_name(data), data)

    def _keep(
        self,
        folder: Path,
        data: bytes,
        record: dict[str, Any],
        suffix: str,
        user: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """Store the next version (no await in here: versions are assigned in order)."""
        sha = hashlib.sha256(data).hexdigest()
        folder.mkdir(exist_ok=True)
        version = max(self._versions(folder.name), default=0) + 1
        meta = {
            "name": folder.name,
            "version": version,
            "sha256": sha,
            "size": len(data),
            "created_at": time.time(),
            **record,
        }
        if user is not None:
            meta["metadata"] = user
        _write(folder / f"{version}{suffix}", data)
        self.meta_state.put(f"{folder.name}/{version}.meta.json", json.dumps(meta).encode())
        return {"name": folder.name, "version": version, "sha256": sha}

    def _versions(self, name: str) -> list[int]:
        names = self.meta_state.children(name)
        return sorted(int(m[1]) for n in names if (m := _VERSION.fullmatch(n)))

    def names(self) -> list[dict[str, Any]]:
        """Every model with its latest version."""
        out = []
        for name in self.meta_state.children(""):
            if model_name_problem(name) is not None:
                continue
            versions = self._versions(name)
            if versions:
                out.append({"name": name, "latest": versions[-1]})
        return out

    def versions(self, name: str) -> list[dict[str, Any]]:
        self._folder(name)  # the name checked
        versions = self._versions(name)
        if not versions:
            raise UnknownModelError(f"no model named {name!r} (`headwater models list`)")
        return [self.meta(name, v) for v in versions]

    def meta(self, name: str, version: int) -> dict[str, Any]:
        self._folder(name)  # the name checked
        if not 0 < version < 10**9:  # no such record (and a name too long to ask for)
            raise UnknownModelError(f"model {name!r} has no version that large or small")
        kept = self.meta_state.get(f"{name}/{version}.meta.json")
        if kept is None:
            raise UnknownModelError(
                f"model {name!r} has no version {version} (`headwater models show {name}`)"
            )
        return dict(json.loads(kept))

    async def artifact(self, name: str, version: int) -> bytes:
        """The bytes of a version, checked against the SHA-256 kept for it; fetched from the
        shared blob store (on a thread) when they are not on this disk, then kept here."""
        meta = self.meta(name, version)
        suffix = ".onnx" if meta.get("kind") == ONNX_KIND else ".json"
        path = self._folder(name) / f"{version}{suffix}"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            data = await self._fetch(name, version, meta["sha256"])
            if hashlib.sha256(data).hexdigest() != meta["sha256"]:
                raise HeadwaterError(
                    f"model {name!r} version {version}: the bytes in {self._where()} do "
                    "not hash to its sha256 (altered in the store): not served; register it "
                    "again"
                ) from None
            path.parent.mkdir(exist_ok=True)
            _write(path, data)
            return data
        if hashlib.sha256(data).hexdigest() != meta["sha256"]:
            raise HeadwaterError(
                f"model {name!r} version {version} no longer hashes to its sha256: the "
                "registry's files were altered; upload it again"
            )
        return data

    async def _fetch(self, name: str, version: int, sha256: str) -> bytes:
        """A version's bytes from the shared blob store; HeadwaterError when it has none."""
        data = None
        if self.blobs is not None:
            data = await asyncio.to_thread(self.blobs.get, sha256)
        if data is None:
            raise HeadwaterError(
                f"model {name!r} version {version} is registered, but its bytes are neither on "
                f"this master's disk nor in {self._where()}: upload it again"
                if self.blobs is not None
                else f"model {name!r} version {version} is registered, but its bytes are not "
                "on this master's disk (artifacts stay on the master that took them unless the "
                "masters share a --blob-store): upload it here again"
            )
        return data

    def _where(self) -> str:
        return self.blobs.describe() if self.blobs is not None else "no blob store"


def _json_record(data: bytes) -> dict[str, Any]:
    """What a JSON artifact's metadata records of it; ModelRefusedError if it is refused."""
    if len(data) > MAX_MODEL_BYTES:
        raise ModelRefusedError(
            f"the artifact is {len(data)} bytes; the limit is {MAX_MODEL_BYTES}", too_large=True
        )
    doc = load_artifact(data).doc
    return {
        "kind": doc.get("kind", ""),
        "trained": doc.get("trained"),
        "evaluation": doc.get("evaluation"),
    }


def user_meta(text: str) -> dict[str, Any]:
    """The user's metadata of a version (what it was trained on, its figures): a JSON object
    of at most ``MAX_USER_META_BYTES``; ModelRefusedError saying why not."""
    if len(text.encode()) > MAX_USER_META_BYTES:
        raise ModelRefusedError(
            f"the metadata is over {MAX_USER_META_BYTES} bytes: keep it to a small JSON object "
            "(dataset, data range, evaluation figures)",
            too_large=True,
        )
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise ModelRefusedError("the metadata is not JSON: give a JSON object") from None
    try:
        deep = _depth(value) > MAX_USER_META_DEPTH
    except RecursionError:
        deep = True
    if deep:
        raise ModelRefusedError(
            f"the metadata nests deeper than {MAX_USER_META_DEPTH} levels: keep it flat"
        )
    if not isinstance(value, dict):
        raise ModelRefusedError(
            'the metadata must be a JSON object, e.g. {"dataset": "...", "auc": 0.91}'
        )
    try:  # 1e400 parses as inf, which no JSON reader (the console's) takes back
        json.dumps(value, allow_nan=False)
    except ValueError:
        raise ModelRefusedError(
            "the metadata has a number too large for JSON (e.g. 1e400): give finite numbers"
        ) from None
    bounds = value.get("output_range", [0, 0])
    if not (
        isinstance(bounds, list)
        and len(bounds) == 2
        and all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
        and bounds[0] <= bounds[1]
    ):
        raise ModelRefusedError(
            f"the metadata's output_range is {str(bounds)[:80]}; it must be [low, high], two "
            "numbers, low <= high (the scores' range on the training data)"
        )
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
