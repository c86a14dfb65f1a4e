"""Token costs: each model answer's usage stored with its step, per-agent
totals from the store, the price table, and `memgpt-lite show`. What is stored
and summed runs against SQLite and PostgreSQL (`db_location`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.backends import open_db

from memgpt_lite import Agent
from memgpt_lite.cli.main import cli
from memgpt_lite.errors import LLMError
from memgpt_lite.llm.prices import (
    Price,
    cost,
    price_for,
    total_cost,
    totals_text,
    turn_cost_text,
)
from memgpt_lite.models import ModelUsage, Usage
from memgpt_lite.testing import FakeOpenAIServer, call, error, raw, reply, say


def make_agent(db: str | Path, model: str = "gpt-4o-mini") -> Agent:
    return Agent.create("sam", model, db=db)


def show(db: str | Path, name: str = "sam") -> str:
    result = CliRunner().invoke(cli, ["--db", str(db), "show", name], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def without_usage(message: str) -> str:
    """A whole completion, as a server that reports no usage sends it."""
    arguments = json.dumps({"message": message})
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "send_message", "arguments": arguments},
                            }
                        ],
                    },
                }
            ],
        }
    )


# stored usage


def test_each_answer_s_usage_is_stored_with_its_step(fake_llm: FakeOpenAIServer, db_location):
    agent = make_agent(db_location)
    fake_llm.enqueue(
        reply(
            "Note it.",
            [call("core_memory_append", label="human", content="Alice", request_heartbeat=True)],
        ),
        say("Hi Alice!"),
    )
    result = agent.step("I am Alice")
    step_id = result.messages[0].step_id
    with open_db(db_location) as other:  # another connection: it was committed
        records = other.step_usage(agent.state.id, step_id)
        totals = other.usage_by_model(agent.state.id)
    assert len(records) == 2 and not any(r.estimated for r in records)
    assert all(r.prompt_tokens > 0 and r.completion_tokens > 0 for r in records)
    assert sum(r.total_tokens for r in records) == result.usage.total_tokens > 0
    assert totals == [
        ModelUsage(
            model="gpt-4o-mini",
            prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens,
            total_tokens=result.usage.total_tokens,
            requests=2,
            steps=1,
        )
    ]


def test_totals_add_up_over_turns(fake_llm: FakeOpenAIServer, db_location):
    agent = make_agent(db_location)
    spent = Usage()
    for turn in range(3):
        fake_llm.enqueue(say(f"reply {turn}"))
        spent.add(agent.step(f"message {turn}").usage)
    [totals] = agent.store.usage_by_model(agent.state.id)
    assert (totals.total_tokens, totals.requests, totals.steps) == (spent.total_tokens, 3, 3)


def test_without_reported_usage_our_count_is_stored_and_marked(
    fake_llm: FakeOpenAIServer, db_location
):
    agent = make_agent(db_location)
    fake_llm.enqueue(raw(without_usage("Hello there, Alice.")))
    result = agent.step("hi")
    assert result.replies == ["Hello there, Alice."] and result.usage.total_tokens == 0
    [record] = agent.store.step_usage(agent.state.id, result.messages[0].step_id)
    assert record.estimated
    assert record.prompt_tokens == result.prompt_tokens_estimate > 0
    assert 0 < record.completion_tokens < 40
    assert record.total_tokens == record.prompt_tokens + record.completion_tokens
    assert "1 request counted by us" in show(db_location)


def test_a_failed_call_stores_no_usage_and_loses_nothing(fake_llm: FakeOpenAIServer, db_location):
    agent = make_agent(db_location)
    fake_llm.enqueue(say("first"))
    agent.step("one")
    before = agent.store.usage_by_model(agent.state.id)
    fake_llm.enqueue(error(400, "bad request"))
    with pytest.raises(LLMError):
        agent.step("two")
    assert agent.store.usage_by_model(agent.state.id) == before
    assert [m.content for m in agent.store.last_messages(agent.state.id, 1)] == ["two"]


# prices


@pytest.mark.parametrize(
    ("model", "price"),
    [
        ("gpt-4o-mini", Price(0.15, 0.60)),
        ("gpt-4o-mini-2024-07-18", Price(0.15, 0.60)),
        ("openai/GPT-4o-mini", Price(0.15, 0.60)),
        ("gpt-4o", Price(2.50, 10.00)),
        ("gpt-4o-2024-08-06", Price(2.50, 10.00)),
        ("gpt-4o-2024-05-13", Price(5.00, 15.00)),  # a snapshot priced on its own
        ("gpt-3.5-turbo-0125", Price(0.50, 1.50)),
        ("gpt-4.1-nano", Price(0.10, 0.40)),
        ("gpt-5-mini-2025-08-07", Price(0.25, 2.00)),
    ],
)
def test_prices_match_model_names_with_dated_suffixes(model: str, price: Price):
    assert price_for(model) == price


@pytest.mark.parametrize("model", ["llama3.2", "gpt-4o-audio-preview", "gpt-4o-minix", ""])
def test_unknown_models_have_no_price(model: str):
    assert price_for(model) is None
    assert cost(model, 1000, 1000) is None


def test_costs_in_dollars():
    assert cost("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert cost("gpt-4o", 10_000, 500) == pytest.approx(0.03)
    usage = Usage(prompt_tokens=10_000, completion_tokens=500, total_tokens=10_500)
    assert turn_cost_text("gpt-4o", usage) == "10,500 tokens (10,000 in, 500 out), $0.0300"
    assert turn_cost_text("llama3.2", usage) == "10,500 tokens (10,000 in, 500 out)"


def test_totals_say_what_the_cost_leaves_out():
    mini = ModelUsage(model="gpt-4o-mini", prompt_tokens=2_000_000, total_tokens=2_000_000)
    local = ModelUsage(model="llama3.2", prompt_tokens=5, completion_tokens=1, total_tokens=6)
    local.requests = mini.requests = 1
    assert total_cost([mini, local]) == pytest.approx(0.30)
    assert total_cost([local]) is None
    assert totals_text([mini, local]) == (
        "2,000,006 tokens (2,000,005 in, 1 out) in 2 requests, $0.3000 "
        "(no price known for llama3.2)"
    )
    assert totals_text([local]) == "6 tokens (5 in, 1 out) in 1 request"


# memgpt-lite show


def test_show_gives_token_totals_and_their_cost(fake_llm: FakeOpenAIServer, db_location):
    db = db_location
    agent = make_agent(db)
    assert "tokens: none yet\n" in show(db)
    fake_llm.enqueue(say("Hello!"))
    usage = agent.step("hi").usage
    dollars = cost("gpt-4o-mini", usage.prompt_tokens, usage.completion_tokens)
    assert f"tokens: {usage.total_tokens:,} tokens " in show(db)
    assert f"in 1 request, ${dollars:,.4f}\n" in show(db)


def test_show_gives_tokens_only_for_a_model_without_a_price(fake_llm: FakeOpenAIServer, tmp_path):
    db = tmp_path / "a.db"
    agent = make_agent(db, model="llama3.2")
    fake_llm.enqueue(say("Hello!"))
    usage = agent.step("hi").usage
    line = next(x for x in show(db).splitlines() if x.startswith("tokens: "))
    assert line.startswith(f"tokens: {usage.total_tokens:,} tokens") and "$" not in line


def test_show_splits_totals_by_model_after_a_switch(fake_llm: FakeOpenAIServer, db_location):
    db = db_location
    agent = make_agent(db, model="llama3.2")
    fake_llm.enqueue(say("one"), say("two"))
    agent.step("hi")
    agent.state.llm.model = "gpt-4o"
    agent.save()
    agent.step("again")
    shown = show(db)
    assert "(no price known for llama3.2)" in shown
    assert "\n  gpt-4o: " in shown and "\n  llama3.2: " in shown


def without_usage_text(content: str) -> str:
    """A whole plain-text completion with no usage (a summary, say)."""
    message = {"role": "assistant", "content": content}
    choice = {"index": 0, "finish_reason": "stop", "message": message}
    return json.dumps({"id": "c", "object": "chat.completion", "choices": [choice]})


def test_the_summarizer_s_tokens_are_stored_too(fake_llm: FakeOpenAIServer, db_location):
    """A compaction's summary requests cost tokens: they count in the totals,
    as the endpoint reported them, or by our count (marked) if it did not."""
    fake_llm.responder = lambda body: (
        say("Noted.") if "tools" in body else reply("They talked about the garden.")
    )
    agent = make_agent(db_location)
    for turn in range(4):
        agent.step(f"Turn {turn}: the garden has roses")
    before = agent.store.usage_by_model(agent.state.id)[0]
    report = agent.runner.summarize()
    assert report.summarized
    after = agent.store.usage_by_model(agent.state.id)[0]
    summaries = [r for r in fake_llm.chat_requests if "tools" not in r]
    assert len(summaries) == 1 and after.requests == before.requests + 1
    assert after.prompt_tokens > before.prompt_tokens and after.estimated_requests == 0

    fake_llm.responder = lambda body: (
        say("Noted.") if "tools" in body else raw(without_usage_text("A short summary."))
    )
    for turn in range(4):
        agent.step(f"Turn {turn}: the pond has fish")
    agent.runner.summarize()
    last = agent.store.usage_by_model(agent.state.id)[0]
    assert last.estimated_requests == 1  # the summary without reported usage
