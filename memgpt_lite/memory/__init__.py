"""The three tiers of memory: core blocks, recall (every message) and archival
passages, and searching them."""
