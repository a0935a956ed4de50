"""The master's REST routes of Spark jobs (``_spark_jobs.py``):

POST   /api/v1/spark/jobs?file=JOB.py[&name=N][&mode=once|every|continuous][&every_s=S]
       [&spark_master=spark://H:P][&param=K=V ...][&landing=DIR][&warehouse=DIR]
       [&entry=FILE][&registers=MODEL ...]  submit a job: the file's bytes as the body (a
                                            .py job, a .toml rollup spec, or a .zip package
                                            with entry naming its job file); registers: the
                                            models it may register (its own token)
GET    /api/v1/spark/jobs                   every job: state, node, mode, last run, errors
GET    /api/v1/spark/jobs/NAME              one job
DELETE /api/v1/spark/jobs/NAME              kill it: its order withdrawn, its record removed
GET    /api/v1/spark/jobs/NAME/logs?tail=N  its driver's log, asked of the worker running it

Roles as for topologies (``cloud/_access.py``): viewers read, operators read logs, admins
submit and kill (and so only an admin submits a job that registers models). Every refusal
is a 4xx with ``{"error": REASON}``.
"""

from __future__ import annotations

import math
from typing import Any

from aiohttp import web

from headwater.common._exceptions import HeadwaterError, PackageRefusedError
from headwater.common._ids import name_problem
from headwater.common.statemgr import StateError

from ._scheduler import LogsError
from ._spark_jobs import KIND, SparkJobs


def _error(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


def _params(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise web.HTTPBadRequest(text=f"param {pair[:40]!r}: give KEY=VALUE")
        out[key] = value
    return out


def add_spark_job_routes(app: web.Application, jobs: SparkJobs) -> None:
    """Add the Spark job routes of ``jobs`` to ``app``."""

    async def submit(request: web.Request) -> web.Response:
        q = request.query
        filename = q.get("file", "")
        if not filename:
            return _error(400, "name the job file: ?file=JOB.py (or .toml, or .zip with entry)")
        try:
            every_s = float(q.get("every_s", "0"))
        except ValueError:
            return _error(400, "every_s must be a number of seconds")
        if not math.isfinite(every_s):
            return _error(400, "every_s must be a number of seconds")
        data = await request.read()
        if not data:
            return _error(400, "the job file is empty: send its bytes as the body")
        try:
            view = await jobs.submit(
                data,
                filename,
                name=q.get("name", ""),
                entry=q.get("entry", ""),
                mode=q.get("mode", "once"),
                every_s=every_s,
                spark_master=q.get("spark_master", ""),
                params=_params(q.getall("param", [])),
                landing=q.get("landing", ""),
                warehouse=q.get("warehouse", ""),
                registers=q.getall("registers", []),
            )
        except PackageRefusedError as exc:
            return _error(413 if exc.too_large else 400, str(exc))
        except StateError as exc:  # not kept: the request is not done
            return web.json_response({"error": str(exc)}, status=503)
        except HeadwaterError as exc:
            return _error(400, str(exc))
        return web.json_response(view, status=201)

    def known(request: web.Request) -> Any:
        name = request.match_info["name"]
        problem = name_problem(name, "Spark job name")
        if problem is not None:
            raise web.HTTPNotFound(text=problem)
        job = jobs.jobs.get(name)
        if job is None:
            raise web.HTTPNotFound(text=jobs.unknown(name))
        return job

    async def listing(request: web.Request) -> web.Response:
        return web.json_response(jobs.views())

    async def show(request: web.Request) -> web.Response:
        return web.json_response(jobs.view(known(request)))

    async def kill(request: web.Request) -> web.Response:
        return web.json_response(jobs.kill(known(request).name))

    async def logs(request: web.Request) -> web.Response:
        from ._docker import tail_lines

        job = known(request)
        try:
            tail = tail_lines(request.query.get("tail"))
        except ValueError as exc:
            return _error(400, str(exc))
        if not job.node or not jobs.master.nodes.online(job.node):
            where = f"on worker {job.node}, which is offline" if job.node else "on no worker yet"
            return _error(409, f"Spark job {job.name!r} runs {where}: no log to read now")
        what = f"Spark job {job.name!r}"
        try:
            reply = await jobs.master.node_logs.ask(job.node, job.name, 0, tail, what, KIND)
        except LogsError as exc:
            return _error(exc.status, str(exc))
        log = next(iter(reply.files), None)
        return web.json_response(
            {
                "name": job.name,
                "node": job.node,
                "tail": tail,
                "driver_log": log.text if log else "",
                "driver_log_path": log.path if log else "",
                "driver_log_truncated": bool(log and log.truncated),
            }
        )

    app.router.add_post("/api/v1/spark/jobs", submit)
    app.router.add_get("/api/v1/spark/jobs", listing)
    app.router.add_get("/api/v1/spark/jobs/{name}", show)
    app.router.add_delete("/api/v1/spark/jobs/{name}", kill)
    app.router.add_get("/api/v1/spark/jobs/{name}/logs", logs)
