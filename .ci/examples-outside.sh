#!/usr/bin/env bash
# Every example compiles as a user's program: each is copied as src/main.rs
# into a scratch crate of its own under target/examples-outside/, which
# depends on this crate by path. Its dependencies are the ones the example
# names in its header (a ```toml block of `//!` lines), or else the
# README's [dependencies] block: what a user who followed the README has.
# So an example that uses a crate it does not name, or this crate's test
# fixture or dev-dependencies, fails here.
#
#   bash .ci/examples-outside.sh            # every example
#   bash .ci/examples-outside.sh server     # examples/server.rs only
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/target/examples-outside
mkdir -p "$out"
# This checkout's target directory: the dependencies that a scratch crate
# builds with the same versions and features as the tests are not built
# again, and what two examples share is built once.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}

# The ```toml block under `//!` at the top of $1, without the `//! `.
declared() {
    awk '/^\/\/! ```toml/ { on = 1; next } on && /^\/\/! ```/ { exit } on { sub(/^\/\/! ?/, ""); print }' "$1"
}

# The README's [dependencies] block.
readme() {
    awk '/^```toml/ { on = 1; next } on && /^```/ { exit } on { print }' README.md
}

# The dependencies with this crate taken from $root, its features kept.
by_path() {
    sed -E \
        -e "s|^conduit-mcp = \"[^\"]*\"|conduit-mcp = { path = \"$root\" }|" \
        -e "/^conduit-mcp = \\{/ s|version = \"[^\"]*\"|path = \"$root\"|"
}

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
    for f in examples/*.rs; do names+=("$(basename "$f" .rs)"); done
fi
for name in "${names[@]}"; do
    src=examples/$name.rs
    deps=$(declared "$src")
    if [ -z "$deps" ]; then deps=$(readme); fi
    case "$deps" in
        *"[dependencies]"*) ;;
        *) deps="[dependencies]"$'\n'"$deps" ;;
    esac
    if ! grep -q '^conduit-mcp = ' <<<"$deps"; then
        echo "$src: its dependencies name no conduit-mcp" >&2
        exit 1
    fi
    crate=$out/$name
    mkdir -p "$crate/src"
    cp "$src" "$crate/src/main.rs"
    {
        printf '[package]\nname = "example-%s"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n' "$name"
        by_path <<<"$deps"
        # Not a member of this crate's workspace.
        printf '\n[workspace]\n'
    } >"$crate/Cargo.toml"
    # The versions this checkout builds, where they fit (not committed).
    if [ -f Cargo.lock ] && [ ! -f "$crate/Cargo.lock" ]; then cp Cargo.lock "$crate/Cargo.lock"; fi
    echo "examples-outside: $name" >&2
    # `cargo check`: what a user's crate needs to compile, without the code
    # generation a run would need (CI runs the examples themselves elsewhere).
    if ! cargo check --quiet --manifest-path "$crate/Cargo.toml"; then
        echo "examples/$name.rs does not compile in a crate of its own with:" >&2
        by_path <<<"$deps" >&2
        exit 1
    fi
done
