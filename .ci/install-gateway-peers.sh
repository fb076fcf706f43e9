#!/usr/bin/env bash
# Installs the two proxies the gateway benchmark (benches/gateway_bench.rs)
# measures `mcp serve` against, pinned, under target/gateway-peers/ (ignored
# by git):
#   target/gateway-peers/node_modules/.bin/supergateway
#   target/gateway-peers/node_modules/.bin/mcp-proxy
# Needs npm and node. Idempotent: the pinned versions already there are
# only checked.
set -euo pipefail
cd "$(dirname "$0")/.."

SUPERGATEWAY_VERSION="4.0.0"
MCP_PROXY_VERSION="6.7.19"

DIR="target/gateway-peers"
for tool in npm node; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "install-gateway-peers: $tool not found: the benchmark's proxies cannot be installed" >&2
        exit 1
    fi
done
version() {
    node -p "require('./$DIR/node_modules/$1/package.json').version" 2>/dev/null || true
}
if [ "$(version supergateway)" = "$SUPERGATEWAY_VERSION" ] && [ "$(version mcp-proxy)" = "$MCP_PROXY_VERSION" ]; then
    echo "install-gateway-peers: supergateway $SUPERGATEWAY_VERSION and mcp-proxy $MCP_PROXY_VERSION already installed"
    exit 0
fi
echo "install-gateway-peers: supergateway@$SUPERGATEWAY_VERSION mcp-proxy@$MCP_PROXY_VERSION into $DIR"
mkdir -p "$DIR"
npm install --no-package-lock --save-exact --no-audit --no-fund --silent --prefix "$DIR" \
    "supergateway@$SUPERGATEWAY_VERSION" "mcp-proxy@$MCP_PROXY_VERSION"
[ "$(version supergateway)" = "$SUPERGATEWAY_VERSION" ] && [ "$(version mcp-proxy)" = "$MCP_PROXY_VERSION" ] || {
    echo "install-gateway-peers: the installed versions are not the pinned ones" >&2
    exit 1
}
echo "install-gateway-peers: done"
