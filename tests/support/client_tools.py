"""A client-side tool as Letta's clients declare one (`client_tools`), for
the tests of client tools on agents' and conversations' sends."""

from __future__ import annotations

from typing import Any

BASH: dict[str, Any] = {
    "name": "Bash",
    "description": "Run a shell command on the user's machine.",
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}
