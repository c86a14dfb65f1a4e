"""A custom tool: typed parameters with Annotated, and ModelRetry to steer the model.

The parameters' types, constraints and descriptions become the JSON schema the
model sees; arguments that break them, and a ModelRetry raised by the tool,
come back to the model as error results it can act on.

Run it against OpenAI:
    export OPENAI_API_KEY=sk-...
    python examples/custom_tool.py

or against a local server (any OpenAI-compatible endpoint works):
    export OPENAI_BASE_URL=http://localhost:11434/v1
    python examples/custom_tool.py --model llama3.2 --show-schema
"""

from __future__ import annotations

import argparse
import json
from typing import Annotated

from pydantic import Field

from memgpt_lite import Agent, Block, ModelRetry, NotFoundError, tool

# Fixed, made-up rates: the point is the tool, not the money.
EUROS_PER_UNIT = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17, "CHF": 1.05, "JPY": 0.0061}


@tool
def convert_currency(
    amount: Annotated[float, Field(gt=0, description="How much money to convert.")],
    from_currency: Annotated[str, Field(description="ISO 4217 code of the money, e.g. USD.")],
    to_currency: Annotated[str, Field(description="ISO 4217 code to convert to.")] = "EUR",
) -> str:
    """Convert an amount of money from one currency to another at today's rate."""
    codes = from_currency.strip().upper(), to_currency.strip().upper()
    for code in codes:
        if code not in EUROS_PER_UNIT:
            # The model reads this and can pick a known code or ask the user.
            raise ModelRetry(
                f"unknown currency {code!r}; the known ones are {', '.join(EUROS_PER_UNIT)}"
            )
    converted = amount * EUROS_PER_UNIT[codes[0]] / EUROS_PER_UNIT[codes[1]]
    return f"{amount:,.2f} {codes[0]} = {converted:,.2f} {codes[1]}"


def get_agent(model: str) -> Agent:
    try:
        return Agent.load("currency", tools=[convert_currency])
    except NotFoundError:
        return Agent.create(
            "currency",
            model,
            blocks=[
                Block(label="persona", value="I am a precise travel-money assistant."),
                Block(label="human", value=""),
            ],
            tools=[convert_currency],
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--show-schema", action="store_true", help="print the tool's schema")
    args = parser.parse_args()
    if args.show_schema:
        print(json.dumps(convert_currency.schema(), indent=2))
    agent = get_agent(args.model)
    question = "I have 250 dollars. How many yen is that?"
    print(f"you: {question}")
    result = agent.step(question)
    for tool_result in result.tool_results:
        call = tool_result.call
        if call.name != "send_message":
            print(f"  [{call.name}({call.arguments}) -> {tool_result.content}]")
    for reply in result.replies:
        print(f"{agent.state.name}: {reply}")


if __name__ == "__main__":
    main()
