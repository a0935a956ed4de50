"""heronpy's ``BaseSpout``."""

from __future__ import annotations

from .spout import Spout as BaseSpout

__all__ = ["BaseSpout"]
