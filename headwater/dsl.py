"""The functional DSL: ``from headwater.dsl import Pipeline, Tumbling, Sliding, Session``.

See ``headwater.common.dsl`` for the steps, windows and fusion rules.
"""

from headwater.common.dsl import (
    CollectionSpout,
    Pipeline,
    Session,
    Sliding,
    Streamlet,
    Tumbling,
    WindowedStreamlet,
)

__all__ = [
    "CollectionSpout",
    "Pipeline",
    "Session",
    "Sliding",
    "Streamlet",
    "Tumbling",
    "WindowedStreamlet",
]
