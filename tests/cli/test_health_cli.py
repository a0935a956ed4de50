"""`headwater health`: bad policy options are usage errors saying what to give (before any
request), an unreachable master is one line, and a report prints as an operator reads it."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from headwater import _cli
from headwater._health_cli import describe, policy_body
from headwater._master_client import Client


def _usage(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as ended:
        _cli.main(["health", "t", *args])
    assert ended.value.code == 2
    return capsys.readouterr().err.splitlines()[-1]


def test_bad_options_say_what_to_give(capsys: pytest.CaptureFixture[str]) -> None:
    said = _usage(capsys, "--mode", "fast")
    assert "argument --mode: invalid choice: 'fast'" in said and "'recommend'" in said
    assert "argument --min" in _usage(capsys, "--min", "0")
    said = _usage(capsys, "--target-utilization", "1.5")
    assert "argument --target-utilization: must be" in said
    assert "is not a fraction such as 0.7" in _usage(capsys, "--scale-down-cap", "half")
    assert "argument --cooldown" in _usage(capsys, "--cooldown", "-1")


def test_an_unreachable_master_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = _cli.main(["health", "t", "--master", "http://127.0.0.1:9", "--mode", "recommend"])
    assert code != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip()


def test_the_options_make_a_policy_body() -> None:
    ns = argparse.Namespace(
        mode="auto", min=2, max=None, target_utilization=0.6, stabilization=None,
        cooldown=30.0, scale_down_cap=None, blacklist=None,
    )  # fmt: skip
    assert policy_body(ns) == {
        "mode": "auto",
        "min_parallelism": 2,
        "target_utilization": 0.6,
        "cooldown_s": 30.0,
    }


def test_a_report_prints_its_diagnoses_evidence_and_actions() -> None:
    report = {
        "topology": "t",
        "mode": "recommend",
        "policy": {"min_parallelism": 1, "max_parallelism": 8, "target_utilization": 0.7},
        "diagnoses": [
            {
                "kind": "under-provisioned",
                "component": "count",
                "reason": "count is 95% busy",
                "evidence": {"utilization": 0.95},
            }
        ],
        "proposed": [
            {"kind": "rescale", "component": "count", "parallelism": 4, "reason": "keep up"}
        ],
        "taken": [
            {
                "action": {"kind": "restart", "component": "count", "tasks": [3], "reason": "slow"},
                "at": 0,
                "revision": None,
                "outcome": "done",
            },
            {
                "action": {
                    "kind": "rescale",
                    "component": "count",
                    "parallelism": 4,
                    "reason": "r",
                },
                "at": 0,
                "revision": 2,
                "outcome": "applied",
                "rates_before": {"arrival": 200, "processed": 200, "busy": 1.0, "busy_max": 1.0},
                "rates_after": None,
            },
        ],
        "blacklisted": [],
    }
    text = describe(report)
    assert "      rates in 200.0/s, processed 200.0/s, busy 100% (busiest 100%) -> -" in text
    assert text.splitlines()[0] == "topology t: mode recommend"
    assert "  under-provisioned count: count is 95% busy" in text
    assert "      utilization = 0.95" in text
    assert "  rescale count to 4: keep up" in text
    assert "restart count tasks 3: slow" in text
    assert text.endswith("black-listed: none")


def test_a_skew_prints_its_hot_keys_with_their_shares() -> None:
    hot = [
        {"key": "sensor-7", "share": 1.0, "load_share": 0.8},
        {"key": "sensor-2", "share": 0.05},  # a manager of before the load share
    ]
    evidence = {"arrival": 48.0, "load_share": 0.8, "hot_keys": hot}
    report = {
        "diagnoses": [{"kind": "skew", "component": "c", "reason": "r", "evidence": evidence}]
    }
    lines = describe(report).splitlines()
    hot_line = "sensor-7 (80% of the load, 100% of its task's), sensor-2 (5% of its task's)"
    assert f"      hot_keys = {hot_line}" in lines
    assert "      load_share = 0.8" in lines
    report["diagnoses"][0]["evidence"] = {"hot_keys": []}  # none sampled in the last second
    assert "      hot_keys = none sampled" in describe(report).splitlines()


def test_revisions_show_why_the_health_manager_made_one(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = {"time": 0, "author": "health-manager", "hash": "sha256:ab", "diff": {}, "error": ""}
    view = {
        "current": 2,
        "revisions": [
            {**rec, "revision": 1, "status": "applied", "action": "submit", "author": ""},
            {**rec, "revision": 2, "status": "applied", "action": "replace", "reason": "95% busy"},
        ],
    }

    class Fake:
        def call(self, method: str, path: str) -> dict[str, Any]:
            return view

    monkeypatch.setattr(Client, "from_args", lambda args: Fake())
    assert _cli.main(["revisions", "t"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "health-manager" in out[2] and out[3] == "      why: 95% busy"
    assert len(out) == 4  # no reason, no line
