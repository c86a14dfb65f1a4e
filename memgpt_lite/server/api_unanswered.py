"""Dropping a message that was never answered (docs/step.md, "A step that
stops before its reply"): `DELETE /api/agents/{agent}/unanswered/{message_id}`
removes the last exchange, that message and whatever followed it, as
`memgpt-lite pop` does, but only while that message is still the last of the
user's messages in the window and still unanswered: a client that shows an
old page never drops an exchange it did not see. To send it again, a client
drops it and sends its text (the web app's Retry does so).

`GET /api/agents/{agent}/unanswered` (api_agents.py) lists them.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from memgpt_lite.errors import ConflictError
from memgpt_lite.server.context import Context, User

router = APIRouter(prefix="/api/agents", tags=["agents"])


class Dropped(BaseModel):
    deleted: int  # messages removed: the user's message and those after it


@router.delete("/{agent}/unanswered/{message_id}")
def drop_unanswered(agent: str, message_id: str, ctx: Context, user: User) -> Dropped:
    """Remove the user's last message, if it is `message_id` and was never
    answered, with the messages after it; a 409 otherwise, and nothing changes."""
    opened = ctx.agent(user, agent)
    with opened.runner.step_lock():  # no step comes between the check and the pop
        last = [m for m in opened.context_messages() if m.role == "user"][-1:]
        unanswered = {m.id for m in opened.history.unanswered()}
        if not last or last[0].id != message_id or message_id not in unanswered:
            raise ConflictError(
                f"message {message_id!r} is not the last unanswered message of "
                f"{opened.state.name!r}; nothing was removed"
            )
        return Dropped(deleted=opened.history.pop_exchanges(1))
