"""docs/live-edits.md's "Change it while it runs" block, run as written on a master and a
worker."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from ._daemons import Daemons
from ._support import committed_rows, wait_for

pytestmark = pytest.mark.cluster
ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "live-edits.md"
HEADING = "# Change it while it runs"


def readme_commands() -> list[list[str]]:
    """The commands of the block's first ```sh fence, comments dropped."""
    text = DOC.read_text()
    section = text[text.index(HEADING) :]
    block = section[section.index("```sh\n") + 6 :]
    block = block[: block.index("```")]
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


def test_the_readme_live_edit_commands_run_as_written(daemons: Daemons, tmp_path: Path) -> None:
    commands = readme_commands()
    assert [c[:2] for c in commands] == [
        ["headwater", "submit"],
        ["headwater", "attach"],
        ["headwater", "replace"],
        ["headwater", "replace"],
        ["headwater", "remove"],
        ["headwater", "rollback"],
        ["headwater", "revisions"],
        ["headwater", "read"],
    ]
    shutil.copytree(ROOT / "examples" / "editable", tmp_path / "examples" / "editable")
    out = tmp_path / "editable-out"  # ./editable-out of the commands run in tmp_path
    daemons.start_master()
    daemons.start_worker("w1", {"EDITABLE_OUT": str(out)})
    wait_for(lambda: any(n["online"] for n in daemons.api("/api/v1/nodes")), 30, "a worker")
    env = {**os.environ, "HEADWATER_MASTER": daemons.http, "HEADWATER_TOKEN": daemons.token}

    def run(args: list[str]) -> str:
        res = subprocess.run(
            [sys.executable, "-m", "headwater", *args[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert res.returncode == 0, f"{shlex.join(args)}: {res.stdout}{res.stderr}"
        return res.stdout

    submit, *edits, revisions, read = commands
    run(submit)
    wait_for(lambda: committed_rows(out / "counter"), 60, "the first committed rows")
    for args in edits:
        assert "applied" in run(args), shlex.join(args)
    history = daemons.api("/api/v1/topologies/editable/revisions")["revisions"]
    assert [(r["revision"], r["status"]) for r in history] == [(i, "applied") for i in range(1, 7)]
    listed = run(revisions).splitlines()
    assert listed[0] == "current revision: 6"
    assert [line.split()[:2] for line in listed[1:]] == [[str(i), "applied"] for i in range(1, 7)]
    assert run(read).count("\n") == 10

    def versions() -> list[int]:  # the counter versions in seq order, each run once
        ordered = [r[3] for r in sorted(committed_rows(out / "counter"), key=lambda r: r[1])]
        return [v for i, v in enumerate(ordered) if i == 0 or v != ordered[i - 1]]

    wait_for(lambda: versions() == [1, 2, 1], 60, "rows of version 1 again after the rollback")
    rows = committed_rows(out / "counter")
    seqs = sorted(r[1] for r in rows)
    assert seqs == list(range(len(seqs))), "a record missing or counted twice"
    by_key: dict[str, list[int]] = defaultdict(list)
    for key, _, count, _ in sorted(rows, key=lambda r: r[1]):
        by_key[key].append(count)
    assert sorted(by_key) == ["k0", "k1", "k2", "k3"]
    for key, counts in by_key.items():
        assert counts == list(range(1, len(counts) + 1)), f"{key}: counted {counts}"
    tapped = [r[1] for r in committed_rows(out / "tap_1")]
    assert tapped and len(tapped) == len(set(tapped)), "the tap passed a record on twice"
