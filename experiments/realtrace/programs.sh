#!/usr/bin/env bash
# The real programs of the real-trace study, each run under `strace -f` in a scratch directory:
#
#   programs.sh NAME DIR SECONDS SEED LOG
#
# runs program NAME in DIR for about SECONDS (SEED fixes its choices) and writes strace's log to LOG.
#
#   sqlite-apsw  a messaging database on SQLite from Python (apsw if installed, else the sqlite3 module),
#                SQLite's defaults (rollback journal in DELETE mode, synchronous FULL): a message sent or
#                received every 0.2-3 s, one transaction each, a conversation marked read now and then.
#   sqlite-wal   the same in WAL mode (the log is deleted while open at the end: descriptors of deleted
#                files, as on every WAL run).
#   git          git clone of a local repository (no network), then edit-commit cycles and a final gc.
#   pip          pip install of the wheels bundled with Python (ensurepip's pip and, if present,
#                setuptools) into DIR, from files only (--no-index: nothing is fetched).
#
# Nothing here fetches anything from the network.
set -euo pipefail

[ $# -eq 5 ] || { sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
name=$1 dir=$2 seconds=$3 seed=$4 log=$5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
mkdir -p "$dir"
cd "$dir"
trace() { strace -f -tt -y -qq -o "$log" -- "$@"; }

case "$name" in
    sqlite-apsw | sqlite-wal)
        mode=delete
        [ "$name" = sqlite-wal ] && mode=wal
        trace python3 "$here/sqlite_messaging.py" "$dir/messages.db" "$seconds" "$seed" "$mode"
        ;;
    git)
        # The clone's source: this checkout's repository, read locally (file://, so objects are copied).
        trace sh -c '
            set -e
            git clone -q --no-hardlinks --depth 200 "file://$1" clone
            cd clone
            git config user.email study@example.invalid
            git config user.name study
            end=$(($(date +%s) + $2))
            i=0
            while [ "$(date +%s)" -lt "$end" ]; do
                i=$((i + 1))
                echo "edit $i" >>NOTES.md
                sed -i "1s/.*/# revision $i/" README.md
                git add -A
                git commit -q -m "edit $i"
                sleep "0.$((($3 + i) % 9 + 1))"
            done
            git gc -q' sh "$repo" "$seconds" "$seed"
        ;;
    pip)
        bundled=$(python3 -c 'import ensurepip, os; print(os.path.join(os.path.dirname(ensurepip.__file__), "_bundled"))')
        wheels=("$bundled"/*.whl)
        [ -e "${wheels[0]}" ] || { echo "programs.sh: no wheel in $bundled" >&2; exit 1; }
        # pip unpacks into TMPDIR before it copies into --target: both inside DIR, so both are traced.
        mkdir -p "$dir/tmp"
        TMPDIR=$dir/tmp trace python3 -m pip install -q --no-index --no-cache-dir --disable-pip-version-check \
            --root-user-action=ignore --target "$dir/site" "${wheels[@]}"
        ;;
    *) echo "programs.sh: unknown program '$name'" >&2; exit 2 ;;
esac
