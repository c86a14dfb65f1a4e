"""What both backends share about stored records, with no SQL in it: models
built from rows without validating them again, the duplicate key of a
passage's text, tool calls as stored JSON, and token usage rows as models.
Each backend's SQL (storage/sqlite/, storage/postgres/) selects the columns in
the order these functions read them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from memgpt_lite.errors import ConfigError, NotFoundError
from memgpt_lite.models import Message, ModelUsage, UsageRecord

M = TypeVar("M", bound=BaseModel)
_set = object.__setattr__


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of `cls` holding `values` (every field, already of its
    type), without validation: for rows the store validated on the way in,
    where validating them again on every read (CleanStr, the arguments
    regex, parsing times) was most of the cost of loading a long window.
    What `model_construct` does for a model with no aliases, defaults to
    fill, extras or private attributes, at a fifth of its cost; a test
    checks the result equals the validated model."""
    instance = cls.__new__(cls)
    _set(instance, "__dict__", values)
    _set(instance, "__pydantic_fields_set__", set(values))
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance


def check_supersession(
    old_ids: Sequence[str], new_id: str, stored: dict[str, str | None] | None = None
) -> None:
    """Refuse a supersession the protocol refuses: a passage replacing itself,
    before anything is read; then, given `stored` (the `superseded_by` of each
    of the passages found), an unknown id, or a replacement that was itself
    replaced (which could close a cycle: the chain of a fact must end)."""
    if new_id in old_ids:
        raise ConfigError(f"passage {new_id!r} cannot replace itself")
    if stored is None:
        return
    missing = [i for i in [new_id, *old_ids] if i not in stored]
    if missing:
        raise NotFoundError(
            f"no passage {', '.join(map(repr, missing))} in this agent's archival memory"
        )
    if stored[new_id] is not None:
        raise ConfigError(
            f"passage {new_id!r} was itself replaced by {stored[new_id]!r}: "
            "only a current passage can replace others"
        )


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
