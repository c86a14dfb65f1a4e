"""Tools: schemas from Python functions, and the built-in tools the agent uses on its memory."""
