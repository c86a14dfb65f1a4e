"""What an MCP server answers, in the terms of our tools: a listed tool as
`MCPToolInfo`, and a call's result (its content blocks) as the text the
model reads.

Text blocks are joined; blocks the model cannot read as text (images,
audio, binary resources) are described in one line each, so the model
knows they came. A result with no content but structured content (JSON) is
that JSON. The server's error (`isError`) is a failed tool call, its text
shown.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

import mcp.types as types


@dataclass(frozen=True)
class MCPToolInfo:
    """A tool as its server lists it: the name it is called by, what it
    does, and the JSON schema of its arguments (an object schema)."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class MCPCallResult:
    """A call's outcome: the text the model sees, and whether the tool
    succeeded (the server's `isError` is a failure)."""

    text: str
    ok: bool


def tool_info(tool: types.Tool) -> MCPToolInfo:
    return MCPToolInfo(tool.name, tool.description or "", dict(tool.input_schema))


def call_result(result: types.CallToolResult) -> MCPCallResult:
    parts = [_block_text(block) for block in result.content]
    text = "\n".join(parts)
    if not parts and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False, default=str)
    if result.is_error:
        return MCPCallResult(f"Error: {text or 'the tool failed and said nothing'}", ok=False)
    return MCPCallResult(text, ok=True)


def _block_text(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        return f"[{kind}: {block.mime_type}, {_decoded_size(block.data)} bytes, not shown]"
    if isinstance(block, types.ResourceLink):
        about = f" ({block.mime_type})" if block.mime_type else ""
        return f"[resource link: {block.name} at {block.uri}{about}]"
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        about = resource.mime_type or "binary"
        size = _decoded_size(resource.blob)
        return f"[resource {resource.uri}: {about}, {size} bytes, not shown]"
    return f"[{getattr(block, 'type', 'unknown')} content, not shown]"


def _decoded_size(data: str) -> int:
    """The size of base64 `data` once decoded (its length if it is not base64)."""
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return len(data)
