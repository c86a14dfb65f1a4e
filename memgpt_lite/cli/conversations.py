"""`memgpt-lite conversations`: list, make and delete an agent's conversations.

Start-up: like every module of `cli/`, this one imports only click and the
standard library at module level (see `base.py`).
"""

from __future__ import annotations

import click

from memgpt_lite.cli.base import load_agent


@click.command()
@click.argument("name")
@click.option("--new", "new", is_flag=True, help="Make a new conversation; print its id.")
@click.option("--summary", help="With --new: what the conversation is about.")
@click.option("--delete", metavar="ID", help="Delete this conversation and its messages.")
@click.pass_context
def conversations(
    ctx: click.Context, name: str, new: bool, summary: str | None, delete: str | None
) -> None:
    """List agent NAME's conversations, one per line: id, when it was made,
    and its summary. Each is a message history of its own over the agent's
    one memory; `send` and `chat` talk in one with --conversation ID. The
    agent's history from before conversations is its default conversation.

    Example: memgpt-lite conversations sam --new --summary "the trip"
    """
    agent = load_agent(ctx, name)
    if new:
        click.echo(agent.conversations.create(summary=summary).id)
        return
    if delete is not None:
        agent.conversations.delete(delete)
        click.echo(f"Deleted conversation {delete} of agent {name!r}.")
        return
    for conversation in agent.conversations.list():
        made = conversation.created_at.strftime("%Y-%m-%d %H:%M")
        click.echo(f"{conversation.id}  {made}  {conversation.summary or ''}".rstrip())
