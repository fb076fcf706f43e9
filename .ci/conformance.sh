#!/usr/bin/env bash
# Scores conformance/server.rs with the official MCP conformance
# suite (pinned by .ci/install-conformance.sh) over Streamable HTTP, both
# requirement sets: 2025-11-25 (30 scenarios, legacy wire) and 2026-07-28
# (37 scenarios, modern wire).
#
# Builds the example, starts it with PORT on a free loopback port, waits for
# it to listen, runs `conformance server --requirements R` for each set,
# scores each run with .ci/conformance-score.mjs (a scenario counts only when
# its checks ran and none failed), prints "R: N/M scenarios passed" and the
# failing checks, then stops the example with SIGTERM and checks that it
# exits 0. Exits non-zero if any scored scenario failed, or the example
# misbehaved. Results: target/conformance/results/<revision>/ (the suite's
# checks.json per scenario) and <revision>.log (its output).
#
# For testing this script: CONFORMANCE_SERVER_CMD="shell command" starts
# that instead of the example (with `bash -c`, PORT set; end it with
# `exec server ...` so that SIGTERM reaches the server);
# CONFORMANCE_URL=http://... starts nothing and scores that URL.
set -euo pipefail
cd "$(dirname "$0")/.."

REVISIONS=(2025-11-25 2026-07-28)
SUITE_TIMEOUT="${CONFORMANCE_SUITE_TIMEOUT:-900}"   # seconds per requirement set
START_TIMEOUT=60                                   # seconds for the server to listen
STOP_TIMEOUT=10                                    # seconds for it to exit on SIGTERM

bash .ci/install-conformance.sh
ROOT="$PWD/target/conformance"
export PATH="$ROOT/node_modules/.bin:$PATH"
PKG="$ROOT/node_modules/@modelcontextprotocol/conformance"
RESULTS="$ROOT/results"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"

server_pid=""
server_log="$RESULTS/server.log"
failed=0

# A free loopback port (the kernel's choice; released just before use).
free_port() {
    node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# Waits until host:port accepts connections or the server exits.
wait_listening() {
    local port="$1" deadline=$((SECONDS + START_TIMEOUT))
    while [ "$SECONDS" -lt "$deadline" ]; do
        if ! kill -0 "$server_pid" 2>/dev/null; then
            local status=0
            wait "$server_pid" || status=$?
            server_pid=""
            echo "conformance: the server exited with status $status before listening; its output:" >&2
            sed 's/^/  | /' "$server_log" >&2
            return 1
        fi
        if node -e 'const c=require("net").connect(+process.argv[1],"127.0.0.1");c.on("connect",()=>process.exit(0));c.on("error",()=>process.exit(1))' "$port"; then
            return 0
        fi
        sleep 0.2
    done
    echo "conformance: the server did not listen on port $port within ${START_TIMEOUT}s" >&2
    return 1
}

# SIGTERM; it must exit 0 within STOP_TIMEOUT (else SIGKILL and a failure).
stop_server() {
    [ -n "$server_pid" ] || return 0
    local pid="$server_pid" status=0 deadline=$((SECONDS + STOP_TIMEOUT))
    server_pid=""
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
        # A zombie still answers kill -0 until reaped: reap when it is one.
        if [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" = "Z" ]; then break; fi
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null && [ "$(ps -o stat= -p "$pid" 2>/dev/null | cut -c1)" != "Z" ]; then
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        echo "conformance: FAIL: the server did not exit within ${STOP_TIMEOUT}s of SIGTERM (killed)" >&2
        return 1
    fi
    wait "$pid" || status=$?
    if [ "$status" -ne 0 ]; then
        echo "conformance: FAIL: the server exited with status $status on SIGTERM (expected 0)" >&2
        return 1
    fi
    echo "conformance: the server exited 0 on SIGTERM"
}
trap 'stop_server >/dev/null 2>&1 || true' EXIT

if [ -n "${CONFORMANCE_URL:-}" ]; then
    url="$CONFORMANCE_URL"
else
    port="$(free_port)"
    url="http://127.0.0.1:$port/mcp"
    if [ -n "${CONFORMANCE_SERVER_CMD:-}" ]; then
        echo "conformance: starting '$CONFORMANCE_SERVER_CMD' with PORT=$port"
        PORT="$port" bash -c "$CONFORMANCE_SERVER_CMD" >"$server_log" 2>&1 &
    else
        exe="$(bash .ci/built-exe.sh --example conformance_server)"
        [ -x "$exe" ] || { echo "conformance: could not find the built example" >&2; exit 1; }
        echo "conformance: starting $exe with PORT=$port"
        PORT="$port" RUST_LOG="${RUST_LOG:-warn}" "$exe" >"$server_log" 2>&1 &
    fi
    server_pid=$!
    wait_listening "$port"
fi
echo "conformance: scoring $url"

for rev in "${REVISIONS[@]}"; do
    echo
    echo "== conformance server --requirements $rev"
    status=0
    timeout "$SUITE_TIMEOUT" conformance server --url "$url" --requirements "$rev" \
        -o "$RESULTS/$rev" >"$RESULTS/$rev.log" 2>&1 || status=$?
    if [ "$status" -eq 124 ]; then
        echo "conformance: FAIL: the suite did not finish within ${SUITE_TIMEOUT}s (log: $RESULTS/$rev.log)"
        failed=1
    fi
    node .ci/conformance-score.mjs "$PKG" "$rev" "$RESULTS/$rev" || failed=1
    echo "(suite exit status $status; its output: $RESULTS/$rev.log)"
done

echo
if [ -z "${CONFORMANCE_URL:-}" ]; then
    stop_server || failed=1
fi
if [ "$failed" -ne 0 ]; then
    echo "conformance: FAILED"
    exit 1
fi
echo "conformance: all scored scenarios passed"
