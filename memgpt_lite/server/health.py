"""The routes that need no key: is the server up, and which version.
Letta's readiness check answers as its health check: the server answers
requests (the database is not probed)."""

from __future__ import annotations

from importlib.metadata import version

from fastapi import APIRouter

router = APIRouter(tags=["health"])


@router.get("/health")
@router.get("/v1/health/", include_in_schema=False)  # where Letta's clients look
@router.get("/v1/health", include_in_schema=False)  # and where some of them ask without the slash
@router.get("/v1/ready/", include_in_schema=False)  # Letta's check_readiness
@router.get("/v1/ready", include_in_schema=False)
def health() -> dict[str, str]:
    return {"status": "ok", "version": version("memgpt-lite")}
