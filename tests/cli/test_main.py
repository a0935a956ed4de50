"""The command line's entry point: --version, and a reader that goes away mid-output."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from headwater import __version__, _cli

# a command whose output outgrows any pipe's buffer: the parser's, with one that prints a lot
_LONG_OUTPUT = """
import sys
from headwater import _cli

parser = _cli._parser
def long_parser():
    p = parser()
    p.set_defaults(func=lambda args: [print("line", n) for n in range(200_000)] and 0)
    return p
_cli._parser = long_parser
sys.exit(_cli.main([]))
"""


def test_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "headwater", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"headwater {__version__}\n", "")


def test_an_unknown_agent_footprint_is_refused_with_its_choices() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "headwater", "agent", "--insecure", "--footprint", "tiny"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "--footprint: invalid choice: 'tiny' (choose from" in done.stderr, done.stderr
    assert "'normal', 'small'" in done.stderr or "normal, small" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_reader_that_goes_away_ends_the_output_quietly() -> None:
    """``headwater status | head``: no BrokenPipeError traceback, the exit status a pipe's
    writer has when its reader is gone (128 + SIGPIPE)."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        done = subprocess.run(
            [sys.executable, "-c", _LONG_OUTPUT],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode == 141


def _commands(
    parser: argparse.ArgumentParser, path: str = "headwater"
) -> Iterator[tuple[str, Any]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{path} {name}")


def test_every_option_says_what_it_is_and_its_default() -> None:
    """Every argument of every command has help text; an option with a default value says
    it (``default ...``), so that ``--help`` alone tells what a bare command does."""
    missing: list[str] = []
    for path, parser in _commands(_cli._parser()):
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction | argparse._HelpAction):
                continue
            if a.help == argparse.SUPPRESS or isinstance(a, argparse._VersionAction):
                continue
            name = f"{path} {'/'.join(a.option_strings) or a.dest}"
            if not a.help:
                missing.append(f"{name}: no help")
            elif (
                a.option_strings
                and a.default not in (None, False, [], "", argparse.SUPPRESS)
                and a.nargs != 0
                and "default" not in a.help
            ):
                missing.append(f"{name}: default {a.default!r} not said")
    assert missing == []
