"""headwater.cloud.local._commands: the command lines of a local run's processes."""

from __future__ import annotations

from pathlib import Path

from headwater.cloud.local._commands import container_args, tmaster_args

W = Path("/tmp/hw-x")


def test_a_first_tmaster_start_has_tokens_and_tls_and_no_ports() -> None:
    args = tmaster_args("/t.py", None, 2, W, W / "tmaster.json", insecure=False, tls_dir=W / "tls")
    assert args == [
        "-m",
        "headwater.cloud.tmaster",
        "--topology-file",
        "/t.py",
        "--containers",
        "2",
        "--ready-file",
        "/tmp/hw-x/tmaster.json",
        "--state-dir",
        "/tmp/hw-x/tmaster-state",
        "--tokens",
        "/tmp/hw-x/tokens.json",
        "--tls-dir",
        "/tmp/hw-x/tls",
    ]


def test_a_tmaster_restart_keeps_its_ports_and_names_the_topology() -> None:
    args = tmaster_args(
        "/t.py",
        "wc",
        1,
        W,
        W / "tmaster.json",
        insecure=True,
        tls_dir=W / "tls",
        grpc_address="127.0.0.1:4100",
        http_address="http://127.0.0.1:4101",
    )
    assert args[9:] == [
        "/tmp/hw-x/tmaster-state",
        "--insecure",
        "--grpc-port",
        "4100",
        "--http-port",
        "4101",
        "--topology",
        "wc",
    ]


def test_a_container_reaches_its_tmaster_with_its_own_state() -> None:
    args = container_args("/t.py", "wc", 1, 2, "127.0.0.1:4100", W, insecure=False, tls_dir=W)
    assert args == [
        "-m",
        "headwater.common.runtime.container",
        "--topology-file",
        "/t.py",
        "--container",
        "1",
        "--containers",
        "2",
        "--tmaster",
        "127.0.0.1:4100",
        "--workdir",
        "/tmp/hw-x",
        "--state-dir",
        "/tmp/hw-x/state/container-1",
        "--fork-instances",
        "--tls-dir",
        "/tmp/hw-x",
        "--topology",
        "wc",
    ]
    insecure = container_args("/t.py", None, 0, 1, "a:1", W, insecure=True, tls_dir=W)
    assert insecure[-1] == "--insecure"


def test_a_first_container_waits_for_its_tmasters_address_file() -> None:
    """The first start: the containers start beside their master and read its address from
    the file it writes once it listens; a restart is given the address itself."""
    ready = W / "tmaster.json"
    first = container_args("/t.py", None, 0, 2, "", W, insecure=True, tls_dir=W, tmaster_file=ready)
    assert "--tmaster" not in first
    assert first[first.index("--tmaster-file") + 1] == str(ready)
    again = container_args(
        "/t.py", None, 0, 2, "a:1", W, insecure=True, tls_dir=W, tmaster_file=ready
    )
    assert again[again.index("--tmaster") + 1] == "a:1"
    assert "--tmaster-file" not in again


def test_a_tmaster_writes_its_grpc_address_first_where_its_containers_read_it() -> None:
    grpc_ready = W / "tmaster-grpc.json"
    args = tmaster_args(
        "/t.py", None, 2, W, W / "tmaster.json", insecure=True, tls_dir=W, grpc_ready=grpc_ready
    )
    assert args[args.index("--grpc-ready-file") + 1] == str(grpc_ready)
    assert args[args.index("--ready-file") + 1] == str(W / "tmaster.json")
