"""Every method of `Storage` that both dialects say alike, in one class: a
backend's store is its own parts first, then `CoreStore` (see core/__init__.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from memgpt_lite.models import Message
from memgpt_lite.storage.core.accounts import UsageAndKeys
from memgpt_lite.storage.core.agents import Agents
from memgpt_lite.storage.core.archival import Archival
from memgpt_lite.storage.core.archives import Archives
from memgpt_lite.storage.core.conversations import CONVERSATION_READ, as_in_conversation
from memgpt_lite.storage.core.groups import MANAGED_GROUP_READ, Groups
from memgpt_lite.storage.core.identities import Identities
from memgpt_lite.storage.core.locks import StepLocks
from memgpt_lite.storage.core.messages import Messages, newest_read
from memgpt_lite.storage.core.providers import Providers
from memgpt_lite.storage.core.rows import message_from_row
from memgpt_lite.storage.core.runs import Runs
from memgpt_lite.storage.core.sends import SentRequests
from memgpt_lite.storage.core.tools import Tools
from memgpt_lite.storage.core.transactions import guarded
from memgpt_lite.storage.protocols.types import MainContext, StepLockHolder, StepStart


class CoreStore(
    Agents,
    Messages,
    Archival,
    StepLocks,
    UsageAndKeys,
    Tools,
    Runs,
    SentRequests,
    Groups,
    Identities,
    Providers,
    Archives,
):
    """Agents and blocks, messages, passages and vectors, step locks, usage
    and keys, the tool registry, Letta's runs, the sends answered under a
    key, groups of agents, identities, users' providers, archives, and
    transactions."""

    @guarded
    def agent_and_newest_message(self, agent_id: str, conversation: str | None = None) -> StepStart:
        """Both reads at once, where the backend can (`_all_together`)."""
        reads = self._start_reads(agent_id, conversation)
        return self._step_start(agent_id, conversation, *self._all_together(*reads))

    @guarded
    def start_step(
        self,
        agent_id: str,
        claim: StepLockHolder,
        lease_seconds: float,
        is_dead: Callable[[StepLockHolder], bool],
        conversation: str | None = None,
    ) -> StepLockHolder | StepStart:
        """The take and the reads at once, where the backend can (`_take`)."""
        reads = self._start_reads(agent_id, conversation)
        holder, read = self._take(
            agent_id, claim, lease_seconds, is_dead, *reads, conversation=conversation
        )
        if holder is not None:
            return holder
        if read is None:  # taken from a dead holder after the reads: read again
            return self.agent_and_newest_message(agent_id, conversation)
        return self._step_start(agent_id, conversation, *(cursor.fetchall() for cursor in read))

    def _start_reads(
        self, agent_id: str, conversation: str | None
    ) -> list[tuple[str, Sequence[Any]]]:
        """The reads of `agent_and_newest_message` (`_step_start` reads their
        rows): the agent, its conversation's newest message, the
        conversation's row (none for the default one), and the group it is
        the main agent of."""
        reads = [self._agent_read(agent_id), newest_read(agent_id, 1, conversation)]
        if conversation is not None:
            reads.append((CONVERSATION_READ, [conversation]))
        reads.append((MANAGED_GROUP_READ, [agent_id]))
        return reads

    def _step_start(
        self, agent_id: str, conversation: str | None, agents: list[Any], *rows: list[Any]
    ) -> StepStart:
        newest = self._newest_rows(agent_id, 1, conversation, rows[0])
        state = self._agent_named(agent_id, agents)
        if conversation is not None:
            state = as_in_conversation(state, rows[1], conversation)
        newest_message = message_from_row(newest[0]) if newest else None
        return StepStart(state, newest_message, manages_group=bool(rows[-1]))

    @guarded
    def main_context(
        self,
        agent_id: str,
        start_seq: int,
        adding: Sequence[Message] = (),
        conversation: str | None = None,
    ) -> MainContext:
        """The messages `adding` stored, then its three reads, one after the
        other (a backend may send them all at once)."""
        if adding:
            self.add_messages(adding)
        messages = self.window(agent_id, start_seq, conversation)
        return MainContext(messages, self.get_blocks(agent_id), self.agent_stats(agent_id))
