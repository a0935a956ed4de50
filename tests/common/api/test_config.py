"""headwater.common.api._config: RuntimeConfig.from_mapping and Reliability."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.common.api import Reliability, RuntimeConfig
from headwater.common.api._config import (
    BATCH_LINGER_MS,
    BATCH_SIZE,
    INSTANCE_HIGH_WATER_BYTES,
    INSTANCE_LOW_WATER_BYTES,
    STMGR_HIGH_WATER_BYTES,
    STMGR_LOW_WATER_BYTES,
    TOPOLOGY_ENABLE_ACKING,
    TOPOLOGY_MAX_SPOUT_PENDING,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    TOPOLOGY_RELIABILITY_MODE,
    TOPOLOGY_TICK_TUPLE_FREQ_SECS,
)


def test_heron_key_names() -> None:
    assert TOPOLOGY_RELIABILITY_MODE == "topology.reliability.mode"
    assert TOPOLOGY_MAX_SPOUT_PENDING == "topology.max.spout.pending"
    assert TOPOLOGY_MESSAGE_TIMEOUT_SECS == "topology.message.timeout.secs"
    assert TOPOLOGY_TICK_TUPLE_FREQ_SECS == "topology.tick.tuple.freq.secs"


def test_defaults_from_an_empty_mapping() -> None:
    cfg = RuntimeConfig.from_mapping({})
    assert cfg == RuntimeConfig()
    assert cfg.reliability is Reliability.AT_MOST_ONCE
    assert cfg.max_spout_pending is None
    assert cfg.message_timeout_s == 30.0
    assert cfg.tick_interval_s is None
    assert not cfg.acking


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("ATMOST_ONCE", Reliability.AT_MOST_ONCE),
        ("ATLEAST_ONCE", Reliability.AT_LEAST_ONCE),
        ("EFFECTIVELY_ONCE", Reliability.EXACTLY_ONCE),
        (Reliability.AT_LEAST_ONCE, Reliability.AT_LEAST_ONCE),
    ],
)
def test_reliability_mode_strings(mode: Any, expected: Reliability) -> None:
    cfg = RuntimeConfig.from_mapping({TOPOLOGY_RELIABILITY_MODE: mode})
    assert cfg.reliability is expected
    assert cfg.acking == (expected is Reliability.AT_LEAST_ONCE)


def test_reliability_values_are_heronpys() -> None:
    assert [r.value for r in Reliability] == ["ATMOST_ONCE", "ATLEAST_ONCE", "EFFECTIVELY_ONCE"]


def test_acking_flag_without_mode() -> None:
    assert RuntimeConfig.from_mapping({TOPOLOGY_ENABLE_ACKING: True}).acking
    assert not RuntimeConfig.from_mapping({TOPOLOGY_ENABLE_ACKING: False}).acking


def test_mode_wins_over_acking_flag() -> None:
    cfg = RuntimeConfig.from_mapping(
        {TOPOLOGY_ENABLE_ACKING: True, TOPOLOGY_RELIABILITY_MODE: "ATMOST_ONCE"}
    )
    assert cfg.reliability is Reliability.AT_MOST_ONCE


def test_reads_numeric_keys() -> None:
    cfg = RuntimeConfig.from_mapping(
        {
            TOPOLOGY_MAX_SPOUT_PENDING: 100,
            TOPOLOGY_MESSAGE_TIMEOUT_SECS: 12,
            TOPOLOGY_TICK_TUPLE_FREQ_SECS: 2,
            BATCH_SIZE: 50,
            BATCH_LINGER_MS: 1,
            STMGR_HIGH_WATER_BYTES: 2000,
            STMGR_LOW_WATER_BYTES: 1000,
            INSTANCE_HIGH_WATER_BYTES: 200,
            INSTANCE_LOW_WATER_BYTES: 100,
        }
    )
    assert cfg.max_spout_pending == 100
    assert cfg.message_timeout_s == 12.0
    assert isinstance(cfg.message_timeout_s, float)
    assert cfg.tick_interval_s == 2.0
    assert isinstance(cfg.tick_interval_s, float)
    assert cfg.batch_size == 50
    assert cfg.batch_linger_ms == 1.0
    assert (cfg.stmgr_high_water, cfg.stmgr_low_water) == (2000, 1000)
    assert (cfg.instance_high_water, cfg.instance_low_water) == (200, 100)


def test_numeric_strings_are_accepted() -> None:
    cfg = RuntimeConfig.from_mapping(
        {TOPOLOGY_MAX_SPOUT_PENDING: "7", TOPOLOGY_MESSAGE_TIMEOUT_SECS: "1.5"}
    )
    assert cfg.max_spout_pending == 7
    assert cfg.message_timeout_s == 1.5


def test_unknown_keys_are_ignored() -> None:
    assert RuntimeConfig.from_mapping({"topology.team.name": "x"}) == RuntimeConfig()


@pytest.mark.parametrize("value", ["SOMETIMES", "atleast_once", "", 3])
def test_bad_reliability_mode_names_the_key(value: object) -> None:
    with pytest.raises(ValueError) as info:
        RuntimeConfig.from_mapping({TOPOLOGY_RELIABILITY_MODE: value})
    assert TOPOLOGY_RELIABILITY_MODE in str(info.value)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (TOPOLOGY_MAX_SPOUT_PENDING, "lots"),
        (TOPOLOGY_MESSAGE_TIMEOUT_SECS, "soon"),
        (TOPOLOGY_TICK_TUPLE_FREQ_SECS, "often"),
        (BATCH_SIZE, "big"),
    ],
)
def test_non_numeric_value_raises_value_error_naming_the_key(key: str, value: object) -> None:
    with pytest.raises(ValueError) as info:
        RuntimeConfig.from_mapping({key: value})
    assert key in str(info.value)
    assert repr(value) in str(info.value)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (TOPOLOGY_MAX_SPOUT_PENDING, 0),
        (TOPOLOGY_MAX_SPOUT_PENDING, -5),
        (TOPOLOGY_MESSAGE_TIMEOUT_SECS, 0),
        (TOPOLOGY_MESSAGE_TIMEOUT_SECS, -1.5),
        (BATCH_SIZE, 0),
    ],
)
def test_non_positive_value_raises_value_error_naming_the_key(key: str, value: object) -> None:
    with pytest.raises(ValueError, match="must be positive") as info:
        RuntimeConfig.from_mapping({key: value})
    assert key in str(info.value)


@pytest.mark.parametrize("value", [0, -1, "0"])
def test_non_positive_tick_interval_is_rejected(value: object) -> None:
    with pytest.raises(ValueError) as info:
        RuntimeConfig.from_mapping({TOPOLOGY_TICK_TUPLE_FREQ_SECS: value})
    assert TOPOLOGY_TICK_TUPLE_FREQ_SECS in str(info.value)


def test_bad_reliability_lists_the_choices() -> None:
    with pytest.raises(ValueError) as info:
        RuntimeConfig.from_mapping({TOPOLOGY_RELIABILITY_MODE: "SOMETIMES"})
    message = str(info.value)
    for choice in ("ATMOST_ONCE", "ATLEAST_ONCE", "EFFECTIVELY_ONCE"):
        assert choice in message
    assert "SOMETIMES" in message


@pytest.mark.parametrize(
    ("low_key", "high_key"),
    [
        (STMGR_LOW_WATER_BYTES, STMGR_HIGH_WATER_BYTES),
        (INSTANCE_LOW_WATER_BYTES, INSTANCE_HIGH_WATER_BYTES),
    ],
)
def test_low_water_must_be_below_high_water(low_key: str, high_key: str) -> None:
    with pytest.raises(ValueError) as info:
        RuntimeConfig.from_mapping({low_key: 100, high_key: 100})
    assert low_key in str(info.value)
    assert high_key in str(info.value)
