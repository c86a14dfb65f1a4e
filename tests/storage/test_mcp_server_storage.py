"""An MCP server's configuration changed in place (`update_mcp_server`),
on both backends: its id, name, owner and creation time stay, another
user's server is not found, and a server of another id changes nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.backends import open_db

from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import MCPServer
from memgpt_lite.storage.protocol import Storage


@pytest.fixture
def store(db_location: str) -> Iterator[Storage]:
    opened = open_db(db_location)
    yield opened
    opened.close()


def test_a_server_s_configuration_changes_in_place(store: Storage) -> None:
    stored = MCPServer(owner="alice", name="calc", transport="stdio", command="run", env={"K": "1"})
    store.add_mcp_server(stored)
    changed = MCPServer(
        id=stored.id,
        owner="alice",
        name="calc",
        created_at=stored.created_at,
        transport="http",
        url="http://127.0.0.1:8000/mcp",
        headers={"Authorization": "Bearer t"},
    )
    store.update_mcp_server(changed)
    assert store.get_mcp_server("alice", "calc") == changed
    with pytest.raises(NotFoundError):
        store.update_mcp_server(changed.model_copy(update={"owner": "bob"}))
    with pytest.raises(NotFoundError):
        store.update_mcp_server(changed.model_copy(update={"id": "mcp-other"}))
    assert store.list_mcp_servers() == [changed]
