"""The cluster's identity: its CA, the nodes' certificates, tokens, and how gRPC links use them."""

from ._ca import ClusterCA, fingerprint
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
    JOIN_ROLES,
    JoinToken,
    TokenRecord,
    TokenStore,
    parse_ttl,
    role_allows,
)

__all__ = [
    "AGENT_NAME",
    "API_ROLES",
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
