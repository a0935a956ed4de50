"""Node ids: what a user may name a worker or an agent (``--id``).

Ids appear in file names, MQTT client ids, logs and URLs (``DELETE
/api/v1/nodes/ID``), so they are kept to a safe alphabet, checked by the CLI
and by the master when a node attaches.
"""

from __future__ import annotations

import re

NODE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
NODE_ID_RULE = "use 1 to 64 letters, digits, '.', '_' or '-'"


def node_id_problem(text: str) -> str | None:
    """Why ``text`` is not a node id, or None if it is one."""
    return None if NODE_ID.fullmatch(text) else f"{text!r} is not a node id: {NODE_ID_RULE}"
