"""`POST /v1/chat/completions`: any OpenAI client talks to an agent."""

from fastapi import APIRouter

router = APIRouter()
