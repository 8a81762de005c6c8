#!/usr/bin/env bash
# Prepares a Debian machine to build, demo and test mcfs. Idempotent: run it
# as often as you like; it only installs or changes what is missing.
#
#   scripts/setup.sh              system packages, fuse.conf, test users, release build,
#                                 mount(8) helpers (scripts/install-helpers.sh)
#   scripts/setup.sh --pjdfstest  also installs the pjdfstest suite (cargo install, a few minutes)
#
# Needs root (or sudo) for apt-get, /etc/fuse.conf, the test users and the helper links.
set -euo pipefail

PJDFSTEST_VERSION=0.2.2
# fuse3: fusermount3 and /etc/fuse.conf; fio, sqlite3: demo and benchmarks;
# build-essential, pkg-config: the bundled SQLite and the FUSE crate;
# libacl1-dev, acl: pjdfstest links libacl; e2fsprogs: the ext4 reference image;
# util-linux: unshare, setpriv, findmnt (tests, the systemd unit); systemd:
# systemd-analyze, which checks the shipped unit (packaging/systemd/).
PACKAGES=(fuse3 fio sqlite3 pkg-config build-essential libacl1-dev acl e2fsprogs util-linux mount procps systemd)

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
want_pjdfstest=0
for arg in "$@"; do
    case "$arg" in
        --pjdfstest) want_pjdfstest=1 ;;
        -h|--help) sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "setup.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
    esac
done

SCRIPT_NAME=setup.sh
# shellcheck source=lib/packages.sh
source "$repo/scripts/lib/packages.sh"

# Lets a non-root mounter use --allow-other (root may always).
allow_other_for_users() {
    if grep -qE '^[[:space:]]*user_allow_other[[:space:]]*$' /etc/fuse.conf 2>/dev/null; then
        say "/etc/fuse.conf already has user_allow_other"
    else
        say "adding user_allow_other to /etc/fuse.conf"
        echo user_allow_other | as_root tee -a /etc/fuse.conf >/dev/null
    fi
}

check_fuse_device() {
    if [ ! -c /dev/fuse ]; then
        as_root modprobe fuse 2>/dev/null || true
    fi
    if [ -c /dev/fuse ]; then
        say "/dev/fuse present"
        # What fuse3's udev rule does on a desktop: without it a user's mount
        # fails (fuser opens /dev/fuse itself before it asks fusermount3).
        if [ "$(stat -c %a /dev/fuse)" != 666 ]; then
            say "making /dev/fuse usable by every user (mode 0666)"
            as_root chmod 0666 /dev/fuse
        fi
    else
        echo "setup.sh: /dev/fuse is missing and 'modprobe fuse' did not create it;" \
             "mcfs cannot mount here (in a container, pass --device /dev/fuse --cap-add SYS_ADMIN)" >&2
        exit 1
    fi
}

# FUSE over io_uring (Linux 6.14+) is off until this module parameter is
# set; mcfs uses it when it is (docs/FUSE_URING.md), and the io_uring tests
# need it. A kernel without it is not an error here: mcfs serves /dev/fuse.
enable_fuse_uring() {
    local param=/sys/module/fuse/parameters/enable_uring
    if [ ! -e "$param" ]; then
        say "this kernel has no FUSE over io_uring ($param missing); mcfs will serve /dev/fuse"
    elif [ "$(cat "$param")" = Y ]; then
        say "FUSE over io_uring enabled"
    else
        say "enabling FUSE over io_uring ($param)"
        echo Y | as_root tee "$param" >/dev/null
    fi
}

# pjdfstest switches to these; Debian has nobody:nogroup but no 'tests'.
test_users() {
    getent group tests >/dev/null || { say "creating group tests"; as_root groupadd --system tests; }
    if getent passwd tests >/dev/null; then
        say "user tests present"
    else
        say "creating user tests"
        as_root useradd --system --gid tests --no-create-home --home-dir / --shell /usr/sbin/nologin tests
    fi
}

rust_toolchain() {
    if ! command -v cargo >/dev/null 2>&1; then
        [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
    fi
    command -v cargo >/dev/null 2>&1 || {
        echo "setup.sh: cargo not found; install Rust (https://rustup.rs) first" >&2
        exit 1
    }
    if command -v rustup >/dev/null 2>&1; then
        # rustfmt and clippy are stages of the test command.
        for component in rustfmt clippy; do
            rustup component list --installed 2>/dev/null | grep -q "^$component" \
                || { say "adding $component"; rustup component add "$component"; }
        done
    fi
    say "$(cargo --version)"
}

install_pjdfstest() {
    if pjdfstest_bin=$(command -v pjdfstest 2>/dev/null || ls "$HOME/.cargo/bin/pjdfstest" 2>/dev/null) \
        && cargo install --list | grep -q "^pjdfstest v$PJDFSTEST_VERSION:"; then
        say "pjdfstest $PJDFSTEST_VERSION present ($pjdfstest_bin)"
        return
    fi
    say "installing pjdfstest $PJDFSTEST_VERSION (cargo install, takes a few minutes)"
    cargo install pjdfstest --version "$PJDFSTEST_VERSION" --locked
}

install_packages
allow_other_for_users
check_fuse_device
enable_fuse_uring
test_users
rust_toolchain
if [ "$want_pjdfstest" -eq 1 ]; then install_pjdfstest; fi
say "building mcfs (release)"
(cd "$repo" && cargo build --release --workspace)
mcfs_bin=${CARGO_TARGET_DIR:-$repo/target}/release/mcfs
# fstab lines, mount -t fuse.mcfs and umount run mcfs through these links.
as_root "$repo/scripts/install-helpers.sh" "$mcfs_bin"
say "setup done: $mcfs_bin"
