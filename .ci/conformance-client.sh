#!/usr/bin/env bash
# Scores conformance/client.rs with the client leg of the official
# MCP conformance suite (pinned by .ci/install-conformance.sh), over
# Streamable HTTP, both requirement sets: 2025-11-25 and 2026-07-28.
#
# The suite starts the example once per scenario (the server's URL as its
# last argument, the scenario in MCP_CONFORMANCE_SCENARIO). Each run is
# scored with .ci/conformance-score.mjs (a scenario counts only when its
# checks ran and none failed), the `auth/` scenarios (OAuth) included:
# 18 of 18 for 2025-11-25, 32 of 32 for 2026-07-28. Prints "R: N/M
# scenarios passed" per set and
# the failing checks; exits non-zero if any scored scenario failed.
# Results: target/conformance/client-results/<revision>/ and <revision>.log.
set -euo pipefail
cd "$(dirname "$0")/.."

REVISIONS=(2025-11-25 2026-07-28)
SUITE_TIMEOUT="${CONFORMANCE_SUITE_TIMEOUT:-900}"   # seconds per requirement set

bash .ci/install-conformance.sh
ROOT="$PWD/target/conformance"
export PATH="$ROOT/node_modules/.bin:$PATH"
PKG="$ROOT/node_modules/@modelcontextprotocol/conformance"
RESULTS="$ROOT/client-results"
rm -rf "$RESULTS"
mkdir -p "$RESULTS"

exe="$(bash .ci/built-exe.sh --example conformance_client)"
[ -x "$exe" ] || { echo "conformance-client: could not find the built example" >&2; exit 1; }

failed=0
for rev in "${REVISIONS[@]}"; do
    echo
    echo "== conformance client --requirements $rev"
    status=0
    RUST_LOG="${RUST_LOG:-warn}" timeout "$SUITE_TIMEOUT" conformance client --command "$exe" \
        --requirements "$rev" -o "$RESULTS/$rev" >"$RESULTS/$rev.log" 2>&1 || status=$?
    if [ "$status" -eq 124 ]; then
        echo "conformance-client: FAIL: the suite did not finish within ${SUITE_TIMEOUT}s (log: $RESULTS/$rev.log)"
        failed=1
    fi
    node .ci/conformance-score.mjs "$PKG" "$rev" "$RESULTS/$rev" client || failed=1
    echo "(suite exit status $status; its output: $RESULTS/$rev.log)"
done

echo
if [ "$failed" -ne 0 ]; then
    echo "conformance-client: FAILED"
    exit 1
fi
echo "conformance-client: all scored client scenarios passed"
