"""Letta's providers (/v1/providers): a user's own model endpoints with the
API keys they brought ("bring your own key"), as Letta Code's `/connect`
makes them: `POST /v1/providers/check` with the key, then a create (or, for
a name the user has, a modify with the new key). The models of each are
listed by `GET /v1/models/` under its name (models.py), and an agent made
with such a handle asks that endpoint with that key (agent/providers.py).

The server connects to a provider's URL only if it may reach it
(server/endpoints.py): the URL is checked at create, modify and check,
before anything is stored or connected to, and again before each list of
its models. A provider's key is stored sealed (storage/core/sealed_keys.py)
and never shown: every view has `api_key` null, as Letta's have. Every
provider is the caller's: another user's is a 404 worded as an unknown id.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool

from memgpt_lite.agent.providers import Provider, endpoint_for, usable_endpoint
from memgpt_lite.errors import ConfigError, LLMError
from memgpt_lite.llm.probe import Endpoint, read_models
from memgpt_lite.server.context import Context, ServerContext, User
from memgpt_lite.server.letta.bodies import LettaBody
from memgpt_lite.server.letta.paging import Order, page
from memgpt_lite.server.model_list import HOSTED_NAMES

router = APIRouter(prefix="/v1/providers", tags=["letta"])

# How long a check waits for the provider's GET /models.
CHECK_TIMEOUT_SECONDS = 10.0
Limit = Annotated[int | None, Query(ge=0)]


class ProviderIn(LettaBody):
    """Letta's ProviderCreate and ProviderUpdate (a create without `name` or
    `provider_type` is a 422 when the provider is made). `access_key` is
    accepted and not used (the types that take one are not served)."""

    name: str | None = None
    provider_type: str | None = None
    api_key: str | None = None
    access_key: str | None = None
    base_url: str | None = None
    region: str | None = None
    api_version: str | None = None


class ProviderCheckIn(LettaBody):
    provider_type: str
    api_key: str | None = None
    base_url: str | None = None


def provider_view(provider: Provider) -> dict[str, Any]:
    """The provider as Letta's `Provider`: never a key, as Letta's views."""
    return {
        "id": provider.id,
        "name": provider.name,
        "provider_type": provider.provider_type,
        "provider_category": "byok",
        "api_key": None,
        "base_url": provider.base_url,
        "access_key": None,
        "region": provider.region,
        "api_version": provider.api_version,
        "organization_id": None,
        "updated_at": provider.updated_at.isoformat(),
        "last_synced": None,
        "api_key_enc": None,
        "access_key_enc": None,
    }


def _given(body: ProviderIn) -> dict[str, Any]:
    """The fields the body gives; "" is none, as Letta reads it."""
    given = body.model_dump(exclude_unset=True)
    return {k: (None if v == "" and k != "api_key" else v) for k, v in given.items()}


def reserved_names(ctx: ServerContext) -> set[str]:
    """The server's own providers' names, which the handles of its
    endpoints' models begin with (model_list.py): no user's may be one."""
    hosted = {handle.partition("/")[0] for handle in HOSTED_NAMES}
    return {*ctx.model_list().providers(), *hosted}


@router.get("/", include_in_schema=False)
@router.get("")
def list_providers(
    ctx: Context,
    user: User,
    name: str | None = None,
    provider_type: str | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: Limit = 50,
    order: Order = "desc",
) -> list[dict[str, Any]]:
    """Letta's list_providers: the caller's, newest first unless `order`
    is "asc", by `name` and `provider_type`."""
    chosen = [
        p
        for p in ctx.workspace.providers.list(user, name=name)
        if provider_type in (None, p.provider_type)
    ]
    if order == "desc":
        chosen.reverse()
    found = page(chosen, lambda p: p.id, after=after, before=before, limit=limit)
    return [provider_view(p) for p in found]


@router.post("/", include_in_schema=False)
@router.post("")
def create_provider(body: ProviderIn, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's create_provider: a 409 for a name the caller has (or one of
    the server's), a 403 for a URL the server may not reach, a 422 for a
    type it cannot serve. Nothing is connected to."""
    fields = _given(body)
    provider = ctx.workspace.providers.create(user, fields, ctx.check_endpoint, reserved_names(ctx))
    return provider_view(provider)


@router.post("/check")
async def check_provider(body: ProviderCheckIn, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's check_provider: the key is tried on the endpoint's
    GET /models, if the server may reach it."""
    url = endpoint_for(body.provider_type, body.base_url)
    ctx.check_endpoint(url, "base_url")
    if not body.api_key:
        raise ConfigError("api_key: give the provider's API key")
    await run_in_threadpool(_try_key, url, body.api_key)
    return {"message": f"Valid api key for provider_type={body.provider_type}"}


@router.get("/{provider_id}")
def retrieve_provider(provider_id: str, ctx: Context, user: User) -> dict[str, Any]:
    return provider_view(ctx.workspace.providers.get(provider_id, user))


@router.patch("/{provider_id}")
def modify_provider(provider_id: str, body: ProviderIn, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's modify_provider: `api_key` ("" removes it), `base_url`
    (checked), `region`, `api_version`; its name and type stay."""
    fields = _given(body)
    changed = ctx.workspace.providers.modify(provider_id, user, fields, ctx.check_endpoint)
    return provider_view(changed)


@router.delete("/{provider_id}")
def delete_provider(provider_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's delete_provider: its agents' requests fail, in one line,
    until a provider of its name is connected again."""
    ctx.workspace.providers.delete(provider_id, user)
    return {"message": f"Provider id={provider_id} successfully deleted"}


@router.post("/{provider_id}/check")
async def check_existing_provider(provider_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's check_existing_provider: the stored key tried as `check` does."""
    provider = await run_in_threadpool(ctx.workspace.providers.get, provider_id, user)
    url, key = usable_endpoint(provider)
    ctx.check_endpoint(url, "base_url")
    await run_in_threadpool(_try_key, url, key)
    return {"message": f"Valid api key for provider_type={provider.provider_type}"}


@router.patch("/{provider_id}/refresh")
def refresh_provider_models(provider_id: str, ctx: Context, user: User) -> dict[str, Any]:
    """Letta's refresh_provider_models: its endpoint asked for its models
    now, not from the minute's keeping (best effort, as in Letta: one that
    does not answer lists none)."""
    provider = ctx.workspace.providers.get(provider_id, user)
    url, key = usable_endpoint(provider)
    ctx.check_endpoint(url, "base_url")
    models = ctx.model_list()
    models.forget(url, key)
    models.provider_models(provider.name, provider.provider_type, url, key)
    return provider_view(provider)


def _try_key(url: str, key: str) -> None:
    """Ask the endpoint for its models with `key`: a 422 when it refuses the
    key, a 502 when it does not answer as an OpenAI-compatible API."""
    endpoint = Endpoint(url, key, CHECK_TIMEOUT_SECONDS)
    try:
        answer = endpoint.models_answer()
        if answer.status_code in (401, 403):
            raise ConfigError(
                f"api_key: the provider refused it ({url} answered GET /models with "
                f"{answer.status_code})"
            )
        read_models(answer, endpoint.name)
    except LLMError as exc:
        raise LLMError(f"the provider's key could not be checked: {exc}") from None
    finally:
        endpoint.close()
