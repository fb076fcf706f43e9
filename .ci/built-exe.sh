#!/usr/bin/env bash
# Builds with `cargo build ARGS...` and prints the path of the executable it
# made (the last one cargo reports): cargo's own answer, not a guess under
# target/. Shared by the conformance scripts.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet "$@"
cargo build --quiet "$@" --message-format=json | node -e '
    let out = "";
    process.stdin.on("data", (d) => (out += d)).on("end", () => {
        for (const line of out.split("\n")) {
            if (!line) continue;
            const m = JSON.parse(line);
            if (m.reason === "compiler-artifact" && m.executable) console.log(m.executable);
        }
    });' | tail -n 1
