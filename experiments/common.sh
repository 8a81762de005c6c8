# shellcheck shell=bash disable=SC2154 # `repo` is set by the sourcing script
# Shared by the studies' run.sh scripts (sourced, not run): messages, the packages a study needs, and
# the mcfs binary it runs. The caller sets `repo` (the checkout) and `PACKAGES` before calling.

say() { printf '==> %s\n' "$*"; }
die() { echo "run.sh: $*" >&2; exit 1; }

# install_packages: apt-installs whichever of PACKAGES are missing.
install_packages() {
    local missing=() p
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return
    say "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# build: sets `mcfs` to $MCFS_BIN, or builds target/release/mcfs.
build() {
    if [ -n "${MCFS_BIN:-}" ]; then
        mcfs=$MCFS_BIN
    else
        say "building mcfs (release)"
        (cd "$repo" && cargo build --release -q -p mcfs)
        mcfs=${CARGO_TARGET_DIR:-$repo/target}/release/mcfs
    fi
    [ -x "$mcfs" ] || die "$mcfs is not an executable"
}
