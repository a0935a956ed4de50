"""`headwater sensors`: simulated sensors publishing JSON readings over MQTT (QoS 1).

Each sensor publishes ``{"site", "sensor", "seq", "ts", "value", "unit"}`` to
``sensors/<site>/<sensor>`` (the readings of ``headwater._demo.sensors``), one
reading in flight at a time: a reading counts as sent once the broker has
acknowledged it (PUBACK). Each sensor's ``seq`` goes on across runs: the next
seq of every sensor is kept in a small state file per site (``--state-dir``), so a
second run never repeats a seq the pipeline would drop as a redelivery (and two runs at
once for a site with the same state are refused). With the
wall clock (the default) a reading's ``ts`` is when it is sent; with ``--clock sim``
it is ``BASE_TS + seq * --step-ms``, so a fresh state dir gives the same readings
on every run (what tests recompute offline).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from headwater._argtypes import number, whole
from headwater.common._exceptions import HeadwaterError

PROGRESS_S = 5.0  # at most one progress line this often
CONNECT_S = 10.0  # how long the first connection (and its CONNACK) may take
POLL_S = 0.1  # how often a wait for the broker looks whether the run was stopped


def default_state_dir() -> Path:
    base = os.environ.get("HEADWATER_STATE_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME", os.path.expanduser("~/.local/state")), "headwater"
    )
    return Path(base) / "sensors"


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "sensors",
        help="publish simulated sensor readings over MQTT (QoS 1), seq kept across runs",
        description=(__doc__ or "").split("\n\n", 1)[1].replace("``", "`"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--broker",
        default="127.0.0.1:1883",
        metavar="HOST:PORT",
        help="the broker's HOST:PORT (default: %(default)s)",
    )
    p.add_argument(
        "--sites",
        type=whole(1),
        default=2,
        metavar="N",
        help="how many sites, named site0, site1, ... (default: %(default)s)",
    )
    p.add_argument(
        "--site",
        action="append",
        metavar="NAME",
        help="publish only this one of the sites (repeatable; default: all of them)",
    )
    p.add_argument(
        "--per-site", type=whole(1), default=3, metavar="K", help="sensors per site (default: 3)"
    )
    p.add_argument(
        "--count",
        type=whole(0),
        default=0,
        metavar="N",
        help="readings per sensor, then stop (default: 0, until Ctrl-C or SIGTERM)",
    )
    p.add_argument(
        "--rate",
        type=number(0),
        default=1.0,
        metavar="R",
        help="readings per second per sensor; 0: as fast as the broker acknowledges them "
        "(default: 1)",
    )
    p.add_argument(
        "--clock",
        choices=("wall", "sim"),
        default="wall",
        help="a reading's ts: wall, when it is sent; sim, BASE_TS (2023-11-14 22:13:20 UTC) "
        "+ seq * --step-ms, the same on every run (default: wall)",
    )
    p.add_argument(
        "--step-ms",
        type=whole(1),
        default=1000,
        metavar="MS",
        help="--clock sim: event time between two readings of a sensor (default: 1000)",
    )
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where each sensor's next seq is kept, a file per site (default: sensors/ in "
        "$HEADWATER_STATE_DIR, else ~/.local/state/headwater)",
    )
    p.add_argument(
        "--first-seq",
        type=whole(0),
        metavar="N",
        help="start every sensor at seq N instead of where the state file says (a seq "
        "published before is dropped by the pipeline as a redelivery; default: the state's)",
    )
    p.add_argument("--client-id", help="the MQTT client id (default: headwater-sensors-SITES)")
    p.add_argument("--username", help="the broker account to log in as (default: none)")
    p.add_argument(
        "--password-file",
        metavar="FILE",
        help="a file holding that account's password (default: $HEADWATER_MQTT_PASSWORD)",
    )
    p.set_defaults(func=_cmd_sensors)


# removing a lost state would start every sensor at 0 again: the pipeline drops each seq at
# or below a sensor's last as a redelivery, so those readings would be lost
_RECOVER = "start past the seqs published before with --first-seq N (it replaces the state)"


class _State:
    """Each sensor's next seq, one JSON file per site (``DIR/<site>.json``), kept atomically."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock_fd = -1  # its locks held until the process exits
        self._kept: dict[str, dict[str, Any]] = {}  # each site's state as last written

    def _file(self, site: str) -> Path:
        return self.folder / f"{site}.json"

    def lock(self, number: int) -> None:
        """Hold site ``number``'s lock for this process's life (byte ``number`` of one lock
        file: one descriptor for any number of sites): a second run publishing the site
        with this state would send the same seqs, which the pipeline drops as redeliveries."""
        path = self.folder / ".lock"
        try:
            if self._lock_fd < 0:
                self._lock_fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.lockf(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, number)
        except BlockingIOError:
            raise HeadwaterError(
                f"site{number} is being published by another `headwater sensors` with the "
                f"state {self.folder}: stop it first, or publish other sites (--site)"
            ) from None
        except OSError as exc:
            raise HeadwaterError(f"cannot lock {path}: {exc.strerror or exc}") from None

    def load(self, site: str, sensors: list[str]) -> dict[str, int]:
        path = self._file(site)
        try:
            kept = json.loads(path.read_text())
        except FileNotFoundError:
            kept = {}
        except (OSError, ValueError) as exc:
            raise HeadwaterError(
                f"cannot read the sensors' state {path}: {exc}; {_RECOVER}"
            ) from None
        if not isinstance(kept, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in kept.values()
        ):
            raise HeadwaterError(f"{path} is not a state `headwater sensors` wrote; {_RECOVER}")
        return {s: int(kept.get(s, 0)) for s in sensors}

    def save(self, site: str, next_seq: dict[str, int]) -> None:
        path = self._file(site)
        kept = self._kept.get(site)
        if kept is None:  # read once: the site's lock keeps other runs from writing it
            try:
                kept = json.loads(path.read_text())
            except (OSError, ValueError):
                kept = {}
            if not isinstance(kept, dict):  # unreadable, replaced by --first-seq
                kept = {}
            self._kept[site] = kept
        kept.update(next_seq)  # sensors of the site this run did not publish stay as they were
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            tmp.write_text(json.dumps(kept, sort_keys=True) + "\n")
            tmp.replace(path)
        except OSError as exc:
            raise HeadwaterError(
                f"cannot keep the sensors' next seqs in {path}: {exc.strerror or exc}"
            ) from None


class _Acks:
    """The broker's acknowledgements (QoS 1 PUBACKs) and the connection's outcome."""

    def __init__(self) -> None:
        self.count = 0
        self.refused = ""  # the broker's reason for refusing the connection
        self.connected = False
        self._cond = threading.Condition()

    def on_connect(self, _c: Any, _u: Any, _f: Any, reason: Any, _p: Any = None) -> None:
        with self._cond:
            if reason.is_failure:
                self.refused = str(reason)
            else:
                self.connected = True
            self._cond.notify_all()

    def on_publish(self, *_: Any) -> None:
        with self._cond:
            self.count += 1
            self._cond.notify_all()

    def wait_connected(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self.connected or bool(self.refused), timeout)

    def wait(self, count: int, stop: threading.Event | None, timeout: float | None) -> bool:
        """Whether ``count`` are acknowledged, waiting until they are, ``stop`` is set (a
        signal handler sets it without notifying: checked every ``POLL_S``) or ``timeout``
        passes."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self.count < count and not (stop is not None and stop.is_set()):
                left = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
                if left <= 0:
                    break
                self._cond.wait(left)
            return self.count >= count


def _sites(args: argparse.Namespace) -> list[int]:
    known = [f"site{s}" for s in range(args.sites)]
    for name in args.site or ():
        if name not in known:
            raise HeadwaterError(
                f"--site {name}: not one of the {args.sites} sites ({', '.join(known)})"
            )
    return [s for s in range(args.sites) if not args.site or known[s] in args.site]


def _broker(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise HeadwaterError(f"--broker must be HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def _cmd_sensors(args: argparse.Namespace) -> int:
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    host, port = _broker(args.broker)
    sites = _sites(args)
    password = os.environ.get("HEADWATER_MQTT_PASSWORD")
    if args.password_file:
        try:
            password = Path(args.password_file).read_text().strip("\r\n")
        except OSError as exc:
            raise HeadwaterError(f"cannot read --password-file: {exc.strerror}") from None
    folder = Path(args.state_dir) if args.state_dir else default_state_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HeadwaterError(f"cannot make the state dir {folder}: {exc.strerror}") from None
    state = _State(folder)
    for s in sites:
        state.lock(s)
    names = {s: [f"s{s}-{k}" for k in range(args.per_site)] for s in sites}
    if args.first_seq is not None:  # whatever the state says, even one unreadable
        next_seq = {s: dict.fromkeys(names[s], args.first_seq) for s in sites}
    else:
        next_seq = {s: state.load(f"site{s}", names[s]) for s in sites}

    client_id = args.client_id or "headwater-sensors-" + "-".join(f"site{s}" for s in sites)
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id)
    if args.username:
        client.username_pw_set(args.username, password)
    acks = _Acks()
    client.on_connect = acks.on_connect
    client.on_publish = acks.on_publish
    try:
        client.connect(host, port)
    except (OSError, ValueError) as exc:
        raise HeadwaterError(
            f"cannot reach the MQTT broker at {host}:{port}: {exc}; is it running there? "
            "(--broker HOST:PORT)"
        ) from None
    client.loop_start()  # paho reconnects after a loss; unacknowledged readings are resent
    try:
        acks.wait_connected(CONNECT_S)
        if acks.refused:
            raise HeadwaterError(
                f"the MQTT broker at {host}:{port} refused the connection: {acks.refused}"
            )
        if not acks.connected:
            raise HeadwaterError(
                f"the MQTT broker at {host}:{port} did not answer within {CONNECT_S:.0f}s; "
                "is it an MQTT broker, and running there? (--broker HOST:PORT)"
            )
        _publish(client, acks, args, {s: next_seq[s] for s in sites}, state)
    finally:
        client.disconnect()
        client.loop_stop()
    return 0


def _seqs(next_seq: dict[int, dict[str, int]]) -> str:
    seqs = sorted({seq for per in next_seq.values() for seq in per.values()})
    return str(seqs[0]) if len(seqs) == 1 else f"{seqs[0]}..{seqs[-1]}"


def _publish(
    client: Any,
    acks: _Acks,
    args: argparse.Namespace,
    next_seq: dict[int, dict[str, int]],
    state: _State,
) -> None:
    """Publish round after round (a reading of every sensor), paced by ``--rate``."""
    from headwater._demo.sensors import BASE_TS, reading

    sites = list(next_seq)
    n = sum(len(v) for v in next_seq.values())
    rate = f"{args.rate:g} reading/s per sensor" if args.rate else "as fast as acknowledged"
    clock = "wall clock" if args.clock == "wall" else f"simulated clock, {args.step_ms} ms a step"
    print(
        f"publishing {n} sensors ({', '.join(f'site{s}' for s in sites)}) to {args.broker} "
        f"on sensors/<site>/<sensor>, QoS 1, {rate}, {clock}, "
        f"{f'{args.count} readings each' if args.count else 'until Ctrl-C'}; "
        f"seq from {_seqs(next_seq)} (state: {state.folder})",
        flush=True,
    )
    stop = threading.Event()  # SIGTERM (docker stop) and Ctrl-C end the run between readings
    old = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
    sent = rounds = 0
    began = time.monotonic()
    next_progress = began + PROGRESS_S
    try:
        while not stop.is_set() and (not args.count or rounds < args.count):
            for s in sites:  # the round's seqs taken first: a run killed outright (SIGKILL,
                # docker stop's grace over) never sends an acknowledged seq again next time
                state.save(f"site{s}", {sensor: seq + 1 for sensor, seq in next_seq[s].items()})
            for s in sites:
                for k, (sensor, seq) in enumerate(list(next_seq[s].items())):
                    if args.clock == "sim":
                        ts = BASE_TS + seq * args.step_ms
                    else:
                        ts = int(time.time() * 1000)
                    topic, body = reading(s, k, seq, ts)
                    while not client.is_connected() and not stop.wait(0.1):
                        pass  # the broker is away: paho reconnects
                    if stop.is_set():
                        break
                    # QoS 1: if the link drops before the PUBACK, paho sends it again on
                    # reconnect (a duplicate the pipeline drops by seq); only PUBACKs count
                    client.publish(topic, json.dumps(body), qos=1)
                    sent += 1
                    if not (acks.wait(sent, stop, None) or acks.wait(sent, None, 10.0)):
                        stop.set()  # stopped, and the broker never acknowledged it
                        break
                    next_seq[s][sensor] = seq + 1  # one in flight at a time, acknowledged
            for s in sites:  # where the next run goes on: no seq twice, none skipped
                # (an unacknowledged one is sent again)
                state.save(f"site{s}", next_seq[s])
            if stop.is_set():
                break
            rounds += 1
            now = time.monotonic()
            if now >= next_progress:
                print(
                    f"  sent {sent} readings, {acks.count} acknowledged by the broker; "
                    f"next seq {_seqs(next_seq)}",
                    flush=True,
                )
                next_progress = now + PROGRESS_S
            if args.rate and rounds != args.count:
                stop.wait(max(0.0, began + rounds / args.rate - time.monotonic()))
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    print(
        f"published {acks.count} readings (acknowledged by the broker); next seq "
        f"{_seqs(next_seq)}, kept in {state.folder}",
        flush=True,
    )
