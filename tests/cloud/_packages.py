"""A small topology's package, as the master's tests submit it: a spout that emits nothing
and a bolt after it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from headwater.common._package import build_package

_TOPOLOGY = """
from collections.abc import Sequence
from typing import ClassVar

from headwater import Bolt, Spout, Topology, Tuple, shuffle


class Words(Spout):
    outputs: ClassVar[Sequence[str]] = ("word",)

    def next_tuple(self) -> None:
        pass


class Count(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


topology = (
    Topology({name!r})
    .add_spout({spout!r}, Words, parallelism={parallelism})
    .add_bolt("count", Count, inputs={{{spout!r}: shuffle()}})
    .with_config(**{config!r})
)
"""


def topology_source(
    name: str, spout: str = "words", parallelism: int = 1, config: dict[str, Any] | None = None
) -> str:
    """The file of topology ``name``."""
    return _TOPOLOGY.format(name=name, spout=spout, parallelism=parallelism, config=config or {})


def topology_package(
    tmp_path: Path,
    name: str,
    spout: str = "words",
    parallelism: int = 1,
    config: dict[str, Any] | None = None,
) -> bytes:
    """The package of topology ``name`` (its file written under ``tmp_path``)."""
    folder = tmp_path / f"src-{name.replace('/', '_')}-{spout.replace('/', '_')}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "topo.py").write_text(topology_source(name, spout, parallelism, config))
    return build_package(folder / "topo.py")[0]
