"""The storage seam: the protocol the agent needs, and its backends (one package each)."""
