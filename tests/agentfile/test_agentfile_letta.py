"""Letta agent files (.af): a realistic file in each layout imports, and the
imported agent takes a step the fake server accepts."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

from memgpt_lite import ApprovalError, tool
from memgpt_lite.agent import Agent
from memgpt_lite.agentfile.letta_messages import NOT_APPROVED
from memgpt_lite.agentfile.native import import_agent
from memgpt_lite.agentfile.schema import MISSING_RESULT
from memgpt_lite.cli.main import cli
from memgpt_lite.storage.sqlite.store import Store
from memgpt_lite.testing import say
from memgpt_lite.tools.rules import needs_approval


@tool
def check_order_status(order_number: int) -> str:
    """Check the status of an order.

    Args:
        order_number: The order number.
    """
    return f"Order {order_number} is processing."


ASK = "send_message_to_agent_and_wait_for_reply"
ASK_ASYNC = "send_message_to_agent_async"


def run(*args: str, db=None):
    prefix = ["--db", str(db)] if db else []
    return CliRunner().invoke(cli, [*prefix, *args], catch_exceptions=False)


def letta_file() -> dict:
    """An agent file as Letta exports it (the current layout: agents, blocks and
    tools at the top level, referenced by id), with a conversation where only
    the later part is in context, a custom tool and a tool call with no return."""
    created = "2025-10-31T22:56:56.459100+00:00"

    def message(index, role, text=None, **extra):
        content = [{"type": "text", "text": text, "signature": None}] if text is not None else []
        return {
            "type": "message",
            "role": role,
            "content": content,
            "name": None,
            "otid": None,
            "sender_id": None,
            "batch_item_id": None,
            "group_id": None,
            "id": f"message-{index}",
            "model": "gpt-4o-mini",
            "agent_id": "agent-0",
            "tool_calls": None,
            "tool_call_id": None,
            "tool_returns": [],
            "created_at": f"2025-10-31T22:{57 + index // 60:02d}:{index % 60:02d}+00:00",
            "approve": None,
            "approval_request_id": None,
            "denial_reason": None,
            "approvals": [],
            **extra,
        }

    def tool_call(call_id, name, arguments):
        return {
            "id": call_id,
            "function": {"arguments": json.dumps(arguments), "name": name},
            "type": "function",
        }

    def user(text):
        return json.dumps({"type": "user_message", "message": text, "time": "2025-10-31"})

    messages = [
        message(0, "system", "<base_instructions>Letta's compiled prompt</base_instructions>"),
        message(1, "user", user("I am Chad and I ordered a kayak.")),
        message(
            2,
            "assistant",
            "Greet Chad.",
            tool_calls=[tool_call("call_greet", "send_message", {"message": "Hi Chad!"})],
        ),
        message(
            3,
            "tool",
            '{"status": "OK", "message": "None"}',
            name="send_message",
            tool_call_id="call_greet",
            tool_returns=[{"tool_call_id": "call_greet", "status": "success", "stdout": None}],
        ),
        message(4, "user", user("Where is my order 42?")),
        message(
            5,
            "assistant",
            None,
            content=[{"type": "reasoning", "reasoning": "Look the order up.", "signature": None}],
            tool_calls=[
                tool_call(
                    "call_order",
                    "check_order_status",
                    {"order_number": 42, "request_heartbeat": True},
                )
            ],
        ),
        message(
            6,
            "tool",
            "Order 42 is currently processing.",
            name="check_order_status",
            tool_call_id="call_order",
            tool_returns=[
                {
                    "tool_call_id": "call_order",
                    "status": "success",
                    "func_response": "Order 42 is currently processing.",
                    "stdout": [],
                    "stderr": [],
                }
            ],
        ),
        message(
            7,
            "assistant",
            None,
            tool_calls=[
                tool_call(
                    "call_reply",
                    "send_message",
                    {"inner_thoughts": "Tell him.", "message": "Your kayak is on its way soon."},
                )
            ],
        ),
        message(8, "user", user("Thanks!")),
    ]
    return {
        "agents": [
            {
                "name": "kayak_helper",
                "memory_blocks": [],
                "tools": [],
                "tool_ids": ["tool-0", "tool-1", "tool-2"],
                "source_ids": [],
                "folder_ids": None,
                "block_ids": ["block-0", "block-1"],
                "tool_rules": [],
                "tags": [],
                "system": "You are a helpful support agent for a kayak shop.",
                "agent_type": "memgpt_v2_agent",
                "llm_config": {
                    "model": "gpt-4o-mini",
                    "display_name": None,
                    "model_endpoint_type": "openai",
                    "model_endpoint": "https://api.openai.com/v1",
                    "provider_name": "openai",
                    "context_window": 32000,
                    "put_inner_thoughts_in_kwargs": True,
                    "handle": "openai/gpt-4o-mini",
                    "temperature": 0.7,
                    "max_tokens": None,
                },
                "embedding_config": {
                    "embedding_endpoint_type": "openai",
                    "embedding_model": "text-embedding-3-small",
                    "embedding_dim": 2000,
                },
                "include_base_tools": False,
                "description": "Answers questions about orders",
                "metadata": None,
                "tool_exec_environment_variables": {"SHOP_API_KEY": "secret-shop-key"},
                "message_buffer_autoclear": False,
                "timezone": "UTC",
                "id": "agent-0",
                "in_context_message_ids": [f"message-{i}" for i in (0, 4, 5, 6, 7, 8)],
                "messages": messages,
                "files_agents": [],
                "group_ids": [],
                "created_at": created,
            }
        ],
        "groups": [],
        "blocks": [
            {
                "value": "Name: Chad\nOrdered: a kayak",
                "limit": 20000,
                "project_id": None,
                "template_name": None,
                "is_template": False,
                "preserve_on_migration": False,
                "label": "human",
                "read_only": False,
                "description": "The human block: what you know about the user.",
                "metadata": {},
                "hidden": None,
                "id": "block-0",
            },
            {
                "value": "I am Kay, the shop's assistant.",
                "limit": 5000,
                "label": "persona",
                "read_only": True,
                "description": "The persona block.",
                "metadata": {},
                "id": "block-1",
            },
        ],
        "files": [],
        "sources": [],
        "tools": [
            {
                "id": "tool-0",
                "tool_type": "letta_core",
                "name": "conversation_search",
                "tags": ["letta_core"],
                "source_code": None,
            },
            {"id": "tool-1", "tool_type": "letta_builtin", "name": "web_search", "tags": []},
            {
                "id": "tool-2",
                "tool_type": "custom",
                "name": "check_order_status",
                "description": "Check the status for an order number.",
                "source_code": "def check_order_status(order_number: int):\n    ...\n",
                "json_schema": {"name": "check_order_status", "parameters": {"type": "object"}},
                "return_char_limit": 6000,
            },
        ],
        "mcp_servers": [],
        "metadata": {"revision_id": "abc123"},
        "created_at": created,
    }


def test_letta_agent_file_imports_and_takes_a_step(fake_llm, tmp_path):
    db = tmp_path / "a.db"
    path = tmp_path / "kayak_helper.af"
    path.write_text(json.dumps(letta_file(), indent=2))
    result = run("import", str(path), db=db)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"Imported Letta agent 'kayak_helper' from {path}: 2 blocks, 9 messages "
        "(6 in context), 0 passages (0 with vectors).\n"
    )
    assert result.stderr == (
        "note: Letta's tool 'web_search' has no equivalent here; left out\n"
        "note: tools with their code (1: check_order_status): registered, not trusted; read "
        "each (memgpt-lite tools show NAME), then trust it (memgpt-lite tools trust NAME), or "
        "import with --trust-tools\n"
        "note: 1 tool calls had no result; each was given an error result\n"
    )
    agent = Agent.load("kayak_helper", db=db, tools=[check_order_status])
    state = agent.state
    assert state.system == "You are a helpful support agent for a kayak shop."
    assert state.tool_names == ["check_order_status"]
    assert (state.llm.model, state.llm.base_url, state.llm.temperature) == (
        "gpt-4o-mini",
        None,
        0.7,
    )
    assert state.settings.context_window == 32000
    assert [(b.label, b.value, b.limit, b.read_only) for b in agent.blocks] == [
        ("human", "Name: Chad\nOrdered: a kayak", 20000, False),
        ("persona", "I am Kay, the shop's assistant.", 5000, True),
    ]
    stored = agent.store.messages_from(state.id, 0)
    assert [m.role for m in stored] == ["user", "assistant", "tool"] + [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "user",
    ]
    assert stored[0].content == "I am Chad and I ordered a kayak."
    assert stored[0].created_at == datetime(2025, 10, 31, 22, 57, 1, tzinfo=UTC)
    assert "secret-shop-key" not in json.dumps([m.model_dump(mode="json") for m in stored])

    fake_llm.enqueue(say("You're welcome, Chad!"))
    assert agent.step("Bye now").replies == ["You're welcome, Chad!"]
    assert fake_llm.rejections == []
    sent = fake_llm.chat_requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant"] + [
        "tool",
        "user",
        "user",
    ]
    assert "Letta's compiled prompt" not in json.dumps(sent)
    assert "I ordered a kayak" not in json.dumps(sent[1:])  # out of Letta's context
    assert "Name: Chad" in sent[0]["content"]
    assert sent[2]["content"] == "Look the order up."
    assert sent[3] == {
        "role": "tool",
        "content": "Order 42 is currently processing.",
        "tool_call_id": "call_order",
    }
    assert sent[4]["content"] == "Tell him."  # inner thoughts moved out of the arguments
    assert json.loads(sent[4]["tool_calls"][0]["function"]["arguments"]) == {
        "message": "Your kayak is on its way soon."
    }
    assert sent[5] == {"role": "tool", "content": MISSING_RESULT, "tool_call_id": "call_reply"}
    assert [t["function"]["name"] for t in fake_llm.chat_requests[-1]["tools"]].count(
        "check_order_status"
    ) == 1


def test_letta_older_layout_and_double_encoded_files(fake_llm, tmp_path):
    db = tmp_path / "a.db"
    older = {
        "agent_type": "memgpt_agent",
        "name": "researcher",
        "system": "You are a research agent.",
        "created_at": "2025-05-07T05:25:00.104503+00:00",
        "llm_config": {
            "model": "llama3.2",
            "model_endpoint_type": "ollama",
            "model_endpoint": "http://localhost:11434",
            "context_window": 8192,
        },
        "core_memory": [
            {"label": "research_plan", "value": "", "limit": 5000, "description": None},
            {"label": "notes", "value": "x" * 60, "limit": 50, "description": None},
        ],
        "in_context_message_indices": [0, 2, 3],
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "compiled"}], "tool_calls": []},
            {"role": "user", "content": [{"type": "text", "text": "old question"}]},
            {"role": "user", "content": [{"type": "text", "text": "plan a trip"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Sure, where to?"}]},
        ],
        "tools": [
            {"name": "send_message", "tool_type": "letta_core", "tags": ["letta_core"]},
            {"name": "create_research_plan", "tool_type": "custom", "tags": []},
        ],
        "tool_exec_environment_variables": [{"key": "TAVILY_API_KEY", "value": ""}],
        "passages": [
            {"text": "Paris is nice in May.", "tags": None, "created_at": "2025-05-01T10:00:00"}
        ],
        "version": "0.7.1",
    }
    path = tmp_path / "researcher.af"
    path.write_text(json.dumps(json.dumps(older)))  # as some published files are
    report = import_agent(Store(db), path)
    assert report.source == "letta" and report.messages_in_context == 2 and report.passages == 1
    assert "block 'notes' was over its limit; the limit was raised to fit" in report.notes
    agent = Agent.load("researcher", db=db)
    assert agent.state.llm.base_url == "http://localhost:11434/v1"
    assert agent.state.tool_names == ["create_research_plan"]
    assert agent.block("notes").limit == 60
    passage = agent.archival.list()[0][0]
    assert passage.created_at == datetime(2025, 5, 1, 10, tzinfo=UTC)
    agent.state.llm.base_url = None  # reach the fake server instead of Ollama
    agent.save()
    fake_llm.enqueue(say("Lisbon?"))
    agent.step("Somewhere warm")
    sent = fake_llm.chat_requests[-1]["messages"]
    assert [m.get("content") for m in sent[1:]] == [
        "plan a trip",
        "Sure, where to?",
        "Somewhere warm",
    ]
    assert fake_llm.rejections == []


def test_letta_files_that_cannot_be_imported(tmp_path):
    db = tmp_path / "a.db"
    two = letta_file()
    second = json.loads(json.dumps(two["agents"][0]))
    second["name"] = "other helper"
    two["agents"].append(second)
    path = tmp_path / "two.af"
    path.write_text(json.dumps(two))
    main = run("import", str(path), "--name", "main", db=db)
    assert main.exit_code == 0, main.output
    assert (
        "note: the file holds 2 agents (kayak_helper, other helper); imported 'kayak_helper', "
        "its main agent (pick another with --agent)\n" in main.stderr
    )
    ghost = run("import", str(path), "--agent", "ghost", db=db)
    assert ghost.exit_code == 1 and "holds no agent named 'ghost'" in ghost.stderr
    spaced = run("import", str(path), "--agent", "other helper", db=db)
    assert spaced.exit_code == 0, spaced.output
    assert (
        "note: the agent name 'other helper' is not valid here; it was imported as 'other-helper'"
        in spaced.stderr
    )
    second["name"] = "***"
    path.write_text(json.dumps({**two, "agents": [second]}))
    bad_name = run("import", str(path), db=db)
    assert bad_name.exit_code == 1
    assert "cannot import agent '***': name: an agent name" in bad_name.stderr
    assert bad_name.stderr.rstrip().endswith("choose another name with --name")
    assert run("import", str(path), "--name", "o", db=db).exit_code == 0

    no_model = letta_file()
    del no_model["agents"][0]["llm_config"]["model"]
    path.write_text(json.dumps(no_model))
    result = run("import", str(path), db=db)
    assert result.exit_code == 1
    assert re.search(r"not a valid Letta agent file: agents\.0\.llm_config\.model", result.stderr)
    assert sorted(s.name for s, _ in Store(db).list_agents()) == ["main", "o", "other-helper"]


def test_letta_summary_message_becomes_the_agent_summary(fake_llm, tmp_path):
    data = letta_file()
    messages = data["agents"][0]["messages"]
    alert = {
        "type": "system_alert",
        "message": "Note: prior messages (40 of 52 total messages) have been hidden from view due "
        "to conversation memory constraints.\nThe following is a summary of the previous 40 "
        "messages:\n Chad asked about paddles and bought a blue kayak.",
        "time": "2025-10-31",
    }
    summary = json.loads(json.dumps(messages[1]))
    summary.update(id="message-summary", content=[{"type": "text", "text": json.dumps(alert)}])
    messages.insert(1, summary)
    path = tmp_path / "kayak.af"
    path.write_text(json.dumps(data))
    report = import_agent(Store(tmp_path / "a.db"), path)
    assert "Letta's summary of earlier messages became the agent's summary" in report.notes
    agent = Agent.load("kayak_helper", db=tmp_path / "a.db", tools=[check_order_status])
    assert agent.state.summary == "Chad asked about paddles and bought a blue kayak."
    stored = agent.store.messages_from(agent.state.id, 0)
    assert not any("hidden from view" in (m.content or "") for m in stored)
    fake_llm.enqueue(say("Hi Chad."))
    agent.step("hello")
    assert fake_llm.rejections == []
    system = fake_llm.chat_requests[-1]["messages"][0]["content"]
    assert "Chad asked about paddles and bought a blue kayak." in system


def test_what_is_not_imported_is_named_once_per_kind(tmp_path):
    data = letta_file()
    main = data["agents"][0]
    main.update(
        id="agent-main",
        tool_rules=[
            {"tool_name": "send_message", "type": "exit_loop"},
            {"tool_name": "check_order_status", "type": "requires_approval"},
            {"tool_name": "check_order_status", "type": "max_count_per_step", "max_count_limit": 2},
        ],
        message_buffer_autoclear=True,
        enable_sleeptime=True,
        source_ids=["source-0"],
    )
    helper = json.loads(json.dumps(main))
    helper.update(id="agent-helper", name="kayak helper sleeptime", agent_type="sleeptime_agent")
    helper["block_ids"] = ["block-0"]  # shares the human block with the main agent
    data["agents"].insert(0, helper)  # the helper comes first: the main one is still picked
    data["groups"] = [{"manager_type": "sleeptime", "manager_agent_id": "agent-main"}]
    data["mcp_servers"] = [{"server_name": "exa", "server_type": "sse"}]
    data["files"] = [{"file_name": "faq.txt", "source_id": "source-0"}]
    data["sources"] = [{"id": "source-0", "name": "shop_docs"}]
    data["tools"][2]["default_requires_approval"] = True
    path = tmp_path / "kayak.af"
    path.write_text(json.dumps(data))
    report = import_agent(Store(tmp_path / "a.db"), path)
    assert report.name == "kayak_helper"
    expected = [
        "the file holds 2 agents (kayak helper sleeptime, kayak_helper); imported 'kayak_helper', "
        "its main agent (pick another with --agent)",
        "tool rules (2: exit_loop, max_count_per_step): imported, enforced by the loop",
        "tools that require approval (1: check_order_status): imported; "
        "each call of them waits for the user's approval",
        "message_buffer_autoclear: not supported; the agent keeps its history in context",
        "sleep-time and other agent groups: not supported; only this agent came over",
        "MCP servers (1: exa): not connected here",
        "files (1) and folders (1): not imported; Letta's file tools are left out",
        "blocks shared with the file's other agents (human): this agent gets its own copy, "
        "since one agent is imported at a time",
    ]
    for note in expected:
        assert note in report.notes
    assert len(report.notes) == len(set(report.notes))


def approval_request(index: int, call_id: str, order_number: int) -> dict:
    """Letta's approval request: the model's tool call, waiting for the user."""
    return {
        "type": "message",
        "role": "approval",
        "content": [{"type": "reasoning", "reasoning": "Look it up.", "signature": None}],
        "id": f"message-{index}",
        "tool_calls": [
            {
                "id": call_id,
                "function": {
                    "arguments": json.dumps(
                        {"order_number": order_number, "request_heartbeat": True}
                    ),
                    "name": "check_order_status",
                },
                "type": "function",
            }
        ],
        "tool_call_id": call_id,
        "tool_returns": [],
        "created_at": f"2025-10-31T22:57:{index:02d}+00:00",
        "approvals": [],
    }


def asking_letta_file() -> dict:
    """The kayak file whose check_order_status requires approval (the tool's
    flag), with approval rules for a tool the agent lacks and for a name not
    valid here, an approval request that got no answer before the user's last
    message, and a last answer that is an approval request still waiting."""
    data = letta_file()
    agent = data["agents"][0]
    data["tools"][2]["default_requires_approval"] = True
    agent["tool_rules"] = [
        {"tool_name": "refund_order", "type": "requires_approval"},
        {"tool_name": "not valid!", "type": "requires_approval"},
    ]
    messages = agent["messages"]
    messages[5] = approval_request(5, "call_order_early", 41)
    del messages[6]  # its result: the request got no answer
    messages.append(approval_request(9, "call_order", 43))
    agent["in_context_message_ids"] = [f"message-{i}" for i in (0, 4, 5, 7, 8, 9)]
    return data


def test_a_letta_approval_request_left_unanswered_waits_here(fake_llm, tmp_path):
    path, db = tmp_path / "kayak.af", tmp_path / "a.db"
    path.write_text(json.dumps(asking_letta_file()))
    report = import_agent(Store(db), path)
    assert "1 tool call waiting for approval: approve or deny it" in report.notes
    assert (
        "tools that require approval (2: refund_order, check_order_status): imported; "
        "each call of them waits for the user's approval"
    ) in report.notes
    # Only the rule whose tool name is not valid here is left out.
    assert [n for n in report.notes if "left out" in n and "approval" in n] == [
        "tool rules of kind 'requires_approval' (1): not valid (tool rule 'requires_approval' "
        "on 'not valid!': tool_name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'); "
        "left out"
    ]
    # The earlier request, followed by more conversation, cannot wait: it got an error result.
    assert "tool calls waiting for approval got an error result (they never ran)" in report.notes
    agent = Agent.load("kayak_helper", db=db, tools=[check_order_status])
    assert agent.state.settings.tool_rules == [
        needs_approval("refund_order"),
        needs_approval("check_order_status"),
    ]
    stored = agent.store.messages_from(agent.state.id, 0)
    early = stored.index(next(m for m in stored if m.tool_call_id == "call_order_early"))
    assert stored[early].content == NOT_APPROVED and stored[early - 1].tool_calls
    assert stored[-1].role == "assistant" and stored[-1].content == "Look it up."
    assert [(c.id, c.name) for c in agent.pending_approvals()] == [
        ("call_order", "check_order_status")
    ]
    with pytest.raises(ApprovalError):
        agent.step("Hello?")
    fake_llm.enqueue(say("Order 43 is on its way."))
    result = agent.approve()
    assert result.tool_results[0].content == "Order 43 is processing."
    assert result.replies == ["Order 43 is on its way."]
    assert fake_llm.rejections == [] and agent.pending_approvals() == []


def test_a_last_answer_with_no_results_that_asked_no_approval_does_not_wait(fake_llm, tmp_path):
    data = letta_file()
    del data["agents"][0]["messages"][8]  # the last answer is now the unanswered reply
    path, db = tmp_path / "kayak.af", tmp_path / "a.db"
    path.write_text(json.dumps(data))
    report = import_agent(Store(db), path)
    assert (
        "tool calls of the last answer had no result; each was given an error result"
        in report.notes
    )
    assert not any("waiting for approval" in note for note in report.notes)
    agent = Agent.load("kayak_helper", db=db, tools=[check_order_status])
    assert agent.pending_approvals() == []
    assert agent.store.messages_from(agent.state.id, 0)[-1].content == MISSING_RESULT
    fake_llm.enqueue(say("Hi again."))
    assert agent.step("Hello?").replies == ["Hi again."]
    assert fake_llm.rejections == []


def test_letta_multi_agent_tools_and_tags_come_over(tmp_path):
    """Letta's two multi-agent tools we have are attached; its async one is
    left out, with a note. The agent's tags come over, a blank one left out."""
    data = letta_file()
    data["tools"] += [
        {"id": "tool-3", "tool_type": "letta_multi_agent_core", "name": ASK},
        {"id": "tool-4", "tool_type": "letta_multi_agent_core", "name": ASK_ASYNC},
    ]
    agent = data["agents"][0]
    agent["tool_ids"] += ["tool-3", "tool-4"]
    agent["tools"] = ["send_message_to_agents_matching_tags"]
    agent["tags"] = ["shop", " ", "support"]
    path = tmp_path / "kayak.af"
    path.write_text(json.dumps(data))
    store = Store(tmp_path / "a.db")
    report = import_agent(store, path)
    state = store.get_agent("kayak_helper")
    assert state.tool_names == ["check_order_status", ASK, "send_message_to_agents_matching_tags"]
    assert state.settings.tags == ["shop", "support"]
    assert f"Letta's tool {ASK_ASYNC!r} has no equivalent here; left out" in report.notes
    assert "tags blank or over 100 characters: left out" in report.notes
    assert f"Letta's tool {ASK!r} has no equivalent here; left out" not in report.notes


def test_a_letta_turn_of_several_steps_is_one_answered_turn_here(fake_llm, tmp_path):
    # Letta gives each model call a step: the user's message shares the first
    # with a tool call; the reply comes in the next.
    data = letta_file()
    messages = data["agents"][0]["messages"]
    for index, step in ((4, "step-a"), (5, "step-a"), (6, "step-a"), (7, "step-b")):
        messages[index]["step_id"] = step
    reply_result = {
        **messages[6],
        "id": "message-7b",
        "name": "send_message",
        "tool_call_id": "call_reply",
        "content": [{"type": "text", "text": '{"status": "OK"}', "signature": None}],
        "tool_returns": [{"tool_call_id": "call_reply", "status": "success"}],
        "created_at": "2025-10-31T22:57:07.500000+00:00",
        "step_id": "step-b",
    }
    messages.insert(8, reply_result)
    path, db = tmp_path / "kayak.af", tmp_path / "a.db"
    path.write_text(json.dumps(data))
    import_agent(Store(db), path)
    agent = Agent.load("kayak_helper", db=db, tools=[check_order_status])
    stored = agent.store.messages_from(agent.state.id, 0)
    asked = next(m for m in stored if m.content == "Where is my order 42?")
    assert {m.step_id for m in stored[stored.index(asked) : -1]} == {"step-a"}
    assert agent.history.unanswered() == []
    fake_llm.enqueue(say("Glad to help."))
    agent.step("Bye!")
    sent = [m["content"] for m in fake_llm.chat_requests[-1]["messages"] if m["role"] == "user"]
    assert "Where is my order 42?" in sent
