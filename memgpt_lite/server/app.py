"""The application: `create_app(db)` opens the workspace (the agents of the
database, agent/workspace.py) and mounts every route, /mcp too (the agents
over MCP, mcp_mount.py).

Errors are answered in one place, each as `{"detail": "one line"}` with the
status that says what went wrong: our errors by class (`STATUS_BY_ERROR`), a
body that is not JSON or a field that is wrong 422 naming the field, a body
over the size limit 413, a missing or bad key 401, what the key may not do 403.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import cache
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memgpt_lite.agent.workspace import Workspace
from memgpt_lite.errors import (
    AlreadyExistsError,
    BusyError,
    ConfigError,
    ConflictError,
    ContextBudgetError,
    LLMError,
    MemGPTError,
    NotFoundError,
    RemoteError,
    StoreError,
    TooLargeError,
)
from memgpt_lite.server.access_log import AccessLog
from memgpt_lite.server.context import Forbidden, ServerContext, Unauthorized
from memgpt_lite.server.docs_pages import mount_docs
from memgpt_lite.server.endpoints import AllowedEndpoints, EndpointNotAllowed
from memgpt_lite.server.letta.agents import LettaToolsMissing
from memgpt_lite.server.limits import RateLimiter, ServerLimits, limits_from_environment
from memgpt_lite.server.live_runs import keep_runs
from memgpt_lite.server.mcp_mount import mount_mcp
from memgpt_lite.server.model_list import ModelList
from memgpt_lite.server.retrying import NoRetryHeader
from memgpt_lite.server.sendonce import RETRY_LATER_HEADERS, SendInProgress
from memgpt_lite.server.steps import DEFAULT_STEP_THREADS, StepRunner
from memgpt_lite.settings.resolve import (
    configured_allowed_endpoints,
    resolve_db,
    resolve_settings,
    server_endpoint_url,
)

# The most specific class first.
STATUS_BY_ERROR: list[tuple[type[MemGPTError], int]] = [
    (NotFoundError, 404),
    (TooLargeError, 413),
    (AlreadyExistsError, 409),
    (EndpointNotAllowed, 403),
    (ConflictError, 409),
    (LettaToolsMissing, 400),  # Letta's own answer, which its clients act on
    (ConfigError, 422),
    (ContextBudgetError, 422),
    (LLMError, 502),
    (RemoteError, 502),
    (BusyError, 503),
    (StoreError, 503),
]


def status_for(error: MemGPTError) -> int:
    for cls, status in STATUS_BY_ERROR:
        if isinstance(error, cls):
            return status
    return 500


def _field(location: tuple[Any, ...] | list[Any]) -> str:
    """A validation error's location as a field path: ("body", "blocks", 0,
    "label") is "blocks.0.label"."""
    parts = [str(p) for p in location]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts) or "body"


def validation_detail(exc: RequestValidationError) -> str:
    problems = []
    for error in exc.errors():
        if error.get("type") == "json_invalid":
            problems.append(f"the body is not valid JSON: {error.get('ctx', {}).get('error')}")
        else:
            problems.append(f"{_field(error['loc'])}: {error['msg']}")
    return "; ".join(problems) or "the request is not valid"


class BodyLimit:
    """Refuse a request body over `limit` bytes with 413, whether it says its
    length up front or streams it."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise _TooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        detail = f"the request body is over the limit of {self.limit} bytes"
        await JSONResponse({"detail": detail}, status_code=413)(scope, receive, send)


class _TooLarge(BaseException):  # noqa: N818 - a signal inside BodyLimit, never raised out of it
    """A BaseException, so that FastAPI's body parsing (which turns any
    Exception into a 400) lets it through to BodyLimit."""


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(MemGPTError)
    async def memgpt_error(request: Request, exc: MemGPTError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=status_for(exc))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": validation_detail(exc)}, status_code=422)

    @app.exception_handler(SendInProgress)
    async def still_running(request: Request, exc: SendInProgress) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=409, headers=RETRY_LATER_HEADERS)

    @app.exception_handler(Unauthorized)
    async def unauthorized(request: Request, exc: Unauthorized) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"}
        return JSONResponse({"detail": str(exc)}, status_code=401, headers=headers)

    @app.exception_handler(Forbidden)
    async def forbidden(request: Request, exc: Forbidden) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=403)


def create_app(
    db: str,
    *,
    auth: bool = True,
    limits: ServerLimits | None = None,
    step_threads: int = DEFAULT_STEP_THREADS,
    allow_user_code: bool = False,
    allow_endpoints: Sequence[str] = (),
) -> FastAPI:
    """The server's application on the database at `db` (a SQLite file or a
    postgresql:// URL), opened when the app starts. `auth=False` serves every
    request as user `local` (the CLI refuses it off loopback);
    `allow_user_code` lets every key run code on the server (context.py);
    `allow_endpoints`, with config.toml's, the model endpoints agents made
    over HTTP may use besides the server's own (endpoints.py); `limits`: the
    sizes and the rate it accepts (limits.py)."""
    limits = limits or ServerLimits()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, ServerContext]]:
        workspace = Workspace.open(db, resolve_settings())  # settings: once, for every request
        steps = StepRunner(step_threads)
        endpoints = allowed_endpoints(allow_endpoints)
        context = ServerContext(
            workspace=workspace,
            steps=steps,
            auth=auth,
            allow_user_code=allow_user_code,
            endpoints=endpoints,
            limits=limits,
            models=ModelList.for_server(endpoints),
        )
        app.state.context = context  # for /mcp, which holds this app
        closing = asyncio.Event()
        keeper = asyncio.create_task(keep_runs(workspace, context.runs, closing))
        try:
            async with mcp_running:
                yield {"context": context}  # each request's state, read by the API's routes
        finally:
            closing.set()
            await keeper
            await context.runs.drain()  # their steps end and are stored
            steps.close()
            workspace.close()

    # The API itself (shared_api) has no state of its own; this app holds
    # what is this server's: its database, limits and /mcp.
    app = FastAPI(lifespan=lifespan, openapi_url=None, docs_url=None, redoc_url=None)
    _install_middleware(app, limits)
    mcp_running = mount_mcp(app, auth=auth)  # /mcp: the agents over MCP
    # Every other request, as it is (a Mount would rewrite its scope, and its
    # pattern misses a path with an encoded newline).
    app.router.default = shared_api()
    return app


@cache
def shared_api() -> FastAPI:
    """Every route but /mcp, built once per process and mounted by each app:
    FastAPI analyses a route (its parameters, body and answer) the first time
    a request is matched against it, per app, about 0.4 s of CPU for a new
    app's first requests. The routes read their server's context from the
    request's state (context.py), which the mounting app's lifespan sets."""
    api = FastAPI(
        title="memgpt-lite",
        summary="Agents that remember, over HTTP.",
        docs_url=None,  # served from a package instead, offline: docs_pages.py
        redoc_url=None,
    )
    mount_docs(api)
    _install_error_handlers(api)
    _install_routes(api)
    return api


def _install_routes(app: FastAPI) -> None:
    """Every router, then Letta's 501 for the rest of /v1, then the web app."""
    from memgpt_lite.server import (
        api_agents,
        api_approvals,
        api_memory,
        api_tools,
        api_unanswered,
        health,
        letta,
        openai_compat,
    )
    from memgpt_lite.server.webapp.mount import mount_webapp

    # The sends first, Letta's and ours: they are the most frequent requests,
    # and FastAPI tries the routes in order (see server/letta/__init__.py).
    # No two of these routers serve the same path.
    routers = (
        *letta.send_routers,
        api_agents.router,
        *letta.routers,
        health.router,
        api_approvals.router,
        api_memory.router,
        api_tools.router,
        api_unanswered.router,
        openai_compat.router,
    )
    for router in routers:
        app.include_router(router)
    app.include_router(letta.fallback_router)  # last: the rest of /v1 is a 501
    mount_webapp(app)  # the web app at /, its files under /app


def _install_middleware(app: FastAPI, limits: ServerLimits) -> None:
    """The middleware, innermost first (the last added runs first)."""
    app.add_middleware(BodyLimit, limit=limits.max_body_bytes)
    if limits.rate_limit is not None:  # before the body is read, and any key looked up
        app.add_middleware(RateLimiter, limit=limits.rate_limit)
    app.add_middleware(NoRetryHeader)  # a 413 of BodyLimit too
    app.add_middleware(AccessLog)  # outermost: every request, a refused one too


def allowed_endpoints(given: Sequence[str]) -> AllowedEndpoints:
    """The server's own endpoint, `given` and config.toml's `allow_endpoints`."""
    return AllowedEndpoints.of(server_endpoint_url(), [*given, *configured_allowed_endpoints()])


# What tells a worker process started by uvicorn which endpoints
# `--allow-endpoint` allowed, one per line.
ALLOW_ENDPOINTS_VARIABLE = "MEMGPT_LITE_SERVE_ALLOW_ENDPOINTS"


def app_from_environment() -> FastAPI:
    """The app `memgpt-lite serve` starts in each worker: the database from
    $MEMGPT_LITE_DB, keys off if $MEMGPT_LITE_SERVE_NO_AUTH is set, every
    key may run code if $MEMGPT_LITE_SERVE_ALLOW_USER_CODE is, the endpoints
    of $MEMGPT_LITE_SERVE_ALLOW_ENDPOINTS allowed, and the limits `serve`
    resolved ($MEMGPT_LITE_SERVE_LIMITS, limits.py)."""
    return create_app(
        str(resolve_db(None).value),
        auth=not os.environ.get("MEMGPT_LITE_SERVE_NO_AUTH"),
        allow_user_code=bool(os.environ.get("MEMGPT_LITE_SERVE_ALLOW_USER_CODE")),
        allow_endpoints=os.environ.get(ALLOW_ENDPOINTS_VARIABLE, "").split(),
        limits=limits_from_environment(os.environ),
    )
