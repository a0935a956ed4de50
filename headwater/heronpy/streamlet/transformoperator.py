"""``heronpy.streamlet.transformoperator``."""

from ._operators import TransformOperator

__all__ = ["TransformOperator"]
