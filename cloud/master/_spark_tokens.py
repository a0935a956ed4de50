"""The tokens of Spark jobs that register models: one per job, minted by the master.

A job submitted with ``registers`` (the model names it registers; an admin's submit) gets
a token of role ``job`` (``TokenStore.create_job``) whose scope is those names: it may
register versions of them and read them back, nothing else (``cloud/_access.py``
``JOB_ROUTES``). The store keeps its SHA-256 only, as for every token; its text lives in
the master's memory (``JobTokens``), never in ``spark_jobs.json``, and goes to the job's
worker inside the job's order on the authenticated attach stream. Killing the job revokes
it. A master that starts again no longer knows the texts: it revokes the job tokens it
finds and mints each registering job a new one, whose changed order restarts the job's
driver with it.
"""

from __future__ import annotations

import logging

from headwater.common.security import JOB_ROLE, TokenStore

from ._models import model_name_problem

log = logging.getLogger("headwater.master")
MAX_REGISTERS = 16  # the most model names one job may register


def registers_problem(names: list[str]) -> str | None:
    """Why ``names`` are not the model names a job may declare; None when they are."""
    if len(names) > MAX_REGISTERS:
        return f"a job registers at most {MAX_REGISTERS} models; it names {len(names)}"
    for name in names:
        problem = model_name_problem(name)
        if problem is not None:
            return f"registers: {problem}"
    return None


class JobTokens:
    """The text of each registering job's token, in memory, and its id in the store."""

    def __init__(self, store: TokenStore) -> None:
        self.store = store
        self._tokens: dict[str, tuple[str, str]] = {}  # job -> (token id, token text)

    def resume(self, jobs: dict[str, list[str]]) -> None:
        """At the master's start: revoke the job tokens of an earlier run (their texts are
        gone) and mint one for each job of ``jobs`` (name -> the models it registers)."""
        stale = {r.id for r in self.store.records() if r.role == JOB_ROLE}
        self.store.revoke_all(stale)
        for name, models in jobs.items():
            if models:
                self.mint(name, models)

    def mint(self, job: str, models: list[str]) -> None:
        text = self.store.create_job(job, models)
        self._tokens[job] = (text.partition(".")[0], text)
        log.info("Spark job %r may register %s", job, ", ".join(models))

    def text(self, job: str) -> str:
        """The job's token, or "" for a job that registers nothing."""
        return self._tokens.get(job, ("", ""))[1]

    def revoke(self, job: str) -> None:
        found = self._tokens.pop(job, None)
        if found is not None:
            self.store.revoke(found[0])
