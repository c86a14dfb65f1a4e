"""What the tools and the loop may reach of an agent: its memory's
dependencies (memory/deps.py) and the model it calls.

An agent's runner (agent/runner.py, `agent.runner`) satisfies this
protocol; the tools (through `ToolContext.deps`) and the loop's modules take
an `AgentDeps` instead of the agent, so none of them imports the agent
layer, and a tool sees these dependencies rather than the whole agent. It lives with the tools, the
lower of its two users; the memory tiers, below both, see only `MemoryDeps`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from memgpt_lite.memory.deps import MemoryDeps

if TYPE_CHECKING:
    from memgpt_lite.llm.model import Model


class AgentDeps(MemoryDeps, Protocol):
    """An agent's state and the services a step uses."""

    @property
    def llm(self) -> Model:
        """The model the agent calls."""
        ...
