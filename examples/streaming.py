"""Streaming and async: a reply shown as the model writes it, then three
agents answering at once in one event loop.

Run it against OpenAI:
    export OPENAI_API_KEY=sk-...
    python examples/streaming.py

or against a local server (Ollama shown; any OpenAI-compatible endpoint works):
    export OPENAI_BASE_URL=http://localhost:11434/v1
    python examples/streaming.py --model llama3.2
"""

from __future__ import annotations

import argparse
import asyncio

from memgpt_lite import Agent, Block, NotFoundError
from memgpt_lite.events import MessageDelta, StepFailed, ToolCallStarted

NAMES = ("stream-ada", "stream-lin", "stream-sam")


def get_agent(name: str, model: str) -> Agent:
    try:
        return Agent.load(name)
    except NotFoundError:
        persona = Block(
            label="persona", value=f"I am {name.split('-')[1].title()}, brief and kind."
        )
        human = Block(label="human", value="")
        return Agent.create(name, model, blocks=[persona, human])


def show_one_reply(agent: Agent, text: str) -> None:
    """Print the reply word by word, and each tool the agent uses."""
    print(f"{agent.state.name}: ", end="", flush=True)
    for event in agent.stream(text):
        if isinstance(event, MessageDelta):
            print(event.text, end="", flush=True)
        elif isinstance(event, ToolCallStarted) and event.call.name != "send_message":
            print(f"[{event.call.name}] ", end="", flush=True)
        elif isinstance(event, StepFailed):
            print(f"(error: {event.message})", end="")
    print()


async def ask_all(agents: list[Agent], text: str) -> None:
    """Every agent answers at once; print the replies as they come back."""
    results = await asyncio.gather(*(agent.astep(text) for agent in agents))
    for agent, result in zip(agents, results, strict=True):
        print(f"{agent.state.name}: {' '.join(result.replies)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()
    agents = [get_agent(name, args.model) for name in NAMES]
    show_one_reply(agents[0], "Hello! Tell me one thing you like.")
    asyncio.run(ask_all(agents, "What is a good name for a cat?"))


if __name__ == "__main__":
    main()
