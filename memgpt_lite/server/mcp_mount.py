"""/mcp: the agents' MCP server (mcp_agents.py) over streamable HTTP, behind
the same API keys as every other route.

Each request is checked as the other routes check theirs (`ServerContext.
user_for`): without a known key it is a 401, with its one-line detail; with
one, the request's user is kept in the request's scope, where the tools
read it, so each user reaches only their own agents. The transport is
stateless (every request stands alone), so with `--workers` above 1 any
worker answers any request, and a session cannot outlive the key that made
it. Answers are plain JSON rather than event streams.

Without the `mcp` extra installed, /mcp answers 501 saying how to install it.

The MCP server is made on the first request to /mcp, its session manager
then run in a task group the app's lifespan holds: importing the SDK takes
about 0.4 s of CPU, which a server no one asks over MCP (and every
`memgpt-lite serve` at start) need not pay.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from memgpt_lite.server.access_log import note_user
from memgpt_lite.server.context import ServerContext, Unauthorized
from memgpt_lite.tools.mcp.config import MCP_EXTRA

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from memgpt_lite.agent.agent import Agent
    from memgpt_lite.agent.workspace import Workspace
    from memgpt_lite.models import StepResult

Handler = Callable[[Scope, Receive, Send], Awaitable[None]]

MCP_PATH = "/mcp"
MCP_METHODS = ["GET", "POST", "DELETE"]
# Where the user a request's key names is kept in its ASGI scope.
USER_SCOPE_KEY = "memgpt_lite.user"


class ServedAccess:
    """The agents of the server's database, as the request's user reaches
    them (the `AgentAccess` of mcp_agents.py)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    @property
    def context(self) -> ServerContext:
        return self.app.state.context

    @property
    def workspace(self) -> Workspace:
        return self.context.workspace

    def user(self, ctx: Context) -> str:
        request = ctx.request_context.request
        user = getattr(request, "scope", {}).get(USER_SCOPE_KEY)
        if not isinstance(user, str):  # only /mcp's guard makes requests: a bug if so
            raise RuntimeError("an MCP request reached the agents without its user")
        return user

    def agent(self, user: str | None, ref: str) -> Agent:
        return self.context.agent(_known(user), ref)

    async def step(self, user: str | None, ref: str, message: str) -> StepResult:
        from memgpt_lite.server.api_agents import step_result

        return await step_result(self.context, _known(user), ref, message)


def _known(user: str | None) -> str:
    if user is None:
        raise RuntimeError("a served MCP request has no user")
    return user


class _KeyGuard:
    """Let a request through to the MCP transport only with a known key,
    its user noted in the scope."""

    def __init__(self, app: FastAPI, handle: Any) -> None:
        self.app, self.handle = app, handle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        context: ServerContext = self.app.state.context
        headers = dict(scope["headers"])
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        try:
            user = context.user_for(authorization)
        except Unauthorized as exc:
            refused = JSONResponse(
                {"detail": str(exc)}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
            )
            await refused(scope, receive, send)
            return
        note_user(scope, user)  # for the request's access-log line
        await self.handle({**scope, USER_SCOPE_KEY: user}, receive, send)


class _NoMCP:
    """/mcp when the SDK is not installed."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await JSONResponse({"detail": MCP_EXTRA}, status_code=501)(scope, receive, send)


def mount_mcp(app: FastAPI, *, auth: bool) -> AbstractAsyncContextManager[Any]:
    """Add /mcp to `app`; what its lifespan must hold open while it serves
    (where the MCP session manager runs, once /mcp is asked)."""
    if importlib.util.find_spec("mcp") is None:  # found without importing it
        app.router.routes.append(Route(MCP_PATH, _NoMCP(), methods=MCP_METHODS))
        return nullcontext()
    served = _ServedOnDemand(app, auth)
    app.router.routes.append(Route(MCP_PATH, _KeyGuard(app, served), methods=MCP_METHODS))
    return served.running()


class _ServedOnDemand:
    """/mcp's transport, made on its first request (see the module's doc)."""

    def __init__(self, app: FastAPI, auth: bool) -> None:
        self.app, self.auth = app, auth
        self._handle: Handler | None = None
        self._tasks: TaskGroup | None = None
        self._lock: anyio.Lock | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The app's lifespan: the task group the session manager runs in."""
        self._lock = anyio.Lock()
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                try:
                    yield
                finally:
                    tasks.cancel_scope.cancel()  # stops the session manager
        finally:
            # Another lifespan of this app makes its own: a manager runs once.
            self._tasks = self._handle = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._handle is None:
            if self._lock is None or self._tasks is None:
                raise RuntimeError("/mcp was asked outside the app's lifespan")
            async with self._lock:
                if self._handle is None:
                    self._handle = await self._start(self._tasks)
        await self._handle(scope, receive, send)

    async def _start(self, tasks: TaskGroup) -> Handler:
        try:
            from mcp.server.transport_security import TransportSecuritySettings

            from memgpt_lite.server.mcp_agents import agents_mcp_server
        except ImportError:  # installed, but not an SDK this can use
            return _NoMCP()
        server = agents_mcp_server(ServedAccess(self.app))
        # The SDK checks the Host header against DNS rebinding, a browser page's
        # way into a server on loopback that asks for no key. With keys on, a
        # page cannot know one, and the server may be reached by any name.
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=not self.auth,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
        server.streamable_http_app(
            stateless_http=True, json_response=True, transport_security=security
        )  # builds its session manager
        manager = server.session_manager
        await tasks.start(_run_manager, manager)
        return manager.handle_request


async def _run_manager(
    manager: StreamableHTTPSessionManager, *, task_status: TaskStatus[None]
) -> None:
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()
