"""Live edits: a running topology's edit validated, loaded and handed to its topology master.

An edit (attach, replace, remove, rollback, or a replace that only changes
parallelism) names the revision it was made against (``base``); one made
against an older revision is refused (``StaleRevisionError``), as is one that
is not valid (``EditError``), and nothing changes. The files are loaded in
child processes, awaited, as a submission's are; a package sent for a refused
edit alone is deleted again. An edit that touches the edge is recorded on the
deployment (``edge_revision``) and sent to every agent that runs its edge
subgraph; one offline gets it when it re-attaches (``_node_orders.py``).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from headwater.common._exceptions import HeadwaterError, TopologyLoadError
from headwater.common._package import check_package
from headwater.common.control._revisions import (
    EditError,
    RevisionRecord,
    StaleRevisionError,
    check_edit,
    touches_edge,
    without,
)
from headwater.common.plan import cloud_part
from headwater.common.plan._package_parallelism import package_with_parallelism

from ._code import TopologyCode
from ._deployments import Deployments, Send, revise_order, topology_name_problem


class Edits:
    """Edits of running topologies (on the master's event loop)."""

    def __init__(self, code: TopologyCode, book: Deployments, send: Send) -> None:
        """``send``: an order to a node (the agents that run an edited edge subgraph)."""
        self.code = code
        self.packages = code.packages
        self.book = book
        self.send = send

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
        """
        problem = topology_name_problem(name)
        if problem is not None:
            raise EditError(problem)
        if parallelism:
            data, entry, components = await self._rescaled(name, action, base, data, parallelism)
        if data:
            check_package(data)
            digest, fresh = self.code.store(data)
            try:
                with self.code.holding(digest):
                    return await self._edit(
                        name, action, base, digest, entry, components, (author, reason), to
                    )
            except BaseException:
                if fresh:
                    self.code.drop(digest)
                raise
        return await self._edit(name, action, base, None, entry, components, (author, reason), to)

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
        by: tuple[str, str],  # (author, reason)
        to: int | None,
    ) -> dict[str, Any]:
        author, reason = by
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
        if touches_edge(old, new, diff):
            dep = self.book.deployments[name]
            dep.edge_revision = {
                "revision": record.revision,
                "action": action,
                "package": digest,
                "entry": entry,
                "exclude": exclude,
                "author": author,
            }
            self.book.save()
            for agent in dep.agents:  # one offline gets it when it re-attaches
                self.send(agent, revise_order(dep))
        return record.view()
