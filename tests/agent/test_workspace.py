"""The agent layer's shape as users and the edges meet it: the names that
import, the agent's parts (its runner, its history), and the application
layer the command line and the server go through (agent/workspace.py), on
SQLite and PostgreSQL (`db_location`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from memgpt_lite.agent.workspace import Workspace
from memgpt_lite.errors import NotFoundError
from memgpt_lite.models import AgentSettings, Approval, utcnow
from memgpt_lite.settings.resolve import resolve_settings
from memgpt_lite.testing import FakeOpenAIServer, Reply, call, reply, say
from memgpt_lite.tools.rules import needs_approval


def test_the_agent_imports_from_the_package_and_the_agent_layer():
    import memgpt_lite
    import memgpt_lite.agent
    from memgpt_lite import Agent
    from memgpt_lite.agent import Agent as LayerAgent
    from memgpt_lite.agent import Workspace as LayerWorkspace
    from memgpt_lite.agent.agent import Agent as ModuleAgent

    assert Agent is LayerAgent is ModuleAgent is memgpt_lite.Agent
    assert LayerWorkspace is Workspace
    with pytest.raises(AttributeError):
        memgpt_lite.agent.Nothing  # noqa: B018


def echo(body: dict[str, Any]) -> Reply:
    """Answer with the request's last user message."""
    return say(f"re: {[m for m in body['messages'] if m['role'] == 'user'][-1]['content']}")


@pytest.fixture
def workspace(fake_llm: FakeOpenAIServer, db_location: str):
    """The agents of a fresh database; their model is the fake server."""
    fake_llm.responder = echo
    with Workspace.open(db_location, resolve_settings()) as opened:
        yield opened


def test_the_runner_and_the_history_are_the_agents_own(workspace: Workspace):
    agent = workspace.create_agent("sam", "gpt-4o-mini")
    assert agent.runner.state is agent.state and agent.runner.store is agent.store
    agent = workspace.load_agent("sam")
    before = agent.state
    agent.step("hello")
    assert agent.state is not before  # the step's reload, through the runner, is the agent's
    found, total = agent.history.search("hello")  # the message, and the reply that quotes it
    assert total == 2 and [m.role for m in found] == ["user", "assistant"]
    assert agent.history.pop_exchanges() == 3 and agent.context_messages() == []
    assert agent.history.search("hello") == ([], 0)


def test_agents_are_listed_renamed_and_deleted_with_their_owners(workspace: Workspace):
    workspace.create_agent("sam", "gpt-4o-mini")
    workspace.create_agent("bobs", "gpt-4o-mini", owner="bob")
    assert [state.name for state, _ in workspace.list_agents()] == ["bobs", "sam"]
    assert [state.name for state, _ in workspace.list_agents(owner="bob")] == ["bobs"]
    bobs = workspace.agent_state("bobs", owner="bob")
    with pytest.raises(NotFoundError, match="no agent named 'bobs'"):
        workspace.agent_state("bobs", owner="local")  # as if it did not exist
    renamed = workspace.rename_agent(bobs, "robert")
    assert (renamed.id, renamed.name) == (bobs.id, "robert")
    workspace.delete_agent(renamed.id)
    assert [state.name for state, _ in workspace.list_agents()] == ["sam"]


def test_history_pages_and_searches_from_a_time(workspace: Workspace):
    agent = workspace.create_agent("sam", "gpt-4o-mini")
    for text in ("apples early", "pears", "apples late"):
        agent.step(text)
    messages, total = workspace.history_page(agent.state.id, 3)  # a turn: three messages
    assert total == 9 and [m.role for m in messages] == ["user", "assistant", "tool"]
    assert messages[0].content == "apples late"
    found, total = workspace.search_history(agent.state.id, "apples", 10)
    users = [m.content for m in found if m.role == "user"]
    assert total == 4 and sorted(users) == ["apples early", "apples late"]
    later = utcnow() + timedelta(hours=1)
    assert workspace.search_history(agent.state.id, "apples", 10, since=later) == ([], 0)
    all_messages = workspace.all_messages(agent.state.id)
    assert workspace.newest_messages(agent.state.id, 2) == all_messages[-2:]


def test_a_waiting_call_is_read_without_opening_the_agent(
    fake_llm: FakeOpenAIServer, workspace: Workspace
):
    settings = AgentSettings(tool_rules=[needs_approval("archival_memory_insert")])
    agent = workspace.create_agent("sam", "gpt-4o-mini", settings=settings)
    fake_llm.enqueue(
        reply(tool_calls=[call("archival_memory_insert", content="the code is 42")]),
        say("Saved."),
    )
    assert agent.step("remember the code").stop_reason == "approval_required"
    waiting = workspace.waiting_calls(workspace.agent_state("sam"))
    assert [c.name for c in waiting] == ["archival_memory_insert"]
    assert workspace.waiting_answer(agent.state.id) is not None
    agent.step(Approval(approve=True))
    assert workspace.waiting_calls(workspace.agent_state("sam")) == []


def test_keys_are_made_checked_and_revoked(workspace: Workspace):
    key, secret = workspace.create_key("alice")
    assert workspace.user_for_key(secret) == "alice"
    assert [k.id for k in workspace.api_keys()] == [key.id]
    assert workspace.revoke_key(key.id).revoked_at is not None
    assert workspace.user_for_key(secret) is None
