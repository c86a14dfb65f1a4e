"""Memory blocks (core memory) and their history: the part of `Storage` that
keeps them. One block may belong to several agents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from memgpt_lite.models import Block, BlockVersion


@runtime_checkable
class BlockStorage(Protocol):
    """Blocks (shared: one block may belong to several agents), and every
    value each held."""

    def get_blocks(self, agent_id: str) -> list[Block]:
        """The agent's blocks in their order ([] for an unknown agent)."""
        ...

    def get_block(self, block_id: str) -> Block:
        """One block. NotFoundError if there is none."""
        ...

    def save_block(self, block: Block, author: str = "user") -> None:
        """Store the block (created if new) and set its `updated_at`; every
        agent that shares it sees the edit and its memory change time moves.
        A new block, or a value other than the stored one, is appended to the
        block's history by `author`, in the same transaction."""
        ...

    def attach_block(self, agent_id: str, block: Block, author: str = "user") -> None:
        """Link the block (stored first if new, its value the first version
        of its history, by `author`) to the agent, after its other blocks.
        AlreadyExistsError if the agent has a block with that label,
        NotFoundError for an unknown agent."""
        ...

    def detach_block(self, agent_id: str, block_id: str) -> None:
        """Unlink the block from the agent, and delete it if no other agent
        holds it. A block the agent does not hold changes nothing."""
        ...

    def create_block(self, block: Block, owner: str, author: str = "user") -> None:
        """Store a standalone block of user `owner`'s (held by no agent yet;
        kept when detached from its last agent, or when an agent holding it
        is deleted), its value the first version of its history, by
        `author`; sets `updated_at`. AlreadyExistsError if its id is taken."""
        ...

    def user_block(self, block_id: str, owner: str) -> Block:
        """A block user `owner` may reach: one of their standalone blocks or
        a block of one of their agents. NotFoundError otherwise, word for
        word as for a block that does not exist."""
        ...

    def user_blocks(self, owner: str) -> list[Block]:
        """Every block user `owner` may reach (see `user_block`), oldest
        first (by its first version)."""
        ...

    def delete_block(self, block_id: str) -> None:
        """Delete a block and its history, detaching it from every agent that
        holds it (their memory change time moves). NotFoundError if none."""
        ...

    def block_owners(self, block_id: str) -> list[str]:
        """The names of the agents a block belongs to, sorted."""
        ...

    def block_history(self, block_id: str, limit: int | None = None) -> list[BlockVersion]:
        """The values the block held, oldest first (with `limit`, the newest
        `limit` of them), each with its time, author and label then; sets
        `seq`. The last is the current value. [] for an unknown block: a
        block's history is deleted with it."""
        ...

    def set_block_history(self, block_id: str, versions: Sequence[BlockVersion]) -> None:
        """Replace the block's whole history with `versions`, in order, as
        they are (times, authors, labels; `seq` is set): what copying a block
        to another database carries over. NotFoundError for an unknown block."""
        ...
