"""The contract for the tool registry: users' tools and MCP servers."""

from __future__ import annotations

import pytest

from memgpt_lite.errors import AlreadyExistsError, ConflictError, NotFoundError
from memgpt_lite.models import AgentState, Block, LLMConfig, MCPServer, ToolDefinition
from memgpt_lite.storage.protocol import Storage
from support.contract.base import ContractBase, OpenStore

SOURCE = 'def weather(city: str) -> str:\n    """The weather."""\n    return "sun"\n'


def a_tool(name: str = "weather", owner: str = "local", **fields: object) -> ToolDefinition:
    values: dict[str, object] = {
        "kind": "python",
        "source_code": SOURCE,
        "description": "The weather.",
        "json_schema": {"name": name, "parameters": {"type": "object", "properties": {}}},
    }
    values.update(fields)
    return ToolDefinition(name=name, owner=owner, **values)


def using(store: Storage, name: str, tools: list[str], owner: str = "local") -> AgentState:
    state = AgentState(
        name=name, owner=owner, llm=LLMConfig(model="m"), system="s", tool_names=tools
    )
    store.create_agent(state, [Block(label="persona", value="p")])
    return state


def stdio_server(name: str = "time", owner: str = "local") -> MCPServer:
    return MCPServer(
        name=name,
        owner=owner,
        transport="stdio",
        command="uvx",
        args=["mcp-server-time", "--local-timezone", "UTC"],
        env={"TZ": "UTC"},
    )


class ToolContract(ContractBase):
    def test_a_tool_round_trips_by_name_or_id(self, store, open_store: OpenStore):
        tool = a_tool(requirements=["requests>=2"], trusted=True, tags=["weather", "é"])
        store.add_tool(tool)
        other = open_store()
        assert other.get_tool("local", "weather") == tool
        assert other.get_tool("local", tool.id) == tool
        module = a_tool("clock", kind="module", source_code=None, module="clocks.utc:now")
        mcp = a_tool("fetch", kind="mcp", source_code=None, mcp_server="web")
        store.add_tool(module)
        store.add_tool(mcp)
        assert other.list_tools("local") == [module, mcp, tool]
        assert (mcp.mcp_server, module.module, tool.trusted) == ("web", "clocks.utc:now", True)
        assert (other.get_tool("local", "weather").tags, mcp.tags) == (["weather", "é"], [])

    def test_names_are_unique_per_owner(self, store):
        store.add_tool(a_tool(owner="alice"))
        store.add_tool(a_tool(owner="bob", description="Bob's"))
        with pytest.raises(AlreadyExistsError, match="a tool named 'weather'"):
            store.add_tool(a_tool(owner="alice", description="again"))
        assert store.get_tool("bob", "weather").description == "Bob's"
        assert [t.owner for t in store.list_tools()] == ["alice", "bob"]
        assert [t.owner for t in store.list_tools("alice")] == ["alice"]
        assert store.list_tools("carol") == []

    def test_another_owners_tool_is_not_found(self, store):
        tool = a_tool(owner="alice")
        store.add_tool(tool)
        for key in ("weather", tool.id, "nothing"):
            with pytest.raises(NotFoundError, match=f"^no tool named {key!r}$"):
                store.get_tool("bob", key)
        with pytest.raises(NotFoundError):
            store.delete_tool("bob", "weather")
        assert store.get_tool("alice", "weather") == tool

    def test_upsert_adds_or_replaces_keeping_id_and_creation(self, store, open_store):
        first = store.upsert_tool(a_tool())
        again = store.upsert_tool(a_tool(description="Better weather.", trusted=True))
        assert (again.id, again.created_at) == (first.id, first.created_at)
        assert again.updated_at > first.updated_at
        stored = open_store().get_tool("local", "weather")
        assert stored == again and stored.description == "Better weather." and stored.trusted
        assert len(store.list_tools()) == 1

    def test_update_changes_the_stored_tool_and_keeps_its_identity(self, store, open_store):
        tool = a_tool()
        store.add_tool(tool)

        def trust_and_move(stored: ToolDefinition) -> None:
            stored.trusted = True
            stored.id, stored.owner = "tool-other", "mallory"  # ignored: they stay

        updated = store.update_tool("local", "weather", trust_and_move)
        assert (updated.id, updated.owner, updated.trusted) == (tool.id, "local", True)
        assert updated.updated_at > tool.updated_at
        assert open_store().get_tool("local", tool.id) == updated

    def test_a_failed_update_stores_nothing(self, store):
        store.add_tool(a_tool())
        store.add_tool(a_tool("clock"))
        with pytest.raises(AlreadyExistsError, match="a tool named 'clock'"):
            store.update_tool("local", "weather", lambda t: setattr(t, "name", "clock"))

        def broken(stored: ToolDefinition) -> None:
            stored.trusted = True
            raise RuntimeError("the change failed")

        with pytest.raises(RuntimeError):
            store.update_tool("local", "weather", broken)
        assert not store.get_tool("local", "weather").trusted
        assert [t.name for t in store.list_tools()] == ["clock", "weather"]
        with pytest.raises(NotFoundError):
            store.update_tool("local", "nothing", lambda t: None)

    def test_a_tool_attached_to_agents_is_not_deleted(self, store, open_store: OpenStore):
        store.add_tool(a_tool())
        sam = using(store, "sam", ["weather"])
        using(store, "ada", ["weather", "clock"])
        using(store, "eve", ["weather"], owner="eve")  # another owner's tool of that name
        with pytest.raises(ConflictError) as refused:
            store.delete_tool("local", "weather")
        assert str(refused.value) == (
            "tool 'weather' is attached to agents 'ada', 'sam'; detach it first "
            "(memgpt-lite tools detach AGENT TOOL); nothing was deleted"
        )
        store.update_agent(sam.id, lambda s: setattr(s, "tool_names", []))
        store.delete_agent(store.get_agent("ada").id)
        store.delete_tool("local", "weather")
        assert open_store().list_tools("local") == []
        with pytest.raises(NotFoundError):
            store.delete_tool("local", "weather")

    def test_a_failed_add_in_a_transaction_leaves_the_rest(self, store):
        with store.transaction():
            store.add_tool(a_tool())
            with pytest.raises(AlreadyExistsError):
                store.add_tool(a_tool())
            store.add_tool(a_tool("clock"))
        assert [t.name for t in store.list_tools()] == ["clock", "weather"]


class MCPServerContract(ContractBase):
    def test_a_server_round_trips_per_owner(self, store, open_store: OpenStore):
        stdio = stdio_server()
        http = MCPServer(
            name="web",
            transport="http",
            url="http://127.0.0.1:8000/mcp",
            headers={"Authorization": "Bearer t"},
        )
        store.add_mcp_server(stdio)
        store.add_mcp_server(http)
        store.add_mcp_server(stdio_server(owner="bob"))
        other = open_store()
        assert other.get_mcp_server("local", "time") == stdio
        assert other.get_mcp_server("local", http.id) == http
        assert other.list_mcp_servers("local") == [stdio, http]
        assert [s.owner for s in other.list_mcp_servers()] == ["bob", "local", "local"]
        with pytest.raises(AlreadyExistsError, match="an MCP server named 'time'"):
            store.add_mcp_server(stdio_server())
        with pytest.raises(NotFoundError, match="^no MCP server named 'web'$"):
            other.get_mcp_server("bob", "web")

    def test_deleting_a_server_deletes_its_tools_unless_attached(self, store, open_store):
        store.add_mcp_server(stdio_server())
        for name in ("get_time", "convert_time"):
            store.add_tool(a_tool(name, kind="mcp", source_code=None, mcp_server="time"))
        store.add_tool(a_tool())
        sam = using(store, "sam", ["convert_time"])
        with pytest.raises(ConflictError, match="attached to agent 'sam'; detach it first"):
            store.delete_mcp_server("local", "time")
        assert len(store.list_tools()) == 3
        store.update_agent(sam.id, lambda s: setattr(s, "tool_names", []))
        store.delete_mcp_server("local", "time")
        other = open_store()
        assert other.list_mcp_servers() == []
        assert [t.name for t in other.list_tools()] == ["weather"]
        with pytest.raises(NotFoundError):
            store.delete_mcp_server("local", "time")
