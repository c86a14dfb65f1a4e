"""The schema of our agent file format (`{"format": "memgpt_lite.agent",
"version": 1, ...}`): the pydantic models both readers build, `native.py` from
our own files and `letta.py` from Letta's `.af` files.

A module of its own so that the Letta converter and the native reader and
writer depend on it, and not on each other.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, ValidationError, model_validator

from memgpt_lite.errors import ConfigError, validation_message
from memgpt_lite.models import (
    DEFAULT_BLOCK_LIMIT,
    MAX_STORED_INT,
    AgentSettings,
    LLMConfig,
    Role,
    ToolCall,
    utcnow,
)

FORMAT = "memgpt_lite.agent"
VERSION = 1
# The result an import gives a tool call that has none (and does not wait for approval).
MISSING_RESULT = (
    "Error: no result was recorded for this call (it was missing from the imported history)."
)


class AgentFileError(ConfigError):
    """A file that is not an agent file this version can read."""


def _as_utc(value: datetime) -> datetime:
    # A time without a zone is taken as UTC, never as the importing machine's local time.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(_as_utc)]


def _without_old_default_timeout(llm: LLMConfig) -> LLMConfig:
    return llm.model_copy(update={"timeout_seconds": None}) if llm.timeout_seconds == 120.0 else llm


class FileBlock(BaseModel):
    label: str
    value: str = ""
    limit: int = Field(default=DEFAULT_BLOCK_LIMIT, gt=0, le=MAX_STORED_INT)
    description: str = ""
    read_only: bool = False
    updated_at: UtcDatetime | None = None
    # The block's id in the Letta file it came from: agents imported together
    # from one file whose blocks have the same key share one block. Never written.
    key: str | None = Field(default=None, exclude=True)


class FileMessage(BaseModel):
    """A message of recall memory, without its database id and `seq`."""

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    step_id: str | None = None
    created_at: UtcDatetime = Field(default_factory=utcnow)
    vector: str | None = None  # base64 float32, in the file's embedding space

    @model_validator(mode="after")
    def _sendable(self) -> FileMessage:
        # What the chat completions API would refuse to be sent later.
        if self.tool_calls and self.role != "assistant":
            raise ValueError(f"a {self.role} message cannot hold tool calls")
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs its tool_call_id")
        if self.content is None and not self.tool_calls:
            raise ValueError(f"a {self.role} message needs content")
        return self


class FilePassage(BaseModel):
    text: str = Field(min_length=1)
    tags: list[str] = Field(default_factory=list)
    context: str = ""
    created_at: UtcDatetime = Field(default_factory=utcnow)
    vector: str | None = None
    # A fact that changed: the index, in the file's `passages`, of the passage
    # that replaced this one (a file's passages have no ids), and when.
    superseded_by: int | None = Field(default=None, ge=0)
    superseded_at: UtcDatetime | None = None


class FileTool(BaseModel):
    """A custom tool the file carries with its code (a registered tool's, or
    a Letta tool's source), or, for an MCP tool, its server's name. An import
    registers it for the importing user, not trusted unless asked
    (`--trust-tools`): its code runs only once trusted. `json_schema` is the
    function's name, description and parameters, without `request_heartbeat`."""

    name: str
    description: str = ""
    json_schema: dict[str, Any] = Field(default_factory=dict)
    kind: Literal["python", "mcp"] = "python"
    source_code: str | None = None
    mcp_server: str | None = None
    requirements: list[str] = Field(default_factory=list)


class AgentFile(BaseModel):
    """One agent, whole. `messages[context_start:]` are in the context window."""

    format: Literal["memgpt_lite.agent"] = FORMAT
    version: int = VERSION
    exported_at: UtcDatetime = Field(default_factory=utcnow)
    name: str
    created_at: UtcDatetime = Field(default_factory=utcnow)
    system: str
    # Files written before the timeout became a setting hold the 120 s every
    # agent stored then, which no user chose: dropped, as migration m007 does.
    llm: Annotated[LLMConfig, AfterValidator(_without_old_default_timeout)]
    settings: AgentSettings = Field(default_factory=AgentSettings)
    tool_names: list[str] = Field(default_factory=list)
    tools: list[FileTool] = Field(default_factory=list)  # of `tool_names`, those with code
    blocks: list[FileBlock] = Field(default_factory=list)
    messages: list[FileMessage] = Field(default_factory=list)
    context_start: int = Field(default=0, ge=0)
    summary: str = ""
    pressure_warned: bool = False
    embedding_model: str | None = None
    embedding_dimension: int | None = Field(default=None, gt=0, le=MAX_STORED_INT)
    passages: list[FilePassage] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> AgentFile:
        if self.context_start > len(self.messages):
            raise ValueError(
                f"context_start {self.context_start} is past the last of "
                f"{len(self.messages)} messages"
            )
        labels = [b.label for b in self.blocks]
        if len(set(labels)) != len(labels):
            raise ValueError(f"block labels must be unique, got {labels}")
        has_vectors = any(item.vector for item in [*self.messages, *self.passages])
        if has_vectors and not (self.embedding_model and self.embedding_dimension):
            raise ValueError("vectors need embedding_model and embedding_dimension")
        return self


def validation_problems(exc: ValidationError, shown: int = 3) -> str:
    errors = exc.errors(include_url=False)
    problems = [
        f"{'.'.join(str(part) for part in e['loc']) or 'file'}: {validation_message(e)}"
        for e in errors
    ]
    more = f" (and {len(problems) - shown} more)" if len(problems) > shown else ""
    return "; ".join(problems[:shown]) + more
