"""Edits to an agent's conversation history: pop, retry, rethink, rewrite;
and `History`, the history as an agent's user reaches it (`agent.history`).

An *exchange* is a user message and everything stored after it up to the next
user message: the model's responses, their tool results, any system alerts.
Only the context window can be edited. Messages before `state.context_start`
are already folded into the summary, so changing them would make the summary
lie; those edits are refused.

Deleting whole exchanges from the end can never orphan a tool call: a call and
its results are stored together, after the user message that led to them.
Every edit holds the agent's step lock, so none lands in the middle of a step
running in another process.
The storage contract does the rest: deleted messages leave search, the
counts and the vectors with them (`Storage.delete_messages_from`), and an
edited message's vector is dropped so the next search embeds it again
(`Storage.update_message`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from memgpt_lite.errors import ConfigError, ConflictError
from memgpt_lite.memory.recall.answered import unanswered
from memgpt_lite.memory.retrieval.search import search_messages
from memgpt_lite.models import Message
from memgpt_lite.text import clean_text

if TYPE_CHECKING:
    from memgpt_lite.memory.deps import MemoryDeps

_FOLDED = "older messages are folded into the summary and cannot be edited"


def _window(agent: MemoryDeps, read_only: bool = False) -> list[Message]:
    """The messages in the context window, with the agent state read fresh:
    another process may have compacted or added messages meanwhile. Copies,
    or `read_only` the ones the store keeps (`Storage.window`), for a look
    that changes and hands out nothing: no copy of a long window."""
    state = agent.state
    agent.state = state = agent.store.get_agent(state.id, conversation=state.conversation_id)
    if read_only:
        return agent.store.window(state.id, state.context_start, state.conversation_id)
    return agent.context_messages()


def exchange_starts(agent: MemoryDeps) -> list[Message]:
    """The user messages in the context window, oldest first: one per exchange
    that can be edited."""
    return [m for m in _window(agent) if m.role == "user"]


def pop_exchanges(agent: MemoryDeps, n: int = 1) -> int:
    """Delete the last `n` exchanges, in one transaction. Returns how many
    messages were deleted. Refuses (deleting nothing) when fewer than `n`
    exchanges are in the context window."""
    if n < 1:
        raise ConfigError(f"the number of exchanges to remove must be at least 1, got {n}")
    with agent.step_lock(), agent.store.transaction():
        window = _window(agent)
        starts = [m for m in window if m.role == "user"]
        if len(starts) < n:
            raise ConfigError(
                f"only {len(starts)} exchange(s) are in the context window; {_FOLDED}"
            )
        first = starts[-n]
        state = agent.state
        deleted = agent.store.delete_messages_from(state.id, first.seq or 0, state.conversation_id)
    for message in window:
        if (message.seq or 0) >= (first.seq or 0):
            agent.token_counter.forget(message.id)
    return deleted


def last_user_message(agent: MemoryDeps) -> Message:
    """The user message that starts the last exchange in the context window."""
    starts = exchange_starts(agent)
    if not starts:
        raise ConfigError(f"there is no user message in the context window; {_FOLDED}")
    return starts[-1]


def pop_for_retry(agent: MemoryDeps) -> str:
    """Remove the last exchange and return its user message, to send again."""
    with agent.step_lock():
        text = last_user_message(agent).content or ""
        pop_exchanges(agent, 1)
    return text


def _edit_last(
    agent: MemoryDeps, text: str, what: str, edit: Callable[[Message, str], Message | None]
) -> Message:
    """Apply `edit` to the newest message in the window it accepts (it returns
    the edited copy, or None to look further back), and store the result."""
    if not text.strip():
        raise ConfigError(f"the new {what} is empty")
    text = clean_text(text)  # model_copy(update=...) below does not validate
    with agent.step_lock(), agent.store.transaction():
        for message in reversed(_window(agent)):
            edited = edit(message, text)
            if edited is not None:
                agent.store.update_message(edited)
                agent.token_counter.forget(edited.id)
                return edited
    raise ConfigError(f"there is no {what} in the context window to replace; {_FOLDED}")


def _with_thought(message: Message, text: str) -> Message | None:
    # A thought is the text that comes with tool calls; without calls it is a reply.
    if message.role != "assistant" or not message.tool_calls:
        return None
    return message.model_copy(update={"content": text})


def rethink(agent: MemoryDeps, text: str) -> Message:
    """Replace the inner thought of the agent's last response that made tool calls."""
    return _edit_last(agent, text, "inner thought", _with_thought)


def _with_reply(message: Message, text: str) -> Message | None:
    if message.role != "assistant":
        return None
    if not message.tool_calls:
        return message.model_copy(update={"content": text}) if message.content else None
    # With several replies in one response, the last is the one the user saw last.
    for i, call in reversed(list(enumerate(message.tool_calls))):
        arguments = call.send_message_arguments()
        if arguments is None:
            continue
        new_call = call.model_copy(update={"arguments": json.dumps({**arguments, "message": text})})
        calls = [*message.tool_calls[:i], new_call, *message.tool_calls[i + 1 :]]
        return message.model_copy(update={"tool_calls": calls})
    return None


def rewrite(agent: MemoryDeps, text: str) -> Message:
    """Replace the agent's last reply: the message of its last send_message
    call, or its last plain-text answer."""
    return _edit_last(agent, text, "reply", _with_reply)


def _with_text(message: Message, text: str) -> Message | None:
    # What the user said, or a system note: their whole content.
    if message.role not in ("user", "system"):
        return None
    return message.model_copy(update={"content": text})


# The parts of a message that can be edited, and how each is changed.
EDITS: dict[str, Callable[[Message, str], Message | None]] = {
    "text": _with_text,
    "inner thought": _with_thought,
    "reply": _with_reply,
}


def edit_message(agent: MemoryDeps, message_id: str, part: str, text: str) -> Message:
    """Replace `part` (a key of EDITS) of the message `message_id` in the
    context window. Refused, changing nothing, when the message is not in
    the window or has no such part."""
    if not text.strip():
        raise ConfigError(f"the new {part} is empty")
    text = clean_text(text)
    with agent.step_lock(), agent.store.transaction():
        found = [m for m in _window(agent) if m.id == message_id]
        if not found:
            raise ConflictError(f"message {message_id!r} is not in the context window; {_FOLDED}")
        edited = EDITS[part](found[0], text)
        if edited is None:
            raise ConfigError(f"message {message_id!r} has no {part} to replace")
        agent.store.update_message(edited)
        agent.token_counter.forget(edited.id)
    return edited


def unanswered_note(agent: MemoryDeps, resend: str, drop: str) -> str | None:
    """If the user's last message went unanswered (its step failed or was
    cancelled before the model responded), one line saying so and naming the
    commands that send it again and drop it; else None."""
    window = _window(agent, read_only=True)
    starts = [m for m in window if m.role == "user"]
    if not starts or starts[-1] not in unanswered(window):
        return None
    text = " ".join((starts[-1].content or "").split())
    shown = text if len(text) <= 60 else text[:59] + "…"
    return f'Your message "{shown}" was not answered: {resend} sends it again, {drop} drops it.'


class History:
    """An agent's conversation history (recall memory), as `agent.history`:
    search it, see what went unanswered, and edit the end of the context
    window (pop, rethink, rewrite). `agent.runner.retry()`, which sends the
    last message again, is a step: the runner's."""

    def __init__(self, agent: MemoryDeps) -> None:
        self.agent = agent

    def search(self, query: str, limit: int = 10, offset: int = 0) -> tuple[list[Message], int]:
        """One page of the past user and assistant messages that match
        `query`, best first, and how many match (as conversation_search
        finds them: by words, and by meaning with an embedder)."""
        return search_messages(self.agent, query, limit, offset)

    def unanswered(self) -> list[Message]:
        """The user's messages in the context window that the model never
        answered (their step failed or was cancelled before it responded),
        oldest first. They are left out of requests; `agent.runner.retry()`
        sends the last one again, `pop_exchanges()` drops it."""
        return unanswered(self.agent.context_messages())

    def unanswered_note(self, resend: str, drop: str) -> str | None:
        """One line saying that the user's last message went unanswered,
        naming the commands `resend` and `drop`; None if it was answered."""
        return unanswered_note(self.agent, resend, drop)

    def pop_exchanges(self, n: int = 1) -> int:
        """Delete the last `n` exchanges (a user message and all that followed
        it). Returns how many messages were deleted."""
        return pop_exchanges(self.agent, n)

    def pop_for_retry(self) -> str:
        """Remove the last exchange and return its user message, to send
        again (hold `agent.runner.step_lock()` across this and the step)."""
        return pop_for_retry(self.agent)

    def rethink(self, text: str) -> Message:
        """Replace the inner thought of the last response that made tool calls."""
        return rethink(self.agent, text)

    def rewrite(self, text: str) -> Message:
        """Replace the last reply the user saw."""
        return rewrite(self.agent, text)

    def edit(self, message_id: str, part: str, text: str) -> Message:
        """Replace one part of a message in the context window: "text" (what
        the user said, or a system note), "inner thought" or "reply" (of an
        answer; its last reply, if it sent several)."""
        return edit_message(self.agent, message_id, part, text)
