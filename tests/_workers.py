"""The suite runs on several pytest-xdist workers (``scripts/test``, docs/testing.md).

Tests are independent: each has its own state dir, loopback ports picked free, its own
Docker networks and compose project. The few that bind the daemons' default ports (the
README's commands as written, the compose cluster published on the host) share one
group, which xdist's ``--dist loadgroup`` runs on one worker, one after the other.
"""

from __future__ import annotations

import pytest

DEFAULT_PORTS = pytest.mark.xdist_group("default-ports")
