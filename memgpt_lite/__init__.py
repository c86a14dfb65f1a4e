"""memgpt_lite: a small MemGPT-style agent framework.

An agent is a model in a tool-calling loop with three tiers of memory: core
memory blocks in the system message, recall memory of every message, and
archival memory of passages. State lives in SQLite.
"""

from .agent import Agent, default_blocks
from .errors import (
    AlreadyExistsError,
    ConfigError,
    ContextBudgetError,
    LLMError,
    MemGPTError,
    ModelRetry,
    NotFoundError,
    StoreError,
)
from .models import AgentSettings, AgentState, Block, Message, Passage, StepResult
from .store import Store
from .tools import Tool, ToolContext, tool

__all__ = [
    "Agent",
    "AgentSettings",
    "AgentState",
    "AlreadyExistsError",
    "Block",
    "ConfigError",
    "ContextBudgetError",
    "LLMError",
    "MemGPTError",
    "Message",
    "ModelRetry",
    "NotFoundError",
    "Passage",
    "StepResult",
    "Store",
    "StoreError",
    "Tool",
    "ToolContext",
    "default_blocks",
    "tool",
]
