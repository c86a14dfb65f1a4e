"""Every method of `Storage` that both dialects say alike, in one class: a
backend's store is its own parts first, then `CoreStore` (see core/__init__.py)."""

from __future__ import annotations

from memgpt_lite.storage.core.accounts import UsageAndKeys
from memgpt_lite.storage.core.agents import Agents
from memgpt_lite.storage.core.archival import Archival
from memgpt_lite.storage.core.locks import StepLocks
from memgpt_lite.storage.core.messages import Messages
from memgpt_lite.storage.core.tools import Tools
from memgpt_lite.storage.core.transactions import guarded
from memgpt_lite.storage.protocols.types import MainContext


class CoreStore(Agents, Messages, Archival, StepLocks, UsageAndKeys, Tools):
    """Agents and blocks, messages, passages and vectors, step locks, usage
    and keys, the tool registry, and transactions."""

    @guarded
    def main_context(self, agent_id: str, start_seq: int) -> MainContext:
        """Its three reads, one after the other (a backend may send them at once)."""
        messages = self.messages_from(agent_id, start_seq)
        return MainContext(messages, self.get_blocks(agent_id), self.agent_stats(agent_id))
