"""The console's static files, each answered with the headers that lock the page down.

Only the files shipped in ``static/`` are served, by exact name (no paths, no
directory listing). Every answer carries a strict Content-Security-Policy: the
page loads its own scripts and styles only (no inline script or style, no other
origin, no framing), so a component name that user code chose can never run as
script even if a view mishandled it.
"""

from __future__ import annotations

from importlib import resources

from aiohttp import web

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}
TYPES = {
    ".html": "text/html",
    ".css": "text/css",
    ".js": "text/javascript",
    ".svg": "image/svg+xml",
}


def static_files() -> dict[str, bytes]:
    """Name -> bytes of every file the console serves (read once, at start)."""
    folder = resources.files(__package__).joinpath("static")
    return {
        f.name: f.read_bytes()
        for f in folder.iterdir()
        if f.is_file() and any(f.name.endswith(ext) for ext in TYPES)
    }


def answer(name: str, body: bytes) -> web.Response:
    """``body`` as the file ``name``, with the console's security headers."""
    ext = name[name.rfind(".") :]
    return web.Response(body=body, content_type=TYPES[ext], charset="utf-8", headers=dict(HEADERS))
