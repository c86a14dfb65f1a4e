"""Agents that call agents (tools/multi_agent.py): an agent messages another
of its owner and gets its reply, by name, id or tags; the agent messaged runs
a real step against the fake server; chains are bounded and cycles refused,
without waiting. Stored state is checked on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from memgpt_lite import Agent, AgentSettings, ConfigError
from memgpt_lite.testing import FakeOpenAIServer, Reply, call, error, reply, say
from memgpt_lite.tools.multi_agent import send_message_to_agent_and_wait_for_reply
from memgpt_lite.tools.rules import needs_approval

ASK = "send_message_to_agent_and_wait_for_reply"
ASK_TAGS = "send_message_to_agents_matching_tags"
BOTH = [ASK, ASK_TAGS]


def make(
    db: str,
    name: str,
    *,
    tools: Sequence[Any] = (),
    tags: Sequence[str] = (),
    owner: str = "local",
    **settings: Any,
) -> Agent:
    """An agent whose system prompt starts with its name, so the fake
    server's responder can tell whose request it answers."""
    return Agent.create(
        name,
        "gpt-4o-mini",
        db=db,
        system=f"You are {name}.",
        tools=tools,
        settings=AgentSettings(tags=list(tags), **settings),
        owner=owner,
    )


def ask(other: str, message: str) -> Reply:
    return reply(
        tool_calls=[call(ASK, message=message, other_agent_id=other, request_heartbeat=True)]
    )


def whose(body: dict[str, Any]) -> str:
    return body["messages"][0]["content"].split(".", 1)[0].removeprefix("You are ")


def last_message(body: dict[str, Any]) -> dict[str, Any]:
    return body["messages"][-1]


def tool_results(result: Any, *names: str) -> list[str]:
    """The results of the step's calls of the tools `names`, in order."""
    return [r.content for r in result.tool_results if r.call.name in names]


def tool_result(result: Any, name: str = ASK) -> str:
    [found] = tool_results(result, name)
    return found


def user_messages(agent: Agent) -> list[str]:
    return [m.content for m in agent.store.messages_from(agent.state.id, 0) if m.role == "user"]


def test_an_agent_asks_another_by_name_and_gets_its_reply(fake_llm, db_location):
    alice = make(db_location, "alice", tools=[ASK])
    bob = make(db_location, "bob")
    fake_llm.enqueue(
        ask("bob", "What is the capital of France?"),
        say("Paris."),
        say("Bob says it is Paris."),
    )
    result = alice.step("Ask bob about France")
    assert result.replies == ["Bob says it is Paris."]
    assert tool_result(result) == "bob replied: Paris."
    # Bob ran a real step of his own: his system prompt, the message framed
    # as one from alice, his reply stored in his history.
    assert [whose(body) for body in fake_llm.chat_requests] == ["alice", "bob", "alice"]
    [received] = user_messages(bob)
    assert received.startswith("[A message from agent alice, not from your user.")
    assert received.endswith("\nWhat is the capital of France?")
    assert bob.context_messages()[-2].tool_calls[0].name == "send_message"
    assert not bob.store.step_lock_holder(bob.state.id)  # his lock was given back


def test_by_id_and_the_tools_survive_a_reload(fake_llm, db_location):
    make(db_location, "alice", tools=BOTH)
    bob = make(db_location, "bob")
    alice = Agent.load("alice", db=db_location)  # no tools given: they are stored
    assert alice.state.tool_names == BOTH
    assert set(BOTH) <= set(alice.tools)
    fake_llm.enqueue(ask(bob.state.id, "hello"), say("Hi alice."), say("done"))
    result = alice.step("say hi to bob")
    assert tool_result(result) == "bob replied: Hi alice."
    offered = {t["function"]["name"] for t in fake_llm.chat_requests[0]["tools"]}
    assert set(BOTH) <= offered
    # Bob has not the tools: they are attached to alice only.
    assert not set(BOTH) & {t["function"]["name"] for t in fake_llm.chat_requests[1]["tools"]}


def test_attached_as_tool_objects_and_refused_names(tmp_path):
    db = tmp_path / "agents.db"
    given = Agent.create(
        "ann", "gpt-4o-mini", db=db, tools=[send_message_to_agent_and_wait_for_reply]
    )
    assert given.state.tool_names == [ASK]
    refused = "no registered tool named 'web_search'.*built-in tools attached by name are: send_"
    with pytest.raises(ConfigError, match=refused):
        Agent.create("ben", "gpt-4o-mini", db=db, tools=["web_search"])

    def send_message_to_agents_matching_tags(message: str) -> str:
        """Not the built-in.

        Args:
            message: anything.
        """
        return message

    with pytest.raises(ConfigError, match="two tools are named"):
        Agent.create("cid", "gpt-4o-mini", db=db, tools=[send_message_to_agents_matching_tags])


def respond_by_agent(
    fake_llm: FakeOpenAIServer, answers: dict[str, Callable[[dict[str, Any]], Reply]]
) -> list[str]:
    """Answer each request with the function of the agent whose it is; the
    agents' names, in the order their requests came."""
    seen: list[str] = []
    guard = threading.Lock()

    def responder(body: dict[str, Any]) -> Reply:
        name = whose(body)
        with guard:
            seen.append(name)
        return answers[name](body)

    fake_llm.responder = responder
    return seen


def answers_then_says(text: str) -> Callable[[dict[str, Any]], Reply]:
    def answer(body: dict[str, Any]) -> Reply:
        return say(text)

    return answer


def test_a_message_to_the_agents_matching_tags_reaches_each(fake_llm, db_location):
    alice = make(db_location, "alice", tools=[ASK_TAGS])
    make(db_location, "bob", tags=["team", "eu"])
    make(db_location, "carol", tags=["team", "us"])
    dave = make(db_location, "dave", tags=["other"])

    def alice_answer(body: dict[str, Any]) -> Reply:
        if last_message(body)["role"] == "user":
            tags = {"message": "Status?", "match_all": ["team"], "request_heartbeat": True}
            return reply(tool_calls=[call(ASK_TAGS, **tags)])
        return say("Everyone answered.")

    seen = respond_by_agent(
        fake_llm,
        {
            "alice": alice_answer,
            "bob": answers_then_says("Bob: fine"),
            "carol": answers_then_says("Carol: fine"),
        },
    )
    result = alice.step("Ask the team")
    assert result.replies == ["Everyone answered."]
    text = tool_result(result, ASK_TAGS)
    assert text.startswith("Sent to 2 agent(s) (bob, carol).")
    assert "bob replied: Bob: fine" in text and "carol replied: Carol: fine" in text
    assert sorted(seen) == ["alice", "alice", "bob", "carol"]
    assert user_messages(dave) == []


def test_match_some_and_no_match(fake_llm, db_location):
    alice = make(db_location, "alice", tools=[ASK_TAGS], tags=["eu"])  # never messages itself
    make(db_location, "bob", tags=["team", "eu"])
    make(db_location, "carol", tags=["team", "us"])
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(ASK_TAGS, message="hi", match_all=["team"], match_some=["eu", "asia"]),
                call(ASK_TAGS, message="hi", match_all=["nobody"], match_some=[]),
                call(ASK_TAGS, message="hi", match_all=[], match_some=[]),
            ]
        ),
        say("Bob here."),
        say("alice: done"),
    )
    result = alice.step("go")
    first, second, third = tool_results(result, ASK_TAGS)
    assert first == "Sent to 1 agent(s) (bob).\nbob replied: Bob here."
    assert second == "No other agent has those tags: nobody was messaged."
    assert third.startswith("Error: give match_all or match_some")


def test_a_chain_deeper_than_the_limit_is_refused(fake_llm, db_location):
    """With the default limit of 3, a chain goes alice -> bob -> carol ->
    dave; dave may not ask erin, and says so back up the chain."""
    alice = make(db_location, "alice", tools=[ASK])
    bob = make(db_location, "bob", tools=[ASK])
    carol = make(db_location, "carol", tools=[ASK])
    dave = make(db_location, "dave", tools=[ASK])
    erin = make(db_location, "erin")
    fake_llm.enqueue(
        ask("bob", "q"),
        ask("carol", "q"),
        ask("dave", "q"),
        ask("erin", "q"),
        say("dave: erin is out of reach"),
        say("carol: relayed"),
        say("bob: relayed"),
        say("alice: relayed"),
    )
    result = alice.step("start the chain")
    assert result.replies == ["alice: relayed"]
    assert [whose(b) for b in fake_llm.chat_requests] == [
        "alice", "bob", "carol", "dave", "dave", "carol", "bob", "alice"
    ]  # fmt: skip
    refusal = dave.store.messages_from(dave.state.id, 0)[-3].content
    assert refusal == (
        "Error: agents may message agents 3 deep at most, and this chain is already "
        "alice -> bob -> carol -> dave: erin was not asked. Answer with what you have."
    )
    assert user_messages(erin) == []
    assert tool_result(result) == "bob replied: bob: relayed"
    for agent in (alice, bob, carol, dave):
        assert not agent.store.step_lock_holder(agent.state.id)


def test_the_strictest_limit_of_a_chain_applies(fake_llm, tmp_path):
    db = str(tmp_path / "agents.db")
    alice = make(db, "alice", tools=[ASK], max_agent_chain_depth=1)
    make(db, "bob", tools=[ASK])  # its own limit is 3, alice's 1 holds
    carol = make(db, "carol")
    fake_llm.enqueue(ask("bob", "q"), ask("carol", "q"), say("bob: no"), say("alice: no"))
    result = alice.step("go")
    assert tool_result(result) == "bob replied: bob: no"
    bob_tool_result = fake_llm.chat_requests[2]["messages"][-1]["content"]
    assert "agents may message agents 1 deep at most" in bob_tool_result
    assert "alice -> bob: carol was not asked" in bob_tool_result
    assert user_messages(carol) == []


def test_a_cycle_is_refused_without_waiting(fake_llm, db_location):
    """bob asks alice back while alice waits for him: alice's step holds
    her step lock, so the message would never be answered. It is refused
    at once, and so is a message to oneself."""
    alice = make(db_location, "alice", tools=[ASK])
    bob = make(db_location, "bob", tools=[ASK])
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(ASK, message="me?", other_agent_id="alice"),
                call(ASK, message="q", other_agent_id="bob", request_heartbeat=True),
            ]
        ),
        ask("alice", "back to you"),
        say("bob: could not ask alice"),
        say("alice: done"),
    )
    result = alice.step("go")
    assert result.replies == ["alice: done"]
    self_message, to_bob = tool_results(result, ASK)
    assert self_message == "Error: that agent is you. Answer yourself, or message another agent."
    assert to_bob == "bob replied: bob: could not ask alice"
    bob_tool_result = fake_llm.chat_requests[2]["messages"][-1]["content"]
    assert bob_tool_result == (
        "Error: alice is itself waiting, directly or through other agents, for your reply: "
        "it could never answer. Answer without asking alice."
    )
    assert len(user_messages(alice)) == 1  # the user's; nothing from bob
    assert len(user_messages(bob)) == 1


def test_crossing_chains_end_without_a_deadlock(fake_llm, tmp_path):
    """alice asks bob and carol at once; each of them asks the other. If one
    already waits for the other's reply, the second message is refused (it
    would wait for a step lock its sender holds); else it is answered. Either
    way every step ends, and alice hears from both."""
    db = str(tmp_path / "agents.db")
    alice = make(db, "alice", tools=[ASK_TAGS])
    make(db, "bob", tools=[ASK], tags=["team"])
    make(db, "carol", tools=[ASK], tags=["team"])

    def alice_answer(body: dict[str, Any]) -> Reply:
        if last_message(body)["role"] == "user":
            asking = call(ASK_TAGS, message="hi", match_all=["team"], request_heartbeat=True)
            return reply(tool_calls=[asking])
        return say("alice: done")

    def asks(other: str) -> Callable[[dict[str, Any]], Reply]:
        def answer(body: dict[str, Any]) -> Reply:
            last = last_message(body)
            if last["role"] == "user" and "from agent alice" in last["content"]:
                return ask(other, "and you?")
            return say(f"{whose(body)}: ok")

        return answer

    respond_by_agent(fake_llm, {"alice": alice_answer, "bob": asks("carol"), "carol": asks("bob")})
    result = alice.step("go")
    assert result.replies == ["alice: done"]
    text = tool_result(result, ASK_TAGS)
    assert "bob replied: bob: ok" in text and "carol replied: carol: ok" in text
    for name in ("alice", "bob", "carol"):
        assert not alice.store.step_lock_holder(alice.store.get_agent(name).id)


def test_another_owners_agent_is_not_reachable(fake_llm, db_location):
    alice = make(db_location, "alice", tools=BOTH)
    make(db_location, "bob", tags=["team"])
    eve = make(db_location, "eve", owner="someone-else", tags=["team"])
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(ASK, message="psst", other_agent_id="eve"),
                call(ASK, message="psst", other_agent_id=eve.state.id),
                call(ASK, message="psst", other_agent_id="nobody"),
                call(ASK_TAGS, message="team?", match_all=["team"]),
            ]
        ),
        say("bob: here"),
        say("alice: done"),
    )
    result = alice.step("go")
    by_name, by_id, unknown, tags = tool_results(result, ASK, ASK_TAGS)
    assert by_name == "Error: there is no agent named 'eve'; the agents you can message: bob."
    assert by_id == by_name.replace("'eve'", repr(eve.state.id))
    assert unknown == by_name.replace("'eve'", "'nobody'")
    assert tags == "Sent to 1 agent(s) (bob).\nbob replied: bob: here"
    assert user_messages(eve) == []


def test_a_failing_agent_is_a_tool_error(fake_llm, db_location):
    alice = make(db_location, "alice", tools=[ASK])
    make(db_location, "bob")
    fake_llm.enqueue(ask("bob", "q"), error(400, "bob's model refuses"), say("bob failed"))
    result = alice.step("go")
    assert tool_result(result).startswith("Error: bob could not answer: ")
    assert "bob's model refuses" in tool_result(result)
    assert result.replies == ["bob failed"]


def test_the_key_given_goes_to_agents_of_the_same_endpoint_only(fake_llm, tmp_path):
    """alice was given her endpoint's key: bob, stored with the same
    endpoint, gets it too; carol, of the environment's endpoint, resolves her
    own key there, and never sees alice's."""
    db = tmp_path / "agents.db"
    with FakeOpenAIServer(api_key="alices-own-key") as own:
        Agent.create("alice", "gpt-4o-mini", db=db, base_url=own.base_url, tools=[ASK])
        Agent.create("bob", "gpt-4o-mini", db=db, base_url=own.base_url)
        Agent.create("carol", "gpt-4o-mini", db=db)
        alice = Agent.load("alice", db=db, api_key="alices-own-key")
        asks = [
            call(ASK, message="hi", other_agent_id=name, request_heartbeat=True)
            for name in ("bob", "carol")
        ]
        own.enqueue(reply(tool_calls=asks), say("bob: hi"), say("alice: both answered"))
        fake_llm.enqueue(say("carol: hi"))
        result = alice.step("greet them")
        assert tool_results(result, ASK) == ["bob replied: bob: hi", "carol replied: carol: hi"]
        assert result.replies == ["alice: both answered"]
        assert {r.headers["authorization"] for r in own.requests} == {"Bearer alices-own-key"}
    assert [r.headers["authorization"] for r in fake_llm.requests] == ["Bearer test-key"]


def test_an_agent_waiting_for_its_users_approval_says_so(fake_llm, tmp_path):
    """bob's answer needs his user's approval: he does not reply, and until
    his user answers, a new message to him is a tool error saying why."""
    db = str(tmp_path / "agents.db")
    alice = make(db, "alice", tools=[ASK])
    make(db, "bob", tool_rules=[needs_approval("archival_memory_insert")])
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(ASK, message="note this", other_agent_id="bob"),
                call(ASK, message="did you?", other_agent_id="bob"),
            ]
        ),
        reply(tool_calls=[call("archival_memory_insert", content="a note")]),
        say("alice: bob is waiting"),
    )
    result = alice.step("go")
    first, second = tool_results(result, ASK)
    assert first == "bob did not reply: it waits for its user's approval of archival_memory_insert."
    assert second.startswith("Error: bob could not answer: agent 'bob' is waiting for approval")
    assert result.replies == ["alice: bob is waiting"]
