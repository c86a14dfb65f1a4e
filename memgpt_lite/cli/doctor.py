"""Diagnosis commands: `doctor` checks an endpoint step by step, `models`
lists what it serves. The checks are in llm/probe.py; this module prints."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from memgpt_lite.cli.base import timeout_option, workspace_for
from memgpt_lite.settings.resolve import effective_config

if TYPE_CHECKING:
    from memgpt_lite.llm.probe import CheckResult, ProbeTarget
    from memgpt_lite.models import LLMConfig

# How each status is shown, and in which colour on a terminal.
_LABELS = {"ok": ("ok", "green"), "warn": ("WARN", "yellow"), "fail": ("FAIL", "red")}
_LABELS["skip"] = ("skip", "bright_black")


def _endpoint(
    llm: LLMConfig, base_url: str | None, timeout: float | None
) -> tuple[str, str, float]:
    """The URL, key and timeout to use for `llm`, a --base-url flag winning."""
    from memgpt_lite.settings.endpoint import check_base_url
    from memgpt_lite.settings.resolve import resolve_endpoint, resolve_timeout

    if base_url is not None:
        base_url = check_base_url(base_url, "--base-url")
    url, key = resolve_endpoint(llm, base_url)
    return url, key, resolve_timeout(llm, timeout)


def _target(
    ctx: click.Context,
    name: str | None,
    model: str | None,
    base_url: str | None,
    timeout: float | None,
) -> ProbeTarget:
    """What to check: agent NAME's endpoint and model, else the configured defaults."""
    from memgpt_lite.llm.probe import ProbeTarget
    from memgpt_lite.memory.recall.window import window_for_model
    from memgpt_lite.models import LLMConfig

    if name is not None:
        state = workspace_for(ctx).agent_state(name)
        llm, chosen = state.llm, model or state.llm.model
        window, window_source = state.settings.context_window, "the agent's context_window"
        embedder = state.settings.embedder
    else:
        config = effective_config({"model": model})
        chosen = None if config.model.value is None else str(config.model.value)
        llm = LLMConfig(model=chosen or "")
        window_value, window_source = config.context_window.value, config.context_window.source
        window = window_value if isinstance(window_value, int) else None
        embedder = None if config.embedder.value is None else str(config.embedder.value)
    if window is None:
        window, window_source = window_for_model(chosen or ""), "from the model's name"
    url, key, seconds = _endpoint(llm, base_url, timeout)
    return ProbeTarget(url, key, chosen, window, window_source, embedder, seconds, name)


def _embedding_dimension(model: str, base_url: str, api_key: str, timeout: float) -> int:
    from memgpt_lite.embeddings.embedder import embedding_dimension  # loads numpy: when asked

    return embedding_dimension(model, base_url, api_key, timeout)


def _line(result: CheckResult) -> str:
    label, colour = _LABELS[result.status]
    return f"{click.style(f'{label:<4}', fg=colour)}  {result.name}: {result.detail}"


@click.command()
@click.argument("name", required=False)
@click.option(
    "--model", "-m", help="Check this model instead of the agent's or the configured one."
)
@click.option(
    "--base-url", help="Check this endpoint instead of the agent's or the configured one."
)
@timeout_option
@click.pass_context
def doctor(
    ctx: click.Context,
    name: str | None,
    model: str | None,
    base_url: str | None,
    timeout: float | None,
) -> None:
    """Check the model endpoint of agent NAME (else the configured defaults),
    step by step: reachable, OpenAI-compatible, the model listed, a tool call,
    tool_choice "required", streaming, embeddings (for an endpoint embedder)
    and the context window. One line per check, saying what to fix; checks
    that depend on a failed one are skipped. Exit status 0 when every check
    passes, 1 otherwise.

    Example: memgpt-lite doctor sam
    """
    from memgpt_lite.llm.probe import run_checks

    target = _target(ctx, name, model, base_url, timeout)
    whose = f" (agent {name})" if name else ""
    shown_model = repr(target.model) if target.model else "no model"
    click.echo(f"Checking {target.base_url} with {shown_model}{whose}")
    counts = {"ok": 0, "warn": 0, "fail": 0, "skip": 0}
    for result in run_checks(target, _embedding_dimension):
        counts[result.status] += 1
        click.echo(_line(result))
    summary = f"{counts['ok']} ok, {counts['warn']} warning(s), {counts['fail']} failed"
    click.echo(f"{summary}, {counts['skip']} skipped.")
    # A warning is a fallback the agent copes with (tool_choice "auto", no
    # streaming): worth knowing, not a failure for a script to stop on.
    if counts["fail"]:
        ctx.exit(1)


@click.command()
@click.argument("name", required=False)
@click.option(
    "--base-url", help="List this endpoint's models instead of the agent's or the configured one."
)
@timeout_option
@click.pass_context
def models(
    ctx: click.Context, name: str | None, base_url: str | None, timeout: float | None
) -> None:
    """List the models the endpoint of agent NAME (else the configured one)
    serves, one per line: the id, then a tab and the context window when the
    server reports one.

    Example: memgpt-lite models --base-url http://localhost:11434/v1
    """
    from memgpt_lite.llm.probe import list_models
    from memgpt_lite.models import LLMConfig

    llm = workspace_for(ctx).agent_state(name).llm if name is not None else LLMConfig(model="")
    url, key, seconds = _endpoint(llm, base_url, timeout)
    entries = list_models(url, key, seconds)
    for entry in entries:
        window = "" if entry.context_window is None else f"\t{entry.context_window}"
        click.echo(f"{entry.id}{window}")
    if not entries:
        click.echo(f"(the endpoint {url} lists no models)", err=True)
