#!/bin/sh
# as_app.sh PROCS UID COMMAND...: runs COMMAND as an app of the FastTrack study — its own uid and gid,
# no supplementary groups (Android gives every app a uid of its own) — inside the cgroup whose process
# list is the file PROCS ('-' for none). It execs, so the caller's $! is the command's pid.
set -eu
[ $# -ge 3 ] || { echo "usage: as_app.sh PROCS UID COMMAND..." >&2; exit 2; }
procs=$1 uid=$2
shift 2
[ "$procs" = - ] || echo $$ >"$procs"
exec setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"
