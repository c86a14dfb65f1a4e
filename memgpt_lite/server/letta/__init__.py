"""The routes of Letta's REST API that Letta's clients use (see README)."""

from fastapi import APIRouter

router = APIRouter()
