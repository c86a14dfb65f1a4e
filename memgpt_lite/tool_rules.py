"""Tool rules: which tools the model may call when, within a step. Letta's
kinds, names and fields; tools/rules.py makes and applies them, and an
agent's state keeps them (models.py `AgentSettings.tool_rules`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from memgpt_lite.step_input import ToolName


class _Rule(BaseModel):
    """A tool rule (tools/rules.py applies them): the tool it is about."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_name: ToolName


class TerminalToolRule(_Rule):
    """The step ends once this tool ran."""

    type: Literal["exit_loop"] = "exit_loop"


class InitToolRule(_Rule):
    """A step's first tool call must be this tool (or another init tool)."""

    type: Literal["run_first"] = "run_first"


class ChildToolRule(_Rule):
    """After this tool, only its children may be called."""

    type: Literal["constrain_child_tools"] = "constrain_child_tools"
    children: list[ToolName]


class MaxCountPerStepToolRule(_Rule):
    """This tool runs at most `max_count_limit` times in one step."""

    type: Literal["max_count_per_step"] = "max_count_per_step"
    max_count_limit: int = Field(ge=1)


class ContinueToolRule(_Rule):
    """The step goes on after this tool, as if it asked for a heartbeat."""

    type: Literal["continue_loop"] = "continue_loop"


class RequiresApprovalToolRule(_Rule):
    """A call of this tool waits for the user's approval before it runs."""

    type: Literal["requires_approval"] = "requires_approval"


ToolRule = Annotated[
    TerminalToolRule
    | InitToolRule
    | ChildToolRule
    | MaxCountPerStepToolRule
    | ContinueToolRule
    | RequiresApprovalToolRule,
    Field(discriminator="type"),
]
