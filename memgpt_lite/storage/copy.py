"""Copying every agent from one database to another (`memgpt-lite copy-db`).

Written against the `Storage` protocol alone, so it moves agents between any
two backends: SQLite to PostgreSQL, back, or SQLite to SQLite. Each agent
keeps its id, name, state, blocks (in order, with their history; a block
shared by several agents is created once and linked to each), every message
(same ids, in order), every passage (same ids, tags, dates), every vector
and every token usage record (with the feedback given its steps), and its
owner; every API key (revoked ones too) comes along, with its id, user and
times, and so does every user's tool registry (tools and MCP servers, with
their ids and trust), every group of agents (a main agent and its sleep-time
agents; a group that talks, with the conversation each of its agents talks
in), every identity (with its links to the agents and blocks copied), every
user's providers (their API keys copied sealed, as agents' own keys are: the
same secret opens them) and every named archive (its passages and vectors,
and the agents it is attached to). Step locks are not copied: they belong to
running processes.

The destination assigns its own `seq` numbers, so whatever holds a message
or passage seq is remapped: the window start (`AgentState.context_start`),
what reflections and sleep-time agents have read, and the vectors. The
source is read in one snapshot, in pages of `batch` messages and passages
(vectors are read one kind of one agent at a time: the protocol has no
paging for them). The destination is written in one transaction and each
agent's counts are read back from it inside that transaction, so a
mismatch, an error or Ctrl-C leaves it as it was.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields

from memgpt_lite.errors import AlreadyExistsError, ConfigError, NotFoundError, StoreError
from memgpt_lite.models import AgentState, ApiKey
from memgpt_lite.storage.location import redacted, same_database, sqlite_path
from memgpt_lite.storage.protocol import Owner, Storage, StoredVectors

BATCH = 1000  # messages or passages read and written at a time


@dataclass
class AgentCopy:
    """What was copied of one agent (or what its source holds)."""

    name: str
    blocks: int = 0
    messages: int = 0
    passages: int = 0
    message_vectors: int = 0
    passage_vectors: int = 0
    usage_records: int = 0
    block_versions: int = 0  # of the agent's blocks' histories, together

    def differences(self, other: AgentCopy) -> list[str]:
        """'messages 10 != 9' for each count that differs from `other`'s."""
        mine, theirs = asdict(self), asdict(other)
        return [
            f"{f.name.replace('_', ' ')} {mine[f.name]} != {theirs[f.name]}"
            for f in fields(self)
            if f.name != "name" and mine[f.name] != theirs[f.name]
        ]


OnCopied = Callable[[AgentCopy], None]
OnKeys = Callable[[int], None]


def copy_database(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    *,
    batch: int = BATCH,
    on_copied: OnCopied | None = None,
    on_keys: OnKeys | None = None,
) -> list[AgentCopy]:
    """Copy every agent and API key of the database at `src` into the one
    at `dst` (paths or URLs); see `copy_agents`. Refuses one database twice,
    and a missing SQLite source (opening it would create an empty one)."""
    from memgpt_lite.storage.open import open_storage

    if same_database(src, dst):
        raise ConfigError(f"the source and the destination are one database: {redacted(src)}")
    path = sqlite_path(src)
    if path is not None and not path.is_file():
        raise NotFoundError(f"no database file at {redacted(src)}")
    with open_storage(src) as source, open_storage(dst) as destination:
        return copy_agents(source, destination, batch=batch, on_copied=on_copied, on_keys=on_keys)


def copy_agents(
    src: Storage,
    dst: Storage,
    *,
    batch: int = BATCH,
    on_copied: OnCopied | None = None,
    on_keys: OnKeys | None = None,
) -> list[AgentCopy]:
    """Copy every agent and API key of `src` into `dst`, all in one
    transaction of `dst`, and return the agents copied, verified by counts
    read back from `dst`. `on_copied` is called after each agent, and
    `on_keys` with the number of keys copied, inside the transaction (an
    error either raises undoes the whole copy). AlreadyExistsError, changing
    nothing, if `dst` holds an agent with the id or name of one to copy, one
    of their blocks, or an API key of `src` (same id or secret); StoreError
    if the counts do not match."""
    with src.snapshot():
        agents = [state for state, _ in src.list_agents()]
        keys = src.list_api_keys()
        with dst.transaction():
            _refuse_taken(src, dst, agents)
            _copy_keys(dst, keys)
            _copy_registry(src, dst)
            if on_keys is not None:
                on_keys(len(keys))
            copied: list[AgentCopy] = []
            message_seqs: dict[str, dict[int, int]] = {}  # each agent's, old to new
            for state in agents:
                expected, message_seqs[state.id] = _copy_agent(src, dst, state, batch)
                _verify(dst, state, expected)
                copied.append(expected)
                if on_copied is not None:
                    on_copied(expected)
            _copy_groups(src, dst, message_seqs)
            _copy_identities(src, dst)
            for provider in src.list_providers():
                dst.save_provider(provider.model_copy())
            _copy_archives(src, dst, agents, batch)
    return copied


def _copy_archives(src: Storage, dst: Storage, agents: Sequence[AgentState], batch: int) -> None:
    """Store every named archive of `src` in `dst`, its row copied and
    checked as an agent's (its passages, vectors and embedding space), then
    attach to each agent copied the archive attached to it in `src`.
    AlreadyExistsError for an archive `dst` has."""
    archives = src.list_archives()
    taken = [a.id for a in archives if _holds_archive(dst, a.id)]
    if taken:
        raise AlreadyExistsError(
            f"the destination already has these archives: {', '.join(taken)}; nothing was copied"
        )
    for archive in archives:
        store = src.archive_store(archive.id)
        expected, _ = _copy_agent(src, dst, store, batch)
        _verify(dst, store, expected)
        dst.save_archive(archive.model_copy())
    for state in agents:
        if state.attached_archive is not None:
            dst.attach_archive(state.id, state.attached_archive)


def _holds_archive(store: Storage, archive_id: str) -> bool:
    try:
        store.archive_store(archive_id)
    except NotFoundError:
        return False
    return True


def _copy_identities(src: Storage, dst: Storage) -> None:
    """Store every identity of `src` in `dst` (its agents are copied by
    now), linked to the blocks `dst` holds: a standalone block that no
    agent holds is not copied."""
    for identity in src.list_identities():
        copied = identity.model_copy(deep=True)
        copied.block_ids = [b for b in identity.block_ids if _holds_block(dst, b)]
        dst.save_identity(copied)


def _holds_block(store: Storage, block_id: str) -> bool:
    try:
        store.get_block(block_id)
    except NotFoundError:
        return False
    return True


def _refuse_taken(src: Storage, dst: Storage, agents: Sequence[AgentState]) -> None:
    taken = []
    for state in agents:
        # Ids are unique in a database, names within their owner.
        for key, owner in ((state.id, None), (state.name, state.owner)):
            try:
                taken.append(dst.get_agent(key, owner=owner).name)
                break
            except NotFoundError:
                continue
    if taken:
        raise AlreadyExistsError(
            f"the destination already has these agents (same name or id): {', '.join(taken)}; "
            "nothing was copied"
        )
    blocks: dict[str, str] = {}  # by id: a shared block is named once
    for state in agents:
        for block in src.get_blocks(state.id):
            try:
                dst.get_block(block.id)
            except NotFoundError:
                continue
            blocks.setdefault(block.id, f"{block.label} ({block.id}) of {state.name}")
    if blocks:
        raise AlreadyExistsError(
            f"the destination already has these blocks: {', '.join(blocks.values())}; "
            "nothing was copied"
        )


def _copy_keys(dst: Storage, keys: Sequence[ApiKey]) -> None:
    """Store `keys` in `dst` as they are, or AlreadyExistsError naming those
    it holds already (by id or hash: the same key), before any is stored."""
    held = {key.id for key in dst.list_api_keys()}
    taken = [k.id for k in keys if k.id in held or dst.api_key_by_hash(k.key_hash) is not None]
    if taken:
        raise AlreadyExistsError(
            f"the destination already has these API keys: {', '.join(taken)}; nothing was copied"
        )
    for key in keys:
        dst.add_api_key(key.model_copy())


def _copy_registry(src: Storage, dst: Storage) -> None:
    """Store every user's tools and MCP servers of `src` in `dst` as they
    are, or AlreadyExistsError naming those `dst` has (same owner and name)."""
    servers, tools = src.list_mcp_servers(), src.list_tools()
    held_servers = {(s.owner, s.name) for s in dst.list_mcp_servers()}
    held_tools = {(t.owner, t.name) for t in dst.list_tools()}
    taken = [
        f"MCP server {s.name} of {s.owner}" for s in servers if (s.owner, s.name) in held_servers
    ]
    taken += [f"tool {t.name} of {t.owner}" for t in tools if (t.owner, t.name) in held_tools]
    if taken:
        raise AlreadyExistsError(
            f"the destination already has these: {', '.join(taken)}; nothing was copied"
        )
    for server in servers:
        dst.add_mcp_server(server)
    for tool in tools:
        dst.add_tool(tool)


def _vectors(store: Storage, state: AgentState, owner: Owner) -> StoredVectors | None:
    """The agent's stored vectors of one kind (None before it has any space)."""
    if not state.embedding_dimension:
        return None
    return store.load_vectors(state.id, owner, 0, state.embedding_dimension)


def _vector_count(store: Storage, state: AgentState, owner: Owner) -> int:
    stored = _vectors(store, state, owner)
    return 0 if stored is None else len(stored.seqs)


def _verify(dst: Storage, state: AgentState, expected: AgentCopy) -> None:
    """Compare the agent's counts in `dst` with its source's. Read inside the
    transaction: a mismatch raises before anything commits."""
    stats = dst.agent_stats(state.id)
    copied = AgentCopy(
        name=state.name,
        blocks=len(dst.get_blocks(state.id)),
        messages=stats.message_count,
        passages=stats.passage_count,
        message_vectors=_vector_count(dst, state, "message"),
        passage_vectors=_vector_count(dst, state, "passage"),
        usage_records=len(dst.agent_usage(state.id)),
        block_versions=_version_count(dst, state),
    )
    problems = copied.differences(expected)
    if problems:
        raise StoreError(
            f"the copy of agent {state.name!r} does not match its source "
            f"(copied != source: {'; '.join(problems)}); nothing was copied"
        )


def _version_count(store: Storage, state: AgentState) -> int:
    return sum(len(store.block_history(block_id)) for block_id in state.block_ids)


def _copy_groups(src: Storage, dst: Storage, message_seqs: dict[str, dict[int, int]]) -> None:
    """Store every group of `src` in `dst` (its agents and their
    conversations are copied by now), what a sleep-time group's agents read
    in the destination's message seqs."""
    for group in src.list_groups():
        copied = group.model_copy(deep=True)
        if group.manager_agent_id is not None:
            seqs = message_seqs[group.manager_agent_id]
            copied.processed_seq = _new_reflected(seqs, group.processed_seq)
        dst.save_group(copied)


def _copy_step_feedback(src: Storage, dst: Storage, state: AgentState, records: int) -> None:
    """Store the feedback given the agent's steps (its usage is copied by
    now; a step has at least one of its `records`)."""
    if not records:
        return
    for step in src.list_steps(state.owner, state.id, limit=records):
        if step.feedback is not None or step.tags:
            dst.set_step_feedback(state.id, step.step_id, step.feedback, step.tags)


def _copy_agent(
    src: Storage, dst: Storage, state: AgentState, batch: int
) -> tuple[AgentCopy, dict[int, int]]:
    """Copy one agent; returns what its source holds, to check the copy
    against, and its messages' seqs, old to new."""
    blocks = [b.model_copy(deep=True) for b in src.get_blocks(state.id)]
    stats = src.agent_stats(state.id)
    dst.create_agent(state.model_copy(deep=True), blocks)  # a block stored already is linked
    for block in blocks:  # a shared block's history is copied again, the same
        history = [v.model_copy() for v in src.block_history(block.id)]
        dst.set_block_history(block.id, history)
    message_seqs = _copy_messages(src, dst, state.id, stats.message_count, batch)
    passage_seqs = _copy_passages(src, dst, state.id, stats.passage_count, batch)
    usage = src.agent_usage(state.id)
    for record in usage:
        dst.add_usage(record.model_copy())
    _copy_step_feedback(src, dst, state, len(usage))
    start = _new_start(message_seqs, state.context_start)
    reflected = _new_reflected(message_seqs, state.reflected_seq)

    def renumber(stored: AgentState) -> None:
        stored.context_start, stored.reflected_seq = start, reflected

    dst.update_agent(state.id, renumber)
    for found in src.list_conversations(state.id):  # their messages came with the agent's
        new_start = _new_start(message_seqs, found.context_start)
        dst.create_conversation(found.model_copy(update={"context_start": new_start}))
    return AgentCopy(
        name=state.name,
        blocks=len(blocks),
        messages=stats.message_count,
        passages=stats.passage_count,
        message_vectors=_copy_vectors(src, dst, state, "message", message_seqs, batch),
        passage_vectors=_copy_vectors(src, dst, state, "passage", passage_seqs, batch),
        usage_records=len(usage),
        block_versions=_version_count(src, state),
    ), message_seqs


def _pages(total: int, batch: int) -> Iterator[tuple[int, int]]:
    """(limit, offset counted from the newest) of each page, oldest page first."""
    for done in range(0, total, batch):
        limit = min(batch, total - done)
        yield limit, total - done - limit


def _copy_messages(
    src: Storage, dst: Storage, agent_id: str, total: int, batch: int
) -> dict[int, int]:
    """Copy the agent's `total` messages, oldest first; returns their seqs, old to new."""
    seqs: dict[int, int] = {}
    for limit, offset in _pages(total, batch):
        page, _ = src.recent_messages(agent_id, limit, offset)
        # Copies: the source may hand out these objects again (its cache), and
        # add_messages sets `seq` on what it is given.
        copies = [m.model_copy(update={"seq": None}, deep=True) for m in page]
        dst.add_messages(copies)
        seqs.update((m.seq or 0, c.seq or 0) for m, c in zip(page, copies, strict=True))
    return seqs


def _copy_passages(
    src: Storage, dst: Storage, agent_id: str, total: int, batch: int
) -> dict[int, int]:
    """Copy the agent's `total` passages, oldest first; returns their seqs, old to new."""
    seqs: dict[int, int] = {}
    for limit, offset in _pages(total, batch):
        page = src.list_passages(agent_id, limit, offset)[0][::-1]  # newest first: reversed
        copies = [p.model_copy(update={"seq": None}, deep=True) for p in page]
        stored = dst.add_passages(copies)
        # A passage skipped as a repeat has no seq: the counts then disagree.
        seqs.update(
            (p.seq or 0, c.seq or 0) for p, c, ok in zip(page, copies, stored, strict=True) if ok
        )
    return seqs


def _copy_vectors(
    src: Storage, dst: Storage, state: AgentState, owner: Owner, seqs: dict[int, int], batch: int
) -> int:
    """Copy the agent's vectors of one kind, their seqs remapped; returns how
    many the source holds."""
    stored = _vectors(src, state, owner)
    if stored is None:
        return 0
    # A vector whose item was not copied is left out; the counts then disagree.
    rows = [(i, seqs[int(seq)]) for i, seq in enumerate(stored.seqs) if int(seq) in seqs]
    for done in range(0, len(rows), batch):
        chunk = rows[done : done + batch]
        matrix = stored.matrix[[i for i, _ in chunk]]
        dst.add_vectors(state.id, owner, [new for _, new in chunk], matrix)
    return len(stored.seqs)


def _new_reflected(seqs: dict[int, int], old_reflected: int) -> int:
    """The newest message a reflection (or a sleep-time agent) has read, in
    the destination's seqs: the new seq of the newest message at or before
    it (0 for none)."""
    read = [new for old, new in seqs.items() if old <= old_reflected]
    return max(read, default=0)


def _new_start(seqs: dict[int, int], old_start: int) -> int:
    """The window start in the destination: the new seq of the first message
    in the window; past the last message if the window holds none."""
    in_window = [new for old, new in seqs.items() if old >= old_start]
    if in_window:
        return min(in_window)
    # Later messages of this agent get greater seqs, so they join the window.
    return max(seqs.values()) + 1 if seqs else 0
