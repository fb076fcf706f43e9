//! Server side of the MCP stdio transport (see issue 4).
