"""Tool rules, enforced by the loop: the tools offered in each request follow
them, a call against them is not run and gets a readable error, a terminal
tool ends the step and a continue tool goes on. Stored with the agent (both
backends, and our agent files); Letta's rules are read by rules_from_letta."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from letta_client import Letta
from pydantic import TypeAdapter, ValidationError
from support.backends import open_db
from support.serving import live_server, new_key

from memgpt_lite import Agent, AgentSettings, tool
from memgpt_lite.agentfile.native import export_agent, import_agent, write_agent_file
from memgpt_lite.cli.main import cli
from memgpt_lite.testing import call, reply, say
from memgpt_lite.testing.model import ScriptedModel
from memgpt_lite.tool_rules import (
    ChildToolRule,
    ContinueToolRule,
    InitToolRule,
    MaxCountPerStepToolRule,
    TerminalToolRule,
    ToolRule,
)
from memgpt_lite.tools.rules import (
    at_most,
    continues,
    ends_step,
    followed_by,
    rules_from_letta,
    runs_first,
)

BUILTIN = [
    "send_message",
    "core_memory_append",
    "core_memory_replace",
    "conversation_search",
    "conversation_search_date",
    "archival_memory_insert",
    "archival_memory_search",
]


@tool
def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    return f"found {query}"


@tool
def finish(summary: str) -> str:
    """Finish the task.

    Args:
        summary: What was done.
    """
    return "done"


def make_agent(tmp_path, model: ScriptedModel, *rules: ToolRule, db=None) -> Agent:
    return Agent.create(
        "sam",
        "gpt-4o-mini",
        db=db or tmp_path / "agents.db",
        llm=model,
        tools=[lookup, finish],
        settings=AgentSettings(tool_rules=list(rules)),
    )


def offered(model: ScriptedModel) -> list[list[str]]:
    """The names of the tools offered in each request the model received."""
    return [[t["function"]["name"] for t in r.tools] for r in model.requests]


def tool_results(model: ScriptedModel, index: int) -> list[str]:
    """The tool results the `index`th request showed, of the step in progress."""
    messages = model.requests[index].messages
    return [m["content"] for m in messages if m["role"] == "tool"]


def test_the_helpers_build_letta_shaped_rules_and_settings_read_them_back():
    rules = [
        ends_step("finish"),
        runs_first("lookup"),
        followed_by("lookup", "send_message", "finish"),
        at_most("lookup", 2),
        continues("send_message"),
    ]
    dumped = AgentSettings(tool_rules=rules).model_dump(mode="json")["tool_rules"]
    assert dumped == [
        {"tool_name": "finish", "type": "exit_loop"},
        {"tool_name": "lookup", "type": "run_first"},
        {
            "tool_name": "lookup",
            "type": "constrain_child_tools",
            "children": ["send_message", "finish"],
        },
        {"tool_name": "lookup", "type": "max_count_per_step", "max_count_limit": 2},
        {"tool_name": "send_message", "type": "continue_loop"},
    ]
    again = AgentSettings.model_validate({"tool_rules": dumped}).tool_rules
    assert again == rules
    assert [type(r) for r in again] == [
        TerminalToolRule,
        InitToolRule,
        ChildToolRule,
        MaxCountPerStepToolRule,
        ContinueToolRule,
    ]


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "max_count_per_step", "tool_name": "lookup", "max_count_limit": 0},
        {"type": "constrain_child_tools", "tool_name": "lookup"},
        {"type": "conditional", "tool_name": "lookup"},
        {"type": "exit_loop", "tool_name": "no spaces allowed"},
        {"type": "exit_loop", "tool_name": "finish", "typo": 1},
    ],
)
def test_a_bad_rule_is_refused(raw):
    with pytest.raises(ValidationError):
        TypeAdapter(list[ToolRule]).validate_python([raw])


def test_no_rules_offer_every_tool_and_the_step_ends_as_before(tmp_path):
    model = ScriptedModel(reply(tool_calls=[call("lookup", query="tea")]))
    result = make_agent(tmp_path, model).step("hi")
    assert offered(model) == [[*BUILTIN, "lookup", "finish"]]
    assert result.stop_reason == "no_heartbeat"


def test_init_rule_offers_only_the_first_tool_then_all(tmp_path):
    model = ScriptedModel(
        reply(tool_calls=[call("lookup", query="tea", request_heartbeat=True)]),
        say("Tea it is."),
    )
    result = make_agent(tmp_path, model, runs_first("lookup")).step("hi")
    assert offered(model) == [["lookup"], [*BUILTIN, "lookup", "finish"]]
    assert result.replies == ["Tea it is."]


def test_a_call_against_the_init_rule_is_not_run_and_says_what_to_call(tmp_path):
    model = ScriptedModel(
        say("Hi without looking."),
        reply(tool_calls=[call("lookup", query="tea", request_heartbeat=True)]),
        say("Tea it is."),
    )
    result = make_agent(tmp_path, model, runs_first("lookup")).step("hi")
    refused = result.tool_results[0]
    assert not refused.ok
    assert refused.content == (
        "Error: send_message was not run: a step's first tool call must be lookup. "
        "You may call: lookup."
    )
    assert result.replies == ["Tea it is."]  # the refused message was never delivered
    assert tool_results(model, 1) == [refused.content]
    assert offered(model)[:2] == [["lookup"], ["lookup"]]  # a refused call does not count


def test_a_failed_call_does_not_count_toward_the_rules(tmp_path):
    model = ScriptedModel(
        reply(tool_calls=[call("lookup", request_heartbeat=True)]),  # no query: invalid
        reply(tool_calls=[call("lookup", query="tea", request_heartbeat=True)]),
        say("Done."),
    )
    make_agent(tmp_path, model, runs_first("lookup"), at_most("lookup", 1)).step("hi")
    assert offered(model) == [["lookup"], ["lookup"], [*BUILTIN, "finish"]]


def test_children_rule_offers_only_the_children_and_refuses_others(tmp_path):
    model = ScriptedModel(
        reply(tool_calls=[call("lookup", query="tea", request_heartbeat=True)]),
        reply(tool_calls=[call("archival_memory_insert", content="x", request_heartbeat=True)]),
        reply(tool_calls=[call("finish", summary="ok", request_heartbeat=True)]),
        say("Done."),
    )
    agent = make_agent(tmp_path, model, followed_by("lookup", "finish", "send_message"))
    result = agent.step("hi")
    assert offered(model)[1:3] == [["send_message", "finish"], ["send_message", "finish"]]
    assert offered(model)[3] == [*BUILTIN, "lookup", "finish"]
    assert result.tool_results[1].content == (
        "Error: archival_memory_insert was not run: after lookup the next tool call must be "
        "one of finish, send_message. You may call: send_message, finish."
    )
    assert agent.archival.count() == 0
    assert result.replies == ["Done."]


def test_max_count_hides_the_tool_and_refuses_a_call_past_it(tmp_path):
    model = ScriptedModel(
        reply(
            tool_calls=[
                call("lookup", query="tea", request_heartbeat=True),
                call("lookup", query="coffee", request_heartbeat=True),
            ]
        ),
        say("Tea."),
    )
    result = make_agent(tmp_path, model, at_most("lookup", 1)).step("hi")
    first, second = result.tool_results[:2]
    assert first.ok and first.content == "found tea"
    assert not second.ok and second.content.startswith(
        "Error: lookup was not run: lookup already ran 1 times in this step, its most per step."
    )
    assert offered(model) == [[*BUILTIN, "lookup", "finish"], [*BUILTIN, "finish"]]
    # The count is per step: the next step offers it again.
    model2 = ScriptedModel(say("Again."))
    agent = Agent.load("sam", db=tmp_path / "agents.db", llm=model2, tools=[lookup, finish])
    agent.step("more")
    assert "lookup" in offered(model2)[0]


def test_terminal_tool_ends_the_step_even_asking_for_a_heartbeat(tmp_path):
    model = ScriptedModel(reply(tool_calls=[call("finish", summary="ok", request_heartbeat=True)]))
    result = make_agent(tmp_path, model, ends_step("finish")).step("hi")
    assert result.stop_reason == "tool_rule"
    assert len(model.requests) == 1


def test_a_failed_terminal_tool_does_not_end_the_step(tmp_path):
    model = ScriptedModel(reply(tool_calls=[call("finish")]), say("Sorry."))
    result = make_agent(tmp_path, model, ends_step("finish")).step("hi")
    assert result.stop_reason == "send_message"
    assert len(model.requests) == 2


@pytest.mark.parametrize("rule", [None, continues("lookup")])
def test_continue_tool_goes_on_without_a_heartbeat(tmp_path, rule):
    model = ScriptedModel(reply(tool_calls=[call("lookup", query="tea")]), say("Tea."))
    rules = [rule] if rule else []
    result = make_agent(tmp_path, model, *rules).step("hi")
    if rule is None:
        assert result.stop_reason == "no_heartbeat" and len(model.requests) == 1
    else:
        assert result.stop_reason == "send_message" and result.replies == ["Tea."]


def test_continue_on_send_message_keeps_the_step_going(tmp_path):
    model = ScriptedModel(
        say("First."), say("Second."), reply(tool_calls=[call("finish", summary="ok")])
    )
    agent = make_agent(tmp_path, model, continues("send_message"), at_most("send_message", 2))
    result = agent.step("hi")
    assert result.replies == ["First.", "Second."]
    assert result.stop_reason == "no_heartbeat"
    # After its second run, send_message is at its most: no longer offered.
    assert offered(model) == [
        [*BUILTIN, "lookup", "finish"],
        [*BUILTIN, "lookup", "finish"],
        [*BUILTIN[1:], "lookup", "finish"],
    ]


def test_rules_that_leave_nothing_to_call_end_the_step(tmp_path):
    model = ScriptedModel(reply(tool_calls=[call("lookup", query="tea", request_heartbeat=True)]))
    result = make_agent(tmp_path, model, followed_by("lookup", "missing_tool")).step("hi")
    assert result.stop_reason == "tool_rule"
    assert len(model.requests) == 1  # never a request with no tools


def test_an_init_rule_naming_a_tool_the_agent_lacks_is_ignored(tmp_path):
    model = ScriptedModel(say("Hi."))
    result = make_agent(tmp_path, model, runs_first("missing_tool")).step("hi")
    assert result.replies == ["Hi."]
    assert offered(model) == [[*BUILTIN, "lookup", "finish"]]


def test_rules_are_stored_with_the_agent(tmp_path, db_location):
    rules = [runs_first("lookup"), at_most("lookup", 3), ends_step("finish")]
    make_agent(tmp_path, ScriptedModel(), *rules, db=db_location)
    with open_db(db_location) as store:
        assert store.get_agent("sam").settings.tool_rules == rules
    model = ScriptedModel(
        reply(tool_calls=[call("finish", summary="ok")]),
        reply(tool_calls=[call("lookup", query="tea")]),
    )
    agent = Agent.load("sam", db=db_location, llm=model, tools=[lookup, finish])
    assert agent.state.settings.tool_rules == rules
    result = agent.step("hi")  # the loaded agent applies them
    assert offered(model) == [["lookup"], ["lookup"]]
    assert not result.tool_results[0].ok


def test_our_agent_files_carry_the_rules(tmp_path):
    rules = [followed_by("lookup", "send_message"), continues("lookup")]
    make_agent(tmp_path, ScriptedModel(), *rules)
    with open_db(tmp_path / "agents.db") as store:
        assert export_agent(store, "sam").settings.tool_rules == rules
        write_agent_file(store, "sam", tmp_path / "sam.json")
    with open_db(tmp_path / "other.db") as other:
        import_agent(other, tmp_path / "sam.json")
        assert other.get_agent("sam").settings.tool_rules == rules


def test_show_lists_the_rules(tmp_path):
    db = tmp_path / "agents.db"
    rules = [runs_first("lookup"), followed_by("lookup", "send_message", "finish")]
    make_agent(tmp_path, ScriptedModel(), *rules, at_most("lookup", 2))
    bob_rules = [ends_step("finish"), continues("lookup")]
    Agent.create("bob", "gpt-4o-mini", db=db, settings=AgentSettings(tool_rules=bob_rules))
    shown = CliRunner().invoke(cli, ["--db", str(db), "show", "sam"]).stdout
    assert (
        "tool rules: lookup runs first; after lookup only send_message, finish; "
        "lookup at most 2 per step\n"
    ) in shown
    assert "tool_rules" not in shown
    shown = CliRunner().invoke(cli, ["--db", str(db), "show", "bob"]).stdout
    assert "tool rules: finish ends the step; lookup continues the step\n" in shown


def test_rules_end_to_end_through_the_fake_server(fake_llm, tmp_path):
    agent = Agent.create(
        "sam",
        "gpt-4o-mini",
        db=tmp_path / "agents.db",
        tools=[lookup],
        settings=AgentSettings(
            tool_rules=[runs_first("lookup"), followed_by("lookup", "send_message")]
        ),
    )
    fake_llm.enqueue(
        reply(tool_calls=[call("lookup", query="tea", request_heartbeat=True)]),
        reply(tool_calls=[call("conversation_search", query="tea", request_heartbeat=True)]),
        say("Tea."),
    )
    result = agent.step("hi")
    assert result.replies == ["Tea."]
    requests = fake_llm.chat_requests
    assert [[t["function"]["name"] for t in r["tools"]] for r in requests] == [
        ["lookup"],
        ["send_message"],
        ["send_message"],
    ]
    assert all(r["tool_choice"] == "required" for r in requests)
    last_tool = [m for m in requests[2]["messages"] if m["role"] == "tool"][-1]
    assert last_tool["content"].startswith("Error: conversation_search was not run: after lookup")


def test_rules_from_letta_keeps_what_we_apply_and_notes_the_rest():
    raw = [
        {"type": "exit_loop", "tool_name": "send_message", "prompt_template": None},
        {"type": "run_first", "tool_name": "lookup", "args": {"query": "x"}},
        {"type": "constrain_child_tools", "tool_name": "lookup", "children": ["finish"]},
        {"type": "max_count_per_step", "tool_name": "lookup", "max_count_limit": 2},
        {"type": "continue_loop", "tool_name": "core_memory_append"},
        {"type": "conditional", "tool_name": "lookup", "child_output_mapping": {}},
        {"type": "required_before_exit", "tool_name": "finish"},
        {"type": "constrain_child_tools", "tool_name": "finish"},
        "not a rule",
    ]
    rules, notes = rules_from_letta(raw)
    assert rules == [
        ends_step("send_message"),
        runs_first("lookup"),
        followed_by("lookup", "finish"),
        at_most("lookup", 2),
        continues("core_memory_append"),
    ]
    assert notes == [
        "the prefilled args of run_first on 'lookup' are not supported; ignored",
        "tool rule 'conditional' on 'lookup' is not supported; left out",
        "tool rule 'required_before_exit' on 'finish' is not supported; left out",
        "tool rule 'constrain_child_tools' on 'finish': children: Field required; left out",
        "tool rule 8 is not an object; left out",
    ]


def test_letta_clients_create_agents_with_rules_and_see_them(fake_llm, tmp_path):
    db = str(tmp_path / "letta.db")
    with live_server(db) as url:
        client = Letta(base_url=url, api_key=new_key(db, "alice"), max_retries=0)
        rules = [
            {"type": "run_first", "tool_name": "conversation_search"},
            {"type": "exit_loop", "tool_name": "conversation_search"},
            {"type": "required_before_exit", "tool_name": "send_message"},
        ]
        agent = client.agents.create(model="openai/gpt-4o-mini", tool_rules=rules)
        assert [(r.type, r.tool_name) for r in agent.tool_rules] == [
            ("run_first", "conversation_search"),
            ("exit_loop", "conversation_search"),
        ]
        fake_llm.enqueue(reply(tool_calls=[call("conversation_search", query="tea")]))
        response = client.agents.messages.create(
            agent.id, messages=[{"role": "user", "content": "tea?"}]
        )
    assert response.stop_reason.stop_reason == "tool_rule"
    assert [[t["function"]["name"] for t in r["tools"]] for r in fake_llm.chat_requests] == [
        ["conversation_search"]
    ]
