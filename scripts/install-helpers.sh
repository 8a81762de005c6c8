#!/usr/bin/env bash
# Links an mcfs binary where mount(8), umount(8) and mount.fuse3 look for it,
# so that fstab lines and `mount -t fuse.mcfs` work (README, "fstab and
# mount(8)"). Idempotent; scripts/setup.sh runs it after its build.
#
#   scripts/install-helpers.sh [MCFS_BINARY]   default: this checkout's target/release/mcfs
#
#   /sbin/mount.fuse.mcfs   mount -t fuse.mcfs, fstab type fuse.mcfs
#   /sbin/mount.mcfs        mount -t mcfs
#   /sbin/umount.fuse.mcfs  umount: checkpoint and wait for the daemon, as `mcfs umount`
#   /usr/local/bin/mcfs     mount.fuse3 (fstab type fuse, mcfs#BACKING) runs `mcfs` from
#                           the shell's default PATH: mount(8) clears PATH for helpers
#
# Needs root. `umount -i MOUNTPOINT` skips the umount helper.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
binary=${1:-${CARGO_TARGET_DIR:-$repo/target}/release/mcfs}
case "$binary" in -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ -x "$binary" ] || { echo "install-helpers.sh: $binary is not an executable (build mcfs first)" >&2; exit 1; }
binary=$(realpath "$binary")

for link in /sbin/mount.fuse.mcfs /sbin/mount.mcfs /sbin/umount.fuse.mcfs /usr/local/bin/mcfs; do
    if [ "$(readlink "$link" 2>/dev/null)" = "$binary" ]; then
        printf '==> %s -> %s present\n' "$link" "$binary"
    else
        printf '==> linking %s -> %s\n' "$link" "$binary"
        mkdir -p "$(dirname "$link")"
        ln -sfn "$binary" "$link"
    fi
done
