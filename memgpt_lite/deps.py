"""What the loop, the memory tiers and the tools may reach of an agent.

`Agent` (agent.py) satisfies this protocol; the modules it is built from take
an `AgentDeps` instead of the agent, so none of them imports agent.py, and a
tool sees these dependencies rather than the whole facade. `state` is the
agent's row as last read; code that changes it stores the change through
`store.update_agent` and keeps the returned state here.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from memgpt_lite.embeddings.embedder import Embedder
    from memgpt_lite.llm.model import Model
    from memgpt_lite.llm.tokens import TokenCounter
    from memgpt_lite.models import AgentState, Message
    from memgpt_lite.storage.protocol import Storage


class AgentDeps(Protocol):
    """An agent's state and the services a step uses."""

    state: AgentState
    store: Storage

    @property
    def llm(self) -> Model:
        """The model the agent calls."""
        ...

    @property
    def embedder(self) -> Embedder | None:
        """The embedder for hybrid search, or None for lexical search only."""
        ...

    @property
    def token_counter(self) -> TokenCounter: ...

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The `tools` list of a request."""
        ...

    def tool_tokens(self) -> int:
        """Tokens the tool schemas take in a request."""
        ...

    def set_embedder(self, embedder: Embedder) -> None:
        """Use `embedder` from now on (it must match the stored vectors)."""
        ...

    def vector_index(self, owner: str) -> Any:
        """The in-memory index of the agent's stored vectors of one kind."""
        ...

    def context_messages(self) -> list[Message]:
        """The messages in the context window, oldest first."""
        ...

    def step_lock(self) -> AbstractContextManager[Any]:
        """Hold the agent's step lock (re-entrant), waiting for another step."""
        ...
