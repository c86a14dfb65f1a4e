"""What tokens cost, for models whose prices are known: the one price table.

Prices are US dollars per million tokens, input (prompt) and output
(completion), standard tier, as OpenAI lists them at
https://platform.openai.com/docs/pricing (checked 2025-08; they change:
update this table, nothing else). Cached input tokens, billed for less, are
counted at the full input price, so a cost here is an upper bound. A model
not in the table (a local model, another provider's) has no price: callers
show its tokens only.

For the chat's footer: `turn_cost_text(model, usage)` for one turn, and
`totals_text(totals)` for an agent's stored totals
(`store.usage_by_model(agent_id)`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memgpt_lite.models import ModelUsage, Usage


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens."""

    input: float
    output: float


# Exact (normalised) model names. A dated snapshot not listed takes its
# family's price; one priced differently is listed under its own name.
PRICES: dict[str, Price] = {
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-2024-05-13": Price(5.00, 15.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "o3": Price(2.00, 8.00),
    "o4-mini": Price(1.10, 4.40),
    "o3-mini": Price(1.10, 4.40),
    "gpt-3.5-turbo": Price(0.50, 1.50),
}
# A snapshot's date: -2024-07-18, or the older -0125 form.
_DATED_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{4})$")


def price_for(model: str) -> Price | None:
    """The price of `model`, tolerant of a provider prefix ("openai/"), case
    and a dated suffix (gpt-4o-mini-2024-07-18); None when unknown. Names
    are matched whole: gpt-4o-audio-preview is not gpt-4o."""
    name = model.rsplit("/", 1)[-1].strip().lower()
    if name in PRICES:
        return PRICES[name]
    return PRICES.get(_DATED_SUFFIX.sub("", name))


def cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """Dollars for these tokens of `model`, or None when its price is unknown."""
    price = price_for(model)
    if price is None:
        return None
    return (prompt_tokens * price.input + completion_tokens * price.output) / 1_000_000


def dollars(amount: float) -> str:
    """$0.0123 below a dollar (a turn costs fractions of a cent), $12.34 above."""
    return f"${amount:,.4f}" if amount < 1 else f"${amount:,.2f}"


def turn_cost_text(model: str, usage: Usage) -> str:
    """One turn's tokens and, when the model's price is known, their cost:
    "3,874 tokens (3,790 in, 84 out), $0.0006". For `StepResult.usage`."""
    text = (
        f"{usage.total_tokens:,} tokens "
        f"({usage.prompt_tokens:,} in, {usage.completion_tokens:,} out)"
    )
    spent = cost(model, usage.prompt_tokens, usage.completion_tokens)
    return text if spent is None else f"{text}, {dollars(spent)}"


def total_cost(totals: Sequence[ModelUsage]) -> float | None:
    """The dollars of an agent's totals, or None if no model among them has a
    known price. Models without one add nothing (`totals_text` says so)."""
    costs = [cost(t.model, t.prompt_tokens, t.completion_tokens) for t in totals]
    known = [c for c in costs if c is not None]
    return sum(known) if known else None


def totals_text(totals: Sequence[ModelUsage]) -> str:
    """An agent's stored totals in one line: "1,234,567 tokens (1,200,000 in,
    34,567 out) in 412 requests, $0.2008", with what the cost leaves out."""
    prompt = sum(t.prompt_tokens for t in totals)
    completion = sum(t.completion_tokens for t in totals)
    requests = sum(t.requests for t in totals)
    text = (
        f"{sum(t.total_tokens for t in totals):,} tokens ({prompt:,} in, {completion:,} out) "
        f"in {requests:,} request{'s' if requests != 1 else ''}"
    )
    spent = total_cost(totals)
    if spent is not None:
        text += f", {dollars(spent)}"
        unpriced = [t.model for t in totals if price_for(t.model) is None]
        if unpriced:
            text += f" (no price known for {', '.join(unpriced)})"
    estimated = sum(t.estimated_requests for t in totals)
    if estimated:
        text += f"; {estimated:,} request{'s' if estimated != 1 else ''} counted by us"
    return text
