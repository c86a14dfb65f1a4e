"""Request bodies of our own API: strict, so a misspelt field is a 422 that
names it rather than a setting silently ignored."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memgpt_lite.models import DEFAULT_BLOCK_LIMIT, AgentSettings, AgentStats, Block, LLMConfig


class StrictBody(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BlockIn(StrictBody):
    """A new block. No id: a client cannot link a block it does not own."""

    label: str
    value: str = ""
    limit: int = Field(default=DEFAULT_BLOCK_LIMIT, gt=0)
    description: str = ""
    read_only: bool = False


class AgentCreate(StrictBody):
    # The agent's identifier (letters, digits, '_', '.', '-'), unique among
    # the user's agents; derived from `display_name` when left out.
    name: str | None = None
    # Free text shown by Letta's views ("My Helper Bot"); unique too.
    display_name: str | None = None
    model: str
    base_url: str | None = None
    # The endpoint's key for this agent, stored and never shown. Without it,
    # the server's own key goes to the server's endpoint only.
    api_key: str | None = None
    system: str | None = None
    # Default: `persona` and `human` from the templates.
    blocks: list[BlockIn] | None = None
    settings: dict[str, Any] | None = None
    # The other LLMConfig fields: temperature, tool_choice, max_retries, timeout_seconds, stream.
    llm_options: dict[str, Any] | None = None
    embedder: str | None = None
    # Built-in tools to attach by name, such as the multi-agent tools.
    tools: list[str] | None = None


class AgentUpdate(StrictBody):
    name: str | None = None
    display_name: str | None = None  # "" removes it
    model: str | None = None
    api_key: str | None = None
    system: str | None = None
    settings: dict[str, Any] | None = None  # only the settings named change
    llm_options: dict[str, Any] | None = None


class AgentView(BaseModel):
    """An agent as our API shows it (never an API key: none is stored)."""

    id: str
    name: str
    display_name: str | None
    llm: LLMConfig
    system: str
    settings: AgentSettings
    tool_names: list[str]  # the tools attached by name, and the custom tools'
    summary: str
    blocks: list[Block]
    stats: AgentStats
    created_at: datetime
    updated_at: datetime


class SendBody(StrictBody):
    message: str = Field(min_length=1)
    stream: bool = False


class BlockSet(StrictBody):
    value: str
    # Refuse the change if the block no longer holds this text (someone else edited it).
    expected: str | None = None


class PassageIn(StrictBody):
    text: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    created_at: datetime | None = None
    # Ids of passages the text makes out of date (a fact that changed): kept,
    # marked superseded by it.
    replaces: list[str] = Field(default_factory=list)
