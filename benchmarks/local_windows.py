"""An agent that believes in a larger window than its local server runs.

For each server the fake endpoint plays (Ollama's num_ctx, llama.cpp's -c,
vLLM's max_model_len) and each window it runs, an agent that assumes
`--believed` tokens talks `--turns` turns of about 90 tokens each. Reported:
the requests over the server's real window (refused, or on Ollama answered
from a truncated prompt), the turns that failed, the window the agent ends
with, and the requests spent asking the server about itself.

    python benchmarks/local_windows.py --turns 200
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from memgpt_lite import Agent, AgentSettings, Block
from memgpt_lite.errors import MemGPTError
from memgpt_lite.testing import FakeOpenAIServer, reply, say

FILLER = " ".join(["the quick brown fox jumps over the lazy dog"] * 8)
KINDS = ("ollama", "llama.cpp", "vllm")
CHAT_PATHS = ("/v1/chat/completions",)


def respond(body: dict):
    if "tools" not in body:
        return reply(content="The user and the agent talked about numbered facts.")
    return say("Noted.")


def run(kind: str, served: int, believed: int, turns: int) -> dict[str, object]:
    with FakeOpenAIServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.play(kind, context=served)  # type: ignore[arg-type]
        server.responder = respond
        agent = Agent.create(
            "sam",
            "fake-model",
            db=Path(tmp) / "a.db",
            base_url=server.base_url,
            api_key=server.api_key,
            system="You are a test agent.",
            blocks=[Block(label="persona", value="I am Sam."), Block(label="human")],
            settings=AgentSettings(context_window=believed),
        )
        failed = 0
        for i in range(turns):
            try:
                agent.step(f"FACT{i} {FILLER}")
            except MemGPTError:
                failed += 1
        requests = server.requests
        chat = [r for r in requests if r.path in CHAT_PATHS]
        over = [r for r in chat if r.status == 400 or r.prompt_truncated]
        return {
            "server": kind,
            "served": served,
            "over_window": len(over),
            "failed_turns": failed,
            "ends_with": agent.state.settings.context_window,
            "reports_asked": len(requests) - len(chat),
            "chat_requests": len(chat),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--believed", type=int, default=8192)
    parser.add_argument("--served", type=int, nargs="+", default=[2500, 4096])
    args = parser.parse_args(argv)
    columns = ("server", "served", "over_window", "failed_turns", "ends_with")
    columns += ("reports_asked", "chat_requests")
    print(f"believed window {args.believed:,}, {args.turns} turns")
    print(" | ".join(columns))
    for kind in KINDS:
        for served in args.served:
            row = run(kind, served, args.believed, args.turns)
            print(" | ".join(str(row[c]) for c in columns), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
