"""heronpy's ``BaseComponent``: logging and the delegate slot."""

from __future__ import annotations

import logging
from typing import Any

_LEVELS = {
    None: logging.INFO,
    "trace": logging.DEBUG,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}


class BaseComponent:
    """Do not override ``__init__``; use ``initialize``."""

    def __init__(self, delegate: Any = None) -> None:
        self.delegate = delegate
        self.logger = logging.getLogger(f"headwater.user.{type(self).__name__}")

    def log(self, message: object, level: str | None = None) -> None:
        if level not in _LEVELS:
            raise ValueError(f"{level} is not supported as logging level")
        self.logger.log(_LEVELS[level], "%s", message)
