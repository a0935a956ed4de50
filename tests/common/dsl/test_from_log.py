"""Pipeline.from_log: the durable log as a DSL source, a system component the runtime builds."""

from __future__ import annotations

from pathlib import Path

import headwater.common.runtime  # noqa: F401  (installs the runtime's resolver)
from headwater.common.api import Spout
from headwater.common.api._system import SystemComponent, system_component
from headwater.common.connectors import LogSpout
from headwater.common.dsl import Pipeline
from headwater.common.wire._control import Stop


def test_the_log_source_is_a_spec_the_runtime_builds(tmp_path: Path) -> None:
    spout = system_component("log_spout", Spout, path=str(tmp_path / "log"), partitions=2)()
    assert isinstance(spout, LogSpout)


def test_from_log_names_the_log_spout(tmp_path: Path) -> None:
    p = Pipeline("p")
    p.from_log("readings", str(tmp_path / "log"), 2).sink("out", print)
    factory = p.build().component("readings").factory
    specs = [a for a in getattr(factory, "args", ()) if isinstance(a, SystemComponent)]
    assert [(s.kind, dict(s.params)) for s in specs] == [
        ("log_spout", {"path": str(tmp_path / "log"), "partitions": 2})
    ]


def test_a_fused_source_keeps_the_runtime_channel_to_its_stmgr() -> None:
    """A source inside a chain sees ``_SourceContext``; the log spout finds the stmgr through
    ``isinstance(ctx, SystemContext)``, which Python 3.12 answers without ``__getattr__``."""
    from headwater.common.api import SystemContext
    from headwater.common.dsl._fused_source import _SourceContext

    sent: list[object] = []

    class Runtime:
        def system(self, msg: object) -> None:
            sent.append(msg)

    class Bare:
        pass

    wrapped = _SourceContext(Runtime(), lambda v: None, lambda: None)  # type: ignore[arg-type]
    assert "system" in vars(wrapped)  # found by inspect.getattr_static too
    assert isinstance(wrapped, SystemContext)
    wrapped.system(Stop())
    assert sent == [Stop()]
    assert not isinstance(_SourceContext(Bare(), lambda v: None, lambda: None), SystemContext)  # type: ignore[arg-type]
