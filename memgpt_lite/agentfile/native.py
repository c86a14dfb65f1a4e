"""Agent files: move a whole agent between databases and machines.

`export_agent` writes everything that defines an agent to one JSON document,
`{"format": "memgpt_lite.agent", "version": 2, ...}`: blocks, every message of
recall memory in order, the context window, summary, archival passages, stored
vectors, settings, LLM config, system prompt and custom tool names; and its
other conversations, each with its messages, window and summaries (the
versions: schema.py).
`import_agent` stores such a file, or a Letta `.af` file (`letta.py`),
as a new agent in one transaction: on any error nothing is stored.

Left out on purpose: the API key (never stored anywhere); the code of custom
tools given in code, only their names (pass the tools to `Agent.load`, which
warns about missing ones; registered tools travel with their code, and an
import registers them not trusted, see file_tools.py); and ids: an import
gives the agent, blocks, conversations, messages and passages fresh ids, so
a file can be imported again as an independent copy.
Tool calls stay paired by their `tool_call_id`, and the window is an index
into the file's messages: history.py, which also holds the repair an import
applies (`pair_tool_calls`). A block shared with other agents is exported with this one and
imported as the new agent's own block: sharing is within one database. Vectors
are base64 little-endian float32 with the embedder's name and dimension; an
import with another embedder re-embeds the passages instead.

The file's models are in `schema.py`, which the Letta converter builds too.
"""

from __future__ import annotations

import base64
import heapq
import os
import uuid
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from memgpt_lite.agent.setup import embedder_for
from memgpt_lite.agent.sizing import fit_imported_agent
from memgpt_lite.agentfile.file_tools import exported_tools, register_tools
from memgpt_lite.agentfile.history import (
    NewHistory,
    Vector,
    file_conversation,
    file_messages,
    new_conversations,
    new_history,
    window_index,
)
from memgpt_lite.agentfile.letta import is_letta_file, letta_to_agent_file, letta_to_agent_files
from memgpt_lite.agentfile.schema import (
    FORMAT,
    OLDEST_VERSION,
    VERSION,
    AgentFile,
    AgentFileError,
    FileBlock,
    FileMessage,
    FilePassage,
    lowest_version,
    validation_problems,
)
from memgpt_lite.embeddings.embedder import Embedder
from memgpt_lite.errors import AlreadyExistsError, ConfigError
from memgpt_lite.memory.core.block_history import IMPORT
from memgpt_lite.models import DEFAULT_USER, AgentState, Block, Passage
from memgpt_lite.settings.resolve import resolve_settings
from memgpt_lite.storage.protocol import Owner, Storage
from memgpt_lite.text import JSONProblem, parse_json


class ImportReport(BaseModel):
    """What `import_agent` stored, and what it had to change on the way."""

    name: str
    agent_id: str
    source: Literal["memgpt_lite", "letta"] = "memgpt_lite"
    blocks: int = 0
    messages: int = 0
    messages_in_context: int = 0
    # The agent's conversations besides its default one, and their messages.
    conversations: int = 0
    conversation_messages: int = 0
    passages: int = 0
    vectors: int = 0
    notes: list[str] = Field(default_factory=list)


class LoadedAgentFile(BaseModel):
    """A file read and converted to our format, with notes on what the conversion changed."""

    agent: AgentFile
    source: Literal["memgpt_lite", "letta"] = "memgpt_lite"
    notes: list[str] = Field(default_factory=list)


# Export


def encode_vector(vector: np.ndarray) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: str, dimension: int, where: str) -> np.ndarray:
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise AgentFileError(f"{where}: the vector is not base64") from None
    if len(raw) != 4 * dimension:
        raise AgentFileError(
            f"{where}: the vector holds {len(raw)} bytes, not {dimension} float32 values"
        )
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


def _stored_vectors(store: Storage, state: AgentState, owner: Owner) -> dict[int, str]:
    if not state.embedding_dimension:
        return {}
    stored = store.load_vectors(state.id, owner, 0, state.embedding_dimension)
    return {
        int(seq): encode_vector(row) for seq, row in zip(stored.seqs, stored.matrix, strict=True)
    }


def export_agent(store: Storage, name: str) -> AgentFile:
    """Everything that defines agent `name`, as an `AgentFile`."""
    # One snapshot: the agent, its messages and passages agree even while
    # another process is writing.
    with store.snapshot():
        state = store.get_agent(name)
        blocks = store.get_blocks(state.id)
        messages = store.messages_from(state.id, 0)
        conversations = [
            (found, store.messages_from(state.id, 0, found.id))
            for found in store.list_conversations(state.id)
        ]
        count = store.agent_stats(state.id).passage_count
        passages = store.list_passages(state.id, limit=max(count, 1))[0][::-1]  # oldest first
        message_vectors = _stored_vectors(store, state, "message")
        passage_vectors = _stored_vectors(store, state, "passage")
        tools = exported_tools(store, state)
    index = {p.id: i for i, p in enumerate(passages)}  # what replaced a passage, in the file
    others = [file_conversation(c, found, message_vectors) for c, found in conversations]
    return AgentFile(
        version=lowest_version(others),
        name=state.name,
        created_at=state.created_at,
        system=state.system,
        llm=state.llm,
        settings=state.settings,
        tool_names=state.tool_names,
        tools=tools,
        blocks=[FileBlock(**b.model_dump(exclude={"id"})) for b in blocks],
        messages=file_messages(messages, message_vectors),
        context_start=window_index(messages, state.context_start),
        summary=state.summary,
        pressure_warned=state.pressure_warned,
        embedding_model=state.embedding_model,
        embedding_dimension=state.embedding_dimension,
        passages=[
            FilePassage(
                **p.model_dump(include={"text", "tags", "context", "created_at", "superseded_at"}),
                vector=passage_vectors.get(p.seq or 0),
                superseded_by=index.get(p.superseded_by or ""),
            )
            for p in passages
        ],
        conversations=others,
    )


def write_agent_file(
    store: Storage, name: str, path: str | Path, *, overwrite: bool = False
) -> AgentFile:
    """Export agent `name` to `path`. The file appears whole or not at all."""
    path = Path(path).expanduser()
    if path.exists() and not overwrite:
        raise AlreadyExistsError(f"{path} already exists; choose another file or replace it")
    data = export_agent(store, name)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")
    try:
        partial.write_text(data.model_dump_json(indent=2), encoding="utf-8")
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    return data


# Reading


def load_json(path: str | Path) -> Any:
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AgentFileError(f"{path} is not an agent file: it is not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return parse_json(text)  # strings cleaned; too deep, NaN or huge numbers refused
    except JSONProblem as exc:
        raise AgentFileError(f"{path} is not an agent file: {exc}") from None


def _unwrapped(raw: Any) -> Any:
    if isinstance(raw, str):  # some published .af files are a JSON string holding the JSON
        with suppress(JSONProblem):
            return parse_json(raw)
    return raw


def parse_agent_file(
    raw: Any, source: str = "the file", letta_agent: str | None = None
) -> LoadedAgentFile:
    """Our format or Letta's, told apart by the `format` marker."""
    raw = _unwrapped(raw)
    if not isinstance(raw, dict):
        raise AgentFileError(f"{source} is not an agent file: it holds no JSON object")
    if "format" in raw:
        return LoadedAgentFile(agent=_our_format(raw, source))
    if is_letta_file(raw):
        agent, notes = letta_to_agent_file(raw, source, letta_agent)
        return LoadedAgentFile(agent=agent, source="letta", notes=notes)
    raise AgentFileError(
        f'{source} is not an agent file: no "format": "{FORMAT}" marker, and not a Letta .af file'
    )


def _our_format(raw: dict[str, Any], source: str) -> AgentFile:
    marker, version = raw.get("format"), raw.get("version")
    if marker != FORMAT:
        raise AgentFileError(
            f"{source}: unknown format {marker!r}; expected {FORMAT!r} or a Letta .af file"
        )
    if not isinstance(version, int) or isinstance(version, bool):
        raise AgentFileError(f"{source}: the format version must be a number, not {version!r}")
    if not OLDEST_VERSION <= version <= VERSION:
        newer = " (written by a newer memgpt_lite: upgrade to read it)" if version > VERSION else ""
        raise AgentFileError(
            f"{source}: version {version} of the {FORMAT} format is not supported; this "
            f"memgpt_lite reads versions {OLDEST_VERSION} to {VERSION}{newer}"
        )
    try:
        return AgentFile.model_validate(raw)
    except ValidationError as exc:
        raise AgentFileError(
            f"{source} is not a valid agent file: {validation_problems(exc)}"
        ) from None


def read_agent_file(path: str | Path, letta_agent: str | None = None) -> LoadedAgentFile:
    """Read our format or a Letta `.af` file. `letta_agent` picks one agent of
    a Letta file that holds several."""
    return parse_agent_file(load_json(path), str(path), letta_agent)


# Import

# A check of an imported agent's base URL, given the URL and where it came from.
EndpointCheck = Callable[[str | None, str], object]


def _new_state(data: AgentFile, name: str | None, owner: str) -> AgentState:
    try:
        return AgentState(
            name=name or data.name,
            owner=owner,
            llm=data.llm.model_copy(),
            system=data.system,
            tool_names=data.tool_names,
            summary=data.summary,
            pressure_warned=data.pressure_warned,
            settings=data.settings.model_copy(),
            created_at=data.created_at,
        )
    except ValidationError as exc:
        hint = "" if name else "; choose another name with --name"
        raise ConfigError(
            f"cannot import agent {name or data.name!r}: {validation_problems(exc)}{hint}"
        ) from None


def _new_blocks(blocks: Sequence[FileBlock], shared: dict[str, Block] | None = None) -> list[Block]:
    """New blocks for the file's; with `shared`, a block whose key is there
    is that block (stored already, so the new agent is linked to it), and a
    new keyed block is put there for the next agent of the same file."""
    made = []
    for block in blocks:
        if shared is not None and block.key is not None and block.key in shared:
            made.append(shared[block.key])
            continue
        try:
            made.append(Block(**block.model_dump(exclude_none=True)))
        except ValidationError as exc:
            raise AgentFileError(f"block {block.label!r}: {validation_problems(exc)}") from None
        if shared is not None and block.key is not None:
            shared[block.key] = made[-1]
    return made


def _file_vectors(
    items: Sequence[FileMessage | FilePassage], dimension: int, kind: str
) -> list[Vector]:
    return [
        decode_vector(item.vector, dimension, f"{kind} {i}") if item.vector else None
        for i, item in enumerate(items)
    ]


def _plan_vectors(
    data: AgentFile, histories: Sequence[NewHistory], embedder: Embedder | None
) -> tuple[str | None, int | None, list[Vector]]:
    """The embedding space of the new agent, and a vector (or None) per
    passage and per message of `histories` (set there): the file's, or, with
    another embedder, the passages embedded anew (messages are embedded at
    their next search, so theirs stay None)."""
    if embedder is None or (
        embedder.name == data.embedding_model
        and embedder.dimension in (None, data.embedding_dimension)
    ):
        dimension = data.embedding_dimension or 0
        for number, history in enumerate(histories):
            kind = f"conversation {number} message" if number else "message"
            history.vectors = _file_vectors(history.read, dimension, kind)
        passages = _file_vectors(data.passages, dimension, "passage")
        return data.embedding_model, data.embedding_dimension, passages
    if not data.passages:  # the space is recorded when the first vector is stored
        return None, None, []
    # Embedded before the import's transaction, so no network call holds the write lock.
    matrix = embedder.embed([p.text for p in data.passages])
    return embedder.name, int(matrix.shape[1]), list(matrix)


def _add_vectors(
    store: Storage, agent_id: str, owner: Owner, pairs: list[tuple[int, Vector]]
) -> int:
    kept = [(seq, vector) for seq, vector in pairs if vector is not None]
    if kept:
        store.add_vectors(agent_id, owner, [s for s, _ in kept], np.stack([v for _, v in kept]))
    return len(kept)


def _write_agent(
    store: Storage,
    state: AgentState,
    blocks: list[Block],
    histories: list[NewHistory],
    passages: list[tuple[Passage, Vector]],
) -> tuple[int, int]:
    """Write the new agent in one transaction, its own history (the first
    of `histories`) and its other conversations. Returns the passages
    stored (exact repeats are skipped) and the passage vectors stored."""
    # Every conversation's messages in order of time, as they were stored
    # where the file was written; each conversation's own order is kept.
    messages = list(
        heapq.merge(
            *(zip(h.messages, h.vectors, strict=True) for h in histories),
            key=lambda pair: pair[0].created_at,
        )
    )
    with store.transaction():
        try:
            store.create_agent(state, blocks, author=IMPORT)
        except AlreadyExistsError:
            raise AlreadyExistsError(
                f"an agent named {state.name!r} already exists; import under another name "
                "with --name NEW"
            ) from None
        store.add_messages([m for m, _ in messages])
        stored = store.add_passages([p for p, _ in passages])
        kept = [(p.seq or 0, v) for (p, v), ok in zip(passages, stored, strict=True) if ok]
        vectors = _add_vectors(store, state.id, "passage", kept)
        _add_vectors(store, state.id, "message", [(m.seq or 0, v) for m, v in messages])
        state.context_start = histories[0].window_seq()
        store.save_agent(state)
        for history in histories[1:]:
            conversation = history.stored_conversation()
            if conversation is not None:
                store.create_conversation(conversation)
    return len(kept), vectors


def _new_passages(passages: Sequence[FilePassage], agent_id: str) -> list[Passage]:
    """The file's passages with fresh ids, each superseded one pointing at the
    fresh id of the passage (by index in the file) that replaced it."""
    new = [
        Passage(agent_id=agent_id, **p.model_dump(exclude={"vector", "superseded_by"}))
        for p in passages
    ]
    for i, (passage, read) in enumerate(zip(new, passages, strict=True)):
        if read.superseded_by is None:
            continue
        if read.superseded_by == i or read.superseded_by >= len(new):
            raise AgentFileError(
                f"passages[{i}].superseded_by: {read.superseded_by} is not another passage"
            )
        passage.superseded_by = new[read.superseded_by].id
    return new


def store_agent_file(
    store: Storage,
    data: AgentFile,
    *,
    name: str | None = None,
    embedder: Embedder | str | None = None,
    source: Literal["memgpt_lite", "letta"] = "memgpt_lite",
    notes: Sequence[str] = (),
    owner: str = DEFAULT_USER,
    shared_blocks: dict[str, Block] | None = None,
    trust_tools: bool = False,
    endpoint_check: EndpointCheck | None = None,
) -> ImportReport:
    """Store `data` as a new agent (named `name`, or as in the file), with
    fresh ids, in one transaction, belonging to user `owner` (files carry no
    owner), and register the tools it carries for `owner`, trusted only with
    `trust_tools`. `embedder` ("local", "endpoint:MODEL" or an `Embedder`)
    re-embeds the passages unless the file's vectors come from it.
    `endpoint_check` is given the file's base URL first (a server's rule)."""
    if endpoint_check is not None:
        endpoint_check(data.llm.base_url, f"the base URL of agent {data.name!r} in the file")
    state = _new_state(data, name, owner)
    own = new_history(data.messages, data.context_start, state.id)
    histories = [own, *new_conversations(data, state.id)]
    blocks = _new_blocks(data.blocks, shared_blocks)
    if isinstance(embedder, str):
        # Built here, from the environment's settings: a name in an import.
        embedder = embedder_for(embedder, resolve_settings(), base_url=data.llm.base_url)
    model, dimension, passage_vectors = _plan_vectors(data, histories, embedder)
    state.embedding_model, state.embedding_dimension = model, dimension
    if embedder is not None:
        state.settings.embedder = embedder.name
    new_passages = _new_passages(data.passages, state.id)
    with store.transaction():
        tool_notes = register_tools(store, owner, data.tools, trust_tools)
        stored, vectors = _write_agent(
            store, state, blocks, histories, list(zip(new_passages, passage_vectors, strict=True))
        )
        tool_notes += fit_imported_agent(store, state)
    skipped = len(new_passages) - stored
    repeats = [f"{skipped} passages repeated the text of another and were skipped"]
    repairs = [note for history in histories for note in history.notes]
    return ImportReport(
        name=state.name,
        agent_id=state.id,
        source=source,
        blocks=len(blocks),
        messages=len(own.messages),
        messages_in_context=len(own.messages) - own.start,
        conversations=len(histories) - 1,
        conversation_messages=sum(len(h.messages) for h in histories[1:]),
        passages=stored,
        vectors=vectors,
        notes=[*notes, *tool_notes, *repairs, *(repeats if skipped else [])],
    )


def import_agent(
    store: Storage,
    path: str | Path,
    *,
    name: str | None = None,
    embedder: Embedder | str | None = None,
    letta_agent: str | None = None,
    owner: str = DEFAULT_USER,
    trust_tools: bool = False,
    endpoint_check: EndpointCheck | None = None,
) -> ImportReport:
    """Import an agent file (ours or Letta's `.af`, told apart automatically)
    as a new agent of user `owner`, with the tools it carries (trusted only
    with `trust_tools`). On any error nothing is stored."""
    loaded = read_agent_file(path, letta_agent)
    return store_agent_file(
        store,
        loaded.agent,
        name=name,
        embedder=embedder,
        source=loaded.source,
        notes=loaded.notes,
        owner=owner,
        trust_tools=trust_tools,
        endpoint_check=endpoint_check,
    )


def import_every_agent(
    store: Storage,
    path: str | Path,
    *,
    embedder: Embedder | str | None = None,
    owner: str = DEFAULT_USER,
    trust_tools: bool = False,
    endpoint_check: EndpointCheck | None = None,
) -> list[ImportReport]:
    """Import every agent of a Letta file, each under its own name, in one
    transaction: a block several of them share stays one block, attached to
    each. Our own files hold one agent, imported as `import_agent` does."""
    raw = _unwrapped(load_json(path))
    if not isinstance(raw, dict) or "format" in raw or not is_letta_file(raw):
        one = import_agent(
            store,
            path,
            embedder=embedder,
            owner=owner,
            trust_tools=trust_tools,
            endpoint_check=endpoint_check,
        )
        return [one]
    shared: dict[str, Block] = {}
    with store.transaction():
        return [
            store_agent_file(
                store,
                data,
                embedder=embedder,
                source="letta",
                notes=notes,
                owner=owner,
                shared_blocks=shared,
                trust_tools=trust_tools,
                endpoint_check=endpoint_check,
            )
            for data, notes in letta_to_agent_files(raw, str(path))
        ]
