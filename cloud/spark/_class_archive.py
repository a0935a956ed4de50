"""The classes of Spark's driver JVM mapped from an archive (AppCDS): half its start-up.

A driver loads some 12,000 classes from Spark's jars as it starts; a JVM that maps them
from a class archive starts on about half the CPU (bench/RESULTS.md, "Spark's start-up").
``headwater spark prepare`` writes the archive: one small local session whose JVM writes
the classes it loaded as it exits (``-XX:ArchiveClassesAtExit``) into a file of its own;
once that JVM has exited 0 and its log says the archive was written whole, the file is
synced and renamed into place (``CACHE/headwater/spark-classes-DIGEST.jsa``, CACHE being
``XDG_CACHE_HOME`` or ``~/.cache``; the digest of the Java runtime, Spark's jars and the
driver's class path, for which alone it is valid). Every later session maps it
(``-XX:SharedArchiveFile``). No session writes one unasked: a JVM writing it takes twice
the CPU and some seconds more to exit, which a command the user waits on, or a rollup
stopped with a grace period, should not pay.

A JVM that maps a truncated archive dies of SIGBUS (measured), so nothing but a whole,
synced file is published, one writer at a time (a ``flock`` on the folder, which also lets
the next writer remove what a killed one left); when a driver does not start while mapping
one, ``session()`` starts once more without and removes the archive only if that start
succeeds. An archive is code the JVM runs: the folder and the file must be the user's own
and writable by no one else, or none is used, and only a writer creates the folder. Where
there is none, where its path is not plain ASCII without spaces or quotes (Spark splits its
Java options on them), where Spark's conf folder holds files (Java maps no archive with a
non-empty folder on the class path), or with ``HEADWATER_SPARK_CLASS_ARCHIVE=off``, sessions
start without one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import re
import stat
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from headwater.common._durable import fsync_dir

ENV = "HEADWATER_SPARK_CLASS_ARCHIVE"
log = logging.getLogger(__name__)
_QUIET = "-Xlog:cds*=off"  # the JVM's CDS warnings would go to the command's own stdout
_WRITTEN = re.compile(rb"Written dynamic archive .*\[\d+ bytes header, (\d+) bytes total\]")


_NO_FOLDER = (
    "no cache folder of yours that no one else can write, with no space or quote in its path "
    f"(XDG_CACHE_HOME, else ~/.cache), or it is turned off ({ENV}=off)"
)
_CONF_DIR = (
    "Spark's conf folder ({}) is on the driver's class path and not empty: Java maps no class "
    "archive then"
)


class ArchiveError(Exception):
    """No class archive could be written: why, in one line."""


@dataclass
class Archive:
    """The archive of one session's driver: the one it maps, or the one its JVM writes."""

    path: Path  # published, or to be
    options: str  # for spark.driver.extraJavaOptions
    writing: Path | None = None  # the file this session's JVM writes as it exits
    log: Path | None = None  # its JVM's CDS log: says whether it wrote the archive whole
    lock: int | None = None  # the writer's lock on the folder (flock), held until finish


def plan(java_home: str, conf: Mapping[str, str]) -> Archive | None:
    """The archive a new driver maps; None where there is none (or none safe, or it is off)."""
    try:
        path = _path(java_home, conf, create=False)
    except ArchiveError:
        return None
    if not _safe(path):
        return None
    return Archive(path, f"-XX:SharedArchiveFile={path} {_QUIET}")


def writer(java_home: str, conf: Mapping[str, str]) -> Archive:
    """The archive a new driver is to write as it exits, the folder locked for it (one
    writer at a time); ``ArchiveError`` saying why not."""
    path = _path(java_home, conf, create=True)
    lock = os.open(path.parent / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        raise ArchiveError(f"another `headwater spark prepare` is writing {path} now") from None
    for left in [
        *path.parent.glob("spark-classes-*.tmp"),
        *path.parent.glob("spark-classes-*.log"),
    ]:
        with contextlib.suppress(OSError):  # a killed writer's: no one else holds the lock
            left.unlink()
    writing = path.parent / f"{path.name}.{os.getpid()}.tmp"
    log = writing.with_suffix(".log")
    options = f"-XX:ArchiveClassesAtExit={writing} {_QUIET} -Xlog:cds+dynamic=info:file={log}"
    return Archive(path, options, writing, log, lock)


def finish(archive: Archive, jvm: subprocess.Popen[bytes], wait_s: float = 300.0) -> None:
    """End ``jvm`` (its standard input closed: it exits, writing the archive) and publish
    the archive; ``ArchiveError`` if it did not write a whole one."""
    writing, log = archive.writing, archive.log
    assert writing is not None and log is not None, "an archive mapped, not written"
    try:
        with contextlib.suppress(OSError, ValueError):
            if jvm.stdin is not None:
                jvm.stdin.close()
        try:
            jvm.wait(wait_s)
        except subprocess.TimeoutExpired:
            jvm.kill()
            jvm.wait()
            raise ArchiveError(f"Java took over {wait_s:.0f} s to write the archive") from None
        if jvm.returncode != 0:
            raise ArchiveError(f"Java exited with status {jvm.returncode} writing the archive")
        if not _whole(writing, log):
            raise ArchiveError("Java did not write a whole archive (its log says nothing of one)")
        _publish(writing, archive.path)
    except OSError as e:  # a full disk, a folder where the archive goes
        raise ArchiveError(f"{e.strerror or e}: {e.filename or archive.path}") from None
    finally:
        abandon(archive)


def abandon(archive: Archive) -> None:
    """Remove what the writer left (its file, its log) and let the folder's lock go."""
    for left in (archive.writing, archive.log):
        if left is not None:
            with contextlib.suppress(OSError):
                left.unlink()
    if archive.lock is not None:
        os.close(archive.lock)
    archive.writing = archive.log = archive.lock = None


def forget(archive: Archive) -> None:
    """A driver did not start mapping ``archive`` and started without it: remove it (it is
    the cause), and say to prepare it again."""
    with contextlib.suppress(OSError):
        archive.path.unlink()
    log.warning(
        "Spark's driver did not start with the class archive %s: removed; it started without "
        "(`headwater spark prepare` writes a new one)",
        archive.path,
    )


def _path(java_home: str, conf: Mapping[str, str], *, create: bool) -> Path:
    """Where the archive for this runtime and class path is; ``ArchiveError`` if it is off,
    no safe folder is there (or, ``create``, can be made), or Java could not map one."""
    if os.environ.get(ENV, "").lower() in ("off", "0", "no", "false"):
        raise ArchiveError(_NO_FOLDER)
    folder = _folder(create)
    if folder is None:
        raise ArchiveError(_NO_FOLDER)
    try:
        import pyspark

        spark = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent).resolve()
        conf_dir = Path(os.environ.get("SPARK_CONF_DIR") or spark / "conf")
        if conf_dir.is_dir() and any(conf_dir.iterdir()):
            raise ArchiveError(_CONF_DIR.format(conf_dir))
        return folder / f"spark-classes-{_digest(java_home, spark, conf)}.jsa"
    except (OSError, ImportError) as e:
        raise ArchiveError(f"Spark's install could not be read: {e}") from None


def _folder(create: bool) -> Path | None:
    """CACHE/headwater (made 0700 when ``create``); None unless it is the user's own, writable
    by no one else, and its path is plain ASCII that Spark's option parsing takes whole."""
    try:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        folder = base / "headwater"
        if create:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.lstat()
    except (OSError, RuntimeError):
        return None
    mine = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
    if not mine or st.st_mode & 0o022 or re.search(r"[^A-Za-z0-9_./@+-]", str(folder)):
        return None
    return folder


def _safe(path: Path) -> bool:
    """A regular file of the user's, writable by no one else."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def _digest(java_home: str, spark: Path, conf: Mapping[str, str]) -> str:
    """What an archive is valid for: the Java runtime, Spark's jars, the driver's class path
    (the settings and the variables Spark's launcher builds it from)."""
    h = hashlib.sha256()
    home = Path(java_home).resolve()
    release = home / "release"
    h.update(str(home).encode())
    h.update(release.read_bytes() if release.exists() else b"")
    h.update(str(spark).encode())
    for jar in sorted((spark / "jars").glob("*.jar")):
        st = jar.stat()
        h.update(f"{jar.name} {st.st_size} {st.st_mtime_ns}\n".encode())
    h.update(conf.get("spark.driver.extraClassPath", "").encode())
    for var in _CLASS_PATH_VARS:
        h.update(f"{var}={os.environ.get(var, '')}\n".encode())
    return h.hexdigest()[:16]


_CLASS_PATH_VARS = (
    "SPARK_CONF_DIR",
    "HADOOP_CONF_DIR",
    "YARN_CONF_DIR",
    "SPARK_DIST_CLASSPATH",
    "PYSPARK_SUBMIT_ARGS",
)


def _whole(writing: Path, log: Path) -> bool:
    """The JVM's log says it wrote the archive, and the file holds all it said it wrote."""
    found = _WRITTEN.search(log.read_bytes())
    return found is not None and writing.stat().st_size >= int(found.group(1))


def _publish(writing: Path, path: Path) -> None:
    fd = os.open(writing, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(writing, 0o400)
    os.replace(writing, path)
    fsync_dir(path.parent)
