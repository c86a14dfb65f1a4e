"""Our stored messages as Letta's messages, and Letta's list_messages.

One stored message becomes one or more Letta messages sharing its id, as in
Letta: an assistant message is its inner thought (reasoning_message), then
each tool call (tool_call_message), a send_message call being the reply
itself (assistant_message); a tool result is a tool_return_message; a plain
text answer an assistant_message; the user's message a user_message.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Collection, Iterable, Mapping
from typing import Annotated, Any, NamedTuple

from fastapi import APIRouter, Query

from memgpt_lite.conversations import conversation_ref
from memgpt_lite.models import Message, ToolCall
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.paging import Order, window

router = APIRouter(prefix="/v1/agents", tags=["letta"])

LettaMessage = dict[str, Any]


def otid(message_id: str, index: int) -> str:
    """The offline threading id of the `index`th Letta message made from
    one stored message (or streamed answer), a UUID that is always the same
    for the same two: as Letta's clients use it, to tell messages apart and
    pieces of one together."""
    digest = hashlib.blake2b(f"{message_id}/{index}".encode(), digest_size=16).digest()
    return str(uuid.UUID(bytes=digest))


def _base(message: Message, kind: str) -> LettaMessage:
    return {
        "id": message.id,
        "date": message.created_at,
        "message_type": kind,
        "step_id": message.step_id,
    }


def tool_call(call: ToolCall) -> dict[str, str]:
    return {"name": call.name, "arguments": call.arguments, "tool_call_id": call.id}


def _call(message: Message, call: ToolCall, use_assistant_message: bool) -> LettaMessage:
    text = call.sent_message()
    if use_assistant_message and text is not None:
        return {**_base(message, "assistant_message"), "content": text}
    return {
        **_base(message, "tool_call_message"),
        "tool_call": tool_call(call),
        "tool_calls": [tool_call(call)],
    }


def tool_status(content: str | None, ok: bool | None = None) -> str:
    """success or error. A stored result does not keep whether its call
    failed: a failed call's result is the text starting "Error:" that the
    model saw (tools/schema.py), so that is what is read back."""
    if ok is None:
        ok = not (content or "").startswith("Error:")
    return "success" if ok else "error"


def tool_return(message: Message, ok: bool | None = None) -> LettaMessage:
    status = tool_status(message.content, ok)
    text = message.content or ""
    call_id = message.tool_call_id or ""
    return {
        **_base(message, "tool_return_message"),
        "tool_call_id": call_id,
        "tool_return": text,
        "status": status,
        "name": message.name,
        "stdout": None,
        "stderr": None,
        "tool_returns": [
            {"tool_call_id": call_id, "status": status, "tool_return": text, "type": "tool"}
        ],
    }


def approval_request(message: Message, asking: list[ToolCall]) -> LettaMessage:
    """The calls of `message` that wait for the user's approval, as Letta's
    one approval_request_message (its id, the stored message's, is the
    `approval_request_id` a client answers)."""
    return {
        **_base(message, "approval_request_message"),
        "tool_call": tool_call(asking[0]),
        "tool_calls": [tool_call(call) for call in asking],
    }


def _waiting(message: Message, waiting: Collection[str]) -> list[LettaMessage]:
    """The tool calls of an answer that waits for approval: those that need
    none as tool_call_messages (not assistant_messages: nothing was sent
    yet), then the approval request, last, where Letta's clients look for it."""
    asking = [call for call in message.tool_calls if call.id in waiting]
    others = [call for call in message.tool_calls if call.id not in waiting]
    return [*(_call(message, call, False) for call in others), approval_request(message, asking)]


def to_letta(
    message: Message,
    *,
    use_assistant_message: bool = True,
    ok_by_call: Mapping[str, bool] | None = None,
    waiting: Collection[str] = (),
) -> list[LettaMessage]:
    """One stored message as Letta's messages. `ok_by_call`: whether each
    tool call succeeded, when known (a step's result says so). `waiting`:
    the ids of the calls that wait for the user's approval; an answer that
    holds one is an approval request. Once answered, its calls show as any
    other, and a denied call's result is an error that gives the reason.
    Each has its `otid`, the same wherever it is shown (run_stream.py)."""
    made = _letta(message, use_assistant_message, ok_by_call, waiting)
    for index, item in enumerate(made):
        item["otid"] = otid(message.id, index)
    return made


def _letta(
    message: Message,
    use_assistant_message: bool,
    ok_by_call: Mapping[str, bool] | None,
    waiting: Collection[str],
) -> list[LettaMessage]:
    if message.role == "user":
        return [{**_base(message, "user_message"), "content": message.content or ""}]
    if message.role == "system":
        return [{**_base(message, "system_message"), "content": message.content or ""}]
    if message.role == "tool":
        ok = (ok_by_call or {}).get(message.tool_call_id or "")
        return [tool_return(message, ok)]
    if not message.tool_calls:
        return [{**_base(message, "assistant_message"), "content": message.content or ""}]
    out = []
    if message.content:
        out.append(
            {
                **_base(message, "reasoning_message"),
                "reasoning": message.content,
                "source": "non_reasoner_model",
            }
        )
    if any(call.id in waiting for call in message.tool_calls):
        return out + _waiting(message, waiting)
    out += [_call(message, call, use_assistant_message) for call in message.tool_calls]
    return out


def keep(messages: Iterable[LettaMessage], types: list[str] | None) -> list[LettaMessage]:
    """Letta's include_return_message_types filter."""
    return [m for m in messages if types is None or m["message_type"] in types]


def whole_messages(groups: list[list[LettaMessage]], limit: int | None) -> list[list[LettaMessage]]:
    """Whole stored messages, as many as fit in `limit` Letta messages (at
    least one): a page never splits one, so the next page's cursor (its last
    id) does not skip the rest of it."""
    out: list[list[LettaMessage]] = []
    count = 0
    for group in groups:
        if limit is not None and out and count + len(group) > limit:
            break
        out.append(group)
        count += len(group)
    return out


def _newest(
    ctx: ServerContext,
    where: tuple[str, str | None],
    limit: int,
    use_assistant_message: bool,
    types: list[str] | None,
    waiting: Collection[str],
) -> list[Message]:
    """The newest stored messages of the agent's conversation `where`,
    newest first: enough of them for `limit` Letta messages, read from the
    end of the history (the first page, what clients ask for most, without
    reading a long history whole)."""
    agent_id, conversation = where
    wanted = limit
    while True:
        recent = ctx.workspace.newest_messages(agent_id, wanted, conversation)
        shown = sum(
            len(
                keep(
                    to_letta(m, use_assistant_message=use_assistant_message, waiting=waiting), types
                )
            )
            for m in recent
        )
        if len(recent) < wanted or shown >= limit:
            return recent[::-1]
        wanted *= 4


@router.get("/{agent_id}/messages")
def list_messages(
    agent_id: str,
    ctx: Context,
    user: User,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int | None, Query(ge=1)] = 100,
    order: Order = "desc",
    use_assistant_message: bool = True,
    include_return_message_types: Annotated[list[str] | None, Query()] = None,
    conversation_id: str | None = None,
) -> list[LettaMessage]:
    """Letta's list_messages: the agent's stored messages (of its
    conversation `conversation_id`; else, or "default", of its default
    one), newest first by default; `after` and `before` are message ids in
    that order."""
    conversation = conversation_ref(conversation_id)
    state = ctx.agent_state(user, agent_id, conversation)  # 404: not this agent's
    page = MessagePage(after, before, limit, order, use_assistant_message)
    return listed_messages(ctx, user, (state.id, conversation), page, include_return_message_types)


class MessagePage(NamedTuple):
    """Which page of a conversation's messages a list asks for, as Letta's
    list routes ask (`after` and `before`: message ids in `order`)."""

    after: str | None
    before: str | None
    limit: int | None
    order: Order
    use_assistant_message: bool


def listed_messages(
    ctx: ServerContext,
    user: str,
    where: tuple[str, str | None],
    page: MessagePage,
    types: list[str] | None,
) -> list[LettaMessage]:
    """One page of the stored messages of the user's agent's conversation
    `where` (the agent's id and the conversation's, None for its default
    one), as Letta's messages of `types` (None: all)."""
    agent_id, conversation = where
    waiting = {call.id for call in ctx.agent(user, agent_id, conversation).pending_approvals()}
    as_assistant = page.use_assistant_message
    if page.order == "desc" and page.after is None and page.before is None and page.limit:
        stored = _newest(ctx, where, page.limit, as_assistant, types, waiting)
    else:
        stored = ctx.workspace.all_messages(agent_id, conversation)
        if page.order == "desc":
            stored.reverse()
    return letta_page(stored, page, types, waiting)


def letta_page(
    stored: list[Message], page: MessagePage, types: list[str] | None, waiting: Collection[str]
) -> list[LettaMessage]:
    """One page of `stored` (in the page's order) as Letta's messages of
    `types`: whole stored messages, so that a message shown as several
    Letta messages (sharing its id) is never split by a page's cursor."""
    as_assistant = page.use_assistant_message
    stored = window(stored, lambda m: m.id, page.after, page.before)
    backwards = page.before is not None and page.after is None
    if backwards:
        stored.reverse()  # walk back from the cursor
    groups = [
        keep(to_letta(m, use_assistant_message=as_assistant, waiting=waiting), types)
        for m in stored
    ]
    chosen = whole_messages([g for g in groups if g], page.limit)
    if backwards:
        chosen.reverse()
    return [m for group in chosen for m in group]
