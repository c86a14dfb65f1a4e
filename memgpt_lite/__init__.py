"""memgpt_lite: a small MemGPT-style agent framework.

An agent is a model in a tool-calling loop with three tiers of memory: core
memory blocks in the system message, recall memory of every message, and
archival memory of passages. State lives in storage behind the `Storage`
protocol; SQLite (`Store`) is the default backend.

The names below are imported on first use, so `import memgpt_lite` (and the
command line's start-up) does not pay for the openai client until it is needed,
and Ctrl-C during start-up lands in code that can handle it.
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: importing typing here would widen the window in
# which Ctrl-C at start-up escapes as a traceback. Type checkers know the idiom.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from memgpt_lite.agent.agent import Agent
    from memgpt_lite.errors import (
        AlreadyExistsError,
        ApprovalError,
        BusyError,
        ConfigError,
        ConflictError,
        ContextBudgetError,
        ContextFullError,
        LLMError,
        MemGPTError,
        ModelRetry,
        NotFoundError,
        ReadOnlyError,
        StoreError,
    )
    from memgpt_lite.loop.stopping import StopRequest
    from memgpt_lite.memory.core.blocks import default_blocks
    from memgpt_lite.models import (
        AgentSettings,
        AgentState,
        Approval,
        Block,
        Message,
        Passage,
        StepResult,
    )
    from memgpt_lite.step_input import ClientTool, StepWithClientTools, ToolReturn
    from memgpt_lite.storage.open import open_storage
    from memgpt_lite.storage.protocol import Storage
    from memgpt_lite.storage.sqlite.store import Store
    from memgpt_lite.tools.schema import Tool, ToolContext, tool

# Each public name and the module that defines it.
_EXPORTS = {
    "Agent": "agent.agent",
    "default_blocks": "memory.core.blocks",
    "AlreadyExistsError": "errors",
    "ApprovalError": "errors",
    "BusyError": "errors",
    "ConfigError": "errors",
    "ConflictError": "errors",
    "ContextBudgetError": "errors",
    "ContextFullError": "errors",
    "LLMError": "errors",
    "MemGPTError": "errors",
    "ModelRetry": "errors",
    "NotFoundError": "errors",
    "ReadOnlyError": "errors",
    "StoreError": "errors",
    "AgentSettings": "models",
    "AgentState": "models",
    "Approval": "models",
    "Block": "models",
    "ClientTool": "step_input",
    "Message": "models",
    "Passage": "models",
    "StepResult": "models",
    "StepWithClientTools": "step_input",
    "StopRequest": "loop.stopping",
    "ToolReturn": "step_input",
    "Storage": "storage.protocol",
    "Store": "storage.sqlite.store",
    "open_storage": "storage.open",
    "Tool": "tools.schema",
    "ToolContext": "tools.schema",
    "tool": "tools.schema",
}
__all__ = [
    "Agent",
    "AgentSettings",
    "AgentState",
    "AlreadyExistsError",
    "Approval",
    "ApprovalError",
    "Block",
    "BusyError",
    "ClientTool",
    "ConfigError",
    "ConflictError",
    "ContextBudgetError",
    "ContextFullError",
    "LLMError",
    "MemGPTError",
    "Message",
    "ModelRetry",
    "NotFoundError",
    "Passage",
    "ReadOnlyError",
    "StepResult",
    "StepWithClientTools",
    "StopRequest",
    "Storage",
    "Store",
    "StoreError",
    "Tool",
    "ToolContext",
    "ToolReturn",
    "default_blocks",
    "open_storage",
    "tool",
]


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
