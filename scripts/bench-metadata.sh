#!/bin/bash
# Metadata checkpoint benchmark (docs/BENCHMARKS.md): mounts mcfs on a fresh
# backing directory, runs one stress-ng stressor on the mount for SECONDS,
# then times `mcfs umount` (its final checkpoint). Needs root, fuse3 and
# stress-ng (`apt-get install stress-ng`).
#
#   sudo scripts/bench-metadata.sh [MCFS_BINARY] [SECONDS] [STRESSOR...]
#   sudo scripts/bench-metadata.sh target/release/mcfs 20 rename dirdeep link hdd
#
# Puts the backing directory and the mount point under $TMPDIR (default /tmp).
set -eu
bin=$(realpath "${1:-target/release/mcfs}")
seconds=${2:-20}
if [ $# -gt 2 ]; then stressors=("${@:3}"); else stressors=(rename dirdeep link hdd); fi

printf '%-8s %12s %10s %12s\n' stressor "bogo ops" "umount s" "checkpoints"
for stressor in "${stressors[@]}"; do
    run=$(mktemp -d "${TMPDIR:-/tmp}/mcfs-metabench.XXXXXX")
    mkdir "$run/backing" "$run/mnt"
    "$bin" mount "$run/backing" "$run/mnt"
    ops=$(stress-ng --"$stressor" 1 --timeout "${seconds}s" --temp-path "$run/mnt" --metrics-brief 2>&1 |
        awk -v s="$stressor" '$4 == s { print $5; exit }')
    checkpoints=$("$bin" stat --json "$run/mnt" | sed -n 's/.*"checkpoints": *\([0-9]*\).*/\1/p')
    started=$(date +%s.%N)
    "$bin" umount "$run/mnt"
    ended=$(date +%s.%N)
    printf '%-8s %12s %10.2f %12s\n' "$stressor" "${ops:-?}" "$(echo "$ended - $started" | bc)" "${checkpoints:-?}"
    rm -rf "$run"
done
