"""heronpy's ``BaseComponent``: logging, the delegate, and the wiring to the runtime.

A component made with ``delegate=other`` (as Heron's integration-test core makes the
user's spouts and bolts) sends what it emits, acks and fails, and its log, through
``other``; whoever made it calls its ``initialize`` itself.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from headwater.common.api import Context

    from ..topology_context import TopologyContext

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
        logger = getattr(delegate, "logger", None)
        self.logger = (
            logger
            if isinstance(logger, logging.Logger)
            else logging.getLogger(f"headwater.user.{type(self).__name__}")
        )

    _ctx: Context
    _topology_context: TopologyContext | None = None

    def _attach(self, ctx: Context) -> None:
        """Take the runtime's context, call heronpy's ``initialize(config, context)``, then
        the hooks' ``prepare``; from then on the runtime's calls pass through ``_wrap``."""
        from .. import global_metrics
        from ..topology_context import TopologyContext

        self._ctx = ctx
        self.logger = ctx.log
        global_metrics._ctx = ctx
        context = TopologyContext(ctx, getattr(ctx, "topology", None))  # (a bare test context)
        self._topology_context = context
        self.initialize(config=dict(ctx.config), context=context)
        context.invoke_hook_prepare()
        self._wrap(context)

    def _wrap(self, context: TopologyContext) -> None:
        """Wrap ``close`` (hooks' ``clean_up``, a last metrics read); subclasses wrap more."""
        user_close = self.close

        def close() -> None:
            context.invoke_hook_cleanup()
            user_close()
            context.poll_metrics(force=True)

        self.close = close  # type: ignore[method-assign]

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        """Override: called once before any tuple (heronpy's ``initialize``)."""

    def close(self) -> None:
        """Override: called on an orderly shutdown (not after a crash)."""

    def log(self, message: object, level: str | None = None) -> None:
        if level not in _LEVELS:
            raise ValueError(f"{level} is not supported as logging level")
        self.logger.log(_LEVELS[level], "%s", message)
