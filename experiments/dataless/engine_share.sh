#!/bin/bash
# How much of the data-less replay's time is the engine's own work, and the fastest the replay could
# run if the simulator around the engine cost nothing (docs/BENCHMARKS.md, "The engine's share").
# 1. Runs the optimized replay bench (`cargo bench`'s build) ROUNDS times and takes the median speed.
# 2. Builds the same bench without link-time optimization (its own target directory), so that each call
#    between the simulator and the engine stays a call, and counts its instructions with callgrind.
# 3. engine_share.py splits them into the engine's and the simulator's and prints the ceiling.
# Usage: experiments/dataless/engine_share.sh [EVENTS [ROUNDS]]   (from the repository root; needs valgrind)
set -eu
events=${1:-1000000}
rounds=${2:-5}
row="binary, MobiFS policies, data-less"
command -v valgrind >/dev/null || { echo "engine_share.sh: valgrind is missing (apt-get install valgrind)" >&2; exit 1; }
target=${CARGO_TARGET_DIR:-target}

bench_binary() { # TARGET_DIR -> the replay bench's executable, built by cargo's bench profile
    cargo bench -p mcfs-sim --bench replay_speed --no-run --message-format=json 2>/dev/null |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "replay_speed" and m.get("executable"):
        print(m["executable"])'
}

optimized=$(CARGO_TARGET_DIR=$target bench_binary)
plain=$(CARGO_TARGET_DIR=$target/engine-share CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 bench_binary)
[ -x "$optimized" ] && [ -x "$plain" ] || { echo "engine_share.sh: the replay bench did not build" >&2; exit 1; }

run_row() { MCFS_BENCH_EVENTS=$events MCFS_BENCH_ONLY=$row "$@" --bench | grep "$row"; }
speeds=$(for _ in $(seq "$rounds"); do run_row "$optimized"; done | sed -E 's/.*= *([0-9.]+) M events.*/\1/')
speed=$(echo "$speeds" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)] * 1e6}')
echo "optimized bench, $rounds rounds (M events/s):" $speeds
profile=$(mktemp)
replayed=$(run_row valgrind --tool=callgrind --toggle-collect='replay_speed::replay*' --compress-strings=no \
    --compress-pos=no --callgrind-out-file="$profile" "$plain" 2>/dev/null | awk '{for (i=1;i<NF;i++) if ($(i+1)=="events") print $i}')
python3 "$(dirname "$0")/engine_share.py" "$profile" "$replayed" "$speed"
rm -f "$profile"
