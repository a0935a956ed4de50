"""``headwater models register`` through a real master process (issue 33, acceptance 3).

An ONNX model and a JSON anomaly document are registered with the CLI, listed and shown
with their kind, inputs and outputs and metadata; each bad model (not ONNX, truncated, a
graph that raises at load, one whose load eats memory, over the size limit) and bad
metadata is refused with its reason while the master goes on serving and leaves no child
behind; a viewer may read models but not register one; an ONNX model's rollout is refused
(not yet).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from headwater.cloud.master._models import MAX_MODEL_BYTES
from headwater.common.models import MAX_ONNX_BYTES
from tests import _onnx_models
from tests._artifacts import artifact

from .test_rest_auth import _cli, master  # noqa: F401  (master: the fixture)


def _call(
    url: str, method: str, path: str, token: str, data: bytes | None = None, json_body: bool = False
) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    if json_body:
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(f"{url}{path}", data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _serving(m: dict[str, Any], admin: str) -> None:
    """The master is up, answers, and has no child left of a check."""
    assert m["proc"].poll() is None
    assert _call(m["http"], "GET", "/api/v1/models", admin)[0] == 200
    assert psutil.Process(m["proc"].pid).children(recursive=True) == []


def test_register_list_show_and_refuse_through_a_real_master(
    master: dict[str, Any],  # noqa: F811
    tmp_path: Path,
) -> None:
    url = master["http"]
    admin = (master["state"] / "admin.token").read_text().strip()
    auth = ("--master", url, "--token", admin)
    onnx, doc = tmp_path / "vib.onnx", tmp_path / "anomaly.json"
    onnx.write_bytes(_onnx_models.linear())
    doc.write_bytes(artifact(5.0, "iot-anomaly"))
    (tmp_path / "meta.json").write_text('{"dataset": "vibration 2026-11", "auc": 0.91}')
    sha = hashlib.sha256(onnx.read_bytes()).hexdigest()

    got = _cli(
        "models",
        "register",
        str(onnx),
        "--name",
        "vib",
        "--meta",
        "@" + str(tmp_path / "meta.json"),
        *auth,
    )
    assert got.returncode == 0, got
    assert got.stdout == f"model vib version 1 (onnx/1, {sha[:12]})\n"
    got = _cli("models", "register", str(doc), "--name", "iot-anomaly", *auth)
    assert got.returncode == 0, got
    assert got.stdout.startswith("model iot-anomaly version 1 (gated-linear/1, ")

    listed = _cli("models", "list", *auth)
    assert listed.stdout == "iot-anomaly  latest version 1\nvib  latest version 1\n", listed
    shown = _cli("models", "show", "vib", *auth)
    assert shown.returncode == 0, shown
    lines = shown.stdout.splitlines()
    assert lines[0] == "model vib"
    assert f"{sha[:12]}  {onnx.stat().st_size} bytes  onnx/1" in lines[1]
    assert lines[2:] == [
        "        input  features: tensor(float) [batch, 3]",
        "        output score: tensor(float) [batch, 1]",
        '        metadata {"auc": 0.91, "dataset": "vibration 2026-11"}',
    ]
    status, meta = _call(url, "GET", "/api/v1/models/vib/1", admin)
    assert status == 200
    assert {k: v for k, v in meta.items() if k != "created_at"} == {
        "name": "vib",
        "version": 1,
        "sha256": sha,
        "size": onnx.stat().st_size,
        "kind": "onnx/1",
        "ir_version": 8,
        "producer": "headwater-tests",
        "opsets": {"ai.onnx": 17},
        "inputs": [{"name": "features", "type": "tensor(float)", "shape": ["batch", 3]}],
        "outputs": [{"name": "score", "type": "tensor(float)", "shape": ["batch", 1]}],
        "metadata": {"dataset": "vibration 2026-11", "auc": 0.91},
    }
    raw = urllib.request.Request(
        f"{url}/api/v1/models/vib/1?artifact=1", headers={"Authorization": f"Bearer {admin}"}
    )
    with urllib.request.urlopen(raw, timeout=30) as r:
        assert r.read() == onnx.read_bytes()
        assert r.headers["Content-Type"] == "application/octet-stream"
    assert _call(url, "GET", "/api/v1/models/iot-anomaly/1", admin)[1]["kind"] == "gated-linear/1"

    good = _onnx_models.linear()
    bad = {
        "garbage": (
            b"this is not a model" * 10,
            "not an ONNX model: its bytes are not an ONNX protobuf",
        ),
        "cut": (good[: len(good) // 2], "the ONNX model is truncated: field 7 claims "),
        "unknown-op": (_onnx_models.unknown_op(), "the graph does not load in onnxruntime: "),
        "bomb": (
            _onnx_models.memory_bomb(),
            "loading the model needs more than 1024 MiB, the limit",
        ),
        "bad-json": (b'{"format": "headwater-model/1"}', "the artifact does not load: "),
    }
    for name, (data, says) in bad.items():
        status, body = _call(url, "POST", f"/api/v1/models/{name}/versions", admin, data)
        assert (status, body["error"][: len(says)]) == (400, says), (name, body)
        _serving(master, admin)
    status, body = _call(url, "POST", "/api/v1/models/vib", admin, good)  # upload: JSON only
    assert status == 400 and body["error"].endswith(
        "upload takes JSON model documents; register a model of another kind (ONNX) with "
        "`headwater models register FILE --name NAME`"
    ), body
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(bad["cut"][0])
    refused = _cli("models", "register", str(cut), "--name", "cut", *auth)
    assert refused.returncode == 2 and "the ONNX model is truncated" in refused.stderr, refused
    assert "Traceback" not in refused.stderr

    # over the size limit: refused on its Content-Length, before its body is read
    conn = http.client.HTTPConnection(urllib.parse.urlsplit(url).netloc, timeout=30)
    conn.putrequest("POST", "/api/v1/models/big/versions")
    conn.putheader("Authorization", f"Bearer {admin}")
    conn.putheader("Content-Length", str(MAX_ONNX_BYTES + 1))
    conn.endheaders()
    answer = conn.getresponse()
    assert answer.status == 413
    assert json.loads(answer.read()) == {
        "error": f"the model is over {MAX_ONNX_BYTES} bytes, the limit"
    }
    conn.close()
    big_json = b"{" + b" " * MAX_MODEL_BYTES + b"}"
    status, body = _call(url, "POST", "/api/v1/models/big/versions", admin, big_json)
    assert (status, body) == (
        413,
        {"error": f"the artifact is {len(big_json)} bytes; the limit is {MAX_MODEL_BYTES}"},
    )
    for meta_text, status_says in (
        ("[1, 2]", (400, "the metadata must be a JSON object")),
        ("{not json", (400, "the metadata is not JSON: give a JSON object")),
        (json.dumps({"x": "y" * 3000}), (413, "the metadata is over 2048 bytes")),
    ):
        q = urllib.parse.urlencode({"meta": meta_text})
        status, body = _call(url, "POST", f"/api/v1/models/vib/versions?{q}", admin, good)
        assert (status, body["error"][: len(status_says[1])]) == status_says, body
    _serving(master, admin)
    assert [m["name"] for m in _call(url, "GET", "/api/v1/models", admin)[1]] == [
        "iot-anomaly",
        "vib",
    ]

    # an ONNX model's rollout: its waves and guards are checked, then its target
    target = {"version": 1, "topology": "t", "component": "c"}
    for extra, status_says in (
        ({"waves": [10, 50]}, (400, "the last wave must be 100")),
        ({"waves": "10,100"}, (400, "waves must be a non-empty list")),
        ({"guards": ["errors"]}, (400, "'errors' is not a guard: a guard is EXPR<=BOUND")),
        ({"guards": "errors<=0"}, (400, "guards must be a list of strings")),
        ({"waves": [10, 100], "guards": ["score_us/scored<=500"]}, (404, "no topology")),
    ):
        rollout = json.dumps({**target, **extra}).encode()
        status, body = _call(url, "POST", "/api/v1/models/vib/rollouts", admin, rollout, True)
        assert (status, body["error"][: len(status_says[1])]) == status_says, body

    # a viewer reads models, and may not register one
    made = _cli("token", "create", "--role", "viewer", *auth)
    viewer = made.stdout.splitlines()[0]
    assert _call(url, "GET", "/api/v1/models/vib", viewer)[0] == 200
    status, body = _call(url, "POST", "/api/v1/models/vib/versions", viewer, good)
    assert status == 403 and "needs the admin role; this token is a viewer" in body["error"]
    assert _call(url, "GET", "/api/v1/models/vib", viewer)[1]["versions"][-1]["version"] == 1
