"""Agents over MCP: an MCP server whose tools reach the agents of a database,
so that any MCP client (Claude Desktop, Claude Code, Cursor, another agent)
can talk to an agent that remembers.

Its tools: `list_agents`, `send_message(agent, message)` (one step of the
agent; the reply's text), `read_memory(agent)` (the core memory blocks) and
`search_memory(agent, query)` (recall and archival memory). An agent is
named by its name or id.

Who may reach which agent is the `AgentAccess` handed in:
`memgpt-lite mcp serve` runs this server on stdio over every agent of its
database (cli/mcp.py), as the command line sees them; `serve` mounts it at
/mcp (server/mcp_mount.py), each request as the user its API key names, who
sees only their own agents. Our errors (an agent that does not exist, a
model endpoint that failed) are the tool's error, in one line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import metadata
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, Protocol, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from memgpt_lite.errors import MemGPTError
from memgpt_lite.server.steps import StepRunner

if TYPE_CHECKING:
    from memgpt_lite.agent.agent import Agent
    from memgpt_lite.agent.workspace import Workspace
    from memgpt_lite.models import StepResult

P = ParamSpec("P")
T = TypeVar("T")

INSTRUCTIONS = (
    "Agents that remember: each keeps core memory (always in its context), "
    "recall memory (every message) and archival memory (passages). Find an "
    "agent with list_agents, talk to it with send_message, and look into its "
    "memory with read_memory and search_memory."
)
# The most results of each memory search_memory returns.
MAX_SEARCH_RESULTS = 50

AgentRef = Annotated[str, Field(description="The agent's name or id (see list_agents).")]


class AgentAccess(Protocol):
    """How the tools reach agents, for the user a request is for."""

    @property
    def workspace(self) -> Workspace: ...

    def user(self, ctx: Context) -> str | None:
        """The user the request is for; None for every agent of the database."""
        ...

    def agent(self, user: str | None, ref: str) -> Agent:
        """The user's agent named or numbered `ref`, opened to read or search."""
        ...

    async def step(self, user: str | None, ref: str, message: str) -> StepResult:
        """One step of the user's agent with `message`, in the order of its other steps."""
        ...


class WorkspaceAccess:
    """Every agent of a workspace, as the command line reaches them (no
    user: the database is its user's own); steps run by `steps`, one at a
    time per agent. For `memgpt-lite mcp serve`."""

    def __init__(self, workspace: Workspace, steps: StepRunner) -> None:
        self._workspace, self.steps = workspace, steps

    @property
    def workspace(self) -> Workspace:
        return self._workspace

    def user(self, ctx: Context) -> None:
        return None

    def agent(self, user: str | None, ref: str) -> Agent:
        return self._workspace.agent_for(self._workspace.agent_state(ref, owner=user))

    async def step(self, user: str | None, ref: str, message: str) -> StepResult:
        state = await anyio.to_thread.run_sync(self._workspace.agent_state, ref, user)
        # Opened in the step's thread, once the agent's earlier steps are
        # done, so that it starts from what they stored.
        return await self.steps.result(state.id, lambda: self.agent(user, state.id), message)


def _told(function: Callable[P, T]) -> Callable[P, T]:
    """Our errors as the tool's error (the client shows its message)."""

    @functools.wraps(function)
    def told(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return function(*args, **kwargs)
        except MemGPTError as exc:
            raise ToolError(str(exc)) from None

    return told


def agents_mcp_server(access: AgentAccess) -> MCPServer:
    """The MCP server of the agents `access` reaches (see the module's doc)."""
    server: MCPServer = MCPServer(
        "memgpt-lite", instructions=INSTRUCTIONS, version=_version(), log_level="WARNING"
    )

    @server.tool()
    @_told
    def list_agents(ctx: Context) -> list[dict[str, Any]]:
        """The agents you can talk to: name, id, model, and how much they remember."""
        return _agent_list(access, access.user(ctx))

    @server.tool()
    async def send_message(agent: AgentRef, message: str, ctx: Context) -> str:
        """Send a message to an agent and return its reply. The agent acts
        (it may edit or search its memory) before it replies, and remembers
        the exchange."""
        if not message.strip():
            raise ToolError("the message is empty")
        try:
            result = await access.step(access.user(ctx), agent, message)
        except MemGPTError as exc:
            raise ToolError(str(exc)) from None
        return _reply_text(result)

    @server.tool()
    @_told
    def read_memory(agent: AgentRef, ctx: Context) -> list[dict[str, Any]]:
        """An agent's core memory: its blocks (label, description, value,
        limit), always in its context window."""
        workspace = access.workspace
        blocks = workspace.blocks(workspace.agent_state(agent, owner=access.user(ctx)).id)
        return [
            block.model_dump(include={"label", "description", "value", "limit", "read_only"})
            for block in blocks
        ]

    @server.tool()
    async def search_memory(
        agent: AgentRef,
        query: Annotated[str, Field(description="Plain words, or a question.")],
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=MAX_SEARCH_RESULTS)] = 5,
    ) -> dict[str, Any]:
        """Search an agent's memory: its past messages (recall) and its
        archival passages, best first."""
        user = access.user(ctx)
        search = _told(_search_memory)
        return await anyio.to_thread.run_sync(search, access, user, agent, query, limit)

    return server


def _version() -> str:
    try:
        return metadata.version("memgpt-lite")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0"


def _agent_list(access: AgentAccess, user: str | None) -> list[dict[str, Any]]:
    return [
        {
            "name": state.name,
            "id": state.id,
            "model": state.llm.model,
            "messages": stats.message_count,
            "passages": stats.passage_count,
            "last_active": stats.last_active.isoformat() if stats.last_active else None,
        }
        for state, stats in access.workspace.list_agents(owner=user)
    ]


def _reply_text(result: StepResult) -> str:
    """What the agent said; if it said nothing, why the step ended."""
    if result.replies:
        return "\n\n".join(result.replies)
    if result.pending_approvals:
        calls = ", ".join(call.name for call in result.pending_approvals)
        return f"(no reply yet: the agent waits for its user to approve {calls})"
    return f"(the agent did not reply; its step ended: {result.stop_reason})"


def _search_memory(
    access: AgentAccess, user: str | None, ref: str, query: str, limit: int
) -> dict[str, Any]:
    if not query.strip():
        raise ToolError("the query is empty")
    agent = access.agent(user, ref)
    messages, message_total = agent.history.search(query, limit)
    passages, passage_total = agent.archival.search(query, limit)
    return {
        "recall": [
            {
                "role": message.role,
                "text": message.search_text(),
                "created_at": message.created_at.isoformat(),
            }
            for message in messages
        ],
        "recall_total": message_total,
        "archival": [
            {
                "id": passage.id,
                "text": passage.text,
                "tags": passage.tags,
                "created_at": passage.created_at.isoformat(),
            }
            for passage in passages
        ],
        "archival_total": passage_total,
    }
