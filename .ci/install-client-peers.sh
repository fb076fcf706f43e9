#!/usr/bin/env bash
# Installs the pinned third-party MCP servers that tests/interop/client.rs
# drives over stdio, under target/peers/ (shared with .ci/install-peers.sh,
# which installs the server-side peers into the same directories):
#   target/peers/node/  @modelcontextprotocol/server-everything (Node)
#   target/peers/venv/  Python virtualenv: `mcp` (2.x, mcp.server.mcpserver,
#                       used by tests/interop/*.py) and `mcp-server-time`
# Needs npm, node and python3 (with its venv module): a missing one fails
# the install, naming it. Idempotent: when the pinned versions are already
# there it only checks and returns.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in npm node python3; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "install-client-peers: $tool not found: it is needed to install the interop peers" >&2
        exit 1
    fi
done

# Keep MCP_PY_VERSION and MCP_EVERYTHING_VERSION equal to .ci/install-peers.sh.
MCP_PY_VERSION="2.3.0"
MCP_SERVER_TIME_VERSION="2026.10.19"
MCP_EVERYTHING_VERSION="2026.8.31"

PEERS="target/peers"
mkdir -p "$PEERS"

pkg_json="$PEERS/node/node_modules/@modelcontextprotocol/server-everything/package.json"
have="$(node -p "require('./$pkg_json').version" 2>/dev/null || true)"
if [ "$have" != "$MCP_EVERYTHING_VERSION" ]; then
    echo "install-client-peers: @modelcontextprotocol/server-everything@$MCP_EVERYTHING_VERSION into $PEERS/node"
    mkdir -p "$PEERS/node"
    npm install --no-package-lock --save-exact --no-audit --no-fund --silent --prefix "$PEERS/node" \
        "@modelcontextprotocol/server-everything@$MCP_EVERYTHING_VERSION"
else
    echo "install-client-peers: server-everything $MCP_EVERYTHING_VERSION already installed"
fi

py="$PEERS/venv/bin/python"
check="import importlib.metadata as m, sys; sys.exit(not (m.version('mcp') == '$MCP_PY_VERSION' and m.version('mcp-server-time') == '$MCP_SERVER_TIME_VERSION'))"
if [ ! -x "$py" ] || ! "$py" -c "$check" 2>/dev/null; then
    echo "install-client-peers: mcp==$MCP_PY_VERSION, mcp-server-time==$MCP_SERVER_TIME_VERSION into $PEERS/venv"
    [ -x "$py" ] || python3 -m venv "$PEERS/venv"
    "$py" -m pip install --quiet --disable-pip-version-check \
        "mcp==$MCP_PY_VERSION" "mcp-server-time==$MCP_SERVER_TIME_VERSION"
    "$py" -c "import mcp.server.mcpserver, mcp_server_time"
else
    echo "install-client-peers: mcp $MCP_PY_VERSION and mcp-server-time $MCP_SERVER_TIME_VERSION already installed"
fi
