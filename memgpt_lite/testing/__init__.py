"""Test doubles for agents, all real components: a fake OpenAI-compatible HTTP
server (`server`), its script of replies and misbehaviours (`script`), the
checks it applies to each request (`validation`), deterministic embeddings
(`embeddings`) and hostile input (`hostile`).

The names most tests need are importable from here."""

from memgpt_lite.testing.server import *  # noqa: F403
from memgpt_lite.testing.server import __all__ as __all__
