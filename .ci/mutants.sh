#!/usr/bin/env bash
# The mutation check: cargo-mutants (pinned below, installed under
# target/tools/ on first use) changes the code where a silent mistake costs
# most, one mutant at a time, and runs the narrowest tests that cover it; a
# mutant no test fails is "missed". Not run by .ci/run: it takes hours on
# two cores. Run it by hand, on a quiet machine:
#
#   bash .ci/mutants.sh              every area below, one after the other
#   bash .ci/mutants.sh body bearer  only those areas
#
# Results: target/mutants/AREA/mutants.out/ (caught.txt, missed.txt,
# timeout.txt, unviable.txt, outcomes.json), and a one-line summary per
# area on stdout. Each missed mutant gets a test that catches it, or a
# reason in the closing note why it is equivalent.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_MUTANTS_VERSION="27.1.0"
TOOLS="target/tools"
MUTANTS="$TOOLS/bin/cargo-mutants"
if [ "$("$MUTANTS" mutants --version 2>/dev/null || true)" != "cargo-mutants $CARGO_MUTANTS_VERSION" ]; then
    echo "mutants: installing cargo-mutants $CARGO_MUTANTS_VERSION into $TOOLS"
    cargo install --locked --quiet --root "$TOOLS" "cargo-mutants@=$CARGO_MUTANTS_VERSION"
fi

# Every area builds in one target directory of its own, outside the copy of
# the tree cargo-mutants makes for each area: the dependencies are built
# once, and each mutant rebuilds this crate and the tests of its area.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target/mutants-target}"

# AREA | FILES (globs, comma-separated) | TARGETS (cargo test's target
# selection: built for every mutant) | FILTERS (test names to run). The tests
# of an area are the unit tests of its modules and the integration tests
# that drive it; every mutant rebuilds only those targets.
areas=(
    "child|src/child/**|--lib|child::"
    "engine|src/server/engine/**|--lib --test=server|server::engine:: budget:: backlog:: held::"
    "body|src/server/http/body.rs|--lib --test=server_http|server::http:: safety:: edges::"
    "admission|src/server/http/admission.rs|--lib --test=server_http|server::http:: safety:: session:: stateless::"
    "bearer|src/server/http/bearer.rs|--lib --test=server_http --test=gateway|server::http:: safety:: admission::"
    # The grants are checked all over the gateway: all of its tests.
    "grants|src/gateway/auth.rs|--lib --test=gateway|"
)

want=("$@")
for entry in "${areas[@]}"; do
    IFS='|' read -r area files targets filters <<<"$entry"
    if [ "${#want[@]}" -gt 0 ] && [[ ! " ${want[*]} " == *" $area "* ]]; then
        continue
    fi
    out="target/mutants/$area"
    mkdir -p "$out"
    file_args=()
    IFS=',' read -r -a globs <<<"$files"
    for g in "${globs[@]}"; do file_args+=(--file "$g"); done
    target_args=()
    for t in $targets; do target_args+=(--cargo-arg="$t"); done
    echo "mutants: $area ($files; cargo test $targets -- $filters)"
    rc=0
    # shellcheck disable=SC2086 # the filters are words
    nice -n 19 "$MUTANTS" mutants --no-shuffle --colors never --output "$out" \
        --minimum-test-timeout 120 "${file_args[@]}" "${target_args[@]}" \
        -- -- $filters >"$out/run.log" 2>&1 || rc=$?
    # 0: all caught; 2: some missed; 3: some timed out; anything else
    # (4: the tests fail without a mutant) is the run's own failure.
    case "$rc" in
        0 | 2 | 3) ;;
        *)
            echo "mutants: $area: cargo-mutants failed (exit $rc), see $out/run.log" >&2
            exit 1
            ;;
    esac
    o="$out/mutants.out"
    count() { if [ -f "$o/$1.txt" ]; then wc -l <"$o/$1.txt"; else echo 0; fi; }
    echo "mutants: $area: $(count caught) caught, $(count missed) missed," \
        "$(count timeout) timed out, $(count unviable) unviable"
done
