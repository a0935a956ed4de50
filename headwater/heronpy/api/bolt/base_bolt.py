"""heronpy's ``BaseBolt``."""

from __future__ import annotations

from .bolt import Bolt as BaseBolt

__all__ = ["BaseBolt"]
