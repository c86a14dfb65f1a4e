"""Prompt tokens per turn of a long conversation on a 128k-token model, with
the default working window and without it (the model's whole window).

    python benchmarks/prompt_tokens.py [--turns 2000]

The fake endpoint (another process) plays a model with a 128,000-token
window, rejecting longer prompts as a real one does, answers each turn with
`send_message`, and reports usage as OpenAI does; summarization requests get a
short summary. Prompt tokens per turn are the endpoint's count of the turn's
requests (the summarizer's, when a turn compacts, are left out). The cost
uses gpt-4o-mini's and gpt-4o's prices from memgpt_lite/llm/prices.py.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from fake_endpoint import fake_endpoint

from memgpt_lite import Agent, AgentSettings
from memgpt_lite.llm.prices import cost, dollars
from memgpt_lite.memory.recall.window import DEFAULT_WORKING_WINDOW, budget_for

MODEL_WINDOW = 128_000
TOPICS = ["the garden", "a trip to Lisbon", "the new job", "chess openings", "sourdough bread"]


def user_message(turn: int) -> str:
    topic = TOPICS[turn % len(TOPICS)]
    return (
        f"Turn {turn}. Something new about {topic}: today I noticed detail number {turn}, "
        "and I would like you to remember it with the rest of what I told you."
    )


def conversation(turns: int, working_window: int | None, base_url: str, api_key: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        agent = Agent.create(
            "talker",
            "gpt-4o-mini",
            db=Path(tmp) / "tokens.db",
            base_url=base_url,
            api_key=api_key,
            settings=AgentSettings(working_window=working_window),
        )
        window = budget_for(agent.runner).window
        prompts: list[int] = []
        completion = compactions = 0
        started = time.perf_counter()
        for turn in range(1, turns + 1):
            result = agent.step(user_message(turn))
            prompts.append(result.usage.prompt_tokens)
            completion += result.usage.completion_tokens
            compactions += result.compactions
        elapsed = time.perf_counter() - started
        agent.store.close()
    label = "default working window" if working_window is None else "the model's whole window"
    total = sum(prompts)
    p95 = statistics.quantiles(prompts, n=20)[18] if len(prompts) > 1 else prompts[0]
    print(f"{label} ({window:,} of {MODEL_WINDOW:,} tokens), {turns} turns, {elapsed:.0f} s:")
    print(
        f"  prompt tokens per turn: mean {statistics.mean(prompts):,.0f}, p95 {p95:,.0f}, "
        f"max {max(prompts):,}, total {total:,}"
    )
    prices = ", ".join(
        f"{model} {dollars(cost(model, total, completion) or 0.0)}"
        for model in ("gpt-4o-mini", "gpt-4o")
    )
    print(f"  compactions: {compactions}; the conversation would cost {prices}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    args = parser.parse_args()
    print(f"DEFAULT_WORKING_WINDOW = {DEFAULT_WORKING_WINDOW:,} tokens")
    with fake_endpoint(context_window=MODEL_WINDOW) as endpoint:
        for working_window in (None, 0):
            conversation(args.turns, working_window, endpoint.base_url, endpoint.api_key)
    print(f"requests rejected for length: {endpoint.rejected_for_length}")


if __name__ == "__main__":
    main()
