"""``heronpy.streamlet.impl.generatorspout``."""

from .._translate import PacedGeneratorSpout as GeneratorSpout

__all__ = ["GeneratorSpout"]
