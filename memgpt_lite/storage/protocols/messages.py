"""Messages (recall memory): the part of `Storage` that keeps every message
of every agent, its context window and its searches."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from memgpt_lite.models import Message, UsageRecord
    from memgpt_lite.storage.protocols.types import MainContext, Ranking, StepStart


@runtime_checkable
class MessageStorage(Protocol):
    """Messages (recall memory)."""

    def add_messages(
        self,
        messages: Sequence[Message],
        usage: UsageRecord | None = None,
        release_lock: tuple[str, str] | None = None,
    ) -> None:
        """Append messages, in order, in one transaction; sets each `seq`.
        With `usage`, stores it in the same transaction (what the answer among
        them cost: see `add_usage`). NotFoundError, storing none, if one
        belongs to an unknown agent. With `release_lock` (the key of a step
        lock this store holds, the agent's id or for a conversation's lock
        the conversation's id, and its token), that
        transaction also gives the lock up, after its commit renewed the
        lease (so a lock taken over still fails it, storing nothing): a
        step's last write, outside any transaction (RuntimeError inside one,
        whose commit would be the caller's)."""
        ...

    def messages_from(
        self, agent_id: str, start_seq: int, conversation: str | None = None
    ) -> list[Message]:
        """The agent's messages with `seq >= start_seq` (the window from its
        `context_start`), oldest first: new objects, the caller's to change.
        Those of `conversation` (an id; None: the default one), as every
        read of a window, the newest messages and deletions from a seq."""
        ...

    def window(
        self, agent_id: str, start_seq: int, conversation: str | None = None
    ) -> list[Message]:
        """What `messages_from` reads, as read-only messages (`KeptMessage`)
        that the store may keep and hand to every reader: a later read gives
        the same object for a message whose row did not change, and a new one
        for a row that did (so what a reader built from an object, like
        `TokenCounter.sent`, holds while the same object comes back). For
        reading the window on every turn without making it again."""
        ...

    def agent_and_newest_message(self, agent_id: str, conversation: str | None = None) -> StepStart:
        """The agent as stored now (`get_agent(agent_id)`, NotFoundError alike)
        and its newest message (`last_messages(agent_id, 1)`), read together
        (in one round trip where the backend can): what a step starts from.
        With `conversation`, the copy of the agent in it, and its newest."""
        ...

    def main_context(
        self,
        agent_id: str,
        start_seq: int,
        adding: Sequence[Message] = (),
        conversation: str | None = None,
    ) -> MainContext:
        """What the agent's next request is built from, read together (in one
        round trip where the backend can): the window (`window`), its
        blocks (`get_blocks`) and its stats (`agent_stats`: NotFoundError for
        an unknown agent). With `adding`, first appends those messages of the
        agent, as `add_messages` does (committed before this returns, setting
        each `seq`, NotFoundError storing none), and reads after them, in the
        same round trip where the backend can: a step's first request, built
        as its user's message is stored."""
        ...

    def last_messages(
        self, agent_id: str, limit: int, conversation: str | None = None
    ) -> list[Message]:
        """The agent's newest `limit` messages, oldest first."""
        ...

    def first_messages(self, agent_id: str, start_seq: int, limit: int) -> list[Message]:
        """The agent's oldest `limit` messages with `seq >= start_seq`, oldest
        first: a page of history read without holding the rest (unlike
        `messages_from`, which reads and may keep the whole window)."""
        ...

    def recent_messages(
        self, agent_id: str, limit: int, offset: int = 0, since: datetime | None = None
    ) -> tuple[list[Message], int]:
        """One page of all the agent's messages, counted from the newest:
        `limit` of them after skipping the `offset` newest, returned oldest
        first; with `since` (an aware datetime), only those created at or after
        it. Also returns how many there are in all (from `since`)."""
        ...

    def messages_by_seq(
        self, agent_id: str, seqs: Sequence[int], exclude_step_id: str | None = None
    ) -> dict[int, Message]:
        """The agent's messages among `seqs`, by seq; those of step
        `exclude_step_id` are left out. Unknown seqs are skipped."""
        ...

    def messages_between(
        self,
        agent_id: str,
        start: date,
        end: date,
        limit: int,
        offset: int = 0,
        exclude_step_id: str | None = None,
    ) -> tuple[list[Message], int]:
        """The agent's searchable messages (user and assistant, see
        `Message.search_text`) created from `start` to `end` inclusive (UTC
        days), oldest first: one page, and how many there are."""
        ...

    def get_message(self, message_id: str, owner: str) -> Message:
        """The stored message of that id, if an agent of `owner` holds it;
        NotFoundError if not, word for word the same for another owner's
        message as for an id that does not exist."""
        ...

    def owner_messages(
        self,
        owner: str,
        limit: int,
        *,
        newest_first: bool = True,
        beyond: Message | None = None,
        conversation: str | None = None,
    ) -> list[Message]:
        """`owner`'s messages across all their agents, ordered by when they
        were made (then by agent, and seq within one agent): `limit` of them,
        newest first (or oldest first), starting after the stored message
        `beyond` in that order; only those of `conversation`, if given."""
        ...

    def messages_by_id(self, agent_id: str, ids: Sequence[str]) -> list[Message]:
        """The agent's messages among `ids` (of any conversation), oldest
        first; unknown ids, and those of another agent, are skipped."""
        ...

    def step_messages(self, agent_id: str, step_ids: Sequence[str]) -> list[Message]:
        """The agent's messages of these steps (`Message.step_id`, of any
        conversation), oldest first."""
        ...

    def update_message(self, message: Message) -> None:
        """Rewrite a stored message's content and tool calls; search follows
        the new text, and its vector, now stale, is dropped (embedded again by
        the next search). NotFoundError if it is not stored."""
        ...

    def delete_messages_from(
        self, agent_id: str, start_seq: int, conversation: str | None = None
    ) -> int:
        """Delete the agent's messages with `seq >= start_seq`; returns how
        many. They leave search, the counts and the vectors with them."""
        ...

    def search_messages(
        self,
        agent_id: str,
        query: str,
        limit: int,
        offset: int = 0,
        exclude_step_id: str | None = None,
    ) -> tuple[list[Message], int]:
        """One page of the agent's searchable messages matching any word of
        plain-text `query` (stemmed, accents ignored; any text is safe), best
        first, and how many matched. Step `exclude_step_id` is left out."""
        ...

    def rank_messages(
        self, agent_id: str, query: str, limit: int, exclude_step_id: str | None = None
    ) -> Ranking[Message]:
        """The best `limit` matches of `search_messages`, with their scores."""
        ...
