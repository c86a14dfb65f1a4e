"""Rows as models, for every backend: messages and passages built without
validating them again (they were validated on the way in, and revalidating a
long window on every turn cost more than reading it), the duplicate key of a
passage's text, tool calls as stored JSON, and token usage rows as models.
The SQL that reads them selects the columns in the order these functions
read them (`MESSAGE_COLUMNS`, `PASSAGE_COLUMNS`, ...).

A row holds what the database returns: a time is a datetime (PostgreSQL) or
ISO 8601 text (SQLite), a passage's tags an array or JSON text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from sys import intern
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel

from memgpt_lite.frozen import FrozenList, KeptMessage, KeptToolCall
from memgpt_lite.models import Message, ModelUsage, Passage, ToolCall, UsageRecord
from memgpt_lite.storage.core.sql import as_list, stored_datetime

M = TypeVar("M", bound=BaseModel)
C = TypeVar("C", bound=ToolCall)
_set = object.__setattr__


def trusted(cls: type[M], values: dict[str, Any], fields_set: set[str] | None = None) -> M:
    """An instance of `cls` holding `values` (every field, already of its
    type), without validation: for rows the store validated on the way in,
    where validating them again on every read (CleanStr, the arguments
    regex, parsing times) was most of the cost of loading a long window.
    What `model_construct` does for a model with no aliases, defaults to
    fill, extras or private attributes, at a fifth of its cost; a test
    checks the result equals the validated model. `fields_set`: the fields
    given, when not all of `values` were (some hold their defaults)."""
    instance = cls.__new__(cls)
    _set(instance, "__dict__", values)
    _set(instance, "__pydantic_fields_set__", set(values) if fields_set is None else fields_set)
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance


def text_hash(text: str) -> str:
    """The key for skipping exact duplicates: the text with surrounding space trimmed."""
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


def tool_calls_json(message: Message) -> str | None:
    """Tool calls as the stores keep them: JSON text, or NULL for none."""
    return json.dumps([c.model_dump() for c in message.tool_calls]) if message.tool_calls else None


# A usage record's columns, in the order `usage_records` reads them.
USAGE_RECORD_KEYS = (
    "agent_id",
    "step_id",
    "model",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "requests",
    "estimated",
    "created_at",
)


def usage_records(rows: Iterable[Sequence[Any]]) -> list[UsageRecord]:
    """Usage records from rows of USAGE_RECORD_KEYS (a stored 0/1 or ISO
    time is validated into its field's type)."""
    return [UsageRecord(**dict(zip(USAGE_RECORD_KEYS, row, strict=True))) for row in rows]


def model_usages(rows: Iterable[Sequence[Any]]) -> list[ModelUsage]:
    """Totals per model from rows of (model, prompt, completion and total
    tokens, requests, steps, estimated requests)."""
    return [
        ModelUsage(
            model=model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=total,
            requests=requests,
            steps=steps,
            estimated_requests=estimated,
        )
        for model, prompt, completion, total, requests, steps, estimated in rows
    ]


# A message's stored columns, as `message_row` gives them.
MESSAGE_FIELDS = (
    "id, agent_id, role, content, tool_calls, tool_call_id, name, step_id, created_at, search_text,"
    " conversation_id"
)
MESSAGE_COLUMNS = (
    "m.seq, m.id, m.agent_id, m.role, m.content, m.tool_calls, m.tool_call_id, m.name,"
    " m.step_id, m.created_at, m.conversation_id"
)
# Where a row of MESSAGE_COLUMNS has its conversation's id, and where a
# column selected after them (a ranking's score) is.
CONVERSATION_AT, AFTER_MESSAGE = 10, 11
PASSAGE_COLUMNS = (
    "p.seq, p.id, p.agent_id, p.text, p.tags, p.created_at, p.context,"
    " p.superseded_by, p.superseded_at"
)
_CALL_KEYS = {"id", "name", "arguments"}


class Record(NamedTuple):
    """One stored message, its values already of their types (immutable)."""

    seq: int
    id: str
    agent_id: str
    role: str
    content: str | None
    tool_calls: tuple[tuple[str, str, str, bool], ...]  # (id, name, arguments, client)
    tool_call_id: str | None
    name: str | None
    step_id: str | None
    created_at: datetime
    conversation_id: str | None


def record_from_row(row: Sequence[Any]) -> Record:
    """A message's record from a row of MESSAGE_COLUMNS (and more, ignored)."""
    seq, id_, agent_id, role, content, calls, tool_call_id, name, step_id, created = row[:10]
    conversation_id = row[CONVERSATION_AT]
    if not isinstance(created, datetime):
        created = datetime.fromisoformat(created)
    return Record(
        seq,
        id_,
        _shared(agent_id),
        _shared(role),
        content,
        _calls(calls),
        tool_call_id,
        _shared(name),
        step_id,
        created,
        _shared(conversation_id),
    )


def _shared(text: Any) -> Any:
    """`text` as the one string object of its value: the agent id, role and
    tool names repeat from message to message, and each distinct object is
    memory that every kept window holds (storage/core/window_cache.py)."""
    return intern(text) if type(text) is str else text


def _call_values(text: str | None) -> list[dict[str, Any]]:
    """The stored tool calls' values (id, name, arguments; `client` for a
    client-side tool's call). A call of another shape than the store writes
    most (a client-side call, a row written by hand) is validated."""
    if not text:
        return []
    calls = []
    for call in json.loads(text):
        if not (
            isinstance(call, dict)
            and call.keys() == _CALL_KEYS
            and all(isinstance(value, str) for value in call.values())
        ):
            call = ToolCall.model_validate(call).model_dump()
        calls.append(call)
    return calls


def _tool_calls(text: str | None) -> list[ToolCall]:
    """The stored tool calls, trusted."""
    if not text:
        return []
    return [_call(ToolCall, call) for call in _calls(text)]


def _calls(text: str | None) -> tuple[tuple[str, str, str, bool], ...]:
    """The stored tool calls as (id, name, arguments, client)."""
    return tuple(
        (c["id"], _shared(c["name"]), c["arguments"], c.get("client", False))
        for c in _call_values(text)
    )


def message_from_record(record: Record) -> Message:
    """A new Message of `record`, trusted: the store validated it on the way in."""
    calls = [_call(ToolCall, call) for call in record.tool_calls]
    return trusted(Message, _message_dict(record, calls))


def kept_message_from_record(record: Record) -> KeptMessage:
    """`message_from_record`, read-only (a `KeptMessage`)."""
    calls = FrozenList(_call(KeptToolCall, call) for call in record.tool_calls)
    return trusted(KeptMessage, _message_dict(record, calls))


_CALL_FIELDS = frozenset(_CALL_KEYS)


def _call(cls: type[C], call: tuple[str, str, str, bool]) -> C:
    """A stored tool call, trusted; `client` counts as given only when set,
    as for a validated call that left it out."""
    values = {"id": call[0], "name": call[1], "arguments": call[2], "client": call[3]}
    return trusted(cls, values, {*_CALL_FIELDS, "client"} if call[3] else set(_CALL_FIELDS))


def _message_dict(record: Record, tool_calls: list[ToolCall]) -> dict[str, Any]:
    seq, id_, agent_id, role, content, _, tool_call_id, name, step_id, created, conversation = (
        record
    )
    return {
        "id": id_,
        "agent_id": agent_id,
        "role": role,
        "content": content,
        "tool_calls": tool_calls,
        "tool_call_id": tool_call_id,
        "name": name,
        "step_id": step_id,
        "created_at": created,
        "seq": seq,
        "conversation_id": conversation,
    }


def message_row(message: Message, time: Callable[[datetime], Any]) -> tuple[Any, ...]:
    """A message as stored, in the order of MESSAGE_FIELDS (its time as
    `time` stores it)."""
    return (
        message.id,
        message.agent_id,
        message.role,
        message.content,
        tool_calls_json(message),
        message.tool_call_id,
        message.name,
        message.step_id,
        time(message.created_at),
        message.search_text(),
        message.conversation_id,
    )


def message_edit(message: Message) -> tuple[str | None, str | None, str | None]:
    """What editing a message rewrites: its content, tool calls (stored
    JSON) and search text."""
    return message.content, tool_calls_json(message), message.search_text()


def message_from_row(row: Sequence[Any]) -> Message:
    """A message from a row of MESSAGE_COLUMNS (and more, ignored), trusted:
    built at once, not through a `Record` (a window of thousands is read so
    on every turn where no cache keeps it)."""
    seq, id_, agent_id, role, content, calls, tool_call_id, name, step_id, created = row[:10]
    values = {
        "id": id_,
        "agent_id": agent_id,
        "role": role,
        "content": content,
        "tool_calls": _tool_calls(calls),
        "tool_call_id": tool_call_id,
        "name": name,
        "step_id": step_id,
        "created_at": created if isinstance(created, datetime) else datetime.fromisoformat(created),
        "seq": seq,
        "conversation_id": row[CONVERSATION_AT],
    }
    return trusted(Message, values)


def passage_from_row(row: Sequence[Any]) -> Passage:
    """A passage from a row of PASSAGE_COLUMNS (and more, ignored), trusted."""
    seq, id_, agent_id, text, tags, created_at, context, superseded_by, superseded_at = row[:9]
    values = {
        "id": id_,
        "agent_id": agent_id,
        "text": text,
        "tags": as_list(tags),
        "created_at": stored_datetime(created_at),
        "context": context,
        "seq": seq,
        "superseded_by": superseded_by,
        "superseded_at": stored_datetime(superseded_at),
    }
    return trusted(Passage, values)
