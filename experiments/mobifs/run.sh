#!/usr/bin/env bash
# The MobiFS study (seed 003, §7) in one command: checkpoint intervals (Figure 6), idle prediction
# (Figures 8 and 9), data flushed (Figure 13) and energy (§7.5), on the synthetic suite and on traces
# recorded from real programs on a live mount; writes the MobiFS section of docs/REPORT.md.
#
#   experiments/mobifs/run.sh           full run: 5-minute recordings (about 7 minutes in all)
#   experiments/mobifs/run.sh --quick   smoke run: 30-second recordings
#
# Options: --results DIR (default experiments/mobifs/results), --out FILE (default docs/REPORT.md).
# Needs root (the live mount, running each program as its own uid) and /dev/fuse; installs sqlite3,
# git and fuse3 if missing. MCFS_BIN=path uses that mcfs instead of building target/release/mcfs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
results=$here/results
traces=$here/traces
out=$repo/docs/REPORT.md
record_seconds=300
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) record_seconds=30 ;;
        --results) results=$(realpath -m "${2:?--results needs a directory}"); shift ;;
        --out) out=$(realpath -m "${2:?--out needs a file}"); shift ;;
        -h | --help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
done

CONFIGS=(ext4 mobifs-tpl mobifs)
DEVICE=emmc
# The real programs: name, workload, uid (an app of its own each), seed.
PROGRAMS=("sqlite3-messaging sqlite 10001 31" "git-notes git 10002 32")
# shellcheck disable=SC2034 # read by install_packages (common.sh)
PACKAGES=(sqlite3 git fuse3 util-linux)

# say, die, install_packages, build
# shellcheck source-path=SCRIPTDIR source=../common.sh
source "$repo/experiments/common.sh"
started=$SECONDS

[ "$(id -u)" -eq 0 ] || die "needs root (a live mount, and each program runs as its own uid)"
[ -e /dev/fuse ] || die "/dev/fuse is missing: the real programs are recorded on a live FUSE mount"

synthesize() {
    say "generating the synthetic suite"
    "$mcfs" trace synth --suite "$traces/suite" --to binary >/dev/null
    mkdir -p "$traces/synthetic" "$traces/synthetic-users"
    local f
    for f in "$traces/suite"/*.bin; do
        case "$(basename "$f")" in
            FB-u*) mv "$f" "$traces/synthetic-users/" ;;
            *) mv "$f" "$traces/synthetic/" ;;
        esac
    done
    rmdir "$traces/suite"
}

# Scratch directories and mounts of the recordings, undone on any exit.
scratch=()
cleanup() {
    local dir
    for dir in "${scratch[@]}"; do
        if awk -v m="$dir/mnt" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo; then
            "$mcfs" umount --timeout 30 "$dir/mnt" 2>/dev/null || fusermount3 -u -z "$dir/mnt" 2>/dev/null || true
        fi
        rm -rf "$dir"
    done
}
trap cleanup EXIT

# record NAME WORKLOAD UID SEED I: runs the workload on a fresh recording mount (scratch directory I)
# into recorded/NAME.trace.
record() {
    local name=$1 workload=$2 uid=$3 seed=$4 dir=${scratch[$5]}
    # The program's uid must reach its directory through the scratch directory (mktemp makes it 0700).
    chmod 755 "$dir"
    mkdir -p "$dir/backing/$name" "$dir/mnt"
    chown "$uid:$uid" "$dir/backing/$name"
    "$mcfs" mount --record "$traces/recorded/$name.trace" "$dir/backing" "$dir/mnt"
    MCFS=$mcfs "$here/workload.sh" "$workload" "$dir/mnt" "$dir/mnt/$name" "$record_seconds" "$seed" "$uid"
    "$mcfs" umount "$dir/mnt"
}

record_programs() {
    say "recording ${#PROGRAMS[@]} real programs for ${record_seconds} s each (in parallel, on live mounts)"
    mkdir -p "$traces/recorded"
    local i pids=()
    for i in "${!PROGRAMS[@]}"; do
        scratch+=("$(mktemp -d /tmp/mcfs-mobifs.XXXXXX)")
    done
    for i in "${!PROGRAMS[@]}"; do
        # shellcheck disable=SC2086 # the entry is four words
        record ${PROGRAMS[$i]} "$i" &
        pids+=($!)
    done
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || die "recording '${PROGRAMS[$i]%% *}' failed"
    done
}

install_packages
build
rm -rf "$traces" "$results"
mkdir -p "$traces" "$results"
synthesize
record_programs
replay_all "$traces" "$results" "$DEVICE" "$here/configs" "${CONFIGS[@]}"
say "writing the report"
"$mcfs" report --mobifs "$results" --out "$out"
say "done in $((SECONDS - started)) s: $out (results in $results, traces in $traces)"
