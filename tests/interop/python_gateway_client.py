"""Drives `mcp serve`'s namespace endpoint (/mcp) with the Python `mcp`
package's client: three real stdio servers (the example server,
mcp-server-time, server-everything) in one namespace, and a legacy
server's sampling request answered by this client across eras.

Usage: python_gateway_client.py URL MODE
  URL: the gateway's /mcp. MODE: "legacy" or "auto" (2026-07-28).

Prints "ok <check>" per passed check and "done"; any failure raises.
"""

import sys

import anyio
import mcp.types as types
from mcp import Client


async def main(url: str, mode: str) -> None:
    async def sampling(_ctx, params):
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sampled by python"),
            model="py-model",
        )

    async with Client(
        url,
        mode=mode,
        sampling_callback=sampling,
        client_info=types.Implementation(name="python-gateway", version="1"),
        read_timeout_seconds=30,
    ) as client:
        print(f"ok connected protocol_version={client.protocol_version}", flush=True)
        names = [t.name for t in (await client.list_tools()).tools]
        for n in ["example__echo", "time__get_current_time", "everything__echo", "everything__get-sum"]:
            assert n in names, names
        print("ok list_tools", flush=True)

        r = await client.call_tool("example__echo", {"text": "through the gateway"})
        assert r.content[0].text == "through the gateway", r
        print("ok example", flush=True)

        r = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert "UTC" in r.content[0].text, r
        print("ok time", flush=True)

        r = await client.call_tool("everything__get-sum", {"a": 2, "b": 3})
        assert "5" in r.content[0].text, r
        print("ok everything", flush=True)

        r = await client.call_tool("everything__trigger-sampling-request", {"prompt": "hi", "maxTokens": 10})
        assert "sampled by python" in str(r.content), r
        print("ok sampling", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
