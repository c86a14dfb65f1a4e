"""The examples run, against the fake server, so they cannot rot."""

import os
import re
import subprocess
import sys

from support.paths import REPO

from memgpt_lite.settings.endpoint import PLACEHOLDER_KEY
from memgpt_lite.testing import FakeOpenAIServer, call, reply

EXAMPLES = REPO / "examples"


def test_quickstart_runs_and_remembers(fake_llm):
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(
                    "core_memory_append",
                    label="human",
                    content="Name: Alice. Lives in Paris.",
                    request_heartbeat=True,
                )
            ]
        ),
        reply(tool_calls=[call("send_message", message="Nice to meet you, Alice!")]),
        reply(tool_calls=[call("current_time", timezone="Mars/Olympus", request_heartbeat=True)]),
        reply(tool_calls=[call("current_time", timezone="Europe/Paris", request_heartbeat=True)]),
        reply(tool_calls=[call("send_message", message="It is teatime in Paris.")]),
    )
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "quickstart.py")],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "quickstart: Nice to meet you, Alice!" in result.stdout
    assert "quickstart: It is teatime in Paris." in result.stdout
    assert result.stdout.rstrip().endswith("Name: Alice. Lives in Paris.")
    tool_results = [
        m["content"] for m in fake_llm.chat_requests[-1]["messages"] if m["role"] == "tool"
    ]
    assert "Error: unknown time zone 'Mars/Olympus'" in tool_results[-2]
    assert "CET" in tool_results[-1] or "CEST" in tool_results[-1]
    assert fake_llm.rejections == []


def run_example(script: str, *args: str, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        capture_output=True,
        text=True,
        env=env or os.environ.copy(),
        timeout=60,
    )


def tool_messages(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_custom_tool_schema_validation_and_model_retry(fake_llm):
    fake_llm.enqueue(
        reply(tool_calls=[call("convert_currency", amount=250, from_currency="DOLLARS")]),
        reply(tool_calls=[call("convert_currency", amount=-250, from_currency="USD")]),
        reply(
            tool_calls=[
                call(
                    "convert_currency",
                    amount=250,
                    from_currency="usd",
                    to_currency="JPY",
                    request_heartbeat=True,
                )
            ]
        ),
        reply(tool_calls=[call("send_message", message="That is about 37,705 yen.")]),
    )
    result = run_example("custom_tool.py", "--show-schema")
    assert result.returncode == 0, result.stderr
    assert '"exclusiveMinimum": 0' in result.stdout  # from Field(gt=0)
    assert "currency: That is about 37,705 yen." in result.stdout
    schema = next(
        t["function"]
        for t in fake_llm.chat_requests[0]["tools"]
        if t["function"]["name"] == "convert_currency"
    )
    assert schema["description"].startswith("Convert an amount of money")
    assert schema["parameters"]["properties"]["amount"]["description"] == (
        "How much money to convert."
    )
    assert schema["parameters"]["required"] == ["amount", "from_currency", "request_heartbeat"]
    retried, invalid, converted = tool_messages(fake_llm.chat_requests[-1])
    assert retried.startswith("Error: unknown currency 'DOLLARS'; the known ones are EUR, USD")
    assert invalid.startswith("Error: invalid arguments for convert_currency: amount: ")
    assert converted == "250.00 USD = 37,704.92 JPY"
    assert fake_llm.rejections == []


def test_shared_block_edit_is_seen_by_the_other_agent(fake_llm):
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(
                    "core_memory_append",
                    label="project",
                    content="Launch: 1 June. Budget: 10k.",
                    request_heartbeat=True,
                )
            ]
        ),
        reply(tool_calls=[call("send_message", message="Noted for the team.")]),
        reply(tool_calls=[call("send_message", message="We launch on 1 June!")]),
    )
    result = run_example("shared_block.py")
    assert result.returncode == 0, result.stderr
    assert "writer sees it:\nLaunch: 1 June. Budget: 10k.\n" in result.stdout
    assert "writer: We launch on 1 June!" in result.stdout
    planner_first, _, writer_call = fake_llm.chat_requests
    assert "Launch: 1 June" not in planner_first["messages"][0]["content"]
    writer_system = writer_call["messages"][0]["content"]
    assert "I am the writer" in writer_system and "Launch: 1 June. Budget: 10k." in writer_system
    assert fake_llm.rejections == []


def test_local_endpoint_needs_no_key_and_uses_auto_tool_choice():
    # A server that accepts only the placeholder key the client sends when
    # there is no OPENAI_API_KEY, as a local server would ignore any key.
    with FakeOpenAIServer(api_key=PLACEHOLDER_KEY) as server:
        server.enqueue(
            reply(
                tool_calls=[
                    call(
                        "core_memory_append",
                        label="human",
                        content="Alice, keeps bees.",
                        request_heartbeat=True,
                    )
                ]
            ),
            reply(content="Nice to meet you, Alice! How are the bees?"),  # plain text
        )
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY",)}
        env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # the stored base URL wins
        result = run_example("local_endpoint.py", "--base-url", server.base_url, env=env)
        assert result.returncode == 0, result.stderr
        assert "local: Nice to meet you, Alice! How are the bees?" in result.stdout
        assert f"llama3.2 at {server.base_url}: the next request takes " in result.stdout
        assert "of 8,192 tokens" in result.stdout
        assert [r["tool_choice"] for r in server.chat_requests] == ["auto", "auto"]
        assert {r["model"] for r in server.chat_requests} == {"llama3.2"}
        assert server.rejections == []


def test_teach_in_one_process_then_ask_in_another(fake_llm):
    fake_llm.enqueue(
        reply(
            tool_calls=[
                call(
                    "archival_memory_insert",
                    content="Beth (sister): birthday 3 March; loves orchids; hates surprises.",
                    request_heartbeat=True,
                )
            ]
        ),
        reply(tool_calls=[call("send_message", message="I'll remember Beth's birthday.")]),
        reply(
            tool_calls=[
                call("archival_memory_search", query="Beth birthday", request_heartbeat=True)
            ]
        ),
        reply(tool_calls=[call("send_message", message="Orchids, by 3 March.")]),
    )
    result = run_example("teach_then_ask.py")
    assert result.returncode == 0, result.stderr
    pids = re.findall(r"--- (?:both|ask) \(process (\d+)\) ---", result.stdout)
    assert len(pids) == 2 and pids[0] != pids[1]
    assert "student: I'll remember Beth's birthday." in result.stdout
    assert result.stdout.rstrip().endswith("student: Orchids, by 3 March.")
    # The asking process found what the teaching process stored.
    assert "birthday 3 March" in tool_messages(fake_llm.chat_requests[-1])[-1]
    assert fake_llm.rejections == []


def test_ask_before_teach_is_a_clear_error(fake_llm):
    result = run_example("teach_then_ask.py", "ask")
    assert result.returncode == 1
    assert "no agent 'student' yet: run" in result.stderr and "Traceback" not in result.stderr
    assert fake_llm.requests == []


def test_streaming_example_streams_one_reply_then_asks_three_agents_at_once(fake_llm):
    def answer(body: dict) -> object:
        persona = body["messages"][0]["content"]
        name = next(n for n in ("Ada", "Lin", "Sam") if f"I am {n}," in persona)
        if body["messages"][-1]["content"].startswith("Hello"):
            return reply(tool_calls=[call("send_message", message=f"{name} likes long walks.")])
        return reply(tool_calls=[call("send_message", message=f"{name} says: Miso.")])

    fake_llm.responder = answer
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "streaming.py")],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "stream-ada: Ada likes long walks.",
        "stream-ada: Ada says: Miso.",
        "stream-lin: Lin says: Miso.",
        "stream-sam: Sam says: Miso.",
    ]
    assert all(r.streamed for r in fake_llm.requests if r.path.endswith("/completions"))
    assert fake_llm.rejections == []
