"""Token usage and the users' API keys: the part of `Storage` that keeps what
each model answer cost, and the keys of the HTTP server's users (their
secrets are never stored: see memgpt_lite/agent/keys.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from memgpt_lite.models import ApiKey, ModelUsage, UsageRecord


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
