"""The functional DSL: ``from headwater.dsl import Pipeline, Tumbling, Sliding, Session``.

See ``headwater.common.dsl`` for the steps, windows and fusion rules.
"""

from headwater.common.dsl import *  # noqa: F403 (the same names, under the public package)
from headwater.common.dsl import __all__ as __all__  # noqa: PLC0414
