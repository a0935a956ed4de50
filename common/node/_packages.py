"""The packages a node runs: fetched from the master by hash, unpacked sealed, and checked
against their zip before each start (``common/_unpacked.py``).

``WORKDIR/packages/HEX`` is a package's folder, ``HEX.zip`` beside it the bytes it came
from (read-only; a live edit hands them on). Package names are checked before they become
paths, so none is ever outside the workdir.
"""

from __future__ import annotations

import logging
from pathlib import Path

import grpc

from .._exceptions import PackageMismatchError
from .._package import digest_problem, verify_package
from .._unpacked import MARK, drift, fresh
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc

log = logging.getLogger("headwater.node")


class Packages:
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    def folder(self, package: str) -> Path:
        """Where ``package`` (``sha256:HEX``) is unpacked here; its zip sits beside it.

        Raises PackageMismatchError for anything else (never a path outside the workdir)."""
        problem = digest_problem(package)
        if problem is not None:
            raise PackageMismatchError(f"refusing topology package: {problem}")
        return self.workdir / "packages" / package.partition(":")[2]

    async def fetched(self, stub: pb_grpc.ClusterStub, run: pb.RunContainer) -> Path:
        """``run``'s entry in its package's folder here, fetched from the master if this node
        has no good copy (or its zip no longer hashes to its name)."""
        code = self.folder(run.package)
        try:
            return self.checked(run)
        except PackageMismatchError as exc:
            if (code / MARK).exists():
                log.warning("%s: fetching it again", exc)
        try:
            reply = await stub.FetchPackage(pb.PackageRequest(package=run.package))
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.DATA_LOSS:
                raise PackageMismatchError(str(exc.details())) from exc
            raise
        fresh(reply.data, run.package, code)  # refuses a hash mismatch
        # beside it, read-only: a live edit hands it on, and each start checks against it
        zipped, tmp = code.with_suffix(".zip"), code.with_suffix(".zip.tmp")
        tmp.unlink(missing_ok=True)
        tmp.write_bytes(reply.data)
        tmp.chmod(0o444)
        tmp.replace(zipped)
        return code / run.entry

    def checked(self, run: pb.RunContainer) -> Path:
        """``run``'s entry in its package's folder, checked against the package's zip first
        (before each start): a folder that differs is unpacked again from the zip.

        Raises PackageMismatchError when there is no copy, or its zip does not hash to its
        name (fetch it again)."""
        code = self.folder(run.package)
        zipped = code.with_suffix(".zip")
        try:
            data = zipped.read_bytes()
        except FileNotFoundError:
            raise PackageMismatchError(f"package {run.package[:19]}… is not here") from None
        verify_package(data, run.package)
        changed = drift(data, code) if (code / MARK).exists() else "it was never unpacked"
        if changed is not None:
            log.warning(
                "package %s in %s differs from its zip (%s): unpacking it again",
                run.package[:19],
                code,
                changed,
            )
            fresh(data, run.package, code)
        return code / run.entry
