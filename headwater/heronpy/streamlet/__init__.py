"""``heronpy.streamlet``: Heron's Python streamlet API, running on Headwater's DSL.

The API is in ``_api.py`` (``Builder``, ``Streamlet``, ``Config``, ``Runner``),
``_operators.py`` (what user code subclasses and is handed) and ``_windows.py``;
its translation onto the DSL in ``_translate.py``.
"""

from ._api import Builder, Config, Runner, Streamlet
from ._operators import ArrayLooper, Generator, StreamletContext, TransformOperator
from ._windows import KeyedWindow, Window, WindowConfig

__all__ = [
    "ArrayLooper",
    "Builder",
    "Config",
    "Generator",
    "KeyedWindow",
    "Runner",
    "Streamlet",
    "StreamletContext",
    "TransformOperator",
    "Window",
    "WindowConfig",
]
