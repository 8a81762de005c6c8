#!/usr/bin/env bash
# A five-minute tour of mcfs with a real SQLite database:
#   1. mount a fresh backing directory,
#   2. insert rows one transaction at a time (WAL, synchronous=FULL), on mcfs,
#      directly on the disk and on a sync-point mount, and see the fsyncs
#      absorbed by memory and how few bytes reached the disk,
#   3. SIGKILL the daemon in the middle of more inserts,
#   4. recover, remount: the database passes integrity_check and holds a
#      prefix of the rows,
#   5. unmount cleanly: the backing directory is a plain tree, and the
#      database in it opens with nothing but sqlite3.
# It runs scripts/setup.sh first (root; idempotent, fast once done).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mcfs=${MCFS_BIN:-${CARGO_TARGET_DIR:-$repo/target}/release/mcfs}
ROWS=${DEMO_ROWS:-2000}

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
note() { printf '    %s\n' "$*"; }
die() { echo "demo.sh: $*" >&2; exit 1; }

step "Setting the machine up (scripts/setup.sh)"
"$repo/scripts/setup.sh" 2>&1 | sed 's/^/    /'
[ -x "$mcfs" ] || die "$mcfs not found after setup"

work=$(mktemp -d /tmp/mcfs-demo.XXXXXX)
backing=$work/backing
mnt=$work/mnt
mkdir -p "$backing" "$mnt"
cleanup() {
    # From mountinfo, not stat: a dead FUSE mount fails stat but is still there.
    for m in "$mnt" "$work/sync-point/mnt"; do
        if awk -v m="$m" '$5 == m { found = 1 } END { exit !found }' /proc/self/mountinfo; then
            "$mcfs" umount --timeout 30 "$m" 2>/dev/null || fusermount3 -u -z "$m" 2>/dev/null || true
        fi
    done
    rm -rf "$work"
}
trap cleanup EXIT

# A checkpoint at most every 2 seconds of staleness, so that part of the
# data is on disk when the daemon is killed and part is not.
cat > "$work/mcfs.toml" <<'EOF'
max_stale_seconds = 2.0
writeback_interval_seconds = 1.0
EOF

# stat_value KEY: one top-level counter of `mcfs stat --json`.
stat_value() {
    "$mcfs" stat --json "$mnt" | sed -n "s/^  \"$1\": \([0-9.]*\),*\$/\1/p"
}

# inserts FIRST LAST: SQL that inserts rows FIRST..LAST, one transaction each,
# printing each row's id once its COMMIT has returned.
inserts() {
    echo "PRAGMA synchronous = FULL;"
    for ((i = $1; i <= $2; i++)); do
        echo "INSERT INTO t (id, payload) VALUES ($i, randomblob(200 + $i % 800)); SELECT $i;"
    done
}

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

step "Mounting $backing on $mnt"
"$mcfs" mount --config "$work/mcfs.toml" "$backing" "$mnt"
note "$(grep " $mnt " /proc/self/mountinfo | awk '{print $(NF-2), "on", $5}')"
note "config: max_stale_seconds = 2.0, writeback_interval_seconds = 1.0 (see docs/CONFIG.md)"

step "Creating a SQLite database in WAL mode and inserting $ROWS rows, one transaction each, synchronous=FULL"
sqlite3 "$mnt/demo.db" "PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, payload BLOB);" >/dev/null
start=$(now)
inserts 1 "$ROWS" | sqlite3 -bail "$mnt/demo.db" >/dev/null
mcfs_time=$(elapsed "$start")
note "$ROWS commits on mcfs took ${mcfs_time}s"

reference=$work/reference
mkdir -p "$reference"
sqlite3 "$reference/demo.db" "PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, payload BLOB);" >/dev/null
start=$(now)
inserts 1 "$ROWS" | sqlite3 -bail "$reference/demo.db" >/dev/null
note "the same $ROWS commits directly on the backing file system took $(elapsed "$start")s (every fsync reaches the disk there)"
rm -rf "$reference"

# The same on a second mount in sync-point mode: writes go to the kernel's
# page cache, and a transaction ends only at SQLite's own fsyncs.
sp=$work/sync-point
mkdir -p "$sp/backing" "$sp/mnt"
"$mcfs" mount -o consistency=sync-point "$sp/backing" "$sp/mnt"
sqlite3 "$sp/mnt/demo.db" "PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, payload BLOB);" >/dev/null
start=$(now)
inserts 1 "$ROWS" | sqlite3 -bail "$sp/mnt/demo.db" >/dev/null
note "and on a second mount with consistency = \"sync-point\" (the kernel's writeback cache) they took $(elapsed "$start")s"
"$mcfs" umount "$sp/mnt"
rm -rf "$sp"

step "What mcfs did with them (mcfs stat)"
"$mcfs" stat "$mnt" | sed 's/^/    /'
note ""
note "fsyncs absorbed by memory: $(stat_value fsync_absorbed) (each returned at once; no device flush)"
note "bytes written by SQLite:   $(mib "$(stat_value bytes_written)")"
note "bytes flushed to disk:     $(mib "$(stat_value bytes_flushed)") (checkpoints so far: $(stat_value checkpoints))"

step "Waiting 4 s: after max_stale_seconds the app's transaction closes and the checkpointer commits it"
sleep 4
note "bytes written by SQLite:   $(mib "$(stat_value bytes_written)")"
note "bytes flushed to disk:     $(mib "$(stat_value bytes_flushed)"), of which journal $(mib "$(stat_value journal_bytes)")" \
     "(checkpoints: $(stat_value checkpoints)); pages rewritten between checkpoints reach the disk once"

step "Inserting more rows and killing the daemon with SIGKILL in the middle"
pid=$(cat "$backing/.mcfs/lock")
[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = mcfs ] || die "pid $pid from $backing/.mcfs/lock is not the mcfs daemon"
inserts "$((ROWS + 1))" "$((ROWS + 100000))" | sqlite3 -bail "$mnt/demo.db" > "$work/acked" 2>"$work/sqlite-errors" &
writer=$!
sleep 3
kill -KILL "$pid"
note "killed daemon pid $pid"
wait "$writer" || true
acked=$(tail -n 1 "$work/acked")
note "SQLite acknowledged $acked commits before its next statement failed: $(head -c 120 "$work/sqlite-errors" | head -n 1)"
note "the mount point is now a dead FUSE mount: $(ls "$mnt" 2>&1 | head -n 1)"
fusermount3 -u -z "$mnt"
note "detached it with fusermount3 -u -z"

step "Recovering the backing directory (mcfs recover)"
"$mcfs" recover "$backing" | sed 's/^/    /'

step "Remounting and checking the database"
"$mcfs" mount --config "$work/mcfs.toml" "$backing" "$mnt"
integrity=$(sqlite3 "$mnt/demo.db" "PRAGMA integrity_check;")
read -r count first last < <(sqlite3 -separator ' ' "$mnt/demo.db" "SELECT count(*), ifnull(min(id), 0), ifnull(max(id), 0) FROM t;")
note "PRAGMA integrity_check: $integrity"
note "rows present: $count (ids $first..$last)"
[ "$integrity" = ok ] || die "integrity_check failed after recovery"
if [ "$count" -eq 0 ] || { [ "$first" -eq 1 ] && [ "$last" -eq "$count" ]; }; then
    note "they are rows 1..$count: a prefix of the $acked acknowledged rows; the last" \
         "$((acked - count)) (the writes of the last, uncheckpointed seconds) were lost as a whole"
else
    die "rows are not a prefix (ids $first..$last, count $count)"
fi

step "Unmounting cleanly (mcfs umount checkpoints everything first)"
"$mcfs" umount "$mnt"
note "the backing directory is a plain tree (mcfs keeps its own state in .mcfs/):"
(cd "$backing" && find . -path ./.mcfs -prune -o -print | sort | sed 's/^/      /')
note "and the database in it needs nothing but sqlite3:"
note "  integrity_check: $(sqlite3 "$backing/demo.db" 'PRAGMA integrity_check;'), rows: $(sqlite3 "$backing/demo.db" 'SELECT count(*) FROM t;')"

step "Done. Mount your own directory with: mcfs mount BACKING MOUNTPOINT (see README.md)"
