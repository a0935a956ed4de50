"""The shell blocks of README.md and docs/, and a shell that runs their lines as written.

A block is the lines of one ```sh fence under a heading, in README.md or any
``docs/**/*.md`` (``doc_files``); its key is the heading and its place under it.
``ReadmeShell`` runs each line with bash in one environment (``export`` lines carry over,
as in a terminal) and one working folder. Lines that do not return by themselves (daemons,
``headwater run``) are started in the background, each with a readiness condition the test
gives, and stopped at the end; every other line must exit 0.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ._support import wait_for

ROOT = Path(__file__).resolve().parents[2]


# How often a README walkthrough polls what a reader would wait for: its conditions mostly
# run the CLI (``headwater nodes``, ``headwater read``: about 0.3 CPU-s a run), and at the
# default 0.1 s a wait kept a core busy polling beside the daemons it waits on
CLI_POLL = 0.5


@dataclass
class Block:
    heading: str  # the nearest heading above it, without the #s
    index: int  # its place among the sh blocks under that heading
    lines: list[str]
    source: str = "README.md"  # the file it is in, relative to the root

    @property
    def key(self) -> str:
        return f"{self.heading} #{self.index}"


def doc_files() -> list[Path]:
    """README.md, then every Markdown file under docs/, by path."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def readme_blocks(text: str | None = None) -> list[Block]:
    """Every ```sh fence of README.md and docs/ (or of ``text``), in order, with its
    non-empty lines."""
    if text is not None:
        return _blocks(text, "README.md")
    return [b for f in doc_files() for b in _blocks(f.read_text(), f.relative_to(ROOT).as_posix())]


def _blocks(text: str, source: str) -> list[Block]:
    blocks: list[Block] = []
    heading, count = "", 0
    fence: list[str] | None = None
    for line in text.splitlines():
        if fence is not None:
            if line.startswith("```"):
                blocks.append(Block(heading, count, fence, source))
                count, fence = count + 1, None
            elif line.strip():
                fence.append(line)
        elif line.startswith("```sh"):
            fence = []
        elif line.startswith("#"):
            heading, count = line.lstrip("#").strip(), 0
    return blocks


def block(key: str) -> Block:
    found = [b for b in readme_blocks() if b.key == key]
    assert found, f"README.md and docs/ have no sh block {key!r}"
    return found[0]


def command_of(line: str) -> str:
    """The line without its trailing comment (bash's own rule: `#` after a blank)."""
    return re.sub(r"(^|\s)#.*$", "", line).strip()


@dataclass
class Background:
    line: str
    proc: subprocess.Popen[bytes]
    log: Path


@dataclass
class ReadmeShell:
    cwd: Path
    env: dict[str, str]
    logs: Path
    background: list[Background] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)  # command -> its stdout

    def run(
        self,
        blk: Block,
        long_running: Mapping[str, Callable[[], object]],
        before: Mapping[str, Callable[[], object]] | None = None,
        timeout: float = 300,
    ) -> None:
        """Each line of ``blk`` in order. ``long_running``: command prefix -> readiness
        condition (started in the background, then waited for); ``before``: command prefix
        -> a condition waited for before the line runs (what a reader waits for by eye)."""
        for line in blk.lines:
            cmd = command_of(line)
            for prefix, ready in (before or {}).items():
                if cmd.startswith(prefix):
                    wait_for(ready, 120, f"before {cmd!r}", interval=CLI_POLL)
            if cmd.startswith("export "):
                self._export(cmd)
            elif cmd.startswith("cd "):
                self.cwd = (self.cwd / self._expand(cmd[3:])).resolve()
            elif any(cmd.startswith(p) for p in long_running):
                self.start(cmd)
                self._ready(next(r for p, r in long_running.items() if cmd.startswith(p)), cmd)
            else:
                self.outputs[cmd] = self.check(cmd, timeout)

    def _ready(self, ready: Callable[[], object], cmd: str) -> None:
        wait_for(lambda: self._alive() and ready(), 180, f"{cmd!r} ready", interval=CLI_POLL)

    def bash(self, cmd: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", cmd],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def check(self, cmd: str, timeout: float = 300) -> str:
        res = self.bash(cmd, timeout)
        assert res.returncode == 0, f"{cmd}: exit {res.returncode}\n{res.stdout}\n{res.stderr}"
        return res.stdout

    def ok(self, cmd: str) -> str | None:
        """``cmd``'s stdout if it exits 0, else None (a condition to wait for)."""
        res = self.bash(cmd)
        return res.stdout if res.returncode == 0 else None

    def start(self, cmd: str) -> Background:
        log = self.logs / f"bg-{len(self.background)}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                ["bash", "-c", f"exec {cmd}"],
                cwd=self.cwd,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        bg = Background(cmd, proc, log)
        self.background.append(bg)
        return bg

    def _alive(self) -> bool:
        for bg in self.background:
            code = bg.proc.poll()
            assert code is None or code == 0, (
                f"{bg.line!r} exited {code}:\n{bg.log.read_text()[-3000:]}"
            )
        return True

    def _expand(self, words: str) -> str:
        return self.check(f"printf %s {words}").strip()

    def _export(self, cmd: str) -> None:
        name, _, value = cmd[len("export ") :].partition("=")
        self.env[name] = self.check(f"printf %s {value}")

    def stop(self) -> dict[str, int | None]:
        """SIGTERM every background line (its process group), then SIGKILL what remains
        after 30 s; the exit codes by line (None: had to be killed)."""
        codes: dict[str, int | None] = {}
        for bg in reversed(self.background):
            if bg.proc.poll() is None:
                os.killpg(bg.proc.pid, signal.SIGTERM)
            try:
                codes[bg.line] = bg.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(bg.proc.pid, signal.SIGKILL)
                bg.proc.wait(10)
                codes[bg.line] = None
        self.background.clear()
        return codes

    def log_of(self, prefix: str) -> str:
        return "\n".join(bg.log.read_text() for bg in self.background if bg.line.startswith(prefix))


def quoted(path: Path) -> str:
    return shlex.quote(str(path))
