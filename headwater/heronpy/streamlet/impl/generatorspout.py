"""``heronpy.streamlet.impl.generatorspout``."""

from .._impl import PacedGeneratorSpout as GeneratorSpout

__all__ = ["GeneratorSpout"]
