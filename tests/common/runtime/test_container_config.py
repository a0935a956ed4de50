"""A container's command line becomes its frozen ``ContainerConfig``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from headwater.common.runtime._container_config import ContainerConfig, parse_config


def test_the_command_line_becomes_a_frozen_config() -> None:
    config = parse_config(
        [
            "--topology-file",
            "t.py",
            "--container",
            "1",
            "--containers",
            "2",
            "--tmaster",
            "127.0.0.1:7000",
            "--workdir",
            "/tmp/w",
            "--state-dir",
            "/tmp/s",
            "--tls-dir",
            "/tmp/tls",
        ]
    )
    assert config == ContainerConfig(
        topology_file="t.py",
        container=1,
        containers=2,
        tmaster="127.0.0.1:7000",
        workdir=Path("/tmp/w"),
        state_dir="/tmp/s",
        tls_dir=Path("/tmp/tls"),
    )
    assert config.transport.secure and config.tmaster_name == "headwater-master"
    assert (config.topology, config.host) == (None, "127.0.0.1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.container = 2  # type: ignore[misc]


def test_a_missing_required_flag_is_refused() -> None:
    with pytest.raises(SystemExit):
        parse_config(["--topology-file", "t.py"])


_ARGS = ["--topology-file", "t.py", "--container", "1", "--containers", "1"]
_ARGS += ["--tmaster", "h:1", "--workdir", "/w", "--state-dir", "/s", "--insecure"]


def test_the_footprint_comes_from_the_environment_when_not_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HEADWATER_FOOTPRINT", "small")
    assert parse_config(_ARGS).footprint == "small"
    assert parse_config([*_ARGS, "--footprint", "normal"]).footprint == "normal"


@pytest.mark.parametrize("value", ["smal", "single", "SMALL"])
def test_a_footprint_mistyped_in_the_environment_is_refused_not_run_as_normal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    monkeypatch.setenv("HEADWATER_FOOTPRINT", value)
    with pytest.raises(SystemExit):
        parse_config(_ARGS)
    assert "HEADWATER_FOOTPRINT" in capsys.readouterr().err
