"""Token usage and the users' API keys: the part of `Storage` that keeps what
each model answer cost, and the keys of the HTTP server's users (their
secrets are never stored: see memgpt_lite/agent/keys.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

if TYPE_CHECKING:
    from memgpt_lite.models import ApiKey, ModelUsage, UsageRecord

# Letta's feedback on a step: a thumbs up or down.
StepFeedback = Literal["positive", "negative"]


class StepUsage(BaseModel):
    """What one step of an agent cost: the sum of its usage records (one
    per model answer, `UsageRecord`), and when the first and the last were
    stored; and the feedback a user gave it (Letta's), if any."""

    agent_id: str
    step_id: str
    model: str  # its records' model (of several, should it have changed, the last by name)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0
    estimated_requests: int = 0  # of `requests`, how many were counted by us
    first_at: datetime
    last_at: datetime
    feedback: StepFeedback | None = None
    tags: list[str] = []


@runtime_checkable
class UsageAndKeyStorage(Protocol):
    """Token usage (what each model answer cost, kept with its step) and
    API keys."""

    def add_usage(self, record: UsageRecord) -> None:
        """Store one model answer's token usage. Rows are never merged or
        edited: popping messages leaves them (the tokens were spent); deleting
        the agent deletes them. NotFoundError for an unknown agent."""
        ...

    def usage_by_model(self, agent_id: str) -> list[ModelUsage]:
        """The agent's token totals from every stored record, one per model,
        sorted by model name ([] for an agent with none, or unknown)."""
        ...

    def step_usage(self, agent_id: str, step_id: str) -> list[UsageRecord]:
        """The usage records of one step of the agent, in the order stored."""
        ...

    def agent_usage(self, agent_id: str) -> list[UsageRecord]:
        """Every usage record of the agent, in the order stored ([] for an
        agent with none, or unknown): what copying an agent to another
        database carries over."""
        ...

    def list_steps(
        self,
        owner: str,
        agent_id: str | None = None,
        step_ids: Sequence[str] | None = None,
        limit: int = 100,
    ) -> list[StepUsage]:
        """The steps with usage records of the owner's agents (of one agent,
        and among `step_ids`, if given), newest first (by their first
        record), at most `limit`. Another owner's agent's steps are never
        among them."""
        ...

    def set_step_feedback(
        self,
        agent_id: str,
        step_id: str,
        feedback: StepFeedback | None,
        tags: Sequence[str] | None = None,
    ) -> None:
        """Store the feedback on the agent's step (None takes it away), and
        its tags if given (None keeps those stored). NotFoundError if the
        agent has no usage record of this step."""
        ...

    def add_api_key(self, key: ApiKey) -> None:
        """Store a new key. AlreadyExistsError if its id or hash is stored already."""
        ...

    def api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key with this hash, revoked or not (the caller checks
        `revoked_at`), or None."""
        ...

    def list_api_keys(self) -> list[ApiKey]:
        """Every key, revoked ones too, oldest first."""
        ...

    def revoke_api_key(self, key_id: str) -> ApiKey:
        """Mark the key revoked now and return it; a key revoked already keeps
        its first `revoked_at`. NotFoundError if there is no key with this id."""
        ...
