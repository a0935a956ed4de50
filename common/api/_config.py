"""Topology configuration: heronpy-compatible keys and the typed view the runtime reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

# heronpy's keys (heronpy.api.api_constants), kept verbatim for compatibility.
TOPOLOGY_RELIABILITY_MODE = "topology.reliability.mode"
TOPOLOGY_MAX_SPOUT_PENDING = "topology.max.spout.pending"
TOPOLOGY_MESSAGE_TIMEOUT_SECS = "topology.message.timeout.secs"
TOPOLOGY_TICK_TUPLE_FREQ_SECS = "topology.tick.tuple.freq.secs"
TOPOLOGY_ENABLE_ACKING = "topology.acking"
TOPOLOGY_DEBUG = "topology.debug"
# Headwater's own knobs.
BATCH_SIZE = "headwater.batch.size"
BATCH_LINGER_MS = "headwater.batch.linger.ms"
STMGR_HIGH_WATER_BYTES = "headwater.stmgr.buffer.high.bytes"
STMGR_LOW_WATER_BYTES = "headwater.stmgr.buffer.low.bytes"
INSTANCE_HIGH_WATER_BYTES = "headwater.instance.queue.high.bytes"
INSTANCE_LOW_WATER_BYTES = "headwater.instance.queue.low.bytes"


class Reliability(StrEnum):
    """Delivery guarantee of a topology (values are heronpy's)."""

    AT_MOST_ONCE = "ATMOST_ONCE"
    AT_LEAST_ONCE = "ATLEAST_ONCE"
    EXACTLY_ONCE = "EFFECTIVELY_ONCE"


@dataclass(frozen=True)
class RuntimeConfig:
    """What the runtime reads from a component's merged configuration."""

    reliability: Reliability = Reliability.AT_MOST_ONCE
    max_spout_pending: int | None = None
    message_timeout_s: float = 30.0
    tick_interval_s: float | None = None
    batch_size: int = 1000
    batch_linger_ms: float = 5.0
    stmgr_high_water: int = 8 << 20
    stmgr_low_water: int = 4 << 20
    instance_high_water: int = 4 << 20
    instance_low_water: int = 2 << 20

    @property
    def acking(self) -> bool:
        return self.reliability is Reliability.AT_LEAST_ONCE

    @classmethod
    def from_mapping(cls, conf: Mapping[str, Any]) -> RuntimeConfig:
        """Read the known keys; raise ValueError naming a key whose value is wrong."""
        mode = conf.get(TOPOLOGY_RELIABILITY_MODE)
        if mode is None:
            acking = conf.get(TOPOLOGY_ENABLE_ACKING)
            mode = Reliability.AT_LEAST_ONCE if acking else Reliability.AT_MOST_ONCE
        try:
            reliability = Reliability(str(getattr(mode, "value", mode)))
        except ValueError:
            choices = ", ".join(r.value for r in Reliability)
            raise ValueError(f"{TOPOLOGY_RELIABILITY_MODE}={mode!r}: use one of {choices}") from None
        pending = conf.get(TOPOLOGY_MAX_SPOUT_PENDING)
        tick = conf.get(TOPOLOGY_TICK_TUPLE_FREQ_SECS)
        base = cls()
        cfg = cls(
            reliability=reliability,
            max_spout_pending=int(pending) if pending is not None else None,
            message_timeout_s=float(conf.get(TOPOLOGY_MESSAGE_TIMEOUT_SECS, base.message_timeout_s)),
            tick_interval_s=float(tick) if tick is not None else None,
            batch_size=int(conf.get(BATCH_SIZE, base.batch_size)),
            batch_linger_ms=float(conf.get(BATCH_LINGER_MS, base.batch_linger_ms)),
            stmgr_high_water=int(conf.get(STMGR_HIGH_WATER_BYTES, base.stmgr_high_water)),
            stmgr_low_water=int(conf.get(STMGR_LOW_WATER_BYTES, base.stmgr_low_water)),
            instance_high_water=int(
                conf.get(INSTANCE_HIGH_WATER_BYTES, base.instance_high_water)
            ),
            instance_low_water=int(conf.get(INSTANCE_LOW_WATER_BYTES, base.instance_low_water)),
        )
        for name, value in (
            ("max spout pending", cfg.max_spout_pending),
            ("message timeout", cfg.message_timeout_s),
            ("batch size", cfg.batch_size),
        ):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if cfg.stmgr_low_water >= cfg.stmgr_high_water:
            raise ValueError(f"{STMGR_LOW_WATER_BYTES} must be below {STMGR_HIGH_WATER_BYTES}")
        if cfg.instance_low_water >= cfg.instance_high_water:
            raise ValueError(
                f"{INSTANCE_LOW_WATER_BYTES} must be below {INSTANCE_HIGH_WATER_BYTES}"
            )
        return cfg
