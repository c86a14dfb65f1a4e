"""What the memory tiers may reach of an agent.

An agent's runner (agent/runner.py, `agent.runner`) satisfies this
protocol; memory takes a `MemoryDeps` instead of the agent, so nothing here
imports the agent layer, the loop or the tools. It is what a tier needs: the
agent's row, its store, its token counter, its embedder and vector indexes,
the messages of its context window and the tool schemas that share the
window with them, the step lock that history edits hold, and the same of
the archive attached to it besides its own (storage/protocols/archives.py). The loop and
the tools take the wider `AgentDeps` (tools/deps.py), which adds the model
(and a step of another agent, for the multi-agent tools).
`state` is the agent's row as last read; code that changes it stores the
change through `store.update_agent` and keeps the returned state here.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from memgpt_lite.embeddings.embedder import Embedder
    from memgpt_lite.llm.tokens import TokenCounter
    from memgpt_lite.models import AgentState, Message
    from memgpt_lite.storage.protocol import Owner, Storage


class MemoryDeps(Protocol):
    """An agent's state and the services its memory uses."""

    state: AgentState
    store: Storage

    @property
    def embedder(self) -> Embedder | None:
        """The embedder for hybrid search, or None for lexical search only."""
        ...

    @property
    def token_counter(self) -> TokenCounter: ...

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The `tools` list of a request (they take room in the window)."""
        ...

    def tool_tokens(self) -> int:
        """Tokens the tool schemas take in a request."""
        ...

    def set_embedder(self, embedder: Embedder) -> None:
        """Use `embedder` from now on (it must match the stored vectors)."""
        ...

    def vector_index(self, owner: Owner) -> Any:
        """The in-memory index of the agent's stored vectors of one kind (a
        retrieval/vector_index.py `VectorIndex`; not named here, which would
        tie this protocol and retrieval/ to each other)."""
        ...

    def context_messages(self) -> list[Message]:
        """The messages in the context window, oldest first."""
        ...

    def step_lock(self) -> AbstractContextManager[Any]:
        """Hold the agent's step lock (re-entrant), waiting for another step."""
        ...

    def attached_archive(self) -> MemoryDeps | None:
        """What a tier reaches of the archive attached to the agent besides
        its own (the row `state.attached_archive` names: its store, its
        embedder and vector indexes), kept while attached; None without one."""
        ...
