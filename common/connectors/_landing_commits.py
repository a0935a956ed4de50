"""A landing task's commit protocol: its sealed checkpoints' manifests, published once.

``LandingSink`` (``_landing.py``) writes a checkpoint's rows as hidden pending parts and
hands their manifest to ``LandingCommits.seal``, which writes it as
``_manifests/.pending-<checkpoint>-<task>.json``. ``publish`` (at the commit) renames
the parts to their final names, then publishes the manifest under the next free
sequence number: written as ``.commit-<checkpoint>-<task>.json``, then hard-linked to
``<seq>.json`` (``os.link`` fails if the name is taken: try the next one), so numbers are
contiguous and unique across tasks and processes. ``restore`` finishes what a crash left
half done (the commit file's link count says whether its manifest was published) and
rolls back the task's parts of undone checkpoints (``_parts``). It takes only the
dataset's folder and the task id.
"""

from __future__ import annotations

import json
import os
import re
import time
from functools import partial
from pathlib import Path
from typing import Any

from .._durable import fsync_dir
from ._landing_read import published_seqs
from ._parts import pending_name, roll_back, write_durably

_SEALED = re.compile(r"^\.(pending|commit)-(\d+)-(\d+)\.json$")


class LandingCommits:
    """One task's sealed checkpoints of a landing dataset, and their publication."""

    def __init__(self, dataset_dir: Path, task: int) -> None:
        self.dir = dataset_dir
        self.task = task
        self.manifests_dir = dataset_dir / "_manifests"
        self.manifests_dir.mkdir(parents=True, exist_ok=True)
        self.next_seq = max(published_seqs(self.manifests_dir), default=0) + 1
        self.sealed: dict[int, dict[str, Any]] = {}  # checkpoint -> its pending manifest

    def seal(self, checkpoint_id: int, doc: dict[str, Any]) -> None:
        """Write ``doc`` as the checkpoint's pending manifest (its parts are written)."""
        pending = self.manifests_dir / f".pending-{checkpoint_id:08d}-{self.task}.json"
        write_durably(pending, partial(write_json, doc))
        fsync_dir(self.manifests_dir)
        self.sealed[checkpoint_id] = doc

    def restore(self, checkpoint_id: int) -> None:
        """Publish what completed checkpoints sealed (their manifests once); drop what the
        rollback undoes: the task's parts and manifests-to-be of later checkpoints."""
        self.sealed = {}
        for folder, dirs, _files in os.walk(self.dir):
            if folder == str(self.dir):
                dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
            roll_back(Path(folder), self.task, checkpoint_id)
        commits = []
        for path in list(self.manifests_dir.iterdir()):
            name = path.name
            if name.startswith((".pending-", ".commit-")) and name.endswith(
                f"-{self.task}.json.tmp"
            ):
                path.unlink()
                continue
            m = _SEALED.match(name)
            if not m or int(m.group(3)) != self.task:
                continue
            ckpt = int(m.group(2))
            if m.group(1) == "commit":
                commits.append((path, ckpt))
            elif ckpt > checkpoint_id:
                path.unlink()
            else:
                self.sealed[ckpt] = json.loads(path.read_bytes())
        for path, ckpt in commits:  # published (its pending form gone already) or undone
            if ckpt not in self.sealed:
                path.unlink()
        fsync_dir(self.manifests_dir)
        self.next_seq = max(published_seqs(self.manifests_dir), default=0) + 1
        self.publish(up_to=checkpoint_id)

    def publish(self, up_to: int) -> None:
        for ckpt in sorted(c for c in self.sealed if c <= up_to):
            doc = self.sealed[ckpt]
            name = pending_name(ckpt, self.task, "parquet")
            folders = set()
            for f in doc["files"]:
                final = self.dir / f["path"]
                pending = final.with_name(name)
                if pending.exists():
                    pending.replace(final)
                    folders.add(final.parent)
            for folder in folders:
                fsync_dir(folder)
            self._write_manifest(ckpt, doc)
            self._forget(ckpt)

    def _write_manifest(self, ckpt: int, doc: dict[str, Any]) -> None:
        """Publish ``doc`` as ``_manifests/<seq>.json``, the next free seq, once."""
        commit = self.manifests_dir / f".commit-{ckpt:08d}-{self.task}.json"
        if commit.exists() and _links(commit) > 1:
            return  # published before a crash: ``commit`` is its other name
        seq = self.next_seq
        while True:
            while (self.manifests_dir / f"{seq:012d}.json").exists():
                seq += 1
            full = {"seq": seq, **doc, "committed_at": round(time.time(), 3)}
            write_durably(commit, partial(write_json, full))
            try:
                os.link(commit, self.manifests_dir / f"{seq:012d}.json")
                break
            except FileExistsError:  # another task took it in between
                seq += 1
        fsync_dir(self.manifests_dir)
        self.next_seq = seq + 1

    def _forget(self, ckpt: int) -> None:
        """The manifest is published: drop its pending form, then the commit file."""
        del self.sealed[ckpt]
        (self.manifests_dir / f".pending-{ckpt:08d}-{self.task}.json").unlink(missing_ok=True)
        (self.manifests_dir / f".commit-{ckpt:08d}-{self.task}.json").unlink(missing_ok=True)


def write_json(doc: Any, f: Any) -> None:
    f.write(json.dumps(doc).encode())


def _links(path: Path) -> int:
    try:
        return path.stat().st_nlink
    except FileNotFoundError:
        return 0
