"""What every route shares: the open store, the step runner, and the rule
that a user sees only their own agents.

Routes get these through FastAPI dependencies (`context`, `current_user`),
never through globals, so one process can serve two apps (the tests do).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from memgpt_lite.agent import Agent
from memgpt_lite.errors import ConfigError, NotFoundError
from memgpt_lite.keys import user_for_key
from memgpt_lite.llm.endpoint import check_base_url
from memgpt_lite.llm.model import Model
from memgpt_lite.llm.openai_chat import PLACEHOLDER_KEY, OpenAIChatModel, resolve_endpoint
from memgpt_lite.models import DEFAULT_USER, AgentState
from memgpt_lite.server.steps import StepRunner
from memgpt_lite.storage.protocol import Storage


class Unauthorized(Exception):  # noqa: N818 - an HTTP status, turned into a 401 by app.py
    """No key, or a key that is unknown or revoked."""


# Models kept for reuse (their pooled connections with them), at most this many.
MODEL_CACHE_SIZE = 1024


@dataclass
class ServerContext:
    store: Storage
    steps: StepRunner
    auth: bool = True
    # Each agent's model client, kept across requests so that its pooled
    # connections to the endpoint are reused (a TLS handshake per step
    # otherwise); rebuilt when the agent's endpoint settings change. Per
    # agent, not per endpoint: a step measures its model time on it.
    _models: OrderedDict[str, tuple[tuple[object, ...], Model]] = field(default_factory=OrderedDict)
    _models_lock: threading.Lock = field(default_factory=threading.Lock)

    def user_for(self, authorization: str | None) -> str:
        """The user a request's `Authorization` header names."""
        if not self.auth:
            return DEFAULT_USER
        scheme, _, secret = (authorization or "").partition(" ")
        secret = secret.strip()
        if scheme.lower() != "bearer" or not secret:
            raise Unauthorized("send an API key: Authorization: Bearer KEY")
        user = user_for_key(self.store, secret)
        if user is None:
            raise Unauthorized("the API key is unknown or revoked")
        return user

    def agent_state(self, user: str, ref: str) -> AgentState:
        """The user's agent named or numbered `ref`; another user's agent is
        not found, word for word as an agent that does not exist."""
        state = self.store.get_agent(ref)
        if state.owner != user:
            raise NotFoundError(f"no agent named {ref!r}")
        return state

    def agent(self, user: str, ref: str) -> Agent:
        """The user's agent, opened on the server's store."""
        state = self.agent_state(user, ref)
        key = endpoint_key(state)
        return Agent(state, self.store, api_key=key, llm=self._model(state, key))

    def _model(self, state: AgentState, key: str | None) -> Model:
        wanted = (state.llm.base_url, state.llm.timeout_seconds, key)
        with self._models_lock:
            kept = self._models.get(state.id)
            if kept is not None and kept[0] == wanted:
                self._models.move_to_end(state.id)
                return kept[1]
        model = OpenAIChatModel(state.llm, api_key=key)  # outside the lock: may read config
        with self._models_lock:
            self._models[state.id] = (wanted, model)
            if len(self._models) > MODEL_CACHE_SIZE:
                self._models.popitem(last=False)
        return model


def endpoint_key(state: AgentState) -> str | None:
    """The API key for the agent's model requests. The server's key
    ($OPENAI_API_KEY) goes only to the server's own endpoint: an agent whose
    base URL a client chose elsewhere gets a placeholder, so no client can
    point an agent at a host of theirs and read the server's key."""
    own = state.llm.base_url
    if own is None:
        return None
    try:
        server_url, _ = resolve_endpoint(state.llm.model_copy(update={"base_url": None}))
    except ConfigError:  # the server has no key for its endpoint: nothing to guard
        return PLACEHOLDER_KEY
    same = check_base_url(own, "the agent's base_url").rstrip("/") == server_url.rstrip("/")
    return None if same else PLACEHOLDER_KEY


def context(request: Request) -> ServerContext:
    return request.app.state.context


def current_user(request: Request) -> str:
    return context(request).user_for(request.headers.get("authorization"))


Context = Annotated[ServerContext, Depends(context)]
User = Annotated[str, Depends(current_user)]
