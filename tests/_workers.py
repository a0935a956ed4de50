"""The suite runs on several pytest-xdist workers (``scripts/test``, docs/testing.md).

Tests are independent: each has its own state dir, loopback ports picked free, its own
Docker networks and compose project. The few that bind the daemons' default ports (the
README's commands as written, the compose cluster published on the host) share one
group, which xdist's ``--dist loadgroup`` runs on one worker, one after the other.

A module whose tests share a costly module-scoped fixture (a Spark session, a model
trained once, daemons started once per mode) is a group of its own (``one_worker``):
``--dist loadgroup`` otherwise hands its tests to every worker, and each worker makes the
fixture again (a module's fixture is per process). xdist hands out the groups first,
the largest first, so these long modules also start early.

A process a worker keeps from one test to the next on purpose (the console tests'
Chromium: each start is about 3 s) is named in ``KEPT``: it and what it starts are not a
test's leak (``tests/conftest.py``'s ``no_leaked_processes``).
"""

from __future__ import annotations

import pytest

DEFAULT_PORTS = pytest.mark.xdist_group("default-ports")
KEPT: set[int] = set()  # pids of processes kept across tests, with their descendants


def one_worker(module: str) -> pytest.MarkDecorator:
    """The mark that runs the tests of ``module`` (its ``__name__``) on one worker, so that
    its module-scoped fixtures are made once."""
    return pytest.mark.xdist_group(module)
