#!/usr/bin/env bash
# Prepares a Debian machine for `mcfs bench`'s real workloads (docs/BENCHMARKS.md).
# Idempotent: it installs only what is missing and builds only what is not built.
#
#   scripts/bench-setup.sh            packages, then the tools in target/bench-tools
#   scripts/bench-setup.sh --rebuild  build the tools again even if present
#
# Installs (apt): postmark dbench git fio sqlite3 libsqlite3-dev build-essential
# pkg-config libfuse3-dev fuse3 e2fsprogs ... and builds into
# ${CARGO_TARGET_DIR:-target}/bench-tools, where `mcfs bench` looks by default:
#   passthrough_ll  libfuse's own example (the FUSE floor targets), compiled from
#                   the source libfuse3-dev ships in /usr/share/doc/libfuse3-dev/examples
#   speedtest1      SQLite's own test/speedtest1.c from Debian's sqlite3 source
#                   package, linked against Debian's libsqlite3
# Source packages are fetched with apt-get source through a private deb-src list
# under bench-tools/apt: the system's apt configuration is not changed.
# Needs root (or sudo) for apt-get.
set -euo pipefail

PACKAGES=(postmark dbench git fio sqlite3 libsqlite3-dev build-essential pkg-config libfuse3-dev fuse3
          e2fsprogs util-linux mount procps xz-utils tar)

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools="${CARGO_TARGET_DIR:-$repo/target}/bench-tools"
rebuild=0
for arg in "$@"; do
    case "$arg" in
        --rebuild) rebuild=1 ;;
        -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-setup.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
    esac
done

SCRIPT_NAME=bench-setup.sh
# shellcheck source=lib/packages.sh
source "$repo/scripts/lib/packages.sh"
die() { echo "bench-setup.sh: $*" >&2; exit 1; }

# apt-get with a private list of deb-src entries made from the system's own
# deb entries (deb822 .sources files and one-line .list files alike).
apt_src() {
    local dir="$tools/apt"
    if [ ! -s "$dir/sources.list.d/src.sources" ] && [ ! -s "$dir/sources.list.d/src.list" ]; then
        mkdir -p "$dir/sources.list.d" "$dir/lists/partial" "$dir/cache/archives/partial"
        : > "$dir/empty.list"
        local f
        for f in /etc/apt/sources.list.d/*.sources; do
            [ -e "$f" ] || continue
            sed -e 's/^Types:.*/Types: deb-src/' "$f" >> "$dir/sources.list.d/src.sources"
            echo >> "$dir/sources.list.d/src.sources"
        done
        for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
            [ -e "$f" ] || continue
            sed -n -e 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >> "$dir/sources.list.d/src.list"
        done
        [ -s "$dir/sources.list.d/src.sources" ] || [ -s "$dir/sources.list.d/src.list" ] \
            || die "found no Debian archive in /etc/apt to fetch source packages from"
        apt_src_get update -q >/dev/null
    fi
}

apt_src_get() {
    local dir="$tools/apt"
    apt-get -o Dir::Etc::SourceList="$dir/empty.list" -o Dir::Etc::SourceParts="$dir/sources.list.d" \
        -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" "$@"
}

# Unpacks FILE (a path inside the upstream tarball of source package PKG) to stdout.
file_from_source_package() {
    local pkg=$1 file=$2 work="$tools/src/$1"
    if ! ls "$work"/*.orig.tar.* >/dev/null 2>&1; then
        apt_src
        mkdir -p "$work"
        say "fetching the Debian source package $pkg" >&2
        if ! (cd "$work" && apt_src_get source --download-only -q "$pkg") > "$work/apt-source.log" 2>&1; then
            cat "$work/apt-source.log" >&2
            die "apt-get source $pkg failed"
        fi
    fi
    local tarball member
    tarball=$(ls "$work"/*.orig.tar.* | grep -v -- '-www' | head -n1)
    member=$(tar -tf "$tarball" | grep -E "^[^/]+/$file\$" | head -n1)
    [ -n "$member" ] || die "$tarball has no $file"
    tar -xOf "$tarball" "$member"
}

build_passthrough_ll() {
    local out="$tools/passthrough_ll"
    if [ "$rebuild" -eq 0 ] && [ -x "$out" ] && "$out" --help >/dev/null 2>&1; then
        say "FUSE floor present: $out"
        return
    fi
    local src="$tools/src/passthrough_ll" examples=/usr/share/doc/libfuse3-dev/examples
    mkdir -p "$src"
    local f
    for f in passthrough_ll.c passthrough_helpers.h; do
        if [ -f "$examples/$f" ]; then
            cp "$examples/$f" "$src/$f"
        elif [ -f "$examples/$f.gz" ]; then
            gzip -dc "$examples/$f.gz" > "$src/$f"
        else
            say "$examples/$f is missing; taking it from the source package fuse3"
            file_from_source_package fuse3 "example/$f" > "$src/$f"
        fi
    done
    say "building libfuse's passthrough_ll ($(pkg-config --modversion fuse3)) into $out"
    # shellcheck disable=SC2046
    gcc -O2 -Wall -o "$out" "$src/passthrough_ll.c" $(pkg-config fuse3 --cflags --libs)
    "$out" --help >/dev/null || die "the built $out does not run"
}

build_speedtest1() {
    local out="$tools/speedtest1"
    if [ "$rebuild" -eq 0 ] && [ -x "$out" ] && "$out" --help 2>&1 | grep -q '^Usage:'; then
        say "speedtest1 present: $out"
        return
    fi
    local src="$tools/src/speedtest1.c"
    file_from_source_package sqlite3 test/speedtest1.c > "$src"
    say "building SQLite's speedtest1 against libsqlite3 $(pkg-config --modversion sqlite3) into $out"
    # shellcheck disable=SC2046
    gcc -O2 -o "$out" "$src" $(pkg-config sqlite3 --cflags --libs)
    "$out" --help 2>&1 | grep -q '^Usage:' || die "the built $out does not run"
}

install_packages
mkdir -p "$tools/src"
build_passthrough_ll
build_speedtest1
[ -w /proc/sys/vm/drop_caches ] || say "note: /proc/sys/vm/drop_caches is not writable here; the seq workload needs root"
say "bench tools ready in $tools; run e.g.: sudo target/release/mcfs bench --workloads postmark --targets ext4,fuse-floor"
