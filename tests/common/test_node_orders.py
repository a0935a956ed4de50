"""A node refuses an order whose names would reach outside its workdir (issue 15, finding 4).

A package named ``x:/abs/dir`` made a worker remove that folder before the hash
was checked; a topology named ``..`` made it (and an agent) remove its workdir's
parent. The order is refused, said in health, and no path is touched.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from headwater.common._exceptions import HeadwaterError, PackageMismatchError
from headwater.common.node import Node
from headwater.common.wire.proto import runtime_pb2 as pb


class _Stub:
    """The master's side: counts package fetches (none is expected)."""

    def __init__(self) -> None:
        self.fetches = 0

    async def FetchPackage(self, request: pb.PackageRequest) -> pb.Package:
        self.fetches += 1
        return pb.Package(data=b"")


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("x")
    return victim


@pytest.mark.parametrize(
    "order",
    [
        lambda victim: pb.NodeCommand(
            run=pb.RunContainer(topology="t", package=f"x:{victim}", entry="main.py")
        ),
        lambda victim: pb.NodeCommand(
            run=pb.RunContainer(topology="..", package="sha256:" + "0" * 64, entry="main.py")
        ),
        lambda victim: pb.NodeCommand(
            run=pb.RunContainer(topology="t", package="sha256:" + "0" * 64, entry="/etc/passwd")
        ),
        lambda victim: pb.NodeCommand(stop=pb.StopContainer(topology="..")),
        lambda victim: pb.NodeCommand(set_state=pb.SetState(topology="..", state="PAUSED")),
        lambda victim: pb.NodeCommand(
            revise=pb.Revise(topology="t", package=f"x:{victim}", entry="main.py")
        ),
    ],
)
def test_an_order_naming_a_path_outside_the_workdir_is_refused(tmp_path: Path, order: Any) -> None:
    victim = _victim(tmp_path)
    node = Node("127.0.0.1:1", tmp_path / "work" / "node", insecure=True)
    stub = _Stub()
    command = order(victim)

    async def obey() -> None:
        with pytest.raises(HeadwaterError, match="refusing the order"):
            await node._on_command(stub, command)  # type: ignore[arg-type]
        await node._obey(stub, command)  # type: ignore[arg-type]  # said in health

    asyncio.run(obey())
    assert stub.fetches == 0
    assert (victim / "precious").read_text() == "x"
    assert (tmp_path / "work" / "node").is_dir()
    assert node.orders == {} and node.containers == {}
    assert any("refusing the order" in r for r in node.health.reasons())


def test_a_package_name_is_never_a_path(tmp_path: Path) -> None:
    node = Node("127.0.0.1:1", tmp_path / "node", insecure=True)
    with pytest.raises(PackageMismatchError, match="is not a package name"):
        node.code_dir(f"x:{tmp_path}")
    digest = "sha256:" + "ab" * 32
    assert node.code_dir(digest) == tmp_path / "node" / "packages" / ("ab" * 32)
