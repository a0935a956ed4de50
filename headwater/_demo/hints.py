"""What ``headwater demo`` tells its user besides the figures: where to look (every URL a
real route of the master, with how to log in), the sensor that is broken on purpose, and
why its dead letters died (their reasons, counted).
"""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from pathlib import Path

from headwater.common.connectors import manifests

TOPOLOGY = "iot"
# a sensor with a broken firmware, on site1: every BROKEN_EVERY-th tick of the sensors' clock
BROKEN_TOPIC = "sensors/site1/broken"
BROKEN_PAYLOAD = b'{"site": "site1", "value": "hot"}'
BROKEN_EVERY = 16
BROKEN_REASON = "missing field 'sensor'"  # what the example's parse step says of it
SHOWN_REASONS = 3  # the commonest reasons a dead-letter line names


def console_token(http: str, admin_token: str) -> str:
    """An operator token for the web console (live edits, no tokens or uploads), made with
    the master's admin token through its API, as ``headwater token create`` does."""
    body = {"role": "operator", "description": "headwater demo: the web console"}
    req = urllib.request.Request(
        f"{http}/api/v1/tokens",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {admin_token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return str(json.loads(r.read())["token"])


def where_to_look(http: str, console: str, admin_file: Path) -> list[str]:
    """The start-up lines that name the console and the master's API, each URL in full."""
    topology = f"{http}/api/v1/topologies/{TOPOLOGY}"
    return [
        f"  web console: {http}/ (log in with the operator token {console})",
        f"  master API: {topology} (also {topology}/metrics, {topology}/checkpoints)",
        f"  agents and their backlogs: {http}/api/v1/nodes",
        f"  the API's token (admin): export HEADWATER_TOKEN=$(cat {admin_file})",
    ]


def broken_sensor() -> str:
    """The start-up line that says which sensor is broken on purpose, and what becomes of it."""
    return (
        f"  broken on purpose: {BROKEN_TOPIC} sends {BROKEN_PAYLOAD.decode()} every "
        f"{BROKEN_EVERY} ticks (a firmware bug: no sensor, seq or ts); the edge's parse step "
        f"refuses each such record ({BROKEN_REASON}) and sends it to the dead letters, "
        "so the console shows parse in red with its count"
    )


class DeadLetters:
    """The landing zone's committed dead letters: how many, and why (counted by component
    and reason), read a manifest at a time as they are published."""

    def __init__(self, landing: Path) -> None:
        self.landing = landing
        self.total = 0
        self.reasons: Counter[tuple[str, str]] = Counter()
        self._seq = 0  # the last manifest read

    def update(self) -> None:
        """Read the manifests published since the last call."""
        import pyarrow.parquet as pq

        folder = self.landing / "dead_letters"
        try:
            for doc in manifests(self.landing, "dead_letters", after=self._seq):
                found: Counter[tuple[str, str]] = Counter()
                for f in doc["files"]:
                    table = pq.read_table(folder / f["path"], columns=["component", "reason"])
                    cols = table["component"].to_pylist(), table["reason"].to_pylist()
                    found.update(zip(*cols, strict=True))
                self.reasons.update(found)  # a manifest counts whole or not at all
                self.total += int(doc["rows"])
                self._seq = int(doc["seq"])
        except OSError:
            return  # a file being rolled back: the next call reads that manifest again

    def line(self) -> str:
        """``12 (parse: missing field 'sensor' x12)``: the count, then the commonest reasons."""
        if not self.reasons:
            return str(self.total)
        common = self.reasons.most_common(SHOWN_REASONS)
        why = [f"{component}: {reason} x{n}" for (component, reason), n in common]
        rest = self.total - sum(n for _, n in common)
        if rest > 0:
            why.append(f"{rest} other")
        return f"{self.total} ({'; '.join(why)})"
