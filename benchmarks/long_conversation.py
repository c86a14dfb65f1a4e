"""A 2,000-turn conversation in a 4,096-token window: nothing overflows, the
prompt stays flat, and every message stays findable.

    python benchmarks/long_conversation.py [--turns 2000] [--window 4096]

The fake endpoint (another process) enforces the window exactly as a real one
rejects over-long prompts, answers each turn with `send_message`, and answers
summarization requests with a short summary. Every user message carries one
unique word; at the end, `conversation_search` (the agent's real tool) looks
each one up. Framework time leaves out the time spent in HTTP calls, the
summarizer's included.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from fake_endpoint import fake_endpoint

from memgpt_lite import Agent, AgentSettings
from memgpt_lite.tools.builtin import BUILTIN_TOOLS
from memgpt_lite.tools.schema import ToolContext

TOPICS = [
    "gardening",
    "a trip to Lisbon",
    "the new job",
    "a sister's wedding",
    "chess openings",
    "learning Italian",
    "a broken bicycle",
    "sourdough bread",
    "a piano recital",
]
REPORTED_TURNS = (10, 100, 1000, 2000)


def unique_word(turn: int) -> str:
    return f"zq{turn:05d}marker"


def user_message(turn: int) -> str:
    topic = TOPICS[turn % len(TOPICS)]
    return (
        f"Turn {turn}. I want to tell you more about {topic}; today's detail is "
        f"{unique_word(turn)}, and I will probably mention it again some day."
    )


def found_by_search(agent: Agent, turns: int) -> int:
    search = BUILTIN_TOOLS["conversation_search"]
    context = ToolContext(deps=agent.runner, step_id="benchmark")
    found = 0
    for turn in range(1, turns + 1):
        word = unique_word(turn)
        outcome = search.run(context, json.dumps({"query": word}), max_chars=6000)
        found += outcome.ok and f"user: {user_message(turn)}" in outcome.content
    return found


def run(turns: int, window: int) -> None:
    with fake_endpoint(context_window=window) as endpoint, tempfile.TemporaryDirectory() as tmp:
        agent = Agent.create(
            "talker",
            "gpt-4o-mini",
            db=Path(tmp) / "long.db",
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            settings=AgentSettings(context_window=window),
        )
        load_started = time.perf_counter()
        agent.context_overview()  # loads the tokenizer's vocabulary, once per process
        load_seconds = time.perf_counter() - load_started
        prompt_tokens: dict[int, tuple[int, int]] = {}
        framework_ms: list[float] = []
        all_prompts: list[int] = []
        compactions = warnings = 0
        started = time.perf_counter()
        for turn in range(1, turns + 1):
            step_started = time.perf_counter()
            result = agent.step(user_message(turn))
            framework_ms.append((time.perf_counter() - step_started - result.llm_seconds) * 1000)
            all_prompts.append(result.prompt_tokens_estimate)
            compactions += result.compactions
            warnings += result.memory_warnings
            if turn in REPORTED_TURNS:
                prompt_tokens[turn] = (result.prompt_tokens_estimate, result.usage.prompt_tokens)
        elapsed = time.perf_counter() - started
        found = found_by_search(agent, turns)
        stored = agent.store.agent_stats(agent.state.id).message_count
    print(
        f"turns: {turns}, window: {window} tokens, wall time {elapsed:.1f} s "
        f"(plus {load_seconds:.2f} s loading the tokenizer once)"
    )
    print(f"requests rejected for length: {endpoint.rejected_for_length}")
    print("prompt tokens per request (our count / endpoint's count):")
    for turn, (ours, theirs) in prompt_tokens.items():
        print(f"  turn {turn:>5}: {ours:>5} / {theirs:>5}")
    print(
        f"  every turn: min {min(all_prompts)}, median {statistics.median(all_prompts):.0f}, "
        f"max {max(all_prompts)} (compaction starts above {int(window * 0.9)})"
    )
    print(f"compactions: {compactions}, memory-pressure alerts: {warnings}")
    print(f"messages stored: {stored}")
    print(
        f"conversation_search finds {found}/{turns} user messages by their unique word "
        f"({100 * found / turns:.1f}%)"
    )
    print(
        f"framework time per turn: median {statistics.median(framework_ms):.2f} ms, "
        f"p95 {statistics.quantiles(framework_ms, n=20)[18]:.2f} ms, "
        f"max {max(framework_ms):.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--window", type=int, default=4096)
    args = parser.parse_args()
    run(args.turns, args.window)


if __name__ == "__main__":
    main()
