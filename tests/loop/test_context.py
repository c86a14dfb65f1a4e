"""Context window management against a fake server that enforces a small window
the way a real endpoint does. Compaction, and searching what it evicted, run
against SQLite and PostgreSQL (`db_location`)."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from memgpt_lite import Agent, AgentSettings, Block, ConfigError, ContextBudgetError, tool
from memgpt_lite.cli.main import cli
from memgpt_lite.loop.compaction import choose_cut
from memgpt_lite.memory.recall.window import budget_for, window_for_model
from memgpt_lite.models import Message
from memgpt_lite.testing import FakeOpenAIServer, call, error, reply, say

WINDOW = 2500
FILLER = " ".join(["the quick brown fox jumps over the lazy dog"] * 8)  # about 75 tokens


@pytest.fixture
def server(fake_llm: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_llm.context_window = WINDOW
    return fake_llm


def make_agent(
    tmp_path, window: int = WINDOW, tools=(), blocks=None, db: str | None = None, **settings
) -> Agent:
    """Sam, in `db` if given, else in a SQLite file in `tmp_path`."""
    return Agent.create(
        "sam",
        "gpt-4o-mini",
        db=db or tmp_path / "a.db",
        system="You are a test agent.",
        blocks=blocks or [Block(label="persona", value="I am Sam."), Block(label="human")],
        settings=AgentSettings(context_window=window, **settings),
        tools=tools,
    )


def is_summary_request(body: dict) -> bool:
    return "tools" not in body


def carrying_summarizer(body: dict) -> str:
    """A summarizer that keeps every FACTn word: the previous summary's and the
    new messages'. It shows what we pass on, not what a model would write."""
    text = body["messages"][-1]["content"]
    return "Facts so far: " + " ".join(
        sorted(set(re.findall(r"FACT\d+", text)), key=lambda f: int(f[4:]))
    )


def model(body: dict):
    if is_summary_request(body):
        return reply(content=carrying_summarizer(body))
    return say("ok")


def chat(agent: Agent, turns: range):
    return [agent.step(f"FACT{i} {FILLER}") for i in turns]


def test_default_windows_and_budget(tmp_path, fake_llm):
    assert window_for_model("gpt-4o-mini") == 128_000
    assert window_for_model("gpt-4-0613") == 8_192
    assert window_for_model("gpt-4.1-nano") == 1_047_576
    assert window_for_model("openai/gpt-4o") == 128_000
    assert window_for_model("llama3.2") == 8_192
    budget = budget_for(make_agent(tmp_path, window=4096).runner)
    assert (budget.window, budget.reserve, budget.compact_at, budget.warning_at) == (
        4096,
        410,
        3686,
        3072,
    )


def test_memory_pressure_warning_once_then_rearmed(server, tmp_path):
    server.responder = model
    agent = make_agent(tmp_path)
    results = chat(agent, range(30))
    warned = [i for i, r in enumerate(results) if r.memory_warnings]
    compacted = [i for i, r in enumerate(results) if r.compactions]
    assert warned and compacted
    # One warning per compaction cycle: never two without a compaction between.
    events = sorted([(i, "warn") for i in warned] + [(i, "compact") for i in compacted])
    kinds = [k for _, k in events]
    assert all(not (a == b == "warn") for a, b in zip(kinds, kinds[1:], strict=False))
    alert_requests = [
        r
        for r in server.chat_requests
        if not is_summary_request(r)
        and any(
            "memory pressure" in (m.get("content") or "")
            for m in r["messages"]
            if m["role"] == "system"
        )
    ]
    assert alert_requests
    first_alert = next(m for m in alert_requests[0]["messages"][1:] if m["role"] == "system")
    assert "archival_memory_insert" in first_alert["content"]
    assert server.rejections == []


def test_proactive_compaction_keeps_every_request_in_the_window(server, tmp_path, db_location):
    server.responder = model
    agent = make_agent(tmp_path, db=db_location)
    results = chat(agent, range(40))
    budget = budget_for(agent.runner)
    assert sum(r.compactions for r in results) >= 2
    assert server.rejections == []
    assert all(r.prompt_tokens_estimate <= budget.compact_at for r in results)
    # The summary sits in the system message, with the hidden count and how to search.
    system = server.chat_requests[-1]["messages"][0]["content"]
    hidden = int(re.search(r'hidden_messages="(\d+)"', system).group(1))
    assert hidden == agent.store.agent_stats(agent.state.id).message_count - len(
        agent.context_messages()
    )
    assert hidden > 0 and "conversation_search" in system
    # Nothing left recall storage.
    assert agent.store.agent_stats(agent.state.id).message_count == 40 * 3 + sum(
        r.memory_warnings for r in results
    )


def test_recursive_summary_carries_earlier_facts_forward(server, tmp_path):
    server.responder = model
    agent = make_agent(tmp_path)
    chat(agent, range(40))
    summary_requests = [r for r in server.chat_requests if is_summary_request(r)]
    assert len(summary_requests) >= 2
    # Each summarization is given the previous summary...
    assert "Facts so far: FACT0" in summary_requests[1]["messages"][-1]["content"]
    # ...so the earliest fact, long out of the window, is still in the system message.
    system = server.chat_requests[-1]["messages"][0]["content"]
    assert re.search(r"Facts so far: FACT0 FACT1 ", system)
    assert "FACT0 " not in " ".join(m.content or "" for m in agent.context_messages())


def test_reactive_compaction_after_context_length_exceeded(server, tmp_path):
    server.responder = model
    agent = make_agent(tmp_path, window=6000)  # the agent believes in a larger window
    results = chat(agent, range(25))
    overflows = [
        r
        for r in server.rejections
        if r.status == 400 and "maximum context length is 2500" in (r.error or "")
    ]
    assert len(overflows) == 1  # once: the agent then learns the real window
    assert agent.state.settings.context_window == WINDOW
    assert all(r.replies == ["ok"] for r in results)
    assert sum(r.compactions for r in results) >= 1


def test_tool_pairs_are_never_split(server, tmp_path):
    @tool
    def lookup(topic: str) -> str:
        """Look something up."""
        return f"notes on {topic}: " + FILLER

    turn = {"n": 0}

    def parallel_model(body):
        if is_summary_request(body):
            return reply(content="Summary.")
        turn["n"] += 1
        if turn["n"] % 2:
            return reply(
                content="checking",
                tool_calls=[
                    call("lookup", topic=f"t{turn['n']}", request_heartbeat=True),
                    call("lookup", topic="more", request_heartbeat=True),
                    call("archival_memory_search", query="fox", request_heartbeat=True),
                ],
            )
        return say("done")

    server.responder = parallel_model
    agent = make_agent(tmp_path, tools=[lookup])
    results = chat(agent, range(25))
    assert sum(r.compactions for r in results) >= 2
    assert server.rejections == []  # the server rejects any unanswered or orphan tool message
    for request in server.chat_requests:
        if not is_summary_request(request):
            assert request["messages"][1]["role"] != "tool"


def test_a_message_larger_than_the_window_is_clipped_in_the_request_only(server, tmp_path):
    server.responder = model
    agent = make_agent(tmp_path)
    huge = "FACT7 " + "lorem ipsum dolor sit amet " * 3000  # about 18k tokens
    result = agent.step(huge)
    assert result.replies == ["ok"] and server.rejections == []
    sent = server.chat_requests[-1]["messages"][-1]["content"]
    assert sent.startswith("FACT7 lorem") and "[clipped:" in sent and "recall memory" in sent
    stored = agent.store.search_messages(agent.state.id, "FACT7", 5)[0][0]
    assert stored.content == huge


def test_a_huge_tool_result_is_clipped(server, tmp_path):
    @tool
    def dump() -> str:
        """Return a lot."""
        return "data " * 20_000

    server.enqueue(reply(tool_calls=[call("dump", request_heartbeat=True)]), say("got it"))
    agent = make_agent(tmp_path, tools=[dump], tool_result_max_chars=200_000)
    assert agent.step("dump it").replies == ["got it"]
    assert server.rejections == []
    tool_messages = [m for m in server.chat_requests[-1]["messages"] if m["role"] == "tool"]
    assert "[clipped:" in tool_messages[-1]["content"]


def test_failing_summarizer_falls_back_to_dropping_old_exchanges(server, tmp_path):
    def broken(body):
        if is_summary_request(body):
            return error(400, "summaries are not my thing")
        return say("ok")

    server.responder = broken
    agent = make_agent(tmp_path)
    results = chat(agent, range(30))
    assert sum(r.compactions for r in results) >= 1
    assert all(r.replies == ["ok"] for r in results)
    assert agent.state.summary == ""  # nothing invented
    system = server.chat_requests[-1]["messages"][0]["content"]
    assert "earlier messages are out of view" in system
    assert [r.status for r in server.rejections] == []


def test_empty_summary_also_falls_back(server, tmp_path):
    server.responder = lambda body: reply(content="  ") if is_summary_request(body) else say("ok")
    agent = make_agent(tmp_path)
    assert all(r.replies == ["ok"] for r in chat(agent, range(25)))
    assert agent.state.summary == ""


def test_search_finds_evicted_messages(server, tmp_path, db_location):
    server.responder = model
    agent = make_agent(tmp_path, db=db_location)
    chat(agent, range(30))
    in_window = " ".join(m.content or "" for m in agent.context_messages())
    assert "FACT1 " not in in_window
    script = [
        reply(tool_calls=[call("conversation_search", query="fact1", request_heartbeat=True)]),
        say("found"),
    ]
    server.responder = lambda body: model(body) if is_summary_request(body) else script.pop(0)
    result = agent.step("what was fact one?")
    assert "of 1 results" in result.tool_results[0].content
    assert "user: FACT1 the quick" in result.tool_results[0].content


@pytest.mark.parametrize(
    "query", ['"unbalanced', "NEAR(a b)", "x AND", "*", "col:val", "-not", "((", "日本", "   "]
)
def test_hostile_queries_through_the_tool(server, tmp_path, query, db_location):
    agent = make_agent(tmp_path, db=db_location)
    server.enqueue(
        reply(tool_calls=[call("conversation_search", query=query, request_heartbeat=False)])
    )
    result = agent.step("search")
    assert result.tool_results[0].ok, result.tool_results[0].content


def over_the_limit(tmp_path) -> Agent:
    """Sam with a core memory too big for the window. `Agent.create` refuses
    such an agent, so it is created where it fits, then its window shrinks
    (a server found to have less, say), which nothing refuses."""
    agent = make_agent(tmp_path, window=16_000, blocks=[Block(label="persona", value="x " * 2400)])
    agent.state.settings.context_window = WINDOW
    agent.save()
    return agent


def test_core_memory_too_big_for_the_window_names_the_sections(server, tmp_path):
    agent = over_the_limit(tmp_path)
    with pytest.raises(ContextBudgetError) as caught:
        agent.step("hi")
    message = str(caught.value)
    # The schemas' own count, exactly: in a 2,500-token window they are
    # worded compactly (test_tool_wording.py), under the 1,000 they once passed.
    tools = f"tool schemas {agent.runner.tool_tokens()})"
    assert re.search(r"block:persona 24\d\d,", message) and tools in message
    assert "2500-token window" in message
    assert server.chat_requests == []


def test_compaction_terminates_when_nothing_helps(server, tmp_path):
    """A huge message and a summarizer that always fails still end in a request
    that fits, or a clear error: never a loop."""
    server.responder = lambda body: error(400, "no") if is_summary_request(body) else say("ok")
    agent = make_agent(tmp_path, compaction_target=0.1)
    chat(agent, range(10))
    assert agent.step("x " * 20_000).replies == ["ok"]
    assert server.rejections == []


def test_forced_summary_and_context_overview(server, tmp_path):
    server.responder = model
    agent = make_agent(tmp_path)
    chat(agent, range(4))
    before = agent.context_overview()
    assert before.context_window == WINDOW and before.messages_in_context == 12
    assert set(before.sections) == {
        "system instructions",
        "memory metadata",
        "block:persona",
        "block:human",
        "messages",
        "tool schemas",
    }
    assert before.sections["messages"] > 0 and before.messages_in_storage == 12
    report = agent.runner.summarize()
    assert report.evicted >= 5 and report.summarized
    after = agent.context_overview()
    assert after.messages_in_context == 12 - report.evicted
    assert after.sections["summary"] > 0
    assert "Facts so far: FACT0 FACT1" in agent.state.summary


def test_cli_context_and_summarize(server, tmp_path):
    server.responder = model
    agent = make_agent(tmp_path)
    chat(agent, range(4))
    runner = CliRunner()
    shown = runner.invoke(cli, ["--db", str(tmp_path / "a.db"), "context", "sam"])
    assert shown.exit_code == 0, shown.output
    assert "2,500" in shown.output and "tool schemas" in shown.output
    assert "12 in context, 12 stored" in shown.output
    done = runner.invoke(cli, ["--db", str(tmp_path / "a.db"), "summarize", "sam"])
    assert done.exit_code == 0 and "left the window" in done.output


def test_choose_cut_never_starts_at_a_tool_result():
    def msg(role):
        return Message(agent_id="a", role=role, content="x")

    roles = ["user", "assistant", "tool", "tool", "assistant", "tool", "user"]
    messages = [msg(r) for r in roles]
    tokens = [10] * len(roles)
    for keep in range(0, 80, 5):
        cut = choose_cut(messages, tokens, keep)
        assert messages[cut].role != "tool"
        assert cut <= 6  # the last exchange is always kept
    assert choose_cut(messages, tokens, 25) == 6
    assert choose_cut(messages, tokens, 30) == 4
    assert choose_cut(messages, tokens, 1000) == 0


def test_a_compaction_mid_step_keeps_the_step_from_its_user_message(server, tmp_path, db_location):
    @tool
    def research(topic: str) -> str:
        """Research a topic at length."""
        return f"notes on {topic}: " + FILLER * 8

    questions_seen = []

    def researching_model(body):
        if is_summary_request(body):
            return reply(content="Summary.")
        messages = body["messages"]
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        questions_seen.append(messages[last_user]["content"].split()[0])
        if not any(m["role"] == "tool" for m in messages[last_user:]):  # a new question
            return reply(tool_calls=[call("research", topic="foxes", request_heartbeat=True)])
        return say("done")

    server.responder = researching_model
    agent = make_agent(tmp_path, db=db_location, tools=[research])
    results = [agent.step(f"QUESTION{i} {FILLER}") for i in range(12)]
    assert sum(r.compactions for r in results) >= 1
    # Both requests of every step show the question being answered, even when
    # the tool result pushed the second one over the compaction threshold.
    assert questions_seen == [f"QUESTION{i}" for i in range(12) for _ in range(2)]
    assert server.rejections == []


def test_an_agent_cannot_edit_itself_out_of_its_window(server, tmp_path):
    agent = make_agent(tmp_path)
    # Numbers: dense in tokens, so the window's limit comes before the
    # block's 5,000 characters.
    line = "Likes: " + " ".join(str(100 + i) for i in range(80))

    def appending_model(body):
        if is_summary_request(body):
            return reply(content="Summary.")
        last = body["messages"][-1]
        if last["role"] == "user" and last["content"].startswith("remember"):
            fact = f"{last['content']}: {line}"  # a new line each turn
            return reply(tool_calls=[call("core_memory_append", label="human", content=fact)])
        return say("ok")

    server.responder = appending_model
    # Enough lines to pass the window's limit with the compact schemas of a
    # 2,500-token window, which leave more room for core memory.
    results = [agent.step(f"remember this, part {i}") for i in range(16)]
    outcomes = [r.tool_results[0] for r in results]
    assert outcomes[0].ok, "the first lines fit"
    refused = [o for o in outcomes if not o.ok]
    assert refused, "the block kept growing"
    assert "archival_memory_insert" in refused[0].content
    assert "2,500-token context window" in refused[0].content
    # Every turn still works: the agent never locked itself out.
    assert agent.step("still there?").replies == ["ok"]
    assert server.rejections == []


def test_a_user_edit_that_crowds_out_the_conversation_is_refused(server, tmp_path):
    agent = make_agent(tmp_path)
    with pytest.raises(ConfigError, match="2,500-token context window"):
        agent.set_block("human", "a " * 2000)  # within the block's 5,000 characters
    assert agent.block("human").value == ""


def test_an_agent_already_over_the_limit_can_be_trimmed_and_is_told_how(server, tmp_path):
    agent = over_the_limit(tmp_path)
    with pytest.raises(ContextBudgetError) as caught:
        agent.step("hi")
    assert "memgpt-lite blocks sam LABEL --edit" in str(caught.value)
    agent.set_block("persona", "x " * 2300)  # still too big, but smaller: allowed
    agent.set_block("persona", "I am Sam.")
    server.enqueue(say("back"))
    assert agent.step("hi").replies == ["back"]


def test_a_step_that_fills_the_window_by_itself_ends_and_the_next_one_works(server, tmp_path):
    @tool
    def fetch(page: int) -> str:
        """Fetch one page of a long document."""
        return f"page {page}: " + FILLER * 2

    pages = iter(range(100))

    def reading_model(body):
        if is_summary_request(body):
            return reply(content="Summary.")
        if body["messages"][-1]["content"] == "thanks":
            return say("you are welcome")
        return reply(tool_calls=[call("fetch", page=next(pages), request_heartbeat=True)])

    server.responder = reading_model
    agent = make_agent(tmp_path, tools=[fetch], max_chained_steps=50)
    result = agent.step("read the whole document")
    assert result.stop_reason == "context_full"
    assert all(r.ok for r in result.tool_results)
    assert agent.step("thanks").replies == ["you are welcome"]
    assert server.rejections == []


@pytest.mark.parametrize("stated", ["0", "9" * 5000])
def test_an_absurd_window_in_an_error_is_not_adopted(server, tmp_path, stated):
    agent = make_agent(tmp_path)
    too_long = error(
        400,
        f"This model's maximum context length is {stated} tokens.",
        code="context_length_exceeded",
    )
    server.enqueue(too_long, say("fits after all"))
    assert agent.step("hello").replies == ["fits after all"]
    assert Agent.load("sam", db=tmp_path / "a.db").state.settings.context_window == WINDOW
