"""Our API for tool calls that wait for the user's approval (human in the
loop, loop/approvals.py): see what waits, and answer it.

- `GET /api/agents/{agent}/approvals`: the calls that wait, oldest first
  (an empty list when nothing does).
- `POST /api/agents/{agent}/approvals`: the user's answer, which goes on with
  the step as the send route runs one (the result as JSON, or with `stream`
  the same server-sent events). The body is a list of answers,
  `{"approvals": [{"approve": true, "reason": "...", "tool_call_id": "..."}]}`,
  or one answer as the body itself, `{"approve": false, "reason": "..."}`.
  An answer without `tool_call_id` answers every call it does not name.

An answer that does not fit what waits (nothing waits, a call that does not
wait, a waiting call left unanswered) is a 409 from the core, as is a new
message sent while a call waits.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from memgpt_lite.errors import ConfigError
from memgpt_lite.models import Approval, CleanStr, ToolCall
from memgpt_lite.server.api_agents import run_step_route
from memgpt_lite.server.bodies import StrictBody
from memgpt_lite.server.context import Context, User

router = APIRouter(prefix="/api/agents", tags=["approvals"])


class ApprovalBody(StrictBody):
    """A list of answers (`approvals`), or one answer as the body's own fields."""

    approvals: list[Approval] | None = Field(default=None, min_length=1)
    approve: bool | None = None
    reason: CleanStr = ""
    tool_call_id: CleanStr | None = None
    stream: bool = False

    def answers(self) -> list[Approval]:
        """The user's answers; a body that gives both forms, or neither, is a 422."""
        single = self.approve is not None or self.reason or self.tool_call_id is not None
        if self.approvals is not None:
            if single:
                raise ConfigError(
                    "approvals: give a list of answers or one answer (approve, reason, "
                    "tool_call_id), not both"
                )
            return self.approvals
        if self.approve is None:
            raise ConfigError("approve: give approve (true or false), or a list of approvals")
        return [Approval(approve=self.approve, reason=self.reason, tool_call_id=self.tool_call_id)]


@router.get("/{agent}/approvals")
def waiting(agent: str, ctx: Context, user: User) -> list[ToolCall]:
    """The tool calls waiting for the user's approval, oldest first."""
    return ctx.agent(user, agent).pending_approvals()


@router.post("/{agent}/approvals", response_model=None)
async def answer(agent: str, body: ApprovalBody, ctx: Context, user: User) -> Any:
    """Approve or deny the waiting tool calls, and go on with the step: an
    approved call runs, a denied one gets an error result with the reason
    (the model reads it). Answered as the send route answers."""
    return await run_step_route(ctx, user, agent, body.answers(), stream=body.stream)
