"""What the tools and the loop may reach of an agent: its memory's
dependencies (memory/deps.py), the model it calls, and a step of another
agent (the multi-agent tools').

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
    from memgpt_lite.models import AgentState, StepResult


class AgentDeps(MemoryDeps, Protocol):
    """An agent's state and the services a step uses."""

    @property
    def llm(self) -> Model:
        """The model the agent calls."""
        ...

    async def message_agent(self, agent: AgentState, message: str) -> StepResult:
        """Run a step of another agent (`agent`, its stored row) on `message`
        and return the step's result, or raise its error (MemGPTError): what
        the multi-agent tools (tools/multi_agent.py) wait for. The other agent
        opens on this one's store, as its own: its own step lock, memory and
        tools."""
        ...
