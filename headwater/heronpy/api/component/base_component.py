"""heronpy's ``BaseComponent``: logging and the delegate slot."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from headwater.common.api import Context

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

    _ctx: Context

    def _attach(self, ctx: Context) -> None:
        """Take the runtime's context and call heronpy's ``initialize(config, context)``."""
        from .. import global_metrics
        from ..topology_context import TopologyContext

        self._ctx = ctx
        self.logger = ctx.log
        global_metrics._ctx = ctx
        self.initialize(config=dict(ctx.config), context=TopologyContext(ctx, ctx.topology))

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        """Override: called once before any tuple (heronpy's ``initialize``)."""

    def log(self, message: object, level: str | None = None) -> None:
        if level not in _LEVELS:
            raise ValueError(f"{level} is not supported as logging level")
        self.logger.log(_LEVELS[level], "%s", message)
