"""Teach an agent in one process, ask it in another: its memory lives in SQLite.

    python examples/teach_then_ask.py teach   # tell the agent about Beth
    python examples/teach_then_ask.py ask     # later, a new process asks about her
    python examples/teach_then_ask.py         # both: teach, then `ask` in a subprocess

Set OPENAI_API_KEY, or OPENAI_BASE_URL for a local server (then pass --model).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from memgpt_lite import Agent, Block, NotFoundError

NAME = "student"
LESSON = (
    "Please remember this: my sister Beth's birthday is on 3 March. "
    "She loves orchids and hates surprise parties."
)
QUESTION = "What should I get Beth for her birthday, and by when?"


def talk(agent: Agent, text: str) -> None:
    print(f"you: {text}")
    for reply in agent.step(text).replies:
        print(f"{NAME}: {reply}")


def teach(model: str) -> None:
    try:
        agent = Agent.load(NAME)
    except NotFoundError:
        persona = "I am a thoughtful assistant. I save what matters to archival memory."
        agent = Agent.create(
            NAME,
            model,
            blocks=[Block(label="persona", value=persona), Block(label="human", value="")],
        )
    talk(agent, LESSON)


def ask() -> None:
    try:
        agent = Agent.load(NAME)  # nothing carried over but the database
    except NotFoundError:
        sys.exit(f"no agent {NAME!r} yet: run `python {sys.argv[0]} teach` first")
    talk(agent, QUESTION)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", nargs="?", choices=["teach", "ask", "both"], default="both")
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()
    print(f"--- {args.phase} (process {os.getpid()}) ---")
    if args.phase in ("teach", "both"):
        teach(args.model)
    if args.phase == "ask":
        ask()
    if args.phase == "both":
        sys.stdout.flush()  # keep our lines before the child's
        subprocess.run([sys.executable, __file__, "ask"], check=True)


if __name__ == "__main__":
    main()
