// Drives the conduit-mcp example server with the official TypeScript SDK
// client (legacy era: the SDK speaks the initialize handshake).
//
// Usage: NODE_PATH=<peers>/node/node_modules node node_client.cjs SERVER
// SERVER: the server binary (stdio), or an http:// URL (Streamable HTTP).
// Prints "ok <check>" per passed check and "done"; any failure exits non-zero.
"use strict";

const assert = require("node:assert/strict");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ListRootsRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

async function main(binary) {
  const transport = binary.startsWith("http://")
    ? new StreamableHTTPClientTransport(new URL(binary))
    : new StdioClientTransport({
        command: binary,
        args: [],
        env: { ...process.env, RUST_LOG: "conduit_mcp=debug,info" },
        stderr: "inherit",
      });
  const client = new Client({ name: "node-interop", version: "1" }, { capabilities: { roots: {} } });
  client.setRequestHandler(ListRootsRequestSchema, async () => ({
    roots: [{ uri: "file:///interop/node", name: "node" }],
  }));
  await client.connect(transport);
  assert.equal(client.getServerVersion().name, "conduit-mcp-example");
  console.log("ok connected");

  const tools = await client.listTools();
  assert.deepEqual(tools.tools.map((t) => t.name), ["echo", "add", "sleep", "roots"]);
  console.log("ok list_tools");

  let r = await client.callTool({ name: "echo", arguments: { text: "hello from node" } });
  assert.equal(r.content[0].text, "hello from node");
  console.log("ok echo");

  r = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
  assert.equal(r.content[0].text, "5");
  console.log("ok add");

  const seen = [];
  r = await client.callTool({ name: "sleep", arguments: { ms: 100 } }, undefined, {
    onprogress: (p) => seen.push(p),
  });
  assert.equal(r.content[0].text, "slept 100 ms");
  // The SDK dispatches notifications asynchronously and drops the progress
  // handler when the response arrives, so a final progress notification that
  // shares a read with the response may be lost on its side: require >= 10.
  assert.ok(seen.length >= 10, `progress notifications: ${JSON.stringify(seen)}`);
  seen.forEach((p, i) => assert.equal(p.progress, i));
  console.log(`ok sleep_with_progress notifications=${seen.length}`);

  // Cancel a long sleep once it has started: aborting sends notifications/cancelled.
  const abort = new AbortController();
  let started;
  const startedP = new Promise((resolve) => (started = resolve));
  const call = client.callTool({ name: "sleep", arguments: { ms: 60000 } }, undefined, {
    onprogress: () => started(),
    signal: abort.signal,
  });
  await startedP;
  abort.abort("test cancels the sleep");
  await assert.rejects(call);
  r = await client.callTool({ name: "echo", arguments: { text: "after cancel" } });
  assert.equal(r.content[0].text, "after cancel");
  console.log("ok cancel_sleep");

  r = await client.callTool({ name: "roots", arguments: {} });
  assert.ok(r.content[0].text.includes("file:///interop/node"), r.content[0].text);
  console.log("ok roots");

  const res = await client.readResource({ uri: "demo://readme" });
  assert.ok(res.contents[0].text.includes("example server"));
  const prompt = await client.getPrompt({ name: "greet", arguments: { name: "Node" } });
  assert.equal(prompt.messages[0].content.text, "Say hello to Node.");
  console.log("ok resource_and_prompt");

  if (transport.terminateSession) {
    await transport.terminateSession(); // HTTP: DELETE the session
  }
  await client.close();
  console.log("done");
}

main(process.argv[2]).catch((e) => {
  console.error(e);
  process.exit(1);
});
