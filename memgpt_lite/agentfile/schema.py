"""The schema of our agent file format (`{"format": "memgpt_lite.agent",
"version": 2, ...}`): the pydantic models both readers build, `native.py` from
our own files and `letta.py` from Letta's `.af` files.

A module of its own so that the Letta converter and the native reader and
writer depend on it, and not on each other.

Versions: 1 holds the agent with its default conversation (its own
history); 2 adds its other conversations (`conversations`). A file is
written at the lowest version that holds it, so the file of an agent with
no other conversation is still read by a memgpt_lite that reads version 1
only; one with conversations is refused there, with a one-line error that
asks to upgrade, rather than read without them.
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
VERSION = 2  # the newest version, which this memgpt_lite reads and writes
OLDEST_VERSION = 1  # the oldest it reads
CONVERSATIONS_VERSION = 2  # the first with `conversations`
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


class FileConversation(BaseModel):
    """One of the agent's conversations besides its default one (whose
    messages are the file's own `messages`), without its id: its own
    history over the agent's one memory. `messages[context_start:]` are in
    its window, and `window_summary` is its recursive summary, as the
    agent's `context_start` and `summary` are for the default one."""

    summary: str | None = None  # what it is about, as its user says (Letta's `summary`)
    messages: list[FileMessage] = Field(default_factory=list)
    context_start: int = Field(default=0, ge=0)
    window_summary: str = ""
    pressure_warned: bool = False
    created_at: UtcDatetime = Field(default_factory=utcnow)
    updated_at: UtcDatetime = Field(default_factory=utcnow)

    @model_validator(mode="after")
    def _window_in_messages(self) -> FileConversation:
        if self.context_start > len(self.messages):
            raise ValueError(
                f"context_start {self.context_start} is past the last of "
                f"{len(self.messages)} messages"
            )
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
    # The agent's other conversations, oldest first (from version 2).
    conversations: list[FileConversation] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> AgentFile:
        if self.context_start > len(self.messages):
            raise ValueError(
                f"context_start {self.context_start} is past the last of "
                f"{len(self.messages)} messages"
            )
        if self.conversations and self.version < CONVERSATIONS_VERSION:
            raise ValueError(
                f"conversations need version {CONVERSATIONS_VERSION} of the format, "
                f"not {self.version}"
            )
        labels = [b.label for b in self.blocks]
        if len(set(labels)) != len(labels):
            raise ValueError(f"block labels must be unique, got {labels}")
        has_vectors = any(item.vector for item in [*self.all_messages(), *self.passages])
        if has_vectors and not (self.embedding_model and self.embedding_dimension):
            raise ValueError("vectors need embedding_model and embedding_dimension")
        return self

    def all_messages(self) -> list[FileMessage]:
        """The messages of every conversation: the default one's, then each other's."""
        return [*self.messages, *(m for c in self.conversations for m in c.messages)]


def lowest_version(conversations: list[FileConversation]) -> int:
    """The version a file is written at: the lowest that holds what it carries."""
    return CONVERSATIONS_VERSION if conversations else OLDEST_VERSION


def validation_problems(exc: ValidationError, shown: int = 3) -> str:
    errors = exc.errors(include_url=False)
    problems = [
        f"{'.'.join(str(part) for part in e['loc']) or 'file'}: {validation_message(e)}"
        for e in errors
    ]
    more = f" (and {len(problems) - shown} more)" if len(problems) > shown else ""
    return "; ".join(problems[:shown]) + more
