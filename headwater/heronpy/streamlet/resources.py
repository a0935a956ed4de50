"""heronpy's ``Resources`` (``heronpy.streamlet.resources``): cpu and ram per container."""

from __future__ import annotations


class Resources:
    def __init__(self) -> None:
        self._cpu = 0.0
        self._ram = 0

    def set_cpu(self, cpu: float) -> Resources:
        self._cpu = float(cpu)
        return self

    def set_ram(self, ram: int) -> Resources:
        """Bytes."""
        self._ram = int(ram)
        return self

    def set_ram_in_mb(self, ram: int) -> Resources:
        return self.set_ram(ram * 1024 * 1024)

    def set_ram_in_gb(self, ram: int) -> Resources:
        return self.set_ram_in_mb(ram * 1024)

    def get_cpu(self) -> float:
        return self._cpu

    def get_ram(self) -> int:
        return self._ram

    def __repr__(self) -> str:
        return f"Resource {{cpu: {self._cpu:f}, ram: {self._ram}}}"


__all__ = ["Resources"]
