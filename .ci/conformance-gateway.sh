#!/usr/bin/env bash
# Scores the gateway with the official MCP conformance suite: `mcp serve` in
# front of `conformance/server.rs` (`--stdio`), the suite pointed at the
# one-server endpoint /servers/conf/mcp, both requirement sets, scored by
# .ci/conformance.sh (CONFORMANCE_URL) exactly as the direct HTTP server is
# (30/30 for 2025-11-25, 37/37 for 2026-07-28 today).
#
# Then SIGTERM: `mcp serve` must exit 0 within STOP_TIMEOUT, and no
# conformance_server process may be left behind.
#
# CONFORMANCE_GATEWAY_ERA=legacy runs the server behind the gateway in the
# legacy era (its client forced to `initialize`), so that the 2026-07-28
# set crosses eras (its input requests held across the front's rounds).
set -euo pipefail
cd "$(dirname "$0")/.."

START_TIMEOUT=60   # seconds for the gateway to be healthy
STOP_TIMEOUT=40    # seconds for it to exit on SIGTERM (10 s grace, each server's stop, margin)

bash .ci/install-conformance.sh
export PATH="$PWD/target/conformance/node_modules/.bin:$PATH"

# The binaries, as cargo built them.
mcp="$(bash .ci/built-exe.sh --features cli --bin mcp)"
server="$(bash .ci/built-exe.sh --example conformance_server)"
[ -x "$mcp" ] && [ -x "$server" ] || { echo "conformance-gateway: could not find the built binaries" >&2; exit 1; }

work="$PWD/target/conformance-gateway"
rm -rf "$work"
mkdir -p "$work"
era="${CONFORMANCE_GATEWAY_ERA:-auto}"
cat > "$work/servers.json" <<EOF
{ "mcpServers": { "conf": { "command": "$server", "args": ["--stdio"], "conduit": { "era": "$era" } } } }
EOF

port="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
echo "conformance-gateway: $mcp serve on 127.0.0.1:$port in front of $server --stdio (era $era)"
RUST_LOG="${RUST_LOG:-warn}" "$mcp" serve --config "$work/servers.json" --listen "127.0.0.1:$port" \
    >"$work/gateway.log" 2>&1 &
gateway=$!

stop_gateway() {
    [ -n "$gateway" ] || return 0
    local pid="$gateway" status=0 started=$SECONDS watchdog
    gateway=""
    rm -f "$work/stop-timeout"
    kill -TERM "$pid" 2>/dev/null || true
    # `wait` is what sees the exit (a polled `kill -0` also succeeds on an
    # exited child the shell has not reaped yet). The watchdog records what
    # the gateway is waiting for, then kills it, if it is still there after
    # STOP_TIMEOUT.
    (
        sleep "$STOP_TIMEOUT"
        [ -d "/proc/$pid" ] || exit 0
        {
            for t in /proc/"$pid"/task/*; do
                echo "  thread ${t##*/} $(cat "$t/comm" 2>/dev/null) state $(awk '{print $3}' "$t/stat" 2>/dev/null) wchan $(cat "$t/wchan" 2>/dev/null)"
                sed 's/^/    /' "$t/stack" 2>/dev/null || true
            done
            ps -o pid,ppid,stat,etime,cmd --ppid "$pid" || true
        } >"$work/stop-timeout" 2>&1
        kill -KILL "$pid" 2>/dev/null || true
    ) &
    watchdog=$!
    wait "$pid" || status=$?
    # The watchdog and its sleep: nothing of this script outlives it.
    pkill -P "$watchdog" 2>/dev/null || true
    kill "$watchdog" 2>/dev/null || true
    wait "$watchdog" 2>/dev/null || true
    if [ -e "$work/stop-timeout" ]; then
        echo "conformance-gateway: FAIL: mcp serve did not exit within ${STOP_TIMEOUT}s of SIGTERM; its output and threads:" >&2
        sed 's/^/  | /' "$work/gateway.log" >&2
        cat "$work/stop-timeout" >&2
        return 1
    fi
    echo "conformance-gateway: mcp serve exited $((SECONDS - started)) s after SIGTERM ($(tail -n 1 "$work/gateway.log"))"
    if [ "$status" -ne 0 ]; then
        echo "conformance-gateway: FAIL: mcp serve exited with status $status on SIGTERM (expected 0)" >&2
        sed 's/^/  | /' "$work/gateway.log" >&2
        return 1
    fi
    if pgrep -f "$server --stdio" >/dev/null; then
        echo "conformance-gateway: FAIL: a conformance_server process outlived mcp serve" >&2
        return 1
    fi
    echo "conformance-gateway: mcp serve exited 0 on SIGTERM; no server process left"
}
trap 'stop_gateway >/dev/null 2>&1 || true' EXIT

deadline=$((SECONDS + START_TIMEOUT))
until node -e 'fetch(process.argv[1]).then(r=>process.exit(r.status===200?0:1),()=>process.exit(1))' \
    "http://127.0.0.1:$port/health"; do
    if ! kill -0 "$gateway" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
        echo "conformance-gateway: the gateway did not become healthy; its output:" >&2
        sed 's/^/  | /' "$work/gateway.log" >&2
        exit 1
    fi
    sleep 0.2
done

failed=0
CONFORMANCE_URL="http://127.0.0.1:$port/servers/conf/mcp" bash .ci/conformance.sh || failed=1
stop_gateway || failed=1
if [ "$failed" -ne 0 ]; then
    echo "conformance-gateway: FAILED"
    exit 1
fi
echo "conformance-gateway: the suite through the gateway passed as the direct server does"
