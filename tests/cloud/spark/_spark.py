"""The Spark session of a test file: ``spark_fixture(app, scope)`` makes the file's ``spark``
fixture, a real local PySpark session (``local[2]``) that ends with its JVM.

The session is the one the platform makes for a small input (``SMALL_JOB``, as
``small_job_conf`` gives it for the commands and the driver): every test's input is
small, and Spark's defaults for big data (full JIT compilation, code generation for each
query, adaptive re-planning) would be most of its time.

``SparkSession.stop()`` leaves the JVM running (it would sit in the rest of the
suite's memory), so the fixture ends it too (``end_jvm``: Py4J's gateway shut
down, the JVM's standard input closed, on which it exits, waited for and forgotten; the
next session starts a fresh one); then it collects Py4J's client sockets, closed by
the JVM's end, without their ResourceWarnings.
``GATEWAY_SOCKET`` is the mark that ignores the socket Py4J still leaves to
the garbage collector.
"""

from __future__ import annotations

import contextlib
import gc
import warnings
from collections.abc import Callable, Iterator
from typing import Any, Literal

import pytest

from headwater.cloud.spark._session import SMALL_JOB, end_jvm
from headwater.spark import session

GATEWAY_SOCKET = pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
)
"""Py4J leaves a socket of its gateway to the garbage collector: ignore its warning."""


@contextlib.contextmanager
def spark_session(app: str, conf: dict[str, str] | None = None) -> Iterator[Any]:
    """A local Spark session named ``app``, ``SMALL_JOB`` and then ``conf`` its settings;
    its JVM ends after it."""
    s = session(app, "local[2]", {**SMALL_JOB, **(conf or {})})
    try:
        yield s
    finally:
        s.stop()
        _end_jvm()


def spark_fixture(app: str, scope: Literal["function", "module"]) -> Callable[..., Any]:
    """The ``spark`` fixture of a test file: ``spark_session(app)``, one per test
    (``function``) or per file (``module``)."""

    @pytest.fixture(scope=scope, name="spark")
    def spark() -> Iterator[Any]:
        with spark_session(app) as s:
            yield s

    return spark


def _end_jvm() -> None:
    end_jvm()  # the JVM exits when its stdin closes
    with warnings.catch_warnings():  # Py4J's client sockets, closed by the JVM's end
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
