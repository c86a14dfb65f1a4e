"""What the contract's tests share: the `store` fixture and small builders."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

import pytest

from memgpt_lite.models import AgentState, Block, LLMConfig, Message, Passage
from memgpt_lite.settings.values import SecretSource, StorageSettings
from memgpt_lite.storage.protocol import Storage

OpenStore = Callable[[], Storage]


def sealing(folder: Path) -> StorageSettings:
    """Settings whose secret (a file in `folder`, made when first needed)
    seals agents' API keys, as the edges' settings do."""
    return StorageSettings(secret=SecretSource(file=folder / "secret.key"))


class ContractBase:
    """Gives each test `store`, a handle on the backend's fresh database."""

    @pytest.fixture
    def store(self, open_store: OpenStore) -> Storage:
        return open_store()


def new_agent(
    store: Storage, name: str = "sam", blocks: Sequence[Block] | None = None
) -> AgentState:
    state = AgentState(name=name, llm=LLMConfig(model="gpt-4o-mini"), system="s")
    if blocks is None:
        blocks = [Block(label="persona", value="p"), Block(label="human")]
    store.create_agent(state, blocks)
    return state


def said(agent: AgentState, text: str, role: str = "user", **fields: object) -> Message:
    return Message(agent_id=agent.id, role=role, content=text, **fields)


def passage(agent: AgentState, text: str, **fields: object) -> Passage:
    return Passage(agent_id=agent.id, text=text, **fields)


def contents(messages: Sequence[Message]) -> list[str | None]:
    return [m.content for m in messages]


def day(text: str) -> datetime:
    """A time in UTC from "YYYY-MM-DD HH:MM"."""
    return datetime.fromisoformat(text + "+00:00")
