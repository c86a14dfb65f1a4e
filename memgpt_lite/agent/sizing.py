"""The working window an agent gets: big enough for its core memory and
tools plus room to talk.

`Agent.create` and an import (agentfile/native.py) store the new agent in a
transaction, then size it here before it commits: with no working window
set, the default one (memory/recall/window.py DEFAULT_WORKING_WINDOW), or,
when the fixed part of a request (instructions, core memory, tool schemas;
as compile_context counts it) takes more than half of that, twice the fixed
part, within the model's window. An agent that could not take a single step
in the window it would get is refused with one line naming the sizes and
the fix, and the transaction stores nothing. `set_working_window` changes a
stored agent's window under the same rule (the `window` command, the
server's agent update).

A new agent is first measured with an upper bound of its tokens (their
UTF-8 bytes: llm/tokens.py `TokenBound`): when even that fits its window
as it is, the usual case, the exact count could only agree, and the
process need not build the token encoder (a few hundred ms of CPU, in
every `memgpt-lite create`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from memgpt_lite.agent.runner import Runner
from memgpt_lite.agent.setup import agent_custom_tools
from memgpt_lite.errors import ConfigError
from memgpt_lite.llm.tokens import TokenBound
from memgpt_lite.memory.deps import MemoryDeps
from memgpt_lite.memory.recall.window import Budget, budget_for, compile_context
from memgpt_lite.models import AgentState
from memgpt_lite.settings.resolve import resolve_settings
from memgpt_lite.settings.values import Settings
from memgpt_lite.storage.protocol import Storage
from memgpt_lite.tools.schema import Tool
from memgpt_lite.tools.sets import agent_tools

# A chosen working window is rounded up to this many tokens.
WINDOW_STEP = 1_000
# How many times the fixed part a chosen working window holds, when the
# model's window allows: as much room to talk as the fixed part takes.
FIXED_SHARE = 2


@dataclass(frozen=True)
class WindowFit:
    """The window an agent works in, and what of it the fixed part takes."""

    budget: Budget
    fixed_tokens: int  # the fixed part of a request in that window
    tool_tokens: int  # of which the tool schemas

    @property
    def can_step(self) -> bool:
        """Whether the conversation keeps its least room beside the fixed part."""
        return self.fixed_tokens <= self.budget.core_floor

    @property
    def wanted(self) -> int:
        """The working window the agent should have: twice the fixed part."""
        return _rounded(FIXED_SHARE * self.fixed_tokens)


def measure(deps: MemoryDeps) -> WindowFit:
    """The agent's window, as its settings say now (stored or not), and the
    fixed part of a request in it."""
    fixed = compile_context(deps).fixed_tokens
    return WindowFit(budget_for(deps), fixed, deps.tool_tokens())


def choose_window(deps: MemoryDeps, outcome: str = "nothing was stored") -> WindowFit:
    """Give the agent (its `state`, not stored here) a working window that
    fits it, unless it was given one (see the module's docstring); a
    ConfigError if it cannot step even in its model's whole window, or in the
    working window it was given."""
    given = deps.state.settings.working_window is not None
    fit = measure(deps)
    for _ in range(3):  # the fixed part may change with the window; settles at once
        budget = fit.budget
        if given or budget.window >= min(fit.wanted, budget.model_window):
            break
        deps.state.settings.working_window = min(budget.model_window, fit.wanted)
        fit = measure(deps)
    if not fit.can_step:
        raise ConfigError(_too_small(deps.state.name, fit, given=given, outcome=outcome))
    return fit


def fit_new_agent(deps: MemoryDeps) -> WindowFit | None:
    """`choose_window` for an agent just stored in the caller's open
    transaction, storing the window chosen; on a ConfigError the caller's
    transaction rolls back, so the agent is never stored. None when it
    surely fits as it is (`fits_as_is`): nothing to choose or store."""
    if fits_as_is(deps):
        return None
    chosen = deps.state.settings.working_window
    fit = choose_window(deps)
    if deps.state.settings.working_window != chosen:
        deps.store.save_agent(deps.state)
    return fit


def fits_as_is(deps: MemoryDeps) -> bool:
    """Whether `choose_window` would surely keep the agent's window and
    accept it, decided from an upper bound of the fixed part, with no token
    counted. Only for an agent with no messages in its window (clipping one
    needs the encoder). False says nothing: measure."""
    read = deps.store.main_context(deps.state.id, deps.state.context_start)
    if read.messages:
        return False
    bound = compile_context(_Bounded(deps), read=read).fixed_tokens
    budget = budget_for(deps)
    given = deps.state.settings.working_window is not None
    # The exact fixed part is at most `bound`, so it wants at most this window.
    keeps = given or budget.window >= min(_rounded(FIXED_SHARE * bound), budget.model_window)
    return keeps and bound <= budget.core_floor


class _Bounded:
    """`deps` as compile_context reads it, counted by `TokenBound`."""

    def __init__(self, deps: MemoryDeps) -> None:
        self.deps, self.state, self.store = deps, deps.state, deps.store
        self.token_counter = TokenBound()

    def tool_schemas(self) -> list[dict[str, Any]]:
        return self.deps.tool_schemas()

    def tool_tokens(self) -> int:
        return self.token_counter.count_tools(self.tool_schemas())

    def __getattr__(self, name: str) -> Any:  # the rest of MemoryDeps, as `deps` has it
        return getattr(self.deps, name)


def check_window(deps: MemoryDeps) -> WindowFit:
    """The agent's window as its settings say now, or a ConfigError if it
    could not take a step in it (for a change of a stored agent, undone)."""
    fit = measure(deps)
    if not fit.can_step:
        raise ConfigError(
            _too_small(deps.state.name, fit, given=True, outcome="nothing was changed")
        )
    return fit


def fit_imported_agent(store: Storage, state: AgentState) -> list[str]:
    """`fit_new_agent` for an agent an import just wrote (agentfile/native.py),
    in the import's transaction: a note when a window was chosen."""
    chosen = state.settings.working_window
    fit = fit_new_agent(measuring_runner(state, store))
    if fit is None or state.settings.working_window == chosen:
        return []
    return [
        f"working window set to {fit.budget.window:,} tokens (of its model's "
        f"{fit.budget.model_window:,}): its instructions, core memory and tools take "
        f"{fit.fixed_tokens:,}"
    ]


def set_working_window(deps: MemoryDeps, setting: int | None) -> WindowFit:
    """Store `setting` as the agent's working window (None: chosen as for a
    new agent; 0: the model's whole window), unless the agent could not step
    in it: then a ConfigError naming the sizes, and nothing changes."""
    store = deps.store
    with store.transaction():
        deps.state = store.get_agent(deps.state.id)
        deps.state.settings.working_window = setting
        fit = choose_window(deps, "nothing was changed") if setting is None else check_window(deps)
        store.save_agent(deps.state)
    deps.state = store.get_agent(deps.state.id)
    return fit


@dataclass
class _Parts:
    """What a runner needs of an agent, for one that is only measured."""

    state: AgentState
    store: Storage
    tools: dict[str, Tool]
    process_settings: Settings
    on_wait: None = None


def measuring_runner(state: AgentState, store: Storage) -> Runner:
    """A runner of `state`, stored in `store`, with the tools it has there
    (those its code must give are not counted): to measure it, without an
    `Agent` and its warnings about those tools."""
    settings = resolve_settings()
    custom, _ = agent_custom_tools(state, store, {}, settings)
    tools = agent_tools(state.settings.tool_set, custom, state.tool_names)
    return Runner(_Parts(state, store, tools, settings))


def _too_small(name: str, fit: WindowFit, *, given: bool, outcome: str) -> str:
    budget, tools = fit.budget, fit.tool_tokens
    whose = "its model's" if budget.window == budget.model_window else "a"
    sizes = (
        f"agent {name!r} cannot work in {whose} {budget.window:,}-token window: its "
        f"instructions and core memory take {fit.fixed_tokens - tools:,} tokens and its "
        f"tools {tools:,}, over the {budget.core_floor:,} the window leaves them beside "
        f"the least room to talk; {outcome}."
    )
    if given and fit.wanted <= budget.model_window:
        return (
            f"{sizes} Give it a working window of {fit.wanted:,} tokens or more "
            f"(memgpt-lite window {name} {fit.wanted}, --working-window at create, or "
            "AgentSettings.working_window; 0 for all of its model's "
            f"{budget.model_window:,}), or shorten its blocks."
        )
    return (
        f"{sizes} Shorten its blocks (it would want a window of {fit.wanted:,} tokens), "
        "or give it a model with a larger window (--context-window, or "
        "AgentSettings.context_window, if its model has more)."
    )


def _rounded(tokens: int) -> int:
    return math.ceil(tokens / WINDOW_STEP) * WINDOW_STEP
