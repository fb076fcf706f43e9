"""Drives the conduit-mcp example server with the Python `mcp` package's client.

Usage: python_client.py SERVER MODE
  SERVER: the server binary (stdio), or an http:// URL (Streamable HTTP).
  MODE: "legacy" (initialize handshake), "auto" (server/discover probe; the
  example server is dual-era, so this ends up modern), or a modern version.

Prints "ok <check>" per passed check and "done" at the end; any failure
raises (non-zero exit). The server's stderr is passed through to ours.
"""

import sys

import anyio
import mcp.types as types
from mcp import Client, StdioServerParameters


async def main(binary: str, mode: str) -> None:
    if binary.startswith("http://"):
        params = binary
    else:
        params = StdioServerParameters(command=binary, args=[], env={"RUST_LOG": "conduit_mcp=debug,info"})

    async def list_roots(_ctx):
        return types.ListRootsResult(roots=[types.Root(uri="file:///interop/python", name="py")])

    async with Client(
        params,
        mode=mode,
        list_roots_callback=list_roots,
        client_info=types.Implementation(name="python-interop", version="1"),
        read_timeout_seconds=20,
    ) as client:
        print(f"ok connected protocol_version={client.protocol_version}", flush=True)
        if mode == "legacy":
            assert client.protocol_version.startswith("2025"), client.protocol_version
        else:
            assert client.protocol_version == "2026-07-28", client.protocol_version
        assert client.server_info is not None and client.server_info.name == "conduit-mcp-example"

        tools = await client.list_tools()
        names = [t.name for t in tools.tools]
        assert names == ["echo", "add", "sleep", "roots"], names
        print("ok list_tools", flush=True)

        r = await client.call_tool("echo", {"text": "hello from python"})
        assert r.content[0].text == "hello from python", r
        print("ok echo", flush=True)

        r = await client.call_tool("add", {"a": 2, "b": 3})
        assert r.content[0].text == "5", r
        print("ok add", flush=True)

        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, total, message))

        r = await client.call_tool("sleep", {"ms": 100}, progress_callback=on_progress)
        assert r.content[0].text == "slept 100 ms", r
        assert len(seen) == 11 and seen[-1][0] == 10, seen
        print(f"ok sleep_with_progress notifications={len(seen)}", flush=True)

        # Cancel a long sleep: abandoning the call sends notifications/cancelled.
        started = anyio.Event()

        async def on_start(progress, total, message):
            started.set()

        async def long_sleep():
            await client.call_tool("sleep", {"ms": 60000}, progress_callback=on_start)

        async with anyio.create_task_group() as tg:
            tg.start_soon(long_sleep)
            with anyio.fail_after(10):
                await started.wait()
            tg.cancel_scope.cancel()
        # The session is still usable afterwards.
        r = await client.call_tool("echo", {"text": "after cancel"})
        assert r.content[0].text == "after cancel", r
        print("ok cancel_sleep", flush=True)

        r = await client.call_tool("roots", {})
        assert "file:///interop/python" in r.content[0].text, r
        print("ok roots", flush=True)

        res = await client.read_resource("demo://readme")
        assert "example server" in res.contents[0].text, res
        prompt = await client.get_prompt("greet", {"name": "Py"})
        assert prompt.messages[0].content.text == "Say hello to Py.", prompt
        print("ok resource_and_prompt", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
