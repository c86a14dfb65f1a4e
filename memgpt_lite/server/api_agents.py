"""Our API for agents: create, list, get, modify, delete; send a message
(the step's result as JSON, or its events as server-sent events, the same
events as `memgpt-lite send --json`); and message history.

Routes that only touch the database are plain functions, which FastAPI runs
in its thread pool; the step runs in steps.py's workers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, SecretStr, ValidationError

from memgpt_lite.agent.agent import Agent
from memgpt_lite.agent.naming import chosen_names
from memgpt_lite.agent.sizing import check_window, measuring_runner
from memgpt_lite.agent.workspace import Workspace
from memgpt_lite.errors import ConfigError, MemGPTError, validation_message, validation_messages
from memgpt_lite.events import StepEvent, StepFailed, StepFinished
from memgpt_lite.models import AgentSettings, AgentState, Block, Message, StepInput, StepResult
from memgpt_lite.server.bodies import AgentCreate, AgentUpdate, AgentView, SendBody
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.sendonce import SendOnce, send_once
from memgpt_lite.server.sse import frame, sse_response
from memgpt_lite.server.steps import Ended, StepWatch

router = APIRouter(prefix="/api/agents", tags=["agents"])

StepLoad = Callable[[], Agent]


def agent_view(workspace: Workspace, state: AgentState) -> AgentView:
    return AgentView(
        **state.model_dump(
            include={
                "id",
                "name",
                "display_name",
                "llm",
                "system",
                "settings",
                "tool_names",
                "summary",
            }
        ),
        blocks=workspace.blocks(state.id),
        stats=workspace.agent_stats(state.id),
        created_at=state.created_at,
        updated_at=state.updated_at,
    )


def field_problems(exc: ValidationError, where: str) -> str:
    """A pydantic error of a part of the body, each problem named by its field."""
    return "; ".join(
        f"{'.'.join([where, *map(str, e['loc'])])}: {validation_message(e)}"
        for e in exc.errors(include_url=False)
    )


def _checked_blocks(body: AgentCreate) -> list[Block] | None:
    if body.blocks is None:
        return None
    blocks = []
    for i, block in enumerate(body.blocks):
        try:
            blocks.append(Block(**block.model_dump()))
        except ValidationError as exc:
            raise ConfigError(field_problems(exc, f"blocks.{i}")) from None
    return blocks


def create_agent(ctx: ServerContext, user: str, body: AgentCreate) -> Agent:
    """Create the user's agent as `Agent.create` would, from a checked body
    whose endpoint the server allows (endpoints.py), checked before anything
    is stored or reached."""
    ctx.check_endpoint(body.base_url, "base_url")
    ctx.check_endpoint((body.llm_options or {}).get("base_url"), "llm_options.base_url")
    blocks = _checked_blocks(body)
    try:
        settings = None if body.settings is None else AgentSettings(**body.settings)
    except ValidationError as exc:
        raise ConfigError(field_problems(exc, "settings")) from None
    with ctx.workspace.transaction():  # the name derived is still free when stored
        if body.display_name is not None:
            name, display_name = chosen_names(
                ctx.workspace.store, user, body.name, body.display_name
            )
        elif body.name is not None:
            name, display_name = body.name, None
        else:
            raise ConfigError("name: give the agent a name, or a display_name to derive it from")
        return ctx.workspace.create_agent(
            name,
            body.model,
            display_name=display_name,
            blocks=blocks,
            system=body.system,
            base_url=body.base_url,
            settings=settings,
            llm_options={**(body.llm_options or {}), **_key(body.api_key)},
            embedder=body.embedder,
            owner=user,
            tools=body.tools or (),
        )


@router.post("", status_code=201)
def create(body: AgentCreate, ctx: Context, user: User) -> AgentView:
    """Create an agent from blocks, a model, an endpoint and settings."""
    return agent_view(ctx.workspace, create_agent(ctx, user, body).state)


@router.get("")
def list_agents(ctx: Context, user: User) -> list[AgentView]:
    """The user's agents, with their blocks and counts."""
    workspace = ctx.workspace
    return [agent_view(workspace, state) for state, _ in workspace.list_agents(owner=user)]


@router.get("/{agent}")
def get_agent(agent: str, ctx: Context, user: User) -> AgentView:
    """One agent, by name or id."""
    return agent_view(ctx.workspace, ctx.agent_state(user, agent))


def update_agent(ctx: ServerContext, user: str, ref: str, body: AgentUpdate) -> AgentState:
    """Apply the fields of `body` that were given; all or nothing."""
    state = ctx.agent_state(user, ref)

    def change(stored: AgentState) -> None:
        if body.model is not None:
            if not body.model.strip():
                raise ConfigError("the model name is empty")
            stored.llm.model = body.model.strip()
        if body.system is not None:
            stored.system = body.system
        if body.api_key is not None:  # "" removes the agent's own key
            stored.llm.api_key = SecretStr(body.api_key) if body.api_key else None
        for key, value in (body.llm_options or {}).items():
            _assign(stored.llm, key, value, "llm_options")
        for key, value in (body.settings or {}).items():
            _assign(stored.settings, key, value, "settings")

    with ctx.workspace.transaction():
        _rename(ctx, state, body)
        updated = ctx.workspace.update_agent(state.id, change)
        if _WINDOW_SETTINGS & set(body.settings or {}):  # undone if it cannot step in it
            check_window(measuring_runner(updated, ctx.workspace.store))
        return updated


def _rename(ctx: ServerContext, state: AgentState, body: AgentUpdate) -> None:
    """Give the agent the name and display name `body` asks ("" removes the
    display name); what it leaves out stays."""
    name = state.name if body.name is None else body.name
    display_name = state.display_name
    if body.display_name is not None:
        display_name = body.display_name or None
    if display_name is not None and display_name != state.display_name:
        _, display_name = chosen_names(
            ctx.workspace.store, state.owner, name, display_name, state.id
        )
    if (name, display_name) != (state.name, state.display_name):
        ctx.workspace.rename_agent(state, name, display_name)


# The settings that change the window an agent works in, or what fills it.
_WINDOW_SETTINGS = {"working_window", "context_window", "reply_reserve_tokens", "tool_set"}


def _key(api_key: str | None) -> dict[str, str]:
    return {} if api_key is None else {"api_key": api_key}


def _assign(target: BaseModel, key: str, value: Any, where: str) -> None:
    if key not in type(target).model_fields or key in ("model", "base_url"):
        raise ConfigError(f"{where}.{key}: no such option")
    try:
        setattr(target, key, value)  # validated on assignment
    except ValidationError as exc:
        raise ConfigError(f"{where}.{key}: {validation_messages(exc)}") from None


@router.patch("/{agent}")
def modify(agent: str, body: AgentUpdate, ctx: Context, user: User) -> AgentView:
    """Rename an agent, or change its model, system prompt, llm options or settings."""
    return agent_view(ctx.workspace, update_agent(ctx, user, agent, body))


@router.delete("/{agent}", status_code=204)
def delete(agent: str, ctx: Context, user: User) -> Response:
    """Delete an agent with its messages and passages (blocks it shares stay)."""
    ctx.workspace.delete_agent(ctx.agent_state(user, agent).id)
    return Response(status_code=204)


# Sending


def _loader(
    ctx: ServerContext,
    user: str,
    agent_id: str,
    once: SendOnce | None,
    conversation: str | None = None,
) -> StepLoad:
    """What opens the agent (in `conversation`; None: its default one) in
    the step's worker thread (and notes that a keyed send's step ran)."""

    def load() -> Agent:
        if once is not None:
            once.ran = True
        return ctx.step_agent(user, agent_id, conversation)

    return load


async def step_events(
    ctx: ServerContext,
    user: str,
    ref: str,
    message: StepInput,
    once: SendOnce | None = None,
    watch: StepWatch | None = None,
    *,
    conversation: str | None = None,
) -> AsyncIterator[StepEvent]:
    """The events of one step of the user's agent, run in a worker thread.
    `message`: the user's message, or their answer to the waiting calls;
    `once`: the send's idempotency key, if it has one (sendonce.py);
    `watch`: what may stop the step and hears once how it ended;
    `conversation`: the agent's conversation it runs in (None: its default one)."""
    async for batch in step_event_batches(
        ctx, user, ref, message, once, watch, conversation=conversation
    ):
        for event in batch:
            yield event


async def step_event_batches(
    ctx: ServerContext,
    user: str,
    ref: str,
    message: StepInput,
    once: SendOnce | None = None,
    watch: StepWatch | None = None,
    *,
    conversation: str | None = None,
    state: AgentState | None = None,
) -> AsyncIterator[list[StepEvent]]:
    """`step_events`, in the batches they cross to the event loop in
    (steps.py): a route that writes a batch at once writes less often.
    `state`: as in `step_result`."""
    watch = watch or StepWatch()
    handed = False  # to the step runner, which tells `watch` itself
    try:
        ctx.limits.check_message(message)
        if state is None:
            state = await run_in_threadpool(ctx.agent_state, user, ref, conversation)
        if once is not None and (first := await run_in_threadpool(once.claim, state)) is not None:
            replayed, handed = first.events(state.id), True
            watch.tell(replayed[-1])
            yield replayed  # answered before: its end again
            return
        handed = True
        ended = _both(None if once is None else once.ended, watch.ended)
        load = _loader(ctx, user, state.id, once, conversation)
        # One at a time per conversation: an agent's conversations step at once.
        steps_of = conversation or state.id
        try:
            async for batch in ctx.steps.event_batches(steps_of, load, message, ended, watch.stop):
                yield batch
        finally:
            if once is not None:
                once.release()  # only if the step never ran
    except BaseException as exc:
        if not handed:
            watch.tell(exc)
        raise


def _both(first: Ended | None, second: Ended | None) -> Ended | None:
    """One `Ended` that tells both (either may be None)."""
    if first is None or second is None:
        return first or second

    def both(end: StepResult | StepEvent | BaseException | None) -> None:
        first(end)
        second(end)

    return both


def finished(last: StepEvent | None) -> StepResult:
    """A finished step's result, or its error raised (answered by its status)."""
    if isinstance(last, StepFinished):
        return last.result
    if isinstance(last, StepFailed):
        raise last.error or MemGPTError(last.message)
    raise RuntimeError(f"a step ended with {last!r}")  # run_step ends with one of the two


async def step_result(
    ctx: ServerContext,
    user: str,
    ref: str,
    message: StepInput,
    once: SendOnce | None = None,
    watch: StepWatch | None = None,
    *,
    conversation: str | None = None,
    state: AgentState | None = None,
) -> StepResult:
    """The result of one step of the user's agent (in `conversation`; None:
    its default one), run in a worker thread; the step's error raised
    (answered by its status). With `once` (the send's idempotency key), a
    send made already is answered as it was. `watch`: as in `step_events`.
    `state`: the agent `ref` names, when the caller read it already (the
    step reads it again, as it begins)."""
    watch = watch or StepWatch()
    handed = False  # to the step runner, which tells `watch` itself
    try:
        ctx.limits.check_message(message)
        if state is None:
            state = await run_in_threadpool(ctx.agent_state, user, ref, conversation)
        steps_of = conversation or state.id  # one at a time per conversation
        load = _loader(ctx, user, state.id, once, conversation)
        if once is None:
            handed = True
            return await ctx.steps.result(steps_of, load, message, watch.ended, watch.stop)
        if (first := await run_in_threadpool(once.claim, state)) is not None:
            result = first.result_or_raise()  # an LLMError is told below
            handed = True
            watch.tell(result)
            return result
        handed = True
        try:
            ended = _both(once.ended, watch.ended)
            return await ctx.steps.result(steps_of, load, message, ended, watch.stop)
        finally:
            once.release()  # only if the step never ran
    except BaseException as exc:
        if not handed:
            watch.tell(exc)
        raise


@router.post("/{agent}/messages", response_model=None)
async def send(
    agent: str,
    body: SendBody,
    ctx: Context,
    user: User,
    idempotency_key: Annotated[str | None, Header()] = None,
) -> Any:
    """Send a message and run one step. Without `stream`, the step's result
    as JSON (a failing model endpoint is a 502 with the reason); with it, the
    step's events as server-sent events, as `memgpt-lite send --json` prints
    them, ending with `step_finished` or `step_failed`. While a tool call
    waits for approval, a 409 (answer it at /approvals first). Sent again
    with the same `Idempotency-Key`, the first send's answer (sendonce.py)."""
    once = send_once(ctx.workspace.store, idempotency_key, "api.send", body)
    return await run_step_route(ctx, user, agent, body.message, stream=body.stream, once=once)


async def run_step_route(
    ctx: ServerContext,
    user: str,
    ref: str,
    message: StepInput,
    *,
    stream: bool,
    once: SendOnce | None = None,
) -> Response:
    """One step of the user's agent, answered as our send route answers:
    the result as JSON, or with `stream` the events as server-sent events."""
    if stream:
        batches = step_event_batches(ctx, user, ref, message, once)
        # A batch's frames go out in one write.
        return await sse_response(
            "".join(frame(e.model_dump_json(), e.type) for e in batch) async for batch in batches
        )
    result = await step_result(ctx, user, ref, message, once)
    # Serialized by pydantic itself: FastAPI's encoder, for a model returned
    # without a response_model, took a few ms per step.
    return Response(result.model_dump_json(), media_type="application/json")


class MessagePage(BaseModel):
    messages: list[Message]
    total: int


@router.get("/{agent}/messages")
def history(
    agent: str,
    ctx: Context,
    user: User,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
    query: str | None = None,
) -> MessagePage:
    """Message history, oldest first within the page: the newest `limit`
    after skipping `offset` newer ones; with `query`, the messages that match
    it, best first."""
    state = ctx.agent_state(user, agent)
    if query:
        found, total = ctx.workspace.search_history(state.id, query, limit, offset)
    else:
        found, total = ctx.workspace.history_page(state.id, limit, offset)
    return MessagePage(messages=found, total=total)


@router.get("/{agent}/unanswered")
def unanswered_messages(agent: str, ctx: Context, user: User) -> MessagePage:
    """The user's messages whose step stopped before a reply reached the
    user (the endpoint failed, the step was cancelled, or the server was
    killed mid-step, even after tool calls), oldest first. They stay stored
    but are left out of later requests: send one again, or drop it."""
    found = ctx.workspace.unanswered(ctx.agent_state(user, agent))
    return MessagePage(messages=found, total=len(found))
