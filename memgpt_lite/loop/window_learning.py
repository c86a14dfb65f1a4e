"""Learning the context a model server really runs with, when it is smaller
than the window the agent assumed (see llm/server_window.py).

Two signs show it during a step:

- a refusal as too long (llama.cpp, vLLM): the window it states, else the
  one the server reports when asked;
- an answer whose usage counts fewer prompt tokens than we sent (Ollama
  truncates silently, and by a few tokens as much as by thousands): then
  the server is asked, once per model and window in a process, since a
  tokenizer unlike ours also counts fewer. Most servers have no such routes
  and answer 404; a local one tells its window before any truncation.

A window learned is stored as the agent's `context_window`, so the next
request, step and process work within it; the step reports it as a
`WindowLearned` event whose `fix` line names the server's setting and ours.
"""

from __future__ import annotations

import logging
from weakref import WeakKeyDictionary

from memgpt_lite.events import WindowLearned
from memgpt_lite.llm.model import Completion, ContextWindowExceeded, Model, WindowReporter
from memgpt_lite.llm.server_window import ServerWindow, raise_setting, stated_window
from memgpt_lite.memory.recall.window import budget_for
from memgpt_lite.models import AgentState
from memgpt_lite.tools.deps import AgentDeps

log = logging.getLogger(__name__)

# A stated window smaller than this is a server's mistake, not one to adopt:
# no agent could work in it, and the agent would be stuck with it.
MIN_LEARNED_WINDOW = 256
# The windows each model's server was already asked about after a short count.
_asked: WeakKeyDictionary[Model, set[int]] = WeakKeyDictionary()


async def learn_from_refusal(
    agent: AgentDeps, step_id: str, exc: ContextWindowExceeded
) -> WindowLearned | None:
    """After the endpoint refused a request as too long: adopt the window
    its refusal states, else the one its server reports, if smaller."""
    window = exc.stated or stated_window(str(exc), None)
    if window is None:
        window = await _reported(agent.llm, agent.state.llm.model)
    return _adopt(agent, step_id, window)


async def learn_from_usage(
    agent: AgentDeps, step_id: str, sent_tokens: int, completion: Completion
) -> WindowLearned | None:
    """After an answer: if the endpoint counted fewer prompt tokens than the
    `sent_tokens` we counted, ask its server once what it runs with."""
    counted = completion.usage.prompt_tokens
    if not counted or counted >= sent_tokens:
        return None
    ours = budget_for(agent).window
    asked = _asked.setdefault(agent.llm, set())
    if ours in asked:
        return None
    asked.add(ours)
    window = await _reported(agent.llm, agent.state.llm.model)
    return _adopt(agent, step_id, window)


async def _reported(model: Model, model_name: str) -> ServerWindow | None:
    if not isinstance(model, WindowReporter):
        return None
    return await model.server_window(model_name)


def _adopt(agent: AgentDeps, step_id: str, window: ServerWindow | None) -> WindowLearned | None:
    """Store `window` as the agent's, when it is smaller than the one it works in."""
    previous = budget_for(agent).window
    if window is None or not MIN_LEARNED_WINDOW <= window.tokens < previous:
        return None

    def learn(state: AgentState) -> None:
        state.settings.context_window = window.tokens

    agent.state = agent.store.update_agent(agent.state.id, learn)
    fix = fix_line(window, previous, agent.state.llm.model, agent.state.name)
    log.warning("agent %s: %s", agent.state.name, fix)
    return WindowLearned(
        step_id=step_id,
        tokens=window.tokens,
        previous=previous,
        server=window.server,
        fix=fix,
    )


def fix_line(window: ServerWindow, ours: int, model: str, agent: str) -> str:
    """One line: what the server runs, that the agent now works within it,
    and how to give it back the window it had."""
    return (
        f"{window.server} runs {model} with {window.tokens:,} tokens of context "
        f"({window.source}), less than the {ours:,} the agent used: it now works within "
        f"{window.tokens:,}. For {ours:,}, set {raise_setting(window, ours)}, then "
        f"`/model {model} {ours}` in `memgpt-lite chat {agent}`"
    )
