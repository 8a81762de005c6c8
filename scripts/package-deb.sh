#!/usr/bin/env bash
# Builds the Debian package of mcfs with cargo-deb (installed with `cargo
# install cargo-deb` if missing): the release binary, the systemd unit
# mcfs@.service (with ExecStart on /usr/bin/mcfs), man pages and bash, zsh
# and fish completions generated from the binary itself, the mount(8)
# helper links (packaging/debian/postinst) and the docs.
#
#   scripts/package-deb.sh [--no-default-features]   a device package: no bench, report, simulator
#
# Prints the path of the .deb (target/debian/mcfs_VERSION-1_ARCH.deb).
set -euo pipefail

SCRIPT_NAME=package-deb.sh
# shellcheck source=lib/packages.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/packages.sh"
in_repo_with_cargo

features=()
case "${1:-}" in
    "") ;;
    --no-default-features) features=(--no-default-features) ;;
    -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package-deb.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

PACKAGES=(dpkg-dev gzip)
install_packages
if cargo deb --version >/dev/null 2>&1; then
    say "cargo-deb present: $(cargo deb --version)"
else
    say "installing cargo-deb (cargo install, a few minutes)"
    cargo install cargo-deb --locked
fi

say "building mcfs (release${features:+, ${features[*]}})"
cargo build --release -p mcfs "${features[@]}"
binary=target/release/mcfs

# What the package holds besides the binary, generated from it (see
# [package.metadata.deb] in crates/mcfs/Cargo.toml, which names these paths).
assets=target/deb-assets
rm -rf "$assets"
mkdir -p "$assets/man" "$assets/completions"
"$binary" manpages "$assets/man"
gzip -9n "$assets"/man/*.1
"$binary" completions bash > "$assets/completions/mcfs"
"$binary" completions zsh > "$assets/completions/_mcfs"
"$binary" completions fish > "$assets/completions/mcfs.fish"
sed 's|/usr/local/bin/mcfs|/usr/bin/mcfs|g' packaging/systemd/mcfs@.service > "$assets/mcfs@.service"

say "packaging"
# --strip: the release profile keeps line tables (debug = 1); the package need not.
deb=$(cargo deb -p mcfs --no-build --strip "${features[@]}" 2>&1 | grep -v "^warning: Only source paths starting with" | tail -n 1)
dpkg-deb --info "$deb" | sed -n '/Package:/,/Description:/p'
say "$deb: $(stat -c %s "$deb") bytes"
echo "$deb"
