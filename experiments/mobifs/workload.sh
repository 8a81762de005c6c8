#!/usr/bin/env bash
# The real programs of the MobiFS study, run on a live mcfs mount by a scripted user.
#
#   workload.sh sqlite|git MOUNTPOINT DIR SECONDS SEED UID
#
# DIR (below MOUNTPOINT, owned by UID) is where the program works; it runs as UID (an app of its own).
# The "user" alternates runs of quick inputs with pauses, the pattern MobiFS §5.3 builds its idle
# predictor on; each input is a tap given to the mount with `mcfs ctl MOUNTPOINT input`, which the
# recording mount writes into its trace. The seed fixes every choice (bash's RANDOM, drawn only in the
# shell that seeded it: bash reseeds it in subshells), so two runs issue the same operations at about the
# same times.
#
#   sqlite  a messaging app: one sqlite3 process (SQLite's defaults: rollback journal in DELETE mode,
#           synchronous FULL) holds the database open; opening a conversation marks it read, a run of
#           inputs ends with a sent message (one transaction), and messages arrive on their own every
#           3-20 s (a transaction each, no input).
#   git     a notes repository: each input edits a note (appends a line, or rewrites one), and a run ends
#           with `git add -A && git commit`.
#
# The mcfs binary is $MCFS (default: mcfs on PATH).
set -euo pipefail

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
[ $# -eq 6 ] || { usage >&2; exit 2; }
program=$1 mnt=$2 dir=$3 seconds=$4 seed=$5 uid=$6
mcfs=${MCFS:-mcfs}
RANDOM=$seed
end=$((SECONDS + seconds))

# as_app CMD...: runs CMD as the program's app (its own uid and gid, no supplementary groups).
as_app() { setpriv --reuid="$uid" --regid="$uid" --clear-groups env HOME="$dir" "$@"; }

# draw LO HI: sets r to a number drawn uniformly from LO..HI.
draw() { r=$(($1 + RANDOM % ($2 - $1 + 1))); }

# nap MS: sleeps MS milliseconds, or until time is up if that comes first.
nap() {
    local left=$(((end - SECONDS) * 1000))
    [ "$left" -gt 0 ] || return 0
    local ms=$(($1 < left ? $1 : left))
    sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
}

tap() { "$mcfs" ctl "$mnt" input >/dev/null; }

# user RUN_LO RUN_HI GAP_LO GAP_HI PAUSE_LO PAUSE_HI START INPUT END: until time is up, a run of
# RUN_LO..RUN_HI inputs GAP_LO..GAP_HI ms apart (START before the first, INPUT after each tap, END
# after the last), then a pause of PAUSE_LO..PAUSE_HI ms.
user() {
    local run_lo=$1 run_hi=$2 gap_lo=$3 gap_hi=$4 pause_lo=$5 pause_hi=$6 start=$7 input=$8 finish=$9
    while [ "$SECONDS" -lt "$end" ]; do
        "$start"
        local n i
        draw "$run_lo" "$run_hi"
        n=$r
        for ((i = 0; i < n; i++)); do
            tap
            "$input"
            draw "$gap_lo" "$gap_hi"
            nap "$r"
        done
        "$finish"
        draw "$pause_lo" "$pause_hi"
        nap "$r"
    done
}

nothing() { :; }

# --- sqlite: a messaging app -------------------------------------------------------------------------

CONVERSATIONS=12

# sql STATEMENTS: one write into the pipe sqlite3 reads (atomic below PIPE_BUF, so the user and the
# incoming loop never interleave).
sql() { printf '%s\n' "$*" >&3; }

sqlite_setup() {
    local fifo
    fifo=$(mktemp -d)/sql
    mkfifo "$fifo"
    as_app sqlite3 -bail "$dir/messages.db" <"$fifo" >/dev/null &
    sqlite_pid=$!
    exec 3>"$fifo"
    rm -r "$(dirname "$fifo")"
    sql "CREATE TABLE IF NOT EXISTS conversation(id INTEGER PRIMARY KEY, title TEXT, last_message TEXT, unread INTEGER);"
    sql "CREATE TABLE IF NOT EXISTS message(id INTEGER PRIMARY KEY, conversation INTEGER, sender TEXT, body TEXT, sent INTEGER);"
    sql "CREATE INDEX IF NOT EXISTS message_by_conversation ON message(conversation, sent);"
    local c
    for ((c = 1; c <= CONVERSATIONS; c++)); do
        sql "INSERT OR IGNORE INTO conversation VALUES($c, 'friend $c', '', 0);"
    done
    current=1
}

PADDING=$(printf '%200s' '' | tr ' ' x)

# body: sets text to a message of 10 to 200 characters.
body() {
    draw 10 200
    text="message $RANDOM: ${PADDING:0:r}"
}

sqlite_open_conversation() {
    draw 1 "$CONVERSATIONS"
    current=$r
    sql "UPDATE conversation SET unread = 0 WHERE id = $current;"
}

sqlite_send() {
    body
    sql "BEGIN; INSERT INTO message(conversation, sender, body, sent) VALUES($current, 'me', '$text', $SECONDS);
         UPDATE conversation SET last_message = '$text' WHERE id = $current; COMMIT;"
}

# Incoming messages, until time is up (run in a subshell of its own, seeded there).
sqlite_incoming() {
    RANDOM=$((seed + 1))
    while [ "$SECONDS" -lt "$end" ]; do
        draw 3000 20000
        nap "$r"
        draw 1 "$CONVERSATIONS"
        local c=$r
        body
        sql "BEGIN; INSERT INTO message(conversation, sender, body, sent) VALUES($c, 'friend $c', '$text', $SECONDS);
             UPDATE conversation SET last_message = '$text', unread = unread + 1 WHERE id = $c; COMMIT;"
    done
}

run_sqlite() {
    sqlite_setup
    sqlite_incoming &
    local incoming=$!
    user 3 10 300 1500 5000 25000 sqlite_open_conversation nothing sqlite_send
    wait "$incoming"
    exec 3>&-
    wait "$sqlite_pid"
}

# --- git: a notes repository --------------------------------------------------------------------------

NOTES=40

git_setup() {
    as_app git init -q "$dir/notes"
    local n
    for ((n = 1; n <= NOTES; n++)); do
        draw 5 60
        as_app sh -c "seq 1 $r | sed 's/^/line /' > '$dir/notes/note-$n.txt'"
    done
    git_commit
}

git_edit() {
    draw 1 "$NOTES"
    local note=$dir/notes/note-$r.txt
    if [ $((RANDOM % 2)) -eq 0 ]; then
        as_app sh -c "echo 'added $RANDOM' >> '$note'"
    else
        draw 1 5
        as_app sed -i "${r}s/.*/rewritten $RANDOM/" "$note"
    fi
}

git_commit() {
    as_app git -C "$dir/notes" -c user.name=user -c user.email=user@example.org add -A
    as_app git -C "$dir/notes" -c user.name=user -c user.email=user@example.org commit -q -m "notes at ${SECONDS}s"
}

run_git() {
    git_setup
    user 2 6 500 2000 10000 40000 nothing git_edit git_commit
}

case "$program" in
    sqlite) run_sqlite ;;
    git) run_git ;;
    *) usage >&2; exit 2 ;;
esac
