"""Serving the web app: its page at `/`, its files under `/app/`.

Every answer carries a Content-Security-Policy that lets the page load and
call nothing but its own origin (no CDN, no font service, no other host), and
`Cache-Control: no-cache`, so a browser checks its copy (by its ETag) and an
upgraded package's files are seen at once. The files need no key: they hold
no data, and the app asks for a key when the API answers 401.
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

STATIC = Path(__file__).parent / "static"
# Where the app's files are served; the page names them relative to itself.
FILES_PATH = "/app"

POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


class AppFiles(StaticFiles):
    """The app's files, each with `HEADERS`."""

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers.update(HEADERS)
        return response


def mount_webapp(app: FastAPI) -> None:
    """The page at `/` and its files under `/app/`, left out of the API's schema."""

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=HEADERS)

    app.mount(FILES_PATH, AppFiles(directory=STATIC), name="webapp")
