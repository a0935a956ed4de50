"""Tokens: bearer tokens for the REST API and join tokens for enrolling nodes.

A token is ``ID.SECRET``: the id names it (in listings, for revoking), the
secret is 32 random bytes and is kept only as its SHA-256 (a stolen
``tokens.json`` lets no one in). Each token has a role and may expire:

- API roles, for the REST API and the console: ``viewer`` (read),
  ``operator`` (activate, deactivate, edits, rollouts), ``admin`` (submit,
  kill, tokens, nodes); each role may do what the ones before it may.
- Join roles, for ``headwater agent|worker --join``: ``agent``, ``worker``.
  A join token as printed also carries the master's enrolment port and the
  cluster CA's fingerprint (``JoinToken``), so a node trusts the CA it names
  and nothing it merely found on the network.
- The job role, ``job``: a token the master mints for one submitted Spark job that
  declared the models it registers (``create_job``); its ``scope`` names them, and it
  may only register versions of those (``cloud/_access.py``). Never made by hand.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Hashable
from dataclasses import asdict, dataclass, field

from .._exceptions import HeadwaterError
from ..statemgr import Record, StateError, StateUnavailable, as_record

API_ROLES = ("viewer", "operator", "admin")
JOIN_ROLES = ("agent", "worker")
ROLES = API_ROLES + JOIN_ROLES
JOB_ROLE = "job"  # minted by the master for one Spark job (create_job), never by hand
JOIN_PREFIX = "hwjoin"
_TOKEN = re.compile(r"^([0-9a-f]{12})\.([A-Za-z0-9_-]{20,64})$")


def role_allows(role: str, needed: str) -> bool:
    """Whether an API token of ``role`` may do what needs ``needed``."""
    return role in API_ROLES and API_ROLES.index(role) >= API_ROLES.index(needed)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def parse_ttl(text: str) -> float:
    """``90s``, ``15m``, ``24h``, ``7d`` (or plain seconds) as seconds; HeadwaterError if not."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text or "")
    if not m or float(m.group(1)) <= 0:
        raise HeadwaterError(f"a lifetime is a positive number with s, m, h or d (got {text!r})")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


@dataclass
class TokenRecord:
    id: str
    role: str
    digest: str
    created: float
    expires: float | None  # epoch seconds; None: never
    description: str = ""
    scope: list[str] = field(default_factory=list)  # a job token's model names

    def view(self) -> dict[str, object]:
        view: dict[str, object] = {
            "id": self.id,
            "role": self.role,
            "created": self.created,
            "expires": self.expires,
            "description": self.description,
        }
        if self.role == JOB_ROLE:
            view["scope"] = list(self.scope)
        return view

    def expired(self, now: float) -> bool:
        return self.expires is not None and now >= self.expires


@dataclass(frozen=True)
class JoinToken:
    """What ``headwater token create --role agent|worker`` prints:
    ``hwjoin.PORT.ID.SECRET.FINGERPRINT`` (the fingerprint is the CA's SHA-256 in hex)."""

    port: int
    token: str  # ID.SECRET, as the store checks it
    ca_fingerprint: str  # sha256:HEX

    def __str__(self) -> str:
        hexdigest = self.ca_fingerprint.removeprefix("sha256:")
        return f"{JOIN_PREFIX}.{self.port}.{self.token}.{hexdigest}"

    @classmethod
    def parse(cls, text: str) -> JoinToken:
        parts = text.strip().split(".")
        if (
            len(parts) != 5
            or parts[0] != JOIN_PREFIX
            or not parts[1].isdigit()
            or not 0 < int(parts[1]) < 65536
            or not _TOKEN.match(f"{parts[2]}.{parts[3]}")
            or not re.fullmatch(r"[0-9a-f]{64}", parts[4])
        ):
            raise HeadwaterError(
                "that is not a join token (one looks like hwjoin.PORT.ID.SECRET.FINGERPRINT; "
                "`headwater token create --role agent` on the master's host prints one)"
            )
        return cls(int(parts[1]), f"{parts[2]}.{parts[3]}", f"sha256:{parts[4]}")


class TokenStore:
    """The tokens of a cluster, kept in one JSON record of the master's state
    (``tokens.json``: a file only its owner reads, or a znode under the master's ACL).

    ``where``: the record, or the path of its file."""

    def __init__(self, where: str | os.PathLike[str] | Record) -> None:
        self.record = as_record(where)
        self._lock = threading.Lock()
        self._tokens: dict[str, TokenRecord] = {}
        self._version: Hashable | None = None  # the record's, when last read
        self._reload()

    def exists(self) -> bool:
        """Whether the record was ever written (a master's first start makes it)."""
        return self.record.version() is not None

    def _reload(self) -> None:
        """Read the record again if it changed (a token made by another process: a tool on
        the master's host, or a second store over the same record). The version is taken
        before the read: a change between the two is read again next time. While the state
        cannot be reached (ZooKeeper reconnecting), the tokens last read go on answering; a
        store that never read them raises StateUnavailable."""
        try:
            version = self.record.version()
            if version is None or version == self._version:
                return
            data = self.record.read()
        except StateUnavailable:
            if self._version is None:
                raise
            return
        if data is None:
            return
        records = [TokenRecord(**raw) for raw in json.loads(data.decode("utf-8"))]
        self._tokens = {r.id: r for r in records}
        self._version = version

    def _save(self) -> None:
        data = json.dumps([asdict(r) for r in self._tokens.values()], indent=1)
        self.record.write(data.encode())
        self._version = self.record.version()

    def create(self, role: str, ttl_s: float | None = None, description: str = "") -> str:
        """A new token of ``role`` (lasting ``ttl_s`` seconds, or for ever); its text, which
        is shown this once and never kept."""
        if role not in ROLES:
            raise HeadwaterError(f"no role {role!r}: one of {', '.join(ROLES)}")
        if ttl_s is not None and ttl_s <= 0:
            raise HeadwaterError("a token's lifetime must be positive")
        return self._create(role, ttl_s, description, [])

    def create_job(self, job: str, models: list[str]) -> str:
        """A token for Spark job ``job`` that may register versions of ``models`` only;
        its text, shown this once (the master hands it to the job's driver) and never kept."""
        return self._create(JOB_ROLE, None, f"Spark job {job}", list(models))

    def _create(self, role: str, ttl_s: float | None, description: str, scope: list[str]) -> str:
        token_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        now = time.time()
        with self._lock:
            self._reload()
            self._tokens[token_id] = TokenRecord(
                token_id,
                role,
                _digest(secret),
                now,
                None if ttl_s is None else now + ttl_s,
                description[:200],
                scope,
            )
            try:
                self._save()
            except StateError:  # a token not kept is not made
                del self._tokens[token_id]
                raise
        return f"{token_id}.{secret}"

    def check(self, token: str, now: float | None = None) -> TokenRecord | None:
        """The record of a valid, unexpired token; None for anything else."""
        m = _TOKEN.match(token.strip())
        if m is None:
            return None
        self._reload()
        record = self._tokens.get(m.group(1))
        if record is None or record.expired(time.time() if now is None else now):
            return None
        if not hmac.compare_digest(record.digest, _digest(m.group(2))):
            return None
        return record

    def revoke(self, token_id: str) -> bool:
        with self._lock:
            self._reload()
            if self._tokens.pop(token_id, None) is None:
                return False
            self._save()
            return True

    def revoke_all(self, ids: set[str]) -> None:
        """Revoke the tokens of ``ids`` (those there are), in one save."""
        with self._lock:
            self._reload()
            if ids & self._tokens.keys():
                for token_id in ids:
                    self._tokens.pop(token_id, None)
                self._save()

    def records(self) -> list[TokenRecord]:
        self._reload()
        return sorted(self._tokens.values(), key=lambda r: r.created)
