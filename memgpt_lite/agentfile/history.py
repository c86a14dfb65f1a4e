"""A history in an agent file, the agent's own (its default conversation)
or one of its other conversations: its messages in order, its window as an
index into them (`seq` values belong to one database), and the repair an
import applies to each so that the chat API accepts every window of it
(`pair_tool_calls`).

Tool calls stay paired by their `tool_call_id`. An answer waiting for the
user's approval (the last message, its calls with no results) is exported as
it is stored and imported still waiting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from memgpt_lite.agentfile.schema import (
    MISSING_RESULT,
    AgentFile,
    FileConversation,
    FileMessage,
)
from memgpt_lite.conversations import Conversation
from memgpt_lite.models import Message, ToolCall

Vector = np.ndarray | None


def window_index(messages: Sequence[Message], context_start: int) -> int:
    """Where the window starting at seq `context_start` starts among the
    stored `messages` (oldest first): an index, for the file."""
    return next((i for i, m in enumerate(messages) if (m.seq or 0) >= context_start), len(messages))


def window_seq(messages: Sequence[Message], start: int) -> int:
    """The seq the window starting at index `start` of the just stored
    `messages` starts at: for the new agent's (or conversation's) row."""
    if start < len(messages):
        return messages[start].seq or 0
    return (messages[-1].seq or 0) + 1 if messages else 0


def file_messages(messages: Sequence[Message], vectors: Mapping[int, str]) -> list[FileMessage]:
    """Stored messages as a file holds them: without their ids, seqs and
    conversation, each with its vector (`vectors`, by seq) if it has one."""
    return [
        FileMessage(
            **m.model_dump(exclude={"id", "agent_id", "seq", "conversation_id"}),
            vector=vectors.get(m.seq or 0),
        )
        for m in messages
    ]


def file_conversation(
    conversation: Conversation, messages: Sequence[Message], vectors: Mapping[int, str]
) -> FileConversation:
    """A conversation besides the default one, with its `messages`, as a
    file holds it: without ids, its window an index into its messages."""
    return FileConversation(
        summary=conversation.summary,
        messages=file_messages(messages, vectors),
        context_start=window_index(messages, conversation.context_start),
        window_summary=conversation.window_summary,
        pressure_warned=conversation.pressure_warned,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
    )


@dataclass
class NewHistory:
    """One history of a file (the agent's own, or one of its conversations)
    made the new agent's: the file's messages repaired (`pair_tool_calls`),
    as `read` from the file (with their vectors) and as new messages with
    fresh ids; where its window starts among them; notes on what the repair
    changed; the vector each message is stored with; and for a conversation
    besides the default one, its new row (`context_start` is set when the
    messages are stored: `stored_conversation`)."""

    read: list[FileMessage]
    messages: list[Message]
    start: int
    notes: list[str]
    conversation: Conversation | None = None
    vectors: list[Vector] = field(default_factory=list)

    def window_seq(self) -> int:
        """Where its window starts, once its messages are stored."""
        return window_seq(self.messages, self.start)

    def stored_conversation(self) -> Conversation | None:
        """The conversation's row, its window where it was, once its messages are stored."""
        if self.conversation is None:
            return None
        return self.conversation.model_copy(update={"context_start": self.window_seq()})


def new_history(
    read: Sequence[FileMessage],
    start: int,
    agent_id: str,
    conversation: Conversation | None = None,
) -> NewHistory:
    """The file's history `read`, its window from index `start`, as agent
    `agent_id`'s (in `conversation`; None: its default one)."""
    repaired, new_start, notes = pair_tool_calls(read, start)
    conversation_id = None if conversation is None else conversation.id
    messages = [
        Message(
            agent_id=agent_id, conversation_id=conversation_id, **m.model_dump(exclude={"vector"})
        )
        for m in repaired
    ]
    return NewHistory(repaired, messages, new_start, notes, conversation, [None] * len(messages))


def new_conversations(data: AgentFile, agent_id: str) -> list[NewHistory]:
    """The file's conversations besides the default one, as agent
    `agent_id`'s, with fresh ids; each one's notes say which it is."""
    made = []
    for number, read in enumerate(data.conversations, start=1):
        conversation = Conversation(
            agent_id=agent_id,
            summary=read.summary,
            window_summary=read.window_summary,
            pressure_warned=read.pressure_warned,
            created_at=read.created_at,
            updated_at=read.updated_at,
        )
        history = new_history(read.messages, read.context_start, agent_id, conversation)
        about = f" ({read.summary!r})" if read.summary else ""
        where = f"conversation {number} of {len(data.conversations)}{about}"
        history.notes = [f"{where}: {note}" for note in history.notes]
        made.append(history)
    return made


# Tool-call pairing


def _pair_group(
    assistant: FileMessage, results: Sequence[FileMessage]
) -> tuple[list[FileMessage], int, int]:
    """The assistant message and exactly one result per call, in call order.
    Returns them, the number of results made up for unanswered calls, and the
    number of results and repeated calls dropped."""
    calls: list[ToolCall] = []
    for call in assistant.tool_calls:
        if call.id not in {c.id for c in calls}:
            calls.append(call)
    dropped = len(assistant.tool_calls) - len(calls)
    by_id: dict[str, FileMessage] = {}
    for result in results:
        if result.tool_call_id in {c.id for c in calls} and result.tool_call_id not in by_id:
            by_id[result.tool_call_id] = result
        else:
            dropped += 1
    answers, made_up = [], 0
    for call in calls:
        answer = by_id.get(call.id)
        if answer is None:
            made_up += 1
            answer = FileMessage(
                role="tool",
                content=MISSING_RESULT,
                tool_call_id=call.id,
                step_id=assistant.step_id,
                created_at=assistant.created_at,
            )
        if answer.name is None:
            answer = answer.model_copy(update={"name": call.name})
        answers.append(answer)
    return [assistant.model_copy(update={"tool_calls": calls}), *answers], made_up, dropped


def pair_tool_calls(
    messages: Sequence[FileMessage], start: int
) -> tuple[list[FileMessage], int, list[str]]:
    """Messages the chat API accepts in any window: every tool call answered
    by the tool messages right after it, no result without its call; but
    for the last message, when it is an answer whose calls have no results at
    all: that answer waits for the user's approval, as it did when exported
    (an earlier answer never does, so its missing results are made up). Returns
    the messages, where the window (`start` before) now starts, and notes on
    what changed. A window starting at a tool result takes in its call."""
    out: list[FileMessage] = []
    new_start: int | None = None
    made_up = dropped = waiting = 0
    i = 0
    while i < len(messages):
        message, end = messages[i], i + 1
        if message.role == "assistant" and message.tool_calls:
            while end < len(messages) and messages[end].role == "tool":
                end += 1
        if new_start is None and end > start:
            new_start = len(out)
        if message.role == "tool":  # a result with no call right before it
            dropped += 1
        elif message.tool_calls and end == i + 1 == len(messages):
            # The last answer, with no results: it waits for the user's approval
            # (loop/approvals.py), as it did where it was exported.
            group, _, group_dropped = _pair_group(message, [])
            out.append(group[0])
            dropped += group_dropped
            waiting = len(group) - 1
        elif message.role == "assistant" and message.tool_calls:
            group, group_made_up, group_dropped = _pair_group(message, messages[i + 1 : end])
            out.extend(group)
            made_up += group_made_up
            dropped += group_dropped
        else:
            out.append(message)
        i = end
    new_start = len(out) if new_start is None else new_start
    if waiting:  # the results the user's answer adds need their call in the window
        new_start = min(new_start, len(out) - 1)
    notes = []
    if made_up:
        notes.append(f"{made_up} tool calls had no result; each was given an error result")
    if dropped:
        notes.append(f"{dropped} tool results or repeated calls without a matching call dropped")
    if waiting:
        them = "it" if waiting == 1 else "them"
        notes.append(
            f"{waiting} tool call{'s' if waiting > 1 else ''} waiting for approval: "
            f"approve or deny {them}"
        )
    return out, new_start, notes
