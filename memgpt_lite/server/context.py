"""What every route shares: the workspace (the agents of the server's
database, opened with the settings resolved when the app started: the
application layer, agent/workspace.py, through which the routes reach agents
and what is stored), the step runner, the rule that a user sees only their
own agents, and the rule of who may run code on the server's machine.

Two things a request can ask run code on the server's machine: a tool from
Python source (its source is run to read its schema, then at each call,
in a process of its own) and a stdio MCP server (a command the server
starts). Only admin keys may ask either (`memgpt-lite keys create
--admin`), unless the server was started with `--allow-user-code`; with
`--no-auth` (one local user, on a loopback address) the user may. Any other
key gets a 403 naming the rule (`require_code_rights`). The process a tool
runs in contains faults, not hostile code (docs/tools.md): hence the rule.

Routes get these through FastAPI dependencies (`context`, `current_caller`,
`current_user`), never through globals, so one process can serve two apps
(the tests do).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool

from memgpt_lite.agent.agent import Agent
from memgpt_lite.agent.workspace import Workspace
from memgpt_lite.errors import ConfigError
from memgpt_lite.models import DEFAULT_USER, AgentState
from memgpt_lite.server.access_log import note_user
from memgpt_lite.server.limits import ServerLimits
from memgpt_lite.server.live_runs import LiveRuns
from memgpt_lite.server.steps import StepRunner
from memgpt_lite.settings.endpoint import PLACEHOLDER_KEY, check_base_url
from memgpt_lite.settings.resolve import resolve_endpoint

if TYPE_CHECKING:
    from memgpt_lite.server.endpoints import AllowedEndpoints
    from memgpt_lite.server.model_list import ModelList


class Unauthorized(Exception):  # noqa: N818 - an HTTP status, turned into a 401 by app.py
    """No key, or a key that is unknown or revoked."""


class Forbidden(Exception):  # noqa: N818 - an HTTP status, turned into a 403 by app.py
    """A request the caller may not make: code on the server without the
    right to run it, or a change to a built-in tool."""


RUN_CODE_RULE = (
    "only admin keys may (`memgpt-lite keys create --admin`), "
    "or start the server with --allow-user-code"
)


@dataclass(frozen=True)
class Caller:
    """Who a request comes from: the user its key acts as, and whether it
    may run code on the server (see the module's doc)."""

    user: str
    may_run_code: bool


def require_code_rights(caller: Caller, what: str) -> None:
    """A 403 naming the rule unless `caller` may run code on the server;
    `what` says what would run it ("creating a tool from source")."""
    if not caller.may_run_code:
        raise Forbidden(f"{what} runs code on the server: {RUN_CODE_RULE}")


# Agents kept from one step to the next, at most this many (the most recent).
KEPT_AGENTS = 256


@dataclass
class ServerContext:
    # The server's database, with the process's settings resolved once
    # (app.py) and handed to every agent.
    workspace: Workspace
    steps: StepRunner
    auth: bool = True
    # `serve --allow-user-code`: every key may run code on the server.
    allow_user_code: bool = False
    # The model endpoints agents made over HTTP may use (endpoints.py);
    # None: only the server's own, read when first asked.
    endpoints: AllowedEndpoints | None = None
    # The sizes and the rate the server accepts (limits.py).
    limits: ServerLimits = field(default_factory=ServerLimits)
    # The models of the allowed endpoints (model_list.py); None: made when
    # first asked.
    models: ModelList | None = None
    # The runs whose steps this process runs (live_runs.py).
    runs: LiveRuns = field(default_factory=LiveRuns)
    # The agents of recent steps, by id (a conversation's, for a step in
    # one), with the settings they were built for (see `step_agent`).
    _kept: OrderedDict[str, tuple[tuple[object, ...], Agent]] = field(default_factory=OrderedDict)
    _kept_lock: threading.Lock = field(default_factory=threading.Lock)

    def caller_for(self, authorization: str | None) -> Caller:
        """Who a request's `Authorization` header says it comes from."""
        if not self.auth:
            return Caller(DEFAULT_USER, may_run_code=True)
        scheme, _, secret = (authorization or "").partition(" ")
        secret = secret.strip()
        if scheme.lower() != "bearer" or not secret:
            raise Unauthorized("send an API key: Authorization: Bearer KEY")
        key = self.workspace.key_for_secret(secret)
        if key is None:
            raise Unauthorized("the API key is unknown or revoked")
        return Caller(key.user, may_run_code=key.admin or self.allow_user_code)

    def user_for(self, authorization: str | None) -> str:
        """The user a request's `Authorization` header names."""
        return self.caller_for(authorization).user

    def check_endpoint(self, url: object, where: str) -> str | None:
        """`url` if an agent created or changed over HTTP may use it as its
        model endpoint (None: the server's own); else a 403 naming the rule
        (a 422 for a URL that is not http(s)). `where` names the field it came
        in ("base_url", "llm_config.model_endpoint"). Call it before storing
        the URL or connecting to it (endpoints.py)."""
        return self.allowed_endpoints().check(url, where)

    def allowed_endpoints(self) -> AllowedEndpoints:
        """The endpoints allowed (endpoints.py); when the app was given none,
        the server's own alone."""
        if self.endpoints is None:
            from memgpt_lite.server.endpoints import AllowedEndpoints
            from memgpt_lite.settings.resolve import server_endpoint_url

            self.endpoints = AllowedEndpoints.of(server_endpoint_url())
        return self.endpoints

    def model_list(self) -> ModelList:
        """The models of the allowed endpoints and the server's default
        model (model_list.py)."""
        if self.models is None:
            from memgpt_lite.server.model_list import ModelList

            self.models = ModelList.for_server(self.allowed_endpoints())
        return self.models

    def agent_state(self, user: str, ref: str, conversation: str | None = None) -> AgentState:
        """The user's agent named or numbered `ref`; another user's agent is
        not found, word for word as an agent that does not exist. With
        `conversation`, the agent's copy in that conversation of its own."""
        return self.workspace.agent_state(ref, owner=user, conversation=conversation)

    def agent(self, user: str, ref: str, conversation: str | None = None) -> Agent:
        """The user's agent (in `conversation`), opened on the server's database."""
        state = self.agent_state(user, ref, conversation)
        return self.workspace.agent_for(
            state, api_key=endpoint_key(state), peer_api_key=endpoint_key
        )

    def step_agent(self, user: str, ref: str, conversation: str | None = None) -> Agent:
        """The user's agent for a step: the `Agent` of its last step, with
        its state read anew, as a program that holds an agent steps it. It
        keeps its model client (whose pooled connections spare a TLS
        handshake per step) and its token counter (which counts only what
        is new in the window); rebuilt when the model, endpoint or embedder
        changed, or its registered tools did (attached, detached, modified,
        trusted, their MCP server changed: the `Agent` holds the tools it
        was built with).
        Only one step of an agent's conversation runs at a time (steps.py),
        and each conversation has an `Agent` of its own (`conversation`:
        None, the default one), so no two threads use one `Agent` at once."""
        state = self.agent_state(user, ref, conversation)
        kept_as = conversation or state.id
        key = endpoint_key(state)
        llm = state.llm
        built_for = (
            (llm.model, llm.base_url, llm.api_key, llm.timeout_seconds),
            (key, state.settings.embedder, self._provider_endpoint(state)),
            self._registered_tools(state),
        )
        with self._kept_lock:
            kept = self._kept.pop(kept_as, None)
        if kept is not None and kept[0] == built_for:
            agent = kept[1]
            agent.state = state
        else:
            # The agents it messages get the same rule for their keys.
            agent = self.workspace.agent_for(state, api_key=key, peer_api_key=endpoint_key)
        with self._kept_lock:
            self._kept[kept_as] = (built_for, agent)
            while len(self._kept) > KEPT_AGENTS:
                self._kept.popitem(last=False)
        return agent

    def _provider_endpoint(self, state: AgentState) -> tuple[str, str] | None:
        """The URL and key of the agent's provider as they are now (None:
        it has none), the URL one the server may still reach (a 403 if the
        operator no longer allows it): a step's model client is rebuilt
        when either changed (agent/providers.py)."""
        if state.llm.provider is None:
            return None
        from memgpt_lite.agent.providers import provider_endpoint

        url, key = provider_endpoint(self.workspace.store, state.owner, state.llm.provider)
        self.check_endpoint(url, f"the base_url of provider {state.llm.provider!r}")
        return url, key

    def _registered_tools(self, state: AgentState) -> tuple[str, ...]:
        """The agent's tool names and its owner's registered tools of those
        names as stored: what its `Agent`'s tools were built from."""
        named = set(state.tool_names)
        tools = [t for t in self.workspace.store.list_tools(state.owner) if t.name in named]
        stored = [tool.model_dump_json() for tool in tools]
        # An MCP tool holds its server's configuration: a changed one
        # (mcp_servers.update) rebuilds the agent.
        servers = {tool.mcp_server for tool in tools if tool.kind == "mcp"}
        if servers:
            stored += [
                server.model_dump_json()
                for server in self.workspace.store.list_mcp_servers(state.owner)
                if server.name in servers
            ]
        return (*state.tool_names, *stored)


def endpoint_key(state: AgentState) -> str | None:
    """The API key for the agent's model requests. The server's key
    ($OPENAI_API_KEY) goes only to the server's own endpoint: an agent whose
    base URL a client chose elsewhere gets a placeholder, so no client can
    point an agent at a host of theirs and read the server's key."""
    own = state.llm.base_url
    if own is None or state.llm.api_key is not None:  # the agent's own key, if any, is used
        return None
    try:
        server_url, _ = resolve_endpoint(state.llm.model_copy(update={"base_url": None}))
    except ConfigError:  # the server has no key for its endpoint: nothing to guard
        return PLACEHOLDER_KEY
    same = check_base_url(own, "the agent's base_url").rstrip("/") == server_url.rstrip("/")
    return None if same else PLACEHOLDER_KEY


# The dependencies are coroutines: FastAPI runs a plain function in its thread
# pool, a hand-over to a thread and back for each, three per request. Only the
# key's lookup reads the database, so only it goes to a thread.


async def context(request: Request) -> ServerContext:
    return request.state.context  # set by the app's lifespan (app.py)


async def current_caller(request: Request) -> Caller:
    ctx: ServerContext = request.state.context
    authorization = request.headers.get("authorization")
    if not ctx.auth:
        caller = ctx.caller_for(authorization)
    else:  # the key's lookup reads the database: in a thread
        caller = await run_in_threadpool(ctx.caller_for, authorization)
    note_user(request.scope, caller.user)  # for the request's access-log line
    return caller


async def current_user(caller: Annotated[Caller, Depends(current_caller)]) -> str:
    return caller.user


Context = Annotated[ServerContext, Depends(context)]
CurrentCaller = Annotated[Caller, Depends(current_caller)]
User = Annotated[str, Depends(current_user)]
