"""Agent files: our own export format, and Letta's .af files."""
