"""Quickstart: an agent defined in Python with one custom tool.

Run it against OpenAI:
    export OPENAI_API_KEY=sk-...
    python examples/quickstart.py

or against a local server (Ollama shown; any OpenAI-compatible endpoint works):
    export OPENAI_BASE_URL=http://localhost:11434/v1
    python examples/quickstart.py --model llama3.2

Run it twice: the second time, the agent already knows you.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memgpt_lite import Agent, Block, ModelRetry, tool


@tool
def current_time(timezone: str = "UTC") -> str:
    """Tell the current date and time in a time zone.

    Args:
        timezone: An IANA time zone name, such as Europe/Paris.
    """
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        # The model reads this and can try again with a valid name.
        raise ModelRetry(f"unknown time zone {timezone!r}; use a name like Europe/Paris") from None
    return datetime.now(zone).strftime("%A %d %B %Y, %H:%M %Z")


def get_agent(model: str) -> Agent:
    # Created on the first run; later runs open it with what it has learned
    # (another --model than the stored agent's is an error, not a switch).
    return Agent.create(
        "quickstart",
        model,
        blocks=[
            Block(label="persona", value="I am Sam, a warm and concise assistant."),
            Block(label="human", value="", description="What I know about the user."),
        ],
        tools=[current_time],
        exist_ok=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()
    agent = get_agent(args.model)
    for text in ("Hi! My name is Alice and I live in Paris.", "What time is it for me?"):
        print(f"you: {text}")
        result = agent.step(text)
        for reply in result.replies:
            print(f"{agent.state.name}: {reply}")
    print("\nWhat the agent now knows about you:")
    print(agent.block("human").value or "(nothing yet)")


if __name__ == "__main__":
    main()
