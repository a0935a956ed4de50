"""The streams of a move's fences (issue 37): an agent's fence row in its outbox, and the
receiver's fence to every task of the moved component's cloud copy. The plan wires them
(``_domains.cloud_part``); the runtime seals, checks and takes them (``runtime/_fence.py``).
"""

FENCE_STREAM = "__fence__"
"""The fence row's stream in an agent's outbox."""
FENCE_FIELDS = ("revision", "checkpoint", "site", "state", "error", "to")
"""A fence row's values: the move's revision, E_a, the agent's site, the state that moves
(or None), why it could not (or ""), and where the moved component runs for the agent's
rows after it (``edge`` or ``cloud``)."""
FENCE_OUT = "__move_fence__"
"""The receiver's fence, to every task of the moved component's cloud copy."""
FENCE_OUT_FIELDS = ("agent", *FENCE_FIELDS)
FENCE_FOR = "headwater.fence"
"""An agent's outbox sink's config, where a component reading its stream moves and its rows
are fenced: ``[component, sites field ("" without one), where it goes]``. Moving to the
cloud, the sink's first row after the switch is the fence (with the component's state);
to the edge, its last before it."""
MOVE_PREFIX = "__move__"
"""The streams the moved component's cloud copy reads instead of the crossing ones, where
the cloud also reads them (the receiver's split at each agent's fence)."""
