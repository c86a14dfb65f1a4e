"""Small windows: what the fixed part of a request takes of windows of 2,500,
4,096, 8,192 and 32,000 tokens with each tool set, and whether a long talk
in each still learns and recalls.

    python benchmarks/small_windows.py [--turns 200] [--windows 2500,4096,8192,32000]

The fixed part is the system message with the default persona and human
blocks, the tool schemas and the reply primer, as compile_context counts it
(and as the agent's budget checks it).

The talk: a scripted model on the fake endpoint (in this process, on
127.0.0.1), which enforces the window as a real endpoint does, behaves like
an agent. Told the user's name in the first turn, it stores it with its
set's memory tool; told a detail in the third, it only answers; then it
chats; in the last turn, asked about that detail, it searches the
conversation (conversation_search) and answers with what the result holds.
Reported: whether the name is in core memory at the end (and so in every
request), whether the search found the early turn, and how many requests
the endpoint rejected as too long. An agent that `Agent.create` refuses (its
fixed part leaves no room to talk in the window) is reported as such.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memgpt_lite import Agent, AgentSettings, ConfigError
from memgpt_lite.agent.sizing import measure
from memgpt_lite.testing import FakeOpenAIServer, call, reply, say
from memgpt_lite.testing.script import Reply

NAME = "Zorblax"
DETAIL = "quillfeather"  # the early turn's one unique word
TOOL_SETS = ("memgpt", "letta-v1", "anthropic-memory")
WINDOWS = (2_500, 4_096, 8_192, 32_000)
SMALL_TALK = [
    "I spent the morning repotting the basil and the thyme on the balcony.",
    "The bus was late again, so I walked the last two stops in the rain.",
    "We are thinking about a short trip to the coast next month.",
    "My sister called; her new job at the library is going well.",
    "I tried a new recipe for lentil soup and it came out rather well.",
]


def remember_name(tool_set: str) -> dict[str, Any]:
    """The call that stores the user's name with `tool_set`'s memory tool."""
    fact = f"Name: {NAME}"
    if tool_set == "letta-v1":
        return call("memory_insert", label="human", new_str=fact, request_heartbeat=True)
    if tool_set == "anthropic-memory":
        return call(
            "memory",
            command="insert",
            path="/memories/human",
            insert_line=0,
            insert_text=fact,
            request_heartbeat=True,
        )
    return call("core_memory_append", label="human", content=fact, request_heartbeat=True)


def user_turn(turn: int) -> str:
    if turn == 0:
        return f"Hello! My name is {NAME}."
    if turn == 2:
        return f"By the way, my old teapot is called {DETAIL}; my grandmother named it."
    return f"Turn {turn}. " + SMALL_TALK[turn % len(SMALL_TALK)]


QUESTION = "What was my old teapot called?"


class AgentLikeModel:
    """The scripted model: what an agent would do with each request."""

    def __init__(self, tool_set: str) -> None:
        self.tool_set = tool_set
        self.answers: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        if "tools" not in body:  # the summarizer
            return reply(content="The user chatted about their days; the agent listened.")
        messages = body["messages"]
        # What came after the user's last message (a system alert may follow it).
        asked = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=None)
        if asked is None:
            return say("Noted.")
        text, since = messages[asked].get("content") or "", messages[asked + 1 :]
        if not any(m["role"] == "assistant" for m in since):
            if NAME in text and "My name is" in text:
                return reply(tool_calls=[remember_name(self.tool_set)])
            if text == QUESTION:
                search = call("conversation_search", query="teapot", request_heartbeat=True)
                return reply(tool_calls=[search])
            return say("That sounds nice.")
        if text == QUESTION:
            results = " ".join(m.get("content") or "" for m in since if m["role"] == "tool")
            found = re.search(r"teapot is called (\w+)", results)
            answer = f"It was called {found.group(1)}." if found else "I could not find it."
            self.answers.append(answer)
            return say(answer)
        return say("Noted.")


@dataclass
class TalkResult:
    name_kept: bool
    early_turn_found: bool
    rejected: int
    refused: str | None = None  # why Agent.create refused the agent


def talk(
    server: FakeOpenAIServer,
    db: Path,
    tool_set: str,
    window: int,
    turns: int,
    system: str | None = None,
) -> TalkResult:
    """A `turns`-turn talk with a new agent on `server`, whose model has a
    `window`-token context window (the server enforces it)."""
    model = AgentLikeModel(tool_set)
    server.reset()  # requests are kept: a long run would hold them all
    server.responder, server.context_window = model, window
    try:
        agent = Agent.create(
            f"{tool_set}-{window}",
            "gpt-4o-mini",
            db=db,
            system=system,
            base_url=server.base_url,
            api_key=server.api_key,
            settings=AgentSettings(context_window=window, tool_set=tool_set),
        )
    except ConfigError as exc:
        return TalkResult(False, False, 0, refused=str(exc))
    for turn in range(turns - 1):
        agent.step(user_turn(turn))
    agent.step(QUESTION)
    return TalkResult(
        name_kept=any(NAME in block.value for block in agent.blocks),
        early_turn_found=model.answers[-1:] == [f"It was called {DETAIL}."],
        rejected=len(server.rejections),
    )


def fixed_share(db: Path, tool_set: str, window: int) -> tuple[int, float]:
    """The fixed part, in tokens and as a share of `window`, with the default
    blocks: measured in that window (the agent is created in a larger one,
    since one its fixed part does not fit is refused)."""
    agent = Agent.create(
        f"measure-{tool_set}-{window}",
        "gpt-4o-mini",
        db=db,
        settings=AgentSettings(context_window=max(window, 32_000), tool_set=tool_set),
    )
    agent.state.settings.context_window = window
    agent.state.settings.working_window = None
    fixed = measure(agent.runner).fixed_tokens
    return fixed, fixed / window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--windows", default=",".join(map(str, WINDOWS)))
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",")]
    print(f"{'tool set':<18}{'window':>8}{'fixed':>7}{'share':>7}  talk ({args.turns} turns)")
    with FakeOpenAIServer() as server, tempfile.TemporaryDirectory() as tmp:
        for tool_set in TOOL_SETS:
            for window in windows:
                fixed, share = fixed_share(Path(tmp) / "measure.db", tool_set, window)
                result = talk(server, Path(tmp) / "talk.db", tool_set, window, args.turns)
                if result.refused:
                    outcome = "refused at create: " + result.refused.split(";")[0]
                else:
                    outcome = (
                        f"name kept: {'yes' if result.name_kept else 'NO'}, early turn found: "
                        f"{'yes' if result.early_turn_found else 'NO'}, "
                        f"rejected requests: {result.rejected}"
                    )
                print(f"{tool_set:<18}{window:>8,}{fixed:>7,}{share:>7.0%}  {outcome}")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
