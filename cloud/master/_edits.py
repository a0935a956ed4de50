"""Live edits: a running topology's edit validated, loaded and handed to its topology master.

An edit (attach, replace, remove, rollback, or a replace that only changes
parallelism) names the revision it was made against (``base``); one made
against an older revision is refused (``StaleRevisionError``), as is one that
is not valid (``EditError``), and nothing changes. The files are loaded in
child processes, awaited, as a submission's are; a package sent for a refused
edit alone is deleted again. An edit that touches the edge is recorded on the
deployment (``edge_revision``) and sent to every agent that runs its edge
subgraph; one offline gets it when it re-attaches (``_node_orders.py``). A move's is sent
once the cloud has switched to it (``_after_cloud``), since the cloud may refuse it.

The console edits a package in place: an edit may send only the files it changes, laid over
the base revision's package, and a dry run answers the edit's preview (its plan diff) after
the same loading and checks, proposing nothing; ``files`` lists a revision's package with
where each component's code is and the palette (``_package_index``, loaded in a child).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from headwater.common._exceptions import HeadwaterError, PackageRefusedError, TopologyLoadError
from headwater.common._package import check_package
from headwater.common._package_overlay import overlay_package, package_listing
from headwater.common.control import TopologyMaster
from headwater.common.control._moves import switch_not_built
from headwater.common.control._revisions import (
    EditError,
    NotBuiltError,
    RevisionRecord,
    StaleRevisionError,
    check_edit,
    plan_diff,
    touches_edge,
    without,
)
from headwater.common.plan import cloud_part
from headwater.common.plan._package_parallelism import package_with_parallelism
from headwater.common.wire._states import RevisionStatus

from ._code import TopologyCode
from ._deployments import Deployments, Send, revise_order, topology_name_problem

EDIT_ACTIONS = ("attach", "replace", "remove", "rollback")


class Edits:
    """Edits of running topologies (on the master's event loop)."""

    def __init__(self, code: TopologyCode, book: Deployments, send: Send) -> None:
        """``send``: an order to a node (the agents that run an edited edge subgraph)."""
        self.code = code
        self.packages = code.packages
        self.book = book
        self.send = send
        self._moves: set[asyncio.Task[None]] = set()  # moves waiting for the cloud's switch

    async def edit(
        self,
        name: str,
        action: str,
        base: int,
        data: bytes | None = None,
        entry: str | None = None,
        components: list[str] | None = None,
        author: str = "",
        to: int | None = None,
        parallelism: dict[str, int] | None = None,
        reason: str = "",
        files: dict[str, str | None] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Validate an edit of a running topology and start applying it.

        ``action`` is attach, replace or remove (``data``: the package as it now
        is; a remove may leave it out and name the components) or rollback
        (``to``: the revision whose code to run again); a replace with ``parallelism``
        (component -> instances) and no package runs the current code at that parallelism;
        ``reason``: why it was made, kept on the revision (the health manager's). Raises
        StaleRevisionError when ``base`` is not the current revision and
        EditError when the edit is not valid; either way nothing changes (a
        package sent for a refused edit alone is deleted again). The files are
        loaded in child processes, awaited, as a submission's are.

        ``files`` ({path: new text, or None to delete}): the package is the base revision's
        with those files changed (``overlay_package``), as the console's editor sends it.
        ``dry_run``: validate only and answer the preview (``plan_diff``), changing nothing.
        """
        problem = topology_name_problem(name)
        if problem is not None:
            raise EditError(problem)
        if action not in (*EDIT_ACTIONS, "move"):  # a move comes from its route (_moves.py)
            raise EditError(
                f"action {action[:40]!r}: name the edit with ?action=attach, replace, remove "
                "or rollback"
            )
        if action == "rollback" and (data or files is not None or parallelism):
            raise EditError(
                "a rollback sends no package: it runs the code of the revision it names (?to=REV)"
            )
        if files is not None:
            if data or parallelism:
                raise EditError("send the changed files, a zip or a parallelism: one of them")
            data, entry = await self._overlaid(name, base, files, entry)
        if parallelism:
            data, entry, components = await self._rescaled(name, action, base, data, parallelism)
        by = (author, reason, dry_run)
        if data:
            check_package(data)
            async with self.code.kept(data) as (digest, fresh):
                result = await self._edit(name, action, base, digest, entry, components, by, to)
                if dry_run and fresh:
                    self.code.drop(digest)  # a preview keeps nothing
            return result
        return await self._edit(name, action, base, None, entry, components, by, to)

    async def _overlaid(
        self, name: str, base: int, files: dict[str, str | None], entry: str | None
    ) -> tuple[bytes, str]:
        """The base revision's package with ``files`` changed, and its topology file."""
        tm = self.book.running(name)
        if base != tm.current:
            raise StaleRevisionError(base, tm.current)
        cur = tm.revisions[tm.current].record
        try:  # a package may be tens of MiB: re-zipped off the event loop
            data = await asyncio.to_thread(overlay_package, self.packages.get(cur.package), files)
        except PackageRefusedError as exc:
            raise EditError(str(exc)) from None
        return data, entry or cur.entry

    async def files(self, name: str, revision: int | None = None) -> dict[str, Any]:
        """The files of a revision's package (the current one's by default), where each
        component's code is and the palette (``_package_index``); EditError for a revision
        the topology never had."""
        tm = self.book.running(name)
        rec = tm.revlog.find(tm.current if revision is None else revision)
        if rec is None:
            raise EditError(
                f"topology {name!r} has no revision {revision}: GET .../revisions lists them"
            )
        listing = await asyncio.to_thread(package_listing, self.packages.get(rec.package))
        try:
            index, problem = await self.code.index(rec.package, rec.entry), ""
        except HeadwaterError as exc:
            index, problem = {"defined": {}, "palette": []}, str(exc)
        return {
            "topology": name,
            "revision": rec.revision,
            "current": tm.current,
            "entry": rec.entry,
            "package": rec.package,
            "exclude": list(rec.exclude),
            "files": listing,
            **index,
            "index_error": problem,
        }

    async def _rescaled(
        self, name: str, action: str, base: int, data: bytes | None, parallelism: dict[str, int]
    ) -> tuple[bytes, str, list[str]]:
        """A replace that changes only parallelism: the current package with those
        components' parallelism set beside its file (``_package_parallelism``)."""
        if action != "replace" or data:
            raise EditError(
                "parallelism goes with a replace that sends no file (a new file says its own)"
            )
        tm = self.book.running(name)
        if base != tm.current:
            raise StaleRevisionError(base, tm.current)
        cur = tm.revisions[tm.current].record
        whole = self.code.described(cur.package, cur.entry)
        running = {c.name: c.parallelism for c in whole.components} if whole is not None else {}
        unknown = sorted(set(parallelism) - set(running))
        if whole is not None and unknown:
            raise EditError(f"topology {name!r} has no component {', '.join(unknown)}")
        if whole is not None and all(running[c] == n for c, n in parallelism.items()):
            runs = ", ".join(f"{c} {n}" for c, n in sorted(parallelism.items()))
            raise EditError(f"that is the parallelism running now ({runs}): nothing to change")
        try:  # a package may be tens of MiB: re-zipped off the event loop
            data = await asyncio.to_thread(
                package_with_parallelism, self.packages.get(cur.package), cur.entry, parallelism
            )
        except TopologyLoadError as exc:
            raise EditError(str(exc)) from None
        return data, cur.entry, sorted(parallelism)

    async def _edit(
        self,
        name: str,
        action: str,
        base: int,
        sent: str | None,
        entry: str | None,
        components: list[str] | None,
        by: tuple[str, str, bool],  # (author, reason, dry run)
        to: int | None,
    ) -> dict[str, Any]:
        author, reason, dry_run = by
        tm = self.book.running(name)
        if base != tm.current:
            raise StaleRevisionError(base, tm.current)
        components = list(components or [])
        cur = tm.revisions[tm.current].record
        if action == "rollback":
            target = tm.revlog.find(to or 0)
            if target is None or target.status not in ("applied",):
                raise EditError(
                    f"revision {to} was never applied; `headwater revisions "
                    f"{name}` lists the ones a rollback can return to"
                )
            digest, entry, exclude = target.package, target.entry, list(target.exclude)
            if (digest, entry, set(exclude)) == (cur.package, cur.entry, set(cur.exclude)):
                raise EditError(
                    f"revision {to} runs the code running now (revision {tm.current}): "
                    f"nothing to roll back; `headwater revisions {name}` lists the others"
                )
        elif sent is not None:
            digest, entry = sent, entry or cur.entry
            exclude = list(cur.exclude)  # those the new file still has stay out
        elif action == "remove":
            digest, entry, exclude = cur.package, cur.entry, list(cur.exclude)
        else:
            raise EditError(f"{action} needs the topology file as it should now be")
        try:
            old = without(await self.code.logical(cur.package, cur.entry), cur.exclude)
            new_file = await self.code.logical(digest, entry)
        except HeadwaterError as exc:
            raise EditError(f"the edited topology does not load: {exc}") from exc
        if self.book.tms.get(name) is not tm:
            raise HeadwaterError(f"topology {name!r} was killed while the edit was loading")
        names = {c.name for c in new_file.components}
        exclude = [x for x in exclude if x in names]
        if action == "remove":
            exclude += [c for c in components if c in names and c not in exclude]
        new = without(new_file, exclude)
        diff = check_edit(action, components if action != "rollback" else (), old, new)
        # a move checks out, but is its switch built? (the preview says so too: a 501 ahead)
        problem = switch_not_built(old, new, diff.replaced) if action == "move" else None
        if dry_run:
            preview = {
                "dry_run": True,
                "action": action,
                "base": base,
                "package": digest,
                "entry": entry,
                "diff": plan_diff(old, new, diff),
            }
            return {**preview, "not_built": problem} if action == "move" else preview
        if problem is not None:
            raise NotBuiltError(problem)
        cloud = cloud_part(new)
        cloud_names = {c.name for c in cloud.components}
        record = RevisionRecord(
            0,
            action,
            digest,
            entry,
            exclude,
            author,
            time.time(),
            diff.to_dict(),
            {},
            reason=reason,
        )
        replaced = tuple(n for n in diff.replaced if n in cloud_names)
        tm.propose(record, cloud, self.packages.get(digest), base, replaced)
        self.code.remember({(digest, entry): new_file})
        edge = {
            "revision": record.revision,
            "action": action,
            "package": digest,
            "entry": entry,
            "exclude": exclude,
            "author": author,
        }
        if action == "move":  # the agents once the cloud has its hand-over bolt
            self._moves.add(asyncio.create_task(self._after_cloud(name, tm, edge)))
        elif touches_edge(old, new, diff):
            self._order_agents(name, edge)
        return record.view()

    def _order_agents(self, name: str, edge: dict[str, Any]) -> None:
        """Record the edge revision on the deployment and send it to its agents."""
        dep = self.book.deployments[name]
        dep.edge_revision = edge
        self.book.save()
        for agent in dep.agents:  # one offline gets it when it re-attaches
            self.send(agent, revise_order(dep))

    async def _after_cloud(self, name: str, tm: TopologyMaster, edge: dict[str, Any]) -> None:
        """A move's agents switch only once the cloud has (the cloud may refuse it and roll
        back, and an agent switched to a placement the cloud does not receive would keep its
        rows in its outbox); a master stopped in between leaves them where they are, which
        the cloud's hand-over bolt serves as well (a move again sends them on)."""
        try:
            while self.book.tms.get(name) is tm:
                rec = tm.revlog.find(edge["revision"])
                if rec is None or rec.status is not RevisionStatus.APPLYING:
                    if rec is not None and rec.status is RevisionStatus.APPLIED:
                        self._order_agents(name, edge)
                    return
                await asyncio.sleep(0.05)
        finally:
            self._moves.discard(asyncio.current_task())
