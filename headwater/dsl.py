"""The functional DSL: ``from headwater.dsl import Pipeline, Tumbling, Sliding, Session``.

See ``headwater.common.dsl`` for the steps, windows and fusion rules. A window closes
by its task's watermark (``clock="task"``, the default), or, with
``window(name, Tumbling(size), timestamp=ts, clock="key")``, by each key's own clock: a
key's window closes on that key's first record of another window, however far other
keys are ahead (``headwater.common.dsl._windows``). ``KeyClockWindowBolt`` runs such
windows as a component, for a topology written with the component API.
"""

from headwater.common.dsl import *  # noqa: F403 (the same names, under the public package)
from headwater.common.dsl import __all__ as __all__  # noqa: PLC0414
