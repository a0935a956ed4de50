"""The runtime's unit tests' shared fixtures."""

from ._opened import opened  # noqa: F401  (the fixture, for every module here)
