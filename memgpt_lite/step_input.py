"""What a step is given: the user's message (or, in a group chat, what the
others said since the agent's last turn), or the answers to the tool
calls that wait (the user's approvals and denials, client-side tools'
results: loop/approvals.py), alone or with the client-side tools that the
step's sender runs (loop/client_tools.py). `Approval` and `StepInput` are
also importable from memgpt_lite.models, where they were before."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memgpt_lite.text import CleanStr

# As the tools' own names (tools/schema.py), which OpenAI's API takes.
ToolName = Annotated[CleanStr, Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")]


class Approval(BaseModel):
    """The user's answer to a tool call waiting for approval: run it, or
    not, with a reason the model reads. Without `tool_call_id` it answers
    every call that waits."""

    model_config = ConfigDict(extra="forbid")

    approve: bool
    reason: CleanStr = ""
    tool_call_id: CleanStr | None = None


class ToolReturn(BaseModel):
    """The result of a client-side tool's call, which the client ran
    (Letta's ToolReturn): the model reads `content` as the call's result;
    `ok` false marks it failed (its text then starts "Error:", as every
    failed call's result does)."""

    model_config = ConfigDict(extra="forbid")

    tool_call_id: CleanStr
    content: CleanStr
    ok: bool = True


# The answers to the tool calls that wait (loop/approvals.py): the user's
# approval or denial, or a client-side tool's result.
Answer = Approval | ToolReturn


class ClientTool(BaseModel):
    """A tool that the client sending a step runs itself (Letta's
    client-side tool, `client_tools`): offered to the model for that step
    alone, beside the agent's tools. A call of it ends the step as an
    approval does; the client answers with its result (`ToolReturn`).
    `parameters` is the JSON schema of its arguments, an object schema."""

    model_config = ConfigDict(extra="forbid")

    name: ToolName
    description: CleanStr = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})

    @field_validator("parameters")
    @classmethod
    def _object_schema(cls, parameters: dict[str, Any]) -> dict[str, Any]:
        kind = parameters.get("type", "object")
        if kind != "object":
            raise ValueError(f'an object schema (type "object") is needed, got type {kind!r}')
        properties = parameters.get("properties", {})
        if not isinstance(properties, dict) or not all(
            isinstance(schema, dict) for schema in properties.values()
        ):
            raise ValueError("properties must map each argument's name to its schema (an object)")
        required = parameters.get("required", [])
        if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
            raise ValueError("required must be a list of argument names")
        unknown = [name for name in required if name not in properties]
        if unknown:
            raise ValueError(f"required names arguments not in properties: {', '.join(unknown)}")
        return {**parameters, "type": "object"}


class StepWithClientTools(BaseModel):
    """A step's input (`message`: the user's message, or the answers to the
    calls that wait) with the client-side tools its sender runs."""

    model_config = ConfigDict(extra="forbid")

    message: str | list[Answer]
    client_tools: list[ClientTool] = Field(default_factory=list)


class Said(BaseModel):
    """One message of a group chat as an agent of the group hears it
    (agent/groups.py): `content`, as the model reads it, and who said it,
    stored as the user message's `name`: None for the user's message the
    agent is the first to hear, else `RELAYED_USER` (the user's message,
    heard after another agent) or the id of the agent that said it."""

    model_config = ConfigDict(extra="forbid")

    content: CleanStr
    sender: str | None = None


# The sender of a copy of the user's message, heard after another agent did.
RELAYED_USER = "user"


class GroupTurn(BaseModel):
    """An agent's turn in a group chat (Letta's round-robin groups): what
    was said since its last turn, oldest first, each stored as a user
    message of the step; the step answers them together."""

    model_config = ConfigDict(extra="forbid")

    said: list[Said] = Field(min_length=1)

    def text(self) -> str:
        return "\n\n".join(item.content for item in self.said)


# What a step answers: the user's message (or a group chat's messages), or
# the answers to the tool calls waiting for approval or for a client's
# result (loop/approvals.py), either alone or with the client-side tools of
# the step.
StepInput = str | GroupTurn | Approval | Sequence[Answer] | StepWithClientTools


def plain_input(message: StepInput) -> str | GroupTurn | Approval | Sequence[Answer]:
    """`message` without the client-side tools it may come with."""
    return message.message if isinstance(message, StepWithClientTools) else message
