"""The rest of Letta's API: every route under /v1 that no router serves is
answered here, a Letta route with 501 naming it and Letta's name for it, any
other path with 404. Included after every other router (app.py), so it
shadows none of them (the OpenAI-compatible routes, the health check)."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib.resources import files

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

router = APIRouter(tags=["letta"])

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


@cache
def letta_routes() -> tuple[tuple[str, re.Pattern[str], str], ...]:
    """Letta's routes (letta_routes.json, from its OpenAPI description) as
    (method, path pattern, operation id)."""
    text = files(__package__).joinpath("letta_routes.json").read_text(encoding="utf-8")
    routes = []
    for method, path, operation in json.loads(text)["routes"]:
        pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(path.rstrip("/")))
        routes.append((method, re.compile(f"^{pattern}/?$"), operation))
    return tuple(routes)


def letta_operation(method: str, path: str) -> str | None:
    """Letta's name for the route `method path`, or None if Letta has none."""
    for route_method, pattern, operation in letta_routes():
        if route_method == method and pattern.match(path):
            return operation
    return None


@router.api_route("/v1/{rest:path}", methods=METHODS, include_in_schema=False)
async def not_implemented(rest: str, request: Request) -> JSONResponse:
    return not_built(request)


def not_built(request: Request) -> JSONResponse:
    """501 naming a Letta route we do not build; 404 for a path Letta has not."""
    route = f"{request.method} {request.url.path}"
    operation = letta_operation(request.method, request.url.path)
    if operation is None:
        return JSONResponse({"detail": f"no route {route}"}, status_code=404)
    detail = f"memgpt-lite does not implement {route} (Letta's {operation})"
    return JSONResponse({"detail": detail}, status_code=501)
