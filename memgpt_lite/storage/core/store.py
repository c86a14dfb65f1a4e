"""Every method of `Storage` that both dialects say alike, in one class: a
backend's store is its own parts first, then `CoreStore` (see core/__init__.py)."""

from __future__ import annotations

from memgpt_lite.models import AgentState, Message
from memgpt_lite.storage.core.accounts import UsageAndKeys
from memgpt_lite.storage.core.agents import Agents
from memgpt_lite.storage.core.archival import Archival
from memgpt_lite.storage.core.locks import StepLocks
from memgpt_lite.storage.core.messages import NEWEST, Messages
from memgpt_lite.storage.core.rows import message_from_row
from memgpt_lite.storage.core.tools import Tools
from memgpt_lite.storage.core.transactions import guarded
from memgpt_lite.storage.protocols.types import MainContext


class CoreStore(Agents, Messages, Archival, StepLocks, UsageAndKeys, Tools):
    """Agents and blocks, messages, passages and vectors, step locks, usage
    and keys, the tool registry, and transactions."""

    @guarded
    def agent_and_newest_message(self, agent_id: str) -> tuple[AgentState, Message | None]:
        """Both reads at once, where the backend can (`_all_together`)."""
        agents, newest = self._all_together(self._agent_read(agent_id), (NEWEST, [agent_id, 1]))
        return self._agent_named(agent_id, agents), message_from_row(newest[0]) if newest else None

    @guarded
    def main_context(self, agent_id: str, start_seq: int) -> MainContext:
        """Its three reads, one after the other (a backend may send them at once)."""
        messages = self.messages_from(agent_id, start_seq)
        return MainContext(messages, self.get_blocks(agent_id), self.agent_stats(agent_id))
