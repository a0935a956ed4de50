"""Names users give things: node ids (``--id``), topology and component names.

They appear in file and folder names, MQTT client ids, logs and URLs
(``DELETE /api/v1/nodes/ID``, ``/api/v1/topologies/NAME``), so they are kept
to a safe alphabet and never ``.`` or ``..`` (a folder name that climbs),
checked by the CLI and by the master.
"""

from __future__ import annotations

import re

_SAFE = re.compile(r"[A-Za-z0-9._-]{1,64}")
NAME_RULE = "use 1 to 64 letters, digits, '.', '_' or '-', and not '.' or '..' alone"
NODE_ID_RULE = NAME_RULE


NODE_ENTRIES = frozenset(
    {
        "tls",
        "packages",
        "ingest",
        "orders.json",
        "orders.tmp",
        "node-id",
        "node.lock",
        "node-id.tmp",
        "spark",  # its Spark jobs' folders (common/node/_spark_jobs.py)
        "landing",  # a worker's default --landing and --warehouse
        "warehouse",
    }
)
"""What a node keeps in its workdir beside its topologies' folders (``WORKDIR/TOPOLOGY``):
never a topology's name, or killing it would delete the node's key or ingest log."""


def name_problem(text: str, what: str = "name") -> str | None:
    """Why ``text`` is not a safe name (``what`` says of what), or None if it is one.

    A topology's or a Spark job's name may not be one of ``NODE_ENTRIES`` either (a
    worker makes its user's home in ``WORKDIR/NAME``)."""
    if what in ("topology name", "Spark job name") and text in NODE_ENTRIES:
        return f"{text!r} is not a {what}: nodes keep their own {text!r} beside topologies"
    if _SAFE.fullmatch(text) and text not in (".", ".."):
        return None
    return f"{text!r} is not a {what}: {NAME_RULE}"


def node_id_problem(text: str) -> str | None:
    """Why ``text`` is not a node id, or None if it is one."""
    return name_problem(text, "node id")
