"""The data model: one pydantic model per concept, persisted directly by the store."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from memgpt_lite.names import AGENT_NAME_PATTERN, check_display_name, check_identifier
from memgpt_lite.step_input import Approval as Approval  # what a step is given: importable here
from memgpt_lite.step_input import StepInput as StepInput
from memgpt_lite.step_input import ToolName
from memgpt_lite.text import CleanStr, JSONProblem, clean_arguments, clean_text, parse_arguments
from memgpt_lite.tool_rules import ToolRule

# MemGPT's default size of a core memory block, in characters.
DEFAULT_BLOCK_LIMIT = 5000
# The largest integer SQLite can store: a file's bigger number is refused, not a crash.
MAX_STORED_INT = 2**63 - 1
# Block labels: Letta's newer agents use path-style ones (`system/human`,
# `/note_directory`) and some longer than 64 characters.
MAX_LABEL_LENGTH = 200
LABEL_PATTERN = re.compile(rf"^[A-Za-z0-9_./-]{{1,{MAX_LABEL_LENGTH}}}$")
LABEL_RULE = (
    f"a block label is 1-{MAX_LABEL_LENGTH} letters, digits, '_', '-', '.' or '/', "
    "with no '.' or '..' between slashes"
)


def valid_label(label: str) -> bool:
    """Whether `label` may name a block: it may look like a path, never one
    that climbs out (`..`) or stands still (`.`)."""
    if not LABEL_PATTERN.fullmatch(label) or label.strip("/") == "":
        return False
    return not any(part in (".", "..") for part in label.split("/"))


# The owner of agents made by the command line and the library, and the user
# of a server run without authentication (`memgpt-lite serve --no-auth`).
DEFAULT_USER = "local"
_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def utcnow() -> datetime:
    return datetime.now(UTC)


def _valid_user(user: str) -> str:
    """A user name follows the rule of agent names (it names things in URLs)."""
    if not AGENT_NAME_PATTERN.match(user):
        raise ValueError(
            "a user name is 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
        )
    return user


UserName = Annotated[str, AfterValidator(_valid_user)]

MAX_TAG_LENGTH = 100


def _valid_tags(tags: list[str]) -> list[str]:
    """An agent's tags: each stripped, 1-100 characters, once each (in the
    order given)."""
    kept: list[str] = []
    for tag in tags:
        tag = tag.strip()
        if not tag or len(tag) > MAX_TAG_LENGTH:
            raise ValueError(f"a tag is 1-{MAX_TAG_LENGTH} characters, not blank")
        if tag not in kept:
            kept.append(tag)
    return kept


AgentTags = Annotated[list[CleanStr], AfterValidator(_valid_tags)]


class Block(BaseModel):
    """A labelled piece of core memory, always in the context window.

    A block can be attached to several agents; an edit by one is seen by all.
    """

    # Edits assign `value`: validated, so a lone surrogate is replaced there too.
    model_config = ConfigDict(validate_assignment=True)

    id: str = Field(default_factory=lambda: new_id("block"))
    label: str
    value: CleanStr = ""
    limit: int = Field(default=DEFAULT_BLOCK_LIMIT, gt=0, le=MAX_STORED_INT)
    description: CleanStr = ""
    read_only: bool = False
    updated_at: datetime = Field(default_factory=utcnow)

    @field_validator("label")
    @classmethod
    def _label_is_simple(cls, label: str) -> str:
        if not valid_label(label):
            raise ValueError(LABEL_RULE)
        return label

    @model_validator(mode="after")
    def _value_fits(self) -> Block:
        if len(self.value) > self.limit:
            raise ValueError(
                f"block {self.label!r} holds {len(self.value)} characters, over its limit of "
                f"{self.limit}"
            )
        return self


class BlockVersion(BaseModel):
    """One value a block held: stored by every change of its value, with who
    made it ("agent:NAME" for the agent's own tools, "user" or "user:NAME"
    for a person, "import" for an agent file, "create" for the first value)."""

    block_id: str
    label: str  # the block's label when this value was stored
    value: CleanStr
    author: CleanStr
    created_at: datetime = Field(default_factory=utcnow)
    seq: int | None = None  # assigned by the store: orders one block's versions


SEND_MESSAGE = "send_message"  # the tool whose message the user sees


class ToolCall(BaseModel):
    """One function call requested by the model. `arguments` is the raw JSON text,
    kept as sent: it may not even be valid JSON."""

    id: CleanStr
    name: CleanStr
    arguments: Annotated[str, AfterValidator(clean_arguments)] = "{}"
    # A client-side tool's call, which waits for the client's result
    # (loop/client_tools.py): stored, and dumped only when true.
    client: bool = False

    @model_serializer(mode="plain")
    def _client_only_when_set(self) -> dict[str, Any]:
        # Plain, not wrapping pydantic's own serializer, which cost more per call.
        dumped: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.client:
            dumped["client"] = True
        return dumped

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }

    def send_message_arguments(self) -> dict[str, Any] | None:
        """The parsed arguments of a send_message call that carries a message
        (a string), else None: any other call, or arguments a model garbled."""
        if self.name != SEND_MESSAGE:
            return None
        try:
            arguments = parse_arguments(self.arguments)
        except JSONProblem:
            return None
        return arguments if isinstance(arguments.get("message"), str) else None

    def sent_message(self) -> str | None:
        """The message of a send_message call, if it carries one."""
        arguments = self.send_message_arguments()
        return None if arguments is None else arguments["message"]


Role = Literal["system", "user", "assistant", "tool"]


class Message(BaseModel):
    """A message in recall memory. `seq` orders messages and is set by the store."""

    id: str = Field(default_factory=lambda: new_id("msg"))
    agent_id: str
    role: Role
    content: CleanStr | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_call_id: CleanStr | None = None
    name: CleanStr | None = None  # a tool result's tool; in a group chat, who said it (Said)
    step_id: CleanStr | None = None
    created_at: datetime = Field(default_factory=utcnow)
    seq: int | None = None
    conversation_id: str | None = None  # its conversation's; None: the default one

    def to_openai(self) -> dict[str, Any]:
        """The message as the chat completions API expects it."""
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        if self.role == "tool":
            message["tool_call_id"] = self.tool_call_id
        return message

    def search_text(self) -> str | None:
        """What recall search indexes: what the user said, and the assistant's
        thoughts and replies. Tool results and system notes are left out."""
        if self.role == "user":
            return self.content
        if self.role != "assistant":
            return None
        parts = [self.content or "", *(call.sent_message() or "" for call in self.tool_calls)]
        return "\n".join(p for p in parts if p) or None


class Passage(BaseModel):
    """A piece of archival memory."""

    id: str = Field(default_factory=lambda: new_id("passage"))
    agent_id: str
    text: CleanStr
    tags: list[CleanStr] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)
    # Text around the passage when it was written (the previous turn, the chunk
    # before it): found by word search, at half weight, but not shown as part of
    # it, nor embedded (measured: embedding it too diluted the passage's vector).
    context: CleanStr = ""
    seq: int | None = None
    # A fact that changed: the id of the passage that replaced this one, and
    # when. Kept, not deleted, so the history of a fact can be shown; search
    # ranks such passages after the current ones.
    superseded_by: str | None = None
    superseded_at: datetime | None = None


ToolChoice = Literal["required", "auto"]


def _valid_url(url: str | None) -> str | None:
    # Refused rather than cleaned: a URL with U+FFFD in it would name another place.
    if url is not None and clean_text(url) != url:
        raise ValueError("the base URL holds characters that are not valid text")
    return url


# The serialization context under which `LLMConfig.api_key` is written out:
# the stores' only. Every other dump (views, agent files, routes) leaves it null.
STORED = {"stored": True}


class LLMConfig(BaseModel):
    """Where and how to call the model. The API key comes from the
    environment or an argument at run time; an agent may have one of its own
    (`api_key`: a server's agent on another provider), which is stored but
    write-only: only the store's dump (context `STORED`) holds it."""

    model_config = ConfigDict(validate_assignment=True)

    model: CleanStr
    base_url: Annotated[str | None, AfterValidator(_valid_url)] = None
    api_key: SecretStr | None = None
    tool_choice: ToolChoice = "required"
    temperature: float | None = None
    max_retries: int = Field(default=4, ge=0)
    # The limit on one request as a whole, retries included. None: not set, so
    # $MEMGPT_LITE_TIMEOUT, config.toml or the default applies when the agent runs.
    timeout_seconds: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    # Ask for a streamed answer. Set to False, and stored, when the endpoint
    # turns out not to stream (like the tool_choice fallback).
    stream: bool = True
    # The name of the owner's provider (Letta's bring-your-own-key providers,
    # agent/providers.py) whose endpoint and key the agent's requests use,
    # looked up each time a model client is made, so a new key or URL given
    # to the provider reaches the agent; None: none.
    provider: CleanStr | None = None

    @model_serializer(mode="wrap")
    def _key_only_for_the_store(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        dumped = handler(self)
        if (info.context or {}).get("stored"):
            dumped["api_key"] = None if self.api_key is None else self.api_key.get_secret_value()
        else:
            dumped.pop("api_key", None)  # not even null: no view or file names it
        return dumped


# The tool registry (tools/registry.py makes each definition a `Tool`).

ToolKind = Literal["python", "module", "mcp"]
# "pkg.mod:function": an importable module and the function in it.
MODULE_REFERENCE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")
_KIND_NEEDS = {"python": "source_code", "module": "module", "mcp": "mcp_server"}


class ToolDefinition(BaseModel):
    """A tool in one user's registry, attached to agents by name (their
    `tool_names`). Its call runs outside the caller's process: `python`
    (its `source_code`, one function) and `module` ("pkg.mod:function") in
    a process of their own, `mcp` on its MCP server (`mcp_server`, the name
    of one of the owner's `MCPServer`s). `json_schema` is what the model is
    shown: the function's name, description and parameters, without
    `request_heartbeat` (added when it is offered); for an `mcp` tool, its
    name is the tool's own name on its server (as in Letta's files), which
    `name` may differ from (`SERVER__TOOL`, agent/mcp_servers.py).
    `requirements` are pip requirement strings, checked before each call,
    never installed. A tool that came in an imported agent file runs only
    once `trusted`."""

    model_config = ConfigDict(validate_assignment=True)

    id: str = Field(default_factory=lambda: new_id("tool"))
    owner: UserName = DEFAULT_USER
    name: ToolName
    description: CleanStr = ""
    json_schema: dict[str, Any]
    kind: ToolKind
    source_code: CleanStr | None = None
    module: Annotated[str, Field(pattern=MODULE_REFERENCE.pattern)] | None = None
    mcp_server: CleanStr | None = None
    requirements: list[CleanStr] = Field(default_factory=list)
    trusted: bool = False
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    # Labels the user gave it (Letta's tool tags): kept and shown, never read.
    tags: list[CleanStr] = Field(default_factory=list)

    @model_validator(mode="after")
    def _has_what_its_kind_runs(self) -> ToolDefinition:
        needed = _KIND_NEEDS[self.kind]
        if not getattr(self, needed):
            raise ValueError(f"a {self.kind} tool needs its {needed}")
        if not isinstance(self.json_schema.get("parameters", {}), dict):
            raise ValueError("json_schema.parameters must be a JSON object")
        return self


class MCPServer(BaseModel):
    """An MCP server one user configured, by name: a command run over stdio
    (`command`, `args`, `env`), or a streamable HTTP `url` (http:// or
    https://) with `headers`. The one way to say a server: stored by the
    registry, and handed as it is to the MCP client (tools/mcp/). The values
    of `env` and `headers` are secrets (keys, tokens): show a server with
    `agent.mcp_servers.redacted_server`, never as it is."""

    id: str = Field(default_factory=lambda: new_id("mcp"))
    owner: UserName = DEFAULT_USER
    name: Annotated[str, Field(pattern=AGENT_NAME_PATTERN.pattern)]
    transport: Literal["stdio", "http"]
    command: CleanStr | None = None
    args: list[CleanStr] = Field(default_factory=list)
    env: dict[CleanStr, CleanStr] = Field(default_factory=dict)
    url: Annotated[str | None, AfterValidator(_valid_url)] = None
    headers: dict[CleanStr, CleanStr] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)

    @field_validator("name", mode="before")
    @classmethod
    def _named(cls, name: object) -> object:
        if isinstance(name, str) and not name.strip():
            raise ValueError("an MCP server needs a name")
        if isinstance(name, str) and not AGENT_NAME_PATTERN.match(name):
            raise ValueError(
                f"MCP server name {name!r} must be 1-64 letters, digits, '_', '.' or '-', "
                "starting with a letter or digit"
            )
        return name

    @model_validator(mode="after")
    def _has_its_transports_address(self) -> MCPServer:
        if self.transport == "stdio" and not (self.command or "").strip():
            raise ValueError(f"MCP server {self.name!r}: a stdio server needs a command")
        if self.transport == "http":
            parts = urlsplit(self.url or "")
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(
                    f"MCP server {self.name!r}: the URL must be http:// or https://, "
                    f"got {self.url!r}"
                )
        return self


class AgentSettings(BaseModel):
    """Per-agent settings. Thresholds are fractions of the context window."""

    model_config = ConfigDict(validate_assignment=True)

    context_window: int | None = Field(default=None, gt=0)  # None: from the model's name
    # The window the agent works in when its model's is larger, so a long
    # conversation does not send the whole model window every turn. None: the
    # default (memory/recall/window.py DEFAULT_WORKING_WINDOW); 0: the model's whole window.
    working_window: int | None = Field(default=None, ge=0, le=MAX_STORED_INT)
    reply_reserve_tokens: int | None = Field(default=None, ge=0)  # None: 10%, at most 4096
    warning_threshold: float = Field(default=0.75, gt=0, le=1)
    compaction_threshold: float = Field(default=0.9, gt=0, le=1)
    compaction_target: float = Field(default=0.5, gt=0, lt=1)  # share of room kept
    max_chained_steps: int = Field(default=10, ge=1)
    tool_result_max_chars: int = Field(default=6000, ge=200)
    # The core memory tools: MemGPT's (core_memory_append/replace), Letta's
    # V1 (memory_insert/replace/rethink, memory) or Anthropic's memory tool
    # (files under /memories); see tools/sets.py.
    tool_set: Literal["memgpt", "letta-v1", "anthropic-memory"] = "memgpt"
    # How to embed archival passages and messages: "local" (offline MiniLM),
    # "endpoint:MODEL" (the agent's endpoint), or None for lexical search only.
    embedder: CleanStr | None = None
    # Which tools the model may call when within a step (the rules above).
    tool_rules: list[ToolRule] = Field(default_factory=list)
    # Reflect (loop/reflection.py) in the background after this many turns
    # that no reflection has read yet; None: only when asked.
    reflect_every: int | None = Field(default=None, ge=1, le=MAX_STORED_INT)
    # Labels other agents of the owner find this one by (Letta's agent tags;
    # send_message_to_agents_matching_tags, tools/multi_agent.py).
    tags: AgentTags = Field(default_factory=list)
    # How deep a chain of agents messaging agents may go (A asks B: 1; B then
    # asks C: 2). The strictest limit of the agents in a chain applies.
    max_agent_chain_depth: int = Field(default=3, ge=1, le=100)


class AgentState(BaseModel):
    """Everything that defines an agent, except its blocks and messages.

    The in-context window is the agent's messages from `context_start` (a message
    `seq`) onwards: appending never rewrites the agent row, so two processes
    talking to one agent cannot lose each other's messages.
    """

    model_config = ConfigDict(validate_assignment=True)

    id: str = Field(default_factory=lambda: new_id("agent"))
    name: str  # unique within the owner (names.py)
    # Free text shown for the agent where Letta's names go ("My Helper Bot"),
    # when `name` is derived from it; None: the name is shown.
    display_name: CleanStr | None = None
    # The user the agent belongs to; set when it is created, never changed by
    # `save_agent` or `update_agent`.
    owner: UserName = DEFAULT_USER
    llm: LLMConfig
    system: CleanStr
    block_ids: list[str] = Field(default_factory=list)
    tool_names: list[CleanStr] = Field(default_factory=list)
    context_start: int = 0
    summary: CleanStr = ""
    pressure_warned: bool = False
    # The newest message seq a reflection has read (loop/reflection.py).
    reflected_seq: int = 0
    # Not in its row: the conversation of this copy, whose window fields it has.
    conversation_id: str | None = None
    # Not in its row: the archive attached to the agent besides its own (the
    # id of the row holding its passages; storage/protocols/archives.py).
    attached_archive: str | None = None
    embedding_model: str | None = None  # the space the stored vectors are in
    embedding_dimension: int | None = None
    settings: AgentSettings = Field(default_factory=AgentSettings)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)

    @field_validator("name")
    @classmethod
    def _name_is_simple(cls, name: str) -> str:
        return check_identifier(name)

    @field_validator("display_name")
    @classmethod
    def _display_name_is_one_line(cls, text: str | None) -> str | None:
        return None if text is None else check_display_name(text)

    @property
    def shown_name(self) -> str:
        """The name Letta's views show: the display name, else the name."""
        return self.display_name or self.name


class ApiKey(BaseModel):
    """A user's key to the HTTP server, as stored: only the SHA-256 of its
    secret (see keys.py), never the secret itself. A revoked key is kept, with
    the time it was revoked, so that listing keys shows its history. An
    `admin` key may also do over HTTP what runs code on the server's machine
    (a tool from source, a stdio MCP server); see server/context.py."""

    id: str = Field(default_factory=lambda: new_id("key"))
    user: UserName
    key_hash: str
    created_at: datetime = Field(default_factory=utcnow)
    revoked_at: datetime | None = None
    admin: bool = False

    @field_validator("key_hash")
    @classmethod
    def _hash_is_sha256_hex(cls, key_hash: str) -> str:
        if not _SHA256_HEX.match(key_hash):
            raise ValueError("a key hash is the 64 lowercase hex digits of a SHA-256")
        return key_hash


class AgentStats(BaseModel):
    message_count: int = 0
    passage_count: int = 0
    # The passages of the archive attached to the agent (its archival memory
    # holds them too; storage/protocols/archives.py).
    attached_passage_count: int = 0
    last_active: datetime | None = None
    memory_updated_at: datetime | None = None


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.total_tokens += other.total_tokens
        self.requests += other.requests


class UsageRecord(BaseModel):
    """The tokens one model answer of a step cost, stored with the step.
    `estimated`: the endpoint reported none, so these are our own counts."""

    agent_id: str
    step_id: str
    model: str
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    total_tokens: int = Field(default=0, ge=0)
    requests: int = Field(default=1, ge=0)
    estimated: bool = False
    created_at: datetime = Field(default_factory=utcnow)


class ModelUsage(BaseModel):
    """An agent's stored token totals for one model."""

    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0
    steps: int = 0
    estimated_requests: int = 0  # of `requests`, how many were counted by us


class ToolResult(BaseModel):
    """What one tool call produced, as shown to the model."""

    call: ToolCall
    content: str
    ok: bool


StopReason = Literal[
    "send_message",
    "no_heartbeat",
    "text_reply",
    "step_limit",
    "context_full",  # the step's own messages filled the context window (ContextFullError)
    "tool_rule",  # a tool that ends the step ran, or the tool rules left no tool to call
    "approval_required",
    "cancelled",  # the step was asked to stop (loop/stopping.py), and stopped at a safe point
]


class StepResult(BaseModel):
    """Everything one `Agent.step` did."""

    replies: list[str] = Field(default_factory=list)
    thoughts: list[str] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)
    messages: list[Message] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "send_message"
    prompt_tokens_estimate: int = 0
    llm_seconds: float = 0.0
    compactions: int = 0
    memory_warnings: int = 0
    # The tool calls waiting for the user's approval (stop reason
    # "approval_required"); answer them with Agent.approve or Agent.deny.
    pending_approvals: list[ToolCall] = Field(default_factory=list)
