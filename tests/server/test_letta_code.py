"""Letta Code, Letta's own coding agent CLI, run headless from npm against
the real `memgpt-lite serve` and the fake model, as a user points it at a
Letta server: `LETTA_BASE_URL=... LETTA_API_KEY=... letta -p "..."`.

One server, one fake model and one install of Letta Code serve the module
(each run of node costs about a second of CPU, the install once per
machine: tests/support/letta_code.py); each test is a user of its own, with
a home and a project folder of its own, so none finds another's agent
(each makes agents named "Letta Code": one user may have several).

Its every turn goes through Letta's conversations routes, each a run whose
chunks carry run_id, seq_id and otid, with its client-side tools."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.letta_code import LettaCode, letta_code
from support.serving import environment, new_key, start_serve

from memgpt_lite.testing import FakeOpenAIServer, reply, say
from memgpt_lite.testing.script import call

MODEL = "gpt-4o-mini"
HELLO = "Hello from memgpt-lite."
# A command whose output the model cannot know without the client running it.
COMMAND = "echo lc-$((6*7))"
OUTPUT = "lc-42"
SHELL_TOOLS = ("Bash", "shell_command", "run_shell_command", "shell")


def _shell_call(tool: dict[str, Any]) -> Any:
    """A call of Letta Code's shell tool running COMMAND, its arguments as
    its schema asks (a command as text, or as an argv list)."""
    function = tool["function"]
    properties = function.get("parameters", {}).get("properties", {})
    arguments: dict[str, Any] = {}
    for name in function.get("parameters", {}).get("required", []):
        arguments[name] = "Print a number"
    kind = properties.get("command", {}).get("type")
    arguments["command"] = ["bash", "-lc", COMMAND] if kind == "array" else COMMAND
    return call(function["name"], **arguments)


def answer(body: dict[str, Any]) -> Any:
    """The model: asked to run a command, it calls the client's shell tool;
    given the output, it says what the command printed; else it greets."""
    if "tools" not in body:
        return reply(content="They talked.")
    messages = body["messages"]
    if messages[-1]["role"] == "tool" and OUTPUT in str(messages[-1]["content"]):
        return say(f"The command printed {OUTPUT}.")
    users = [m for m in messages if m["role"] == "user"]
    text = str(users[-1]["content"]) if users else ""
    shells = [t for t in body["tools"] if t["function"]["name"] in SHELL_TOOLS]
    if "run the command" in text and shells:
        return reply("I will run it.", [_shell_call(shells[0])])
    return say(HELLO)


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        server.responder = answer
        yield server


@dataclass
class Served:
    url: str
    db: Path
    log: Path  # the server's: one access line per request


@pytest.fixture(scope="module")
def served(model: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("serve")
    env = environment(model, folder / "home")
    env["MEMGPT_LITE_MODEL"] = MODEL  # what Letta Code's letta/auto names
    db = folder / "agents.db"
    new_key(str(db), "nobody")  # makes the database before the server opens it
    log = folder / "serve.log"
    process, url = start_serve(env, db, log, "--log-level", "info")
    try:
        yield Served(url, db, log)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> LettaCode:
    return letta_code(tmp_path_factory.mktemp("letta-code"))


@dataclass
class User:
    """Letta Code run by a user of its own, with a home and a project of its own."""

    letta: LettaCode
    served: Served
    key: str

    def run(self, *args: str) -> str:
        """Letta Code's output; a failed run fails the test with its errors
        and the server's requests that failed."""
        done: subprocess.CompletedProcess[str] = self.letta.run(self.served.url, self.key, *args)
        if done.returncode != 0:
            lines = self.served.log.read_text().splitlines()
            failed = [line for line in lines if " 4" in line or " 5" in line]
            pytest.fail(
                f"letta {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}\n"
                "requests that failed:\n" + "\n".join(failed[-20:]),
                False,
            )
        return done.stdout


@pytest.fixture
def user(
    installed: LettaCode, served: Served, tmp_path: Path, request: pytest.FixtureRequest
) -> User:
    (tmp_path / "home").mkdir()
    (tmp_path / "project").mkdir()
    letta = LettaCode(installed.node, installed.bundle, tmp_path / "home", tmp_path / "project")
    return User(letta, served, new_key(str(served.db), request.node.name[:40]))


def test_new_agent_completes_a_turn(user: User) -> None:
    assert HELLO in user.run("--new-agent", "-p", "hi")


def test_an_agent_by_id_completes_a_turn(user: User) -> None:
    made = httpx.post(
        f"{user.served.url}/v1/agents/",
        json={"name": "Letta Code", "model": f"openai/{MODEL}", "tags": ["origin:letta-code"]},
        headers={"Authorization": f"Bearer {user.key}"},
        timeout=30,
    )
    assert made.status_code == 200, made.text
    assert HELLO in user.run("--agent", made.json()["id"], "-p", "hi")


def test_new_conversation_completes_a_turn(user: User) -> None:
    assert HELLO in user.run("--new", "-p", "hi")


def test_a_shell_call_runs_on_the_client_and_its_output_reaches_the_model(
    user: User, model: FakeOpenAIServer
) -> None:
    said = user.run("--new-agent", "--yolo", "-p", "Please run the command for me.")
    results = [
        m
        for request in model.chat_requests
        for m in request["messages"]
        if m["role"] == "tool" and OUTPUT in json.dumps(m.get("content"))
    ]
    assert results, "the shell's output never reached the model"
    assert f"The command printed {OUTPUT}." in said
    assert model.rejections == []


def test_a_second_new_agent_of_one_user_completes_a_turn(user: User) -> None:
    user.run("--new-agent", "-p", "hi")
    assert HELLO in user.run("--new-agent", "-p", "hi again")
    # Two agents, one display name: the CLI names (identifiers) stay unique.
    listed = httpx.get(
        f"{user.served.url}/api/agents",
        headers={"Authorization": f"Bearer {user.key}"},
        timeout=30,
    ).json()
    made = [(a["id"], a["name"]) for a in listed if a["display_name"] == "Letta Code"]
    assert len({agent_id for agent_id, _ in made}) == 2
    assert sorted(name for _, name in made) == ["letta-code", "letta-code-2"]
