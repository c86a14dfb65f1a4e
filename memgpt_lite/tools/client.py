"""The names of a step's client-side tools (loop/client_tools.py), checked
where the step runs and, before a streamed send answers, by the server."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from memgpt_lite.errors import ConfigError
from memgpt_lite.step_input import ClientTool


def check_client_tool_names(declared: Sequence[ClientTool], own: Collection[str]) -> None:
    """Refuses (ConfigError) a client-side tool named as one of the agent's
    own tools (`own`), or declared twice: the model could not tell which it
    calls."""
    seen: set[str] = set()
    for n, given in enumerate(declared):
        where = f"client_tools.{n}.name"
        if given.name in own:
            raise ConfigError(
                f"{where}: the agent has a tool named {given.name!r}; give the client's "
                "tool another name"
            )
        if given.name in seen:
            raise ConfigError(f"{where}: {given.name!r} is declared twice")
        seen.add(given.name)
