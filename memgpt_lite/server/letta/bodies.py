"""Request bodies of Letta's routes, as letta-client sends them.

Letta's bodies are not strict: a field we do not have is accepted and
ignored (the README names the fields that are honoured), so a client written
for Letta keeps working. The fields we honour are checked.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError

from memgpt_lite.agent.identities import IdentityProperty, IdentityType
from memgpt_lite.errors import ConfigError, validation_message
from memgpt_lite.models import Approval, StepInput
from memgpt_lite.server.letta.configs import EmbeddingConfigPatch, LlmConfigPatch
from memgpt_lite.step_input import Answer, ClientTool, StepWithClientTools, ToolReturn

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
    # Where the model is: one the server allows (server/endpoints.py), or a 403.
    model_endpoint: str | None = None


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
    # Tools by name or id: the built-in ones to attach and the user's
    # registered ones (agents.py); an unknown one is refused.
    tools: list[str] | None = None
    tool_ids: list[str] | None = None
    include_multi_agent_tools: bool = False
    tags: list[str] | None = None
    # A sleep-time agent on the new agent's blocks (groups.py); a
    # "voice_convo_agent" gets a voice group. Other types: our agent as it is.
    agent_type: str | None = None
    enable_sleeptime: bool | None = None
    identity_ids: list[str] | None = None  # the user's identities (identities.py)


class UpdateAgent(LettaBody):
    name: str | None = None
    system: str | None = None
    model: str | None = None
    tags: list[str] | None = None
    embedding: str | None = None
    context_window_limit: int | None = Field(default=None, gt=0)
    # Checked field by field (configs.py): what we do not honour is refused.
    llm_config: LlmConfigPatch | None = None
    embedding_config: EmbeddingConfigPatch | None = None
    # True: a sleep-time agent if it has none; false: its sleep-time agent deleted.
    enable_sleeptime: bool | None = None
    identity_ids: list[str] | None = None  # replace the agent's identities


class TextPart(LettaBody):
    type: str = "text"
    text: str | None = None


Content = str | list[TextPart]


class MessageIn(LettaBody):
    role: Literal["user", "system", "assistant"] = "user"
    content: Content
    # The client's id of the message: a retry with the same one is answered
    # from the first send (server/sendonce.py).
    otid: str | None = None


MessageKind = Literal["user_message", "system_message", "reasoning_message", "assistant_message"]


class UpdateMessage(LettaBody):
    """Letta's modify_message body, its four kinds in one (`message_type`
    says which): a user's or system message's `content`, an answer's
    `reasoning` (its inner thought) or its reply (an assistant_message's
    `content`)."""

    message_type: MessageKind
    content: Content | None = None
    reasoning: str | None = None

    def edit(self, role: str) -> tuple[str, str]:
        """The part of a stored message of `role` to replace (a key of
        history.EDITS), and its new text; a 422 for a kind that is not
        that message's, or a missing field."""
        kind = self.message_type
        if kind in ("user_message", "system_message") and role != kind.removesuffix("_message"):
            raise ConfigError(f"message_type: the message is a {role} message, not a {kind}")
        if kind in ("reasoning_message", "assistant_message") and role != "assistant":
            raise ConfigError(f"message_type: the message is a {role} message, not a {kind}")
        if kind == "reasoning_message":
            if self.reasoning is None:
                raise ConfigError("reasoning: Field required")
            return "inner thought", self.reasoning
        if self.content is None:
            raise ConfigError("content: Field required")
        text = _content_text(self.content, "content")
        return ("reply" if kind == "assistant_message" else "text"), text


class ApprovalReturnIn(LettaBody):
    """One answer of an approval's `approvals` list: Letta's ApprovalReturn
    (type "approval": approve or deny), or a client-side tool's result, its
    ToolReturn (type "tool": `tool_return`, `status`; its `stdout` and
    `stderr` are accepted and not given to the model, as in Letta)."""

    type: str = "approval"
    tool_call_id: str | None = None
    approve: bool | None = None
    reason: str | None = None
    tool_return: Content | None = None
    status: Literal["success", "error"] | None = None
    stdout: list[str] | None = None
    stderr: list[str] | None = None


class ApprovalIn(LettaBody):
    """Letta's ApprovalCreate: the user's answer to the calls waiting for
    approval, as a list (`approvals`), or the older single answer (`approve`,
    `reason`) to the request `approval_request_id`."""

    type: Literal["approval"]
    approve: bool | None = None
    approval_request_id: str | None = None
    reason: str | None = None
    approvals: list[ApprovalReturnIn] | None = None

    def answers(self, where: str) -> list[Answer]:
        if self.approvals is None:
            if self.approve is None:
                raise ConfigError(f"{where}.approve: give approve, or a list of approvals")
            return [Approval(approve=self.approve, reason=self.reason or "")]
        if not self.approvals:
            raise ConfigError(f"{where}.approvals: give at least one approval")
        return [_answer(item, f"{where}.approvals.{n}") for n, item in enumerate(self.approvals)]


class ToolReturnsIn(LettaBody):
    """Letta's ToolReturnCreate (type "tool_return"): client-side tools'
    results, as an approval's "tool" answers are."""

    type: Literal["tool_return"]
    tool_returns: list[ApprovalReturnIn] = Field(min_length=1)
    otid: str | None = None

    def answers(self, where: str) -> list[Answer]:
        return [
            _tool_return(item, f"{where}.tool_returns.{n}")
            for n, item in enumerate(self.tool_returns)
        ]


def _answer(item: ApprovalReturnIn, where: str) -> Answer:
    if item.type == "tool":
        return _tool_return(item, where)
    if item.type != "approval":
        raise ConfigError(
            f"{where}.type: memgpt-lite takes 'approval' (approve or deny) and 'tool' "
            f"(a client-side tool's result), got {item.type!r}"
        )
    if item.tool_call_id is None:
        raise ConfigError(f"{where}.tool_call_id: Field required")
    if item.approve is None:
        raise ConfigError(f"{where}.approve: Field required")
    return Approval(approve=item.approve, reason=item.reason or "", tool_call_id=item.tool_call_id)


def _tool_return(item: ApprovalReturnIn, where: str) -> ToolReturn:
    """A client-side tool's result (Letta's ToolReturn)."""
    for name in ("tool_call_id", "tool_return", "status"):
        if getattr(item, name) is None:
            raise ConfigError(f"{where}.{name}: Field required")
    content = _content_text(item.tool_return or "", f"{where}.tool_return")
    try:
        return ToolReturn(
            tool_call_id=item.tool_call_id or "", content=content, ok=item.status == "success"
        )
    except ValidationError as exc:
        raise ConfigError(f"{where}: {validation_message(exc.errors()[0])}") from None


class ClientToolIn(LettaBody):
    """Letta's ClientToolSchema: a tool the client runs itself."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None


def client_tools(given: list[ClientToolIn], where: str = "client_tools") -> list[ClientTool]:
    """The request's client-side tools, checked: a bad name or schema is a
    422 naming the field."""
    tools = []
    for n, item in enumerate(given):
        values = item.model_dump(exclude_none=True, include={"name", "description", "parameters"})
        try:
            tools.append(ClientTool.model_validate(values))
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"])
            raise ConfigError(f"{where}.{n}.{field}: {validation_message(error)}") from None
    return tools


class OtherIn(LettaBody):
    """A message of a kind we do not take (a client-run tool's return)."""

    type: str


def _kind(value: Any) -> str:
    """Which of Letta's input messages `value` is, by its `type` (a user
    message may leave it out)."""
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if kind is None or kind == "message":
        return "message"
    return kind if kind in ("approval", "tool_return") else "other"


InputMessage = Annotated[
    Annotated[MessageIn, Tag("message")]
    | Annotated[ApprovalIn, Tag("approval")]
    | Annotated[ToolReturnsIn, Tag("tool_return")]
    | Annotated[OtherIn, Tag("other")],
    Discriminator(_kind),
]
Answers = ApprovalIn | ToolReturnsIn


class SendRequest(LettaBody):
    """LettaRequest / LettaStreamingRequest."""

    messages: list[InputMessage] | None = None
    input: Content | None = None
    streaming: bool = False
    stream_tokens: bool = False
    # A streamed send's pings while its step is long silent (run_stream.py).
    include_pings: bool = True
    # A streamed send run apart from its connection, its stream kept (run_stream.py).
    background: bool = False
    use_assistant_message: bool = True
    include_return_message_types: list[str] | None = None
    # Tools the client runs itself, offered to the model for this send.
    client_tools: list[ClientToolIn] | None = None

    def step_input(self) -> StepInput:
        """What the request asks a step to do: answer the user's text, or go
        on with the calls waiting for approval or for the client's results
        (approvals and tool returns, sent alone); with the client-side
        tools it declares."""
        messages = self.messages or []
        message: str | list[Answer]
        if not any(isinstance(m, Answers) for m in messages):
            message = self.text()
        elif self.input is not None or not all(isinstance(m, Answers) for m in messages):
            raise ConfigError("messages: send approvals alone, without user messages")
        else:
            message = [
                answer
                for n, item in enumerate(messages)
                if isinstance(item, Answers)
                for answer in item.answers(f"messages.{n}")
            ]
        declared = client_tools(self.client_tools or [])
        return StepWithClientTools(message=message, client_tools=declared) if declared else message

    def otids(self) -> list[str | None]:
        """The client's ids of the request's messages (Letta's `otid`)."""
        return [getattr(m, "otid", None) for m in self.messages or []]

    def approval_request_ids(self) -> set[str]:
        """The approval requests the request's older-style answers name."""
        return {
            m.approval_request_id
            for m in self.messages or []
            if isinstance(m, ApprovalIn) and m.approvals is None and m.approval_request_id
        }

    def text(self) -> str:
        """The user's text of the request: its user messages' texts (or its
        `input`), joined by blank lines. Anything we cannot take is a 422."""
        parts: list[str] = []
        if self.input is not None:
            parts.append(_content_text(self.input, "input"))
        for n, message in enumerate(self.messages or []):
            if not isinstance(message, MessageIn):
                kind = getattr(message, "type", None)
                raise ConfigError(
                    f"messages.{n}.type: memgpt-lite takes user messages and approvals, "
                    f"got {kind!r}"
                )
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


class CreateBlock(LettaBody):
    """Letta's CreateBlock (blocks.create): a standalone block."""

    label: str
    value: str
    limit: int | None = Field(default=None, gt=0)
    description: str | None = None
    read_only: bool = False


class BlockUpdate(LettaBody):
    value: str | None = None
    limit: int | None = Field(default=None, gt=0)
    description: str | None = None
    label: str | None = None
    read_only: bool | None = None


class IdentityIn(LettaBody):
    """Letta's IdentityCreate, IdentityUpsert and IdentityUpdate: a create
    or upsert without `identifier_key`, `name` or `identity_type` is a 422
    when the identity is made (agent/identities.py)."""

    identifier_key: str | None = None
    name: str | None = None
    identity_type: IdentityType | None = None
    project_id: str | None = None
    agent_ids: list[str] | None = None
    block_ids: list[str] | None = None
    properties: list[IdentityProperty] | None = None


class CreatePassage(LettaBody):
    text: str = Field(min_length=1)
    tags: list[str] | None = None
    created_at: datetime | None = None


class ArchiveIn(LettaBody):
    """Letta's ArchiveCreateRequest (`name` required) and
    ArchiveUpdateRequest: `embedding` (a handle, as an agent's) or the
    older `embedding_config` chooses its embedder, at create only."""

    name: str | None = None
    description: str | None = None
    embedding: str | None = None
    embedding_config: EmbeddingConfigPatch | None = None


class PassageBatch(LettaBody):
    passages: list[CreatePassage]


class PassageSearch(LettaBody):
    """Letta's PassageSearchRequest."""

    query: str | None = None
    agent_id: str | None = None
    archive_id: str | None = None
    tags: list[str] | None = None
    tag_match_mode: Literal["any", "all"] = "any"
    limit: int = Field(default=50, ge=1, le=100)
    start_date: datetime | None = None
    end_date: datetime | None = None


class PipRequirementIn(LettaBody):
    """Letta's PipRequirement: a project and, optionally, its version
    ("2.31" pins it; a specifier such as ">=2.31" is kept as given)."""

    name: str = Field(min_length=1)
    version: str | None = None

    def text(self) -> str:
        """As a PEP 508 requirement string."""
        name, version = self.name.strip(), (self.version or "").strip()
        if not version:
            return name
        return f"{name}{version}" if version[0] in "<>=!~" else f"{name}=={version}"


class ToolIn(LettaBody):
    """What Letta's ToolCreate and ToolUpdate share (see server/letta/tools.py
    for what is honoured)."""

    description: str | None = None
    tags: list[str] | None = None
    source_type: str | None = None
    json_schema: dict[str, Any] | None = None
    pip_requirements: list[PipRequirementIn] | None = None
    npm_requirements: list[dict[str, Any]] | None = None
    default_requires_approval: bool | None = None


class ToolCreate(ToolIn):
    source_code: str


class ToolUpdate(ToolIn):
    source_code: str | None = None


class ToolRunFromSource(ToolIn):
    """Letta's ToolRunFromSource: a tool's source, run once on `args` with
    `env_vars` (server/letta/tool_runs.py)."""

    source_code: str
    args: dict[str, Any] = Field(default_factory=dict)
    env_vars: dict[str, str] = Field(default_factory=dict)
    name: str | None = None


class CodeInput(LettaBody):
    """Letta's CodeInput: source to read a tool's JSON schema from."""

    code: str
    source_type: str | None = "python"


class ToolArgs(LettaBody):
    """The arguments of an agent's tool run by its user (agents.tools.run)."""

    args: dict[str, Any] = Field(default_factory=dict)
