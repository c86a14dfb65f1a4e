"""A small window still learns: core memory keeps a reserve of its own, so a
short fact fits even where the instructions and tools leave the conversation
less than its quarter of the window, and a refused edit tells the model
every way on (a shorter line, condensing, archival memory)."""

from __future__ import annotations

import pytest

from memgpt_lite import Agent, AgentSettings, Block
from memgpt_lite.memory.recall.window import budget_for, compile_context
from memgpt_lite.testing import FakeOpenAIServer, call, reply, say

WINDOW = 2_500
# Long instructions: with the MemGPT tools (their compact wording, as at any
# window under 16k) they take more than the 1,688 tokens a 2,500-token window
# leaves core memory, instructions and tools, and less than the 1,994 that
# leave the conversation its least room.
INSTRUCTIONS = "You are a test agent. " + "Answer briefly and kindly. " * 200


def crowded_agent(tmp_path, tool_set: str = "memgpt") -> Agent:
    return Agent.create(
        "sam",
        "gpt-4o-mini",
        db=tmp_path / "a.db",
        system=INSTRUCTIONS,
        blocks=[Block(label="persona", value="I am Sam."), Block(label="human")],
        settings=AgentSettings(context_window=WINDOW, tool_set=tool_set),
    )


def remembering(fake_llm: FakeOpenAIServer, content: str) -> None:
    """A model that stores `content` in the human block, then answers."""
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call("core_memory_append", label="human", content=content, request_heartbeat=True)
            ]
        ),
        say("Noted."),
    )


def test_the_fixed_part_is_past_the_quarter_kept_for_talk(tmp_path):
    agent = crowded_agent(tmp_path)
    budget, fixed = budget_for(agent.runner), compile_context(agent.runner).fixed_tokens
    assert budget.core_limit < fixed < budget.core_floor - 64


def test_a_short_fact_is_kept_where_the_window_is_crowded(fake_llm: FakeOpenAIServer, tmp_path):
    agent = crowded_agent(tmp_path)
    remembering(fake_llm, "Name: Bob")
    result = agent.step("I'm Bob.")
    assert result.tool_results[0].ok
    assert agent.block("human").value == "Name: Bob"
    # The next request carries it, and the agent goes on talking.
    fake_llm.enqueue(say("Hi Bob."))
    assert agent.step("Who am I?").replies == ["Hi Bob."]
    assert "Name: Bob" in fake_llm.chat_requests[-1]["messages"][0]["content"]
    assert fake_llm.rejections == []


def test_a_long_fact_is_refused_with_every_way_on(fake_llm: FakeOpenAIServer, tmp_path):
    agent = crowded_agent(tmp_path)
    remembering(fake_llm, "Likes: " + "gardens and bees and long walks by the river " * 30)
    result = agent.step("Let me tell you everything about me.")
    outcome = result.tool_results[0]
    assert not outcome.ok
    assert agent.block("human").value == ""
    text = outcome.content
    assert "2,500-token context window has room for" in text
    assert "Nothing was changed" in text
    for way in ("key fact", "core_memory_replace", "archival_memory_insert"):
        assert way in text
    # The room it names is room indeed: an edit of that size is kept.
    room = int(text.split("has room for ")[1].split(" more")[0].replace(",", ""))
    assert room > 0
    remembering(fake_llm, "Name: Bob")
    assert agent.step("I'm Bob.").tool_results[0].ok


@pytest.mark.parametrize(
    ("tool_set", "edit", "condense"),
    [
        ("letta-v1", call("memory_insert", label="human", new_str="x " * 2400), "memory_rethink"),
        (
            "anthropic-memory",
            call("memory", command="create", path="/memories/notes", file_text="x " * 2400),
            "str_replace",
        ),
    ],
)
def test_every_tool_set_names_its_ways_on(
    fake_llm: FakeOpenAIServer, tmp_path, tool_set, edit, condense
):
    agent = Agent.create(
        "sam",
        "gpt-4o-mini",
        db=tmp_path / "a.db",
        system="You are a test agent.",
        blocks=[Block(label="human")],
        settings=AgentSettings(context_window=4_096, tool_set=tool_set),
    )
    fake_llm.enqueue(reply(tool_calls=[edit]), say("Noted."))
    outcome = agent.step("Remember all this.").tool_results[0]
    assert not outcome.ok
    assert condense in outcome.content and "archival_memory_insert" in outcome.content
    assert [b.label for b in agent.blocks] == ["human"] and agent.block("human").value == ""


def test_the_reserve_never_takes_the_conversation_s_least_room(
    fake_llm: FakeOpenAIServer, tmp_path
):
    def respond(body: dict):
        if "tools" not in body:  # the summarizer
            return reply("They talked about tea.")
        last = body["messages"][-1]
        if last["role"] == "user":
            fact = f"{last['content']}: the user likes tea with honey in the morning"
            return reply(
                tool_calls=[
                    call("core_memory_append", label="human", content=fact, request_heartbeat=True)
                ]
            )
        return say("Noted.")

    fake_llm.responder = respond
    agent = crowded_agent(tmp_path)
    budget = budget_for(agent.runner)
    for part in range(40):
        assert agent.step(f"Fact {part}").replies == ["Noted."]
        # What the edits may take: up to the floor, then the metadata's
        # counts and the summary grow a little on their own.
        fixed = compile_context(agent.runner).fixed_tokens
        assert fixed <= budget.core_floor + budget.summary_tokens < budget.compact_at
    kept = agent.block("human").value.count("Fact ")
    assert 0 < kept < 40
    assert fake_llm.rejections == []
