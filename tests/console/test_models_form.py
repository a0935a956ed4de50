"""The models page's rollout form reads its canary field as the CLI's ``--canary`` does,
and a canary it cannot read is refused on the page, never dropped (a rollout without its
canary would go to every agent at once). Run in Node on the page's own module."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import headwater

MODELS_JS = Path(headwater.__file__).parent / "common" / "console" / "static" / "models.js"


def test_the_canary_field_reads_as_the_cli_and_a_malformed_one_is_none() -> None:
    texts = ["site=a", " site = a , tier=b ", "site0", "site=", "=a", "site=a,", "k=a=b"]
    script = (
        f"import {{ selectorOf }} from {json.dumps(MODELS_JS.as_uri())};\n"
        f"console.log(JSON.stringify({json.dumps(texts)}.map(selectorOf)));"
    )
    got = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(got.stdout) == [
        {"site": "a"},
        {"site": "a", "tier": "b"},
        None,
        None,
        None,
        None,
        {"k": "a=b"},
    ]
