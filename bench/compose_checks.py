"""The compose cluster's health checks: CPU per check, a Python one against etc/healthy.

Docker runs each service's check every 3 to 5 seconds for as long as the container lives.
This runs the agent's check both ways against a local HTTP server that answers as the
agent's status port does, alternating, ``--checks`` times each, and takes the CPU of the
checks from the children's resource usage: the Python check as the compose file had it
(``python3 -c "import json, urllib.request ..."``, run by this interpreter, as the image's
venv runs it: no launcher shim) and
``bash deploy/compose/etc/healthy http PORT /status TEXT...``. Prints and writes
``bench/results/compose_checks.json``. Run as ``python -m bench compose-checks``.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).with_name("results") / "compose_checks.json"
HEALTHY = Path(__file__).resolve().parents[1] / "deploy" / "compose" / "etc" / "healthy"
STATUS = b'{"id": "a", "attached": true, "metrics": {"mqtt_connected": 1.0}}'
PYTHON_CHECK = (
    "import json, urllib.request as u; s = json.load(u.urlopen('http://127.0.0.1:{port}/status',"
    " timeout=3)); exit(0 if s['attached'] and s['metrics'].get('mqtt_connected') == 1 else 1)"
)


class _Status(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(STATUS)

    def log_message(self, *args: object) -> None:
        pass


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checks", type=int, default=40, help="checks of each kind")
    p.add_argument("--out", default=str(RESULTS))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(cmd: list[str]) -> float:
    before = _cpu()
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    return _cpu() - before


def run(args: argparse.Namespace) -> int:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Status)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    python = [sys.executable, "-c", PYTHON_CHECK.replace("{port}", str(port))]
    shell = ["bash", str(HEALTHY), "http", str(port), "/status", '"attached": true']
    shell.append('"mqtt_connected": 1.0')
    spent: dict[str, float] = {"python3 -c": 0.0, "etc/healthy": 0.0}
    try:
        for _ in range(args.checks):
            spent["python3 -c"] += _timed(python)
            spent["etc/healthy"] += _timed(shell)
    finally:
        server.shutdown()
        server.server_close()
    per: dict[str, Any] = {k: round(1000 * v / args.checks, 1) for k, v in spent.items()}
    doc = {"checks": args.checks, "cpu_ms_per_check": per, "load": os.getloadavg()[0]}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc, indent=1))
    return 0
