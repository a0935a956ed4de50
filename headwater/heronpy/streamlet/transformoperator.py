"""``heronpy.streamlet.transformoperator``."""

from ._impl import TransformOperator

__all__ = ["TransformOperator"]
