"""The API's documentation pages, /docs (Swagger UI) and /redoc (ReDoc),
with their scripts, styles and icon served by the server itself from the
`fastapi-offline` package (its static folder), under /docs-assets: the pages
work offline and load nothing from a CDN (FastAPI's own pages load both
from one, and ReDoc's fonts from Google's)."""

from __future__ import annotations

from importlib import resources

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS_PACKAGE = "fastapi_offline"
ASSETS_PATH = "/docs-assets"


def mount_docs(app: FastAPI) -> None:
    """/docs, /redoc and their assets on `app` (made with docs_url=None and
    redoc_url=None, so FastAPI's pages are not there too)."""
    folder = resources.files(ASSETS_PACKAGE) / "static"
    app.mount(ASSETS_PATH, StaticFiles(directory=str(folder)), name="docs-assets")
    title = f"{app.title}: API"
    openapi_url = app.openapi_url or "/openapi.json"

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=title,
            swagger_js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_PATH}/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=title,
            redoc_js_url=f"{ASSETS_PATH}/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS_PATH}/favicon.png",
            with_google_fonts=False,
        )
