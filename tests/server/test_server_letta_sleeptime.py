"""Letta's sleep-time groups and voice route, driven by letta-client and
openai against the server: the voice example's `agents.create` gives the
agent a group with a sleep-time agent on the same blocks; turns through
the voice route (OpenAI's streamed chat) make it edit them, which the main
agent's next request shows; the group routes read and change it; a failing
sleep-time step never fails a send; the group goes with the main agent."""

from __future__ import annotations

from typing import Any

import pytest
from letta_client import Letta, NotFoundError, UnprocessableEntityError
from openai import OpenAI
from support.old_letta import RunScript, old_letta  # noqa: F401 - the session fixture
from support.serving import new_key

from memgpt_lite.agent import sleeptime
from memgpt_lite.memory.core.blocks import load_prompt
from memgpt_lite.testing import FakeOpenAIServer, call, error, reply, say

REMEMBER = call(
    "core_memory_replace",
    label="human",
    old_content="Name: ?",
    new_content="Name: Alice",
    request_heartbeat=False,
)
BLOCKS = [{"label": "human", "value": "Name: ?"}, {"label": "persona", "value": "A helper."}]


def is_sleeptime(body: dict[str, Any]) -> bool:
    """Whether a request is a sleep-time agent's (by its system prompt)."""
    messages = body.get("messages") or [{}]
    return str(messages[0].get("content")).startswith(load_prompt("sleeptime")[:60])


def group_of(client: Letta, group_id: str) -> dict[str, Any]:
    return client.get(f"/v1/groups/{group_id}", cast_to=object)


def set_frequency(client: Letta, group_id: str, kind: str, every: int) -> dict[str, Any]:
    config = {"manager_type": kind, "sleeptime_agent_frequency": every}
    return client.patch(f"/v1/groups/{group_id}", cast_to=object, body={"manager_config": config})


def test_the_voice_example_gets_a_sleeptime_agent_that_edits_the_shared_blocks(
    client: Letta, server: str, fake_llm: FakeOpenAIServer
) -> None:
    main = client.agents.create(
        name="low_latency_voice_agent_demo",
        agent_type="voice_convo_agent",
        memory_blocks=BLOCKS,
        model="openai/gpt-4o-mini",
        embedding="openai/text-embedding-3-small",
        enable_sleeptime=True,
    )
    group = main.multi_agent_group
    assert (main.agent_type, main.enable_sleeptime) == ("voice_convo_agent", True)
    assert group is not None and main.managed_group is not None
    assert (group.manager_type, group.manager_agent_id) == ("voice_sleeptime", main.id)
    [helper_id] = group.agent_ids
    helper = client.agents.retrieve(helper_id)
    assert helper.agent_type == "voice_sleeptime_agent" and helper.multi_agent_group is None
    assert [b.id for b in helper.blocks] == [b.id for b in main.blocks]
    listed = client.get("/v1/groups/", cast_to=object)
    assert (
        [g["id"] for g in listed]
        == [group.id]
        == [g["id"] for g in client.get(f"/v1/agents/{helper_id}/groups", cast_to=object)]
    )
    assert client.get("/v1/groups/count", cast_to=int) == 1
    assert set_frequency(client, group.id, "voice_sleeptime", 2)["sleeptime_agent_frequency"] == 2

    fake_llm.responder = lambda body: (
        reply(tool_calls=[REMEMBER]) if is_sleeptime(body) else say("Hi!")
    )
    voice = OpenAI(
        base_url=f"{server}/v1/voice-beta/{main.id}", api_key=client.api_key, max_retries=0
    )
    for text in ("Hi, I am Alice.", "I like tea."):
        chunks = list(
            voice.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": text}], stream=True
            )
        )
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hi!"
        assert chunks[-1].choices[0].finish_reason == "stop"
    assert sleeptime.wait_for_pass(group.id, 30)
    assert client.agents.blocks.retrieve("human", agent_id=main.id).value == "Name: Alice"
    said = [
        m
        for m in client.agents.messages.list(main.id, order="asc")
        if m.message_type == "user_message"
    ]
    assert [m.content for m in said] == ["Hi, I am Alice.", "I like tea."]
    after = group_of(client, group.id)
    assert after["last_error"] is None and after["last_processed_message_id"] is not None
    voice.chat.completions.create(model="x", messages=[{"role": "user", "content": "Bye."}])
    asked = [r.body for r in fake_llm.requests if r.body and "messages" in r.body]
    main_asked = [body for body in asked if not is_sleeptime(body)]
    assert "Name: Alice" in main_asked[-1]["messages"][0]["content"]  # its next request
    assert "Name: ?" in main_asked[0]["messages"][0]["content"]

    client.agents.delete(main.id)
    with pytest.raises(NotFoundError):
        client.agents.retrieve(helper_id)
    with pytest.raises(NotFoundError):
        group_of(client, group.id)


def test_a_failing_sleeptime_step_does_not_fail_the_send(
    client: Letta, fake_llm: FakeOpenAIServer
) -> None:
    main = client.agents.create(
        name="sam", model="openai/gpt-4o-mini", memory_blocks=BLOCKS, enable_sleeptime=True
    )
    group = main.multi_agent_group
    assert group is not None and group.manager_type == "sleeptime"
    assert client.agents.retrieve(group.agent_ids[0]).agent_type == "sleeptime_agent"
    with pytest.raises(UnprocessableEntityError, match="is a 'sleeptime' group"):
        set_frequency(client, group.id, "voice_sleeptime", 1)
    set_frequency(client, group.id, "sleeptime", 1)

    def model_down(body: dict[str, Any]) -> Any:
        return error(400, "the sleep-time model is down") if is_sleeptime(body) else say("Hello!")

    fake_llm.responder = model_down
    response = client.agents.messages.create(main.id, messages=[{"role": "user", "content": "Hi"}])
    assert [m.content for m in response.messages if m.message_type == "assistant_message"] == [
        "Hello!"
    ]
    assert sleeptime.wait_for_pass(group.id, 30)
    failed = group_of(client, group.id)
    assert "the sleep-time model is down" in failed["last_error"]
    assert failed["last_processed_message_id"] is None  # read again by the next pass
    assert client.agents.blocks.retrieve("human", agent_id=main.id).value == "Name: ?"

    updated = client.agents.update(main.id, enable_sleeptime=False)
    assert (updated.multi_agent_group, updated.enable_sleeptime) == (None, False)
    assert client.get("/v1/groups", cast_to=object) == []
    assert [a.id for a in client.agents.list()] == [main.id]  # the sleep-time agent went too


VOICE_01 = """
from letta_client import CreateBlock, SleeptimeManagerUpdate, VoiceSleeptimeManagerUpdate
agent = client.agents.create(
    name="voice",
    agent_type="voice_convo_agent",
    memory_blocks=[CreateBlock(label="human", value="Name: ?")],
    model="openai/gpt-4o-mini",
    enable_sleeptime=True,
)
group = agent.multi_agent_group
results["created"] = [agent.agent_type, group.manager_type, group.manager_agent_id == agent.id]
results["listed"] = [g.id for g in client.groups.list()] == [group.id]
results["count"] = client.groups.count()
changed = client.groups.modify(
    group.id,
    manager_config=VoiceSleeptimeManagerUpdate(
        max_message_buffer_length=6, min_message_buffer_length=5
    ),
)
results["modified"] = [changed.max_message_buffer_length, changed.min_message_buffer_length]
results["helper"] = client.agents.retrieve(group.agent_ids[0]).agent_type
client.groups.delete(group.id)
results["after"] = [client.groups.count(), client.agents.retrieve(agent.id).agent_type]
"""


def test_groups_with_letta_client_01(
    old_letta: RunScript,  # noqa: F811 - the fixture imported above
    db: str,
    server: str,
) -> None:
    found = old_letta(VOICE_01, base_url=server, key=new_key(db, "alice"))
    assert found["created"] == ["voice_convo_agent", "voice_sleeptime", True]
    assert found["listed"] is True and found["count"] == 1
    assert found["modified"] == [6, 5]
    assert found["helper"] == "voice_sleeptime_agent"
    assert found["after"] == [0, "memgpt_agent"]
