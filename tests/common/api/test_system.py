"""headwater.common.api._system: system components as specs the runtime builds."""

from __future__ import annotations

import dataclasses

import pytest

import headwater.common.runtime  # noqa: F401  (installs the runtime's resolver)
from headwater.common.api import Bolt, Spout
from headwater.common.api._system import SystemComponent, system_component


def test_a_spec_is_data_equal_by_value() -> None:
    a = system_component("outbox_sink", Bolt, component="model")
    b = system_component("outbox_sink", Bolt, component="model")
    assert a == b and hash(a) == hash(b)
    assert a.kind == "outbox_sink" and dict(a.params) == {"component": "model"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.kind = "other"  # type: ignore[misc]


def test_calling_a_spec_builds_its_component() -> None:
    sink = system_component("outbox_sink", Bolt, component="model")()
    assert isinstance(sink, Bolt)
    assert type(sink).__name__ == "OutboxSink"


def test_a_component_of_the_wrong_role_is_refused() -> None:
    wrong = SystemComponent("outbox_sink", Spout, (("component", "model"),))
    with pytest.raises(TypeError, match="not a Spout"):
        wrong()
