"""The fixed part of a request (system message, tool schemas, reply primer)
fits a small window: below `COMPACT_WORDING_BELOW` tokens the system prompt
and the tool schemas take their compact wording, and the model still sees
the same tools with the same parameters at every size."""

from __future__ import annotations

import re
from typing import Any

import pytest

from memgpt_lite import Agent, AgentSettings, ConfigError, tool
from memgpt_lite.memory.core.blocks import (
    COMPACT_WORDING_BELOW,
    HEARTBEAT_NOTE,
    load_prompt,
    memory_prompt,
)
from memgpt_lite.memory.recall.window import compile_context
from memgpt_lite.testing import FakeOpenAIServer, say
from memgpt_lite.tools.schema import HEARTBEAT_PARAM
from memgpt_lite.tools.sets import TOOL_SETS

WINDOWS = (2_500, 4_096, 8_192, 32_000)
# The most of a window the fixed part may take, with the default blocks.
TARGETS = {4_096: 0.30, 8_192: 0.20}


def new_agent(tmp_path, tool_set: str, window: int, **given: Any) -> Agent:
    return Agent.create(
        f"a-{tool_set}-{window}",
        "gpt-4o-mini",
        db=tmp_path / "a.db",
        settings=AgentSettings(tool_set=tool_set, context_window=window),
        **given,
    )


def parameters(schema: dict[str, Any]) -> tuple[str, dict[str, Any], list[str]]:
    """A tool's name, each parameter's type (its schema without the words
    that describe it) and its required parameters."""
    function = schema["function"]
    types = {
        name: {k: v for k, v in prop.items() if k not in ("description", "default")}
        for name, prop in function["parameters"]["properties"].items()
    }
    return function["name"], types, function["parameters"].get("required", [])


@pytest.mark.parametrize("tool_set", list(TOOL_SETS))
def test_the_model_sees_the_same_tools_and_parameters_at_every_size(
    fake_llm: FakeOpenAIServer, tmp_path, tool_set
):
    sent = {}
    for window in WINDOWS:
        fake_llm.enqueue(say("hi"))
        new_agent(tmp_path, tool_set, window).step("hello")
        sent[window] = fake_llm.chat_requests[-1]["tools"]
    seen = [[parameters(schema) for schema in sent[window]] for window in WINDOWS]
    assert all(tools == seen[-1] for tools in seen)
    assert [name for name, _, _ in seen[-1]] == list(TOOL_SETS[tool_set])
    assert sent[2_500] == sent[8_192] != sent[32_000], "worded compactly below 16k only"
    assert sent[32_000] == [t.schema() for t in TOOL_SETS[tool_set].values()]


@pytest.mark.parametrize("tool_set", list(TOOL_SETS))
@pytest.mark.parametrize("window", list(TARGETS))
def test_the_fixed_part_takes_at_most_its_share_of_the_window(tmp_path, tool_set, window):
    agent = new_agent(tmp_path, tool_set, window)
    compiled = compile_context(agent.runner)
    assert compiled.fixed_tokens <= TARGETS[window] * window, compiled.fixed_tokens


@pytest.mark.parametrize("tool_set", list(TOOL_SETS))
def test_the_compact_wording_describes_every_tool_and_argument(tool_set):
    rules = memory_prompt("system_compact", tool_set)
    assert HEARTBEAT_PARAM in rules and "send_message" in rules
    for name, each in TOOL_SETS[tool_set].items():
        function = each.schema(compact=True)["function"]
        assert name == "send_message" or name in rules, f"the rules name {name}"
        assert function["description"], name
        for argument, prop in function["parameters"]["properties"].items():
            described = "description" in prop or argument == HEARTBEAT_PARAM
            words = prop.get("enum", [argument])  # a command: each of its values
            said = all(re.search(rf"\b{word}\b", function["description"]) for word in words)
            assert described or said, f"{name}'s {argument} is described"


@pytest.mark.parametrize("tool_set", list(TOOL_SETS))
def test_each_wording_of_the_system_prompt_names_its_own_set_s_memory_tools(tool_set):
    full, compact = (memory_prompt(name, tool_set) for name in ("system", "system_compact"))
    other_sets = [name for name in TOOL_SETS if name != tool_set]
    for each in other_sets:
        own = set(TOOL_SETS[each]) - set(TOOL_SETS[tool_set]) - {"memory"}
        for name in own:
            named = re.compile(rf"\b{name}\b")
            assert not named.search(full) and not named.search(compact), (tool_set, name)
    if tool_set == "memgpt":
        assert compact == load_prompt("system_compact")


def test_a_small_window_s_system_message_is_the_compact_prompt(tmp_path):
    small = compile_context(new_agent(tmp_path, "letta-v1", 4_096).runner)
    large = compile_context(new_agent(tmp_path, "letta-v1", 32_000).runner)
    assert small.sections[0][1] == memory_prompt("system_compact", "letta-v1")
    assert large.sections[0][1] == memory_prompt("system", "letta-v1")
    assert small.sections[1][1].count("\n") == 0 < large.sections[1][1].count("\n")
    # What is stored is the agent's prompt as it was given: the full one.
    assert new_agent(tmp_path, "memgpt", 4_096).state.system == memory_prompt("system", "memgpt")


def test_an_own_system_prompt_is_kept_and_told_what_the_compact_schemas_leave_out(tmp_path):
    own = "You are Ada, a librarian."
    small = compile_context(new_agent(tmp_path, "memgpt", 4_096, system=own).runner)
    large = compile_context(new_agent(tmp_path, "memgpt", 32_000, system=own).runner)
    assert small.sections[0][1] == f"{own}\n\n{HEARTBEAT_NOTE}"
    assert large.sections[0][1] == own


def test_a_custom_tool_keeps_its_words_and_its_heartbeat_is_bare_when_compact():
    @tool
    def weather(city: str, days: int = 1) -> str:
        """The forecast for a city.

        Args:
            city: Where.
            days: How many days ahead.
        """
        return "sunny"

    full, compact = weather.schema()["function"], weather.schema(compact=True)["function"]
    assert compact["description"] == full["description"] == "The forecast for a city."
    assert compact["parameters"]["properties"]["days"] == full["parameters"]["properties"]["days"]
    assert compact["parameters"]["properties"][HEARTBEAT_PARAM] == {"type": "boolean"}
    assert compact["parameters"]["required"] == full["parameters"]["required"]


def test_an_optional_argument_is_shown_as_its_type_and_null_is_still_accepted(tmp_path):
    @tool
    def note(text: str, topic: str | None = None) -> str:
        """Keep a note.

        Args:
            text: The note.
            topic: What it is about.
        """
        return f"{text} ({topic})"

    prop = note.schema()["function"]["parameters"]["properties"]["topic"]
    assert prop == {"type": "string", "description": "What it is about."}
    agent = new_agent(tmp_path, "memgpt", 32_000, tools=[note])
    outcome = note.run(None, '{"text": "hi", "topic": null}', 1000)  # type: ignore[arg-type]
    assert outcome.ok and outcome.content == "hi (None)"
    assert agent.runner.tool_schemas()[-1] == note.schema()


def test_brief_args_must_name_parameters():
    def forecast(city: str) -> str:
        return city

    with pytest.raises(ConfigError, match=r"brief_args names no parameter \['town'\]"):
        tool(brief="The forecast.", brief_args={"town": ""})(forecast)


def test_changing_the_window_changes_the_wording(tmp_path):
    agent = new_agent(tmp_path, "anthropic-memory", 32_000)
    large = compile_context(agent.runner).fixed_tokens
    agent.state.settings.context_window = COMPACT_WORDING_BELOW - 1
    agent.save()
    small = compile_context(agent.runner)
    assert small.fixed_tokens < large
    assert small.tools == [t.schema(compact=True) for t in TOOL_SETS["anthropic-memory"].values()]
