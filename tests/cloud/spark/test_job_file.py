"""A Spark job's file loaded by path: its siblings import by name; a bad file is one message."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.cloud.spark._job_file import load_job_file
from headwater.common._exceptions import HeadwaterError


@pytest.fixture
def clean_imports() -> Iterator[None]:
    """The job modules and ``sys.path`` entries a test adds are gone after it."""
    path, modules = sys.path[:], set(sys.modules)
    yield
    sys.path[:] = path
    for name in set(sys.modules) - modules:
        del sys.modules[name]


@pytest.mark.usefixtures("clean_imports")
def test_a_job_imports_its_sibling_by_name_and_loads_once(tmp_path: Path) -> None:
    (tmp_path / "hw_job_helper.py").write_text("ANSWER = 42\n")
    (tmp_path / "hw_job_a.py").write_text(
        "from hw_job_helper import ANSWER\n\ndef run(spark, ctx):\n    return ANSWER\n"
    )
    job = load_job_file(tmp_path / "hw_job_a.py")
    assert job.run(None, None) == 42
    assert sys.path[0] == str(tmp_path.resolve())
    assert load_job_file(tmp_path / "hw_job_a.py") is job is sys.modules["hw_job_a"]


@pytest.mark.usefixtures("clean_imports")
@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (None, None, "no job file at"),
        ("hw_job_b.txt", "", "give a Python file"),
        ("hw-job.py", "def run(spark, ctx): ...\n", "must be a Python module name"),
        ("hw_job_c.py", "x = 1\n", "defines no run"),
        ("hw_job_d.py", "import hw_no_such_module\n", "raised ModuleNotFoundError while loading"),
        ("hw_job_e.py", "raise ValueError('bad')\n", "raised ValueError while loading: bad"),
    ],
)
def test_a_bad_job_file_is_one_message(
    tmp_path: Path, name: str | None, text: str | None, message: str
) -> None:
    path = tmp_path / (name or "nowhere.py")
    if text is not None:
        path.write_text(text)
    before = sys.path[:]
    with pytest.raises(HeadwaterError, match=message):
        load_job_file(path)
    assert sys.path == before  # a file that does not load leaves no folder on the path


@pytest.mark.usefixtures("clean_imports")
def test_a_module_of_the_same_name_from_elsewhere_is_an_error(tmp_path: Path) -> None:
    """``json.py`` would be the standard library's ``json``: a rename, not a silent mix."""
    (tmp_path / "json.py").write_text("def run(spark, ctx): ...\n")
    with pytest.raises(HeadwaterError, match="a module named 'json' is imported already"):
        load_job_file(tmp_path / "json.py")
