"""The three tiers of memory, one folder each, and searching them beside:

- core/: the blocks of the system message and their history;
- recall/: every message; what of it the context window holds, and edits
  to the conversation history;
- archival/: passages, cut from long text and stored for search;
- retrieval/: hybrid search over passages and messages, ranking, dates and
  the in-process vector index.

What a tier may reach of an agent is `deps.MemoryDeps`."""
