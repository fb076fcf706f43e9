#!/usr/bin/env bash
# Installs the pinned interop peers under target/peers/ for tests/interop/server.rs:
#   target/peers/venv/  Python virtualenv with the `mcp` package (stdio client)
#   target/peers/node/  Node packages: the official TypeScript SDK, and the
#                       "everything" reference server (for the client half)
# Needs python3 (with its venv module) and npm: a missing one fails the
# install, naming it. Safe to run repeatedly.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in python3 npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "install-peers: $tool not found: it is needed to install the interop peers" >&2
        exit 1
    fi
done

MCP_PY_VERSION="2.3.0"
MCP_TS_SDK_VERSION="1.32.2"
MCP_EVERYTHING_VERSION="2026.8.31"

PEERS="target/peers"
mkdir -p "$PEERS"

if [ ! -x "$PEERS/venv/bin/python" ] \
    || ! "$PEERS/venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_PY_VERSION')" 2>/dev/null; then
    echo "install-peers: Python mcp==$MCP_PY_VERSION into $PEERS/venv"
    python3 -m venv "$PEERS/venv"
    "$PEERS/venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_PY_VERSION"
else
    echo "install-peers: Python mcp==$MCP_PY_VERSION already installed"
fi

want="$MCP_TS_SDK_VERSION $MCP_EVERYTHING_VERSION"
have="$(cat "$PEERS/node/.versions" 2>/dev/null || true)"
if [ "$have" != "$want" ]; then
    echo "install-peers: @modelcontextprotocol/sdk@$MCP_TS_SDK_VERSION, server-everything@$MCP_EVERYTHING_VERSION into $PEERS/node"
    mkdir -p "$PEERS/node"
    npm install --no-package-lock --save-exact --no-audit --no-fund --silent --prefix "$PEERS/node" \
        "@modelcontextprotocol/sdk@$MCP_TS_SDK_VERSION" \
        "@modelcontextprotocol/server-everything@$MCP_EVERYTHING_VERSION"
    echo "$want" > "$PEERS/node/.versions"
else
    echo "install-peers: Node packages already installed"
fi
