#!/usr/bin/env bash
# The FastTrack study (seed 001, §5) in one command: the foreground (FG) app's response time against
# 0-6 background (BG) apps, on ext4 and on mcfs with each FastTrack part, live (real processes on real
# mounts over the emulated eMMC) and in the simulator (the same traces); writes the FastTrack section of
# docs/REPORT.md (Figures 10, 12 and 13 of the paper).
#
#   experiments/fasttrack/run.sh           full run: 3 repetitions per point, workloads at 3/4 of their
#                                          documented size (about 20 minutes)
#   experiments/fasttrack/run.sh --quick   smoke run: 1 repetition, half-size workloads (about 5 minutes)
#
# Options: --results DIR (default experiments/fasttrack/results), --out FILE (default docs/REPORT.md),
# --reps N, --scale F (workload size, 1 = as documented in docs/SYNTH.md), --fg-limit SECONDS (an FG run
# taking longer is stopped and recorded as censored; default 15, 10 with --quick), --only REGEX (only
# the points whose line "SCENARIO BG_KIND BG_COUNT CONFIG" matches, e.g. 'switch mixed'), --live-only,
# --sim-only (reuses the traces of an earlier run), --work DIR (scratch space, default under /var/tmp).
# Needs root (mounts, loop devices, apps as their own uids) and /dev/fuse; installs fuse3, e2fsprogs and
# util-linux if missing. MCFS_BIN=path uses that mcfs instead of building target/release/mcfs.
# README.md explains the layout and every choice.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
results=$here/results
traces=$here/traces
out=$repo/docs/REPORT.md
work=
reps=3
scale=0.75
warmup=2
# The longest an FG run may take before it is stopped (its time is then a lower bound, marked censored).
fg_limit=15
live=1
sim=1
only=
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) reps=1 scale=0.5 warmup=1 fg_limit=10 ;;
        --fg-limit) fg_limit=${2:?--fg-limit needs seconds}; shift ;;
        --reps) reps=${2:?--reps needs a number}; shift ;;
        --scale) scale=${2:?--scale needs a number}; shift ;;
        --results) results=$(realpath -m "${2:?--results needs a directory}"); shift ;;
        --out) out=$(realpath -m "${2:?--out needs a file}"); shift ;;
        --work) work=$(realpath -m "${2:?--work needs a directory}"); shift ;;
        --only) only=${2:?--only needs a regular expression}; shift ;;
        --live-only) sim=0 ;;
        --sim-only) live=0 ;;
        -h | --help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$reps" in '' | *[!0-9]* | 0) echo "run.sh: --reps needs a positive number" >&2; exit 2 ;; esac

# The emulated device: the Nexus 5's eMMC with eMMC 5.1's 32-task command queue (docs/DEVICE_MODEL.md),
# so that the device scheduler of FastT (§4.5) has commands to reorder.
DEVICE=emmc-cq
# The study's configs (configs/NAME.toml): ext4 is real ext4 live, the rest are mcfs configs.
CONFIGS=(ext4 mcfs-off pa pr id fastt-minus fastt)
SCENARIOS=(launch switch load)
# Apps: name, workload kind, uid, seed. All FG scenarios are one FG app's uid, as the paper's FG app.
FG_UID=10001
declare -A KIND=([gallery]=launch [camera]=switch [game]=load)
declare -A FG_APP=([launch]=gallery [switch]=camera [load]=game)
BG_UPDATES=(update1 update2 update3)
BG_BACKUPS=(backup1 backup2 backup3)
declare -A UID_OF=([gallery]=$FG_UID [camera]=$FG_UID [game]=$FG_UID
    [update1]=10002 [update2]=10003 [update3]=10004 [backup1]=10005 [backup2]=10006 [backup3]=10007)
declare -A SEED_OF=([gallery]=11 [camera]=12 [game]=13
    [update1]=21 [update2]=22 [update3]=23 [backup1]=31 [backup2]=32 [backup3]=33)
for app in "${BG_UPDATES[@]}"; do KIND[$app]=update; done
for app in "${BG_BACKUPS[@]}"; do KIND[$app]=backup; done
APPS=(gallery camera game "${BG_UPDATES[@]}" "${BG_BACKUPS[@]}")
# Memory of all apps together (their page cache; mcfs's cache_size is the same), MiB at scale 1: less
# than one Backup app's files, as a phone's page cache is smaller than what its apps stream through it.
APP_MEMORY_MIB=128
# shellcheck disable=SC2034 # read by install_packages (common.sh)
PACKAGES=(fuse3 e2fsprogs util-linux)

# say, die, install_packages, build
# shellcheck source-path=SCRIPTDIR source=../common.sh
source "$repo/experiments/common.sh"
started=$SECONDS

# Scales a size in MiB by --scale (awk: the shell has no decimals).
scaled_mib() { awk -v m="$1" -v s="$scale" 'BEGIN { v = int(m * s); print (v < 16 ? 16 : v) }'; }

synthesize() {
    say "generating the workloads (scale $scale)"
    rm -rf "$traces"
    local app
    for app in "${APPS[@]}"; do
        "$mcfs" trace synth --fasttrack "${KIND[$app]}" --app "$app" --seed "${SEED_OF[$app]}" --scale "$scale" \
            -o "$traces/$app" >/dev/null
    done
}

# --- the apps' cgroup: one memory limit for all apps, like a phone's DRAM ----------------------------

procs=-
make_cgroup() {
    local bytes=$(($(scaled_mib $APP_MEMORY_MIB) * 1024 * 1024)) dir
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        dir=/sys/fs/cgroup/mcfs-fasttrack.$$
        mkdir "$dir" 2>/dev/null && echo "$bytes" >"$dir/memory.max" 2>/dev/null && procs=$dir/cgroup.procs
    else
        local own
        own=$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)
        dir=/sys/fs/cgroup/memory${own%/}/mcfs-fasttrack.$$
        mkdir "$dir" 2>/dev/null && echo "$bytes" >"$dir/memory.limit_in_bytes" 2>/dev/null && procs=$dir/cgroup.procs
    fi
    if [ "$procs" = - ]; then
        echo "run.sh: warning: no memory cgroup for the apps; their page cache is the whole machine's" >&2
        rmdir "$dir" 2>/dev/null || true
        app_memory_mib=0
    else
        cgroup_dir=$dir
        app_memory_mib=$(scaled_mib $APP_MEMORY_MIB)
    fi
}

# --- mounts --------------------------------------------------------------------------------------------

mounted() { awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo; }

# mount_flash POLICY: the emulated device over the backing store, with its stats file.
mount_flash() {
    "$mcfs" flashdev --profile "$DEVICE" --scheduler "$1" --stats "$work/flash-stats.json" "$backing" "$flash" \
        >/dev/null
}

# The device may be busy for a moment after the file system above it is gone (a loop device detaches
# asynchronously), so unmounting it is retried for up to 30 s.
umount_flash() {
    local try
    for ((try = 0; try < 150; try++)); do
        "$mcfs" umount "$flash" >/dev/null 2>&1 && return
        sleep 0.2
    done
    "$mcfs" umount "$flash" >/dev/null
}

# The mcfs config NAME as mcfs reads it: the shared settings, the apps' memory, then the config's own.
config_file() {
    local file=$work/config-$1.toml
    {
        cat "$here/configs/common.toml"
        echo "cache_size = $(($(scaled_mib $APP_MEMORY_MIB) * 1024 * 1024))"
        cat "$here/configs/$1.toml"
    } >"$file"
    echo "$file"
}

# mount_fs CONFIG DIR: ext4 (the image) or mcfs (CONFIG) on $mnt over the store DIR.
mount_fs() {
    if [ "$1" = ext4 ]; then
        mount -o loop "$2/ext4.img" "$mnt"
    else
        "$mcfs" mount -c "$(config_file "$1")" "$2/mcfs" "$mnt" >/dev/null
    fi
}

umount_fs() {
    if [ "$1" = ext4 ]; then umount "$mnt"; else "$mcfs" umount "$mnt" >/dev/null; fi
}

cold_caches() {
    sync
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "run.sh: warning: cannot drop the page cache" >&2
}

# --- setup: the files every app reads, written once per file system -----------------------------------

# prepare_tree: the apps' directories (each owned by its app) and their setup traces, on $mnt.
prepare_tree() {
    mkdir -p "$mnt/data/data"
    chmod 755 "$mnt/data" "$mnt/data/data"
    local app
    for app in "${APPS[@]}"; do
        mkdir -p "$mnt/data/data/$app"
        chown "${UID_OF[$app]}:${UID_OF[$app]}" "$mnt/data/data/$app"
        "$here/as_app.sh" - "${UID_OF[$app]}" "$mcfs" trace replay "$traces/$app/setup.trace" --into "$mnt" \
            >/dev/null
    done
}

# The setup writes straight into the backing store (not through the emulated device: it is not timed).
setup_stores() {
    say "writing the apps' files into the ext4 image and the mcfs store"
    truncate -s 3G "$backing/ext4.img"
    mkfs.ext4 -q -F "$backing/ext4.img"
    mount_fs ext4 "$backing"
    prepare_tree
    umount_fs ext4
    mkdir -p "$backing/mcfs"
    mount_fs mcfs-off "$backing"
    prepare_tree
    umount_fs mcfs-off
}

# --- one live run -------------------------------------------------------------------------------------

# BG apps of a point: KIND COUNT → names (mixed: half Update, half Backup).
bg_apps() {
    local kind=$1 count=$2 i
    case "$kind" in
        none) ;;
        update) echo "${BG_UPDATES[@]:0:$count}" ;;
        backup) echo "${BG_BACKUPS[@]:0:$count}" ;;
        mixed) for ((i = 0; i < count / 2; i++)); do echo "${BG_UPDATES[$i]} ${BG_BACKUPS[$i]}"; done ;;
    esac
}

policy_of() { if [ "$1" = fastt ]; then echo priority; else echo fifo; fi; }

bg_pids=()
stop_bg() {
    local pid
    for pid in "${bg_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${bg_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    bg_pids=()
}

# A JSON number of seconds from a replay's JSON (elapsed_ns).
seconds_of() { sed -n 's/.*"elapsed_ns":\([0-9]*\).*/\1/p' "$1" | awk '{ printf "%.6f", $1 / 1e9 }'; }

# live_run SCENARIO BG_KIND BG_COUNT CONFIG REP: one run, appended to results/live.jsonl.
live_run() {
    local scenario=$1 kind=$2 count=$3 config=$4 rep=$5 fg=${FG_APP[$1]} app policy
    policy=$(policy_of "$config")
    local id="$scenario-$kind$count-$config-$rep"
    rm -rf "$work/out"
    mkdir -m 1777 "$work/out"
    mount_flash "$policy"
    mount_fs "$config" "$flash"
    cold_caches
    if [ "$config" != ext4 ]; then "$mcfs" ctl "$mnt" fg "uid:$FG_UID" >/dev/null; fi
    for app in $(bg_apps "$kind" "$count"); do
        "$here/as_app.sh" "$procs" "${UID_OF[$app]}" "$mcfs" trace replay "$traces/$app/run.trace" --into "$mnt" \
            --loop --json "$work/out/$app.json" >/dev/null &
        bg_pids+=($!)
    done
    [ "$count" -eq 0 ] || sleep "$warmup"
    # timeout's TERM makes the replay stop between two operations and still write its JSON.
    timeout -s TERM "$fg_limit" "$here/as_app.sh" "$procs" "$FG_UID" "$mcfs" trace replay "$traces/$fg/run.trace" \
        --into "$mnt" --json "$work/out/fg.json" >/dev/null || [ $? -eq 124 ]
    stop_bg
    umount_fs "$config"
    umount_flash
    local fg_json seconds censored=false
    fg_json=$(cat "$work/out/fg.json")
    seconds=$(seconds_of "$work/out/fg.json")
    case "$fg_json" in *'"stopped":true'*) censored=true ;; esac
    printf '{"source":"live","scenario":"%s","bg_kind":"%s","bg_count":%s,"config":"%s","rep":%s,"fg_seconds":%s,"censored":%s,"device":"%s","scheduler":"%s","scale":%s,"app_memory_mib":%s,"fg":%s}\n' \
        "$scenario" "$kind" "$count" "$config" "$rep" "$seconds" "$censored" "$DEVICE" "$policy" "$scale" \
        "$app_memory_mib" "$fg_json" >>"$results/live.jsonl"
    mkdir -p "$results/raw/$id"
    cp "$work/out/"*.json "$work/flash-stats.json" "$results/raw/$id/"
    printf '    %-40s %8.3f s%s\n' "$id" "$seconds" "$([ "$censored" = false ] || echo ' (stopped at the limit)')"
}

# --- the matrix ---------------------------------------------------------------------------------------

# Every point once: "SCENARIO BG_KIND BG_COUNT CONFIG" (those matching --only).
points() { all_points | grep -E -- "${only:-.}"; }

all_points() {
    local s k c n
    for s in "${SCENARIOS[@]}"; do
        echo "$s none 0 ext4"
        echo "$s none 0 mcfs-off"
        for k in update backup; do
            for c in "${CONFIGS[@]}"; do echo "$s $k 1 $c"; done
        done
    done
    # Figure 13: the app switch with 0-6 BG apps, half Update and half Backup.
    for c in ext4 mcfs-off fastt-minus fastt; do
        [ "$c" = ext4 ] || [ "$c" = mcfs-off ] || echo "switch none 0 $c"
        for n in 2 4 6; do echo "switch mixed $n $c"; done
    done
}

run_live() {
    local total
    total=$(($(points | wc -l) * reps))
    say "running $total live points ($reps repetition(s) of $(points | wc -l)), warm-up ${warmup} s"
    local rep line
    for ((rep = 0; rep < reps; rep++)); do
        while read -r line; do
            # shellcheck disable=SC2086 # four words
            live_run $line "$rep"
        done < <(points)
    done
}

# --- the simulator ------------------------------------------------------------------------------------

sim_run() {
    local scenario=$1 kind=$2 count=$3 config=$4 policy app bg=()
    policy=$(policy_of "$config")
    for app in $(bg_apps "$kind" "$count"); do bg+=(--bg "$traces/$app"); done
    local json
    json=$("$mcfs" sim --fasttrack "$traces/${FG_APP[$scenario]}" "${bg[@]}" --config "$(config_file "$config")" \
        --device "$DEVICE" --scheduler "$policy" --warmup "$warmup" --json) ||
        die "mcfs sim --fasttrack failed on $scenario $kind $count $config"
    local seconds
    seconds=$(printf '%s' "$json" | sed -n 's/^{"fg_seconds":\([0-9.e+-]*\),.*/\1/p')
    [ -n "$seconds" ] || die "mcfs sim --fasttrack printed no fg_seconds"
    printf '{"source":"sim","scenario":"%s","bg_kind":"%s","bg_count":%s,"config":"%s","rep":0,"fg_seconds":%s,"device":"%s","scheduler":"%s","scale":%s,"app_memory_mib":%s,"sim":%s}\n' \
        "$scenario" "$kind" "$count" "$config" "$seconds" "$DEVICE" "$policy" "$scale" "$(scaled_mib $APP_MEMORY_MIB)" \
        "$json" >>"$results/sim.jsonl"
    printf '    %-40s %8.3f s\n' "$scenario-$kind$count-$config" "$seconds"
}

run_sim() {
    say "simulating $(points | wc -l) points (deterministic: one run each)"
    rm -f "$results/sim.jsonl"
    local line
    while read -r line; do
        # shellcheck disable=SC2086 # four words
        sim_run $line
    done < <(points)
}

# --- scratch space and cleanup ------------------------------------------------------------------------

cgroup_dir=
tmpfs_mounted=0
cleanup() {
    stop_bg
    if [ -n "${mnt:-}" ] && mounted "$mnt"; then
        umount "$mnt" 2>/dev/null || "$mcfs" umount --timeout 60 "$mnt" 2>/dev/null || umount -l "$mnt" || true
    fi
    if [ -n "${flash:-}" ] && mounted "$flash"; then
        "$mcfs" umount --timeout 60 "$flash" 2>/dev/null || fusermount3 -u -z "$flash" 2>/dev/null || true
    fi
    [ "$tmpfs_mounted" -eq 0 ] || umount "$backing" 2>/dev/null || true
    [ -z "$cgroup_dir" ] || rmdir "$cgroup_dir" 2>/dev/null || true
    [ -z "${work:-}" ] || rm -rf "$work"
}

# The backing store of the emulated device: a tmpfs when memory allows (so the host's disk adds little
# to the emulated times, docs/FLASHDEV.md), else a directory on disk.
make_work() {
    work=${work:-$(mktemp -d /var/tmp/mcfs-fasttrack.XXXXXX)}
    mkdir -p "$work"
    chmod 755 "$work"
    backing=$work/backing flash=$work/flash mnt=$work/mnt
    mkdir -p "$backing" "$flash" "$mnt"
    local avail_kib
    avail_kib=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
    if [ "${avail_kib:-0}" -ge $((8 * 1024 * 1024)) ] && mount -t tmpfs -o size=4g,mode=755 mcfs-fasttrack "$backing"; then
        tmpfs_mounted=1
    else
        echo "run.sh: note: the emulated device's backing store is on disk ($backing)" >&2
    fi
}

[ "$(id -u)" -eq 0 ] || die "needs root (mounts, loop devices, and each app runs as its own uid)"
[ -e /dev/fuse ] || die "/dev/fuse is missing: the emulated device and mcfs are FUSE mounts"
install_packages
build
mkdir -p "$results"
trap cleanup EXIT
make_work
make_cgroup
if [ "$live" -eq 1 ]; then
    synthesize
    rm -rf "$results/live.jsonl" "$results/raw"
    setup_stores
    run_live
elif [ ! -d "$traces" ]; then
    synthesize
fi
[ "$sim" -eq 0 ] || run_sim
say "writing the report"
"$mcfs" report --fasttrack "$results" --out "$out"
say "done in $((SECONDS - started)) s: $out (results in $results)"
