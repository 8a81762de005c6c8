#!/usr/bin/env bash
# The README's test command: sets the machine up (scripts/setup.sh
# --pjdfstest), runs every unit and integration test of the workspace
# (including the end-to-end tests that mount mcfs, kill it and recover) in the
# `checked` profile (release optimisation with debug assertions and overflow
# checks on), the Ray runner of sweeps on a local two-node cluster
# (scripts/test-sweep-ray.sh, a venv with Ray), the unit tests of the
# experiments' own analysis scripts, clippy with warnings as errors,
# the formatting check, the pjdfstest POSIX suite against ext4
# (scripts/pjdfstest.sh), the aarch64 cross build with the engine's unit
# tests under qemu (scripts/cross-test.sh), then the profile-guided build
# (scripts/pgo.sh), checked to decide as the plain release build does.
# Every stage runs even if an earlier test stage failed; the exit status is
# non-zero if any stage failed. Needs root and FUSE.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"

say() { printf '\n==> %s\n' "$*"; }
timings=()
failed=()

# stage NAME COMMAND...: runs one stage, records its time and outcome.
stage() {
    local name=$1 start=$SECONDS status=0
    shift
    say "$name: $*"
    "$@" || status=$?
    timings+=("$(printf '%-12s %5ss  %s' "$name" "$((SECONDS - start))" "$([ "$status" -eq 0 ] && echo ok || echo "FAILED (exit $status)")")")
    [ "$status" -eq 0 ] || failed+=("$name")
    return 0
}

# The tests in the checked profile; fstab and mount(8) tests run the helper
# links, so they must lead to the checked binary under test.
checked_tests() {
    cargo build --workspace --profile checked --bins
    scripts/install-helpers.sh "${CARGO_TARGET_DIR:-$repo/target}/checked/mcfs"
    cargo test --workspace --profile checked --no-fail-fast
}

# The profile-guided build must change speed only: its replays of the
# synthetic suite and the recordings print the plain build's JSON, byte for byte.
pgo_build() {
    local target=${CARGO_TARGET_DIR:-$repo/target}
    scripts/pgo.sh && experiments/dataless/compare_json.sh "$target/release/mcfs" "$target/pgo/release/mcfs"
}

stage setup scripts/setup.sh --pjdfstest
if [ ${#failed[@]} -eq 0 ]; then
    stage "cargo test" checked_tests
    stage "sweep ray" scripts/test-sweep-ray.sh "${CARGO_TARGET_DIR:-$repo/target}/checked/mcfs"
    stage "scripts" python3 -m unittest discover -s experiments/dataless -p 'test_*.py'
    stage clippy cargo clippy --workspace --all-targets --release -- -D warnings
    stage fmt cargo fmt --all -- --check
    stage pjdfstest scripts/pjdfstest.sh
    stage aarch64 scripts/cross-test.sh
    stage pgo pgo_build
fi

say "summary"
printf '    %s\n' "${timings[@]}"
if [ ${#failed[@]} -ne 0 ]; then
    echo "    failed: ${failed[*]}"
    exit 1
fi
echo "    all stages passed"
