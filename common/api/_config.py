"""Topology configuration: heronpy-compatible keys and the typed view the runtime reads."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

N = TypeVar("N", int, float, int | None, float | None)

# heronpy's keys (heronpy.api.api_constants), kept verbatim for compatibility.
TOPOLOGY_RELIABILITY_MODE = "topology.reliability.mode"
TOPOLOGY_MAX_SPOUT_PENDING = "topology.max.spout.pending"
TOPOLOGY_MESSAGE_TIMEOUT_SECS = "topology.message.timeout.secs"
TOPOLOGY_TICK_TUPLE_FREQ_SECS = "topology.tick.tuple.freq.secs"
DSL_STEPS = "headwater.dsl.steps"  # component config: the DSL steps fused into it
# component config: the field of its keyed input naming the site (the agent label of that
# name) of the record's key, so its keyed state can move between edge and cloud (issue 37)
SITES = "headwater.sites"
# component config, set by a move (issue 37): the placement it is moving from, so the cloud runs
# it as a hand-over wrapper that also takes its edge copies' rows (``plan/_domains.py``)
HANDOVER = "headwater.handover"
TOPOLOGY_ENABLE_ACKING = "topology.acking"
TOPOLOGY_DEBUG = "topology.debug"
CHECKPOINT_INTERVAL_SECS = "topology.stateful.checkpoint.interval.seconds"
# how often a record on which user code raises is tried again before it is dead-lettered
TOPOLOGY_RECORD_MAX_RETRIES = "topology.record.max.retries"
# Headwater's own knobs.
BATCH_SIZE = "headwater.batch.size"
BATCH_LINGER_MS = "headwater.batch.linger.ms"
STMGR_HIGH_WATER_BYTES = "headwater.stmgr.buffer.high.bytes"
STMGR_LOW_WATER_BYTES = "headwater.stmgr.buffer.low.bytes"
INSTANCE_HIGH_WATER_BYTES = "headwater.instance.queue.high.bytes"
INSTANCE_LOW_WATER_BYTES = "headwater.instance.queue.low.bytes"
# What one cloud container may use where a scheduler enforces it (the Docker scheduler's
# CPU and memory limits), after Heron's topology.container.cpu and topology.container.ram,
# which are read too when these are not set.
CONTAINER_CPU = "headwater.container.cpu"
CONTAINER_RAM_BYTES = "headwater.container.ram.bytes"
HERON_CONTAINER_CPU = "topology.container.cpu"
HERON_CONTAINER_RAM = "topology.container.ram"


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
    record_max_retries: int = 3

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
            raise ValueError(
                f"{TOPOLOGY_RELIABILITY_MODE}={mode!r}: use one of {choices}"
            ) from None
        base = cls()
        pending = _number(conf, TOPOLOGY_MAX_SPOUT_PENDING, int, None, positive=True)
        tick = _number(conf, TOPOLOGY_TICK_TUPLE_FREQ_SECS, float, None, positive=True)
        cfg = cls(
            reliability=reliability,
            max_spout_pending=pending,
            message_timeout_s=_number(
                conf, TOPOLOGY_MESSAGE_TIMEOUT_SECS, float, base.message_timeout_s, positive=True
            ),
            tick_interval_s=tick,
            batch_size=_number(conf, BATCH_SIZE, int, base.batch_size, positive=True),
            batch_linger_ms=_number(conf, BATCH_LINGER_MS, float, base.batch_linger_ms),
            stmgr_high_water=_number(
                conf, STMGR_HIGH_WATER_BYTES, int, base.stmgr_high_water, positive=True
            ),
            stmgr_low_water=_number(conf, STMGR_LOW_WATER_BYTES, int, base.stmgr_low_water),
            instance_high_water=_number(
                conf, INSTANCE_HIGH_WATER_BYTES, int, base.instance_high_water, positive=True
            ),
            instance_low_water=_number(
                conf, INSTANCE_LOW_WATER_BYTES, int, base.instance_low_water
            ),
            record_max_retries=_number(
                conf, TOPOLOGY_RECORD_MAX_RETRIES, int, base.record_max_retries
            ),
        )
        if cfg.record_max_retries < 0:
            raise ValueError(
                f"{TOPOLOGY_RECORD_MAX_RETRIES} must be 0 or more, got {cfg.record_max_retries}"
            )
        if cfg.batch_linger_ms < 0:
            raise ValueError(f"{BATCH_LINGER_MS} must be 0 or more, got {cfg.batch_linger_ms}")
        if cfg.stmgr_low_water >= cfg.stmgr_high_water:
            raise ValueError(f"{STMGR_LOW_WATER_BYTES} must be below {STMGR_HIGH_WATER_BYTES}")
        if cfg.instance_low_water >= cfg.instance_high_water:
            raise ValueError(
                f"{INSTANCE_LOW_WATER_BYTES} must be below {INSTANCE_HIGH_WATER_BYTES}"
            )
        return cfg


def _number(
    conf: Mapping[str, Any],
    key: str,
    kind: Callable[[Any], N],
    default: N,
    *,
    positive: bool = False,
) -> N:
    """Read ``key`` as ``kind`` (heronpy passes numbers as strings too); errors name the key."""
    raw = conf.get(key)
    if raw is None:
        return default
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise ValueError(f"{key}={raw!r} is not a number") from None
    if positive and value <= 0:  # type: ignore[operator]
        raise ValueError(f"{key} must be positive, got {raw!r}")
    return value


MIN_CONTAINER_CPU = 0.01
MIN_CONTAINER_RAM = 64 << 20  # a worker, its stream manager and one instance need about this
MAX_CONTAINER_RAM = 1 << 40


@dataclass(frozen=True)
class ContainerResources:
    """What each of a topology's cloud containers may use: ``cpu`` cores, ``ram_bytes`` bytes.

    Read from the topology's config (``headwater.container.cpu``,
    ``headwater.container.ram.bytes``, or Heron's ``topology.container.cpu`` and
    ``topology.container.ram`` when those are not set). The Docker scheduler makes them
    each container's limits; the worker scheduler does not enforce them."""

    cpu: float = 1.0
    ram_bytes: int = 1 << 30

    @classmethod
    def from_mapping(cls, conf: Mapping[str, Any]) -> ContainerResources:
        """Read them; raise ValueError naming a key whose value is wrong."""
        base = cls()
        cpu_key = CONTAINER_CPU if conf.get(CONTAINER_CPU) is not None else HERON_CONTAINER_CPU
        ram_key = (
            CONTAINER_RAM_BYTES
            if conf.get(CONTAINER_RAM_BYTES) is not None
            else HERON_CONTAINER_RAM
        )
        cpu = _number(conf, cpu_key, float, base.cpu, positive=True)
        raw_ram = conf.get(ram_key)
        if isinstance(raw_ram, float) and not raw_ram.is_integer():
            raise ValueError(f"{ram_key}={raw_ram!r} is not a whole number of bytes")
        ram = _number(conf, ram_key, _whole, base.ram_bytes, positive=True)
        if not cpu >= MIN_CONTAINER_CPU or cpu == float("inf"):
            raise ValueError(f"{cpu_key} must be at least {MIN_CONTAINER_CPU} (cores), got {cpu}")
        if not MIN_CONTAINER_RAM <= ram <= MAX_CONTAINER_RAM:
            raise ValueError(
                f"{ram_key} must be from {MIN_CONTAINER_RAM} (64 MiB) to {MAX_CONTAINER_RAM} "
                f"(1 TiB) bytes, got {ram}"
            )
        return cls(cpu, ram)


def _whole(raw: Any) -> int:
    """An integer from an int, an integral float or a decimal string (heronpy passes strings)."""
    if isinstance(raw, bool):
        raise ValueError(raw)
    try:
        return int(raw)
    except OverflowError:  # an infinite float
        raise ValueError(raw) from None
