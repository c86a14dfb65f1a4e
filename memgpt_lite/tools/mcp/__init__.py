"""The MCP client: an agent's tools from MCP servers, over stdio or streamable HTTP."""
