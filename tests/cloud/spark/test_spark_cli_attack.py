"""`headwater spark rollup` given folders a careless operator might: exit 2 with what to do.

None of these starts Spark: the folders are checked first.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.cloud.spark._warehouse import lock
from headwater.common._exceptions import HeadwaterError

from .test_spark_cli import _run


@pytest.fixture
def landing(tmp_path: Path) -> Path:
    (tmp_path / "landing" / "readings").mkdir(parents=True)
    (tmp_path / "a-file").write_text("x")
    return tmp_path / "landing"


@pytest.mark.parametrize(
    ("warehouse", "checkpoint", "says"),
    [
        ("a-file", None, "--warehouse {tmp}/a-file is a file: give a folder"),
        ("w", "a-file", "--checkpoint {tmp}/a-file is a file: give a folder"),
        ("landing", None, "--warehouse {tmp}/landing and --landing {tmp}/landing overlap"),
        ("landing/w", None, "--warehouse {tmp}/landing/w and --landing {tmp}/landing overlap"),
        (".", None, "--warehouse {tmp} and --landing {tmp}/landing overlap"),
    ],
)
def test_unusable_folders_are_refused_before_spark_starts(
    landing: Path,
    capsys: pytest.CaptureFixture[str],
    warehouse: str,
    checkpoint: str | None,
    says: str,
) -> None:
    tmp = landing.parent
    argv = ["--landing", str(landing), "--warehouse", str(tmp / warehouse), "--once"]
    if checkpoint is not None:
        argv += ["--checkpoint", str(tmp / checkpoint)]
    code, err = _run(capsys, *argv)
    assert code == 2, err
    assert says.format(tmp=tmp) in err
    assert sorted(p.name for p in landing.iterdir()) == ["readings"]  # nothing written there


def test_the_warehouse_lock_says_why_it_cannot_be_made(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    where = tmp_path / "a-file" / "w"
    with pytest.raises(HeadwaterError, match=f"cannot write the warehouse {where}: "), lock(where):
        pass
