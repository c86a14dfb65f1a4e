"""`memgpt-lite window NAME [TOKENS]`: show or change the window agent NAME
works in (its working window), checked as `create` checks a new agent's
(agent/sizing.py)."""

from __future__ import annotations

import click

from memgpt_lite.cli.base import load_agent
from memgpt_lite.cli.scripting import BadInput


def _setting(tokens: str) -> int | None:
    """TOKENS as the working_window setting: a count, 0 (the model's whole
    window), or `auto` (None: chosen as for a new agent)."""
    if tokens.lower() == "auto":
        return None
    cleaned = tokens.replace(",", "").replace("_", "")
    if not cleaned.isdigit():
        raise BadInput(
            f"TOKENS must be a number of tokens, 0 for the model's whole window, or auto; "
            f"got {tokens!r}"
        )
    return int(cleaned)


@click.command(name="window")
@click.argument("name")
@click.argument("tokens", required=False)
@click.pass_context
def window(ctx: click.Context, name: str, tokens: str | None) -> None:
    """Show the window agent NAME works in, or set it to TOKENS.

    TOKENS is a number of tokens, 0 for the model's whole window, or auto
    for the window `create` would choose: the default 32,000, or twice what
    its instructions, core memory and tools take when that is more, within
    the model's window. A window the agent could not take a step in is
    refused, and nothing changes. The model's own window is
    --context-window at create (or `/model` in chat).

    Example: memgpt-lite window sam 64000
    """
    from memgpt_lite.agent.sizing import measure, set_working_window

    agent = load_agent(ctx, name)
    if tokens is None:
        fit = measure(agent.runner)
    else:
        fit = set_working_window(agent.runner, _setting(tokens))
    budget = fit.budget
    share = 100 * fit.fixed_tokens / budget.window
    whose = (
        f"of its model's {budget.model_window:,}"
        if budget.window < budget.model_window
        else "its model's whole window"
    )
    verb = "works" if tokens is None else "now works"
    click.echo(
        f"Agent {agent.state.name!r} {verb} in {budget.window:,} tokens ({whose}); its "
        f"instructions, core memory and tools take {fit.fixed_tokens:,} ({share:.0f}%)."
    )
    if budget.window < min(fit.wanted, budget.model_window):
        click.echo(
            f"note: that leaves less room to talk than they take; `memgpt-lite window "
            f"{agent.state.name} auto` chooses {min(fit.wanted, budget.model_window):,}.",
            err=True,
        )
