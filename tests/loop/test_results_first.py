"""What the agent asked for comes first: a tool result of the step in progress
gets room by compaction before anything of it is clipped; when clipping
cannot be avoided, a search's results are kept whole, best first, with how
many were left out; and the search tools page their results to the room the
window has. Against the fake server, which enforces the window as an
endpoint does (`server.rejections`)."""

from __future__ import annotations

import re

import pytest

from memgpt_lite import Agent, AgentSettings, Block, tool
from memgpt_lite.memory.recall.window import budget_for, compile_context, result_room
from memgpt_lite.testing import FakeOpenAIServer, call, reply, say
from memgpt_lite.tools.search_results import PAGE_SIZE, RESULT_TOKENS

WINDOW = 2500
FILLER = " ".join(["the quick brown fox jumps over the lazy dog"] * 4)  # about 40 tokens
ANSWER = "My sister Ada's birthday is on the 3rd of March, she likes tulips."


@pytest.fixture
def server(fake_llm: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_llm.context_window = WINDOW
    return fake_llm


def is_summary_request(body: dict) -> bool:
    return "tools" not in body


def talk(server: FakeOpenAIServer, agent: Agent, messages: list[str]) -> None:
    server.responder = lambda body: (
        reply(content="Summary: a talk.") if is_summary_request(body) else say("ok")
    )
    for message in messages:
        assert agent.step(message).replies == ["ok"]


def then_calls(server: FakeOpenAIServer, *calls) -> list[dict]:
    """Answer the next step with `calls` (each with a heartbeat), then a reply;
    returns the requests the model saw after the calls."""
    script = [reply(tool_calls=[c]) for c in calls]
    seen: list[dict] = []

    def respond(body: dict):
        if is_summary_request(body):
            return reply(content="Summary: a talk.")
        if script:
            return script.pop(0)
        seen.append(body)
        return say("found")

    server.responder = respond
    return seen


def last_tool_message(request: dict) -> str:
    return [m for m in request["messages"] if m["role"] == "tool"][-1]["content"]


def test_a_search_that_found_the_answer_reaches_the_model_at_2500_tokens(server, tmp_path):
    """The issue's case: the default prompt and tools of the memgpt set, a
    2,500-token window, a talk long enough to be compacted, and a search for
    its first message. The model sees the answer, not the search's header."""
    agent = Agent.create(
        "sam", "gpt-4o-mini", db=tmp_path / "a.db", settings=AgentSettings(context_window=WINDOW)
    )
    talk(
        server,
        agent,
        [f"{ANSWER} {FILLER}"] + [f"Turn {i} about the garden. {FILLER}" for i in range(12)],
    )
    seen = then_calls(
        server, call("conversation_search", query="Ada birthday", request_heartbeat=True)
    )
    result = agent.step("When is Ada's birthday?")
    assert result.replies == ["found"] and server.rejections == []
    shown = last_tool_message(seen[-1])
    assert ANSWER in shown, shown
    assert re.search(r"^- \[.*\] user: My sister Ada", shown, re.MULTILINE)


def make_agent(tmp_path, tools=(), **settings) -> Agent:
    return Agent.create(
        "sam",
        "gpt-4o-mini",
        db=tmp_path / "a.db",
        system="You are a test agent.",
        blocks=[Block(label="persona", value="I am Sam."), Block(label="human")],
        settings=AgentSettings(context_window=WINDOW, **settings),
        tools=tools,
    )


def test_a_result_gets_room_by_compaction_before_it_is_clipped(server, tmp_path):
    """A result of 60% of the room for messages, with the window full of
    older talk: the older talk leaves, the result is sent whole."""
    text = " ".join(
        ["ok"] * int(message_room(make_agent(tmp_path)) * 0.6)
    )  # short: under the result cap

    @tool
    def fetch_report() -> str:
        """Fetch the report."""
        return text

    agent = make_agent(tmp_path / "b", tools=[fetch_report])
    talk(server, agent, [f"Turn {i}. {FILLER}" for i in range(20)])
    seen = then_calls(server, call("fetch_report", request_heartbeat=True))
    result = agent.step("fetch the report")
    assert result.replies == ["found"] and server.rejections == []
    assert last_tool_message(seen[-1]) == text  # whole: nothing clipped
    assert result.compactions >= 1


def message_room(agent: Agent) -> int:
    """The tokens the agent's window leaves for messages beside the fixed part."""
    return budget_for(agent.runner).compact_at - compile_context(agent.runner).fixed_tokens


def test_a_chain_of_calls_keeps_the_latest_result_whole(server, tmp_path):
    """A step that calls for page after page, each a third of the room for
    messages, until they cannot all fit: the earlier pages are clipped
    first, the one just asked for stays whole."""
    pages: list[str] = []
    words = message_room(make_agent(tmp_path)) // 6  # "wordN " is two tokens

    @tool
    def read_page(page: int) -> str:
        """Read one page of a long document."""
        pages.append(f"page {page}: " + " ".join([f"word{page}"] * words))
        return pages[-1]

    agent = make_agent(tmp_path / "b", tools=[read_page])
    calls = [call("read_page", page=p, request_heartbeat=True) for p in range(4)]
    seen = then_calls(server, *calls)
    result = agent.step("read the first four pages")
    assert result.replies == ["found"] and server.rejections == []
    tools_sent = [m["content"] for m in seen[-1]["messages"] if m["role"] == "tool"]
    assert tools_sent[-1] == pages[-1]
    assert "[clipped:" in tools_sent[0]


def test_search_pages_fit_a_small_window_and_name_the_next_page(server, tmp_path):
    """Core memory near its limit leaves a small room for messages: a page
    holds fewer than five results, all of them whole, and names the next."""
    agent = make_agent(tmp_path)
    budget, fixed = budget_for(agent.runner), compile_context(agent.runner).fixed_tokens
    agent.set_block("human", " ".join(["fact"] * (budget.core_limit - fixed - 40)))
    talk(server, agent, [f"Tulips note {i}: {FILLER}" for i in range(8)])
    size = max(1, min(PAGE_SIZE, result_room(agent.runner) // RESULT_TOKENS))
    assert size < PAGE_SIZE  # a small window: fewer than five a page
    seen = then_calls(
        server,
        call("conversation_search", query="tulips note", request_heartbeat=True),
        call("conversation_search", query="tulips note", page=1, request_heartbeat=True),
    )
    result = agent.step("what did I say about tulips?")
    assert server.rejections == []
    first, second = (r.content for r in result.tool_results[:2])
    assert f"(page 0 of pages 0-{-(-8 // size) - 1}, {size} a page; the next: page=1):" in first
    assert first.startswith(f"Showing 1-{size} of 8 results") and "page 1 of" in second
    shown = lambda text: set(re.findall(r"Tulips note (\d+)", text))  # noqa: E731
    assert len(shown(first)) == size and not shown(first) & shown(second)
    assert "[clipped" not in last_tool_message(seen[-1])


def test_a_page_at_a_large_window_holds_five(fake_llm, tmp_path):
    agent = Agent.create("sam", "gpt-4o-mini", db=tmp_path / "a.db")
    talk(fake_llm, agent, [f"Tulips note {i}" for i in range(7)])
    then_calls(fake_llm, call("conversation_search", query="tulips note", request_heartbeat=True))
    result = agent.step("tulips?")
    assert result.tool_results[0].content.startswith("Showing 1-5 of 7 results")
    assert "5 a page; the next: page=1" in result.tool_results[0].content


def test_a_page_stays_under_the_result_limit_by_cutting_its_longest_result(fake_llm, tmp_path):
    """tool_result_max_chars would cut a page in the middle of a result; the
    page cuts its longest result instead, and keeps the short ones whole."""
    agent = Agent.create(
        "sam",
        "gpt-4o-mini",
        db=tmp_path / "a.db",
        settings=AgentSettings(tool_result_max_chars=2000),
    )
    long_note = "Tulips: " + "a very long note about bulbs " * 200
    talk(fake_llm, agent, ["Tulips are red.", long_note, "Tulips are yellow too."])
    then_calls(fake_llm, call("conversation_search", query="tulips", request_heartbeat=True))
    page = agent.step("tulips?").tool_results[0].content
    assert len(page) <= 2000 and "[truncated" not in page
    assert "user: Tulips are red.\n" in page + "\n" and "user: Tulips are yellow too." in page
    assert (
        f"…[result clipped: {len('- [2026-01-01 00:00 UTC] user: ' + long_note)} characters" in page
    )
