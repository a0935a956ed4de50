"""The code of the master's topologies: packages stored by their hash, unpacked once, and the
skeletons their files describe.

A package comes from a submission or an edit: untrusted, so it is checked before it is kept
(the caller's ``check_package``) and one kept for a refused request alone is deleted again
(``drop``), unless another request is loading it meanwhile (``holding``) or a running
topology took it after all (``in_use``). The master never runs a submitted file itself: a
child process loads it, bounded in time and memory (``load_isolated``), and what is kept is
the topology's description as a skeleton, per (package, entry): those of every running
topology's revisions, since its topology master may need an older revision's plan at any
time (``load_revision``).
"""

from __future__ import annotations

import logging
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from headwater.common._exceptions import HeadwaterError
from headwater.common._package import PackageStore, entry_problem, package_hash, unpack_package
from headwater.common.api import Topology
from headwater.common.control._revisions import EditError, RevisionLog, RevisionRecord, without
from headwater.common.plan import cloud_part
from headwater.common.plan._child_loader import LoadLimits, load_isolated

log = logging.getLogger("headwater.master")
Key = tuple[str, str]
"""(package digest, entry file)"""


class TopologyCode:
    def __init__(self, state_dir: Path, limits: LoadLimits, in_use: Callable[[str], bool]) -> None:
        """``in_use(digest)``: whether a running topology runs that package (never dropped)."""
        self.packages = PackageStore(state_dir / "packages")
        self._code = state_dir / "code"
        self._limits = limits
        self._in_use = in_use
        self._described: dict[Key, Topology] = {}
        self._loading: Counter[str] = Counter()  # packages a request is loading
        self._orphans: set[str] = set()  # refused packages to delete once no request loads them

    # -- packages ----------------------------------------------------------------
    def store(self, data: bytes) -> tuple[str, bool]:
        """Store a checked package; return its name and whether it is new here."""
        fresh = not self.packages.has(package_hash(data))
        return self.packages.put(data), fresh

    @contextmanager
    def holding(self, digest: str) -> Iterator[None]:
        """While a request loads ``digest``, a refused twin does not delete it under it."""
        self._loading[digest] += 1
        try:
            yield
        finally:
            self._loading[digest] -= 1
            if not self._loading[digest]:
                del self._loading[digest]
                if digest in self._orphans:
                    self.drop(digest)

    def drop(self, digest: str) -> None:
        """Forget a package stored for a refused submission or edit (and its unpacked code)."""
        if self._in_use(digest):
            self._orphans.discard(digest)
            return  # taken after all (a refusal after the topology started)
        if self._loading[digest]:
            self._orphans.add(digest)  # another request loads it: the last one out drops it
            return
        self._orphans.discard(digest)
        shutil.rmtree(self._code_dir(digest), ignore_errors=True)
        self.packages.delete(digest)
        log.info("deleted package %s of a refused request", digest[:19])

    def _code_dir(self, digest: str) -> Path:
        return self._code / digest.split(":")[1]

    def unpack(self, digest: str) -> Path:
        """The package's files, unpacked (and hash-checked) once."""
        code = self._code_dir(digest)
        if not (code / ".verified").exists():
            shutil.rmtree(code, ignore_errors=True)
            try:
                unpack_package(self.packages.get(digest), digest, code)
            except BaseException:
                shutil.rmtree(code, ignore_errors=True)
                raise
            (code / ".verified").touch()
        return code

    # -- skeletons ----------------------------------------------------------------
    async def load(self, package: str, entry: str) -> Topology:
        """The whole topology a package's file defines, as a skeleton (loaded in a child)."""
        cached = self._described.get((package, entry))
        if cached is not None:
            return cached
        return await load_isolated(self.unpack(package), entry, self._limits)

    async def logical(self, package: str, entry: str) -> Topology:
        """What an edit's file defines (every placement, nothing left out); EditError for an
        entry that is not a file of the package."""
        problem = entry_problem(entry)
        if problem is not None:
            raise EditError(problem)
        if not (self.unpack(package) / entry).is_file():
            raise EditError(f"the package has no file {entry!r}; send the topology file")
        return await self.load(package, entry)

    async def of_revisions(
        self, name: str, first: Key, topologies: Path, whole: Topology | None = None
    ) -> dict[Key, Topology]:
        """The skeletons of the files topology ``name``'s revisions run (its history is under
        ``topologies``; ``whole``: its first file's, when just loaded)."""
        described = {first: whole or await self.load(*first)}
        try:
            history = RevisionLog(topologies / name / "revisions.json")
        except (OSError, ValueError, TypeError):
            return described  # its topology master says what is wrong with it
        for rec in history.records:
            key = (rec.package, rec.entry)
            if key not in described:
                try:
                    described[key] = await self.load(*key)
                except HeadwaterError as exc:
                    log.warning("revision %d of %r does not load: %s", rec.revision, name, exc)
        return described

    def described(self, package: str, entry: str) -> Topology | None:
        """The skeleton kept for (package, entry), if any."""
        return self._described.get((package, entry))

    def remember(self, described: dict[Key, Topology]) -> None:
        self._described.update(described)

    def keep_only(self, kept: Iterable[Key]) -> None:
        """Keep the skeletons of ``kept`` only (those of running topologies' revisions)."""
        keep = set(kept)
        self._described = {k: v for k, v in self._described.items() if k in keep}

    def load_revision(self, rec: RevisionRecord) -> tuple[Topology, bytes]:
        """A revision's cloud part, from the skeletons loaded when it was made or resumed."""
        whole = self._described.get((rec.package, rec.entry))
        if whole is None:
            raise EditError(
                f"revision {rec.revision}'s file {rec.entry!r} did not load when the topology "
                "started (see the master's log)"
            )
        return cloud_part(without(whole, rec.exclude)), self.packages.get(rec.package)
