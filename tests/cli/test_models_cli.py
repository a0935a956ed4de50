"""`headwater models rollout|rollouts|register`: bad waves and guards are usage errors saying
what to write (before any request), as are register's bad metadata and a master that is no
URL; and a rollout's watches print with their guard values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from headwater import _cli
from headwater._models_cli import _follow, _stages
from headwater.common._exceptions import HeadwaterError


def _usage(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as ended:
        _cli.main(["models", "rollout", "m", "1", "--topology", "t", "--component", "c", *args])
    assert ended.value.code == 2
    return capsys.readouterr().err.splitlines()[-1]


def test_bad_waves_and_guards_say_what_to_write(capsys: pytest.CaptureFixture[str]) -> None:
    assert _usage(capsys, "--waves", "10,50") == (
        "headwater models rollout: error: argument --waves: --waves '10,50': the last wave "
        "must be 100 (everyone): waves are cumulative percentages of the agents, the last "
        "100, e.g. 10,50,100"
    )
    said = _usage(capsys, "--guard", "p99 < 5")
    assert said.startswith("headwater models rollout: error: argument --guard: 'p99 < 5' is not")
    assert said.endswith("e.g. errors<=0, score_us/scored<=500, out_of_range/scored<=0.01")


def test_watches_print_with_their_guard_values() -> None:
    rollout: dict[str, Any] = {
        "stages": [
            {
                "stage": "wave 1 (50%)",
                "agents": ["gw-a"],
                "guards": [
                    {"guard": "errors<=0", "value": 0.0, "ok": True},
                    {"guard": "score_us/scored<=500", "value": 812.5, "ok": False},
                ],
                "verdict": "score_us/scored 812.500 above 500",
                "ok": False,
            }
        ]
    }
    assert _stages(rollout) == [
        "wave 1 (50%) on gw-a: score_us/scored 812.500 above 500; errors 0 (ok), "
        "score_us/scored 812.5 (out of bounds)"
    ]
    assert _stages({"figures": {}}) == []  # a record an older master kept


def test_register_checks_its_meta_and_the_master_url_before_any_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"model")
    (tmp_path / "big.json").write_text(json.dumps({"notes": '"' * 3000}))

    def said(*args: str) -> str:
        code = _cli.main(["models", "register", str(model), "--name", "m", *args])
        assert code == 2
        return capsys.readouterr().err.strip()

    # an object over the registry's bound is refused here, not by the master's URL parser
    big = said("--meta", f"@{tmp_path / 'big.json'}", "--master", "http://127.0.0.1:1")
    assert big.startswith("headwater: error: meta is 6012 bytes of JSON, over the registry's 2048")
    assert said("--meta", "[1]", "--master", "http://127.0.0.1:1") == (
        'headwater: error: --meta must be a JSON object, e.g. {"dataset": "orders 2026-11", '
        '"auc": 0.91}'
    )
    assert said("--meta", "{bad", "--master", "http://127.0.0.1:1").startswith(
        "headwater: error: --meta is not JSON: give a JSON object"
    )
    assert said("--master", "not a url", "--token", "t") == (
        "headwater: error: the master 'not a url' is not a URL: give http(s)://HOST:PORT, "
        "e.g. --master http://127.0.0.1:7071"
    )


def test_following_a_rollout_the_master_no_longer_has_says_so() -> None:
    running = {"id": 7, "phase": "canary", "steps": [], "waves": [100]}

    class Lost:
        def call(self, method: str, path: str) -> list[dict[str, Any]]:
            assert (method, path) == ("GET", "/api/v1/models/m/rollouts")
            return [{**running, "id": 6}]

    with pytest.raises(HeadwaterError) as said:
        _follow(Lost(), "m", running, False, 0.0)  # type: ignore[arg-type]
    assert str(said.value) == (
        "rollout 7 is no longer in the master's records; see `headwater models rollouts m`"
    )
