#!/usr/bin/env bash
# Runs the pjdfstest POSIX suite on mcfs and, as the reference, on ext4 (a
# 512 MiB loop image) on this machine, then compares. A test that fails on
# mcfs but not on ext4 is a real failure, and so is a test ext4 runs that
# mcfs skips, unless listed in MCFS_ONLY_SKIPS below (see docs/PJDFSTEST.md).
#
# mcfs is run four times: default config (memory mode), with checkpoints
# every few milliseconds, in sync mode, and in sync-point consistency (the
# kernel's writeback cache); after each clean unmount the
# backing directory must hold nothing but .mcfs/ (pjdfstest removes its files).
#
# Needs root, FUSE, loop devices, pjdfstest (scripts/setup.sh --pjdfstest)
# and a release build. Outputs are kept in target/pjdfstest/.
# Exit status: 0 all good, 1 real failures, 2 the run itself could not be done.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mcfs=${MCFS_BIN:-${CARGO_TARGET_DIR:-$repo/target}/release/mcfs}
out=${CARGO_TARGET_DIR:-$repo/target}/pjdfstest
# Whole-suite deadline per file system: a hang is a failure, not a wait.
deadline=${PJDFSTEST_DEADLINE:-900}

# Tests ext4 runs that mcfs legitimately skips, with the reason.
declare -A MCFS_ONLY_SKIPS=(
    # pathconf(_PC_LINK_MAX) is unknown on every FUSE file system: glibc
    # derives it from the statfs magic, and FUSE's is not in its table.
    [link::link_count_max]=1
)

die() { echo "pjdfstest.sh: $*" >&2; exit 2; }
say() { printf '==> %s\n' "$*"; }

[ "$(id -u)" -eq 0 ] || die "must run as root (pjdfstest switches users; ext4 needs a loop mount)"
[ -x "$mcfs" ] || die "$mcfs not found; run scripts/setup.sh (or cargo build --release)"
pjdfstest=$(command -v pjdfstest || true)
[ -n "$pjdfstest" ] || { [ -x "$HOME/.cargo/bin/pjdfstest" ] && pjdfstest=$HOME/.cargo/bin/pjdfstest; } \
    || die "pjdfstest not installed; run scripts/setup.sh --pjdfstest"
getent passwd tests >/dev/null || die "user 'tests' is missing; run scripts/setup.sh"
[ -c /dev/fuse ] || die "/dev/fuse is missing: FUSE is not available here"

work=$(mktemp -d /tmp/mcfs-pjdfstest.XXXXXX)
chmod 0755 "$work" # the suite's other users must reach the mounts inside
mounts=()
# From mountinfo, not stat: a dead FUSE mount fails stat but is still there.
is_mounted() { awk -v m="$1" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo; }
cleanup() {
    local m
    for m in "${mounts[@]}"; do
        if is_mounted "$m"; then
            "$mcfs" umount --timeout 30 "$m" >/dev/null 2>&1 || fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
        fi
    done
    rm -rf "$work"
}
trap cleanup EXIT
rm -rf "$out" && mkdir -p "$out"

# Debian has no group "nobody": nobody's group is nogroup.
nobody_group=$(id -gn nobody)
cat > "$work/pjdfstest.toml" <<EOF
[features]
posix_fallocate = {}
utime_now = {}
utimensat = {}
rename_ctime = {}

[settings]
naptime = 0.01
allow_remount = false

[dummy_auth]
entries = [["nobody", "$nobody_group"], ["tests", "tests"]]
EOF
mkdir -p "$work/secondary"

# pjdfstest 0.2.2 underflows ("capacity overflow" panic in its *::enametoolong_path
# tests) when PATH_MAX - 1 minus the length of its base path, DIR/.tmpXXXXXX/.tmpXXXXXX,
# is a multiple of NAME_MAX / 2 = 127; then run one directory deeper.
suite_dir() {
    local dir=$1
    if (( (4095 - ${#dir} - 22) % 127 == 0 )); then
        mkdir -p "$dir/p" && chmod 0755 "$dir/p"
        dir=$dir/p
    fi
    echo "$dir"
}

# run_suite NAME DIR: runs the suite in DIR; results in $out/NAME.out.
run_suite() {
    local name=$1 dir status=0 start=$SECONDS
    dir=$(suite_dir "$2")
    NO_COLOR=1 timeout "$deadline" "$pjdfstest" -c "$work/pjdfstest.toml" -p "$dir" -s "$work/secondary" \
        >"$out/$name.out" 2>&1 || status=$?
    [ "$dir" = "$2" ] || rmdir "$dir" 2>/dev/null || true
    [ "$status" -ne 124 ] || { echo "pjdfstest on $name did not finish within ${deadline}s" >&2; return 1; }
    grep -q '^Summary:' "$out/$name.out" || { echo "pjdfstest on $name stopped without a summary:" >&2; tail -20 "$out/$name.out" >&2; return 1; }
    printf '    %-14s %s (%ss)\n' "$name" "$(grep '^Summary:' "$out/$name.out")" "$((SECONDS - start))"
}

# results NAME: "test status" lines of a finished run.
results() {
    sed -nE 's/^([A-Za-z0-9_:]+)[[:space:]]+(ok|FAILED|skipped|failed as expected|PASSED UNEXPECTEDLY)[[:space:]]*$/\1 \2/p' "$out/$1.out" | sort
}

say "ext4 reference: 512 MiB loop image"
dd if=/dev/zero of="$work/ext4.img" bs=1M count=0 seek=512 status=none
mkfs.ext4 -q -F "$work/ext4.img"
mkdir -p "$work/ext4"
mount -o loop "$work/ext4.img" "$work/ext4" || die "cannot loop-mount an ext4 image (no loop devices?)"
mounts+=("$work/ext4")
chmod 0755 "$work/ext4"
run_suite ext4 "$work/ext4" || die "the ext4 reference run failed"
results ext4 > "$out/ext4.results"
umount "$work/ext4"

# compare NAME: prints real failures of an mcfs run; returns 1 if any.
compare() {
    local name=$1 bad=0 test status ref
    results "$name" > "$out/$name.results"
    while read -r test status; do
        ref=$(awk -v t="$test" '$1 == t { $1 = ""; sub(/^ /, ""); print }' "$out/ext4.results")
        case "$status" in
            FAILED|"PASSED UNEXPECTEDLY")
                if [ "$ref" != FAILED ]; then
                    echo "    FAIL ($name): $test (ext4: ${ref:-not run})"
                    awk -v t="$test" 'f && /^[^\t]/ { exit } f { print "        " $0 } $1 == t { f = 1 }' "$out/$name.out" | head -5
                    bad=1
                fi ;;
            skipped)
                if [ "$ref" = ok ] && [ -z "${MCFS_ONLY_SKIPS[$test]:-}" ]; then
                    echo "    FAIL ($name): $test is skipped on mcfs but runs on ext4"
                    bad=1
                fi ;;
        esac
    done < "$out/$name.results"
    if [ "$(wc -l < "$out/$name.results")" -ne "$(wc -l < "$out/ext4.results")" ]; then
        echo "    FAIL ($name): $(wc -l < "$out/$name.results") results, ext4 has $(wc -l < "$out/ext4.results")"
        bad=1
    fi
    return "$bad"
}

# run_mcfs NAME CONFIG-TEXT: mount, run, unmount, check the backing directory.
run_mcfs() {
    local name=$1 config=$2 dir=$work/$1 args=()
    mkdir -p "$dir/backing" "$dir/mnt"
    if [ -n "$config" ]; then
        printf '%s\n' "$config" > "$dir/mcfs.toml"
        args=(--config "$dir/mcfs.toml")
    fi
    "$mcfs" mount "${args[@]}" --allow-other "$dir/backing" "$dir/mnt" || { echo "    FAIL ($name): mcfs mount failed"; return 1; }
    mounts+=("$dir/mnt")
    local ok=0
    run_suite "$name" "$dir/mnt" || ok=1
    local msg
    msg=$("$mcfs" umount --timeout 120 "$dir/mnt" 2>&1) || { echo "    FAIL ($name): mcfs umount failed: $msg"; ok=1; }
    cp "$dir/backing/.mcfs/mcfs.log" "$out/$name.daemon.log" 2>/dev/null || true
    local left
    left=$(cd "$dir/backing" && find . -mindepth 1 -maxdepth 1 ! -name .mcfs)
    if [ -n "$left" ]; then
        echo "    FAIL ($name): after pjdfstest and a clean unmount the backing directory still holds: $left"
        ok=1
    fi
    if [ -f "$out/$name.out" ] && grep -q '^Summary:' "$out/$name.out"; then
        compare "$name" || ok=1
    fi
    return "$ok"
}

say "mcfs runs"
failed=0
run_mcfs mcfs-memory "" || failed=1
run_mcfs mcfs-checkpoints $'max_stale_bytes = 65536\nmax_stale_seconds = 0.01\nwriteback_interval_seconds = 0.01' || failed=1
run_mcfs mcfs-sync 'mode = "sync"' || failed=1
# The kernel's writeback cache: boundaries only at sync points.
run_mcfs mcfs-sync-point 'consistency = "sync-point"' || failed=1

if [ "$failed" -ne 0 ]; then
    say "pjdfstest: mcfs has failures ext4 does not have (outputs in $out)"
    exit 1
fi
say "pjdfstest: mcfs passes everything ext4 passes (outputs in $out)"
