"""The worker daemon (``headwater worker``): a cloud node that runs the containers the master
places on it."""

from ._worker import serve

__all__ = ["serve"]
