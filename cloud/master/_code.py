"""The code of the master's topologies: packages stored by their hash, unpacked once, and the
skeletons their files describe.

A package comes from a submission or an edit: untrusted, so it is checked before it is kept
(the caller's ``check_package``) and one kept for a refused request alone is deleted again
(``drop``), unless another request is loading it meanwhile (``holding``) or a running
topology took it after all (``in_use``). With a blob store the masters share
(``--blob-store``), a package is kept there before the request that brought it goes on
(``kept``: a request answered has its package there), a package missing here is fetched
from it (``fetched``: checked, then kept here), and a dropped one is deleted there too,
on a thread (the event loop never waits on the network). The master never runs a submitted
file itself: a child process loads it, bounded in time and memory (``load_isolated``) and in
number (``MAX_CHILD_LOADS`` at once, the others wait), and what is kept is
the topology's description as a skeleton, per (package, entry): those of every running
topology's revisions, since its topology master may need an older revision's plan at any
time (``load_revision``).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from headwater.common._exceptions import HeadwaterError, TopologyLoadError
from headwater.common._package import PackageStore, entry_problem, package_hash, unpack_package
from headwater.common.api import Topology
from headwater.common.control._revisions import EditError, RevisionLog, RevisionRecord, without
from headwater.common.plan import cloud_part
from headwater.common.plan._child_loader import LoadLimits, load_isolated
from headwater.common.plan._package_index import index_isolated
from headwater.common.statemgr import Blobs, Record, StateManager

log = logging.getLogger("headwater.master")
Key = tuple[str, str]
"""(package digest, entry file)"""
MAX_INDEXES = 32  # the packages' indexes kept (the console's files view asks again)
MAX_CHILD_LOADS = 4
"""The most child processes loading user code at once (each may take 1 GiB for 30 s): a
storm of previews or submissions waits its turn instead of exhausting the master's host."""


@asynccontextmanager
async def _relative_to(folder: Path) -> AsyncIterator[None]:
    """A load's error names the package's files as the package does (``steps.py``), not
    where the master unpacked them (its state folder)."""
    try:
        yield
    except TopologyLoadError as exc:
        text = str(exc).replace(f"{folder.resolve()}/", "").replace(f"{folder}/", "")
        raise TopologyLoadError(text) from exc


class PackageDeletes:
    """Packages deleted here at once and from the shared blob store on a thread (the event
    loop never waits on the network), each decided on the event loop; a keep of the same
    bytes that comes after the decision waits until the delete is done (``settled``), so it
    never finds the package in the shared store just before the delete takes it."""

    def __init__(self, packages: PackageStore) -> None:
        self.packages = packages
        self._running: dict[str, asyncio.Future[None]] = {}

    def start(self, digest: str) -> None:
        """Delete ``digest`` here, then from the shared store (on a thread; at once when
        there is no event loop)."""
        self.packages.delete_here(digest)
        if self.packages.shared is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # nothing waits on this thread
            self.packages.delete_shared(digest)
            return
        deleting = loop.run_in_executor(None, self.packages.delete_shared, digest)
        self._running[digest] = deleting

        def done(f: asyncio.Future[None]) -> None:
            if self._running.get(digest) is f:
                del self._running[digest]
            if not f.cancelled() and f.exception() is not None:
                log.warning("package %s was not deleted: %s", digest[:19], f.exception())

        deleting.add_done_callback(done)

    async def settled(self, digest: str) -> None:
        """Once no delete of ``digest`` is running."""
        while (deleting := self._running.get(digest)) is not None:
            await asyncio.wait({deleting})


class TopologyCode:
    def __init__(
        self,
        state_dir: Path,
        limits: LoadLimits,
        in_use: Callable[[str], bool],
        shared: Blobs | None = None,
    ) -> None:
        """``in_use(digest)``: whether a running topology runs that package (never dropped);
        ``shared``: the blob store the masters share (None: packages on this disk alone)."""
        self.packages = PackageStore(state_dir / "packages", shared)
        self._code = state_dir / "code"
        self._limits = limits
        self._in_use = in_use
        self._described: dict[Key, Topology] = {}
        self._indexes: dict[Key, dict[str, Any]] = {}
        self._loading: Counter[str] = Counter()  # packages a request is loading
        self._orphans: set[str] = set()  # refused packages to delete once no request loads them
        self.deletes = PackageDeletes(self.packages)  # dropped ones, deleted on a thread
        self._children = asyncio.Semaphore(MAX_CHILD_LOADS)

    # -- packages ----------------------------------------------------------------
    @asynccontextmanager
    async def kept(self, data: bytes) -> AsyncIterator[tuple[str, bool]]:
        """A checked package kept for a request, and held while the request runs: (its
        name, whether it is new: neither here nor in the shared store before). Kept in the
        shared store before this yields (on a thread); a store that fails raises its
        ``StateError`` and nothing new is kept. A request that fails drops a new package."""
        digest = package_hash(data)
        with self.holding(digest):
            await self.deletes.settled(digest)  # a drop of the same bytes ends first
            digest, fresh = await asyncio.to_thread(self.packages.keep, data)
            try:
                yield digest, fresh
            except BaseException:
                if fresh:
                    self.drop(digest)  # once the last request holding it is done
                raise

    async def fetched(self, digest: str) -> None:
        """Have the package here: fetched from the shared store (on a thread, checked) when
        it is missing; HeadwaterError saying where it was looked for when neither has it."""
        if self.packages.has(digest):
            return
        try:
            await asyncio.to_thread(self.packages.fetch, digest)
        except KeyError:
            shared = self.packages.shared
            raise HeadwaterError(
                f"package {digest} is not in this master's package store (packages stay on "
                "the disk of the master that took them unless the masters share a --blob-store)"
                if shared is None
                else f"package {digest} is neither in this master's package store nor in "
                f"{shared.describe()}"
            ) from None

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
        log.info("deleting package %s of a refused request", digest[:19])
        self.deletes.start(digest)

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
        await self.fetched(package)
        folder = self.unpack(package)
        async with self._children, _relative_to(folder):
            return await load_isolated(folder, entry, self._limits)

    async def logical(self, package: str, entry: str) -> Topology:
        """What an edit's file defines (every placement, nothing left out); EditError for an
        entry that is not a file of the package."""
        problem = entry_problem(entry)
        if problem is not None:
            raise EditError(problem)
        await self.fetched(package)
        if not (self.unpack(package) / entry).is_file():
            raise EditError(f"the package has no file {entry!r}; send the topology file")
        return await self.load(package, entry)

    async def of_revisions(
        self, name: str, first: Key, topologies: StateManager, whole: Topology | None = None
    ) -> dict[Key, Topology]:
        """The skeletons of the files topology ``name``'s revisions run (its history is under
        ``topologies``, the state seen there; ``whole``: its first file's, when just loaded)."""
        described = {first: whole or await self.load(*first)}
        try:
            history = RevisionLog(Record(topologies, f"{name}/revisions.json"))
        except (ValueError, TypeError):
            return described  # its topology master says what is wrong with it
        for rec in history.records:
            key = (rec.package, rec.entry)
            if key not in described:
                try:
                    described[key] = await self.load(*key)
                except HeadwaterError as exc:
                    log.warning("revision %d of %r does not load: %s", rec.revision, name, exc)
        return described

    async def index(self, package: str, entry: str) -> dict[str, Any]:
        """Where each component's code is and the palette (``_package_index``), loaded in a
        child once per (package, entry)."""
        key = (package, entry)
        if key not in self._indexes:
            await self.fetched(package)
            folder = self.unpack(package)
            async with self._children, _relative_to(folder):
                found = await index_isolated(folder, entry, self._limits)
            while len(self._indexes) >= MAX_INDEXES:
                del self._indexes[next(iter(self._indexes))]
            self._indexes[key] = found
        return self._indexes[key]

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
