"""The distribution maps common/, edge/, cloud/ into `headwater` and installs nothing else."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_holds_only_the_headwater_namespace(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("headwater-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"headwater"}
    for module in (
        "headwater/common/runtime/_stmgr.py",
        "headwater/common/wire/proto/runtime_pb2.py",
        "headwater/edge/__init__.py",
        "headwater/common/control/_tmaster.py",
        "headwater/heronpy/api/spout/spout.py",
        "headwater/examples/iot/pipeline.py",  # the examples ship: `headwater demo` runs it
        "headwater/examples/iot/pipeline_dsl.py",
        "headwater/examples/iot/iot_steps.py",
        "headwater/examples/iot/iot_io.py",
        "headwater/examples/iot/anomaly_train.py",  # `headwater spark train` runs it
        "headwater/examples/iot/anomaly_fit.py",
        "headwater/examples/iot/anomaly_eval.py",
        "headwater/_demo/broker.py",
        "headwater/py.typed",
        "headwater/common/py.typed",
        "headwater/cloud/console/_routes.py",
        "headwater/common/console/static/index.html",  # the console's files ship too
        "headwater/common/console/static/console.css",
        "headwater/common/console/static/main.js",
        "headwater/common/console/static/dag.js",
    ):
        assert module in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "headwater = headwater._cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


def test_editable_install_resolves_to_the_source_folders() -> None:
    import headwater.cloud
    import headwater.common
    import headwater.edge

    assert Path(headwater.common.__file__).resolve().parent == ROOT / "common"
    assert Path(headwater.edge.__file__).resolve().parent == ROOT / "edge"
    assert Path(headwater.cloud.__file__).resolve().parent == ROOT / "cloud"
