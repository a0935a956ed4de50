"""The driver JVM's class archive: written when asked, published only whole, mapped after,
never trusted when unsafe, and a bad one costs a retry, not a failed start.

The first tests use a real process for the JVM (``cat``, which exits when its standard input
closes, as Spark's gateway does) and write what the JVM would; the last runs
``headwater spark prepare`` and real Spark sessions: the archive written, mapped, and a
truncated one (SIGBUS in a JVM that maps it) removed with the session started without it.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from headwater.cloud.spark import _class_archive as ca
from headwater.cloud.spark._session import JAVA_OPTIONS, SMALL_JOB, end_jvm, java_home
from headwater.spark import session

from ._spark import GATEWAY_SOCKET

SIZE = 4096


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(ca.ENV, raising=False)
    return tmp_path / "cache" / "headwater"


@pytest.fixture
def jvm() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    yield proc
    proc.kill()
    proc.wait()


def _wrote(a: ca.Archive, size: int, said: int) -> None:
    """What the JVM leaves: ``size`` bytes of archive, a log that says it wrote ``said``."""
    assert a.writing is not None and a.log is not None
    a.writing.write_bytes(b"\0" * size)
    a.log.write_text(
        "[1.0s][info][cds,dynamic] Written dynamic archive 0x800 - 0x900 "
        f"[984 bytes header, {said} bytes total]\n"
    )


def _files(cache: Path) -> list[str]:
    """The folder's files but the writers' lock."""
    return sorted(p.name for p in cache.iterdir() if p.name != ".lock")


def test_a_whole_archive_is_published_and_then_mapped(
    cache: Path, jvm: subprocess.Popen[bytes]
) -> None:
    assert ca.plan(java_home(), {}) is None  # none yet: sessions start as they did
    assert not cache.exists()  # and a session makes no folder
    a = ca.writer(java_home(), {})
    assert a.writing is not None and a.log is not None
    assert f"-XX:ArchiveClassesAtExit={a.writing}" in a.options and "-Xlog:cds*=off" in a.options
    assert (cache.stat().st_mode & 0o777) == 0o700
    with pytest.raises(ca.ArchiveError, match="another `headwater spark prepare` is writing"):
        ca.writer(java_home(), {})  # one writer at a time: the folder is locked
    _wrote(a, SIZE, SIZE)
    ca.finish(a, jvm, 10)
    assert jvm.returncode == 0
    assert _files(cache) == [a.path.name]
    assert a.path.stat().st_size == SIZE and (a.path.stat().st_mode & 0o777) == 0o400
    mapped = ca.plan(java_home(), {})
    assert mapped is not None and mapped.writing is None
    assert mapped.options == f"-XX:SharedArchiveFile={a.path} -Xlog:cds*=off"


def test_a_truncated_archive_is_not_published(cache: Path, jvm: subprocess.Popen[bytes]) -> None:
    a = ca.writer(java_home(), {})
    _wrote(a, SIZE - 1, SIZE)  # a full disk: less than the log says
    with pytest.raises(ca.ArchiveError, match="did not write a whole archive"):
        ca.finish(a, jvm, 10)
    assert _files(cache) == [] and ca.plan(java_home(), {}) is None


def test_a_jvm_killed_publishes_nothing(cache: Path) -> None:
    a = ca.writer(java_home(), {})
    _wrote(a, SIZE, SIZE)
    proc = subprocess.Popen(["sh", "-c", "kill -9 $$"], stdin=subprocess.PIPE)
    with pytest.raises(ca.ArchiveError, match="exited with status -9"):
        ca.finish(a, proc, 10)
    assert _files(cache) == [] and ca.plan(java_home(), {}) is None


def test_a_place_taken_by_a_folder_is_one_line(cache: Path, jvm: subprocess.Popen[bytes]) -> None:
    a = ca.writer(java_home(), {})
    _wrote(a, SIZE, SIZE)
    a.path.mkdir()
    (a.path / "x").touch()
    with pytest.raises(ca.ArchiveError, match=str(a.path)):
        ca.finish(a, jvm, 10)


def test_what_a_killed_writer_left_is_removed_by_the_next(cache: Path) -> None:
    a = ca.writer(java_home(), {})
    left = [a.path.with_name(f"{a.path.name}.1.{s}") for s in ("tmp", "log")]
    for f in left:
        f.touch()  # a writer killed (its pid alive again, or in another namespace)
    ca.abandon(a)
    assert ca.writer(java_home(), {}).writing is not None  # the lock is free: a writer may
    assert not any(f.exists() for f in left)


def test_an_unsafe_folder_or_archive_is_never_used(
    cache: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    w = ca.writer(java_home(), {})
    ca.abandon(w)
    w.path.write_bytes(b"\0" * SIZE)
    os.chmod(w.path, 0o664)  # anyone in the group could have written it
    assert ca.plan(java_home(), {}) is None
    os.chmod(w.path, 0o400)
    assert ca.plan(java_home(), {}) is not None
    os.chmod(cache, 0o777)
    assert ca.plan(java_home(), {}) is None
    with pytest.raises(ca.ArchiveError, match="no cache folder of yours"):
        ca.writer(java_home(), {})
    os.chmod(cache, 0o700)
    monkeypatch.setenv(ca.ENV, "off")
    assert ca.plan(java_home(), {}) is None
    monkeypatch.delenv(ca.ENV)
    conf = tmp_path / "spark-conf"
    conf.mkdir()
    (conf / "log4j2.properties").touch()  # on the class path: Java maps no archive then
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    assert ca.plan(java_home(), {}) is None
    with pytest.raises(ca.ArchiveError, match=r"conf folder .* is on the driver's class path"):
        ca.writer(java_home(), {})
    monkeypatch.delenv("SPARK_CONF_DIR")
    for name in ("a cache", "a'cache", "cäche"):  # Spark splits its options; a C locale
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache.parent.parent / name))
        assert ca.plan(java_home(), {}) is None


def test_another_class_path_is_another_archive(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = ca.writer(java_home(), {})
    ca.abandon(one)
    two = ca.writer(java_home(), {"spark.driver.extraClassPath": "/opt/extra.jar"})
    ca.abandon(two)
    monkeypatch.setenv("HADOOP_CONF_DIR", "/etc/hadoop")
    three = ca.writer(java_home(), {})
    ca.abandon(three)
    assert len({one.path, two.path, three.path}) == 3


def test_prepare_says_why_it_cannot(cache: Path) -> None:
    cache.mkdir(parents=True)
    cache.chmod(0o775)  # the group may write it: no archive is written there, or read
    done = _prepare()
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("headwater spark prepare: no class archive for Spark: no cache")
    assert "Traceback" not in done.stderr and _files(cache) == []


def _driver_options() -> str:
    from pyspark import SparkContext

    assert SparkContext._gateway is not None
    return " ".join(psutil.Process(SparkContext._gateway.proc.pid).cmdline())


def _prepare() -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headwater", "spark", "prepare"],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _prepared() -> str:
    done = _prepare()
    assert done.returncode == 0, done.stderr
    return done.stdout


@GATEWAY_SOCKET
@pytest.mark.timeout(600)
def test_prepare_writes_it_sessions_map_it_and_a_truncated_one_is_dropped(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where the JVM that dies of the truncated one leaves its report
    count = "SELECT count(*) AS n FROM range(100)"
    said = _prepared()
    [published] = list(cache.glob("spark-classes-*.jsa"))
    assert said.startswith(f"wrote {published} (") and said.endswith(
        "Spark's drivers start from it\n"
    )
    assert _files(cache) == [published.name]
    again = _prepared()
    assert again.startswith(f"{published} (") and "is there already" in again

    s = session("archive-map", "local[1]", dict(SMALL_JOB))
    assert f"-XX:SharedArchiveFile={published}" in _driver_options()
    assert s.sql(count).collect()[0].n == 100
    end_jvm()

    with warnings.catch_warnings():  # PySpark leaves a dead JVM's pipe to the collector
        warnings.simplefilter("ignore", ResourceWarning)
        with pytest.raises(Exception, match="JAVA_GATEWAY_EXITED"):  # failing for another cause
            session("archive-bad-option", "local[1]", {JAVA_OPTIONS: "-Xss1k"})
        gc.collect()
    assert published.exists()  # kept: it was not the cause

    whole = published.read_bytes()
    published.chmod(0o600)
    published.write_bytes(whole[: len(whole) // 8])  # a JVM mapping this dies of SIGBUS
    published.chmod(0o400)
    s = session("archive-truncated", "local[1]", dict(SMALL_JOB))
    assert "SharedArchiveFile" not in _driver_options()
    assert s.sql(count).collect()[0].n == 100
    end_jvm()
    assert not published.exists()  # removed: sessions start without until prepared again
