"""``heronpy.streamlet``: Heron's Python streamlet API, running on Headwater's DSL."""

from ._impl import (
    ArrayLooper,
    Builder,
    Config,
    Generator,
    KeyedWindow,
    Runner,
    Streamlet,
    StreamletContext,
    TransformOperator,
    Window,
    WindowConfig,
)

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
