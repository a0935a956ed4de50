"""The console of ``headwater run``: its topology master serves the page, without live edits.

A real ``headwater run`` of the word count example (two containers); the page,
logged in with the token the run keeps beside its record (an operator's),
shows the topology with every component in the cloud band and rates that
move, and no edit control: only the master makes live edits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from selenium import webdriver

from .._wait import wait_for
from ..integration._support import EXAMPLES
from ._page import Page
from .conftest import SCREENSHOTS

pytestmark = pytest.mark.cluster


def test_headwater_run_serves_the_console_without_edits(
    browser: webdriver.Chrome, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    env = {
        **os.environ,
        "HEADWATER_STATE_DIR": str(state),
        "WORDCOUNT_OUTPUT": str(tmp_path / "out"),
        "WORDCOUNT_RATE": "0",
    }
    (tmp_path / "out").mkdir()
    with open(tmp_path / "run.log", "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headwater",
                "run",
                str(EXAMPLES / "iot" / "wordcount.py"),
                "--containers",
                "2",
                "--quiet",
                "--workdir",
                str(tmp_path / "work"),
            ],
            env=env,
            stdout=log,
            stderr=log,
        )
    try:
        record = wait_for(
            lambda: next((json.loads(f.read_text()) for f in state.glob("*.json")), None),
            60,
            "the run's record",
        )
        page = Page(browser, record["http"], SCREENSHOTS)
        page.open()
        page.login(Path(record["token_file"]).read_text().strip())
        assert page.text("#who").startswith("operator")
        page.go("#/topology/wordcount")
        for name in ("lines", "split", "count"):
            page.find(f'g.component[data-component="{name}"][data-side="cloud"]')
        assert page.count('g.component[data-side="edge"]') == 0
        wait_for(lambda: page.rates("split")[0] > 0, 30, "split's rate in")
        assert page.count("#edit-panel") == 0  # an operator, but this server makes no edits
        # its topology master activates and deactivates; only the master kills
        assert page.count("#topology-activate, #topology-deactivate") == 2
        assert page.count("#topology-kill") == 0
        page.go("#/revisions/wordcount")
        page.find('tr[data-revision="1"]')
        assert page.count("button.rollback") == 0
    finally:
        proc.terminate()
        proc.wait(30)
