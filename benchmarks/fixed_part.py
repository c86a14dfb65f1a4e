"""The fixed part of a request, per tool set and working window: the system
message with the default persona and human blocks, the tool schemas and the
reply primer, as `compile_context` counts them before any message.

    python benchmarks/fixed_part.py [--model gpt-4o-mini] [--windows 2500,4096,8192,32000]

No model is called: each agent is created in a temporary SQLite file and
its first request compiled. `fixed_part` is there for other benchmarks too.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from memgpt_lite import Agent, AgentSettings
from memgpt_lite.memory.recall.window import compile_context
from memgpt_lite.tools.sets import TOOL_SETS

WINDOWS = (2_500, 4_096, 8_192, 32_000)
# Never contacted (nothing is sent); the discard port, should anything try.
NO_ENDPOINT = "http://127.0.0.1:9/v1"


def fixed_part(tool_set: str, window: int, model: str = "gpt-4o-mini") -> int:
    """Tokens of a new agent's fixed part in a `window`-token window."""
    with tempfile.TemporaryDirectory() as tmp:
        agent = Agent.create(
            "fixed",
            model,
            db=Path(tmp) / "fixed.db",
            base_url=NO_ENDPOINT,
            api_key="unused",
            settings=AgentSettings(tool_set=tool_set, context_window=window),
        )
        try:
            return compile_context(agent.runner).fixed_tokens
        finally:
            agent.store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--windows", default=",".join(map(str, WINDOWS)))
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",")]
    print(f"fixed part in tokens (share of the window), model {args.model}")
    print(f"{'tool set':18}" + "".join(f"{w:>16,}" for w in windows))
    for tool_set in TOOL_SETS:
        cells = []
        for window in windows:
            tokens = fixed_part(tool_set, window, args.model)
            cells.append(f"{tokens:,} ({tokens / window:.0%})")
        print(f"{tool_set:18}" + "".join(f"{cell:>16}" for cell in cells))


if __name__ == "__main__":
    main()
