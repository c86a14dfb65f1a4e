"""The history of a Letta agent file, converted to our messages (see `letta.py`).

- Messages are put in order of `created_at` (stable; Letta's files list them
  out of order at times), each tool call followed by its results.
- Letta's system messages (its compiled prompt) are left out: ours is built on
  every call. Its summary of evicted messages (a system alert) becomes the
  agent's summary; other system alerts, heartbeats and logins become short
  system notes.
- User messages wrapped as `{"type": "user_message", ...}` are unwrapped.
- Letta's steps (one model call each) become ours (one turn each): what
  follows a user message takes its step.
- An assistant's reasoning parts, or `inner_thoughts` inside tool arguments,
  become its thought (the content of a message with tool calls). A reply with
  reasoning becomes the thought and a `send_message` call, as MemGPT stores it.
- Approval messages (Letta's human-in-the-loop tool calls) become the tool
  calls they asked for and the results or refusals they got. A request
  still waiting for approval as the history's last answer keeps waiting here
  (stored with no results, for the user to approve or deny); an earlier one
  that got no answer gets an error result for each call, since a history
  that goes on after an unanswered call is invalid.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, Field

from memgpt_lite.agentfile.schema import MISSING_RESULT, FileMessage
from memgpt_lite.models import SEND_MESSAGE, ToolCall
from memgpt_lite.text import JSONProblem, parse_json


def _none_as_empty(value: Any) -> Any:
    return [] if value is None else value


T = TypeVar("T")
# Letta writes null for many empty lists.
ListOrNull = Annotated[list[T], BeforeValidator(_none_as_empty)]

AUTOMATED = "[This is an automated system message hidden from the user]"
# Letta's summary message: "Note: prior messages (N of M total messages) have
# been hidden from view ... The following is a summary of the previous N messages:"
SUMMARY_PREAMBLE = re.compile(
    r"^.*?The following is a summary of the previous[^:\n]*:\s*", re.DOTALL | re.IGNORECASE
)
SENT = "Sent message successfully."
NOT_APPROVED = (
    "Error: this call was waiting for the user's approval when the agent was exported; "
    "it did not run."
)
NOT_APPROVED_NOTE = "tool calls waiting for approval got an error result (they never ran)"
NO_RESULT_NOTE = "tool calls of the last answer had no result; each was given an error result"


class LettaFunction(BaseModel):
    name: str = Field(min_length=1)
    arguments: str | dict[str, Any] = "{}"


class LettaToolCall(BaseModel):
    id: str = Field(min_length=1)
    function: LettaFunction


class LettaToolReturn(BaseModel):
    tool_call_id: str | None = None
    func_response: str | None = None


class LettaApproval(BaseModel):
    """One answer of an approval message: the call's result, or a refusal."""

    tool_call_id: str | None = None
    approve: bool | None = None
    reason: str | None = None
    status: str | None = None
    func_response: str | None = None


class LettaMessage(BaseModel):
    id: str | None = None
    role: str
    content: str | list[dict[str, Any]] | None = None
    text: str | None = None  # before content parts
    name: str | None = None
    tool_calls: ListOrNull[LettaToolCall] = Field(default_factory=list)
    tool_call_id: str | None = None
    tool_returns: ListOrNull[LettaToolReturn] = Field(default_factory=list)
    approvals: ListOrNull[LettaApproval] = Field(default_factory=list)
    approve: bool | None = None
    denial_reason: str | None = None
    step_id: str | None = None
    created_at: datetime | None = None


@dataclass
class _Item:
    message: FileMessage
    when: datetime | None  # Letta's created_at of the message it came from
    in_context: bool
    from_approval: bool = False  # a result read from an approval answer
    summary: bool = False  # Letta's summary of evicted messages, not a message
    awaiting_approval: bool = False  # calls of an approval request


@dataclass
class History:
    messages: list[FileMessage]
    start: int  # where the context window starts
    summary: str = ""


def convert_history(
    messages: list[LettaMessage], in_context: set[int] | None, notes: Counter[str]
) -> History:
    """Our messages for Letta's `messages`, of which positions `in_context`
    (None: all) were in Letta's context window."""
    items: list[_Item] = []
    summaries: list[tuple[datetime | None, str]] = []
    for position, letta in enumerate(messages):
        inside = in_context is None or position in in_context
        for item in _convert(letta, inside, notes):
            if item.summary:
                if item.message.content:
                    summaries.append((letta.created_at, item.message.content))
            else:
                items.append(item)
    ordered = _in_time_order(items, notes)
    start = next((i for i, item in enumerate(ordered) if item.in_context), len(ordered))
    summary = ""
    if summaries:
        summary = max(summaries, key=lambda s: _sort_key(s[0]))[1]
        notes["Letta's summary of earlier messages became the agent's summary"] += 1
    return History(_as_turns([item.message for item in ordered]), start, summary)


def _as_turns(messages: list[FileMessage]) -> list[FileMessage]:
    """`messages` with our steps: Letta's step is one model call, ours one
    turn, from the user's message to the next; a step tells whether the
    user's message was answered (memory/recall/answered.py). So what follows
    a user message that has a step takes that step."""
    turn: str | None = None
    turns = []
    for message in messages:
        if message.role == "user":
            turn = message.step_id
        elif turn is not None and message.step_id not in (None, turn):
            message = message.model_copy(update={"step_id": turn})
        turns.append(message)
    return turns


# Order


def _sort_key(when: datetime | None) -> datetime:
    if when is None:
        return datetime.min.replace(tzinfo=UTC)
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def _in_time_order(items: list[_Item], notes: Counter[str]) -> list[_Item]:
    """`items` sorted by time, stably, in units: a message with tool calls, then
    one result per call (a tool message's over an approval answer's)."""
    owner: dict[str, int] = {}
    for index, item in enumerate(items):
        for call in item.message.tool_calls:
            owner.setdefault(call.id, index)
    results: dict[str, _Item] = {}
    for item in items:
        call_id = item.message.tool_call_id
        if item.message.role != "tool" or call_id not in owner:
            continue
        if call_id not in results or (results[call_id].from_approval and not item.from_approval):
            results[call_id] = item
        elif not item.from_approval:
            notes["repeated tool results were dropped"] += 1
    units: list[tuple[datetime, list[_Item]]] = []
    key = _sort_key(None)
    for item in items:
        if item.message.role == "tool" and item.message.tool_call_id in owner:
            continue  # placed after its call below
        key = _sort_key(item.when) if item.when else key  # no time: stays after the one before
        unit = [item]
        unit += [results.pop(call.id) for call in item.message.tool_calls if call.id in results]
        units.append((key, unit))
    in_order = [unit for _, unit in sorted(units, key=lambda unit: unit[0])]
    back = sum(1 for (a, _), (b, _) in zip(units, units[1:], strict=False) if b < a)
    if back:
        notes[
            f"the history was listed out of time order ({back} steps back in time); "
            "it was put in order of created_at, each tool call followed by its results"
        ] += 1
    for position, unit in enumerate(in_order):
        unanswered = len(unit) == 1 and bool(unit[0].message.tool_calls)
        if position == len(in_order) - 1 and unanswered:
            # The last answer, with no results: only an approval request may
            # wait (pair_tool_calls leaves it so); any other never ran.
            if not unit[0].awaiting_approval:
                _answer_missing(unit, MISSING_RESULT, notes, NO_RESULT_NOTE)
        elif unit[0].awaiting_approval:
            _answer_missing(unit, NOT_APPROVED, notes, NOT_APPROVED_NOTE)
    return [item for unit in in_order for item in unit]


def _answer_missing(unit: list[_Item], content: str, notes: Counter[str], note: str) -> None:
    """Give each call of `unit` that has no result one with `content`, keeping
    call order, and count `note` for each."""
    request, answered = unit[0], {item.message.tool_call_id: item for item in unit[1:]}
    unit[1:] = []
    for call in request.message.tool_calls:
        if call.id in answered:
            unit.append(answered[call.id])
            continue
        notes[note] += 1
        waiting = FileMessage(
            role="tool",
            content=content,
            tool_call_id=call.id,
            name=call.name,
            step_id=request.message.step_id,
            created_at=request.message.created_at,
        )
        unit.append(_Item(waiting, request.when, request.in_context))


# One message


def _text(message: LettaMessage, kind: str = "text") -> str:
    if isinstance(message.content, str):
        return message.content if kind == "text" else ""
    parts = [
        part.get(kind)
        for part in message.content or []
        if part.get("type") == kind and isinstance(part.get(kind), str)
    ]
    if kind == "text" and not parts and message.text:
        return message.text
    return "\n".join(p for p in parts if p)


def _packed(text: str) -> dict[str, Any] | None:
    """Letta's JSON-in-text messages: `{"type": "user_message" | "heartbeat" | ...}`."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        packed = parse_json(text)
    except JSONProblem:
        return None
    return packed if isinstance(packed, dict) and isinstance(packed.get("type"), str) else None


def _plain(text: Any) -> str:
    return str(text or "").replace(AUTOMATED, "").strip()


def _marker(packed: dict[str, Any], notes: Counter[str]) -> tuple[str, str] | None:
    """(role, text) for Letta's packed user or system message; None if not one."""
    kind = packed["type"]
    if kind == "user_message" and isinstance(packed.get("message"), str):
        return "user", packed["message"]
    if kind == "heartbeat":
        notes["heartbeat messages became short system notes"] += 1
        return "system", f"Heartbeat: {_plain(packed.get('reason')) or 'control returned'}"
    if kind == "login":
        notes["login messages became short system notes"] += 1
        last = _plain(packed.get("last_login")) or "unknown"
        return "system", f"The user logged in (last login: {last})."
    if kind == "system_alert":
        message = str(packed.get("message") or "")
        if SUMMARY_PREAMBLE.match(message):
            return "summary", SUMMARY_PREAMBLE.sub("", message, count=1).strip()
        notes["system alerts became short system notes"] += 1
        return "system", f"System alert: {_plain(message)}"
    return None


def _tool_call(call: LettaToolCall) -> tuple[ToolCall, str]:
    """The call, and inner thoughts Letta may have put in its arguments."""
    arguments = call.function.arguments
    if isinstance(arguments, dict):
        arguments = json.dumps(arguments)
    thought = ""
    try:
        parsed = parse_json(arguments)
    except JSONProblem:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("inner_thoughts"), str):
        thought = parsed.pop("inner_thoughts")
        arguments = json.dumps(parsed)
    return ToolCall(id=call.id, name=call.function.name, arguments=arguments), thought


def _convert(letta: LettaMessage, inside: bool, notes: Counter[str]) -> list[_Item]:
    role = letta.role.lower()
    when = {"created_at": letta.created_at} if letta.created_at else {}
    common: dict[str, Any] = {"step_id": letta.step_id, **when}

    def item(**fields: Any) -> _Item:
        return _Item(FileMessage(**common, **fields), letta.created_at, inside)

    if role in ("system", "user"):
        text = _text(letta)
        packed = _packed(text)
        marker = _marker(packed, notes) if packed else None
        if marker is None:
            if role == "system":
                return []  # Letta's compiled prompt: ours is rebuilt on every call
            return [item(role="user", content=text)] if text.strip() else []
        kind, text = marker
        if kind == "summary":  # picked out by convert_history
            return [_Item(FileMessage(role="system", content=text), None, inside, summary=True)]
        return [item(role=kind, content=text)] if text.strip() else []
    if role == "approval":
        notes["approval messages (Letta's human-in-the-loop tool calls and answers) "
              "became tool calls and results"] += 1  # fmt: skip
        if letta.tool_calls:
            converted = _assistant(letta, inside, notes, common)
            for c in converted:
                c.awaiting_approval = True
            return converted
        return _approval_answers(letta, inside, common)
    if role == "assistant":
        return _assistant(letta, inside, notes, common)
    if role in ("tool", "function"):
        text = _text(letta)
        returns = [r for r in letta.tool_returns if r.tool_call_id]
        if not returns and letta.tool_call_id:
            returns = [LettaToolReturn(tool_call_id=letta.tool_call_id, func_response=text)]
        return [
            item(
                role="tool",
                content=r.func_response if r.func_response is not None else text,
                tool_call_id=r.tool_call_id,
                name=letta.name,
            )
            for r in returns
        ]
    notes[f"messages with role {letta.role!r} were left out"] += 1
    return []


def _assistant(
    letta: LettaMessage, inside: bool, notes: Counter[str], common: dict[str, Any]
) -> list[_Item]:
    pairs = [_tool_call(c) for c in letta.tool_calls]
    text, reasoning = _text(letta), _text(letta, "reasoning")
    reasoning = reasoning or "\n".join(thought for _, thought in pairs if thought)
    calls = [call for call, _ in pairs]

    def item(**fields: Any) -> _Item:
        return _Item(FileMessage(**common, **fields), letta.created_at, inside)

    if not calls and text.strip() and reasoning.strip():
        # A reply with its reasoning: the thought, and the reply sent as MemGPT sends it.
        notes["replies with reasoning became a thought and a send_message call"] += 1
        call_id = f"letta-reply-{letta.id or id(letta)}"
        reply = ToolCall(id=call_id, name=SEND_MESSAGE, arguments=json.dumps({"message": text}))
        return [
            item(role="assistant", content=reasoning, tool_calls=[reply]),
            item(role="tool", content=SENT, tool_call_id=call_id, name=SEND_MESSAGE),
        ]
    content = "\n".join(part for part in (reasoning, text) if part.strip()) if calls else text
    content = content or reasoning
    if not calls and not content.strip():
        return []
    return [item(role="assistant", content=content or None, tool_calls=calls)]


def _approval_answers(letta: LettaMessage, inside: bool, common: dict[str, Any]) -> list[_Item]:
    answers = list(letta.approvals)
    if not answers and letta.tool_call_id:  # the older form: one answer on the message
        answers = [
            LettaApproval(
                tool_call_id=letta.tool_call_id, approve=letta.approve, reason=letta.denial_reason
            )
        ]
    out = []
    for answer in answers:
        if not answer.tool_call_id:
            continue
        if answer.func_response is not None:
            content = answer.func_response
        elif answer.approve is False:
            reason = f" User reason: {answer.reason}" if answer.reason else ""
            content = f"Error: request to call tool denied.{reason}"
        else:
            continue  # approved: its result is the tool message that follows
        message = FileMessage(
            role="tool", content=content, tool_call_id=answer.tool_call_id, **common
        )
        out.append(_Item(message, letta.created_at, inside, from_approval=True))
    return out
