"""The calls of Letta's own example script (examples/docs/example.py), in its
order, through letta-client against a real server, with the fake OpenAI server
as the model: an agent that knows a name, a custom tool from a Python
function's source attached and called, a streamed answer, a block shared with
a second agent and edited through it, and both agents deleted."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from letta_client import Letta, NotFoundError
from support.serving import live_server, new_key

from memgpt_lite.testing.script import call, reply
from memgpt_lite.testing.server import FakeOpenAIServer


def favourite_colour():
    """Tell the favourite colour."""
    return "Teal."


@pytest.fixture
def admin(tmp_path: Path, fake_llm: FakeOpenAIServer) -> Iterator[Letta]:
    """An admin key's client: tools from source need one."""
    db = str(tmp_path / "example.db")
    with live_server(db) as url:
        yield Letta(base_url=url, api_key=new_key(db, "dana", admin=True), max_retries=0)


def say(client: Letta, agent_id: str, text: str) -> list[Any]:
    return client.agents.messages.create(
        agent_id, messages=[{"role": "user", "content": text}]
    ).messages


def kinds(messages: list[Any]) -> list[str]:
    return [m.message_type for m in messages]


@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # messages.stream
def test_letta_s_example_script_runs_through(admin: Letta, fake_llm: FakeOpenAIServer) -> None:
    agent = admin.agents.create(
        memory_blocks=[{"label": "human", "value": "Name: Dana"}],
        model="openai/gpt-4o-mini",
        embedding="openai/text-embedding-3-small",
    )
    fake_llm.enqueue(reply("She told me.", tool_calls=[call("send_message", message="Dana.")]))
    answer = say(admin, agent.id, "What's my name?")
    assert (answer[0].reasoning, answer[1].content) == ("She told me.", "Dana.")

    # upsert_from_function: the function's source, as the older SDK sent it
    tool = admin.tools.upsert(source_code=inspect.getsource(favourite_colour))
    admin.agents.tools.attach(tool.id, agent_id=agent.id)
    fake_llm.enqueue(
        reply("Run it.", tool_calls=[call("favourite_colour", request_heartbeat=True)]),
        reply("It said teal.", tool_calls=[call("send_message", message="Teal.")]),
    )
    answer = say(admin, agent.id, "Run the favourite colour tool")
    assert kinds(answer)[:5] == [
        "reasoning_message",
        "tool_call_message",
        "tool_return_message",
        "reasoning_message",
        "assistant_message",
    ]
    assert answer[1].tool_call.name == "favourite_colour"
    assert (answer[2].tool_return, answer[2].status) == ("Teal.", "success")
    assert (answer[3].reasoning, answer[4].content) == ("It said teal.", "Teal.")

    fake_llm.enqueue(reply("Again.", tool_calls=[call("send_message", message="Dana, Dana")]))
    with admin.agents.messages.stream(
        agent.id, messages=[{"role": "user", "content": "Repeat my name."}], stream_tokens=True
    ) as stream:
        said = [c.content for c in stream if c.message_type == "assistant_message"]
    assert "".join(said) == "Dana, Dana"

    copy = admin.agents.create(
        model="openai/gpt-4o-mini", embedding="openai/text-embedding-3-small"
    )
    block = admin.agents.blocks.retrieve("human", agent_id=agent.id)
    copy = admin.agents.blocks.attach(block.id, agent_id=copy.id)
    assert block.id in [b.id for b in copy.memory.blocks]
    fake_llm.enqueue(
        reply(
            "Fix it.",
            tool_calls=[
                call(
                    "core_memory_replace",
                    label="human",
                    old_content="Dana",
                    new_content="Sara",
                    request_heartbeat=True,
                )
            ],
        ),
        reply("", tool_calls=[call("send_message", message="Noted, Sara.")]),
    )
    say(admin, copy.id, "My name isn't Dana, it's Sara.")
    assert admin.agents.blocks.retrieve("human", agent_id=copy.id).value == "Name: Sara"
    # shared: the first agent sees the edit too
    assert admin.agents.blocks.retrieve("human", agent_id=agent.id).value == "Name: Sara"

    admin.agents.delete(agent.id)
    admin.agents.delete(copy.id)
    with pytest.raises(NotFoundError):
        admin.agents.retrieve(copy.id)
