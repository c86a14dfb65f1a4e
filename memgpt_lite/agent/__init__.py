"""The agent layer: the agent users hold, where its steps run, and the
application layer the command line and the server go through.

- agent.py: `Agent`, the user's object: its configuration and its memory
  (core blocks; `agent.history`, recall; `agent.archival`), and the four
  drivers of a step (`step`, `astep`, `stream`, `astream`).
- runner.py: `Runner` (`agent.runner`), where steps run: the model client and
  token counter, the step lock, the step engine, retry, summarize, reflect.
  The loop, the tools and memory take it, as `AgentDeps`, not the agent.
- sleeptime.py: sleep-time agents, which look after a main agent's memory
  (its blocks, shared) in the background every few turns of it.
- setup.py: creating an agent (every argument checked before anything is
  stored) and matching `create(exist_ok=True)` against a stored one.
- workspace.py: `Workspace`, the agents of one database opened with the
  settings an edge resolved, and what the command line and the server do
  with them (create, list, rename, delete, history pages, usage, keys, ...).
- keys.py: the server's API keys, made and checked.

`from memgpt_lite.agent import Agent` (or `Workspace`) imports it on first
use, so that `agent.keys` alone loads no model client.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as in memgpt_lite/__init__.py
if TYPE_CHECKING:
    from typing import Any

    from memgpt_lite.agent.agent import Agent
    from memgpt_lite.agent.workspace import Workspace

_EXPORTS = {"Agent": "agent", "Workspace": "workspace"}
__all__ = ["Agent", "Workspace"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
