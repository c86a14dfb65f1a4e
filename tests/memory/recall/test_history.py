"""History edits (pop, retry, rethink, rewrite) through the public API: after
each edit the next request must still be accepted by the validating server.
The edits that delete, update or re-embed stored messages run against SQLite
and PostgreSQL (`db_location`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memgpt_lite import Agent, ConfigError, LLMError, Message, NotFoundError
from memgpt_lite.errors import ConflictError
from memgpt_lite.memory.recall.history import unanswered_note
from memgpt_lite.memory.retrieval.search import search_messages
from memgpt_lite.testing import FakeOpenAIServer, call, error, reply, say


def make_agent(tmp_path: Path) -> Agent:
    return make_agent_in(tmp_path / "agents.db")


def make_agent_in(db: str | Path) -> Agent:
    return Agent.create("sam", "gpt-4o-mini", db=db)


def chat(fake_llm: FakeOpenAIServer, agent: Agent, text: str, answer: str) -> None:
    """One exchange with a memory edit chained before the reply, so it holds
    two responses and two tool results."""
    fake_llm.enqueue(
        reply(
            f"thinking about {text}",
            [
                call(
                    "core_memory_append",
                    label="human",
                    content=f"said {text}",
                    request_heartbeat=True,
                )
            ],
        ),
        say(answer, content=f"answering {text}"),
    )
    agent.step(text)


def roles(agent: Agent) -> list[str]:
    return [m.role for m in agent.context_messages()]


def next_call_is_accepted(fake_llm: FakeOpenAIServer, agent: Agent) -> dict:
    fake_llm.enqueue(say("ok"))
    assert agent.step("next").replies == ["ok"]
    assert fake_llm.rejections == []
    return fake_llm.chat_requests[-1]


def test_pop_removes_whole_exchanges_and_search_forgets_them(fake_llm, db_location):
    agent = make_agent_in(db_location)
    chat(fake_llm, agent, "apples", "I like apples")
    chat(fake_llm, agent, "bananas", "I like bananas")
    chat(fake_llm, agent, "cherries", "I like cherries")
    assert len(agent.context_messages()) == 15
    assert search_messages(agent.runner, "cherries", 5)[1] == 3

    assert agent.history.pop_exchanges(2) == 10
    assert roles(agent) == ["user", "assistant", "tool", "assistant", "tool"]
    assert [m.content for m in agent.context_messages() if m.role == "user"] == ["apples"]
    assert agent.store.agent_stats(agent.state.id).message_count == 5
    assert search_messages(agent.runner, "cherries", 5) == ([], 0)
    assert search_messages(agent.runner, "bananas", 5) == ([], 0)
    assert search_messages(agent.runner, "apples", 5)[1] == 3

    request = next_call_is_accepted(fake_llm, agent)
    sent = [m["content"] for m in request["messages"] if m["role"] == "user"]
    assert sent == ["apples", "next"]


def test_pop_refuses_exchanges_folded_into_the_summary(fake_llm, db_location):
    agent = make_agent_in(db_location)
    for fruit in ("apples", "bananas", "cherries"):
        chat(fake_llm, agent, fruit, f"I like {fruit}")
    fake_llm.enqueue(reply("Talked about fruit."))  # the summarizer's answer
    assert agent.runner.summarize().evicted > 0
    window = agent.context_messages()
    in_window = [m for m in window if m.role == "user"]
    assert window[0].seq > 1 and 1 <= len(in_window) < 3
    before = agent.store.agent_stats(agent.state.id).message_count

    with pytest.raises(ConfigError, match=rf"only {len(in_window)} exchange\(s\) are in the"):
        agent.history.pop_exchanges(len(in_window) + 1)
    assert agent.store.agent_stats(agent.state.id).message_count == before
    popped = agent.history.pop_exchanges(len(in_window))
    assert popped == len([m for m in window if m.seq >= in_window[0].seq])
    assert agent.store.agent_stats(agent.state.id).message_count == before - popped
    with pytest.raises(ConfigError, match="only 0 exchange"):
        agent.history.pop_exchanges(1)
    with pytest.raises(ConfigError, match="at least 1"):
        agent.history.pop_exchanges(0)
    next_call_is_accepted(fake_llm, agent)


def test_edits_with_nothing_to_edit(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    with pytest.raises(ConfigError, match="no reply in the context window"):
        agent.history.rewrite("anything")
    with pytest.raises(ConfigError, match="no inner thought in the context window"):
        agent.history.rethink("anything")
    with pytest.raises(ConfigError, match="no user message"):
        agent.runner.retry()
    assert fake_llm.requests == []


def test_pop_after_a_step_the_model_never_answered(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    chat(fake_llm, agent, "apples", "I like apples")
    fake_llm.enqueue(reply("no tools, no text", finish_reason="stop"))
    # The user message is stored first; here only a text reply follows.
    agent.step("dangling")
    assert agent.history.pop_exchanges() == 2
    assert roles(agent)[-1] == "tool"
    next_call_is_accepted(fake_llm, agent)


def test_retry_resends_the_last_user_message(fake_llm, db_location):
    agent = make_agent_in(db_location)
    chat(fake_llm, agent, "apples", "Wrongful")
    fake_llm.enqueue(say("Better answer"))
    result = agent.runner.retry()
    assert result.replies == ["Better answer"]
    assert roles(agent) == ["user", "assistant", "tool"]
    assert agent.context_messages()[0].content == "apples"
    assert fake_llm.rejections == []
    last = fake_llm.chat_requests[-1]["messages"]
    assert [m["content"] for m in last if m["role"] == "user"] == ["apples"]
    assert search_messages(agent.runner, "wrongful", 5) == ([], 0)


def test_rethink_replaces_the_last_thought(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    chat(fake_llm, agent, "apples", "I like apples")
    edited = agent.history.rethink("I should talk about pears")
    assert edited.content == "I should talk about pears"
    stored = [m for m in agent.context_messages() if m.role == "assistant"]
    assert [m.content for m in stored] == ["thinking about apples", "I should talk about pears"]
    assert search_messages(agent.runner, "pears", 5)[1] == 1
    assert search_messages(agent.runner, "answering", 5) == ([], 0)
    request = next_call_is_accepted(fake_llm, agent)
    contents = [m.get("content") for m in request["messages"]]
    assert "I should talk about pears" in contents


def test_rewrite_replaces_the_sent_message(fake_llm, db_location):
    agent = make_agent_in(db_location)
    chat(fake_llm, agent, "apples", "I like apples")
    agent.history.rewrite("I love pears")
    last = agent.context_messages()[-2]
    assert last.tool_calls[0].name == "send_message"
    assert json.loads(last.tool_calls[0].arguments) == {"message": "I love pears"}
    assert last.content == "answering apples"  # the thought is kept
    assert search_messages(agent.runner, "pears", 5)[1] == 1
    assert search_messages(agent.runner, "like", 5) == ([], 0)
    request = next_call_is_accepted(fake_llm, agent)
    arguments = [
        c["function"]["arguments"] for m in request["messages"] for c in m.get("tool_calls", [])
    ]
    assert json.dumps({"message": "I love pears"}) in arguments


def test_rewrite_replaces_the_last_of_two_replies(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    fake_llm.enqueue(
        reply(tool_calls=[call("send_message", message="one"), call("send_message", message="two")])
    )
    agent.step("talk")
    agent.history.rewrite("TWO")
    calls = agent.context_messages()[-3].tool_calls
    assert [json.loads(c.arguments)["message"] for c in calls] == ["one", "TWO"]
    next_call_is_accepted(fake_llm, agent)


def test_rewrite_replaces_a_plain_text_reply(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    fake_llm.enqueue(reply("Plain hello"))
    agent.step("hi")
    agent.history.rewrite("Plain goodbye")
    assert agent.context_messages()[-1].content == "Plain goodbye"
    with pytest.raises(ConfigError, match="no inner thought"):
        agent.history.rethink("nothing with tool calls here")
    with pytest.raises(ConfigError, match="empty"):
        agent.history.rewrite("   ")
    next_call_is_accepted(fake_llm, agent)


def test_edits_reach_the_token_count(fake_llm, tmp_path):
    agent = make_agent(tmp_path)
    chat(fake_llm, agent, "apples", "short")
    before = agent.context_overview().sections["messages"]
    agent.history.rewrite("a much longer reply " * 50)
    after = agent.context_overview().sections["messages"]
    assert after > before + 100


def test_update_of_a_missing_message_is_refused(fake_llm, db_location):
    agent = make_agent_in(db_location)
    ghost = Message(agent_id=agent.state.id, role="user", content="never stored")
    with pytest.raises(NotFoundError, match="no message with id"):
        agent.store.update_message(ghost)


def test_an_edited_message_is_embedded_again(fake_llm, db_location):
    agent = Agent.create(
        "sam", "gpt-4o-mini", db=db_location, embedder="endpoint:text-embedding-3-small"
    )
    chat(fake_llm, agent, "apples", "I like apples")
    search_messages(agent.runner, "apples", 5)  # embeds the stored messages

    def embedded() -> list[int]:
        state = agent.state
        dimension = state.embedding_dimension or 0
        return agent.store.load_vectors(state.id, "message", 0, dimension).seqs.tolist()

    before = embedded()
    last = agent.context_messages()[-2]
    assert last.seq in before
    agent.history.rewrite("I love pears")
    assert embedded() == [seq for seq in before if seq != last.seq]
    found, _ = search_messages(agent.runner, "pears", 5)
    assert sorted(embedded()) == sorted(before)
    assert found[0].id == last.id
    assert fake_llm.rejections == []


def test_set_model_persists(fake_llm, db_location):
    agent = make_agent_in(db_location)
    agent.set_model("gpt-4o")
    assert Agent.load("sam", db=db_location).state.llm.model == "gpt-4o"
    next_call_is_accepted(fake_llm, agent)
    assert fake_llm.chat_requests[-1]["model"] == "gpt-4o"
    with pytest.raises(ConfigError, match="empty"):
        agent.set_model(" ")


def user_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def test_failed_sends_are_kept_unanswered_and_left_out_of_later_requests(fake_llm, db_location):
    agent = make_agent_in(db_location)
    chat(fake_llm, agent, "apples", "I like apples")
    for text in ("first lost", "second lost"):
        fake_llm.enqueue(error(400, "the model is loading"))
        with pytest.raises(LLMError):
            agent.step(text)
    assert [m.content for m in agent.history.unanswered()] == ["first lost", "second lost"]
    fake_llm.enqueue(say("fresh"))
    assert agent.step("a new question").replies == ["fresh"]
    # The good turn answers its own message, not a heap of old ones.
    assert user_texts(fake_llm.chat_requests[-1]) == ["apples", "a new question"]
    assert fake_llm.rejections == []
    # Nothing the user typed is lost: both stay in recall memory.
    assert search_messages(agent.runner, "lost", 5)[1] == 2


def test_an_unanswered_message_can_be_sent_again_or_dropped(fake_llm, db_location):
    agent = make_agent_in(db_location)
    fake_llm.enqueue(error(400, "the model is loading"))
    with pytest.raises(LLMError):
        agent.step("are you there?")
    note = unanswered_note(agent.runner, "/retry", "/pop")
    assert note == 'Your message "are you there?" was not answered: /retry sends it again, ' + (
        "/pop drops it."
    )
    fake_llm.enqueue(say("yes"))
    assert agent.runner.retry().replies == ["yes"]
    assert [m.content for m in agent.context_messages() if m.role == "user"] == ["are you there?"]
    assert (
        agent.history.unanswered() == [] and unanswered_note(agent.runner, "/retry", "/pop") is None
    )
    fake_llm.enqueue(error(400, "the model is loading"))
    with pytest.raises(LLMError):
        agent.step("still there?")
    assert agent.history.pop_exchanges(1) == 1
    assert agent.history.unanswered() == []
    next_call_is_accepted(fake_llm, agent)


def test_edit_by_id_replaces_one_part_of_a_message_in_the_window(fake_llm, db_location):
    agent = make_agent_in(db_location)
    chat(fake_llm, agent, "apples", "I like apples")
    chat(fake_llm, agent, "bananas", "I like bananas")
    first_user = next(m for m in agent.context_messages() if m.role == "user")
    first_answer = next(m for m in agent.context_messages() if m.role == "assistant")
    tool_result = next(m for m in agent.context_messages() if m.role == "tool")

    edited = agent.history.edit(first_user.id, "text", "I said pears")
    assert (edited.id, edited.content) == (first_user.id, "I said pears")
    agent.history.edit(first_answer.id, "inner thought", "pears, then")
    with pytest.raises(ConfigError, match="has no reply to replace"):
        agent.history.edit(first_answer.id, "reply", "x")  # a memory edit, not a reply
    with pytest.raises(ConfigError, match="has no text to replace"):
        agent.history.edit(tool_result.id, "text", "x")
    with pytest.raises(ConfigError, match="the new text is empty"):
        agent.history.edit(first_user.id, "text", "  ")
    by_id = {m.id: m for m in agent.context_messages()}
    assert by_id[first_user.id].content == "I said pears"
    assert by_id[first_answer.id].content == "pears, then"
    assert by_id[tool_result.id] == tool_result
    assert search_messages(agent.runner, "pears", 5)[1] == 2
    assert search_messages(agent.runner, "apples", 5)[1] == 1  # "I like apples" is left

    fake_llm.enqueue(reply("Talked about fruit."))  # the summarizer's answer
    assert agent.runner.summarize().evicted > 0
    with pytest.raises(ConflictError, match="not in the context window; older messages"):
        agent.history.edit(first_user.id, "text", "too late")
    assert agent.store.get_message(first_user.id, agent.state.owner).content == "I said pears"
    next_call_is_accepted(fake_llm, agent)
