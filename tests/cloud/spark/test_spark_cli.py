"""`headwater spark rollup`'s bad arguments: a message saying what to do, exit 2, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater._cli import main

from ._landing import Lander, demo_readings

SPEC = Path(__file__).resolve().parents[3] / "examples" / "iot" / "rollup.toml"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    try:
        code = main(["spark", "rollup", "--spec", str(SPEC), *argv])
    except SystemExit as e:  # argparse's own usage errors
        code = int(e.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_a_missing_landing_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _run(
        capsys, "--landing", str(tmp_path / "nope"), "--warehouse", str(tmp_path / "w"), "--once"
    )
    assert code == 2
    assert "no such folder; give the landing root" in err


def test_the_dataset_instead_of_the_landing_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Lander(tmp_path / "landing").land(demo_readings(1, 1, 3, 1000))
    dataset = tmp_path / "landing" / "readings"
    code, err = _run(capsys, "--landing", str(dataset), "--warehouse", str(tmp_path / "w"))
    assert code == 2
    assert f"looks like a dataset: give the landing root, its parent {tmp_path / 'landing'}" in err


def test_nothing_landed_yet_is_a_pass_with_nothing_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "landing").mkdir()
    code = main(
        ["spark", "rollup", "--landing", str(tmp_path / "landing"), "--warehouse",
         str(tmp_path / "w"), "--spec", str(SPEC), "--once"]
    )  # fmt: skip
    assert code == 0
    assert "nothing of 'readings' has landed under" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        (
            "--spark-master",
            "yarn",
            "--spark-master must be local[N], local[*] or spark://HOST:PORT",
        ),
        ("--watermark", "soon", "give a number and a unit, e.g. '10 minutes'"),
        ("--interval", "0", "must be more than 0, got 0"),
        ("--max-files", "x", "is not a whole number"),
    ],
)
def test_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, says: str
) -> None:
    (tmp_path / "landing").mkdir()
    code, err = _run(
        capsys, "--landing", str(tmp_path / "landing"), "--warehouse", str(tmp_path / "w"),
        option, value,
    )  # fmt: skip
    assert code == 2
    assert says in err


def test_a_second_rollup_on_the_same_warehouse_is_refused(tmp_path: Path) -> None:
    from headwater.cloud.spark._warehouse import lock
    from headwater.common._exceptions import HeadwaterError

    with (
        lock(tmp_path / "w"),
        pytest.raises(HeadwaterError, match="another rollup is writing"),
        lock(tmp_path / "w"),
    ):
        pass
