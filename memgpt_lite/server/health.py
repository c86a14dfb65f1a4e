"""The one route that needs no key: is the server up, and which version."""

from __future__ import annotations

from importlib.metadata import version

from fastapi import APIRouter

router = APIRouter(tags=["health"])


@router.get("/health")
@router.get("/v1/health/", include_in_schema=False)  # where Letta's clients look
@router.get("/v1/health", include_in_schema=False)  # and where some of them ask without the slash
def health() -> dict[str, str]:
    return {"status": "ok", "version": version("memgpt-lite")}
