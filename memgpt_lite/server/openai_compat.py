"""OpenAI's chat completions API in front of our agents, so any OpenAI client
or chat UI talks to an agent that remembers.

- `POST /v1/chat/completions`: `model` names one of the user's agents (name
  or id). The last user message of `messages` runs one step of it; the earlier
  messages are ignored, since the agent keeps its own memory. The answer's
  content is what the agent sent with `send_message` (several replies joined
  by a blank line), or its plain-text answer. The other fields OpenAI accepts
  (temperature, tools, ...) are accepted and ignored.
- A tool call that waits for the user's approval (loop/approvals.py) stops
  the step with an ordinary completion (finish_reason "stop", not
  "tool_calls": the client is not the one to run the agent's tools) whose
  content, after any replies, says what waits and how to answer it (our
  `POST /api/agents/{agent}/approvals`). Until it is answered, a new message
  is a 409 in OpenAI's shape.
- `GET /v1/models`: the user's agents, as models named by the agent's name.
- `POST /v1/voice-beta/{agent_id}/chat/completions` (Letta's voice route):
  the same completion, of the agent the path names, for voice clients that
  take OpenAI's streamed chat (an OpenAI client with that base URL).

Errors on these routes are in OpenAI's shape, `{"error": {"message", "type",
"param", "code"}}`, which OpenAI's clients read (the rest of the server
answers `{"detail": ...}`): `OpenAIRoute` converts them for this router.

With `stream`, the reply's text goes out as `chat.completion.chunk`s while the
model writes it (see `ReplyText` for how the pieces are kept equal to the
content without streaming). The response starts with the reply's first text,
so an error before it (an unknown agent, a failing model endpoint) is an
HTTP error with its status, as without `stream`.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field

from memgpt_lite.errors import MemGPTError, NotFoundError
from memgpt_lite.events import (
    MessageDelta,
    ReplyDelivered,
    RequestSent,
    StepEvent,
    StepFailed,
    StepStarted,
)
from memgpt_lite.models import StepResult, ToolCall, Usage
from memgpt_lite.server.api_agents import finished, step_events, step_result
from memgpt_lite.server.context import Context, Unauthorized, User
from memgpt_lite.server.sendonce import send_once
from memgpt_lite.server.sse import frame, sse_response

# Between two replies of one step, in the content as in the stream.
REPLY_SEPARATOR = "\n\n"

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "invalid_request_error",
    409: "invalid_request_error",
    422: "invalid_request_error",
}


class OpenAIError(Exception):
    """An error answered in OpenAI's shape with this status."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        retry_headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.retry_headers = retry_headers or {}

    def response(self) -> JSONResponse:
        error_type = _ERROR_TYPES.get(self.status, "server_error")
        body = {"message": self.message, "type": error_type, "param": self.param}
        headers = {"WWW-Authenticate": "Bearer"} if self.status == 401 else {}
        headers.update(self.retry_headers)
        return JSONResponse(
            {"error": {**body, "code": self.code}}, status_code=self.status, headers=headers
        )


def _field(location: tuple[Any, ...] | list[Any]) -> str:
    parts = [str(p) for p in location]
    if parts and parts[0] == "body":
        parts = parts[1:]
    return ".".join(parts) or "body"


def _param_and_code(exc: Exception) -> tuple[str | None, str | None]:
    """OpenAI's `param` and `code` of an error, where one applies."""
    if isinstance(exc, Unauthorized):
        return None, "invalid_api_key"
    if isinstance(exc, NotFoundError):
        return "model", "model_not_found"
    if isinstance(exc, RequestValidationError):
        errors = exc.errors()
        if errors and errors[0].get("type") != "json_invalid":
            return _field(errors[0]["loc"]), None
    return None, None


async def app_error(request: Request, exc: Exception) -> OpenAIError:
    """An error as the app answers it on its other routes (the status and
    one-line detail of its handler for the error's class), in OpenAI's
    shape. A body that does not validate is a 400, as OpenAI answers it."""
    handlers = request.app.exception_handlers
    handler = next(handlers[cls] for cls in type(exc).__mro__ if cls in handlers)
    answer = await handler(request, exc)
    detail = str(json.loads(answer.body)["detail"])
    status = 400 if isinstance(exc, RequestValidationError) else answer.status_code
    param, code = _param_and_code(exc)
    # A handler's word on retrying (a send still running: retry soon) is kept.
    retry = {k: v for k, v in answer.headers.items() if k in ("x-should-retry", "retry-after")}
    return OpenAIError(status, detail, param=param, code=code, retry_headers=retry)


class OpenAIRoute(APIRoute):
    """A route whose errors (our errors, a bad body, a missing key) are
    answered in OpenAI's shape instead of the app's `{"detail": ...}`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except OpenAIError as exc:
                return exc.response()
            except (Unauthorized, RequestValidationError, MemGPTError) as exc:
                return (await app_error(request, exc)).response()

        return handle


router = APIRouter(prefix="/v1", tags=["openai"], route_class=OpenAIRoute)


# The request


class ContentPart(BaseModel):
    """A part of a message's content; only text parts are read."""

    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    role: str
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "\n".join(p.text for p in self.content if p.type == "text" and p.text)
        return self.content or ""


class StreamOptions(BaseModel):
    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """OpenAI's request; the fields not named here (temperature, tools, ...)
    are accepted and ignored: the agent's own settings decide."""

    model_config = ConfigDict(extra="ignore")

    model: str = Field(min_length=1)
    messages: list[ChatMessage]
    stream: bool = False
    stream_options: StreamOptions | None = None

    def user_text(self) -> str:
        """The last user message's text: the one the step answers."""
        for message in reversed(self.messages):
            if message.role == "user":
                text = message.text()
                if not text.strip():
                    raise OpenAIError(400, "the last user message has no text", param="messages")
                return text
        raise OpenAIError(400, "messages has no user message", param="messages")


# The answer


def completion_id(step_id: str) -> str:
    return "chatcmpl-" + step_id.removeprefix("step-")


def usage_json(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


# The most of a waiting call's arguments the approval notice quotes.
NOTICE_ARGUMENTS = 300


def approval_notice(calls: list[ToolCall], agent: str) -> str:
    """What a chat client reads of a step that stopped for approval: what
    waits, and how to answer it. In words, not as `tool_calls`: the client
    is not the one to run the agent's tools."""
    waiting = "; ".join(
        f"{call.name}({_quoted(call.arguments)}) [tool call {call.id}]" for call in calls
    )
    return (
        f"[Waiting for your approval: {waiting}. Nothing ran yet, and the agent takes "
        f"no new message until you answer: POST /api/agents/{agent}/approvals with "
        '{"approve": true}, or {"approve": false, "reason": "..."}.]'
    )


def _quoted(arguments: str) -> str:
    if len(arguments) <= NOTICE_ARGUMENTS:
        return arguments
    return arguments[:NOTICE_ARGUMENTS] + "..."


def content_of(result: StepResult, agent: str) -> str:
    """What the user sees of a step: its replies, joined by a blank line,
    then what waits for approval, if anything does."""
    parts = list(result.replies)
    if result.pending_approvals:
        parts.append(approval_notice(result.pending_approvals, agent))
    return REPLY_SEPARATOR.join(parts)


class ReplyText:
    """The reply's text as it streams, from a step's events: `feed` returns
    the next piece to send, so that the pieces joined are `content_of` the
    step's result.

    A `send_message` text streams as `MessageDelta`s and is then delivered
    whole (`ReplyDelivered`), so the deltas are sent and the delivery sends
    only what they did not. A plain-text answer streams as `ThoughtDelta`s,
    which are a thought until it turns out no tool call follows: it is sent
    whole when delivered. A `send_message` text is held back while it is only
    white space (an empty message is refused and never delivered).

    One case cannot be exact, since a piece sent cannot be taken back: a
    call the agent refuses for its arguments was streamed already (a retry
    with the same text, the usual one, comes out exact); what follows then is
    only what was not sent, so nothing is sent twice."""

    def __init__(self) -> None:
        self.content = ""  # the replies delivered, joined
        self.sent = ""  # what went to the client
        # The current answer's send_message texts not yet delivered, one per
        # call, and the index of the call the last delta was of.
        self.pending: list[str] = []
        self.index: int | None = None

    def rest(self, content: str) -> str:
        """What is left to send of the step's whole `content` once it ended
        (the approval notice, which no event streams)."""
        return self._send_up_to(content)

    def _send_up_to(self, target: str) -> str:
        if not target.startswith(self.sent):
            return ""  # the stream went another way than the content: never repeat
        piece, self.sent = target[len(self.sent) :], target
        return piece

    def _joined(self, text: str) -> str:
        return self.content + REPLY_SEPARATOR + text if self.content else text

    def feed(self, event: StepEvent) -> str:
        if isinstance(event, RequestSent):
            self.pending, self.index = [], None
        elif isinstance(event, MessageDelta):
            if event.index != self.index or not self.pending:
                self.pending.append("")
                self.index = event.index
            self.pending[-1] += event.text
            live = REPLY_SEPARATOR.join(text for text in self.pending if text.strip())
            if live:
                return self._send_up_to(self._joined(live))
        elif isinstance(event, ReplyDelivered):
            self.content = self._joined(event.text)
            unsaid = [text for text in self.pending if text.strip()]
            self.pending = unsaid[1:] if unsaid and unsaid[0] == event.text else []
            return self._send_up_to(self.content)
        return ""


class _Chunks:
    """OpenAI's `chat.completion.chunk` frames of one completion. With
    `include_usage`, every chunk has `"usage": null` but the last, which has
    no choices and the usage."""

    def __init__(self, step_id: str, model: str, include_usage: bool) -> None:
        self.include_usage = include_usage
        self.base = {
            "id": completion_id(step_id),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": None,
        }

    def _frame(self, choices: list[dict[str, Any]], usage: Usage | None = None) -> str:
        data: dict[str, Any] = {**self.base, "choices": choices}
        if self.include_usage:
            data["usage"] = None if usage is None else usage_json(usage)
        return frame(data)

    def delta(self, delta: dict[str, str], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return self._frame([choice])

    def role(self) -> str:
        return self.delta({"role": "assistant", "content": ""})

    def end(self, usage: Usage) -> str:
        """The chunk that says why the completion stopped, the usage, and [DONE]."""
        frames = self.delta({}, "stop")
        if self.include_usage:
            frames += self._frame([], usage)
        return frames + frame("[DONE]")


def _error_frame(message: str) -> str:
    """An error after the stream started, as OpenAI sends one (its clients raise it)."""
    return frame(
        {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
    )


async def stream_frames(
    events: AsyncIterator[StepEvent], model: str, include_usage: bool
) -> AsyncIterator[str]:
    """The chunks of a streamed completion. Nothing is yielded before the
    reply's first text (or the step's end), so an error before it is raised
    here, and answered with its status."""
    reply = ReplyText()
    chunks: _Chunks | None = None
    started = False
    last: StepEvent | None = None
    async for event in events:
        last = event
        if isinstance(event, StepStarted):
            chunks = _Chunks(event.step_id, model, include_usage)
        piece = reply.feed(event)
        if piece and chunks is not None:
            first = "" if started else chunks.role()
            started = True
            yield first + chunks.delta({"content": piece})
    if started and isinstance(last, StepFailed):
        yield _error_frame(last.message)
        return
    result = finished(last)  # a step that failed before any text raises here
    if chunks is None:  # no step ends without starting; nothing to answer
        return
    rest = reply.rest(content_of(result, model))
    first = "" if started else chunks.role()
    yield first + (chunks.delta({"content": rest}) if rest else "") + chunks.end(result.usage)


def complete(result: StepResult, model: str) -> dict[str, Any]:
    """The whole completion, once the step ended."""
    step_id = next((m.step_id for m in result.messages if m.step_id), "")
    return {
        "id": completion_id(step_id),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": None,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": content_of(result, model),
                    "refusal": None,
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": usage_json(result.usage),
    }


@router.post("/chat/completions", response_model=None)
async def chat_completions(
    body: ChatCompletionRequest,
    ctx: Context,
    user: User,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> Any:
    """One step of the agent `model` names, on the last user message (sent
    again with the same `Idempotency-Key`, the first answer: sendonce.py)."""
    once = send_once(ctx.workspace.store, idempotency_key, "openai.chat", body)
    if not body.stream:
        result = await step_result(ctx, user, body.model, body.user_text(), once)
        return complete(result, body.model)
    events = step_events(ctx, user, body.model, body.user_text(), once)
    include_usage = body.stream_options is not None and body.stream_options.include_usage
    return await sse_response(stream_frames(events, body.model, include_usage))


class VoiceCompletionRequest(ChatCompletionRequest):
    """The body of Letta's voice route: OpenAI's request, whose `model` may
    be left out (the agent is named by the path)."""

    model: str = ""


@router.post("/voice-beta/{agent_id}/chat/completions", response_model=None)
async def voice_chat_completions(
    agent_id: str,
    body: VoiceCompletionRequest,
    ctx: Context,
    user: User,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> Any:
    """Letta's create_voice_chat_completions: one step of the user's agent
    `agent_id` (an id or a name) on the last user message, as
    `chat_completions` answers it, the completion's `model` the agent."""
    once = send_once(ctx.workspace.store, idempotency_key, "letta.voice", body)
    if not body.stream:
        return complete(await step_result(ctx, user, agent_id, body.user_text(), once), agent_id)
    events = step_events(ctx, user, agent_id, body.user_text(), once)
    include_usage = body.stream_options is not None and body.stream_options.include_usage
    return await sse_response(stream_frames(events, agent_id, include_usage))


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


@router.get("/models")
async def models(ctx: Context, user: User) -> ModelList:
    """The user's agents, each as a model named by the agent's name."""
    agents = await run_in_threadpool(ctx.workspace.list_agents, owner=user)
    cards = [
        ModelCard(id=state.name, created=int(state.created_at.timestamp()), owned_by=user)
        for state, _ in agents
    ]
    return ModelList(data=cards)
