"""The DSL's documented examples run as written."""

from __future__ import annotations

import doctest

import pytest

from headwater.common.dsl import _partition, _pipeline, _windows


@pytest.mark.parametrize("module", [_partition, _pipeline, _windows])
def test_examples_in_the_docs(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)  # type: ignore[arg-type]
    assert result.attempted > 0 and result.failed == 0
