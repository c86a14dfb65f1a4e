"""Registered tools from Python source or an importable module: each call
in a process of its own."""
