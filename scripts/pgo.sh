#!/usr/bin/env bash
# A profile-guided build of mcfs for simulation studies. Against the release
# build, the replay bench of the synthetic suite ran 1.14x faster (median of 8
# rounds), a 60 GiB install trace 1.03-1.10x (docs/BENCHMARKS.md, "Data-less
# replay: build settings"). Steps:
#   1. build mcfs instrumented (-Cprofile-generate), in target/pgo-gen;
#   2. train it: `mcfs sim` over the synthetic suite (`mcfs trace synth
#      --suite`) and the recordings in crates/mcfs-sim/tests/fixtures/recorded,
#      under the default config and the MobiFS study's configs (the runs of
#      experiments/dataless/compare_json.sh);
#   3. merge the counts with llvm-profdata from rustup's `llvm-tools`
#      (the same LLVM as rustc: a profile from another LLVM is refused);
#   4. build mcfs again with the profile (-Cprofile-use), in target/pgo.
# With --bench, the replay_speed bench is built, trained and rebuilt the same
# way: cargo builds the engine's crates for it apart from the mcfs binary's
# (their symbols differ), so the binary's profile does not fit it. It is
# trained on its rows other than the MobiFS ones from the binary trace (the
# docs quote the data-less one): text input with the MobiFS policies, and the
# defaults, at 300,000 events, and then run whole.
# The profile only steers code layout and inlining: the engine's decisions
# are those of the plain build (the test command checks it with
# experiments/dataless/compare_json.sh). RUSTFLAGS is set by this script.
#
# Usage: scripts/pgo.sh [--bench]
#   --bench  also builds the replay_speed bench with the profile and runs it
#            (MCFS_BENCH_EVENTS and MCFS_BENCH_ONLY as for `cargo bench`).
# Output: target/pgo/release/mcfs
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
say() { echo "pgo.sh: $*" >&2; }
die() { say "$*"; exit 1; }

bench=false
case "${1:-}" in
    --bench) bench=true ;;
    "") ;;
    *) die "unknown option '$1' (usage: scripts/pgo.sh [--bench])" ;;
esac

command -v rustup >/dev/null 2>&1 || die "rustup not found: llvm-profdata comes from its llvm-tools component"
rustup component list --installed 2>/dev/null | grep -q "^llvm-tools" || rustup component add llvm-tools
profdata=$(find "$(rustc --print sysroot)/lib/rustlib" -name llvm-profdata -type f | head -n 1)
[ -x "$profdata" ] || die "llvm-profdata not found under $(rustc --print sysroot) after adding llvm-tools"

target=${CARGO_TARGET_DIR:-$repo/target}
gen_dir=$target/pgo-gen
counts=$gen_dir/counts
profile=$gen_dir/mcfs.profdata
work=$gen_dir/train
rm -rf "$counts" "$work"
mkdir -p "$counts" "$work"

say "building mcfs instrumented"
(cd "$repo" && CARGO_TARGET_DIR=$gen_dir RUSTFLAGS="-Cprofile-generate=$counts" cargo build --release -p mcfs)
instrumented=$gen_dir/release/mcfs

say "training on the synthetic suite and the recordings"
# compare_json.sh runs every one of them under each config, twice: here both
# runs are the instrumented binary's, which must also agree with itself.
(cd "$repo" && experiments/dataless/compare_json.sh "$instrumented" "$instrumented" "$work" >/dev/null) ||
    die "training failed: experiments/dataless/compare_json.sh $instrumented $instrumented $work"
# The bench binary cargo built last (its file name ends in a hash).
bench_binary() { find "$1/release/deps" -name 'replay_speed-*' -type f -executable -printf '%T@ %p\n' | sort -n | tail -n 1 | cut -d' ' -f2; }
if $bench; then
    say "building and training the replay_speed bench instrumented"
    (cd "$repo" && CARGO_TARGET_DIR=$gen_dir RUSTFLAGS="-Cprofile-generate=$counts" cargo bench -p mcfs-sim --bench replay_speed --no-run)
    for row in "text, MobiFS policies" "binary, default policies"; do
        MCFS_BENCH_EVENTS=300000 MCFS_BENCH_ONLY=$row "$(bench_binary "$gen_dir")" --bench >/dev/null
    done
fi
"$profdata" merge -o "$profile" "$counts"

say "building mcfs with the profile"
(cd "$repo" && CARGO_TARGET_DIR=$target/pgo RUSTFLAGS="-Cprofile-use=$profile" cargo build --release -p mcfs)
say "done: $target/pgo/release/mcfs"

if $bench; then
    say "building and running the replay_speed bench with the profile"
    (cd "$repo" && CARGO_TARGET_DIR=$target/pgo RUSTFLAGS="-Cprofile-use=$profile" cargo bench -p mcfs-sim --bench replay_speed)
fi
