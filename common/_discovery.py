"""Finding the master on a LAN: zeroconf (mDNS/DNS-SD) service ``_headwater._tcp.local.``.

The master advertises its gRPC address (and its API URL as a property);
an agent started without ``--master`` browses for it. Multicast is not
always there (routed WANs, some Wi-Fi), so ``--master HOST:PORT`` always
works too: discovery is a convenience, never a dependency.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # zeroconf loads when used: an agent given --master never pays for it
    from zeroconf import ServiceStateChange
    from zeroconf.asyncio import AsyncZeroconf

SERVICE = "_headwater._tcp.local."
log = logging.getLogger("headwater.discovery")


async def advertise(host: str, grpc_port: int, http_url: str, version: str) -> AsyncZeroconf:
    """Register the master on the interface of ``host``; close the result to withdraw."""
    from zeroconf import IPVersion
    from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

    zc = AsyncZeroconf(interfaces=[host], ip_version=IPVersion.V4Only)
    info = AsyncServiceInfo(
        SERVICE,
        f"headwater-master-{socket.gethostname()}-{grpc_port}.{SERVICE}",
        addresses=[socket.inet_aton(host)],
        port=grpc_port,
        properties={"http": http_url, "version": version},
    )
    await zc.async_register_service(info)
    log.info("advertising %s at %s:%d", SERVICE, host, grpc_port)
    return zc


async def find_master(timeout: float | None = None) -> str:
    """Browse for a master; return its gRPC ``host:port``. Raises TimeoutError."""
    from zeroconf import IPVersion, ServiceStateChange
    from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

    found: asyncio.Queue[str] = asyncio.Queue()
    zc = AsyncZeroconf(ip_version=IPVersion.V4Only)
    resolving: set[asyncio.Task[None]] = set()  # keep references until each finishes

    def on_change(
        zeroconf: Any, service_type: str, name: str, state_change: ServiceStateChange
    ) -> None:
        if state_change is ServiceStateChange.Added:
            task = asyncio.ensure_future(_resolve(zeroconf, service_type, name))
            resolving.add(task)
            task.add_done_callback(resolving.discard)

    async def _resolve(zeroconf: Any, service_type: str, name: str) -> None:
        info = AsyncServiceInfo(service_type, name)
        if await info.async_request(zeroconf, 3000):
            addresses = info.parsed_addresses(IPVersion.V4Only)
            if addresses and info.port:
                found.put_nowait(f"{addresses[0]}:{info.port}")

    browser = AsyncServiceBrowser(zc.zeroconf, [SERVICE], handlers=[on_change])
    try:
        async with asyncio.timeout(timeout):
            address = await found.get()
        log.info("found the master at %s by zeroconf", address)
        return address
    finally:
        await browser.async_cancel()
        await zc.async_close()
