"""A small MCP server built with the Python `mcp` package (2.x,
`mcp.server.mcpserver`), driven over stdio by tests/client_interop.rs.

Tools: echo(text), add(a, b), count(steps, delay_ms) which reports progress
once per step. `run()` serves both protocol eras over stdio: `initialize`
(2025-11-25 and older) and `server/discover` (2026-07-28). The environment
variable CONDUIT_PY_START_DELAY_MS delays the start (before stdin is read).
"""

import asyncio
import os
import time

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer(
    "conduit-interop-py",
    version="1.0.0",
    instructions="Test server for conduit-mcp's interop tests.",
)


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def getenv(name: str) -> str:
    """The value of an environment variable of the server ("" if unset)."""
    return os.environ.get(name, "")


@server.tool()
async def count(steps: int, delay_ms: int, ctx: Context) -> str:
    """Count to `steps`, one progress notification per step."""
    for i in range(1, steps + 1):
        await asyncio.sleep(delay_ms / 1000)
        await ctx.report_progress(i, steps, f"step {i}")
    return f"counted to {steps}"


if __name__ == "__main__":
    # A slow start (before stdin is read), to test discovery's probe timeout.
    time.sleep(int(os.environ.get("CONDUIT_PY_START_DELAY_MS", "0")) / 1000)
    server.run()
