"""Test doubles for agents, all real components: a fake OpenAI-compatible HTTP
server (`server`, with `handler` and `wire` behind it), its script of replies
and misbehaviours (`script`), the checks it applies to each request
(`validation`), in-process fake models that play the same script without HTTP
(`model`), deterministic embeddings (`embeddings`) and hostile input
(`hostile`).

The names most tests need are importable from here."""

from memgpt_lite.testing.model import (
    FunctionModel,
    InvalidRequest,
    ModelRequest,
    ScriptedModel,
    ScriptExhausted,
)
from memgpt_lite.testing.server import *  # noqa: F403
from memgpt_lite.testing.server import __all__ as _server_names

__all__ = [
    *_server_names,
    "FunctionModel",
    "InvalidRequest",
    "ModelRequest",
    "ScriptExhausted",
    "ScriptedModel",
]
