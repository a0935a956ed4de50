"""The cluster's identity: its CA, the nodes' certificates, tokens, and how gRPC links use them.

``ClusterCA`` and ``fingerprint`` load on first use (PEP 562): they need ``cryptography``,
which a container (an edge one on a small device) that only dials with its node's
credentials never loads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._identity import (
    AGENT_NAME,
    MASTER_NAME,
    TRUSTED,
    WORKER_NAME,
    Credentials,
    Identity,
    Transport,
    has_credentials,
    peer_identity,
)
from ._tokens import (
    API_ROLES,
    JOB_ROLE,
    JOIN_ROLES,
    JoinToken,
    TokenRecord,
    TokenStore,
    parse_ttl,
    role_allows,
)

if TYPE_CHECKING:
    from ._ca import ClusterCA, fingerprint


def __getattr__(name: str) -> Any:
    if name in ("ClusterCA", "fingerprint"):
        from . import _ca

        return getattr(_ca, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AGENT_NAME",
    "API_ROLES",
    "JOB_ROLE",
    "JOIN_ROLES",
    "MASTER_NAME",
    "TRUSTED",
    "WORKER_NAME",
    "ClusterCA",
    "Credentials",
    "Identity",
    "JoinToken",
    "TokenRecord",
    "TokenStore",
    "Transport",
    "fingerprint",
    "has_credentials",
    "parse_ttl",
    "peer_identity",
    "role_allows",
]
