"""Poison records as the runtime uses them: the policy (retry, then dead-letter) lives in
``api/_dead_letters.py``, part of the component contract, so that the in-process test kit
(``headwater.testing``) applies the same one."""

from ..api._dead_letters import (
    BURST,
    QUIET_S,
    DeadLetterSink,
    Retry,
    reason_of,
    short_traceback,
)

__all__ = ["BURST", "QUIET_S", "DeadLetterSink", "Retry", "reason_of", "short_traceback"]
