"""``headwater master``'s Docker scheduler options and ``headwater logs``: a bad value is a
one-line error (exit 2) that says what to give, before anything starts or is called."""

from __future__ import annotations

import pytest

from headwater._cli import main


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["master", "--docker-image", "x:1"], "--docker-image is for --scheduler docker"),
        (["master", "--docker-network", "n"], "--docker-network is for --scheduler docker"),
        (["master", "--advertise", "10.0.0.1:7070"], "--advertise is for --scheduler docker"),
        (["master", "--scheduler", "docker", "--advertise", "nohost"], "is not HOST:PORT"),
        (["master", "--scheduler", "docker", "--advertise", "h:99999"], "is not HOST:PORT"),
        (["logs", "wc/x", "--master", "http://127.0.0.1:9"], "as in wc/0"),
        (["logs", "/0", "--master", "http://127.0.0.1:9"], "as in wc/0"),
    ],
)
def test_bad_options_say_what_to_give(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("headwater: error: ") and says in err, err


@pytest.mark.parametrize("tail", ["0", "10001", "x"])
def test_a_tail_out_of_range_is_a_usage_error(
    tail: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["logs", "wc", "--tail", tail])
    assert exited.value.code == 2
    assert "--tail" in capsys.readouterr().err


def test_the_scheduler_is_one_of_two(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["master", "--scheduler", "kubernetes"])
    assert "invalid choice: 'kubernetes'" in capsys.readouterr().err


def test_advertise_and_no_advertise_are_two_options() -> None:
    from headwater._cli import _parser
    from headwater._docker_cli import docker_options

    args = _parser().parse_args(["master", "--no-advertise"])
    assert args.advertise is False and docker_options(args) is None
    args = _parser().parse_args(["master", "--scheduler", "docker", "--advertise", "10.0.0.1:70"])
    assert args.advertise is True
    options = docker_options(args)
    assert options is not None and options.advertise == "10.0.0.1:70"
