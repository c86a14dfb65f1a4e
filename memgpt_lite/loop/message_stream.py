"""The text of a `send_message` call while the model still writes it.

A simple first version: it re-reads the arguments written so far on each
piece, so it only yields text once the JSON parses. The incremental parser
(llm-stream branch) replaces it.
"""

from __future__ import annotations

import json


class MessageStream:
    """Fed the pieces of a send_message call's JSON arguments, returns the
    newly written characters of its `message` value."""

    def __init__(self) -> None:
        self._arguments = ""
        self._sent = 0

    def feed(self, piece: str) -> str:
        self._arguments += piece
        try:
            value = json.loads(self._arguments)
        except ValueError:
            return ""
        text = value.get("message") if isinstance(value, dict) else None
        if not isinstance(text, str):
            return ""
        new, self._sent = text[self._sent :], len(text)
        return new
