"""Core memory: rendering the blocks into the system message, and the rules for
editing them. Edit functions raise `ModelRetry` with what to do instead, so the
same rules serve the model's tools and a user's edits."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from datetime import datetime
from importlib import resources
from pathlib import Path

from memgpt_lite.errors import ModelRetry
from memgpt_lite.models import AgentStats, Block


@functools.cache
def load_prompt(name: str) -> str:
    """Text of `prompts/NAME.md`: from the installed package, or from the
    source tree for an editable install."""
    packaged = resources.files("memgpt_lite") / "prompts" / f"{name}.md"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8").strip()
    source_tree = Path(__file__).resolve().parents[3] / "prompts" / f"{name}.md"
    return source_tree.read_text(encoding="utf-8").strip()


# Below this working window (in tokens) the system prompt and the tool schemas
# take their compact wording (prompts/system_compact.md, the tools' `brief`s):
# the full wording of the largest tool set is about 2,600 tokens, which would
# pass a fifth of any window under about 13,000; the compact one still states
# every rule and describes every tool and argument.
COMPACT_WORDING_BELOW = 16_384
# What the compact schemas leave out of each `request_heartbeat`, said once
# after a system prompt of the agent's own (ours say it already).
# What the default `persona` and `human` blocks are for (the compact prompt
# says it once instead).
STOCK_DESCRIPTIONS = {
    "persona": "Who you are: your personality, voice and goals.",
    "human": "What you know about the user you are talking to.",
}
HEARTBEAT_NOTE = (
    "Every tool but send_message takes request_heartbeat: true to act again "
    "after its result, false to end your turn."
)


def compact_wording(window: int) -> bool:
    """Whether an agent working in a `window`-token window gets the compact
    wording of the system prompt and the tool schemas."""
    return window < COMPACT_WORDING_BELOW


# How the prompts name the core memory tools: the classic set's words, and
# what each other tool set (AgentSettings.tool_set) says instead.
_CLASSIC_WORDS = {
    "system": "Edit blocks with `core_memory_append` and `core_memory_replace`.",
    "system_compact": "Edit with core_memory_append and core_memory_replace.",
    "memory_pressure": "(core_memory_append, core_memory_replace)",
}
_SET_WORDS = {
    "letta-v1": {
        "system": "Edit blocks with `memory_insert` (add lines at a line number), "
        "`memory_replace` (change one exact piece of text) and `memory_rethink` (rewrite a "
        "whole block); the `memory` tool also creates, deletes and renames blocks, named by "
        "paths such as /memories/notes.",
        "system_compact": "Edit with memory_insert, memory_replace, memory_rethink and memory.",
        "memory_pressure": "(memory_insert, memory_replace, memory_rethink)",
    },
    "anthropic-memory": {
        "system": "Edit them with the `memory` tool: each block is a file under /memories "
        "(the `human` block is /memories/human) that you can view, create, edit, rename "
        "and delete.",
        "system_compact": "Each is a file, /memories/LABEL: edit with memory.",
        "memory_pressure": "(the memory tool, on your /memories files)",
    },
}
# The tool sets whose words the prompts hold: the classic one and the others.
_WORDED_SETS = ("memgpt", *_SET_WORDS)


def memory_prompt(name: str, tool_set: str) -> str:
    """`prompts/NAME.md` as an agent with that tool set reads it: the classic
    memory tools' names replaced by its own set's."""
    text = load_prompt(name)
    words = _SET_WORDS.get(tool_set, {}).get(name)
    return text if words is None else text.replace(_CLASSIC_WORDS[name], words)


@functools.cache
def _default_systems() -> dict[str, str]:
    """The tool set each default system prompt (as `new_state` stores it) is for."""
    return {memory_prompt("system", tool_set): tool_set for tool_set in _WORDED_SETS}


def instructions(system: str, compact: bool) -> str:
    """The agent's system prompt as a request holds it: in the compact
    wording, a default prompt (one a new agent got) is swapped for its
    compact version, and a prompt of the agent's own is followed by
    `HEARTBEAT_NOTE`, which the compact schemas leave out."""
    if not compact:
        return system
    tool_set = _default_systems().get(system)
    if tool_set is not None:
        return memory_prompt("system_compact", tool_set)
    return f"{system}\n\n{HEARTBEAT_NOTE}"


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value else "never"


def render_block(block: Block, compact: bool = False) -> str:
    """A block as the system message shows it. The compact wording leaves out
    the <value> element and the stock description of `persona` and `human`,
    which its prompt says in a few words."""
    attributes = [f'label="{block.label}"', f'chars="{len(block.value)}/{block.limit}"']
    if block.read_only:
        attributes.append('read_only="true"')
    lines = [f"<block {' '.join(attributes)}>"]
    if block.description and not (
        compact and STOCK_DESCRIPTIONS.get(block.label) == block.description
    ):
        lines.append(f"<description>{block.description}</description>")
    lines += [block.value if compact else f"<value>\n{block.value}\n</value>", "</block>"]
    return "\n".join(lines)


def render_metadata(stats: AgentStats, now: datetime, compact: bool = False) -> str:
    # An archive attached to the agent is its archival memory too.
    passages = stats.passage_count + stats.attached_passage_count
    if compact:
        return (
            f"<memory_metadata>{now.strftime('%A %Y-%m-%d')}; edited "
            f"{_when(stats.memory_updated_at)}; recall {stats.message_count} messages, "
            f"archival {passages} passages</memory_metadata>"
        )
    return "\n".join(
        [
            "<memory_metadata>",
            f"Current date: {now.strftime('%Y-%m-%d (%A)')}",
            f"Memory last modified: {_when(stats.memory_updated_at)}",
            f"{stats.message_count} messages in recall memory (search with conversation_search)",
            f"{passages} passages in archival memory (search with archival_memory_search)",
            "</memory_metadata>",
        ]
    )


def render_summary(summary: str, hidden_messages: int) -> str:
    """The recursive summary, with how many messages are out of view and how to find them."""
    lines = [f'<summary hidden_messages="{hidden_messages}">']
    if summary:
        lines.append(summary)
    lines.append(
        f"{hidden_messages} earlier messages are out of view but stored in recall memory; "
        "find them with conversation_search or conversation_search_date."
    )
    lines.append("</summary>")
    return "\n".join(lines)


def system_sections(
    system: str,
    blocks: Sequence[Block],
    stats: AgentStats,
    now: datetime,
    summary: str = "",
    hidden_messages: int = 0,
    compact: bool = False,
) -> list[tuple[str, str]]:
    """The named parts of the system message, in order: instructions (the
    agent's system prompt, in the compact wording if `compact`: see
    `instructions`), memory metadata, the summary (once messages have left
    the window), then each core memory block (named "block:LABEL")."""
    sections = [
        ("system instructions", instructions(system, compact)),
        ("memory metadata", render_metadata(stats, now, compact)),
    ]
    if summary or hidden_messages:
        sections.append(("summary", render_summary(summary, hidden_messages)))
    sections += [(f"block:{b.label}", render_block(b, compact)) for b in blocks]
    return sections


def join_sections(sections: Sequence[tuple[str, str]]) -> str:
    """The system message text: the blocks go inside one <core_memory> element."""
    head = [text for name, text in sections if not name.startswith("block:")]
    blocks = [text for name, text in sections if name.startswith("block:")]
    return "\n\n".join([*head, "<core_memory>\n" + "\n".join(blocks) + "\n</core_memory>"])


def check_editable(block: Block) -> None:
    if block.read_only:
        raise ModelRetry(f"block {block.label!r} is read-only: it cannot be edited.")


def _check_fits(block: Block, new_value: str, condense: str = "core_memory_replace") -> None:
    if len(new_value) > block.limit:
        raise ModelRetry(
            f"block {block.label!r} would hold {len(new_value)} characters, over its limit of "
            f"{block.limit} ({len(block.value)} used now). Nothing was changed. Make the "
            f"text shorter, condense the block with {condense}, or save the detail "
            "with archival_memory_insert."
        )


def append_to_block(block: Block, content: str) -> str | None:
    """The block's new value after appending `content` as a line, or None when
    the block already holds that line (a no-op)."""
    check_editable(block)
    if not content.strip():
        raise ModelRetry("content is empty: there is nothing to append.")
    if content.strip() in (line.strip() for line in block.value.splitlines()):
        return None
    new_value = f"{block.value}\n{content}" if block.value else content
    _check_fits(block, new_value)
    return new_value


def replace_in_block(block: Block, old_content: str, new_content: str) -> str:
    """The block's new value with every `old_content` replaced by `new_content`
    (an empty `new_content` deletes it)."""
    check_editable(block)
    if not old_content:
        raise ModelRetry("old_content is empty: give the exact text to replace.")
    if old_content not in block.value:
        raise ModelRetry(
            f"old_content was not found in block {block.label!r}; nothing was changed. "
            "Copy the exact text, including punctuation, from the block."
        )
    new_value = block.value.replace(old_content, new_content)
    _check_fits(block, new_value)
    return new_value


def set_block_value(block: Block, value: str, condense: str = "core_memory_replace") -> str:
    """Check a whole new value for a block (a user's edit, or a tool's that
    condenses with the tool named by `condense`)."""
    check_editable(block)
    _check_fits(block, value, condense)
    return value


# A sentence of the persona template that holds the agent's name.
_NAME_SENTENCE = re.compile(r"[^.!?\n]*\{name\}[^.!?\n]*[.!?]?[ \t]*")


def default_persona(name: str | None = None) -> str:
    """The persona template (prompts/persona.md) for an agent called `name`;
    without a name, the sentences that would hold it are left out."""
    template = load_prompt("persona")
    if name is None:
        return _NAME_SENTENCE.sub("", template).strip()
    return template.replace("{name}", name)


def default_blocks(
    persona: str | None = None, human: str | None = None, *, name: str | None = None
) -> list[Block]:
    """The `persona` and `human` blocks, from the given text or the templates;
    the persona template says the agent is called `name`."""
    return [
        Block(
            label="persona",
            value=default_persona(name) if persona is None else persona,
            description=STOCK_DESCRIPTIONS["persona"],
        ),
        Block(
            label="human",
            value=load_prompt("human") if human is None else human,
            description=STOCK_DESCRIPTIONS["human"],
        ),
    ]
