#!/usr/bin/env bash
# The real-trace study: the MobiFS comparisons (data flushed, energy, checkpoint intervals, staleness and
# bytes at risk; ext4-like against the MobiFS policies) on real phone block traces, on strace recordings
# of real programs, on the live recordings of the MobiFS study and on the synthetic suite; writes
# RESULTS/summary.md (the tables docs/REPORT.md's real-trace section quotes).
#
#   experiments/realtrace/run.sh [--csv FILE]... [--csv-dir DIR]     full run: 5-minute recordings
#   experiments/realtrace/run.sh --quick                              smoke run: 20-second recordings
#
# Phone block traces are per-process CSVs recorded with eBPF on a phone (process as COMM-TID, device, rw
# flag, sector, size in 512-byte sectors, timestamp since boot; gzip or zstd allowed) that you downloaded:
# pass each with --csv, or a directory of *.csv, *.csv.gz, *.csv.zst with --csv-dir. Nothing is fetched.
# The public traces of github.com/acsl-technion/MobileBlockIOTraces (Pixel 6a) are in this layout: put
# their *_precond.csv.gz and *_exec.csv.gz in a directory and pass it with --csv-dir.
# Their layout: --columns SPEC (default process=1,op=3,offset=4,size=5,time=6), --time-unit U (default
# s), --header (a title row; without it, a title row is skipped as an unknown op), --op-read R,RS /
# --op-write W,WS (defaults R / W), --max-gap SECONDS (default 60: the hours between a phone's
# recordings since boot would dominate every time-weighted figure). Without CSVs the phone group is left
# out and the summary says so.
#
# Other options: --device PROFILE (default emmc; see docs/DEVICE_MODEL.md), --results DIR (default
# experiments/realtrace/results), --live DIR (recordings of a live mount; default the MobiFS study's
# experiments/mobifs/traces/recorded, if it ran), --seconds N (recording length). Needs strace, git,
# python3; MCFS_BIN=path uses that mcfs instead of building target/release/mcfs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
results=$here/results
live=$repo/experiments/mobifs/traces/recorded
seconds=300
device=emmc
csvs=()
columns=process=1,op=3,offset=4,size=5,time=6
time_unit=s
max_gap=60
csv_opts=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) seconds=20 ;;
        --seconds) seconds=${2:?--seconds needs a number}; shift ;;
        --csv) csvs+=("$(realpath "${2:?--csv needs a file}")"); shift ;;
        --csv-dir)
            for f in "${2:?--csv-dir needs a directory}"/*.csv "$2"/*.csv.gz "$2"/*.csv.zst; do
                [ -e "$f" ] && csvs+=("$(realpath "$f")")
            done
            shift ;;
        --columns) columns=${2:?--columns needs a spec}; shift ;;
        --time-unit) time_unit=${2:?--time-unit needs a unit}; shift ;;
        --max-gap) max_gap=${2:?--max-gap needs seconds}; shift ;;
        --header) csv_opts+=(--header) ;;
        --op-read | --op-write) csv_opts+=("$1" "${2:?$1 needs values}"); shift ;;
        --device) device=${2:?--device needs a profile}; shift ;;
        --results) results=$(realpath -m "${2:?--results needs a directory}"); shift ;;
        --live) live=$(realpath -m "${2:?--live needs a directory}"); shift ;;
        -h | --help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
done

CONFIGS=(ext4 mobifs-tpl mobifs)
# The strace'd programs: name and seed.
PROGRAMS=("sqlite-apsw 41" "sqlite-wal 42" "git 43" "pip 44")
# shellcheck disable=SC2034 # read by install_packages (common.sh)
PACKAGES=(strace git python3)

# say, die, install_packages, build
# shellcheck source-path=SCRIPTDIR source=../common.sh
source "$repo/experiments/common.sh"
started=$SECONDS
traces=$results/traces

scratch=$(mktemp -d /tmp/mcfs-realtrace.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

phone() {
    [ ${#csvs[@]} -gt 0 ] || { say "no phone CSVs given (--csv, --csv-dir): the phone group is left out"; return; }
    say "importing ${#csvs[@]} phone block traces"
    mkdir -p "$traces/phone"
    local csv name
    for csv in "${csvs[@]}"; do
        name=$(basename "$csv")
        name=${name%.gz}; name=${name%.zst}; name=${name%.csv}
        "$mcfs" trace import --format csv --columns "$columns" --process-format comm-tid \
            --offset-unit sector --size-unit sector --time-unit "$time_unit" --file-per-app \
            --skip-other-ops --max-gap "$max_gap" "${csv_opts[@]}" --output "$traces/phone/$name.bin" "$csv" ||
            die "importing $csv failed"
    done
}

strace_programs() {
    say "running ${#PROGRAMS[@]} real programs under strace for up to ${seconds} s each (in parallel)"
    mkdir -p "$traces/strace"
    local entry name seed pids=() names=()
    for entry in "${PROGRAMS[@]}"; do
        read -r name seed <<<"$entry"
        "$here/programs.sh" "$name" "$scratch/$name" "$seconds" "$seed" "$scratch/$name.strace" &
        pids+=($!)
        names+=("$name")
    done
    local i
    for i in "${!pids[@]}"; do
        wait "${pids[$i]}" || die "program '${names[$i]}' failed"
    done
    for name in "${names[@]}"; do
        # Only the program's own files count: its scratch directory, not the libraries it loads.
        "$mcfs" trace import --format strace --app "$name" --path-prefix "$scratch/$name" \
            --output "$traces/strace/$name.bin" "$scratch/$name.strace" || die "importing $name's strace failed"
    done
}

others() {
    if compgen -G "$live/*.trace" >/dev/null || compgen -G "$live/*.bin" >/dev/null; then
        say "taking the live recordings of $live"
        mkdir -p "$traces/live"
        cp "$live"/*.trace "$live"/*.bin "$traces/live/" 2>/dev/null || true
    else
        say "no live recordings in $live (run experiments/mobifs/run.sh first): the live group is left out"
    fi
    say "generating the synthetic suite"
    "$mcfs" trace synth --suite "$traces/synthetic" --to binary >/dev/null
    rm -f "$traces/synthetic"/FB-u*.bin
}


install_packages
build
rm -rf "$results"
mkdir -p "$traces"
phone
strace_programs
others
replay_all "$traces" "$results/runs" "$device" "$repo/experiments/mobifs/configs" "${CONFIGS[@]}"
python3 "$here/summarize.py" "$results/runs" "$device" >"$results/summary.md"
say "done in $((SECONDS - started)) s: $results/summary.md"
