"""Registered tools from Python source or a module: each call in a process
of its own (memgpt_lite/tools/source/), with its limits, folder and
environment; schemas read there exactly as `@tool` reads them."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from memgpt_lite.errors import ConfigError
from memgpt_lite.llm import runner
from memgpt_lite.models import ToolDefinition
from memgpt_lite.settings.resolve import tool_run_settings
from memgpt_lite.settings.values import ToolRunSettings
from memgpt_lite.storage.open import open_storage
from memgpt_lite.tools.external import ExternalTool
from memgpt_lite.tools.registry import ToolBuild, registry_tool
from memgpt_lite.tools.schema import Tool, ToolOutcome
from memgpt_lite.tools.source.tools import describe, source_tool

LIMITS = ToolRunSettings(environment=(("PATH", os.defpath),))

WEATHER = '''
from typing import Annotated, Literal

from pydantic import Field


def weather(
    city: str,
    unit: Literal["C", "F"] = "C",
    days: Annotated[int, Field(ge=1, le=7, description="Days ahead")] = 1,
) -> str:
    """The weather in a city.

    Args:
        city: Where, such as Leeds.
        unit: Celsius or Fahrenheit.
    """
    return f"{city}: sun for {days} day(s), 20 {unit}"
'''


def added(source: str, name: str | None = None, limits: ToolRunSettings = LIMITS) -> ExternalTool:
    described = runner.run(describe(limits, source=textwrap.dedent(source), name=name, what="it"))
    definition = ToolDefinition(
        name=described.name,
        description=described.description,
        json_schema={"parameters": described.parameters},
        kind="python",
        source_code=textwrap.dedent(source),
        requirements=described.requirements,
        trusted=True,
    )
    return source_tool(definition, limits)


def called(tool: Tool, max_chars: int = 6000, **arguments: object) -> ToolOutcome:
    return tool.run(None, json.dumps(arguments), max_chars)  # type: ignore[arg-type]


def in_process(source: str, name: str) -> Tool:
    """The same source as an in-process `@tool`, to compare with."""
    namespace: dict[str, object] = {}
    exec(textwrap.dedent(source), namespace)
    return Tool(namespace[name])  # type: ignore[arg-type]


def running(pid: int) -> bool:
    """Whether process `pid` runs (a zombie no one reaped yet does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_the_schema_is_the_one_tool_reads_from_the_function():
    tool = added(WEATHER)
    assert tool.schema() == in_process(WEATHER, "weather").schema()
    assert tool.origin == "registry: python source"


def test_a_call_runs_validated_and_hands_back_its_heartbeat():
    tool = added(WEATHER)
    outcome = called(tool, city="Leeds", days=2, request_heartbeat=True)
    assert outcome == ToolOutcome("Leeds: sun for 2 day(s), 20 C", ok=True, heartbeat=True)
    refused = called(tool, city="Leeds", days=9)
    assert refused == called(in_process(WEATHER, "weather"), city="Leeds", days=9)
    assert not refused.ok and "days: Input should be less than or equal to 7" in refused.content
    assert called(tool, city="Paris").content == "Paris: sun for 1 day(s), 20 C"


def test_model_retry_reaches_the_model_as_for_an_in_process_tool():
    source = """
    from memgpt_lite import ModelRetry

    def pick(n: int) -> str:
        \"\"\"Pick a number.\"\"\"
        if n > 3:
            raise ModelRetry("n must be 3 or less; call pick again")
        return str(n)
    """
    outcome = called(added(source), n=5, request_heartbeat=True)
    assert outcome == called(in_process(source, "pick"), n=5, request_heartbeat=True)
    assert outcome.content == "Error: n must be 3 or less; call pick again"


def test_a_tool_that_hangs_is_killed_at_the_limit_with_what_it_started(tmp_path):
    source = """
    import os, subprocess, time

    def hang(folder: str) -> str:
        \"\"\"Wait forever.\"\"\"
        child = subprocess.Popen(["sleep", "600"])
        with open(os.path.join(folder, "pids"), "w") as pids:
            pids.write(f"{os.getpid()} {child.pid}")
        time.sleep(600)
        return "never"
    """
    # Long enough for a busy machine to start the process and write the pids.
    limits = ToolRunSettings(timeout_seconds=5, environment=LIMITS.environment)
    outcome = called(added(source, limits=limits), folder=str(tmp_path))
    assert outcome == ToolOutcome(
        "Error: tool 'hang' did not finish within 5 s, so it was stopped", ok=False
    )
    pids = [int(pid) for pid in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 2 and not any(map(running, pids))


def test_a_tool_that_crashes_is_an_error_with_what_it_printed():
    source = """
    import os, sys

    def crash() -> str:
        \"\"\"Crash.\"\"\"
        print("about to fail", flush=True)
        os._exit(3)
    """
    assert called(added(source)).content == (
        "Error: tool 'crash' crashed (exit status 3) before giving a result; "
        "it printed: about to fail"
    )
    segfault = """
    import ctypes

    def segfault() -> str:
        \"\"\"Read address 0.\"\"\"
        return ctypes.string_at(0)
    """
    assert called(added(segfault)) == ToolOutcome(
        "Error: tool 'segfault' was killed by SIGSEGV before giving a result", ok=False
    )


def test_a_tool_that_prints_50_mb_is_stopped_without_reading_it_all(tmp_path):
    source = """
    import sys

    def chatty(folder: str) -> str:
        \"\"\"Print a lot.\"\"\"
        for _ in range(50):
            sys.stdout.write("x" * 1_000_000)
        open(folder + "/done", "w").close()
        return "done"
    """
    outcome = called(added(source), folder=str(tmp_path))
    assert outcome == ToolOutcome(
        "Error: tool 'chatty' printed more than 1,000,000 bytes, so it was stopped (a tool "
        "returns its result; what it prints is not shown to the model)",
        ok=False,
    )
    assert not (tmp_path / "done").exists()  # killed while printing


def test_the_environment_holds_no_secret_and_home_is_its_own_folder(monkeypatch):
    secrets = {
        "OPENAI_API_KEY": "sk-test-secret-1",
        "MEMGPT_LITE_DB": "postgresql://sam:hunter2@127.0.0.1/agents",
        "DATABASE_URL": "postgresql://sam:hunter3@127.0.0.1/db",
        "AWS_SECRET_ACCESS_KEY": "aws-secret-4",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    source = """
    import json, os

    def snoop() -> str:
        \"\"\"Report the environment.\"\"\"
        with open("left-behind.txt", "w") as f:
            f.write("x")
        return json.dumps({"env": dict(os.environ), "cwd": os.getcwd()})
    """
    seen = json.loads(called(added(source, limits=tool_run_settings())).content)
    text = json.dumps(seen)
    assert not any(value in text or name in text for name, value in secrets.items())
    assert set(seen["env"]) <= {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "HOME", "TMPDIR"}
    assert seen["env"]["HOME"] == seen["env"]["TMPDIR"] == seen["cwd"]
    assert seen["env"]["PATH"] == os.environ["PATH"]
    assert not Path(seen["cwd"]).exists()  # its folder went with it


def test_a_missing_requirement_is_a_clear_error_and_nothing_is_installed():
    source = """
    __requirements__ = ["memgpt-lite-surely-absent>=1", "packaging"]

    def needy() -> str:
        \"\"\"Need a package.\"\"\"
        import memgpt_lite_surely_absent
        return "ok"
    """
    with pytest.raises(ConfigError) as refused:
        added(source)
    assert str(refused.value) == (
        "cannot add it: it needs memgpt-lite-surely-absent>=1, which is not installed here: "
        "install it where the agent runs (tools never install anything)"
    )
    definition = ToolDefinition(
        name="needy",
        kind="python",
        source_code=textwrap.dedent(source),
        json_schema={},
        requirements=["packaging>=999"],
        trusted=True,
    )
    outcome = called(source_tool(definition, LIMITS))
    assert outcome.content.startswith(
        "Error: tool 'needy' cannot be called: it needs packaging>=999 ("
    )
    assert "is installed), which is not installed here" in outcome.content


def test_memory_and_result_size_are_limited():
    source = """
    def big(megabytes: int, chars: int) -> str:
        \"\"\"Take memory, give text.\"\"\"
        hoard = bytearray(megabytes * 2**20)
        return "y" * chars
    """
    limits = ToolRunSettings(memory_mb=300, result_max_chars=1000, environment=LIMITS.environment)
    tool = added(source, limits=limits)
    assert called(tool, megabytes=600, chars=1).content == "Error: big failed: MemoryError: "
    cut = called(tool, megabytes=1, chars=50_000).content
    assert len(cut) == 1000 and cut.startswith("yyy")
    assert cut.endswith("over the 1000 shown; narrow the request or ask for another page]")
    assert len(called(tool, max_chars=500, megabytes=1, chars=50_000).content) == 500


def test_a_module_function_runs_the_same_way(tmp_path, monkeypatch):
    (tmp_path / "my_tools.py").write_text(
        '__requirements__ = ["packaging"]\n\n'
        "def double(n: int) -> int:\n"
        '    """Double a number."""\n'
        "    return 2 * n\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    described = runner.run(describe(LIMITS, module="my_tools:double", what="it"))
    assert (described.name, described.requirements) == ("double", ["packaging"])
    definition = ToolDefinition(
        name="twice",
        kind="module",
        module="my_tools:double",
        json_schema={"parameters": described.parameters},
        trusted=True,
    )
    tool = source_tool(definition, LIMITS)
    assert (called(tool, n=21).content, tool.origin) == ("42", "registry: module my_tools:double")


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("def a(x: int):\n    return x +\n", "cannot add it: line 2: invalid syntax"),
        (
            "x = 1\n",
            "cannot add it: the source defines no function (a tool is one public function)",
        ),
        (
            "def a() -> int:\n    return 1\n\ndef b() -> int:\n    return 2\n",
            "cannot add it: the source defines 2 functions (a, b); name the tool like the one "
            "to use, or make the others private (_name)",
        ),
        (
            "from memgpt_lite import ToolContext\n\n"
            "def a(ctx: ToolContext) -> str:\n    return ''\n",
            "cannot add it: parameter 'ctx' takes a ToolContext, which a tool in a process of "
            "its own cannot have",
        ),
        (
            "raise RuntimeError('no')\n",
            "cannot add it: its source raised RuntimeError: no",
        ),
        ("__requirements__ = ['a b c']\n", "cannot add it: requirement 'a b c' is not valid: "),
    ],
    ids=["syntax", "no function", "two functions", "context", "raises", "bad requirement"],
)
def test_a_source_that_cannot_be_a_tool_is_refused_in_one_line(source, error):
    with pytest.raises(ConfigError) as refused:
        added(source)
    assert str(refused.value).startswith(error)
    assert "\n" not in str(refused.value)


def test_of_several_functions_the_one_named_like_the_tool_is_used():
    source = "def a() -> str:\n    return 'A'\n\ndef b() -> str:\n    return 'B'\n"
    assert called(added(source, name="b")).content == "B"


def test_an_untrusted_tool_or_one_nothing_can_call_is_a_clear_error(tmp_path):
    imported = ToolDefinition(
        name="scrape", kind="python", source_code="def scrape():\n    1/0\n", json_schema={}
    )
    build = ToolBuild(store=None, limits=LIMITS)  # type: ignore[arg-type]
    assert called(registry_tool(imported, build)) == ToolOutcome(
        "Error: tool scrape is not trusted: run `memgpt-lite tools trust scrape`", ok=False
    )
    mcp = ToolDefinition(
        name="get_time", kind="mcp", mcp_server="time", json_schema={}, trusted=True
    )
    with open_storage(tmp_path / "agents.db") as store:  # no MCP server "time" in it
        assert called(registry_tool(mcp, ToolBuild(store, LIMITS))).content == (
            "Error: tool get_time comes from MCP server time, which is not configured: add it "
            "with `memgpt-lite mcp add time ...`"
        )
