"""Every method of `Storage` that both dialects say alike, in one class: a
backend's store is its own parts first, then `CoreStore` (see core/__init__.py)."""

from __future__ import annotations

from memgpt_lite.storage.core.accounts import UsageAndKeys
from memgpt_lite.storage.core.agents import Agents
from memgpt_lite.storage.core.archival import Archival
from memgpt_lite.storage.core.locks import StepLocks
from memgpt_lite.storage.core.messages import Messages
from memgpt_lite.storage.core.tools import Tools


class CoreStore(Agents, Messages, Archival, StepLocks, UsageAndKeys, Tools):
    """Agents and blocks, messages, passages and vectors, step locks, usage
    and keys, the tool registry, and transactions."""
