"""Processes the tests look for."""

from __future__ import annotations

import os

import psutil


def in_group(pgid: int) -> list[psutil.Process]:
    """The live processes of process group ``pgid``."""
    found = []
    for p in psutil.process_iter():
        try:
            if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except (ProcessLookupError, psutil.Error):
            continue
    return found
