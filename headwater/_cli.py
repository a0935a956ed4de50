"""The ``headwater`` command line: ``main`` and the commands' parsers, each family in a
module of its own (``_run_cli``: run, status, demo; ``_daemon_cli``: master, worker, agent;
``_cluster_cli``: submit, kill, nodes; then live edits, tokens, models, reading sinks'
outputs, simulated sensors, Spark and logs)."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from headwater.common._exceptions import HeadwaterError, StartupStopped


def main(argv: list[str] | None = None) -> int:
    from headwater.common.runtime._procs import NO_GRPC_FORK_HANDLERS

    for key, value in NO_GRPC_FORK_HANDLERS.items():  # before anything imports grpc
        os.environ.setdefault(key, value)
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return code
    except BrokenPipeError:
        # the reader went away (``headwater status | head``): stop quietly, as a pipe's
        # writer does, without the traceback nor the interpreter's own complaint at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _main(argv: list[str] | None) -> int:
    from headwater._run_cli import split_topology_args

    parser = _parser()
    argv, topology_args = split_topology_args(sys.argv[1:] if argv is None else list(argv))
    args = parser.parse_args(argv)
    if topology_args:
        args.topology_args = topology_args
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except HeadwaterError as exc:
        print(f"headwater: error: {exc}", file=sys.stderr)
        return 2
    except StartupStopped as stop:  # Ctrl-C while Spark started: its JVM is stopped too
        print(f"headwater: {stop}", file=sys.stderr, flush=True)
        return 128 + stop.signum
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    from headwater import (
        __version__,
        _cluster_cli,
        _daemon_cli,
        _edits_cli,
        _health_cli,
        _logs_cli,
        _models_cli,
        _read_cli,
        _run_cli,
        _sensors_cli,
        _spark_cli,
        _tokens_cli,
    )

    p = argparse.ArgumentParser(
        prog="headwater",
        description="Edge-to-cloud IoT streaming: run, inspect and manage topologies.",
    )
    p.add_argument("--version", action="version", version=f"headwater {__version__}")
    sub = p.add_subparsers(metavar="COMMAND")
    master_help = (
        "the master's API URL (default: $HEADWATER_MASTER, else the topology "
        "started by `headwater run` on this machine)"
    )
    _run_cli.add_parsers(sub, master_help)
    _daemon_cli.add_parsers(sub)
    _cluster_cli.add_parsers(sub, master_help)
    _edits_cli.add_parsers(sub, master_help)
    _health_cli.add_parsers(sub, master_help)
    _tokens_cli.add_parsers(sub, master_help)
    _models_cli.add_parsers(sub, master_help)
    _read_cli.add_parsers(sub)
    _sensors_cli.add_parsers(sub)
    _spark_cli.add_parsers(sub)
    _logs_cli.add_parsers(sub)
    return p
