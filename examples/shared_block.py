"""Two agents share one core memory block: what one writes, the other sees.

The planner records decisions in a `project` block; the writer was created
with the same block object, so its next system message already holds them.

Run it against OpenAI:
    export OPENAI_API_KEY=sk-...
    python examples/shared_block.py

or against a local server:
    export OPENAI_BASE_URL=http://localhost:11434/v1
    python examples/shared_block.py --model llama3.2
"""

from __future__ import annotations

import argparse

from memgpt_lite import Agent, Block, NotFoundError


def get_or_create(name: str, model: str, blocks: list[Block]) -> Agent:
    try:
        return Agent.load(name)
    except NotFoundError:
        return Agent.create(name, model, blocks=blocks)


def get_team(model: str) -> tuple[Agent, Agent]:
    project = Block(
        label="project",
        value="",
        limit=1000,
        description="Decisions about the launch, shared by the whole team.",
    )
    planner = get_or_create(
        "planner",
        model,
        [
            Block(label="persona", value="I am the planner. I note every decision in 'project'."),
            project,
        ],
    )
    # The same block object (loaded again on a later run): shared, not copied.
    # `writer.attach_block(block)` would share it with an existing agent.
    writer = get_or_create(
        "writer",
        model,
        [
            Block(label="persona", value="I am the writer. I write the launch announcements."),
            planner.block("project"),
        ],
    )
    return planner, writer


def talk(agent: Agent, text: str) -> None:
    print(f"you -> {agent.state.name}: {text}")
    for reply in agent.step(text).replies:
        print(f"{agent.state.name}: {reply}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()
    planner, writer = get_team(args.model)
    talk(planner, "We decided: the launch is on 1 June and the budget is 10k. Note it.")
    print("\nThe project block, as the writer sees it:")
    print(writer.block("project").value or "(empty)")
    print()
    talk(writer, "Draft one line announcing the launch date.")


if __name__ == "__main__":
    main()
