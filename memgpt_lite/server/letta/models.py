"""Letta's model routes: `GET /v1/models/` (its list_models) and
`GET /v1/models/embedding`, the models of the server's endpoints and of the
user's providers (providers.py) in Letta's `Model` and `EmbeddingModel`
shapes (server/model_list.py says where they come from and what their
handles are).

Only the path with the slash is Letta's: `GET /v1/models`, without it, is
OpenAI's list (server/openai_compat.py), which OpenAI's clients ask.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool

from memgpt_lite.agent.providers import usable_endpoint
from memgpt_lite.errors import ConfigError
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.endpoints import EndpointNotAllowed
from memgpt_lite.server.model_list import OWN_PROVIDER, ListedModel

router = APIRouter(prefix="/v1/models", tags=["letta"])

# Every endpoint speaks OpenAI's chat completions (the one protocol we call).
PROVIDER_TYPE = "openai"


def model_view(model: ListedModel) -> dict[str, Any]:
    """One model as Letta's `Model` (its LLMConfig fields with its newer ones)."""
    return {
        "handle": model.handle,
        "name": model.name,
        "display_name": model.name,
        "provider_type": model.provider_type,
        "provider_name": model.provider,
        "provider_category": model.category,
        "model_type": "llm",
        "model": model.name,
        "model_endpoint_type": PROVIDER_TYPE,
        "model_endpoint": model.endpoint,
        "model_wrapper": None,
        "context_window": model.context_window,
        "max_context_window": model.context_window,
        # Our agents think aloud in every answer's content, not in a kwarg.
        "put_inner_thoughts_in_kwargs": False,
        "parallel_tool_calls": False,
    }


def embedding_view(model: ListedModel) -> dict[str, Any]:
    """One embedding model as Letta's `EmbeddingModel`; its dimension is 0
    (unknown) until an agent's first vector shows it, as in agents' views."""
    return {
        "handle": model.handle,
        "name": model.name,
        "display_name": model.name,
        "provider_type": model.provider_type,
        "provider_name": model.provider,
        "model_type": "embedding",
        "embedding_endpoint_type": PROVIDER_TYPE,
        "embedding_endpoint": model.endpoint,
        "embedding_model": model.name,
        "embedding_dim": 0,
    }


@router.get("/")
async def list_models(
    ctx: Context,
    user: User,
    provider_name: str | None = None,
    provider_type: str | None = None,
    provider_category: Annotated[list[str] | None, Query()] = None,
) -> list[dict[str, Any]]:
    """Letta's list_models: the chat models of the server's endpoints, the
    server's default model first, then those of the user's providers,
    filtered as Letta filters them."""
    listed = await run_in_threadpool(listed_models, ctx, user)  # may ask the endpoints
    wanted = [
        model
        for model in listed
        if not model.is_embedding
        and provider_name in (None, model.provider)
        and provider_type in (None, model.provider_type)
        and (not provider_category or model.category in provider_category)
    ]
    return [model_view(model) for model in wanted]


def listed_models(ctx: ServerContext, user: str) -> list[ListedModel]:
    """The models of the server's endpoints, then of the user's providers
    whose endpoints the server still allows and whose keys it can open
    (providers.py): a provider asked at a URL the operator no longer allows
    is not asked at all."""
    models = ctx.model_list()
    listed = models.models()
    for provider in ctx.workspace.providers.list(user):
        try:
            url, key = usable_endpoint(provider)
            ctx.check_endpoint(url, "base_url")
        except (ConfigError, EndpointNotAllowed):
            continue
        listed += models.provider_models(provider.name, provider.provider_type, url, key)
    return listed


@router.get("/embedding")
async def list_embedding_models(ctx: Context, user: User) -> list[dict[str, Any]]:
    """Letta's list_embedding_models: the embedding models of the server's
    own endpoint (an agent embeds at its own model endpoint)."""
    listed = await run_in_threadpool(ctx.model_list().models)
    return [
        embedding_view(model)
        for model in listed
        if model.is_embedding and model.provider == OWN_PROVIDER
    ]
