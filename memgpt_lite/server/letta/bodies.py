"""Request bodies of Letta's routes, as letta-client sends them.

Letta's bodies are not strict: a field we do not have is accepted and
ignored (the README names the fields that are honoured), so a client written
for Letta keeps working. The fields we honour are checked.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memgpt_lite.errors import ConfigError

# Letta's own default block limit (CreateBlock.limit).
LETTA_BLOCK_LIMIT = 100_000


class LettaBody(BaseModel):
    model_config = ConfigDict(extra="ignore")


class MemoryBlock(LettaBody):
    label: str
    value: str = ""
    limit: int | None = Field(default=None, gt=0)
    description: str | None = None
    read_only: bool = False


class LlmConfigIn(LettaBody):
    model: str | None = None
    context_window: int | None = Field(default=None, gt=0)


class CreateAgent(LettaBody):
    name: str | None = None
    memory_blocks: list[MemoryBlock] | None = None
    system: str | None = None
    model: str | None = None
    llm_config: LlmConfigIn | None = None
    context_window_limit: int | None = Field(default=None, gt=0)
    embedding: str | None = None
    # Letta's rules, as tools/rules.py reads them (kinds we lack are ignored).
    tool_rules: list[dict[str, Any]] | None = None


class UpdateAgent(LettaBody):
    name: str | None = None
    system: str | None = None
    model: str | None = None


class TextPart(LettaBody):
    type: str = "text"
    text: str | None = None


Content = str | list[TextPart]


class MessageIn(LettaBody):
    role: Literal["user", "system", "assistant"] = "user"
    content: Content


class SendRequest(LettaBody):
    """LettaRequest / LettaStreamingRequest."""

    messages: list[MessageIn] | None = None
    input: Content | None = None
    streaming: bool = False
    stream_tokens: bool = False
    use_assistant_message: bool = True
    include_return_message_types: list[str] | None = None

    def text(self) -> str:
        """The user's text of the request: its user messages' texts (or its
        `input`), joined by blank lines. Anything we cannot take is a 422."""
        parts: list[str] = []
        if self.input is not None:
            parts.append(_content_text(self.input, "input"))
        for n, message in enumerate(self.messages or []):
            if message.role != "user":
                raise ConfigError(
                    f"messages.{n}.role: memgpt-lite takes user messages only, got {message.role!r}"
                )
            parts.append(_content_text(message.content, f"messages.{n}.content"))
        text = "\n\n".join(p for p in parts if p.strip())
        if not text:
            raise ConfigError("messages: give at least one user message with text")
        return text


def _content_text(content: Content, where: str) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for n, part in enumerate(content):
        if part.type != "text" or part.text is None:
            raise ConfigError(f"{where}.{n}: memgpt-lite takes text parts only, got {part.type!r}")
        texts.append(part.text)
    return "\n".join(texts)


class BlockUpdate(LettaBody):
    value: str | None = None
    limit: int | None = Field(default=None, gt=0)
    description: str | None = None
    label: str | None = None
    read_only: bool | None = None


class CreatePassage(LettaBody):
    text: str = Field(min_length=1)
    tags: list[str] | None = None
    created_at: datetime | None = None
