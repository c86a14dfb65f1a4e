"""The loop: the step core, the context window and its compaction, the step lock."""
